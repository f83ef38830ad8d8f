"""Hysteretic parameter identification with I-ABC: Ding et al.'s (2021) Tables 1-5 and 7, convergence plots in the
manner of its Figs. 17 and 20, peers (PSO, TBPSO, CMA-ES), and the speed of the forward model against
OpenSees (on demand, not part of the test suite).

Cases
    SDOF (Tables 1-5): ``boucwen``, ``bilinear_kinematic``, ``bilinear_equal``, ``degradation``,
    ``pinching`` (the paper's SDOF, models ``sdof_<name>``), each at 0, 5 and 10 % noise (eq. 36) on the
    acceleration, the only measured channel. Frame (Table 6): ``M1`` restoring forces and hysteretic
    displacements of both components, 0 %; ``M2``/``M3``/``M4`` the horizontal accelerations of nodes 5, 7,
    13 and 19 at 0/5/10 %. Table 7's rows M5 (ABC), M6 (BMO) and M7 (TSA) are the ``M4`` data with those
    algorithms.
Objective
    eq. 27, ``mechcalib.L2`` (sum of squared differences over the measured samples and channels). M1 mixes
    forces [N] and displacements [m]: each of its channels is weighted by ``1 / mean(y_measured^2)`` so
    that both count (unweighted, the displacements would contribute ~1e-10 of the loss). The accelerations
    share a unit and keep weight 1.
Algorithms (every one gets 25 000 evaluations, the paper's 50 bees x 500 cycles)
    ``iabc`` ``IABC.ding2021`` (group 50, F = 0.5, CR = 0.4, tournament onlookers, eq. 29 as printed:
    one random number scales ``a_i - a_k``);
    ``abc`` ``ABC.ding2021`` (Karaboga's colony with eq. 29 as printed; run for the pinching model at 5 %
    in place of the paper's I-ABC1 and I-ABC2, whose update rules are not available, and for Table 7's M5);
    ``iabc-1coord``, ``abc-1coord`` the same with Karaboga's one-coordinate step (``local_step="one"``), the
    study's first pass, kept as an ablation (not in ``--algorithms all``; name them to run more);
    ``ltsa`` the tree-seed algorithm with Lévy-flight steps (``LevyTSA``: Kiran's settings, beta = 1.5; Table 7's
    M7, whose reference, Ding et al. (2019), is a Lévy variant whose exact rules could not be obtained);
    ``tsa`` Kiran's (2015) tree-seed algorithm, 10 trees (kept beside M7 for comparison);
    ``bmo`` the bird mating optimiser (``BMO``, Askarzadeh 2014: 50 birds, shares 5/5/50/30/10 %, w 2.5 to
    0.25 over the budget, mcf = mcfp = 0.9, mu = 0.01; Table 7's M6);
    ``pso`` PSO with Kibriya et al.'s (2023) weights, 50 particles, inertia schedule over the budget;
    ``tbpso`` TBPSO likewise, trust capped at 1; ``cma`` CMA-ES (``cma`` package, the ``peers`` extra) in
    the unit cube, sigma0 = 0.3, default population, IPOP restarts.
    The search bounds are each model's defaults (0.5x-2x the true values, docs/hysteresis.md) for all.
Noise
    seed ``s`` of a run also seeds its noise realisation, so the spread over seeds includes the spread over
    noise draws; all algorithms with the same seed see the same data.
Run store
    every run goes through ``mechcalib.calibrate(store=RunStore(...), run_name="<case>/<algorithm>/s<seed>")``
    with checkpoints every 25 batches; a run that is finished is skipped, any other one resumes where it
    stopped (stored evaluations are replayed, not simulated again). Responses are not kept. A run that
    finishes is compacted (``RunStore.compact_run``: its improvements and failures stay, the totals, the
    best-so-far trace and the timing are exact). The finished study's store (25 MiB) is not in the repository:
    each report written from a store also writes ``hysteresis.summary.json.gz`` (per run the totals, the best
    point, the timing and the best-so-far curve's steps), and the report, the plots and ``--identifiability``
    read that summary when the store is absent, with the same tables and figures (benchmarks/README.md gives
    the cost of recomputing the store). With both present, a run of the store replaces the summary's run of the
    same name and the others are kept; delete the summary to start a study from nothing.

    python benchmarks/hysteresis_iabc.py                          # all cases, 5 seeds (peers: 1), then report
    python benchmarks/hysteresis_iabc.py --models boucwen --noise 0 --seeds 1-3 --workers 2
    python benchmarks/hysteresis_iabc.py --models frame --scenarios M4 --algorithms bmo,ltsa --seeds 1-5
    python benchmarks/hysteresis_iabc.py --max-minutes 55         # stop (resumably) after 55 minutes
    python benchmarks/hysteresis_iabc.py --report-only            # regenerate the markdown and plots
    python benchmarks/hysteresis_iabc.py --figures                # Figs. 7-16 and 19 analogues (loops, responses)
    python benchmarks/hysteresis_iabc.py --speed                  # simulation cost vs OpenSees, timed I-ABC
    python benchmarks/hysteresis_iabc.py --identifiability        # flat directions of the noise-free objectives
    python benchmarks/hysteresis_iabc.py --compact                # compact finished runs, VACUUM (no writer)

Outputs (beside the store, named after it): ``benchmarks/results/hysteresis.md`` (tables, from the store or its
summary), ``hysteresis.sqlite`` (the store), ``hysteresis.summary.json.gz`` (the summary),
``hysteresis.fig17.png``, ``hysteresis.fig20.png``, ``hysteresis.sdof.png`` (convergence),
``hysteresis.fig7_16.<law>.png``, ``hysteresis.fig19.png`` (``--figures``: loops and responses),
``hysteresis.speed.json`` (the speed figures the report quotes) and ``hysteresis.identifiability.json``
(``--identifiability``: the Gauss-Newton analysis of the noise-free SDOF objectives).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

import mechcalib as mc
from mechcalib.core.problem import experiment_from_model
from mechcalib.execution import SerialEvaluator
from mechcalib.models import get_model
from mechcalib.optimizers import ABC, BMO, IABC, PSO, TBPSO, TSA, LevyTSA
from mechcalib.optimizers._base import (
    Optimizer,
    SeedLike,
    check_positive_int,
    check_range,
)
from mechcalib.reporting import save_png
from mechcalib.storage import RunStore

RESULTS = Path(__file__).resolve().parent / "results"
STORE = RESULTS / "hysteresis.sqlite"
BUDGET = 25_000  # Ding et al. (2021): group size 50 x 500 cycles
CHECKPOINT_EVERY = 25
GROUP = 50  # evaluations per "cycle" on the plots' abscissa (one I-ABC cycle: 25 employed + 25 onlookers)

SDOF = ("boucwen", "bilinear_kinematic", "bilinear_equal", "degradation", "pinching")
NOISES = (0, 5, 10)
FRAME_CASES = {  # data case -> (channels, noise %)
    "M1": (("restoring_force_1", "hysteretic_displacement_1", "restoring_force_2", "hysteretic_displacement_2"), 0),
    "M2": (("acceleration_node5", "acceleration_node7", "acceleration_node13", "acceleration_node19"), 0),
    "M3": (("acceleration_node5", "acceleration_node7", "acceleration_node13", "acceleration_node19"), 5),
    "M4": (("acceleration_node5", "acceleration_node7", "acceleration_node13", "acceleration_node19"), 10),
}
TABLE7_ROWS = {  # row -> (data case, algorithm) of our rows, the paper's algorithm first
    "M1": (("M1", "iabc"),),
    "M2": (("M2", "iabc"),),
    "M3": (("M3", "iabc"),),
    "M4": (("M4", "iabc"),),
    "M5": (("M4", "abc"),),
    "M6": (("M4", "bmo"),),
    "M7": (("M4", "ltsa"), ("M4", "tsa")),
}
TABLE7_M4 = ("M4", "M5", "M6", "M7")  # the rows that share the M4 data (10 % noise), Fig. 20
PAPER_ALGS = ("iabc", "abc", "tsa", "ltsa", "bmo")
PEERS = ("pso", "tbpso", "cma")
ALGORITHMS = PAPER_ALGS + PEERS
# Ablation of eq. 29's reading: Karaboga's one-coordinate step in place of the printed vector step (the
# study's first pass; its runs are kept under these names and compared in the report).
ONE_COORD = {"iabc-1coord": "iabc", "abc-1coord": "abc"}
LABEL = {
    "iabc": "I-ABC",
    "abc": "ABC",
    "tsa": "TSA (Kiran)",
    "ltsa": "Lévy TSA",
    "bmo": "BMO",
    "pso": "PSO",
    "tbpso": "TBPSO",
    "cma": "CMA-ES",
    "iabc-1coord": "I-ABC, one-coordinate eq. 29",
    "abc-1coord": "ABC, one-coordinate eq. 29",
}

# -- the paper's numbers (Ding et al. (2021) Tables 1-5 and 7) ---------------------------------------------------
TRUE = {
    "boucwen": [2, 1, 0.5, 2],
    "bilinear_kinematic": [1, 2, 1],
    "bilinear_equal": [3, 1, 1],
    "degradation": [2, 1, 2, 0.02, 0.02, 0.02],
    "pinching": [10, 5, 5, 2, 2, 2],
    "frame": [0.75, 0.5, 0.2, 0.75, 0.5, 0.4],
}
PAPER = {  # (model, noise %, algorithm) -> (identified, error %)
    ("boucwen", 0, "iabc"): ([2.0000, 0.9983, 0.5075, 1.9819], [0.00, 0.83, 1.44, 0.91]),
    ("boucwen", 5, "iabc"): ([2.0274, 0.943, 0.524, 2.0613], [1.37, 4.66, 4.80, 3.07]),
    ("boucwen", 10, "iabc"): ([1.9736, 1.025, 0.4211, 2.3019], [1.32, 2.50, 15.78, 15.10]),
    ("bilinear_kinematic", 0, "iabc"): ([1.0005, 2.0000, 0.9999], [0.01, 0.00, 0.01]),
    ("bilinear_kinematic", 5, "iabc"): ([0.9917, 1.9953, 0.9997], [0.83, 0.24, 0.03]),
    ("bilinear_kinematic", 10, "iabc"): ([1.0293, 1.9710, 1.0161], [2.93, 1.45, 1.61]),
    ("bilinear_equal", 0, "iabc"): ([3.0000, 0.9999, 1.0024], [0.00, 0.00, 0.24]),
    ("bilinear_equal", 5, "iabc"): ([2.9987, 1.0001, 1.0089], [0.04, 0.01, 0.89]),
    ("bilinear_equal", 10, "iabc"): ([3.0055, 1.0103, 0.9975], [0.18, 1.03, 0.25]),
    ("degradation", 0, "iabc"): ([1.9810, 1.0005, 1.9888, 0.0199, 0.0201, 0.0201], [0.95, 0.05, 0.56, 0.5, 0.93, 0.45]),
    ("degradation", 5, "iabc"): (
        [2.1500, 1.0270, 2.0630, 0.0197, 0.0178, 0.0192],
        [7.50, 2.70, 3.15, 1.50, 10.9, 3.80],
    ),
    ("degradation", 10, "iabc"): (
        [2.1220, 1.1940, 2.1010, 0.0217, 0.0175, 0.0175],
        [6.10, 19.40, 5.05, 8.43, 12.68, 12.68],
    ),
    ("pinching", 0, "iabc"): ([9.8510, 4.9310, 5.1360, 1.9170, 1.9818, 1.9898], [1.49, 1.38, 2.72, 4.15, 0.91, 0.51]),
    ("pinching", 5, "iabc"): ([9.5765, 5.2510, 5.1625, 2.0580, 1.8190, 2.2340], [4.24, 5.02, 3.25, 2.90, 9.05, 11.70]),
    ("pinching", 5, "I-ABC1"): (
        [9.2382, 6.1571, 4.6516, 2.1159, 1.6115, 2.2201],
        [7.62, 23.14, 6.97, 5.80, 19.42, 11.01],
    ),
    ("pinching", 5, "I-ABC2"): (
        [9.0782, 6.2598, 4.4661, 1.8969, 1.8570, 2.2741],
        [9.22, 25.20, 10.68, 5.16, 7.15, 13.71],
    ),
    ("pinching", 10, "iabc"): (
        [9.2770, 6.0515, 4.7555, 2.1432, 1.7344, 2.2432],
        [7.23, 21.03, 4.89, 7.16, 13.28, 12.16],
    ),
}
PAPER_T7 = {
    "M1": ([0.7512, 0.5004, 0.2, 0.7538, 0.4070, 0.4149], [0.12, 0.08, 0.00, 0.51, 0.6, 3.73]),
    "M2": ([0.7524, 0.5114, 0.2003, 0.7377, 0.5014, 0.3903], [0.32, 2.28, 0.15, 1.64, 0.28, 2.43]),
    "M3": ([0.7738, 0.4974, 0.1924, 0.7411, 0.5249, 0.3887], [3.17, 0.52, 3.80, 1.19, 4.98, 2.83]),
    "M4": ([0.7556, 0.5048, 0.2082, 0.7300, 0.5173, 0.3739], [0.75, 0.97, 4.12, 2.67, 3.46, 6.52]),
    "M5": ([0.8223, 0.5337, 0.1737, 0.8179, 0.4569, 0.4785], [9.64, 6.74, 13.15, 9.05, 8.62, 19.63]),
    "M6": ([0.8059, 0.4716, 0.1909, 0.7301, 0.5641, 0.3510], [7.45, 5.68, 4.55, 2.65, 12.82, 12.25]),
    "M7": ([0.7347, 0.4821, 0.1844, 0.7228, 0.4881, 0.4509], [2.04, 3.58, 7.8, 3.63, 2.38, 9.82]),
}
TABLE_NO = {"boucwen": 1, "bilinear_kinematic": 2, "bilinear_equal": 3, "degradation": 4, "pinching": 5}
TITLE = {
    "boucwen": "Bouc-Wen",
    "bilinear_kinematic": "bilinear with kinematic hardening",
    "bilinear_equal": "bilinear with equal yielding force",
    "degradation": "hysteresis with degradation",
    "pinching": "hysteresis with pinching",
}


# -- CMA-ES through the ask/tell protocol -------------------------------------------------------------
class _Randn:
    """``randn(lam, N)`` for cma, drawn from a numpy Generator so that a checkpoint restores the stream."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def __call__(self, *shape: int) -> np.ndarray:
        return self.rng.standard_normal(shape)


