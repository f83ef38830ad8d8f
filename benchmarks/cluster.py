"""Synchronous batches against asynchronous evaluation on a simulated cluster (issue 32).

A dask LocalCluster of 32 single-thread workers (threads of this process: the model only sleeps, which
costs no CPU) evaluates a test function whose every evaluation sleeps a lognormal duration (median
``--median`` seconds, default the issue's 1 s; spread factor 2: ``sigma = ln 2``; the duration is drawn from
the parameter values, so it is the same for the same point in both modes). CMA-ES (popsize 32, and its
default population of 10, which asynchronous evaluation keeps whatever the workers) and DE (NP 32) each spend ``--budget`` simulations, synchronously (a batch waits for its slowest simulation) and
asynchronously (32 in flight, each told as it finishes); worker utilisation is the summed evaluation time
over 32 x the wall time. ``auto`` runs on the same cluster to a target. dask's statistical profiler of the
workers is turned off (``--profile`` keeps it): 32 in-process workers sampled every 10 ms cost a large
share of this 2-core machine, which a real cluster's workers (processes on other nodes) do not take from
the client. Every finished run is appended to ``cluster_runs.jsonl`` (with the machine's load average), so
an interrupted benchmark resumes where it stopped (``--fresh`` starts over).

The same comparison runs on a simulated clock (``execution.slots.ClockSlots``: no scheduling overhead, the
issue's scale, ``--clock-seeds`` seeds, cached in ``cluster_clock.jsonl``), with a one-sided Mann-Whitney U
test of "asynchronous ends worse" per method, and again on two unimodal functions (Rosenbrock, a 1e6
ellipsoid; ``cluster_clock_<function>.jsonl``), where the loss reached measures progress per simulation.

    python benchmarks/cluster.py                  # writes benchmarks/results/cluster.md
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from mechcalib.calibrate import Termination, minimize
from mechcalib.execution.dask_backend import DaskEvaluator
from mechcalib.execution.slots import ClockSlots
from mechcalib.optimizers import CMAES, DE, Auto
from mechcalib.testing.functions import rastrigin, rosenbrock, sphere

RESULTS = Path(__file__).parent / "results"
WORKERS = 32
DIM = 8
SPREAD = 2.0
MEDIAN = [1.0]


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


def ellipsoid(X: np.ndarray) -> np.ndarray:
    """The axis-parallel ellipsoid of condition number 1e6 (Hansen's f_elli)."""
    X = np.atleast_2d(X)
    return np.sum(10.0 ** (6.0 * np.arange(X.shape[1]) / (X.shape[1] - 1)) * X**2, axis=1)


# the test functions of CMA-ES and DE with their box [-h, h]^8; the unimodal ones are the clock's second look
FUNCTIONS = {"rastrigin": (rastrigin, 5.12), "rosenbrock": (rosenbrock, 3.0), "ellipsoid": (ellipsoid, 3.0)}
UNIMODAL = ("rosenbrock", "ellipsoid")
UNIMODAL_BUDGET = 1024


def _problem(method: str, seed: int, budget: int, slow: bool, fn: str = "rastrigin") -> tuple[Any, ...]:
    """``(fn, lower, upper, optimizer, termination)`` of one run: CMA-ES and DE on 8-D ``fn`` (Rastrigin by
    default; ``slow``: Rastrigin after sleeping) with the budget, ``auto`` on 8-D Sphere to a best loss of 1e-6."""
    if method == "auto":
        return (
            (slow_sphere if slow else sphere),
            [-2.0] * DIM,
            [2.0] * DIM,
            Auto(seed=seed, batch_size=WORKERS),  # a round fills the 32 workers (lockstep starts)
            Termination(max_evals=budget, target=1e-6),
        )
    opt: Any = {
        "cmaes": lambda: CMAES(seed=seed, popsize=WORKERS),
        "cmaes-default": lambda: CMAES(seed=seed),  # pycma's population, 4 + 3 ln 8 = 10
        "de": lambda: DE(seed=seed, pop_size=WORKERS),
    }[method]()
    f, h = FUNCTIONS[fn]
    return (slow_rastrigin if slow else f), [-h] * DIM, [h] * DIM, opt, Termination(max_evals=budget)


def _clock_one(method: str, mode: str, seed: int, budget: int, fn: str = "rastrigin") -> dict:
    """One run on a simulated clock (no scheduling overhead), median 1 s unscaled."""
    f, lo, hi, opt, term = _problem(method, seed, budget, slow=False, fn=fn)
    dur = lambda x: _duration(x, 1.0)  # noqa: E731
    if mode == "async":
        slots = ClockSlots(WORKERS, dur)
        r = minimize(f, lo, hi, opt, term, asynchronous=slots)
        busy, wall = slots.busy, slots.now
    else:
        r = minimize(f, lo, hi, opt, term)
        batches: dict[int, list[float]] = {}
        for b, x in zip(r.history.batch, r.history.X, strict=True):
            batches.setdefault(b, []).append(dur(x))
        busy = sum(sum(v) for v in batches.values())
        wall = sum(_makespan(v, WORKERS) for v in batches.values())
    return {"method": method, "mode": mode, "seed": seed, "budget": budget, "function": fn, "loss": r.best_loss,
            "evals": r.n_evals, "wall": wall, "busy": busy, "util": busy / (WORKERS * wall),
            "rounds": int(opt.n_tells), "stop": r.stop_reason}  # fmt: skip


LABELS = {"cmaes": "CMA-ES, popsize 32", "cmaes-default": "CMA-ES, popsize 10 (pycma's default)", "de": "DE, NP 32"}


def _pvalues(rs: list[dict], method: str) -> str:
    """The "async worse" p-values of ``method``: against the synchronous runs of the same population, and for the
    default population also against synchronous CMA-ES with popsize 32 (the population that fills the workers)."""
    p = _worse_p(rs, method)
    return f"{p} / {_worse_p(rs, method, 'cmaes')}" if method == "cmaes-default" else p


def _unimodal_table(rows: dict[str, list[dict]]) -> str:
    out = ["| function | method | sync: median best loss | async: median best loss | seeds 0-4, sync / async "
           "| async worse (p) |", "|---|---|---|---|---|---|"]  # fmt: skip
    for fn, rs in rows.items():
        for method in LABELS:
            loss = {m: [r["loss"] for r in sorted(rs, key=lambda r: r["seed"]) if r["method"] == method
                        and r["mode"] == m] for m in ("sync", "async")}  # fmt: skip
            if not loss["sync"] or not loss["async"]:
                continue
            out.append(
                f"| {fn} | {LABELS[method]} | {np.median(loss['sync']):.4g} | {np.median(loss['async']):.4g} | "
                f"{np.median(loss['sync'][:5]):.4g} / {np.median(loss['async'][:5]):.4g} | {_pvalues(rs, method)} |"
            )
    return "\n".join(out)


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

    fn, lo, hi, opt, term = _problem(method, seed, budget, slow=True)
    load = os.getloadavg()[0]
    r = minimize(fn, lo, hi, opt, term, evaluator=ev, asynchronous=mode == "async", on_evaluation=note)
    return {"method": method, "mode": mode, "seed": seed, "budget": budget, "median": MEDIAN[0], "loss": r.best_loss,
            "evals": r.n_evals, "wall": r.seconds, "busy": busy[0], "util": busy[0] / (WORKERS * r.seconds),
            "rounds": int(opt.n_tells), "stop": r.stop_reason, "load": [load, os.getloadavg()[0]]}  # fmt: skip


def _worse_p(rs: list[dict], method: str, against: str | None = None) -> str:
    """One-sided Mann-Whitney U p-value of "the asynchronous losses of ``method`` are larger than the
    synchronous ones of ``against`` (default: ``method``)" (scipy), or a dash."""
    from scipy.stats import mannwhitneyu

    a = [r["loss"] for r in rs if r["method"] == method and r["mode"] == "async"]
    b = [r["loss"] for r in rs if r["method"] == (against or method) and r["mode"] == "sync"]
    if len(a) < 3 or len(b) < 3:
        return "-"
    return f"{mannwhitneyu(a, b, alternative='greater').pvalue:.2f}"


def _table(rows: list[dict], budget: int, stats: bool = False) -> str:
    head = "| method | mode | seeds | median wall (s) | median utilisation | median best loss |"
    out = [head + (" seeds 0-4: median | seeds 20-39: median | async worse (p) |" if stats
                   else " losses (per seed) |"),
           "|---|---|---|---|---|---|---|" + ("---|---|" if stats else "")]  # fmt: skip
    for method in LABELS:
        for mode in ("sync", "async"):
            rs = sorted((r for r in rows if r["method"] == method and r["mode"] == mode), key=lambda r: r["seed"])
            if not rs:
                continue
            line = (
                f"| {LABELS[method]} | {mode} | {len(rs)} | {np.median([r['wall'] for r in rs]):.1f} | "
                f"{np.median([r['util'] for r in rs]):.1%} (lowest {min(r['util'] for r in rs):.1%}) | "
                f"{np.median([r['loss'] for r in rs]):.4g} |"
            )
            if stats:
                first = [r["loss"] for r in rs if r["seed"] < 5]
                p = _pvalues(rows, method) if mode == "async" else ""
                later = [r["loss"] for r in rs if 20 <= r["seed"] < 40]  # not looked at for the choices
                held = f"{np.median(later):.4g}" if later else "-"
                line += f" {np.median(first):.4g} ({', '.join(f'{v:.3g}' for v in first)}) | {held} | {p} |"
            else:
                line += " " + ", ".join(f"{r['loss']:.3g}" for r in rs) + " |"
            out.append(line)
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


def _seeds_table(rows: list[dict], clock: list[dict], n: int) -> str:
    """The best losses on the dask cluster over seeds ``0..n-1``: asynchronous runs as measured, synchronous
    ones from the dask runs where they ran and from the clock's otherwise (the same points and losses: a
    synchronous run does not depend on timing; checked where both ran)."""
    sync = {(r["method"], r["seed"]): r["loss"] for r in clock if r["mode"] == "sync"}
    for r in rows:
        if r["mode"] == "sync" and (r["method"], r["seed"]) in sync:
            assert r["loss"] == sync[r["method"], r["seed"]], f"synchronous {r['method']} seed {r['seed']} differs"
        if r["mode"] == "sync":
            sync[r["method"], r["seed"]] = r["loss"]
    out = ["| method | sync: losses | sync: median | async: losses | async: median |", "|---|---|---|---|---|"]
    for method in LABELS:
        a = {r["seed"]: r["loss"] for r in rows if r["method"] == method and r["mode"] == "async" and r["seed"] < n}
        if len(a) < n:
            continue
        b = [sync[method, k] for k in range(n)]
        out.append(
            f"| {LABELS[method]} | {', '.join(f'{v:.3g}' for v in b)} | {np.median(b):.4g} | "
            f"{', '.join(f'{a[k]:.3g}' for k in range(n))} | {np.median(list(a.values())):.4g} |"
        )
    return "\n".join(out)


def _runs(log: Path, plan: list[tuple], run: Any, same: Any) -> list[dict]:
    """The rows of ``plan``: those in ``log`` (a .jsonl) whose settings match (``same(row)``), the others run
    with ``run(*key)`` and appended as they finish."""
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    rows = [r for r in rows if same(r)]
    done = {(r["method"], r["mode"], r["seed"]) for r in rows}
    for key in plan:
        if key in done:
            continue
        row = run(*key)
        rows.append(row)
        with log.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"{key}: wall {row['wall']:.1f} s, utilisation {row['util']:.1%}, loss {row['loss']:.4g}", flush=True)
    return [r for r in rows if (r["method"], r["mode"], r["seed"]) in set(plan)]


