"""Run-engine benchmark (on demand, not part of the test suite).

1. Overhead per evaluation of the calibration loop with a model that does nothing, for each evaluator
   (serial, process pool, dask LocalCluster), without and with the SQLite run store.
2. Speed-up of 2 workers over the serial evaluator on a model that sleeps 0.2 s per evaluation.

    python benchmarks/engine.py            # prints the tables and writes benchmarks/results/engine.md
    python benchmarks/engine.py --quick    # fewer evaluations
    python benchmarks/engine.py --batches 50 --only dask   # the dask rows at batch 50

The parallel evaluators are timed at each batch size of ``--batches`` (default 10 and 50: a Jacobian or a
swarm is one batch). Dask is timed twice in the same run, with its default chunking (tasks sized to the
workers) and with one task per set (``chunk_size=1``), and every parallel row is also given as a ratio to
the pool's figure of the same run: the machine is shared, so the ratios are steadier than the times.

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


POOL = "pool (2 workers)"
DASK = "dask LocalCluster (2 processes)"
DASK_1 = "dask LocalCluster (2 processes), chunk_size=1"


def overhead_table(
    n_evals: int, tmp: Path, batches: list[int], only: set[str] | None
) -> list[tuple[str, str, int, float]]:
    rows = []
    null = NullProblem()
    evaluators = [("serial", lambda: SerialEvaluator()), (POOL, lambda: PoolEvaluator(n_workers=2))]
    try:
        import distributed  # noqa: F401

        from mechcalib.execution import DaskEvaluator

        evaluators.append((DASK, lambda: DaskEvaluator(n_workers=2, processes=True)))
        evaluators.append((DASK_1, lambda: DaskEvaluator(n_workers=2, processes=True, chunk_size=1)))
    except ImportError:
        print("dask.distributed not installed: skipping the dask rows")
    if only is not None:
        evaluators = [(n, m) for n, m in evaluators if n.split()[0] in only]
    for name, make in evaluators:
        t0 = time.perf_counter()
        ev = make()
        ev.start(null)
        startup = time.perf_counter() - t0
        rows.append((name, "start-up (s, once)", 0, startup))
        try:
            if name == "serial":
                counts = [(10, n_evals), (1, max(n_evals // 5, 50))]
            else:  # whole batches, at least 10 of them
                counts = [(b, max(n_evals // 4 // b, 10) * b) for b in batches]
            for batch, n in counts:
                timed_run(null, ev, min(n, max(100, 2 * batch)), batch, None, 0)  # warm-up
                rows.append((name, "no store", batch, timed_run(null, ev, n, batch, None, 1)))
                for durability in ("process", "power") if name == "serial" else ("process",):
                    path = tmp / f"{name.split(',')[0].replace(' ', '_')}-{batch}-{durability}.db"
                    per = timed_run(null, ev, n, batch, path, 2, durability=durability)
                    rows.append((name, f"store ({durability})", batch, per))
        finally:
            ev.close()
    return rows


def ratio_to_pool(rows: list[tuple[str, str, int, float]], name: str, what: str, batch: int, v: float) -> str:
    """``v`` over the pool's figure of the same store and batch size in this run ("" when there is none)."""
    if name in ("serial", POOL) or batch == 0:
        return ""
    ref = [r[3] for r in rows if r[0] == POOL and r[1] == what and r[2] == batch]
    return f"{v / ref[0]:.2f}" if ref else ""


def dask_summary(rows: list[tuple[str, str, int, float]]) -> list[str]:
    """A sentence per batch size: dask's default chunking against one task per set, with the store on."""
    out = []
    for name, what, batch, v in rows:
        if name != DASK or what != "store (process)":
            continue
        one = [r[3] for r in rows if r[0] == DASK_1 and r[1] == what and r[2] == batch]
        pool = [r[3] for r in rows if r[0] == POOL and r[1] == what and r[2] == batch]
        if one and pool:
            out.append(
                f"Dask, store on, batch {batch}: {v * 1e3:.3f} ms per evaluation with chunks sized to the workers, "
                f"{one[0] * 1e3:.3f} ms with one task per set ({one[0] / v:.1f}x as much, same run); the pool: "
                f"{pool[0] * 1e3:.3f} ms."
            )
    return [""] + out if out else []


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
    ap.add_argument(
        "--batches", default="10,50", help="comma-separated batch sizes of the pool and dask rows (default 10,50)"
    )
    ap.add_argument(
        "--only", default=None, help="comma-separated evaluators to time (serial, pool, dask); implies --no-write"
    )
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    only = None if args.only is None else {w.strip() for w in args.only.split(",")}
    n_over = 400 if args.quick else 2000
    n_sleep = 20
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as d:
        over = overhead_table(n_over, Path(d), batches, only)
    speed = speedup_table(n_sleep, 0.2) if only is None else []
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
        "`store (power)`: synchronous=FULL (an fsync per commit). `/ pool`: the figure over the pool's of the",
        "same store and batch size, measured in this run (steadier than the times on a loaded machine). Dask",
        "sends a batch in chunks sized to the workers by default; `chunk_size=1` is one task per set.",
        "",
        "| evaluator | store | batch size | per evaluation | / pool |",
        "|---|---|---:|---:|---:|",
    ]
    for name, what, batch, v in over:
        if batch == 0:
            lines.append(f"| {name} | {what} | | {v:.2f} s | |")
        else:
            ratio = ratio_to_pool(over, name, what, batch, v)
            lines.append(f"| {name} | {what} | {batch} | {v * 1e3:.3f} ms | {ratio} |")
    lines += dask_summary(over)
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
    if not args.no_write and only is None:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text)
        print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