class CMAES(Optimizer):
    """CMA-ES of the ``cma`` package in the unit cube (its ``BoundTransform`` keeps points inside), with
    IPOP restarts (population doubled, new random mean) whenever cma's own stop rules fire.

    Failed simulations (``+inf``) are told to cma as the batch's worst finite loss times 10 (1e300 when
    none is finite): cma needs finite values. Randomness: ``self.rng`` draws the start points and seeds a
    private Generator for cma's normal samples, so a seed reproduces a run and a checkpoint resumes it.
    """

    name = "cmaes"

    def __init__(
        self,
        *,
        sigma0: float = 0.3,
        popsize: int | None = None,
        tolfun: float = 1e-12,
        tolx: float = 1e-12,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(seed=seed)
        self.sigma0 = check_range(self.name, "sigma0", sigma0, 0.0, 1.0, lo_open=True)
        self.popsize = None if popsize is None else check_positive_int(self.name, "popsize", popsize, minimum=2)
        self.tolfun = check_range(self.name, "tolfun", tolfun, 0.0, math.inf)
        self.tolx = check_range(self.name, "tolx", tolx, 0.0, math.inf)

    def _init_state(self) -> None:
        self._lam = self.popsize or 4 + int(3 * math.log(self.dim))
        self._restarts = 0
        self._randn = _Randn(np.random.default_rng(int(self.rng.integers(2**63))))
        self._es = self._new_es()

    def _new_es(self) -> Any:
        import cma

        opts = {
            "bounds": [0.0, 1.0],
            "popsize": self._lam,
            "verbose": -9,
            "tolfun": self.tolfun,
            "tolx": self.tolx,
            "randn": self._randn,
        }
        return cma.CMAEvolutionStrategy(self.rng.random(self.dim), self.sigma0, opts)

    def _next_batch_size(self) -> int:
        return self._lam

    def _ask(self) -> np.ndarray:
        if self._es.stop():
            self._restarts += 1
            self._lam *= 2
            self._es = self._new_es()
        return np.asarray(self._es.ask())

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        ok = np.isfinite(f)
        worst = 10.0 * float(np.max(np.abs(f[ok]))) if ok.any() else 1e300
        self._es.tell(list(X), np.where(ok, f, worst).tolist())


# -- cases and jobs -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Job:
    case: str  # "boucwen/n05", "frame/M4"
    alg: str
    seed: int

    @property
    def run_name(self) -> str:
        return f"{self.case}/{self.alg}/s{self.seed}"


def case_id(model: str, noise_or_scenario: int | str) -> str:
    if model == "frame":
        return f"frame/{noise_or_scenario}"
    return f"{model}/n{int(noise_or_scenario):02d}"


def parse_case(case: str) -> tuple[str, str | int]:
    model, rest = case.split("/")
    return (model, rest) if model == "frame" else (model, int(rest[1:]))


_PROBLEMS: dict[tuple[str, int], mc.Problem] = {}


def build_problem(case: str, seed: int) -> mc.Problem:
    """The identification problem of a case; ``seed`` seeds the noise realisation (unused at 0 %)."""
    model_key, which = parse_case(case)
    noise = FRAME_CASES[which][1] if model_key == "frame" else which
    key = (case, seed if noise else 0)
    if key in _PROBLEMS:
        return _PROBLEMS[key]
    if model_key == "frame":
        model = get_model("mdof_frame")
        channels = FRAME_CASES[which][0]
    else:
        model = get_model(f"sdof_{model_key}")
        channels = ("acceleration",)
    data = experiment_from_model(model, noise=noise / 100.0, seed=seed if noise else None)
    data = mc.Experiment({c: data[c] for c in channels}, name=case.replace("/", "_"))
    weights = {}
    if model_key == "frame" and which == "M1":
        weights = {c: 1.0 / float(np.mean(data[c].y ** 2)) for c in channels}
    prob = mc.Problem(model, data, mc.L2(weights=weights))
    _PROBLEMS[key] = prob
    return prob


def make_optimizer(alg: str, seed: int, budget: int) -> Optimizer:
    iters = max(1, budget // GROUP - 1)  # PSO/TBPSO: inertia schedule over the whole budget
    if alg == "iabc":
        return IABC.ding2021(seed=seed)
    if alg == "abc":
        return ABC.ding2021(seed=seed)
    if alg == "iabc-1coord":
        return IABC.ding2021(seed=seed, local_step="one")
    if alg == "abc-1coord":
        return ABC.ding2021(seed=seed, local_step="one")
    if alg == "tsa":
        return TSA(seed=seed)
    if alg == "ltsa":
        return LevyTSA(seed=seed)
    if alg == "bmo":
        return BMO(seed=seed)  # 50 birds; calibrate passes the budget for the weight's schedule
    if alg == "pso":
        return PSO.kibriya2023(seed=seed, swarm_size=GROUP, max_iter=iters)
    if alg == "tbpso":
        return TBPSO.kibriya2023(seed=seed, swarm_size=GROUP, max_iter=iters, trust_limit=1.0)
    if alg == "cma":
        return CMAES(seed=seed)
    raise ValueError(f"unknown algorithm {alg!r}; choose from {list(ALGORITHMS) + list(ONE_COORD)}")


def applicable(case: str, alg: str) -> bool:
    """The paper's algorithm set of each case plus the peers everywhere (ablations: as their base)."""
    alg = ONE_COORD.get(alg, alg)
    if alg in ("iabc", *PEERS):
        return True
    if alg == "abc":
        return case in ("pinching/n05", "frame/M4")
    if alg in ("tsa", "ltsa", "bmo"):
        return case == "frame/M4"
    return False


def plan(
    models: Sequence[str],
    noises: Sequence[int],
    scenarios: Sequence[str],
    algs: Sequence[str],
    seeds: Sequence[int],
    peer_seeds: Sequence[int],
    mdof_seeds: Sequence[int],
) -> list[Job]:
    """Jobs in priority order: noise-free SDOF, noisy SDOF, frame, then peers."""
    sdof = [m for m in models if m != "frame"]
    frame = [s for s in scenarios if "frame" in models and FRAME_CASES[s][1] in noises]
    jobs: list[Job] = []

    def add(cases: list[str], algos: Sequence[str], seedlist: Sequence[int]) -> None:
        for s in seedlist:
            for c in cases:
                for a in algos:
                    if a in algs and applicable(c, a):
                        j = Job(c, a, s)
                        if j not in jobs:
                            jobs.append(j)

    paper = PAPER_ALGS + tuple(ONE_COORD)
    add([case_id(m, 0) for m in sdof if 0 in noises], paper, seeds)
    add([case_id(m, n) for n in noises if n for m in sdof], paper, seeds)
    add([case_id("frame", s) for s in frame], paper, mdof_seeds)
    add([case_id(m, n) for n in noises for m in sdof] + [case_id("frame", s) for s in frame], PEERS, peer_seeds)
    return jobs


def is_done(store: RunStore, name: str, budget: int) -> bool:
    """A run that ended by its own rules under this budget (not by the time limit or an interruption)."""
    if not store.has_run(name):
        return False
    info = store.run(name)
    return (
        info.status == "finished"
        and info.stop_reason in ("max_evals", "converged")
        and (info.termination or {}).get("max_evals") == budget
    )


def run_job(job: Job, store_path: str, budget: int, deadline: float | None, threads: int | None) -> dict:
    """One calibration through the run store (resumes a stored run of the same name)."""
    if threads:
        import numba

        numba.set_num_threads(threads)
    problem = build_problem(job.case, job.seed)
    opt = make_optimizer(job.alg, job.seed, budget)
    t0, c0 = time.perf_counter(), time.process_time()

    def stop(_b: int, _opt: Optimizer, _h: mc.History) -> bool:
        return deadline is not None and time.time() > deadline

    with RunStore(store_path, timeout=120.0) as store:
        res = mc.calibrate(
            problem,
            opt,
            max_evals=budget,
            evaluator=SerialEvaluator(),
            store=store,
            run_name=job.run_name,
            checkpoint_every=CHECKPOINT_EVERY,
            callback=stop,
            config={"case": job.case, "algorithm": job.alg, "seed": job.seed, "budget": budget},
            n_alternatives=1,
        )
        if is_done(store, job.run_name, budget):  # not a run stopped by the time limit: it must resume
            store.compact_run(job.run_name)  # improvements and failures only: the report needs no more
    return {
        "run": job.run_name,
        "stop": res.stop_reason,
        "n_evals": res.n_evals,
        "simulated": res.n_simulated,
        "replayed": res.n_replayed,
        "best_loss": res.best_loss,
        "wall": time.perf_counter() - t0,
        "cpu": time.process_time() - c0,
    }


def _init_worker(threads: int) -> None:
    import numba

    numba.set_num_threads(threads)


def execute(jobs: list[Job], store_path: Path, budget: int, workers: int, max_minutes: float | None) -> None:
    deadline = time.time() + 60 * max_minutes if max_minutes else None
    with RunStore(store_path) as store:
        todo = [j for j in jobs if not is_done(store, j.run_name, budget)]
    print(
        f"{len(jobs)} runs selected, {len(jobs) - len(todo)} already finished, {len(todo)} to run "
        f"(load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())})",
        flush=True,
    )
    if not todo:
        return
    if workers <= 1:
        for j in todo:
            if deadline is not None and time.time() > deadline:
                print("time limit reached; rerun the same command to continue", flush=True)
                return
            _report_one(run_job(j, str(store_path), budget, deadline, None))
        return
    import multiprocessing as mp

    with ProcessPoolExecutor(
        workers, mp_context=mp.get_context("spawn"), initializer=_init_worker, initargs=(1,)
    ) as pool:
        pending, queue = set(), list(todo)
        while queue or pending:
            while queue and len(pending) < workers and (deadline is None or time.time() < deadline):
                pending.add(pool.submit(run_job, queue.pop(0), str(store_path), budget, deadline, 1))
            if not pending:
                print("time limit reached; rerun the same command to continue", flush=True)
                break
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                _report_one(f.result())


def _report_one(r: dict) -> None:
    print(
        f"{r['run']:<34} {r['stop']:<9} evals {r['n_evals']:>6} (simulated {r['simulated']:>6}, replayed "
        f"{r['replayed']:>6})  best {r['best_loss']:.4g}  wall {r['wall']:.0f} s  cpu {r['cpu']:.0f} s  "
        f"load {os.getloadavg()[0]:.2f}",
        flush=True,
    )


# -- reading the store back -------------------------------------------------------------------------------
@dataclass
class RunSummary:
    name: str
    case: str
    alg: str
    seed: int
    status: str
    stop_reason: str | None
    n_evals: int
    best_loss: float
    best: np.ndarray  # (dim,) free values in model order
    curve: np.ndarray  # best-so-far loss after each evaluation, (n_evals,)
    seconds: float  # sum of the evaluations' own times
    span: float  # wall time spent computing (RunStore.timing: active_seconds)


def load_runs(store_path: Path) -> dict[str, RunSummary]:
    """Every benchmark run of the summary beside the store (:func:`write_summary`) and of the store, a run in
    both read from the store (through its totals, best-so-far trace and timing, exact for compacted runs too,
    see :meth:`RunStore.compact_run`). So a store that holds only some runs (a partial rerun, ``--speed``'s
    run) extends the summary instead of replacing it; delete the summary to report the store alone."""
    summary = outputs(store_path, SUMMARY_SUFFIX)
    out: dict[str, RunSummary] = read_summary(summary) if summary.exists() else {}
    if not store_path.exists():
        return out
    with RunStore(store_path, readonly=True) as st:
        for info in st.runs():
            parts = info.name.split("/")
            if len(parts) != 4 or not parts[3].startswith("s") or info.n_evals == 0:
                continue
            best = st.best(info.id)
            _, curve = st.trace(info.id)
            t = st.timing(info.id)
            names = info.free_names
            out[info.name] = RunSummary(
                info.name,
                f"{parts[0]}/{parts[1]}",
                parts[2],
                int(parts[3][1:]),
                info.status,
                info.stop_reason,
                info.n_evals,
                best.loss if best is not None else math.inf,
                np.array([best.params[n] for n in names]) if best is not None else np.full(len(names), np.nan),
                curve,
                float(t["seconds"]),
                float(t["active_seconds"]),
            )
    return out


# The store of the finished study (25 MiB) is not in the repository; this summary of it is, and the report reads
# it when the store is absent. gzip: the best-so-far curves' steps are 55 000 exact floats (1.4 MB as text).
SUMMARY_SUFFIX = ".summary.json.gz"


def write_summary(runs: dict[str, RunSummary], path: Path) -> None:
    """What the report, the plots and ``--identifiability`` read of each run: totals, best point, timing, and
    the best-so-far curve as its steps (index and value where it changes; exact floats, so that the curve
    rebuilt by :func:`read_summary` equals the store's)."""
    rows = {}
    for name, r in sorted(runs.items()):
        steps = np.flatnonzero(np.r_[True, r.curve[1:] != r.curve[:-1]]) if r.curve.size else np.zeros(0, int)
        rows[name] = {
            "status": r.status,
            "stop_reason": r.stop_reason,
            "n_evals": r.n_evals,
            "best_loss": float(r.best_loss),
            "best": [float(v) for v in r.best],
            "seconds": r.seconds,
            "span": r.span,
            "curve_size": int(r.curve.size),
            "curve_steps": steps.tolist(),
            "curve_values": [float(v) for v in r.curve[steps]],
        }
    text = json.dumps({"format": "hysteresis_iabc summary 1", "runs": rows}, separators=(",", ":"))
    path.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))


