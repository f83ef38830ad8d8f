"""Run-engine benchmark (on demand, not part of the test suite).

1. Overhead per evaluation of the calibration loop with a model that does nothing, for each evaluator
   (serial, process pool, dask LocalCluster), without and with the SQLite run store.
2. Speed-up of 2 workers over the serial evaluator on a model that sleeps 0.2 s per evaluation.

    python benchmarks/engine.py            # prints the tables and writes benchmarks/results/engine.md
    python benchmarks/engine.py --quick    # fewer evaluations

Overhead = wall time of ``calibrate`` / number of evaluations (the null model costs ~1 us), after one
warm-up run per evaluator (worker start-up is reported apart).
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

import mechcalib as mc
from mechcalib.core.problem import EvaluationBatch, ProblemBase
from mechcalib.execution import PoolEvaluator, SerialEvaluator
from mechcalib.optimizers import RandomSearch
from mechcalib.storage import RunStore

RESULTS = Path(__file__).resolve().parent / "results" / "engine.md"


class NullProblem(ProblemBase):
    """A problem whose evaluation does nothing (zero loss)."""

    def __init__(self, dim: int = 4) -> None:
        self.space = mc.ParameterSpace.from_bounds([0.0] * dim, [1.0] * dim)

    def evaluate(self, X: np.ndarray) -> EvaluationBatch:
        n = np.atleast_2d(X).shape[0]
        z = np.zeros(n)
        return EvaluationBatch(z, z.copy(), ["ok"] * n, [None] * n, [], 0.0)


class SleepProblem(NullProblem):
    """Each evaluation sleeps ``delay`` seconds (a stand-in for a simulation that does not use the CPU)."""

    def __init__(self, delay: float = 0.2, dim: int = 4) -> None:
        super().__init__(dim)
        self.delay = delay

    def evaluate(self, X: np.ndarray) -> EvaluationBatch:
        n = np.atleast_2d(X).shape[0]
        time.sleep(self.delay * n)
        return super().evaluate(X)


def timed_run(problem, evaluator, n_evals: int, batch: int, store_path: Path | None, seed: int, **kw) -> float:
    """Seconds per evaluation of one calibration."""
    store = RunStore(store_path, **kw) if store_path is not None else None
    try:
        t0 = time.perf_counter()
        res = mc.calibrate(
            problem,
            RandomSearch(batch_size=batch, seed=seed),
            max_evals=n_evals,
            evaluator=evaluator,
            store=store,
            cache=False if store is not None else None,
        )
        dt = time.perf_counter() - t0
    finally:
        if store is not None:
            store.close()
    assert res.n_evals == n_evals and res.n_simulated == n_evals
    return dt / n_evals


def overhead_table(n_evals: int, tmp: Path) -> list[tuple[str, str, int, float]]:
    rows = []
    null = NullProblem()
    evaluators = [("serial", lambda: SerialEvaluator()), ("pool (2 workers)", lambda: PoolEvaluator(n_workers=2))]
    try:
        import distributed  # noqa: F401

        from mechcalib.execution import DaskEvaluator

        evaluators.append(("dask LocalCluster (2 processes)", lambda: DaskEvaluator(n_workers=2, processes=True)))
    except ImportError:
        print("dask.distributed not installed: skipping the dask rows")
    for name, make in evaluators:
        t0 = time.perf_counter()
        ev = make()
        ev.start(null)
        startup = time.perf_counter() - t0
        rows.append((name, "start-up (s, once)", 0, startup))
        try:
            counts = [(10, n_evals), (1, max(n_evals // 5, 50))] if name == "serial" else [(10, n_evals // 4)]
            for batch, n in counts:
                timed_run(null, ev, min(n, 100), batch, None, 0)  # warm-up
                rows.append((name, "no store", batch, timed_run(null, ev, n, batch, None, 1)))
                for durability in ("process", "power") if name == "serial" else ("process",):
                    path = tmp / f"{name.split()[0]}-{batch}-{durability}.db"
                    per = timed_run(null, ev, n, batch, path, 2, durability=durability)
                    rows.append((name, f"store ({durability})", batch, per))
        finally:
            ev.close()
    return rows


def speedup_table(n_evals: int, delay: float) -> list[tuple[str, float, float]]:
    prob = SleepProblem(delay)
    rows = []
    t_serial = timed_run(prob, SerialEvaluator(), n_evals, 10, None, 0) * n_evals
    rows.append(("serial", t_serial, 1.0))
    with PoolEvaluator(n_workers=2) as ev:
        ev.start(prob)
        t = timed_run(prob, ev, n_evals, 10, None, 0) * n_evals
        rows.append(("pool (2 workers)", t, t_serial / t))
    try:
        import distributed  # noqa: F401

        from mechcalib.execution import DaskEvaluator

        with DaskEvaluator(n_workers=2, processes=True) as ev:
            ev.start(prob)
            t = timed_run(prob, ev, n_evals, 10, None, 0) * n_evals
            rows.append(("dask LocalCluster (2 processes)", t, t_serial / t))
    except ImportError:
        pass
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer evaluations")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    n_over = 400 if args.quick else 2000
    n_sleep = 20
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as d:
        over = overhead_table(n_over, Path(d))
    speed = speedup_table(n_sleep, 0.2)
    lines = [
        "# Run-engine benchmark",
        "",
        f"`python benchmarks/engine.py{' --quick' if args.quick else ''}`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average before the run "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (shared machine: figures are indicative).",
        "",
        "## Overhead per evaluation, null model",
        "",
        "RandomSearch, `cache=False`; time of `calibrate` divided by the number of evaluations (the model itself",
        "costs about a microsecond). `store (process)`: WAL + synchronous=NORMAL, one commit per evaluation;",
        "`store (power)`: synchronous=FULL (an fsync per commit).",
        "",
        "| evaluator | store | batch size | per evaluation |",
        "|---|---|---:|---:|",
    ]
    for name, what, batch, v in over:
        if batch == 0:
            lines.append(f"| {name} | {what} | | {v:.2f} s |")
        else:
            lines.append(f"| {name} | {what} | {batch} | {v * 1e3:.3f} ms |")
    lines += [
        "",
        f"## Speed-up on a model that sleeps 0.2 s per evaluation ({n_sleep} evaluations, batches of 10)",
        "",
        "| evaluator | wall time | speed-up |",
        "|---|---:|---:|",
    ]
    for name, t, s in speed:
        lines.append(f"| {name} | {t:.2f} s | {s:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text)
        print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
