"""Kibriya et al. (2023) Tables 1-4: the masonry arch calibrated with PSO, GA and TBPSO, objectives 1 and 2, Pulatsu's
geometry and the surface-meshed geometry (h = 12 mm), against the shipped synthetic reference.

Set-up (Kibriya et al. (2023) section 4): kn, ks in [1e8, 1e10] Pa/m (log scale) and phi in [25, 45] deg, initial values
uniform in the unit cube; the model at 10 mm/s to 12 mm against ``mechcalib.models.masonry.reference_experiment()``
(Pulatsu's geometry and parameters at 0.5 mm/s). Swarm/population 10; one iteration is one batch after the initial
one. Methods (``RUN_METHODS``): PSO (``PSO.kibriya2023``) for 50 and 20 iterations (510 and 210 evaluations), TBPSO
(``TBPSO.kibriya2023``) for 20 in three readings of eq. 13 ("away", "toward", "toward" with the trust capped at 1), and
the GA (``GA.kibriya2023`` with a population of 14: four parents kept, ten offspring per generation, 514 evaluations,
PSO 50's budget). Run ``r`` (1-10) of every method uses seed ``r``, so PSO and TBPSO runs of the same id start from
the same swarm.

Two studies exist. ``arch.md`` (store ``arch.sqlite``, the default ``--store``) was made with real masses before the
default inertia scaling, with the GA of ``OLD_METHODS`` (six offspring per generation, 310 evaluations) and one reading
of eq. 13; its claims table is rewritten with ``claims`` only, since a full ``report`` would redraw its fits and
Fig. 26 with today's model (inertia scaling). ``arch_v2.md`` (``--store benchmarks/results/arch_v2.sqlite --out
benchmarks/results/arch_v2.md``) is the rerun with the default inertia scaling and ``RUN_METHODS``, 10 runs per
configuration.

Every evaluation goes through the run store (run name ``{geometry}-obj{k}-{method}-run{r:02d}``): an interrupted study
resumes where it stopped, finished runs are skipped, and the report is regenerated from the store alone. Each report
written from the store also writes ``<store>.summary.json`` (per run the totals, the best set and the best-so-far
curve's steps, and the run log's load averages); ``report`` reads it when the store is absent, with the same tables
and figures. Both studies are finished: their stores are not in the repository, their summaries are.

    S="--store benchmarks/results/arch_v2.sqlite"
    python benchmarks/arch_calibration.py run --objectives 1 --runs 3 $S       # the first pass
    python benchmarks/arch_calibration.py run --runs 10 --hours 8 $S           # the rest (resumable)
    python benchmarks/arch_calibration.py report $S --out benchmarks/results/arch_v2.md   # the report, PNGs

``run`` stops starting new runs after ``--hours``; kill it at any time and run it again to resume.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mechcalib import EvaluationBatch, Problem, Termination, calibrate
from mechcalib.core.model import SimulationFailure
from mechcalib.core.problem import _simulate_isolated
from mechcalib.models.masonry.arch import PULATSU, MasonryArch
from mechcalib.models.masonry.reference import reference_experiment, reference_path
from mechcalib.objectives import OverlapRSS
from mechcalib.objectives.smoothing import SmoothedOverlapRSS
from mechcalib.optimizers import GA, PSO, TBPSO
from mechcalib.reporting import save_png
from mechcalib.storage import RunStore, problem_fingerprint

RESULTS = Path(__file__).resolve().parent / "results"
STORE = RESULTS / "arch.sqlite"
REPORT = RESULTS / "arch.md"

GEOMETRIES = {
    "pulatsu": ("Pulatsu's geometry (8 sub-blocks, 17 contacts per joint)", {"contacts": "pulatsu"}),
    "surface": (
        "surface-meshed geometry, h = 12 mm (15 contacts per joint)",
        {"contacts": "surface", "mesh_size": 12.0},
    ),
}
OBJECTIVE_NAMES = {1: "objective 1 (raw curves)", 2: "objective 2 (neural smoothing)"}
# label: (process, iterations, optimiser factory)
METHODS = {
    "pso50": ("PSO", 50, lambda seed: PSO.kibriya2023(seed=seed)),
    "ga50": ("GA (6 new / gen.)", 50, lambda seed: GA.kibriya2023(seed=seed)),
    # ten new evaluations per generation (the library's 0.3 parents portion of 14 keeps 4 parents): 14 + 500
    "ga50e": ("GA (10 new / gen.)", 50, lambda seed: GA.kibriya2023(seed=seed, pop_size=14)),
    "pso20": ("PSO", 20, lambda seed: PSO.kibriya2023(seed=seed, max_iter=20)),
    "tbpso20": ("TBPSO (away)", 20, lambda seed: TBPSO.kibriya2023(seed=seed)),
    "tbpso20t": ("TBPSO (toward)", 20, lambda seed: TBPSO.kibriya2023(seed=seed, trust_direction="toward")),
    "tbpso20tc": (
        "TBPSO (toward, trust <= 1)",
        20,
        lambda seed: TBPSO.kibriya2023(seed=seed, trust_direction="toward", trust_limit=1.0),
    ),
}
EVALS = {"pso50": 510, "ga50": 310, "ga50e": 514, "pso20": 210, "tbpso20": 210, "tbpso20t": 210, "tbpso20tc": 210}
TBPSO_METHODS = ("tbpso20", "tbpso20t", "tbpso20tc")
# the study run now (the GA at PSO 50's budget) and the one of the stored summary before the inertia fix
RUN_METHODS = ("pso50", "ga50e", "pso20", "tbpso20", "tbpso20t", "tbpso20tc")
OLD_METHODS = ("pso50", "ga50", "pso20", "tbpso20")
N_RUNS = 10  # runs per configuration
P_TIE = 0.1  # a comparison with a larger Mann-Whitney p is read as a tie
TABLES = {("pulatsu", 1): 1, ("pulatsu", 2): 2, ("surface", 1): 3, ("surface", 2): 4}
VELOCITY = 10.0  # mm/s, the calibration velocity


def make_objective(k: int):
    return OverlapRSS() if k == 1 else SmoothedOverlapRSS()


def run_name(geom: str, k: int, method: str, r: int) -> str:
    return f"{geom}-obj{k}-{method}-run{r:02d}"


@dataclass
class ArchProblem(Problem):
    """The calibration problem with a stable identity for the store (the default fingerprint pickles the
    model, whose lazily computed attributes would change it between a run and its resumption). An objective
    with ``values_many`` (objective 2) scores the whole batch in one call, which trains the smoothing networks
    of all its curves in one stacked fit; the values are those of one-by-one scoring."""

    label: str = ""

    def fingerprint(self) -> str:
        return self.label

    def evaluate(self, x_free: np.ndarray) -> EvaluationBatch:
        many = getattr(self.objective, "values_many", None)
        if many is None:
            return super().evaluate(x_free)
        t0 = time.perf_counter()
        x_free = np.atleast_2d(np.asarray(x_free, dtype=float))
        n = x_free.shape[0]
        raw = np.zeros(n)
        errors: list[str | None] = [None] * n
        responses: list = [{} for _ in range(n)] if self.keep_responses else []
        for exp in self.experiments:
            sims = _simulate_isolated(self.simulate, x_free, exp)
            live = [i for i in range(n) if errors[i] is None]
            for i in live:
                if isinstance(sims[i], SimulationFailure):
                    errors[i] = f"experiment {exp.name!r}: {sims[i].message}"
            live = [i for i in live if errors[i] is None]
            for i, val in zip(live, many([sims[i] for i in live], exp), strict=True):
                if isinstance(val, Exception):
                    errors[i] = f"experiment {exp.name!r}: objective failed: {type(val).__name__}: {val}"
                    continue
                val *= exp.weight
                if not math.isfinite(val):
                    errors[i] = f"experiment {exp.name!r}: objective is not finite ({val!r})"
                    continue
                raw[i] += val
                if self.keep_responses:
                    responses[i][exp.name] = sims[i]
        raw = np.where([e is None for e in errors], raw, np.nan)
        return self._finish(raw, errors, responses, t0)


def _reference_digest() -> str:
    return hashlib.blake2b(reference_path().read_bytes(), digest_size=8).hexdigest()


_MODELS: dict[str, MasonryArch] = {}


def model_for(geom: str) -> MasonryArch:
    if geom not in _MODELS:
        _MODELS[geom] = MasonryArch(**GEOMETRIES[geom][1])
    return _MODELS[geom]


def problem_for(geom: str, k: int) -> ArchProblem:
    obj = make_objective(k)
    label = (
        f"arch_calibration/v1/{geom}:{json.dumps(GEOMETRIES[geom][1], sort_keys=True)}/{obj!r}/"
        f"reference:{_reference_digest()}/velocity:{VELOCITY}/"
        f"mass_scale:{model_for(geom).default_conditions['mass_scale']}"
    )
    return ArchProblem(model_for(geom), reference_experiment(velocity=VELOCITY), obj, label=label)


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------
def run_one(store: RunStore, geom: str, k: int, method: str, r: int) -> dict | None:
    """Run (or resume) one calibration; ``None`` if it is already finished."""
    name = run_name(geom, k, method, r)
    problem = problem_for(geom, k)
    if store.has_run(name):
        info = store.run(name)
        if info.fingerprint is not None and info.fingerprint != problem_fingerprint(problem):
            # The problem changed since (e.g. objective 2's settings): the stored run no longer belongs to the study.
            sys.stdout.write(f"{name}: made with another problem ({info.fingerprint}); replaced\n")
            store.delete_run(name)
        elif info.status == "finished" and store.n_evaluations(name) >= EVALS[method]:
            return None
    process, iters, factory = METHODS[method]
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    res = calibrate(
        problem,
        factory(r),
        Termination(max_iters=iters + 1),
        store=store,
        run_name=name,
        config={
            "geometry": geom,
            "objective": k,
            "method": method,
            "process": process,
            "iterations": iters,
            "run": r,
            "velocity": VELOCITY,
        },
        checkpoint_every=5,
    )
    rec = {
        "run": name,
        "seconds": round(time.perf_counter() - t0, 2),
        "n_evals": res.n_evals,
        "n_simulated": res.n_simulated,
        "n_replayed": res.n_replayed,
        "n_cached": res.n_cached,
        "best": res.best_loss,
        "params": res.best_params,
        "loadavg_start": load0,
        "loadavg_end": os.getloadavg(),
        "numba_threads": int(os.environ.get("NUMBA_NUM_THREADS", "0")) or None,
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with store.path.with_suffix(".runs.jsonl").open("a") as fh:
        fh.write(json.dumps(rec) + "\n")
    return rec


def cmd_run(args: argparse.Namespace) -> int:
    deadline = time.time() + args.hours * 3600 if args.hours else math.inf
    todo = [
        (k, r, g, m)
        for k in args.objectives
        for r in range(1, args.runs + 1)
        for g in args.geometries
        for m in args.methods
    ]
    with RunStore(args.store) as store:
        for k, r, g, m in todo:
            if time.time() > deadline:
                sys.stdout.write("time limit reached; run the same command again to continue\n")
                break
            rec = run_one(store, g, k, m, r)
            if rec is not None:
                sys.stdout.write(
                    f"{rec['run']}: best {rec['best']:.4g} after {rec['n_evals']} evaluations, "
                    f"{rec['seconds']:.0f} s (load {rec['loadavg_end'][0]:.1f})\n"
                )
                sys.stdout.flush()
    return 0


# --------------------------------------------------------------------------------------------
# Reading the store
# --------------------------------------------------------------------------------------------
@dataclass
class RunData:
    """What the report reads of one stored run: its totals, its best set and its best-so-far curve as the
    steps where it falls (every other evaluation only repeats the best so far, so the curve, the best loss and
    the best after any number of batches follow exactly from the steps)."""

    name: str
    geom: str
    k: int
    method: str
    r: int
    complete: bool
    n_evals: int
    steps: np.ndarray  # evaluation indices where the best loss so far falls (the first evaluation included)
    step_losses: np.ndarray  # the best loss so far from each step on (+inf while only failures were seen)
    step_batches: np.ndarray  # the batch of each step
    best_params: dict[str, float]  # the parameters at the last step (the run's best)
    seconds: float  # evaluation time, summed over batches
    n_live: int  # evaluations simulated by the run (the others came from the cache or a resumed session)

    @property
    def best(self) -> float:
        return float(self.step_losses[-1])

    def best_after(self, n_batches: int) -> float:
        sel = self.step_batches < n_batches
        return float(np.min(self.step_losses[sel])) if sel.any() else math.inf

    def curve(self) -> tuple[np.ndarray, np.ndarray]:
        """Best loss so far against the number of evaluations."""
        f = np.full(self.n_evals, np.inf)
        f[self.steps] = self.step_losses
        return np.arange(1, self.n_evals + 1), np.minimum.accumulate(f)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "geometry": self.geom,
            "objective": self.k,
            "method": self.method,
            "run": self.r,
            "complete": self.complete,
            "n_evals": self.n_evals,
            "steps": self.steps.tolist(),
            "step_losses": [float(v) for v in self.step_losses],
            "step_batches": self.step_batches.tolist(),
            "best_params": self.best_params,
            "seconds": self.seconds,
            "n_live": self.n_live,
        }

    @classmethod
    def from_json(cls, d: dict) -> RunData:
        return cls(
            d["name"],
            d["geometry"],
            d["objective"],
            d["method"],
            d["run"],
            d["complete"],
            d["n_evals"],
            np.array(d["steps"], dtype=np.int64),
            np.array(d["step_losses"], dtype=float),
            np.array(d["step_batches"], dtype=np.int64),
            d["best_params"],
            d["seconds"],
            d["n_live"],
        )


def load_runs(store: RunStore, summarised: dict[str, RunData] | None = None) -> list[RunData]:
    """Every run of the store; a compacted run (its non-improving evaluations dropped) from ``summarised``, the
    summary written while its evaluations were all stored (compaction keeps what the tables need, not the
    per-batch timings)."""
    out = []
    for info in store.runs():
        c = info.config or {}
        if "geometry" not in c:
            continue
        if info.compacted:
            if summarised is None or info.name not in summarised:
                raise SystemExit(f"{info.name} was compacted before it was summarised; report from its summary file")
            out.append(summarised[info.name])
            continue
        recs = store.evaluations(info.name)
        if not recs:
            continue
        losses = np.array([x.loss if x.status == "ok" else math.inf for x in recs], float)
        run_min = np.minimum.accumulate(losses)
        steps = np.flatnonzero(np.r_[True, run_min[1:] < run_min[:-1]])
        batch = np.array([x.batch for x in recs])
        sec = 0.0
        for b in np.unique(batch):
            g = [x for x in recs if x.batch == b and x.source == "live"]
            if g:
                sec += max(x.finished for x in g) - min(x.started for x in g)
        method = c["method"]
        done = info.status == "finished" and len(recs) >= EVALS[method]
        out.append(
            RunData(
                info.name,
                c["geometry"],
                int(c["objective"]),
                method,
                int(c["run"]),
                done,
                len(recs),
                steps,
                run_min[steps],
                batch[steps],
                recs[int(steps[-1])].params,
                sec,
                sum(x.source == "live" for x in recs),
            )
        )
    return out


# The study's store (15 MiB) is not in the repository; this summary of it is, and the report reads it when the
# store is absent. The study is to be rerun with a corrected model (a new store from `run`).
SUMMARY_FORMAT = "arch_calibration summary 1"


def write_summary(runs: list[RunData], loads: list[float], path: Path) -> None:
    """The runs as the report reads them and the load averages of the run log, one run per line."""
    lines = [json.dumps(x.to_json()) for x in runs]
    path.write_text(
        '{"format": '
        + json.dumps(SUMMARY_FORMAT)
        + ', "loads": '
        + json.dumps(loads)
        + ', "runs": [\n'
        + ",\n".join(lines)
        + "\n]}\n"
    )


def read_summary(path: Path) -> tuple[list[RunData], list[float]]:
    d = json.loads(path.read_text())
    return [RunData.from_json(x) for x in d["runs"]], d["loads"]


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------
def _fmt_table(rows: list[list[str]], head: list[str]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def study_methods(runs: list[RunData]) -> tuple[str, ...]:
    """The methods of the study the runs belong to (:data:`OLD_METHODS` when the GA ran 6 new per generation)."""
    return OLD_METHODS if any(x.method == "ga50" for x in runs) else RUN_METHODS


def paper_table(runs: list[RunData], geom: str, k: int, n_best: int = 5) -> str:
    """Kibriya et al.'s (2023) layout: per method the five best runs (best set of each run), best first."""
    rows = []
    for method in study_methods(runs):
        process, iters, _ = METHODS[method]
        sel = sorted(
            (x for x in runs if x.geom == geom and x.k == k and x.method == method and x.complete), key=lambda x: x.best
        )[:n_best]
        for i, x in enumerate(sel):
            p = x.best_params
            rows.append(
                [
                    process if i == 0 else "",
                    str(iters) if i == 0 else "",
                    str(i + 1),
                    f"{p['kn'] / 1e9:.2f}",
                    f"{p['ks'] / 1e9:.2f}",
                    f"{p['phi']:.2f}",
                    f"{x.best:.2f}",
                    str(x.r),
                ]
            )
        if not sel:
            rows.append([process, str(iters), "-", "", "", "", "(no finished run)", ""])
    return _fmt_table(
        rows,
        ["Calibration process", "Iterations", "Run ID", "kn (GPa/m)", "ks (GPa/m)", "phi (deg)", "Fitness (-)", "seed"],
    )


