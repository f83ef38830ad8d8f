"""The residual protocol: optimisers that read residual vectors, not only losses.

A least-squares method needs each evaluation's residual vector ``r`` (the loss is ``sum(r**2)`` for a
sum-of-squares objective). :func:`~mechcalib.calibrate` gives it to an optimiser that subclasses
:class:`ResidualOptimizer`, on a problem with the residual capability of
:class:`~mechcalib.core.problem.ProblemBase` (``has_residuals``, ``residuals_from_responses``,
``keeping_responses``):

1. before the run, ``problem = optimizer.prepare_problem(problem, max_evals=...)``: the optimiser checks the
   problem and the budget, and returns the problem to run (by default one that keeps the measured channels of
   its responses, which is what the residuals read);
2. after each batch, ``optimizer.tell(U, losses, residuals=R)`` with ``R = problem.residuals_from_responses(...)``
   (``(n, m)``, NaN rows for failed sets), or ``residuals=None`` when the problem has none.

Direct ask/tell use may tell residuals the same way. A subclass reads the told residuals of the batch in its
``_tell`` through :meth:`ResidualOptimizer._take_residuals`.
"""

from __future__ import annotations

import numpy as np

from ..core.problem import ProblemLike, residual_problem
from ..errors import ConfigurationError
from ._base import Optimizer


class ResidualOptimizer(Optimizer):
    """Base class of the optimisers that are told residual vectors with the losses (module docstring)."""

    _told: np.ndarray | None = None
    _mode: str | None = None  # "residuals" or "loss": what the run's first tell gave

    def prepare_problem(self, problem: ProblemLike, *, max_evals: int | None) -> ProblemLike:
        """Check ``problem`` and the run's budget (``max_evals``, ``None``: none) before a run and return the
        problem to run. Default: a problem with residuals made to keep the measured channels of its responses
        (what its residuals are computed from); any other problem unchanged."""
        source = residual_problem(problem)
        return problem if source is None else source.keeping_responses("measured")

    def tell(self, X: np.ndarray, f: np.ndarray, residuals: np.ndarray | None = None) -> None:
        """As :meth:`Optimizer.tell`, with the residuals ``(n, m)`` of the batch (NaN rows: failed), or
        ``None`` when the problem has no residual vectors."""
        self._told = None if residuals is None else np.atleast_2d(np.asarray(residuals, dtype=float))
        super().tell(X, f)

    def setup(self, dim: int) -> ResidualOptimizer:
        self._told = None
        super().setup(dim)
        return self

    def _take_residuals(self) -> np.ndarray | None:
        """The residuals told with the batch ``_tell`` receives (``None``: told losses only), taken once."""
        R, self._told = self._told, None
        return R

    def _take_told(self) -> np.ndarray | None:
        """:meth:`_take_residuals`, holding a run to what its first tell gave (``self._mode``: ``"residuals"``
        or ``"loss"``): a run that switches between residuals and losses alone is refused."""
        R = self._take_residuals()
        mode = "loss" if R is None else "residuals"
        if self._mode is None:
            self._mode = mode
        elif mode != self._mode:
            raise ConfigurationError(
                f"{self.name}: told {'no residuals' if R is None else 'residuals'} after a run told "
                f"{self._mode}; tell residuals with every batch or with none"
            )
        return R
