"""The problems, targets and methods of ``benchmarks/efficiency.py`` (simulations to a calibrated model).

Problems (every one a :class:`mechcalib.Problem` with an L2-type objective that has residuals):

``duffing``
    the Duffing oscillator, default preset, noise-free, L2 on the displacement; target: largest relative
    parameter error < 1 %.
``sdof``
    the SDOF Bouc-Wen identification of the hysteresis study (Ding et al. 2021: ``sdof_boucwen``, bounds
    0.5-2x the truth, L2 on the acceleration), noise-free, built from a TOML config without ``[optimizer]``
    (so its method is ``auto``); target: largest relative parameter error < 1 %.
``sdof5``
    the same with 5 % noise (one realisation, noise seed 0); target: within 1 % (largest relative
    difference) of the best-fit parameters, the point every least-squares start reaches (``reference``).
``frame``
    the 4-storey frame, scenario M2 of the hysteresis study (accelerations of nodes 5, 7, 13, 19,
    noise-free); target: largest relative parameter error < 1 %.
``calorimetry``
    the COST TU1404 heat curve at 20 degC (``/work/shared/data/calorimetry``), the affinity model with B1
    (0.05-3 1/h), B2 (1e-6-1e-2, log) and eta (1-15) free, alpha_inf = 0.875, t0 = 0, Q_pot = 500 J/g and
    Ea = 47 002 J/mol fixed (the COST study's central values), L2 on the heat; target: RMSE within 3 % of
    the least-squares optimum's (``reference``).
``sdof7``
    seven free parameters: the SDOF with the Baber-Wen degrading law (``sdof_degradation``) under a
    broadband force (24 sines of 0.05-0.6 Hz with random phases, seed 7, RMS 3.5 N, 20 s, 100 Hz), 5 %
    noise, L2 on the acceleration; beta, gamma, n, delta_A and m, c, k free in boxes a factor 4-10 wide
    around rough guesses (gamma's sign open: [-2, 2]), delta_nu and delta_eta fixed; target: within 1 % of
    the best-fit point (``reference``). Built from ``examples/hysteresis_sdof7.toml`` (no ``[optimizer]``).
``arch``
    Kibriya et al.'s (2023) arch, Pulatsu's geometry, objective 1 against its shipped reference; target: the
    best known loss (the best of the arch rerun's objective-1 runs on this geometry,
    ``benchmarks/results/arch_v2.summary.json``) + 5 %.
"""

from __future__ import annotations

import contextlib
import json
import math
import queue
import subprocess
import sys
import tempfile
import threading
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

import mechcalib as mc
from mechcalib.optimizers import make_optimizer
from mechcalib.optimizers._base import Optimizer, SeedLike

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
SHARED = ROOT.parent.parent / "shared" / "data"
if not SHARED.exists():  # a worktree two levels below the shared folder
    SHARED = Path("/work/shared/data")
REFERENCE = RESULTS / "efficiency.reference.json"


# --------------------------------------------------------------------------------------------
# Problems
# --------------------------------------------------------------------------------------------
SDOF_CONFIG = """
name = "sdof-boucwen"
seed = {seed}
[model]
name = "sdof_boucwen"
preset = "default"
[[experiments]]
kind = "synthetic"
name = "sdof"
noise = {noise}
seed = 0
channels = ["acceleration"]
[objective]
name = "l2"
[budget]
max_evals = 50
[evaluator]
kind = "serial"
[output]
directory = "out"
"""


def sdof_config(noise: float, seed: int = 0) -> Any:
    """The SDOF Bouc-Wen run configuration (no ``[optimizer]``: the method is ``auto``)."""
    from mechcalib.config import RunConfig

    return RunConfig.from_dict(tomllib.loads(SDOF_CONFIG.format(noise=noise, seed=seed)), base_dir=ROOT)


def _sdof(noise: float) -> mc.Problem:
    return sdof_config(noise).build_problem()


def _duffing() -> mc.Problem:
    from mechcalib.models import get_model

    model = get_model("duffing")
    exp = mc.experiment_from_model(model, model.preset("default"), noise=0.0, seed=0, name="duffing")
    return mc.Problem(model, exp, mc.L2(channels=("displacement",)))


def _frame() -> mc.Problem:
    from mechcalib.core.problem import experiment_from_model
    from mechcalib.models import get_model

    model = get_model("mdof_frame")
    chans = ("acceleration_node5", "acceleration_node7", "acceleration_node13", "acceleration_node19")
    data = experiment_from_model(model, noise=0.0)
    return mc.Problem(model, mc.Experiment({c: data[c] for c in chans}, name="frame_M2"), mc.L2())


