"""Synchronous batches against asynchronous evaluation on a simulated cluster (issue 32).

A dask LocalCluster of 32 single-thread workers (threads of this process: the model only sleeps, which
costs no CPU) evaluates a test function whose every evaluation sleeps a lognormal duration (median
``--median`` seconds, spread factor 2: ``sigma = ln 2``; the duration is drawn from the parameter values, so
it is the same for the same point in both modes). CMA-ES (popsize 32) and DE (NP 32) each spend
``--budget`` simulations, synchronously (a batch waits for its slowest simulation) and asynchronously (32 in
flight, each told as it finishes); worker utilisation is the summed evaluation time over 32 x the wall time.
``auto`` runs on the same cluster to a target. Every finished run is appended to ``cluster_runs.jsonl``, so
an interrupted benchmark resumes where it stopped (``--fresh`` starts over).

    python benchmarks/cluster.py                  # writes benchmarks/results/cluster.md
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from mechcalib.calibrate import Termination, minimize
from mechcalib.execution.dask_backend import DaskEvaluator
from mechcalib.execution.slots import ClockSlots
from mechcalib.optimizers import CMAES, DE, Auto
from mechcalib.testing.functions import rastrigin, sphere

RESULTS = Path(__file__).parent / "results"
WORKERS = 32
DIM = 8
SPREAD = 2.0
MEDIAN = [0.1]


def _duration(x: np.ndarray, median: float | None = None) -> float:
    seed = int.from_bytes(hashlib.blake2b(np.asarray(x, dtype=float).tobytes(), digest_size=8).digest(), "little")
    m = MEDIAN[0] if median is None else median
    return float(m * np.exp(np.log(SPREAD) * np.random.default_rng(seed).standard_normal()))


def _makespan(durations: list[float], workers: int) -> float:
    """Wall time of one synchronous batch: sets handed in order to the first free worker."""
    free = [0.0] * workers
    for d in durations:
        heapq.heapreplace(free, free[0] + d)
    return max(free)


def _clock_runs(seeds: int, budget: int) -> list[dict]:
    """The same comparison on a simulated clock (no scheduling overhead), median 1 s unscaled."""
    rows = []
    for method in ("cmaes", "de", "auto"):
        for seed in range(seeds if method != "auto" else 1):
            for mode in ("sync", "async"):
                if method == "auto":
                    lo, hi, fn = [-2.0] * DIM, [2.0] * DIM, sphere
                    opt: Any = Auto(seed=seed)
                    term = Termination(max_evals=budget, target=1e-6)
                else:
                    lo, hi, fn = [-5.12] * DIM, [5.12] * DIM, rastrigin
                    opt = CMAES(seed=seed, popsize=WORKERS) if method == "cmaes" else DE(seed=seed, pop_size=WORKERS)
                    term = Termination(max_evals=budget)
                dur = lambda x: _duration(x, 1.0)  # noqa: E731
                if mode == "async":
                    slots = ClockSlots(WORKERS, dur)
                    r = minimize(fn, lo, hi, opt, term, asynchronous=slots)
                    busy, wall = slots.busy, slots.now
                else:
                    r = minimize(fn, lo, hi, opt, term)
                    batches: dict[int, list[float]] = {}
                    for b, x in zip(r.history.batch, r.history.X, strict=True):
                        batches.setdefault(b, []).append(dur(x))
                    busy = sum(sum(v) for v in batches.values())
                    wall = sum(_makespan(v, WORKERS) for v in batches.values())
                rows.append({"method": method, "mode": mode, "seed": seed, "loss": r.best_loss, "evals": r.n_evals,
                             "wall": wall, "busy": busy, "util": busy / (WORKERS * wall), "rounds": int(opt.n_tells),
                             "stop": r.stop_reason})  # fmt: skip
    return rows


def slow_rastrigin(X: np.ndarray) -> np.ndarray:
    """Rastrigin, each point after sleeping its lognormal duration."""
    for x in np.atleast_2d(X):
        time.sleep(_duration(x))
    return rastrigin(X)


def slow_sphere(X: np.ndarray) -> np.ndarray:
    for x in np.atleast_2d(X):
        time.sleep(_duration(x))
    return sphere(X)


def _one(ev: DaskEvaluator, method: str, mode: str, seed: int, budget: int) -> dict:
    busy = [0.0]

    def note(_i: int, _b: int, o) -> None:
        busy[0] += o.seconds

    asyn = mode == "async"
    if method == "auto":
        lo, hi, fn = [-2.0] * DIM, [2.0] * DIM, slow_sphere
        opt: Any = Auto(seed=seed)
        kw: dict[str, Any] = {"termination": Termination(max_evals=budget, target=1e-6)}
    else:
        lo, hi, fn = [-5.12] * DIM, [5.12] * DIM, slow_rastrigin
        opt = CMAES(seed=seed, popsize=WORKERS) if method == "cmaes" else DE(seed=seed, pop_size=WORKERS)
        kw = {"max_evals": budget}
    r = minimize(fn, lo, hi, opt, evaluator=ev, asynchronous=asyn, on_evaluation=note, **kw)
    return {
        "method": method,
        "mode": mode,
        "seed": seed,
        "loss": r.best_loss,
        "evals": r.n_evals,
        "wall": r.seconds,
        "busy": busy[0],
        "util": busy[0] / (WORKERS * r.seconds),
        "rounds": int(opt.n_tells),
        "stop": r.stop_reason,
    }


def _table(rows: list[dict], budget: int, seeds: int) -> str:
    out = [
        "| method | mode | seeds | median wall (s) | median utilisation | median best loss | losses (per seed) |",
        "|---|---|---|---|---|---|---|",
    ]
    for method in ("cmaes", "de"):
        for mode in ("sync", "async"):
            rs = [r for r in rows if r["method"] == method and r["mode"] == mode]
            if not rs:
                continue
            losses = ", ".join(f"{r['loss']:.3g}" for r in sorted(rs, key=lambda r: r["seed"]))
            out.append(
                f"| {method} | {mode} | {len(rs)} | {np.median([r['wall'] for r in rs]):.1f} | "
                f"{np.median([r['util'] for r in rs]):.1%} | {np.median([r['loss'] for r in rs]):.4g} | {losses} |"
            )
    out += ["", "`auto` on 8-D Sphere over [-2, 2]^8, to a best loss <= 1e-6 (budget "
            f"{budget}):", "", "| mode | seed | rounds told | evaluations | wall (s) | utilisation | stop |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        if r["method"] == "auto":
            out.append(
                f"| {r['mode']} | {r['seed']} | {r['rounds']} | {r['evals']} | {r['wall']:.1f} | {r['util']:.1%} | "
                f"{r['stop']} |"
            )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", type=int, default=2048)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--median", type=float, default=0.1, help="median simulated duration, seconds")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--fresh", action="store_true")
    a = ap.parse_args()
    MEDIAN[0] = a.median
    a.out.mkdir(parents=True, exist_ok=True)
    log = a.out / "cluster_runs.jsonl"
    if a.fresh and log.exists():
        log.unlink()
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    done = {(r["method"], r["mode"], r["seed"]) for r in rows}
    plan = [(m, mode, s) for s in range(a.seeds) for m in ("cmaes", "de") for mode in ("sync", "async")]
    plan += [("auto", mode, 0) for mode in ("sync", "async")]
    t0 = time.perf_counter()
    with DaskEvaluator(n_workers=WORKERS, threads_per_worker=1, processes=False, chunk_size=1) as ev:
        ev.client  # noqa: B018 - start the cluster before timing
        for key in plan:
            if key in done:
                continue
            row = _one(ev, *key, a.budget)
            rows.append(row)
            with log.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(f"{key}: wall {row['wall']:.1f} s, utilisation {row['util']:.1%}, loss {row['loss']:.4g}", flush=True)
    import dask
    import distributed

    clock = _clock_runs(a.seeds, 2048)

    text = f"""# Synchronous batches against asynchronous evaluation on a simulated cluster