def read_summary(path: Path) -> dict[str, RunSummary]:
    rows = json.loads(gzip.decompress(path.read_bytes()))["runs"]
    out: dict[str, RunSummary] = {}
    for name, d in rows.items():
        case, alg, seed = name.rsplit("/", 2)
        f = np.full(d["curve_size"], np.inf)
        f[np.asarray(d["curve_steps"], dtype=np.int64)] = d["curve_values"]
        out[name] = RunSummary(
            name,
            case,
            alg,
            int(seed[1:]),
            d["status"],
            d["stop_reason"],
            d["n_evals"],
            d["best_loss"],
            np.array(d["best"], dtype=float),
            np.minimum.accumulate(f) if f.size else f,
            d["seconds"],
            d["span"],
        )
    return out


def compact_finished(store_path: Path) -> None:
    """Keep only the improvements and failures of every finished run (a study of millions of evaluations
    would not fit in the repository otherwise; the report reads totals, traces and timing all the same),
    then VACUUM: the file shrinks only then, and no other process may be writing it."""
    size0 = store_path.stat().st_size / 2**20
    with RunStore(store_path) as st:
        done = [i.name for i in st.runs() if i.status == "finished" and not i.compacted]
        for name in done:
            st.compact_run(name)
        st.vacuum()
    print(
        f"compacted {len(done)} finished runs; {size0:.1f} -> {store_path.stat().st_size / 2**20:.1f} MiB", flush=True
    )


