"""The records of a calibration: its termination rules, its history, its result, its persistence settings."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.problem import EvaluationBatch, ProblemLike
from ..errors import ConfigurationError
from ..storage.base import Store

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
    name; ``alternatives``: the best distinct parameter sets found (Kibriya et al. (2023) reports five), as
    ``(params, loss)`` pairs, best first. ``run_name``: the run's name in the store (``None`` without
    one); ``n_simulated``, ``n_cached``, ``n_replayed``: how many of the evaluations were simulated by
    this call, reused from the cache, or read back from the store on resume. ``choices``: the decisions the
    method recorded (:attr:`~mechcalib.optimizers._base.Optimizer.choices`; ``auto``'s design, starts,
    fallback rule and phase boundaries), also stored in the run's record.
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
    run_name: str | None = None
    n_simulated: int = 0
    n_cached: int = 0
    n_replayed: int = 0
    choices: list[dict[str, Any]] = field(default_factory=list)
    free_names: tuple[str, ...] = ()

    def to_dataframe(self) -> Any:
        """The run's evaluations as a pandas ``DataFrame`` (pandas, a core dependency, is imported here):
        one row per evaluation in order, columns ``evaluation``, ``batch``, the free parameters by name,
        ``loss`` (the loss the optimiser was told), ``status``, ``error`` and ``told`` (False for points of a
        last batch cut by the budget)."""
        import pandas as pd

        h = self.history
        X = np.array(h.X, dtype=float).reshape(len(h.X), -1)
        names = list(self.free_names) or [f"x{i}" for i in range(X.shape[1])]
        cols: dict[str, Any] = {"evaluation": np.arange(h.n_evals), "batch": np.array(h.batch, dtype=int)}
        cols |= {n: X[:, i] for i, n in enumerate(names)}
        cols |= {"loss": np.array(h.losses, dtype=float), "status": h.status, "error": h.errors, "told": h.told}
        return pd.DataFrame(cols)

    def _repr_html_(self) -> str:
        from ..display import result_html

        return result_html(self)

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={v:.6g}" for k, v in self.best_params.items())
        return f"Result(best_loss={self.best_loss:.6g}, {p}, n_evals={self.n_evals}, stop_reason={self.stop_reason!r})"


def _alternatives(problem: ProblemLike, hist: History, k: int, min_distance: float) -> list:
    """The ``k`` best evaluations that are at least ``min_distance`` apart in the unit cube."""
    if not hist.losses or k <= 0:
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


@dataclass(frozen=True)
class Persistence:
    """How a run is recorded: :func:`calibrate`'s ``store``, ``run_name``, ``config``, ``resume``, ``cache`` and
    ``checkpoint_every`` (documented there), grouped; ``checkpoint_every`` is checked here."""

    store: Store | str | os.PathLike[str] | None = None
    run_name: str | None = None
    config: Mapping[str, Any] | None = None
    resume: bool | str = True
    cache: bool | None = None
    checkpoint_every: int | None = 1

    def __post_init__(self) -> None:
        ce = self.checkpoint_every
        if ce is not None and (isinstance(ce, bool) or not isinstance(ce, int) or ce < 0):
            raise ConfigurationError(f"checkpoint_every must be an integer >= 0 or None, got {ce!r}")