CALO_FIXED = {"alpha_inf": 0.875, "Q_pot": 500.0, "Ea": 47002.0, "t0": 0.0}


def _calorimetry() -> mc.Problem:
    from mechcalib.core.parameters import Parameter, ParameterSpace
    from mechcalib.models.hydration.calorimetry import load_cost_tu1404
    from mechcalib.models.hydration.model import Hydration

    exp = load_cost_tu1404(SHARED / "calorimetry" / "cost_tu1404" / "cost_action_hydration_data.csv")[20.0]
    model = Hydration(Q_pot=CALO_FIXED["Q_pot"], Ea=CALO_FIXED["Ea"], t0=CALO_FIXED["t0"])
    space = ParameterSpace(
        [
            Parameter("B1", 0.05, 3.0, unit="1/h"),
            Parameter("B2", 1e-6, 1e-2, scale="log"),
            Parameter("eta", 1.0, 15.0),
            Parameter("alpha_inf", 0.4, 1.0, fixed=CALO_FIXED["alpha_inf"]),
            Parameter("Q_pot", 100.0, 700.0, unit="J/g", fixed=CALO_FIXED["Q_pot"]),
            Parameter("Ea", 20000.0, 70000.0, unit="J/mol", fixed=CALO_FIXED["Ea"]),
            Parameter("t0", -6.0, 6.0, unit="h", fixed=CALO_FIXED["t0"]),
        ]
    )
    return mc.Problem(model, exp, mc.L2(channels=("heat",)), space=space)


def broadband_force(seed: int = 7, t_end: float = 20.0, rms: float = 3.5) -> dict[str, np.ndarray]:
    """A broadband force ``{"t", "force"}``: 24 equal sines of 0.05-0.6 Hz with random phases (seeded),
    scaled to ``rms`` [N], sampled at 100 Hz."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, t_end + 1e-9, 0.01)
    force = sum(np.sin(2 * np.pi * f * t + rng.uniform(0, 2 * np.pi)) for f in np.linspace(0.05, 0.6, 24))
    return {"t": t, "force": rms * np.asarray(force) / np.std(force)}


#: the seven-parameter problem's configuration (no ``[optimizer]``: the method is ``auto``); its force record
#: ``examples/data/broadband_force.csv`` is :func:`broadband_force` written with every digit
SDOF7_CONFIG = ROOT.parent / "examples" / "hysteresis_sdof7.toml"


def _sdof7() -> mc.Problem:
    from mechcalib.config import load_config

    return load_config(SDOF7_CONFIG).build_problem()


def _arch() -> mc.Problem:
    import arch_calibration as ac

    return ac.problem_for("pulatsu", 1)


@dataclass(frozen=True)
class Case:
    """One problem of the study: how to build it, its target and the budgets it gives the methods.

    ``target``: ``"truth"`` (largest relative parameter error to ``point`` below ``tol``), ``"point"``
    (likewise to the reference best-fit point) or ``"loss"`` (the loss at most ``threshold``). ``budget``:
    the budget of the metaheuristics, CMA-ES and peers; ``lsq_budget`` of least squares (TRF, LM,
    multi-start); ``auto_budget`` auto's ``max_evals`` (it runs it whole, its verdict is at its end).
    """

    key: str
    title: str
    build: Callable[[], mc.Problem]
    target: str
    tol: float
    budget: int
    lsq_budget: int
    auto_budget: int
    auto_rule: str
    cost: str  # "cheap" or "expensive" (run with nice, as far as time allows)


CASES: dict[str, Case] = {
    c.key: c
    for c in (
        Case("duffing", "Duffing oscillator, L2 on displacement, noise-free", _duffing, "truth", 0.01,
             3000, 500, 50, "<= 2x the median of a single least-squares start (lsq-trf)", "cheap"),
        Case("sdof", "SDOF Bouc-Wen (hysteresis study), noise-free", lambda: _sdof(0.0), "truth", 0.01,
             3000, 500, 50, "a config without [optimizer], max_evals = 50, ends < 1 %", "cheap"),
        Case("sdof5", "SDOF Bouc-Wen, 5 % noise, against the best-fit point", lambda: _sdof(0.05), "point",
             0.01, 3000, 500, 60, "within 1 % of the best-fit point in <= 60 simulations", "cheap"),
        Case("calorimetry", "calorimetry, COST TU1404 20 degC: B1, B2 (log), eta free", _calorimetry, "loss",
             0.03, 3000, 500, 150, "RMSE within 3 % of the least-squares optimum's in <= 150 simulations",
             "cheap"),
        Case("sdof7", "SDOF Baber-Wen degrading law, broadband force, 5 % noise, 7 free", _sdof7, "point",
             0.01, 3000, 500, 300, "within 1 % of the best-fit point in <= 300 simulations", "cheap"),
        Case("frame", "4-storey frame, scenario M2 (noise-free)", _frame, "truth", 0.01,
             3000, 500, 200, "<= one third of the best peer's median", "expensive"),
        Case("arch", "arch (Pulatsu's geometry), objective 1", _arch, "loss", 0.05,
             600, 300, 600, "success rate and median no worse than the best peer's", "expensive"),
    )
}  # fmt: skip

_PROBLEMS: dict[str, mc.Problem] = {}


def problem(key: str) -> mc.Problem:
    if key not in _PROBLEMS:
        _PROBLEMS[key] = CASES[key].build()
    return _PROBLEMS[key]


def truth(key: str) -> dict[str, float]:
    """The parameters that generated a synthetic problem's data."""
    return dict(problem(key).model.preset("default"))


