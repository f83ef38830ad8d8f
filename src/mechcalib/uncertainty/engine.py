"""The simulations of an uncertainty analysis, each a run of :func:`~mechcalib.calibrate` in the calibration's
store, so that they are cached, parallelised by the evaluator, persisted and resumed like a calibration:

* ``<run>.polish``: one trust-region least-squares start from the run's best point (:func:`polish`);
* ``<run>.jacobian``: the residuals and their finite-difference Jacobian at the polished point, through the
  one Jacobian implementation of :mod:`mechcalib.optimizers.least_squares` (:class:`JacobianDriver`);
* ``<run>.posterior``: the emcee chain on the Gaussian likelihood (:func:`run_chain`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np

from ..calibrate import Termination, calibrate
from ..core.problem import EvaluationBatch, Problem, ProblemLike, residual_problem
from ..errors import ConfigurationError
from ..optimizers._base import check_choice
from ..optimizers.fd_jacobian import FDJacobian
from ..optimizers.least_squares import LeastSquaresTRF
from ..optimizers.residual import ResidualOptimizer
from .likelihood import LikelihoodProblem
from .sampler import EnsembleSampler


@dataclass
class MeasuredOnly(Problem):
    """A :class:`~mechcalib.core.problem.Problem` whose kept responses hold only the channels its objective
    reads (all the residuals need): the polish and Jacobian runs store those, not every channel of the model
    (a hysteresis model's five 20 000-sample channels are megabytes per evaluation)."""

    def evaluate(self, x_free: np.ndarray) -> EvaluationBatch:
        batch = super().evaluate(x_free)
        for resp in batch.responses:
            for e in self.experiments:
                if isinstance(resp, dict) and isinstance(resp.get(e.name), dict):
                    keep = self.objective._names(e)
                    resp[e.name] = {ch: c for ch, c in resp[e.name].items() if ch in keep}
        return batch


def measured_only(problem: Any) -> Any:
    """``problem`` as :class:`MeasuredOnly` when it is a plain Problem (else unchanged)."""
    if type(problem) is not Problem:
        return problem
    return MeasuredOnly(**{f.name: getattr(problem, f.name) for f in fields(problem)})


class JacobianDriver(ResidualOptimizer):
    """Asks the points of the finite-difference Jacobian at ``x0`` (unit cube) and keeps the residuals and
    the Jacobian (``r``, ``J``) once told; ``converged`` then."""

    name: ClassVar[str] = "jacobian"

    def __init__(self, *, x0: list[float], difference: str = "central", fd_step: float | None = None) -> None:
        super().__init__(seed=0)
        self.x0 = [float(v) for v in x0]
        self.difference = check_choice(self.name, "difference", difference, ("forward", "central"))
        self.fd_step = fd_step
        self._names: tuple[str, ...] = ()

    def prepare_problem(self, problem: ProblemLike, *, max_evals: int | None) -> ProblemLike:
        """Keep every channel of the responses (the residuals at ``x0`` and its difference points)."""
        self._names = tuple(problem.space.free_names)
        source = residual_problem(problem)
        return problem if source is None else source.keeping_responses(True)

    def _init_state(self) -> None:
        u = np.asarray(self.x0, dtype=float)
        self._jac = FDJacobian(u, difference=self.difference, fd_step=self.fd_step, names=self._names)

    @property
    def converged(self) -> bool:
        return self.dim is not None and self._jac.pending() is None

    @property
    def J(self) -> np.ndarray:
        assert self._jac.J is not None
        return self._jac.J

    @property
    def r(self) -> np.ndarray:
        r = self._jac.residuals_at(self._jac.u)
        assert r is not None
        return r

    def _ask(self) -> np.ndarray:
        pts = self._jac.pending()
        assert pts is not None
        return pts

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        R = self._take_residuals()
        if R is None:
            raise ConfigurationError("the Jacobian needs residual vectors; the problem has none")
        self._jac.tell(X, R)

    def _next_batch_size(self) -> int:
        pts = self._jac.pending()
        return 0 if pts is None else len(pts)


@dataclass
class Polished:
    """The polished optimum: unit-cube point ``u``, loss, whether scipy met its tolerances, evaluations."""

    u: np.ndarray
    loss: float
    converged: bool
    reason: str
    n_evals: int
    n_simulated: int


def polish(
    problem: Any, u0: np.ndarray, *, store: Any, run_name: str, budget: int | None = None, evaluator: Any = None
) -> Polished:
    """One TRF least-squares start from ``u0`` in ``run_name`` (budget default ``50 (d + 1)``)."""
    d = problem.space.dim
    # seeded so that the polish is reproducible (a stored polish keeps the seed it was recorded with)
    seed = None if store is not None and store.has_run(run_name) else 0
    opt = LeastSquaresTRF(x0=[list(map(float, u0))], restart=False, seed=seed)
    res = calibrate(
        measured_only(problem),
        opt,
        Termination(max_evals=budget or 50 * (d + 1)),
        store=store,
        run_name=run_name,
        evaluator=evaluator,
        progress=False,
    )
    ends = opt.end_points
    met = opt.tolerances_met
    if ends:
        u, loss = ends[0]
    else:  # cut by the budget inside its start: the best point it reached
        i = int(np.argmin(res.history.losses))
        u, loss = np.asarray(res.history.U[i], dtype=float), res.history.losses[i]
    ok = bool(ends) and res.stop_reason == "converged" and bool(met) and all(met)
    reason = (
        "met its tolerances"
        if ok
        else (
            f"stopped on its evaluation budget ({res.n_evals} evaluations)"
            if res.stop_reason != "converged"
            else "stopped on scipy's evaluation cap (max_nfev) without meeting ftol, xtol or gtol"
        )
    )
    return Polished(u, float(loss), ok, reason, res.n_evals, res.n_simulated)


def jacobian(
    problem: Any, u: np.ndarray, *, store: Any, run_name: str, difference: str = "central", evaluator: Any = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """The residuals ``(m,)`` and their Jacobian ``(m, d)`` at ``u`` (unit cube), and the simulations run."""
    d = problem.space.dim
    drv = JacobianDriver(x0=list(map(float, u)), difference=difference)
    res = calibrate(
        measured_only(problem),
        drv,
        Termination(max_evals=1 + 4 * d),
        store=store,
        run_name=run_name,
        evaluator=evaluator,
        progress=False,
    )
    if not drv.converged:
        raise ConfigurationError(f"the Jacobian run {run_name!r} ended before its points were simulated")
    return drv.r, drv.J, res.n_simulated


@dataclass(frozen=True, kw_only=True)
class ChainSettings:
    """An emcee chain's ensemble size, length, seed (``None``: drawn and recorded) and move."""

    walkers: int
    steps: int
    seed: Any
    move: str


def run_chain(
    problem: Any,
    sigma_res: np.ndarray,
    u0: np.ndarray,
    cov_u: np.ndarray | None,
    *,
    chain: ChainSettings,
    store: Any,
    run_name: str,
    evaluator: Any = None,
    progress: Callable[[int, int], Any] | None = None,
) -> tuple[EnsembleSampler, Any]:
    """The emcee chain of ``chain.steps`` steps on :class:`LikelihoodProblem` (``run_name`` in ``store``)."""
    walkers, steps = chain.walkers, chain.steps
    lp = LikelihoodProblem(problem, tuple(float(s) for s in sigma_res))
    cov = None if cov_u is None else np.where(np.isfinite(cov_u), cov_u, 0.0)
    sampler = EnsembleSampler(
        walkers=walkers,
        move=chain.move,
        x0=list(map(float, u0)),
        init_cov=None if cov is None else cov.tolist(),
        steps=steps,
        seed=chain.seed,
    )

    def callback(b: int, opt: Any, hist: Any) -> None:
        if progress is not None:
            progress(opt.n_steps, steps)

    res = calibrate(
        lp,
        sampler,
        Termination(max_evals=walkers * (steps + 1)),
        store=store,
        run_name=run_name,
        evaluator=evaluator,
        checkpoint_every=None,
        callback=callback,
        n_alternatives=0,
        progress=False,
    )
    if sampler.n_steps < steps:
        raise ConfigurationError(
            f"the chain {run_name!r} stopped after {sampler.n_steps} of {steps} steps ({res.stop_reason})"
        )
    return sampler, res


def finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