def summary_table(runs: list[RunData]) -> str:
    rows = []
    for (geom, k), t in sorted(TABLES.items(), key=lambda kv: kv[1]):
        for method, (process, iters, _) in METHODS.items():
            sel = [x for x in runs if x.geom == geom and x.k == k and x.method == method and x.complete]
            if not sel:
                continue
            f = np.array([x.best for x in sel])
            at20 = ""
            if iters == 50:
                a = np.array([x.best_after(21) for x in sel])
                at20 = f"{np.median(a):.1f}"
            sec = sum(x.seconds for x in sel)
            live = sum(x.n_live for x in sel)
            n = sum(x.n_evals for x in sel)
            rows.append(
                [
                    str(t),
                    geom,
                    str(k),
                    f"{process} {iters}",
                    str(len(sel)),
                    f"{np.median(f):.1f}",
                    f"{f.min():.1f}",
                    f"{f.max():.1f}",
                    at20,
                    f"{live / n:.0%}",
                    f"{sec / max(live, 1):.3f}",
                    f"{sec / len(sel):.0f}",
                ]
            )
    return _fmt_table(
        rows,
        [
            "Table",
            "geometry",
            "objective",
            "method",
            "runs",
            "median best",
            "min",
            "max",
            "median best after 20 it.",
            "simulated (not cached)",
            "s / simulation",
            "s / run",
        ],
    )