# --------------------------------------------------------------------------------------------
# Reference points (best-fit of the noisy SDOF, least-squares optimum of calorimetry, the arch's best)
# --------------------------------------------------------------------------------------------
def _lsq_optimum(key: str, starts: int = 8, budget: int = 1500) -> dict[str, Any]:
    """The best point of multi-start least squares (TRF) with a generous budget."""
    from mechcalib.optimizers import LeastSquares

    opt = LeastSquares(n_starts=starts, restart=False, seed=12345)
    res = mc.calibrate(problem(key), opt, max_evals=budget)
    space = problem(key).space
    return {
        "params": res.best_params,
        "loss": res.best_loss,
        "n_evals": res.n_evals,
        # each start's end point (starts ending within 1e-3 of another merge into it)
        "end_points": [
            {"params": space.as_dict(space.to_full(space.from_unit(u[None, :])[0])[0]), "loss": f}
            for u, f in opt.end_points
        ],
        "how": f"multi-start TRF least squares, {starts} Latin-hypercube starts, {res.n_evals} simulations",
    }


def _arch_best() -> dict[str, Any]:
    # the rerun on the model with its default inertia scaling (arch_v2); the first arch study used real masses
    runs = json.loads((RESULTS / "arch_v2.summary.json").read_text())["runs"]
    mine = [r for r in runs if r["geometry"] == "pulatsu" and r["objective"] == 1]
    best = min(mine, key=lambda r: min(r["step_losses"]))
    return {
        "params": best["best_params"],
        "loss": min(best["step_losses"]),
        "how": f"best of the arch rerun's {len(mine)} objective-1 runs on Pulatsu's geometry "
        f"({best['name']}, arch_v2.summary.json)",
    }


def references(keys: list[str]) -> dict[str, Any]:
    """The reference of each problem that needs one, computed once and kept in efficiency.reference.json."""
    refs = json.loads(REFERENCE.read_text()) if REFERENCE.exists() else {}
    changed = False
    for key in keys:
        if key in refs:
            continue
        if key in ("sdof5", "calorimetry", "sdof7"):
            refs[key] = _lsq_optimum(key)
        elif key == "arch":
            refs[key] = _arch_best()
        else:
            continue
        changed = True
    if changed:
        REFERENCE.write_text(json.dumps(refs, indent=2) + "\n")
    return refs


def target_fn(key: str, refs: dict[str, Any]) -> tuple[Callable[[dict[str, float], float], bool], float | None]:
    """``met(params, loss)`` of a problem and, for a loss target, the loss threshold."""
    case = CASES[key]
    prob = problem(key)
    free = list(prob.space.free_names)
    if case.target == "loss":
        if key == "calorimetry":
            # RMSE within tol of the optimum's: loss <= (1 + tol)^2 * optimum loss (L2 = n * RMSE^2)
            thr = (1.0 + case.tol) ** 2 * refs[key]["loss"]
        else:
            thr = (1.0 + case.tol) * refs[key]["loss"]
        return (lambda params, loss: loss <= thr), thr
    point = truth(key) if case.target == "truth" else refs[key]["params"]
    ref = np.array([point[k] for k in free])

    def met(params: dict[str, float], loss: float) -> bool:
        x = np.array([params[k] for k in free])
        return bool(np.max(np.abs(x - ref) / np.abs(ref)) < case.tol)

    return met, None