`python benchmarks/cluster.py --budget {a.budget} --seeds {a.seeds} --median {a.median}` (this session:
{time.perf_counter() - t0:.0f} s for the runs not already in `cluster_runs.jsonl`).

A dask LocalCluster of {WORKERS} single-thread workers (threads of one process; dask {dask.__version__},
distributed {distributed.__version__}, Python {platform.python_version()}, on a 2-core machine shared with
other jobs). Each evaluation sleeps a lognormal duration drawn from its parameter values: median
{a.median} s (the issue's 1 s scaled down {1 / a.median:g} times, so that the whole benchmark fits in
minutes; every duration scales alike), spread factor {SPREAD:g} (sigma = ln 2). CMA-ES (popsize {WORKERS})
and DE (NP {WORKERS}) minimise 8-D Rastrigin over [-5.12, 5.12]^8 with {a.budget} simulations each;
`sync` = the synchronous batches of `calibrate` (one generation of {WORKERS} per batch, one set per task),
`async` = `calibrate(..., asynchronous=True)`: {WORKERS} evaluations in flight, steady-state DE and
asynchronous CMA-ES. Utilisation = summed evaluation time / ({WORKERS} x wall time).

{_table(rows, a.budget, a.seeds)}

## The same on a simulated clock: the issue's scale, no scheduling overhead

`execution.slots.ClockSlots`: 32 slots, each evaluation takes its lognormal duration at median 1 s (not scaled),
spread factor 2, 2048 simulations per run and {a.seeds} seeds; nothing sleeps. Synchronous batches are
scheduled in ask order on the first free of 32 workers (a batch's wall time is its makespan). This isolates
what the method's schedule allows from the overheads of the cluster above (dask's scheduling and this loaded
2-core machine).

{_table(clock, 2048, a.seeds)}
"""
    (a.out / "cluster.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