def claim_label(p: float, median: float, other_median: float) -> str:
    """The reading of one comparison, from its p-value first: a tie unless p <= :data:`P_TIE`, then the side of
    the lower median (fitness is minimised)."""
    if not p <= P_TIE:  # also NaN (fewer than two runs on a side)
        return f"ties (p > {P_TIE:g})" if math.isfinite(p) else "too few runs"
    if median < other_median:
        return "TBPSO 20 better"
    return "TBPSO 20 worse" if median > other_median else f"ties (equal medians, p = {p:.2f})"


def claim_table(runs: list[RunData]) -> str:
    """Each TBPSO variant after 20 iterations against PSO and GA after 50 (and PSO after 20); Mann-Whitney U,
    two-sided, labelled by :func:`claim_label`."""
    from scipy.stats import mannwhitneyu

    rows = []
    for (geom, k), t in sorted(TABLES.items(), key=lambda kv: kv[1]):
        get = {
            m: np.array([x.best for x in runs if x.geom == geom and x.k == k and x.method == m and x.complete])
            for m in METHODS
        }
        for mtb in TBPSO_METHODS:
            tb = get[mtb]
            if tb.size == 0:
                continue
            for other in ("pso50", "ga50", "ga50e", "pso20"):
                o = get[other]
                if o.size == 0:
                    continue
                p = mannwhitneyu(tb, o, alternative="two-sided").pvalue if min(tb.size, o.size) >= 2 else float("nan")
                share = float(np.mean(tb <= np.median(o)))
                rows.append(
                    [
                        str(t),
                        geom,
                        str(k),
                        f"{METHODS[mtb][0]} 20 vs {METHODS[other][0]} {METHODS[other][1]}",
                        f"{tb.size} / {o.size}",
                        f"{np.median(tb):.1f} vs {np.median(o):.1f}",
                        f"{share:.0%}",
                        f"{p:.3f}",
                        claim_label(p, float(np.median(tb)), float(np.median(o))),
                    ]
                )
    return _fmt_table(
        rows,
        [
            "Table",
            "geometry",
            "obj.",
            "comparison",
            "runs",
            "median best",
            "TBPSO runs <= other's median",
            "Mann-Whitney p",
            "reading",
        ],
    )