def rel_error(key: str, params: dict[str, float], refs: dict[str, Any]) -> float:
    """Largest relative parameter error of ``params`` against the problem's truth or reference point."""
    case = CASES[key]
    point = truth(key) if case.target == "truth" else refs[key]["params"]
    free = list(problem(key).space.free_names)
    return max(abs(params[k] - point[k]) / abs(point[k]) for k in free)


# --------------------------------------------------------------------------------------------
# Peers: scipy and nevergrad driven through ask/tell (every simulation through calibrate and the store)
# --------------------------------------------------------------------------------------------
class _Stop(BaseException):
    """Raised inside a peer's objective function to end its thread (the run stopped)."""


class PeerBridge(Optimizer):
    """A callback-style optimiser (scipy's ``dual_annealing``, ``differential_evolution``, nevergrad's
    ``NGOpt``) run in a worker thread over the unit cube; each call of its objective becomes one ``ask``.

    The peers are deterministic given their seed and the losses, so a resumed run (calibrate with
    ``checkpoint_every=None``: the thread cannot be checkpointed) replays from the start, answered from the
    store. Failed simulations (``inf``) are given ``1e300``. Call :meth:`close` after the run.
    """

    name: ClassVar[str] = "peer"
    PEERS: ClassVar[tuple[str, ...]] = ("dual_annealing", "scipy_de", "ngopt")

    def __init__(self, *, peer: str, budget: int, seed: SeedLike = None) -> None:
        super().__init__(seed=seed)
        if peer not in self.PEERS:
            raise ValueError(f"peer must be one of {self.PEERS}, got {peer!r}")
        self.peer = peer
        self.budget = int(budget)

    def _init_state(self) -> None:
        self._req: queue.Queue = queue.Queue()
        self._resp: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()
        self._next = self._req.get()

    def _fun(self, U: np.ndarray) -> np.ndarray:
        self._req.put(np.clip(np.atleast_2d(np.asarray(U, float)), 0.0, 1.0))
        f = self._resp.get()
        if f is None:
            raise _Stop
        return np.where(np.isfinite(f), f, 1e300)

    def _main(self) -> None:
        try:
            run_peer(self.peer, self._fun, int(self.dim or 0), self.budget, int(self.seed or 0))
        except _Stop:
            return
        except Exception as exc:  # reported by the next ask
            self._error = exc
        self._req.put(None)

    @property
    def converged(self) -> bool:
        # a peer that ended by an error has not converged: the next ask raises it
        return self.dim is not None and self._next is None and self._error is None

    def _ask(self) -> np.ndarray:
        if self._error is not None:
            raise RuntimeError(f"peer {self.peer} failed: {self._error}") from self._error
        return self._next

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        self._resp.put(np.asarray(f, float))
        self._next = self._req.get()

    def _next_batch_size(self) -> int:
        return 0 if self._next is None else int(self._next.shape[0])

    def close(self) -> None:
        if self.dim is not None and self._thread.is_alive():
            self._resp.put(None)
            self._thread.join(timeout=10)