def complete(r: RunSummary, budget: int) -> bool:
    return r.status == "finished" and r.stop_reason in ("max_evals", "converged") and r.n_evals >= budget


# -- report ---------------------------------------------------------------------------------------------------
def _fmt(v: float) -> str:
    return f"{v:.4f}" if abs(v) >= 0.01 or v == 0 else f"{v:.5f}"


def _pct(v: float) -> str:
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


def _stats(runs: list[RunSummary], truth: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    B = np.array([r.best for r in runs])
    err = 100 * np.abs(B - truth) / np.abs(truth)
    return np.median(B, axis=0), np.median(err, axis=0), np.max(err, axis=0), sorted(r.seed for r in runs)


def _select(runs: dict[str, RunSummary], case: str, alg: str, budget: int, partial: bool = False) -> list[RunSummary]:
    return [r for r in runs.values() if r.case == case and r.alg == alg and (partial or complete(r, budget))]


def sdof_table(model: str, runs: dict[str, RunSummary], budget: int) -> list[str]:
    truth = np.array(TRUE[model], float)
    d = len(truth)
    head = "| | " + " | ".join(f"a{j + 1}" for j in range(d)) + " | seeds |"
    lines = [
        f"### Table {TABLE_NO[model]}: {TITLE[model]} (`sdof_{model}`)",
        "",
        head,
        "|---|" + "---:|" * d + "---|",
        "| true value | " + " | ".join(_fmt(v) for v in truth) + " | |",
    ]
    for n in NOISES:
        case = case_id(model, n)
        nl = "without noise" if n == 0 else f"{n} % noise"
        algs = ["iabc"] + (["abc"] if case == "pinching/n05" else [])
        for alg in algs:
            pk = PAPER.get((model, n, alg))
            if pk:
                lines.append(
                    f"| paper {LABEL[alg]}, {nl}: identified | " + " | ".join(_fmt(v) for v in pk[0]) + " | 1 |"
                )
                lines.append("| paper error (%) | " + " | ".join(_pct(v) for v in pk[1]) + " | |")
            sel = _select(runs, case, alg, budget)
            if sel:
                med, emed, emax, seeds = _stats(sel, truth)
                lines.append(
                    f"| **ours {LABEL[alg]}, {nl}**: identified (median) | "
                    + " | ".join(_fmt(v) for v in med)
                    + f" | {len(seeds)} ({','.join(map(str, seeds))}) |"
                )
                lines.append("| ours error (%), median | " + " | ".join(_pct(v) for v in emed) + " | |")
                lines.append("| ours error (%), worst | " + " | ".join(_pct(v) for v in emax) + " | |")
            else:
                lines.append(f"| ours {LABEL[alg]}, {nl} | " + " | ".join("not run" for _ in truth) + " | 0 |")
        if case == "pinching/n05":
            for other in ("I-ABC1", "I-ABC2"):
                pk = PAPER[(model, n, other)]
                lines.append(f"| paper {other}, {nl}: identified | " + " | ".join(_fmt(v) for v in pk[0]) + " | 1 |")
                lines.append("| paper error (%) | " + " | ".join(_pct(v) for v in pk[1]) + " | |")
    return lines + [""]


def table7(runs: dict[str, RunSummary], budget: int) -> list[str]:
    truth = np.array(TRUE["frame"], float)
    names = ["a11", "a12", "a13", "a21", "a22", "a23"]
    lines = [
        "### Table 7: frame (`mdof_frame`)",
        "",
        "| scenario | source | " + " | ".join(names) + " | largest in the row (%) | seeds |",
        "|---|---|" + "---:|" * 7 + "---|",
        "| | true value | " + " | ".join(_fmt(v) for v in truth) + " | | |",
    ]
    paper_alg = {"M6": "BMO", "M7": "TSA (Lévy)"}
    for row, specs in TABLE7_ROWS.items():
        pv, pe = PAPER_T7[row]
        alg = paper_alg.get(row, LABEL[specs[0][1]])
        lines.append(f"| {row} | paper {alg}: identified | " + " | ".join(_fmt(v) for v in pv) + " | | 1 |")
        lines.append("| | paper error (%) | " + " | ".join(_pct(v) for v in pe) + f" | {max(pe):.2f} | |")
        for scenario, a in specs:
            ours = LABEL[a]
            sel = _select(runs, case_id("frame", scenario), a, budget)
            part = [
                r
                for r in _select(runs, case_id("frame", scenario), a, budget, partial=True)
                if r.name not in {x.name for x in sel}
            ]
            if part:
                ref = _select(runs, case_id("frame", scenario), "iabc", budget)
                for r in sorted(part, key=lambda r: r.seed):
                    err = 100 * np.max(np.abs(r.best - truth) / np.abs(truth))
                    at = [float(x.curve[min(r.n_evals, x.curve.size) - 1]) for x in ref if x.curve.size]
                    cmp = f"; I-ABC's median loss after as many: {np.median(at):.4g}" if at else ""
                    lines.append(
                        f"| | ours {ours} s{r.seed}: incomplete, {r.n_evals} of {budget} evaluations, best loss so far "
                        f"{r.best_loss:.4g}{cmp} | " + " | ".join(_fmt(v) for v in r.best) + f" | {err:.2f} | |"
                    )
            if not sel:
                if not part:
                    lines.append(f"| | ours {ours} | " + " | ".join("not run" for _ in truth) + " | | 0 |")
                continue
            med, emed, emax, seeds = _stats(sel, truth)
            lines.append(
                f"| | **ours {ours}**: identified (median) | "
                + " | ".join(_fmt(v) for v in med)
                + f" | | {len(seeds)} ({','.join(map(str, seeds))}) |"
            )
            lines.append(
                "| | ours error (%), median | " + " | ".join(_pct(v) for v in emed) + f" | {emed.max():.2f} | |"
            )
            lines.append(
                "| | ours error (%), worst | " + " | ".join(_pct(v) for v in emax) + f" | {emax.max():.2f} | |"
            )
    return lines + [""]


def peers_table(runs: dict[str, RunSummary], budget: int) -> list[str]:
    cases = [case_id(m, n) for m in SDOF for n in NOISES] + [case_id("frame", s) for s in FRAME_CASES]
    lines = [
        "| case | algorithm | seeds | best loss (median) | each run's largest error (%), median over seeds | worst run's |",
        "|---|---|---|---:|---:|---:|",
    ]
    for c in cases:
        model, _ = parse_case(c)
        truth = np.array(TRUE[model], float)
        for alg in ALGORITHMS:
            sel = _select(runs, c, alg, budget)
            if not sel:
                continue
            errs = np.array([np.max(100 * np.abs(r.best - truth) / np.abs(truth)) for r in sel])
            lines.append(
                f"| {c} | {LABEL[alg]} | {len(sel)} | {np.median([r.best_loss for r in sel]):.4g} | "
                f"{np.median(errs):.2f} | {errs.max():.2f} |"
            )
    return lines + [""]


def ablation_table(runs: dict[str, RunSummary], budget: int) -> list[str]:
    """Eq. 29 as printed (one random number scales ``a_i - a_k``) against Karaboga's one-coordinate step,
    for every case where both readings ran, on the seeds both completed (same data, same start)."""
    cases = [case_id(m, n) for m in SDOF for n in NOISES] + [case_id("frame", s) for s in FRAME_CASES]
    lines = [
        "| case | algorithm | eq. 29 step | seeds | best loss (median) | max parameter error (%), median | worst |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for c in cases:
        truth = np.array(TRUE[parse_case(c)[0]], float)
        for ablated, base in ONE_COORD.items():
            pair = [(base, "vector (printed)"), (ablated, "one coordinate")]
            done = {a: _select(runs, c, a, budget) for a, _ in pair}
            common = set.intersection(*({r.seed for r in sel} for sel in done.values()))
            if not common:
                continue
            sels = [(a, how, [r for r in done[a] if r.seed in common]) for a, how in pair]
            for _a, how, sel in sels:
                errs = np.array([np.max(100 * np.abs(r.best - truth) / np.abs(truth)) for r in sel])
                lines.append(
                    f"| {c} | {LABEL[base]} | {how} | {len(sel)} | "
                    f"{np.median([r.best_loss for r in sel]):.7g} | {np.median(errs):.2f} | {errs.max():.2f} |"
                )
    return lines + [""]


def outputs(store_path: Path, suffix: str) -> Path:
    """A result file beside the store, named after it (``hysteresis.sqlite`` -> ``hysteresis.md``...)."""
    return store_path.with_name(store_path.stem + suffix)


def convergence_plots(runs: dict[str, RunSummary], budget: int, store_path: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    styles = {
        "iabc": "C0",
        "abc": "C1",
        "tsa": "C2",
        "pso": "C3",
        "tbpso": "C4",
        "cma": "C5",
        "ltsa": "C6",
        "bmo": "C7",
        "iabc-1coord": "0.6",
    }

    def panel(ax, case: str, title: str) -> bool:
        drawn = False
        for alg in (*ALGORITHMS, "iabc-1coord"):
            sel = _select(runs, case, alg, budget, partial=True)
            for k, r in enumerate(sorted(sel, key=lambda r: r.seed)):
                x = np.arange(1, r.curve.size + 1) / GROUP
                ax.semilogy(
                    x,
                    r.curve,
                    color=styles[alg],
                    lw=1.0,
                    alpha=0.85,
                    ls="--" if "1coord" in alg else "-",
                    label=LABEL[alg] if k == 0 else None,
                )
                drawn = True
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(f"cycles (evaluations / {GROUP})")
        ax.set_ylabel("objective, eq. 27")
        ax.grid(True, which="both", alpha=0.3)
        if drawn:
            ax.legend(fontsize=7)
        return drawn

    fig, ax = plt.subplots(figsize=(6, 4))
    if panel(ax, "pinching/n05", "pinching model, 5 % noise (cf. Fig. 17)"):
        fig.tight_layout()
        save_png(fig, outputs(store_path, ".fig17.png"), dpi=110)
        made.append(outputs(store_path, ".fig17.png").name)
    plt.close(fig)
    fig, axs = plt.subplots(1, 2, figsize=(11, 4))
    a = panel(axs[0], "frame/M4", "frame, accelerations, 10 % noise (M4-M7, cf. Fig. 20)")
    b = panel(axs[1], "frame/M2", "frame, accelerations, no noise (M2)")
    if a or b:
        fig.tight_layout()
        save_png(fig, outputs(store_path, ".fig20.png"), dpi=110)
        made.append(outputs(store_path, ".fig20.png").name)
    plt.close(fig)
    fig, axs = plt.subplots(3, 5, figsize=(20, 10))
    any_ = False
    for i, n in enumerate(NOISES):
        for j, m in enumerate(SDOF):
            any_ |= panel(axs[i, j], case_id(m, n), f"{TITLE[m]}, {n} % noise")
    if any_:
        fig.tight_layout()
        save_png(fig, outputs(store_path, ".sdof.png"), dpi=80)
        made.append(outputs(store_path, ".sdof.png").name)
    plt.close(fig)
    return made


FIGURE_SUFFIXES = tuple(f".fig7_16.{m}.png" for m in SDOF) + (".fig19.png",)


def draw_figures(runs: dict[str, RunSummary], budget: int, store_path: Path) -> list[str]:
    """The Figs. 7-16 and 19 analogues (``hysteresis_figures.py``) from the models and the complete runs."""
    import matplotlib

    matplotlib.use("Agg")
    import hysteresis_figures as hf

    def select(rs, case, alg):
        return _select(rs, case, alg, budget)

    made = []
    for m in SDOF:
        out = outputs(store_path, f".fig7_16.{m}.png")
        if hf.sdof_figure(m, TITLE[m], runs, np.array(TRUE[m], float), NOISES, case_id, select, out):
            made.append(out.name)
    rows = {alg: LABEL[alg] for _, (_, alg) in ((r, specs[0]) for r, specs in TABLE7_ROWS.items() if r in TABLE7_M4)}
    out = outputs(store_path, ".fig19.png")
    if hf.frame_figure(runs, np.array(TRUE["frame"], float), case_id, select, rows, out):
        made.append(out.name)
    return made


def projection(runs: dict[str, RunSummary], jobs: list[Job], budget: int) -> list[str]:
    """Remaining runs of the full plan and their projected time from the measured cost per evaluation."""
    per_eval: dict[str, list[float]] = {}
    for r in runs.values():
        if r.n_evals >= 1000:
            per_eval.setdefault(parse_case(r.case)[0], []).append(r.span / r.n_evals)
    allv = [v for vs in per_eval.values() for v in vs]
    if not allv:
        return ["No timed runs yet."]
    remaining: dict[str, list[int]] = {}
    secs = 0.0
    left_evals = 0
    for j in jobs:
        r = runs.get(j.run_name)
        left = budget - (r.n_evals if r is not None else 0)
        if r is not None and complete(r, budget):
            continue
        model = parse_case(j.case)[0]
        cost = float(np.median(per_eval.get(model, allv)))
        secs += left * cost
        left_evals += left
        remaining.setdefault(f"{j.case} {LABEL[j.alg]}", []).append(j.seed)
    lines = [
        f"Remaining runs of the full plan (5 seeds for the paper's algorithms, 1 for the peers): "
        f"{sum(len(v) for v in remaining.values())}, about {left_evals / 1e6:.2f} million evaluations, projected "
        f"**{secs / 3600:.1f} run-hours**, i.e. about {secs / 3600 / 2:.1f} h elapsed with `--workers 2`, at "
        "the wall time per evaluation of the runs stored here (median per model of a run's computing time / "
        "its evaluations; "
        + ", ".join(f"{k} {np.median(v) * 1e3:.1f} ms" for k, v in sorted(per_eval.items()))
        + "; measured on a shared 2-CPU machine whose load varied from run to run and is not stored with "
        "the runs, so this projection is rough: the Speed section gives an idle-machine run). Models "
        "without a timed run are projected at the median of all runs (for the frame an overestimate: "
        "docs/hysteresis.md measures its simulation at about 0.6x the SDOF's CPU).",
        "",
    ]
    if remaining:
        lines.append("<details><summary>runs not yet complete</summary>")
        lines.append("")
        for k, v in remaining.items():
            lines.append(f"- {k}: seeds {','.join(map(str, v))}")
        lines.append("")
        lines.append("</details>")
    return lines


def speed_section(speed: Path) -> list[str]:
    if not speed.exists():
        return ["Not measured yet: `python benchmarks/hysteresis_iabc.py --speed`.", ""]
    s = json.loads(speed.read_text())
    m, o, r = s["mechcalib"], s["opensees"], s.get("iabc_run")
    lines = [
        (
            f"Measured {s['date']} on {s['cpus']} CPUs, load average (1, 5, 15 min) {s['load_before']} before and "
            f"{s['load_after']} after (shared machine; medians of {s['repeats']} repeats; CPU = the "
            "process's own CPU time). One SDOF Bouc-Wen simulation, paper's test values, 20 s at 1000 Hz "
            "(20 001 samples):"
        ),
        "",
        "| | wall per simulation | CPU per simulation | wall ratio OpenSees / mechcalib | CPU ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    base_w, base_c = m["single_wall"], m["single_cpu"]
    rows = [
        ("mechcalib `simulate`, one set", m["single_wall"], m["single_cpu"]),
        (
            f"mechcalib `simulate`, batch of {m['batch']} random sets ({m['threads']} threads), per set",
            m["batch_wall"],
            m["batch_cpu"],
        ),
        (
            "openseespy, build + `analyze` step by step reading the acceleration (as the cross-check test)",
            o["loop_wall"],
            o["loop_cpu"],
        ),
        ("openseespy, build + one `analyze(20000)` call, no output read (lower bound)", o["bulk_wall"], o["bulk_cpu"]),
    ]
    for name, w, c in rows:
        lines.append(f"| {name} | {w * 1e3:.2f} ms | {c * 1e3:.2f} ms | {w / base_w:.1f} | {c / base_c:.1f} |")
    lines += [
        "",
        (
            "Ratios are against mechcalib's single-set call; against its batched cost per set "
            f"the OpenSees loop costs {o['loop_wall'] / m['batch_wall']:.1f}x (wall) and "
            f"{o['loop_cpu'] / m['batch_cpu']:.1f}x (CPU). The two responses agree to "
            f"{s['acc_agreement']:.1e} of the acceleration's RMS (max difference). mechcalib runs "
            "its defaults (scalar SDOF kernel, one RK4 step per 4 samples, the samples between "
            "interpolated; error below 1.1e-5 of the RMS over the bounds, docs/hysteresis.md); OpenSees "
            "Newmark at 1 ms."
        ),
        "",
    ]
    if r is None:
        return lines + ["The timed I-ABC identification has not been run (`--speed` without `--speed-skip-iabc`).", ""]
    lines += [
        (
            f"Complete I-ABC identification, SDOF Bouc-Wen, noise-free, `IABC.ding2021(seed=1)`, "
            f"{r['n_evals']} evaluations, `SerialEvaluator()` (the whole batch in one `simulate` call, "
            f"{r['threads']} numba threads), through the run store ({r['store']}; {r['simulated']} simulated, the "
            f"rest cache hits of repeated points): **{r['wall']:.0f} s wall**, {r['cpu']:.0f} s CPU "
            f"(load average {r['load_before']} before and {r['load_after']} after); best loss {r['best_loss']:.3g}, "
            f"largest parameter error {r['max_err_pct']:.3f} %."
        ),
        "",
    ]
    return lines


def write_report(store_path: Path, budget: int, jobs_full: list[Job], command: str | None) -> None:
    runs = load_runs(store_path)
    plots = convergence_plots(runs, budget, store_path) if runs else []
    n_complete = sum(complete(r, budget) for r in runs.values())
    summary = outputs(store_path, SUMMARY_SUFFIX)
    if store_path.exists():
        merged = summary.exists()
        write_summary(runs, summary)
        size = store_path.stat().st_size / 2**20
        wal = store_path.with_name(store_path.name + "-wal")
        size_wal = wal.stat().st_size / 2**20 if wal.exists() else 0.0
        source = (
            f"the run store `{store_path.name}` ({size:.1f} MiB"
            + (f" + {size_wal:.1f} MiB WAL" if size_wal else "")
            + (f") and the runs of `{summary.name}` it lacks (" if merged else "; ")
            + f"{len(runs)} runs, {n_complete} complete)"
        )
    else:
        source = (
            f"`{summary.name}`, the summary of its run store `{store_path.name}` ({len(runs)} runs, "
            f"{n_complete} complete; the store is not in the repository, benchmarks/README.md says how to "
            "recompute it)"
        )
    L = [
        "# Hysteretic parameter identification with I-ABC (Ding et al. (2021))",
        "",
        (
            f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `python benchmarks/hysteresis_iabc.py` from "
            f"{source}. Python {platform.python_version()}, "
            f"{os.cpu_count()} CPUs. The module docstring of the script states the cases, objective, algorithms and "
            "settings."
        ),
        "",
        (
            f"Every run: {budget} evaluations (Ding et al.'s (2021) group size 50 x 500 cycles; I-ABC stops at its 500th cycle "
            "or the budget, whichever comes first; all algorithms get the same budget and the same bounds, 0.5x-2x "
            'the true values). Identified values are the best point of each run; "median" and "worst" are over '
            "the seeds listed (seed = optimiser seed = noise seed). Only complete runs enter the tables."
        ),
        "",
        "Resume or extend: rerun the command; finished runs are skipped, interrupted ones continue from the store.",
        "",
        "## SDOF systems (Tables 1-5)",
        "",
    ]
    for m in SDOF:
        L += sdof_table(m, runs, budget)
    L += [
        (
            "The paper's I-ABC1 (Ding et al. 2016b) and I-ABC2 (Ding et al. 2017b) are not reproduced: their update "
            "rules are not given in Ding et al. (2021), and the public literature and code searched hold only the "
            "abstracts of the two bee-colony papers (a DE mechanism in the employed phase, tournament selection and "
            "'a new formula' for the onlookers, without the formula; docs/hysteresis.md lists the searches); the "
            "original ABC is run in their place."
        ),
        "",
        "## Frame (Table 7)",
        "",
    ]
    L += table7(runs, budget)
    L += [
        (
            "M6 is the bird mating optimiser (`bmo`, Askarzadeh 2014) and M7 the tree-seed algorithm with Lévy-flight "
            "steps (`ltsa`); the paper's TSA is Ding et al.'s (2019) Lévy variant, whose exact rules could not be "
            "obtained, so `ltsa` is Kiran's TSA with Mantegna's Lévy steps (docs/hysteresis.md) and Kiran's own TSA "
            "is shown beside it. Neither paper gives settings for BMO or TSA; each gets its original paper's "
            "defaults (module docstring) and the 25 000 evaluations of I-ABC. A row with fewer than 5 seeds is "
            "incomplete: rerun the command to add the missing ones (the store continues them). "
            "'Largest in the row': the largest of the row's six values, so in a 'median' row the largest "
            "per-parameter median and in a 'worst' row the largest single error of any run; the table below gives "
            "a different statistic, the median over seeds of each run's largest error. Table 7 prints M1's a22 as "
            "0.4070 beside an "
            "error of 0.6 %: 0.4070 is 18.6 % off the true 0.5; the error column fits 0.497 or 0.503, so the value is "
            "presumably a misprint (and the error the one to compare with)."
        ),
        "",
        "## All algorithms, every case run",
        "",
    ]
    L += peers_table(runs, budget)
    L += [
        "## Reading of eq. 29: vector step against one coordinate",
        "",
        (
            "Eq. 29, `a_i* = a_i + rand(-1, 1) (a_i - a_k)`, is printed as a vector equation with one random "
            'number: the step runs along the difference of two sources (`local_step="vector"`, the `ding2021` '
            'presets). Karaboga\'s reference code changes one random coordinate instead (`local_step="one"`); '
            "the study's first pass used it. Same seeds, data, bounds and budget:"
        ),
        "",
    ]
    L += ablation_table(runs, budget)
    L += [
        (
            "The noise-free objectives have long, curved valleys (condition numbers up to 8.6e5, see "
            "Identifiability): a step along the difference of two sources follows them, a one-coordinate step "
            "does not, and stalls at a few per cent."
        ),
        "",
    ]
    L += ["## Convergence", ""]
    if plots:
        L += [f"![{p}]({p})" for p in plots] + [""]
        L += [
            (
                f"Abscissa: evaluations / {GROUP} (one I-ABC cycle = 25 employed + 25 onlooker evaluations), "
                f"{budget // GROUP} cycles in all (the paper's Fig. 20 runs past 2000 iterations; here every run "
                "has the paper's 500 cycles). Ordinate: best objective so far, one line per seed."
            ),
            "",
        ]
    else:
        L += ["No runs yet.", ""]
    figs = [outputs(store_path, x).name for x in FIGURE_SUFFIXES if outputs(store_path, x).exists()]
    L += ["## Loops and responses (Figs. 7-16 and 19)", ""]
    if figs:
        L += [f"![{p}]({p})" for p in figs] + [""]
        L += [
            (
                "Drawn by `python benchmarks/hysteresis_iabc.py --figures` from the models and the stored runs "
                "(`benchmarks/hysteresis_figures.py` states how): per SDOF law, the law's loop along the true "
                "displacement history and the acceleration (10-20 s) of the true parameters and of I-ABC's "
                "median run (by largest parameter error) at 0, 5 and 10 % noise; for the frame, node 5's "
                "acceleration with 5 and 10 % noise (Fig. 19) and the two components' loops of the M4-M7 "
                "algorithms' median runs."
            ),
            "",
        ]
    else:
        L += ["Not drawn yet: run `python benchmarks/hysteresis_iabc.py --figures`.", ""]
    L += ["## Identifiability: flat directions, convergence and the noisy optimum", ""]
    L += identifiability_section(outputs(store_path, ".identifiability.json"))
    L += [
        "The 95 % intervals of the noisy cases (Tables 1, 4, 5 at 5 and 10 %, Table 7's M3 and M4 data), local and "
        "posterior, beside the paper's point errors, with the parameters whose posterior is the prior box named: "
        '`benchmarks/results/uncertainty.md`, section "The hysteresis study\'s noisy cases with intervals" '
        "(`python benchmarks/uncertainty.py --hysteresis --posterior`).",
        "",
    ]
    L += ["## Speed", ""] + speed_section(outputs(store_path, ".speed.json"))
    L += ["## Progress and projection", ""] + projection(runs, jobs_full, budget) + [""]
    if command:
        L += [f"Last command: `{command}`", ""]
    outputs(store_path, ".md").write_text("\n".join(L))


# -- speed --------------------------------------------------------------------------------------------------------
def opensees_boucwen(read_every_step: bool) -> np.ndarray | None:
    """The paper's SDOF with OpenSees' BoucWen material (mapping in docs/hysteresis.md), Newmark average
    acceleration at 1 ms for 20 s; returns the acceleration when read step by step."""
    from mechcalib.models.hysteresis.opensees import boucwen_material, build_sdof

    ops = build_sdof(boucwen_material(2.0, 1.0, 0.5, 2.0))
    nsteps, dt = 20000, 1e-3
    if not read_every_step:
        ok = ops.analyze(nsteps, dt)
        ops.wipe()
        if ok != 0:
            raise RuntimeError("OpenSees analysis failed")
        return None
    acc = np.zeros(nsteps + 1)
    for i in range(1, nsteps + 1):
        if ops.analyze(1, dt) != 0:
            raise RuntimeError("OpenSees analysis failed")
        acc[i] = ops.nodeAccel(2, 1)
    ops.wipe()
    return acc


def _timed(fn, repeats: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return float(np.median(walls)), float(np.median(cpus))


def measure_speed(repeats: int, budget: int, skip_iabc: bool, previous: Path, store: Path) -> dict:
    import numba

    load0 = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    model = get_model("sdof_boucwen")
    th = model.full_vector()[None]
    model.simulate(th)  # compile / load the cache
    X = model.space.from_unit(np.random.default_rng(0).random((GROUP, model.space.dim)))
    thb = model.space.to_full(X)
    model.simulate(thb)
    acc_mc = model.integrate(th)["a"][0]
    opensees_boucwen(False)
    acc_os = opensees_boucwen(True)
    agree = float(np.max(np.abs(acc_os - acc_mc)) / np.sqrt(np.mean(acc_mc**2)))
    out: dict[str, Any] = {
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "cpus": os.cpu_count(),
        "repeats": repeats,
        "load_before": load0,
        "acc_agreement": agree,
    }
    m: dict[str, Any] = {"batch": GROUP, "threads": numba.get_num_threads()}
    o: dict[str, Any] = {}
    # interleaved, so that the load is shared alike
    for _ in range(2):
        m["single_wall"], m["single_cpu"] = _timed(lambda: model.simulate(th), repeats)
        w, c = _timed(lambda: model.simulate(thb), max(2, repeats // 4))
        m["batch_wall"], m["batch_cpu"] = w / GROUP, c / GROUP
        o["loop_wall"], o["loop_cpu"] = _timed(lambda: opensees_boucwen(True), max(2, repeats // 4))
        o["bulk_wall"], o["bulk_cpu"] = _timed(lambda: opensees_boucwen(False), max(2, repeats // 4))
    out["mechcalib"], out["opensees"] = m, o
    if not skip_iabc:
        # The table's own run boucwen/n00/iabc/s1 when the store lacks it (so the time is not spent twice),
        # else the same run in a scratch store.
        lb = " / ".join(f"{x:.2f}" for x in os.getloadavg())
        job = Job("boucwen/n00", "iabc", 1)
        with RunStore(store) as st:
            fresh = not st.has_run(job.run_name)
        with tempfile.TemporaryDirectory() as tmp:
            path = store if fresh else Path(tmp) / "speed.sqlite"
            r = run_job(job, str(path), budget, None, None)
            with RunStore(path, readonly=True) as st:
                x = np.array(list(st.best(job.run_name).params.values()))
        truth = np.array(TRUE["boucwen"])
        out["iabc_run"] = {
            "n_evals": r["n_evals"],
            "simulated": r["simulated"],
            "wall": r["wall"],
            "cpu": r["cpu"],
            "threads": numba.get_num_threads(),
            "best_loss": r["best_loss"],
            "load_before": lb,
            "load_after": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
            "store": store.name if fresh else "scratch",
            "max_err_pct": float(np.max(100 * np.abs(x - truth) / truth)),
        }
    elif previous.exists():
        out["iabc_run"] = json.loads(previous.read_text()).get("iabc_run")
    out["load_after"] = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return out


# -- identifiability (why some noise-free errors exceed the paper's) --------------------------------------------
def identifiability(
    runs: dict[str, RunSummary], budget: int, models: Sequence[str] = ("boucwen", "degradation", "pinching")
) -> dict:
    """Gauss-Newton analysis of the noise-free SDOF objectives at the true values.

    ``G = J^T J`` with ``J`` the derivative of the simulated acceleration with respect to the logarithms of
    the parameters (central differences, relative step 1e-3; 1e-5 gives the same to 3 digits), so that the
    loss of a small relative error ``d`` is ``d^T G d`` (eq. 27 without noise). Its eigenvalues say how
    well each combination of parameters is determined; the weakest eigenvector is the flat direction. For
    every complete noise-free I-ABC run (both readings of eq. 29): the share of its relative error along that direction and its best
    loss after 100...500 cycles (still falling at the end means the budget, not the data, limits it).
    """
    out: dict[str, Any] = {}
    for key in models:
        model = get_model(f"sdof_{key}")
        x0 = np.array(TRUE[key], float)
        d = x0.size
        h = 1e-3
        X = np.vstack([x0] + [x0 * (1 + h * e) for e in np.eye(d)] + [x0 * (1 - h * e) for e in np.eye(d)])
        acc = model.integrate(model.space.to_full(X))["a"]
        J = np.stack([(acc[1 + j] - acc[1 + d + j]) / (2 * h) for j in range(d)], axis=1)
        w, V = np.linalg.eigh(J.T @ J)
        v0 = V[:, 0] * np.sign(V[np.argmax(np.abs(V[:, 0])), 0])
        entry: dict[str, Any] = {
            "eigenvalues": w.tolist(),
            "weakest": v0.tolist(),
            "condition": float(w[-1] / w[0]),
            "loss_1pct_weakest": float(1e-4 * w[0]),
            "runs": {},
        }
        for r in [r for alg in ("iabc", "iabc-1coord") for r in _select(runs, case_id(key, 0), alg, budget)]:
            dx = np.log(r.best / x0)
            entry["runs"][f"{LABEL[r.alg]} s{r.seed}"] = {
                "best_loss": r.best_loss,
                "max_err_pct": float(np.max(100 * np.abs(r.best - x0) / x0)),
                "share_along_weakest": float(abs(v0 @ dx) / np.linalg.norm(dx)) if np.any(dx) else 0.0,
                "loss_at_cycles": {
                    str(c): float(r.curve[min(r.curve.size, c * GROUP) - 1]) for c in (100, 200, 300, 400, 500)
                },
            }
        # With eq. 36's white noise of variance sigma^2 on N samples, the least-squares estimate scatters about
        # the truth with covariance sigma^2 G^-1 (in log-parameters): standard deviation sigma / sqrt(lambda_min)
        # along the weakest direction. sigma^2 is estimated as the loss at the truth divided by N.
        entry["noisy"] = {}
        for noise in (n for n in NOISES if n):
            case = case_id(key, noise)
            for r in _select(runs, case, "iabc", budget):
                prob = build_problem(case, r.seed)
                n_samples = prob.experiments[0]["acceleration"].y.size
                at_truth = float(prob.evaluate(x0[None, :]).losses[0])
                sigma2 = at_truth / n_samples
                entry["noisy"][f"{case} s{r.seed}"] = {
                    "loss_at_truth": at_truth,
                    "best_loss": r.best_loss,
                    "sigma2": sigma2,
                    "sd_weakest_pct": float(100 * np.sqrt(sigma2 / w[0])),
                    "max_err_pct": float(np.max(100 * np.abs(r.best - x0) / x0)),
                }
        out[key] = entry
    return out


def identifiability_section(path: Path) -> list[str]:
    if not path.exists():
        return ["Not computed yet: `python benchmarks/hysteresis_iabc.py --identifiability`.", ""]
    s = json.loads(path.read_text())
    lines = [
        (
            "Gauss-Newton matrix `G = J^T J` of the noise-free objective at the true values, `J` the derivative "
            "of the acceleration record with respect to the parameters' logarithms (so `d^T G d` is the loss of "
            "relative errors `d`); `python benchmarks/hysteresis_iabc.py --identifiability`:"
        ),
        "",
        "| model | eigenvalues of G | weakest direction (relative changes of a1...) | loss of a 1 % step along it |",
        "|---|---|---|---:|",
    ]
    for key, e in s.items():
        lines.append(
            f"| {key} | "
            + ", ".join(f"{v:.3g}" for v in e["eigenvalues"])
            + " | "
            + ", ".join(f"{v:+.2f}" for v in e["weakest"])
            + f" | {e['loss_1pct_weakest']:.2g} |"
        )
    lines += [
        "",
        (
            "| run (noise-free) | largest error (%) | share of the error along the weakest direction | "
            "best loss after 100 / 200 / 300 / 400 / 500 cycles |"
        ),
        "|---|---:|---:|---|",
    ]
    for key, e in s.items():
        for seed, r in e["runs"].items():
            lines.append(
                f"| {key} {seed} | {r['max_err_pct']:.2f} | {r['share_along_weakest']:.2f} | "
                + " / ".join(f"{v:.3g}" for v in r["loss_at_cycles"].values())
                + " |"
            )
    noisy = [(k, e["noisy"]) for k, e in s.items() if e.get("noisy")]
    if noisy:
        lines += [
            "",
            (
                "With noise the optimum moves: eq. 36 adds white noise of variance `sigma^2` to N = 20 001 "
                "samples, and the least-squares estimate then scatters about the truth with covariance "
                "`sigma^2 G^-1` (log-parameters), standard deviation `sigma / sqrt(lambda_min)` along the "
                "weakest direction. `sigma^2` = loss at the truth / N. Where the best loss found lies below "
                "the loss at the truth, the optimiser has done its job and the distance to the truth is the "
                "data's, not the algorithm's:"
            ),
            "",
            "| case (I-ABC) | loss at the truth | best loss found | sigma^2 | predicted SD along the weakest "
            "direction (%) | largest error found (%) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for _key, runs_ in noisy:
            for name, r in runs_.items():
                lines.append(
                    f"| {name} | {r['loss_at_truth']:.6g} | {r['best_loss']:.6g} | {r['sigma2']:.4g} | "
                    f"{r['sd_weakest_pct']:.0f} | {r['max_err_pct']:.1f} |"
                )
    return lines + [""]


# -- CLI --------------------------------------------------------------------------------------------------------
def _ints(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def _names(text: str, valid: Sequence[str], what: str) -> list[str]:
    if text == "all":
        return list(valid)
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in valid]
    if bad:
        raise SystemExit(f"unknown {what} {bad}; valid: {', '.join(valid)}")
    return names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--models", default="all", help=f"comma list of {', '.join(SDOF + ('frame',))} (default all)")
    ap.add_argument("--noise", default="0,5,10", help="noise levels in %% (default 0,5,10)")
    ap.add_argument("--scenarios", default="M1,M2,M3,M4", help="frame data cases (M4 carries Table 7's M4-M7)")
    ap.add_argument("--algorithms", default="all", help=f"comma list of {', '.join(ALGORITHMS)} (default all)")
    ap.add_argument("--seeds", default="1-5", help="seeds of the paper's algorithms on the SDOF cases (default 1-5)")
    ap.add_argument("--mdof-seeds", default=None, help="seeds on the frame (default: --seeds)")
    ap.add_argument("--peer-seeds", default="1", help="seeds of PSO, TBPSO, CMA-ES (default 1)")
    ap.add_argument("--budget", type=int, default=BUDGET, help=f"evaluations per run (default {BUDGET})")
    ap.add_argument(
        "--workers",
        type=int,
        default=1,
        help="runs in parallel processes (each single-threaded); 1: one run at a time, numba threads",
    )
    ap.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="stop after this long; the current runs stop resumably at their next batch",
    )
    ap.add_argument(
        "--store", type=Path, default=STORE, help="run store (default benchmarks/results/hysteresis.sqlite)"
    )
    ap.add_argument("--report-only", action="store_true", help="only regenerate the report from the store")
    ap.add_argument(
        "--figures",
        action="store_true",
        help="draw the Figs. 7-16 and 19 analogues (loops, responses) from the models and the stored runs, then exit",
    )
    ap.add_argument("--no-report", action="store_true", help="do not write the report")
    ap.add_argument(
        "--speed",
        action="store_true",
        help="measure the simulation cost against OpenSees and time "
        "a complete I-ABC identification; writes hysteresis.speed.json",
    )
    ap.add_argument("--speed-repeats", type=int, default=20)
    ap.add_argument("--speed-skip-iabc", action="store_true", help="--speed without the timed I-ABC run")
    ap.add_argument(
        "--compact",
        action="store_true",
        help="compact the finished runs (keep improvements and "
        "failures) and VACUUM the store; run it while no other process writes the store",
    )
    ap.add_argument(
        "--identifiability",
        action="store_true",
        help="Gauss-Newton analysis of the noise-free SDOF "
        "objectives against the stored runs; writes hysteresis.identifiability.json",
    )
    a = ap.parse_args(argv)
    models = _names(a.models, SDOF + ("frame",), "models")
    noises = list(_ints(a.noise))
    if any(n not in NOISES for n in noises):
        raise SystemExit(f"noise levels must be among {NOISES}, got {noises}")
    scenarios = _names(a.scenarios, tuple(FRAME_CASES), "scenarios")
    algs = (
        _names(a.algorithms, ALGORITHMS, "algorithms")
        if a.algorithms == "all"
        else _names(a.algorithms, ALGORITHMS + tuple(ONE_COORD), "algorithms")
    )
    seeds = _ints(a.seeds)
    mdof_seeds = _ints(a.mdof_seeds) if a.mdof_seeds else seeds
    peer_seeds = _ints(a.peer_seeds)
    command = "python benchmarks/hysteresis_iabc.py " + " ".join(sys.argv[1:] if argv is None else argv)
    a.store.parent.mkdir(parents=True, exist_ok=True)
    if a.speed:
        speed = outputs(a.store, ".speed.json")
        res = measure_speed(a.speed_repeats, a.budget, a.speed_skip_iabc, speed, a.store)
        speed.write_text(json.dumps(res, indent=1))
        print(json.dumps(res, indent=1), flush=True)
    elif a.compact:
        compact_finished(a.store)
    elif a.figures:
        print("\n".join(draw_figures(load_runs(a.store), a.budget, a.store)), flush=True)
    elif a.identifiability:
        res = identifiability(load_runs(a.store), a.budget)
        outputs(a.store, ".identifiability.json").write_text(json.dumps(res, indent=1))
    elif not a.report_only:
        jobs = plan(models, noises, scenarios, algs, seeds, peer_seeds, mdof_seeds)
        execute(jobs, a.store, a.budget, a.workers, a.max_minutes)
    if not a.no_report:
        full = plan(
            list(SDOF) + ["frame"],
            list(NOISES),
            list(FRAME_CASES),
            list(ALGORITHMS),
            list(range(1, 6)),
            [1],
            list(range(1, 6)),
        )
        write_report(a.store, a.budget, full, command)
        print(f"wrote {outputs(a.store, '.md')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
