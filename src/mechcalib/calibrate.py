"""The calibration loop: ask, evaluate, tell, record, until a termination rule fires."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import ConfigurationError
from .optimizers._base import Optimizer
from .problem import EvaluationBatch, ProblemLike

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Termination:
    """When to stop. Any rule that fires stops the run; at least one must be set.

    Args:
        max_evals: evaluation budget; the last batch is cut so the budget is never exceeded (points cut off
            are not evaluated and the optimiser is not told).
        max_iters: number of ask/tell batches.
        target: stop once the best loss is ``<= target``.
        patience: stop after this many batches without an improvement larger than ``min_delta``.
        min_delta: improvement threshold of ``patience``.
    """

    max_evals: int | None = None
    max_iters: int | None = None
    target: float | None = None
    patience: int | None = None
    min_delta: float = 0.0

    def __post_init__(self) -> None:
        if self.max_evals is None and self.max_iters is None and self.patience is None and self.target is None:
            raise ConfigurationError(
                "a Termination needs at least one rule (max_evals, max_iters, target or patience), got none; "
                "for example Termination(max_evals=1000)"
            )
        for k in ("max_evals", "max_iters", "patience"):
            v = getattr(self, k)
            if v is not None and (not isinstance(v, int) or v < 1):
                raise ConfigurationError(f"Termination: {k} must be a positive integer or None, got {v!r}")
        if self.target is None and self.max_evals is None and self.max_iters is None:
            log.debug("termination by patience only")


@dataclass
class History:
    """Every evaluation of a run, in order.

    ``U``: unit-cube points ``(N, dim)``; ``X``: free parameter values ``(N, dim)``; ``losses``: the loss
    told to the optimiser; ``status``/``errors``: failure records; ``batch``: the batch index of each
    evaluation; ``told``: False for points of a final batch cut by the budget. ``best_per_batch``: the
    best loss so far after each batch.
    """

    U: list[np.ndarray] = field(default_factory=list)
    X: list[np.ndarray] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    batch: list[int] = field(default_factory=list)
    told: list[bool] = field(default_factory=list)
    best_per_batch: list[float] = field(default_factory=list)
    evals_per_batch: list[int] = field(default_factory=list)

    def add(self, U: np.ndarray, X: np.ndarray, res: EvaluationBatch, batch: int, told: bool) -> None:
        self.U.extend(U)
        self.X.extend(X)
        self.losses.extend(res.losses.tolist())
        self.status.extend(res.status)
        self.errors.extend(res.errors)
        self.batch.extend([batch] * len(U))
        self.told.extend([told] * len(U))
        best = min(self.losses) if self.losses else math.inf
        self.best_per_batch.append(best)
        self.evals_per_batch.append(len(self.losses))

    @property
    def n_evals(self) -> int:
        return len(self.losses)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "U": np.array(self.U),
            "X": np.array(self.X),
            "losses": np.array(self.losses),
            "batch": np.array(self.batch),
        }

    def evals_to_reach(self, threshold: float) -> int | None:
        """The number of evaluations after which the best loss first fell to ``<= threshold``."""
        for i, f in enumerate(self.losses):
            if f <= threshold:
                return i + 1
        return None


@dataclass
class Result:
    """Outcome of a calibration.

    ``best_x``: best free parameters ``(dim,)``; ``best_params``: every parameter (fixed ones included) by
    name; ``alternatives``: the best distinct parameter sets found (seed 000 reports five), as
    ``(params, loss)`` pairs, best first.
    """

    best_x: np.ndarray
    best_loss: float
    best_params: dict[str, float]
    history: History
    alternatives: list[tuple[dict[str, float], float]]
    n_evals: int
    n_batches: int
    n_failed: int
    stop_reason: str
    seconds: float
    optimizer: str
    settings: dict[str, Any]

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={v:.6g}" for k, v in self.best_params.items())
        return (
            f"Result(best_loss={self.best_loss:.6g}, {p}, n_evals={self.n_evals}, "
            f"stop_reason={self.stop_reason!r})"
        )


def _alternatives(problem: ProblemLike, hist: History, k: int, min_distance: float) -> list:
    """The ``k`` best evaluations that are at least ``min_distance`` apart in the unit cube."""
    if not hist.losses:
        return []
    losses = np.array(hist.losses)
    U = np.array(hist.U)
    chosen: list[int] = []
    for i in np.argsort(losses, kind="stable"):
        if not np.isfinite(losses[i]):
            break
        if all(np.max(np.abs(U[i] - U[j])) >= min_distance for j in chosen):
            chosen.append(int(i))
        if len(chosen) == k:
            break
    space = problem.space
    return [(space.as_dict(space.to_full(hist.X[i])[0]), float(losses[i])) for i in chosen]


def calibrate(
    problem: ProblemLike,
    optimizer: Optimizer,
    termination: Termination | None = None,
    *,
    max_evals: int | None = None,
    evaluate: Callable[[np.ndarray], EvaluationBatch] | None = None,
    callback: Callable[[int, Optimizer, History], bool | None] | None = None,
    n_alternatives: int = 5,
    alternative_distance: float = 0.02,
) -> Result:
    """Minimise ``problem``'s loss with an ask/tell ``optimizer``.

    Args:
        problem: a :class:`~mechcalib.problem.Problem` or anything with ``space`` and ``evaluate``.
        optimizer: an optimiser instance; it is (re)set up on the problem's dimension.
        termination: stopping rules; ``max_evals=`` is a shortcut for ``Termination(max_evals=...)``.
        evaluate: how a batch of free parameter sets is evaluated (default ``problem.evaluate``; the
            execution layer passes parallel evaluators here).
        callback: called after each batch with ``(batch index, optimizer, history)``; returning True stops.
        n_alternatives: how many distinct good parameter sets to report.
        alternative_distance: minimum unit-cube (max-norm) distance between reported alternatives.
    """
    if termination is None:
        if max_evals is None:
            raise ConfigurationError("calibrate needs a termination rule: pass termination=... or max_evals=...")
        termination = Termination(max_evals=max_evals)
    elif max_evals is not None:
        raise ConfigurationError("give either termination or max_evals, not both")
    space = problem.space
    evaluate = evaluate or problem.evaluate
    optimizer.setup(space.dim)
    hist = History()
    t0 = time.perf_counter()
    best, stale, b = math.inf, 0, 0
    reason = "max_iters"
    while True:
        if termination.max_iters is not None and b >= termination.max_iters:
            reason = "max_iters"
            break
        if termination.max_evals is not None and hist.n_evals >= termination.max_evals:
            reason = "max_evals"
            break
        if optimizer.converged:
            reason = "converged"
            break
        U = optimizer.ask()
        n = U.shape[0]
        told = True
        if termination.max_evals is not None and hist.n_evals + n > termination.max_evals:
            n = termination.max_evals - hist.n_evals
            told = False
        X = space.from_unit(U[:n])
        res = evaluate(X)
        hist.add(U[:n], X, res, b, told)
        if told:
            optimizer.tell(U, res.losses)
        b += 1
        cur = hist.best_per_batch[-1]
        if cur < best - termination.min_delta:
            stale = 0
        else:
            stale += 1
        best = min(best, cur)
        if callback is not None and callback(b, optimizer, hist):
            reason = "callback"
            break
        if termination.target is not None and best <= termination.target:
            reason = "target"
            break
        if termination.patience is not None and stale >= termination.patience:
            reason = "patience"
            break
    seconds = time.perf_counter() - t0
    losses = np.array(hist.losses) if hist.losses else np.array([np.inf])
    i = int(np.argmin(losses))
    best_x = np.array(hist.X[i]) if hist.X else np.full(space.dim, np.nan)
    best_params = space.as_dict(space.to_full(best_x)[0]) if hist.X else {}
    return Result(
        best_x=best_x,
        best_loss=float(losses[i]),
        best_params=best_params,
        history=hist,
        alternatives=_alternatives(problem, hist, n_alternatives, alternative_distance),
        n_evals=hist.n_evals,
        n_batches=b,
        n_failed=sum(s != "ok" for s in hist.status),
        stop_reason=reason,
        seconds=seconds,
        optimizer=optimizer.name,
        settings=optimizer.settings(),
    )


def minimize(
    fn: Callable[[np.ndarray], np.ndarray],
    lower,
    upper,
    optimizer: Optimizer,
    termination: Termination | None = None,
    *,
    max_evals: int | None = None,
    vectorized: bool = True,
    **kw: Any,
) -> Result:
    """Minimise a plain function over a box: ``fn`` maps ``(n, d)`` points to ``(n,)`` values."""
    from .problem import FunctionProblem

    prob = FunctionProblem.from_bounds(fn, lower, upper, vectorized=vectorized)
    return calibrate(prob, optimizer, termination, max_evals=max_evals, **kw)