def run_peer(peer: str, fun: Callable[[np.ndarray], np.ndarray], d: int, budget: int, seed: int) -> None:
    """Run one peer on ``fun`` (``(k, d)`` unit-cube points -> ``(k,)`` losses) with ``budget`` evaluations."""
    bounds = [(0.0, 1.0)] * d
    if peer == "dual_annealing":
        from scipy.optimize import dual_annealing

        dual_annealing(lambda x: float(fun(x[None, :])[0]), bounds, maxfun=budget, rng=seed)
    elif peer == "scipy_de":
        from scipy.optimize import differential_evolution

        pop = 15 * d  # scipy's default popsize 15 (per dimension)
        differential_evolution(
            lambda x: fun(np.atleast_2d(x.T)),
            bounds,
            maxiter=max(1, budget // pop - 1),
            rng=seed,
            vectorized=True,
            updating="deferred",
        )
    elif peer == "ngopt":
        run_ngopt(fun, d, budget, seed)
    else:  # pragma: no cover - checked by PeerBridge
        raise ValueError(peer)


#: the Python that runs ``ngopt_worker.py``: this one, or that of an environment with nevergrad (``--peer-python``)
PEER_PYTHON = [sys.executable]
NGOPT_WORKER = Path(__file__).resolve().parent / "ngopt_worker.py"


def peer_environment() -> dict[str, str]:
    """nevergrad's and numpy's versions where NGOpt runs (``{}`` if nevergrad is not there)."""
    r = subprocess.run(
        [PEER_PYTHON[0], "-c", "import json, nevergrad, numpy; print(json.dumps("
         "{'nevergrad': nevergrad.__version__, 'numpy': numpy.__version__}))"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return json.loads(r.stdout) if r.returncode == 0 else {}


def run_ngopt(fun: Callable[[np.ndarray], np.ndarray], d: int, budget: int, seed: int) -> None:
    """NGOpt in a child process (``ngopt_worker.py`` under :data:`PEER_PYTHON`), one point per line."""
    cmd = [PEER_PYTHON[0], str(NGOPT_WORKER), "--dim", str(d), "--budget", str(budget), "--seed", str(seed)]
    # stderr to a file: a pipe nobody reads could fill and stall the worker
    with (
        tempfile.TemporaryFile("w+") as errf,
        subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf, text=True) as proc,
    ):
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdout.readline()  # the versions
            while True:
                line = proc.stdout.readline()
                if not line or json.loads(line) == "done":
                    break
                loss = float(fun(np.asarray(json.loads(line), float)[None, :])[0])
                proc.stdin.write(json.dumps(loss) + "\n")
                proc.stdin.flush()
        finally:
            with contextlib.suppress(OSError):  # the worker is gone: its status and message say why
                proc.stdin.close()
            if proc.wait(timeout=30) != 0:
                errf.seek(0)
                err = errf.read().strip().splitlines()
                raise RuntimeError(
                    f"the NGOpt worker ({PEER_PYTHON[0]}) exited with status {proc.returncode}: "
                    f"{err[-1] if err else '(no message)'}"
                )


# --------------------------------------------------------------------------------------------
# Methods
# --------------------------------------------------------------------------------------------
#: label -> (kind, description); kind "auto" | "lsq" | "meta" | "peer" chooses the budget
METHODS: dict[str, tuple[str, str]] = {
    "auto": ("auto", "mechcalib auto (default settings; its budget is the problem's max_evals)"),
    "lsq-trf": ("lsq", "trust-region reflective least squares, one Latin-hypercube start, random restarts"),
    "lsq-lm": ("lsq", "Levenberg-Marquardt (cosine transform), one start, random restarts"),
    "lsq": ("lsq", "multi-start TRF: 5 Latin-hypercube starts, then random restarts"),
    "cmaes": ("meta", "CMA-ES (pycma), sigma0 0.3, IPOP restarts"),
    "iabc": ("meta", "I-ABC, Ding et al. (2021) preset ding2021 (group 50)"),
    "tbpso": ("meta", "TBPSO, Kibriya et al. (2023) preset, swarm 50, inertia over the budget, trust cap 1"),
    "pso": ("meta", "PSO, Kibriya et al. (2023) preset, swarm 50, inertia over the budget"),
    "ga": ("meta", "GA, Kibriya et al. (2023) preset kibriya2023 (population 10)"),
    "grade": ("meta", "GRADE, Mares et al. (2016) preset mares2016"),
    "de": ("meta", "mechcalib DE (defaults)"),
    "dual_annealing": ("peer", "scipy dual_annealing (defaults, maxfun = budget)"),
    "scipy_de": ("peer", "scipy differential_evolution (defaults, vectorised, maxiter from the budget)"),
    "ngopt": ("peer", "nevergrad NGOpt (budget given, one worker)"),
}
PEER_LABELS = ("dual_annealing", "scipy_de", "ngopt")


def budget_of(key: str, method: str) -> int:
    case, kind = CASES[key], METHODS[method][0]
    return {"auto": case.auto_budget, "lsq": case.lsq_budget}.get(kind, case.budget)


def make_method(method: str, seed: int, budget: int) -> Optimizer:
    """A fresh optimiser of ``method`` with ``seed`` for a run of ``budget`` evaluations."""
    iters = max(1, budget // 50 - 1)
    if method in PEER_LABELS:
        return PeerBridge(peer=method, budget=budget, seed=seed)
    if method == "iabc":
        return make_optimizer("iabc", "ding2021", seed=seed)
    if method == "tbpso":
        return make_optimizer("tbpso", "kibriya2023", seed=seed, swarm_size=50, max_iter=iters, trust_limit=1.0)
    if method == "pso":
        return make_optimizer("pso", "kibriya2023", seed=seed, swarm_size=50, max_iter=iters)
    if method == "ga":
        return make_optimizer("ga", "kibriya2023", seed=seed)
    if method == "grade":
        return make_optimizer("grade", "mares2016", seed=seed)
    return make_optimizer(method, seed=seed)


def finite(v: float) -> float | None:
    return v if math.isfinite(v) else None