def _dask_runs(a: argparse.Namespace, log: Path) -> list[dict]:
    import dask

    plan = [(m, mode, 0) for m in ("cmaes", "de") for mode in ("sync", "async")]
    plan += [("auto", mode, 0) for mode in ("sync", "async")]
    plan += [(m, mode, s) for s in range(1, a.seeds) for m in ("cmaes", "de") for mode in ("sync", "async")]
    # CMA-ES with its default population: asynchronously on every seed; synchronously (205 rounds of 10
    # on 32 workers, about 7 minutes) on seed 0 only
    plan += [("cmaes-default", "async", s) for s in range(a.seeds)] + [("cmaes-default", "sync", 0)]
    # more asynchronous seeds: a synchronous run's points, and so its losses, do not depend on timing (its
    # losses on these seeds are the clock's, checked where both ran)
    plan += [(m, "async", s) for s in range(a.seeds, a.async_seeds) for m in ("cmaes", "cmaes-default", "de")]
    if not a.profile:
        dask.config.set({"distributed.worker.profile.enabled": False})
    import cma  # noqa: F401 - imported before any run is timed

    with DaskEvaluator(n_workers=WORKERS, threads_per_worker=1, processes=False, chunk_size=1) as ev:
        ev.client  # noqa: B018 - start the cluster before timing
        return _runs(
            log,
            plan,
            lambda m, mode, s: _one(ev, m, mode, s, a.budget),
            lambda r: r.get("budget") == a.budget and r.get("median") == a.median,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", type=int, default=2048)
    ap.add_argument("--seeds", type=int, default=1, help="seeds of the dask comparison (seed 0 first, then auto)")
    ap.add_argument("--async-seeds", type=int, default=5, help="seeds of the asynchronous runs on dask (>= --seeds)")
    ap.add_argument("--clock-seeds", type=int, default=40, help="seeds of the simulated-clock comparison")
    ap.add_argument("--median", type=float, default=1.0, help="median simulated duration, seconds")
    ap.add_argument("--profile", action="store_true", help="keep dask's worker profiler on")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--fresh", action="store_true")
    a = ap.parse_args()
    MEDIAN[0] = a.median
    a.out.mkdir(parents=True, exist_ok=True)
    logs = a.out / "cluster_runs.jsonl", a.out / "cluster_clock.jsonl"
    for log in logs if a.fresh else ():
        log.unlink(missing_ok=True)
    t0 = time.perf_counter()
    rows = _dask_runs(a, logs[0])
    plan = [(m, mode, s) for m in LABELS for s in range(a.clock_seeds) for mode in ("sync", "async")]
    clock = _runs(logs[1], plan + [("auto", mode, 0) for mode in ("sync", "async")],
                  lambda m, mode, s: _clock_one(m, mode, s, 2048), lambda r: r.get("budget") == 2048)  # fmt: skip
    unimodal = {
        f: _runs(
            a.out / f"cluster_clock_{f}.jsonl",
            plan,
            lambda m, mode, s, f=f: _clock_one(m, mode, s, UNIMODAL_BUDGET, f),
            lambda r: r.get("budget") == UNIMODAL_BUDGET,
        )
        for f in UNIMODAL
    }
    _write(a, rows, clock, unimodal, time.perf_counter() - t0)


def _write(
    a: argparse.Namespace, rows: list[dict], clock: list[dict], unimodal: dict[str, list[dict]], seconds: float
) -> None:
    import dask
    import distributed

    loads = [v for r in rows for v in r["load"]]
    text = f"""# Synchronous batches against asynchronous evaluation on a simulated cluster

`python benchmarks/cluster.py --budget {a.budget} --seeds {a.seeds} --async-seeds {a.async_seeds} --median
{a.median} --clock-seeds {a.clock_seeds}` (this session: {seconds:.0f} s for the runs not already in `cluster_runs.jsonl` and
`cluster_clock.jsonl`).

## A dask LocalCluster of {WORKERS} workers

{WORKERS} single-thread workers (threads of one process; dask {dask.__version__}, distributed
{distributed.__version__}, Python {platform.python_version()}; the workers' statistical profiler
{"on" if a.profile else "off"}), on a 2-core machine shared with other jobs: 1-minute load average
{min(loads):.1f} to {max(loads):.1f} at the starts and ends of the runs. Each evaluation sleeps a lognormal
duration drawn from its parameter values: median {a.median:g} s, spread factor {SPREAD:g} (sigma = ln 2).
CMA-ES (popsize {WORKERS}) and DE (NP {WORKERS}) minimise 8-D Rastrigin over [-5.12, 5.12]^8 with
{a.budget} simulations each; `sync` = the synchronous batches of `calibrate` (one generation of {WORKERS} per
batch, one set per task), `async` = `calibrate(..., asynchronous=True)`: {WORKERS} evaluations in flight,
steady-state DE and asynchronous CMA-ES. CMA-ES also runs with its default population (`CMAES()`: pycma's
4 + 3 ln 8 = 10): asynchronously {WORKERS} simulations are in flight whatever the population (an update per 10
told), synchronously a round holds one generation of 10 and leaves 22 workers idle (seed 0 only: 205 rounds). Utilisation = summed evaluation time / ({WORKERS} x wall time), the
wall time from `calibrate`'s start (the cluster already up) to its end, the last simulations' drain included.
Synchronous runs on seeds 0 to {a.seeds - 1} (CMA-ES with its default population: seed 0), asynchronous ones
on seeds 0 to {a.async_seeds - 1}.

{_table(rows, a.budget)}

The asynchronous runs of seeds 0 to {a.async_seeds - 1} on this cluster against the synchronous runs of the
same seeds (seeds {a.seeds} on: the clock's synchronous runs below, which ask and tell the same points, and so
reach the same losses, as a synchronous run on the cluster: a synchronous run does not depend on timing):

{_seeds_table(rows, clock, a.async_seeds)}

## The same on a simulated clock: the issue's scale, no scheduling overhead

`execution.slots.ClockSlots`: 32 slots, each evaluation takes its lognormal duration at median 1 s, spread
factor 2, 2048 simulations per run, {a.clock_seeds} seeds (0 to {a.clock_seeds - 1}); nothing sleeps.
Synchronous batches are scheduled in ask order on the first free of 32 workers (a batch's wall time is its
makespan). This isolates what the method's schedule allows from the overheads of the cluster above. "seeds
0-4" gives the issue's 5 seeds; seeds 20-39 were looked at neither when the asynchronous CMA-ES's clipping of
stale steps was chosen nor when the default population was chosen for asynchronous CMA-ES (both on seeds 0-19);
"async worse (p)" is the one-sided Mann-Whitney U test (scipy) of the asynchronous losses being larger than the
synchronous ones over all {a.clock_seeds} seeds (a small p: worse); for CMA-ES with the default population two
values: against synchronous CMA-ES with the same population / with popsize {WORKERS}, the population that
fills the workers.

{_table(clock, 2048, stats=True)}

The best loss reached on Rastrigin says more about the basin a run ends in than about the progress per
simulation. On two unimodal functions over [-3, 3]^8 (Rosenbrock; the ellipsoid of condition 1e6), the same
clock, {UNIMODAL_BUDGET} simulations, {a.clock_seeds} seeds:

{_unimodal_table(unimodal)}
"""
    (a.out / "cluster.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