def compact_mode(mode) -> str:
    """``3 H + 1 S (hinges: ...; sliding: ...)`` with short joint names."""
    short = lambda n: n.replace("joint_", "").replace("springing_", "spr. ").replace("_", "/")
    h = ", ".join(short(x) for x in mode.hinges) or "-"
    sl = ", ".join(short(x) for x in mode.sliding) or "-"
    return f"{mode.n_hinges} H + {mode.n_sliding} S (hinges {h}; sliding {sl})"


def _simulate(geom: str, params: list[dict[str, float]], velocity: float):
    m = model_for(geom)
    theta = np.array([[p["kn"], p["ks"], p["phi"]] for p in params])
    # below the calibration velocity, real masses as the reference (the default inertia scaling would only
    # multiply the steps of an already quasi-static run)
    return m.run(theta, {"velocity": velocity} | ({"mass_scale": 1.0} if velocity < VELOCITY else {}))


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def matplotlib_ticker():
    import matplotlib.ticker

    return matplotlib.ticker


COLORS = {
    "pso50": "tab:blue",
    "ga50": "tab:green",
    "ga50e": "tab:green",
    "pso20": "tab:orange",
    "tbpso20": "tab:red",
    "tbpso20t": "tab:purple",
    "tbpso20tc": "tab:brown",
}


def plot_convergence(runs: list[RunData], path: Path) -> None:
    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), sharex=True)
    for (geom, k), t in TABLES.items():
        ax = axes[(t - 1) // 2, (t - 1) % 2]
        for method in METHODS:
            for i, x in enumerate(x for x in runs if x.geom == geom and x.k == k and x.method == method):
                n, best = x.curve()
                ax.plot(
                    n,
                    best,
                    color=COLORS[method],
                    lw=0.9,
                    alpha=0.8,
                    label=f"{METHODS[method][0]} {METHODS[method][1]}" if i == 0 else None,
                )
        ax.set_title(f"Table {t}: {geom}, {OBJECTIVE_NAMES[k]}", fontsize=9)
        ax.set_ylabel("best fitness so far")
        ax.grid(alpha=0.3, which="both")
        if ax.lines:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(matplotlib_ticker().ScalarFormatter())
            ax.yaxis.set_minor_formatter(matplotlib_ticker().ScalarFormatter())
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, "no runs yet", ha="center", va="center", transform=ax.transAxes)
    for ax in axes[1]:
        ax.set_xlabel("evaluations (simulations)")
    fig.tight_layout()
    save_png(fig, path, dpi=100)
    plt.close(fig)


def plot_fits(runs: list[RunData], path: Path) -> dict:
    """Best set of each method (10 mm/s) against the reference, per table; returns the best runs' failure modes."""
    plt = _plt()
    ref = reference_experiment()
    modes = {}
    present = [(g, k) for (g, k) in TABLES if any(x.geom == g and x.k == k and x.complete for x in runs)]
    if not present:
        return modes
    fig, axes = plt.subplots(len(present), 2, figsize=(12, 3.6 * len(present)), squeeze=False)
    for row, (geom, k) in enumerate(present):
        best = {}
        for method in METHODS:
            sel = [x for x in runs if x.geom == geom and x.k == k and x.method == method and x.complete]
            if sel:
                best[method] = min(sel, key=lambda x: x.best)
        labels = ["Pulatsu's parameters"] + [f"{METHODS[m][0]} {METHODS[m][1]} ({b.best:.1f})" for m, b in best.items()]
        sims = _simulate(geom, [PULATSU] + [b.best_params for b in best.values()], VELOCITY)
        for col, ch in enumerate(("vertical", "horizontal")):
            ax = axes[row, col]
            c = ref[ch]
            ax.plot(c.x, c.y, "k", lw=2.0, label="reference (0.5 mm/s)")
            for j, (lab, s) in enumerate(zip(labels, sims, strict=True)):
                if not hasattr(s, "response"):
                    continue
                cc = s.response[ch]
                color = "0.55" if j == 0 else COLORS[list(best)[j - 1]]
                ax.plot(cc.x, cc.y, color=color, lw=0.9, ls="--" if j == 0 else "-", label=lab)
            ax.set_xlabel(f"{'plate' if ch == 'vertical' else 'right-abutment horizontal'} displacement [mm]")
            ax.set_ylabel("force [kN]")
            ax.set_title(f"Table {TABLES[(geom, k)]}: {geom}, {OBJECTIVE_NAMES[k]}, model at 10 mm/s", fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        for m, s in zip(best, sims[1:], strict=True):
            modes[(geom, k, m)] = compact_mode(s.mode_end) if hasattr(s, "mode_end") else str(s)
    fig.tight_layout()
    save_png(fig, path, dpi=100)
    plt.close(fig)
    return modes


def plot_params(runs: list[RunData], path: Path) -> None:
    """Kibriya et al. (2023) Figs. 14, 17, 20, 23: the best set of every finished run."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    markers = {("pulatsu", 1): "o", ("pulatsu", 2): "s", ("surface", 1): "^", ("surface", 2): "D"}
    for x in runs:
        if not x.complete:
            continue
        p = x.best_params
        kw = {"color": COLORS[x.method], "marker": markers[(x.geom, x.k)], "ms": 6, "alpha": 0.8, "ls": "none"}
        axes[0].plot(p["kn"] / 1e9, p["phi"], **kw)
        axes[1].plot(p["kn"] / 1e9, p["ks"] / 1e9, **kw)
    for ax in axes:
        ax.plot(PULATSU["kn"] / 1e9, PULATSU["phi"] if ax is axes[0] else PULATSU["ks"] / 1e9, "k*", ms=14)
        ax.set_xlabel("kn [GPa/m]")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("phi [deg]")
    axes[1].set_ylabel("ks [GPa/m]")
    from matplotlib.lines import Line2D

    h = [
        Line2D([], [], color=c, marker="o", ls="none", label=f"{METHODS[m][0]} {METHODS[m][1]}")
        for m, c in COLORS.items()
        if any(x.method == m for x in runs)
    ]
    h += [Line2D([], [], color="0.3", marker=mk, ls="none", label=f"{g}, obj. {k}") for (g, k), mk in markers.items()]
    h += [Line2D([], [], color="k", marker="*", ls="none", ms=12, label="reference parameters")]
    axes[1].legend(handles=h, fontsize=7, ncol=2)
    fig.suptitle(
        "best set of each finished run (model at 10 mm/s) against the reference parameters",
        fontsize=9,
    )
    fig.tight_layout()
    save_png(fig, path, dpi=100)
    plt.close(fig)


def plot_smoothing(path: Path) -> None:
    """Kibriya et al. (2023) Fig. 9: the neural smoother on the reference and on a 10 mm/s simulation (Pulatsu's parameters,
    surface-meshed geometry), with the default 1000 Adam steps and with 3000 (beginning to follow the noise)."""
    from mechcalib.objectives.smoothing import NeuralSmoother

    plt = _plt()
    ref = reference_experiment()
    (sim,) = _simulate("surface", [PULATSU], VELOCITY)
    fig, axes = plt.subplots(2, 2, figsize=(12, 7.5))
    for row, (label, resp) in enumerate(
        (("reference (0.5 mm/s)", ref.channels), ("surface-meshed model, Pulatsu's parameters, 10 mm/s", sim.response))
    ):
        for steps, color in ((1000, "tab:red"), (3000, "tab:blue")):
            sm = NeuralSmoother(steps=steps).smooth_many([resp["vertical"], resp["horizontal"]])
            for col, c in enumerate(sm):
                axes[row, col].plot(c.x, c.y, color=color, lw=1.4, label=f"network, {steps} Adam steps")
        for col, ch in enumerate(("vertical", "horizontal")):
            ax = axes[row, col]
            c = resp[ch]
            ax.plot(c.x, c.y, color="0.3", lw=0.7, label="raw", zorder=0)
            ax.set_title(f"{label}: {ch}", fontsize=9)
            ax.set_xlabel(f"{'plate' if ch == 'vertical' else 'right-abutment horizontal'} displacement [mm]")
            ax.set_ylabel("force [kN]")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, path, dpi=100)
    plt.close(fig)


def fig26(runs: list[RunData], path: Path) -> list[list[str]]:
    """Kibriya et al. (2023) Fig. 26: the best calibrated set of each geometry (objective 2 where finished runs exist,
    else objective 1) simulated at 0.5 mm/s, with Pulatsu's parameters, against the reference."""
    plt = _plt()
    ref05 = reference_experiment(velocity=0.5, mass_scale=1.0)
    obj1 = OverlapRSS()
    rows = []
    geoms = [g for g in GEOMETRIES if any(x.geom == g and x.complete for x in runs)]
    if not geoms:
        return rows
    fig, axes = plt.subplots(len(geoms), 2, figsize=(12, 3.8 * len(geoms)), squeeze=False)
    for i, geom in enumerate(geoms):
        for k in (2, 1):
            sel = [x for x in runs if x.geom == geom and x.k == k and x.complete]
            if sel:
                break
        b = min(sel, key=lambda x: x.best)
        sets = {"Pulatsu's parameters": PULATSU, f"calibrated ({b.name}, obj. {k})": b.best_params}
        for v in (0.5, VELOCITY):
            sims = _simulate(geom, list(sets.values()), v)
            for (lab, p), s in zip(sets.items(), sims, strict=True):
                rows.append(
                    [
                        geom,
                        lab,
                        f"{p['kn'] / 1e9:.2f}",
                        f"{p['ks'] / 1e9:.2f}",
                        f"{p['phi']:.2f}",
                        f"{v:g}",
                        f"{s.peak_force:.2f}",
                        f"{np.interp(12.0, s.response['vertical'].x, s.response['vertical'].y):.2f}",
                        f"{obj1(s.response, ref05):.1f}",
                        compact_mode(s.mode_end),
                    ]
                )
                if v == 0.5:
                    for col, ch in enumerate(("vertical", "horizontal")):
                        c = s.response[ch]
                        axes[i, col].plot(
                            c.x, c.y, lw=1.0, ls="--" if lab.startswith("Pulatsu") else "-", label=f"{lab}, 0.5 mm/s"
                        )
        for col, ch in enumerate(("vertical", "horizontal")):
            ax = axes[i, col]
            c = ref05[ch]
            ax.plot(c.x, c.y, "k", lw=2.0, alpha=0.6, label="reference")
            ax.set_xlabel(f"{'plate' if ch == 'vertical' else 'right-abutment horizontal'} displacement [mm]")
            ax.set_ylabel("force [kN]")
            ax.set_title(f"{GEOMETRIES[geom][0]}, simulated at 0.5 mm/s", fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, path, dpi=100)
    plt.close(fig)
    return rows


def projection(runs: list[RunData]) -> tuple[str, float]:
    """Evaluations left in the full study (10 runs per configuration) and their time. Rate: the measured
    seconds per stored evaluation of the configuration; where the method has no measured run in the table,
    the table's seconds per simulation times the method's share of simulated (not cached) evaluations in the
    other tables (the GA's offspring repeat stored points most of the time)."""
    rows, total = [], 0.0
    timed = [x for x in runs if x.seconds > 0 and x.n_live > 0]
    for (geom, k), t in sorted(TABLES.items(), key=lambda kv: kv[1]):
        tab = [x for x in timed if x.geom == geom and x.k == k]
        for m in study_methods(runs):
            sel = [x for x in tab if x.method == m]
            if sel:
                spe, src = sum(x.seconds for x in sel) / sum(x.n_evals for x in sel), "measured"
            elif tab:
                per_sim = sum(x.seconds for x in tab) / sum(x.n_live for x in tab)
                other = [x for x in timed if x.method == m]
                share = sum(x.n_live for x in other) / sum(x.n_evals for x in other) if other else 1.0
                spe, src = per_sim * share, f"{per_sim:.2f} s / simulation x {share:.0%} simulated"
            else:
                spe, src = float("nan"), ""
            left = 0
            for r in range(1, 11):
                done = [x for x in runs if x.geom == geom and x.k == k and x.method == m and x.r == r]
                left += EVALS[m] - (min(done[0].n_evals, EVALS[m]) if done else 0)
            hours = left * spe / 3600
            total += hours if math.isfinite(hours) else 0.0
            rows.append(
                [
                    str(t),
                    geom,
                    str(k),
                    f"{METHODS[m][0]} {METHODS[m][1]}",
                    str(left),
                    f"{spe:.3f} ({src})" if math.isfinite(spe) else "not measured yet",
                    f"{hours:.2f}" if math.isfinite(hours) else "-",
                ]
            )
    return _fmt_table(
        rows, ["Table", "geometry", "objective", "method", "evaluations left", "s / evaluation", "hours"]
    ), total


def full_study(runs: list[RunData]) -> int:
    """Runs of the full study the stored runs belong to: :data:`N_RUNS` per table and method, the methods of
    :data:`RUN_METHODS`, or of :data:`OLD_METHODS` for a store made before the GA's equal budget."""
    methods = set(study_methods(runs))
    return len(TABLES) * N_RUNS * len(methods | {x.method for x in runs})


CLAIM_HEADING = "## The claim: TBPSO in 20 iterations reaches what PSO and GA reach in 50"


def cmd_claims(args: argparse.Namespace) -> int:
    """Rewrite only the claims table (and the run count) of an existing report from the stored summary: no
    simulation, so a model change since the runs leaves the rest of the report as it was."""
    import re

    runs, _ = read_summary(args.store.with_suffix(".summary.json"))
    text = args.out.read_text()
    head, rest = text.split(CLAIM_HEADING, 1)
    cut = [i for i in (rest.find("![convergence]"), rest.find("(figure not generated")) if i >= 0]
    tail = rest[min(cut) :]
    head = re.sub(
        r"finished runs of the \d+ of the full study",
        f"finished runs of the {full_study(runs)} of the full study",
        head,
    )
    note = (
        "**Model.** The stored runs were made with real masses (`mass_scale` 1), before the default inertia "
        "scaling that makes the 10 mm/s model quasi-static (docs/masonry.md section 4, `arch.rate.md`); the rerun "
        "with the corrected model goes to its own store (benchmarks/README.md)."
    )
    if "**Model.**" not in head:
        first, _, others = head.partition("\n\n")
        head = first + "\n\n" + note + "\n\n" + others
    args.out.write_text(head + CLAIM_HEADING + "\n\n" + claim_table(runs) + "\n\n" + tail)
    sys.stdout.write(f"rewrote the claims table of {args.out}\n")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    summary_path = args.store.with_suffix(".summary.json")
    store_flag = "" if args.store.resolve() == STORE.resolve() else f" --store benchmarks/results/{args.store.name}"
    run_cmd = f"`python benchmarks/arch_calibration.py run --runs 10{store_flag}`"
    if args.store.exists():
        before, loads = read_summary(summary_path) if summary_path.exists() else ([], [])
        with RunStore(args.store, readonly=True) as store:
            runs = load_runs(store, {r.name: r for r in before})
        log_path = args.store.with_suffix(".runs.jsonl")  # the raw run log, not committed: else the summary's
        if log_path.exists():
            log = [json.loads(ln) for ln in log_path.read_text().splitlines()]
            loads = [x["loadavg_end"][0] for x in log] + [x["loadavg_start"][0] for x in log]
        runs.sort(key=lambda x: x.name)
        write_summary(runs, loads, summary_path)
        source = f"the run store `{args.store.name}`"
        again = f"Resume or extend the study with {run_cmd} (finished runs are skipped, interrupted ones resume)."
    elif summary_path.exists():
        runs, loads = read_summary(summary_path)
        source = f"`{summary_path.name}`, the summary of its run store `{args.store.name}`"
        again = (
            f"The store is not in the repository: {run_cmd} computes the study afresh (benchmarks/README.md gives "
            "the cost)."
        )
    else:
        raise SystemExit(
            f"report: neither the run store {args.store} nor its summary {summary_path} exists; "
            "run `python benchmarks/arch_calibration.py run` first"
        )
    runs.sort(key=lambda x: x.name)
    fin = [x for x in runs if x.complete]
    out = args.out
    figures = not getattr(args, "no_figures", False)
    modes: dict = {}
    f26: list[list[str]] = []
    if figures:
        plot_convergence(runs, out.with_suffix(".convergence.png"))
        modes = plot_fits(runs, out.with_suffix(".fits.png"))
        plot_params(runs, out.with_suffix(".params.png"))
        f26 = fig26(runs, out.with_suffix(".fig26.png"))
        plot_smoothing(out.with_suffix(".smoothing.png"))

    def img(name: str) -> str:
        stem = out.with_suffix("").name
        if not figures:
            return "(figure not generated: `report --no-figures`)"
        return f"![{name}]({stem}.{name}.png)"

    old = any(x.method == "ga50" for x in runs)
    scale = model_for("pulatsu").default_conditions["mass_scale"]
    proj, hours = projection(runs)
    intro = (
        f"Generated by `python benchmarks/arch_calibration.py report` from {source} "
        f"({len(fin)} finished runs of the {full_study(runs)} of the full study, "
        f"{sum(x.n_evals for x in runs)} evaluations stored). {again}"
    )
    setup = (
        "**Set-up.** The model (`masonry_arch`, 2D rigid-block DEM) at 10 mm/s to 12 mm is fitted to the shipped "
        "synthetic reference (`mechcalib/data/arch_reference.csv`: Pulatsu's geometry and parameters kn = 4 GPa/m, "
        "ks = 1.6 GPa/m, phi = 30.5 deg at 0.5 mm/s; simulated, not measured). kn, ks in [1e8, 1e10] Pa/m (log "
        "scale), phi in [25, 45] deg, initial points uniform in the unit cube. Swarm / population 10. PSO: "
        "`PSO.kibriya2023` (inertia 0.8 -> 0.4, c1 = c2 = 2), 50 or 20 iterations = 510 or 210 evaluations; TBPSO: "
        "`TBPSO.kibriya2023` (phi = 1, 1, 2), 20 iterations = 210 evaluations"
        + (
            "; GA: `GA.kibriya2023`, 50 generations = 10 + 50 x 6 = 310 evaluations (the `geneticalgorithm` library "
            "keeps the 4 parents' losses and evaluates 6 offspring per generation). Real masses (`mass_scale` 1). "
            if old
            else ', in three readings: eq. 13 as printed ("away", unbounded trust), "toward" (unbounded), '
            '"toward" with the trust capped at 1; GA: `GA.kibriya2023` with a population of 14, whose 0.3 parents '
            "portion keeps 4 parents and evaluates 10 offspring per generation: 14 + 50 x 10 = 514 evaluations, "
            f"PSO 50's budget. Model inertia scaling `mass_scale` {scale:g} (docs/masonry.md section 4.1). "
        )
        + "Run r of each method uses seed r, so PSO and TBPSO runs of one id start "
        "from the same swarm. Objective 1: eqs. 16-20 on the raw curves (`OverlapRSS`); objective 2: the same on "
        "curves smoothed by the neural network of section 3.4.2 (`mechcalib.objectives.smoothing.SmoothedOverlapRSS`, 1000 "
        "Adam steps per curve, float32; the networks of all curves of a batch of 10 (6 for the GA) simulations "
        "are trained in one stacked fit, which gives each curve what training it alone gives). Fitness is in kN (root of a sum of squares over 200 points, two channels). The "
        "store's cache answers a point already evaluated under the same table from the stored result."
    )
    target = (
        "The reference parameters are known here but are not the optimum: the model at 10 mm/s is stiffer and "
        "stronger than at 0.5 mm/s (docs/masonry.md section 4), so the best fit lies at lower kn, as in Kibriya et al. (2023)."
        if old
        else "The reference parameters are known here; with the inertia scaling the 10 mm/s model is quasi-static "
        "and they score about 1 (not 0: the reference is the real-mass 0.5 mm/s run)."
    )
    summary = (
        "Best fitness of each finished run; for the 50-iteration methods also the median best after 20 "
        "iterations of the same runs. Simulated share: evaluations that ran the model; the rest proposed a "
        "point already evaluated in the same table (same seed's initial swarm, a particle clipped to a corner, "
        "a GA offspring identical to a parent) and were answered from the store. Seconds per simulation: "
        "simulation (batched, numba threads) and objective, measured on the shared machine (wall clock, so they "
        "grow with the machine's load)."
    )
    f26_text = (
        "The best calibrated set of each geometry (objective 2 where it has finished runs, else objective 1) "
        "and Pulatsu's parameters, simulated at 0.5 mm/s and at 10 mm/s, scored with objective 1 against the "
        "reference (itself at 0.5 mm/s; for Pulatsu's geometry and parameters at 0.5 mm/s the curve is the "
        "reference)."
    )
    parts = [
        "# Masonry arch: calibration of kn, ks, phi with PSO, GA and TBPSO (Kibriya et al. (2023) Tables 1-4)",
        "",
        intro,
        "",
        setup,
        "",
        target,
        "",
    ]
    for (geom, k), t in sorted(TABLES.items(), key=lambda kv: kv[1]):
        parts += [
            f"## Table {t}. Five best solution sets, {OBJECTIVE_NAMES[k]}, {GEOMETRIES[geom][0]}",
            "",
            paper_table(runs, geom, k),
            "",
        ]
        m = [f"{METHODS[mm][0]} {METHODS[mm][1]}: {modes[(geom, k, mm)]}" for mm in METHODS if (geom, k, mm) in modes]
        if m:
            parts += (
                [
                    (
                        "Failure mode at 12 mm of each method's best set at 10 mm/s (H: rotational hinge, S: sliding "
                        "joint; the reference shows 3 H + 1 S):"
                    ),
                    "",
                ]
                + [f"- {x}" for x in m]
                + [""]
            )
    parts += [
        "## Summary per configuration",
        "",
        summary,
        "",
        summary_table(runs),
        "",
        CLAIM_HEADING,
        "",
        claim_table(runs),
        "",
        img("convergence"),
        "",
        "## Fits against the reference (Figs. 15, 18, 21, 24)",
        "",
        img("fits"),
        "",
        "## Objective 2's smoother (Fig. 9)",
        "",
        img("smoothing"),
        "",
        "## Calibrated parameter sets (Figs. 14, 17, 20, 23)",
        "",
        img("params"),
        "",
        "## Fig. 26: calibrated parameters at 0.5 mm/s",
        "",
        f26_text,
        "",
        _fmt_table(
            f26,
            [
                "geometry",
                "set",
                "kn",
                "ks",
                "phi",
                "velocity [mm/s]",
                "peak [kN]",
                "F(12 mm) [kN]",
                "objective 1 vs reference",
                "failure mode at 12 mm",
            ],
        ),
        "",
        img("fig26"),
        "",
        "## Cost and what is left",
        "",
        proj,
        "",
        (f"Projected time of the rest of the full study at these rates: {hours:.1f} h on this machine (one process)."),
        "",
        (
            f"The finished runs took {sum(x.seconds for x in fin) / 3600:.1f} h of evaluation time (the sum of their "
            f"`seconds`); {sum(x.n_live for x in fin)} of their {sum(x.n_evals for x in fin)} evaluations ran the "
            "model, the rest were answered from the store's cache."
        ),
        "",
    ]
    if loads:
        parts += [
            (
                f"Load average (1 min) of the 2-core machine at the start and end of the runs: "
                f"{min(loads):.1f} to {max(loads):.1f} (median {np.median(loads):.1f}); the timings are of a "
                "shared machine."
            ),
            "",
        ]
    out.write_text("\n".join(parts))
    sys.stdout.write(f"wrote {out}" + (" and its PNGs\n" if figures else "\n"))
    return 0


def cmd_speed(args: argparse.Namespace) -> int:
    """CPU seconds per simulation of the calibration case (10 random sets, one batched call): the DEM,
    objective 1, and objective 2 with the networks of the batch stacked (float32, float64), two at a time
    (one simulation's channels), and one simulation at a time with the reference trainer (float64, the
    previous implementation). Writes ``arch.speed.md``."""
    import mechcalib.objectives.smoothing as sm

    rng = np.random.default_rng(args.seed)
    geom, n = "surface", 10
    prob = problem_for(geom, 1)
    X = prob.space.from_unit(rng.random((n, 3)))
    exp = reference_experiment(velocity=VELOCITY)
    model_for(geom).simulate(X[:1], exp.conditions)  # compile and warm the caches
    rows = []

    def cpu(fn) -> float:
        t0 = time.process_time()
        fn()
        return (time.process_time() - t0) / n

    sims: list = []
    rows.append(
        (
            "DEM (batched call, numba threads as set)",
            cpu(lambda: sims.extend(model_for(geom).simulate(X, exp.conditions))),
        )
    )
    o1 = OverlapRSS()
    rows.append(("objective 1", cpu(lambda: [o1(s, exp) for s in sims])))
    for dtype in ("float32", "float64"):
        o2 = SmoothedOverlapRSS(smooth_dtype=dtype)
        o2.values_many(sims[:1], exp)  # the experiment's smoothing is cached once per calibration
        rows.append(
            (
                f"objective 2, {dtype}, the batch's {2 * n} networks stacked",
                cpu(lambda o2=o2: o2.values_many(sims, exp)),
            )
        )
        rows.append(
            (
                f"objective 2, {dtype}, one simulation (2 networks) at a time",
                cpu(lambda o2=o2: [o2(s, exp) for s in sims]),
            )
        )
    fit = sm.fit_numpy
    try:  # the previous implementation: the reference trainer, one simulation at a time
        sm.fit_numpy = lambda s, Y, mask, th0, sizes, steps, lr, dtype="float64", **kw: sm.fit_reference(
            s, Y, mask, th0, sizes, steps, lr
        )
        o2 = SmoothedOverlapRSS(smooth_dtype="float64")
        o2.values_many(sims[:1], exp)
        rows.append(
            (
                "objective 2, float64, reference trainer, one simulation at a time (previous)",
                cpu(lambda: [o2(s, exp) for s in sims]),
            )
        )
    finally:
        sm.fit_numpy = fit
    load = os.getloadavg()[0]
    head = (
        f"`python benchmarks/arch_calibration.py speed` ({geom} geometry, {n} random sets, "
        f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'unset')}, load average {load:.1f} on "
        f"{os.cpu_count()} cores at the end; CPU time, which a loaded machine still inflates)."
    )
    text = "\n".join(
        [
            "# Masonry arch: CPU seconds per simulation of the calibration case",
            "",
            head,
            "",
            _fmt_table([[k, f"{v:.3f}"] for k, v in rows], ["part", "CPU s / simulation"]),
            "",
        ]
    )
    args.out.write_text(text)
    sys.stdout.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run or resume calibrations")
    r.add_argument("--objectives", type=lambda s: [int(v) for v in s.split(",")], default=[1, 2])
    r.add_argument("--geometries", type=lambda s: s.split(","), default=list(GEOMETRIES))
    r.add_argument("--methods", type=lambda s: s.split(","), default=list(RUN_METHODS))
    r.add_argument("--runs", type=int, default=10, help="runs (seeds 1..N) per configuration")
    r.add_argument("--hours", type=float, default=0.0, help="start no new run after this many hours (0: no limit)")
    r.add_argument("--store", type=Path, default=STORE)
    p = sub.add_parser("report", help="write arch.md and the PNGs from the store")
    p.add_argument("--store", type=Path, default=STORE)
    p.add_argument("--out", type=Path, default=REPORT)
    p.add_argument("--no-figures", action="store_true", help="tables only: no plots and no Fig. 26 simulations")
    c = sub.add_parser("claims", help="rewrite only the claims table of the report from the stored summary")
    c.add_argument("--store", type=Path, default=STORE)
    c.add_argument("--out", type=Path, default=REPORT)
    s = sub.add_parser("speed", help="CPU seconds per simulation: DEM, objective 1, objective 2 (arch.speed.md)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", type=Path, default=RESULTS / "arch.speed.md")
    args = ap.parse_args(argv)
    if args.cmd == "speed":
        return cmd_speed(args)
    if args.cmd == "claims":
        return cmd_claims(args)
    if args.cmd == "run":
        bad = [g for g in args.geometries if g not in GEOMETRIES] + [m for m in args.methods if m not in METHODS]
        bad += [str(k) for k in args.objectives if k not in (1, 2)]
        if bad:
            ap.error(f"unknown geometry, method or objective: {bad}; valid: {list(GEOMETRIES)}, {list(METHODS)}, 1, 2")
        return cmd_run(args)
    return cmd_report(args)


if __name__ == "__main__":
    sys.exit(main())
