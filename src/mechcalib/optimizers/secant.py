"""Secant (Broyden) Jacobians for Levenberg-Marquardt with one simulation slot.

A forward-difference Jacobian costs ``d`` simulations; with one slot they run one after another, so an LM
iteration costs ``d + 1``. The secant version of LM (Madsen, Nielsen and Tingleff 2004, section 3.4) keeps the
Jacobian from one difference evaluation and corrects it with Broyden's rank-one update along every step tried
(``B += (y - B s) s^T / s^T s``, ``s`` the step, ``y`` the change of the residuals), so an iteration costs the
trial point alone. The model degrades away from the difference point, so it is taken again by differences:
after ``max_updates`` updates; at the next accepted point after an iteration on a difference Jacobian needed
more than ``max_rejected`` rejected trials; and, on a secant Jacobian, before a trial beyond ``max_rejected``
rejected ones (:meth:`Secant.misleads`: the driver starts again from the last accepted point, instead of
letting scipy shrink its step on a model that misled it until its ``xtol`` ends the run). MINPACK's tolerances
met on a secant Jacobian prove nothing: the start then goes on from its end with a difference Jacobian, which
confirms the end or moves on (:class:`Secant` only keeps the model; the driver is
:class:`~mechcalib.optimizers.least_squares.LeastSquares`).

All of it is a deterministic function of the told residuals, so the replay of a start (the ask/tell driver
re-runs scipy from its start) rebuilds the same Jacobians.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: secant updates before a difference Jacobian is taken again
MAX_UPDATES = 8
#: rejected trials in one LM iteration after which the next Jacobian is taken by differences
MAX_REJECTED = 1


class Secant:
    """The Jacobian model of one LM run (one :func:`scipy.optimize.leastsq` call of a replay).

    Call :meth:`told` with every residual vector the run is given (in order), :meth:`jacobian` where MINPACK
    asks a Jacobian (at each accepted point).
    """

    def __init__(self, max_updates: int = MAX_UPDATES, max_rejected: int = MAX_REJECTED) -> None:
        self.max_updates, self.max_rejected = max_updates, max_rejected
        self._ref: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (u, r, B) of the last Jacobian
        self._trials: list[tuple[np.ndarray, np.ndarray]] = []  # the points tried since, with their residuals
        self.updates = 0  # secant Jacobians since the last difference one
        self.at: np.ndarray | None = None  # the caller's coordinates of the last Jacobian's point

    @property
    def exact(self) -> bool:
        """Whether the last Jacobian given was taken by differences."""
        return self.updates == 0

    def misleads(self) -> bool:
        """Whether the next trial should not be asked: the Jacobian is a secant one and ``max_rejected + 1``
        trials since it were rejected (scipy would go on shrinking its step on a model that misled it; a
        difference Jacobian at the last accepted point, :attr:`at`, is cheaper)."""
        return not self.exact and len(self._trials) > self.max_rejected

    def told(self, u: np.ndarray, r: np.ndarray | None) -> None:
        """A residual vector the run was given at ``u`` (``None``: the simulation failed; no secant information)."""
        if r is not None:
            self._trials.append((u.copy(), r.copy()))

    def jacobian(
        self,
        u: np.ndarray,
        r: np.ndarray,
        differences: Callable[[], np.ndarray],
        at: np.ndarray | None = None,
        differences_now: bool = False,
    ) -> np.ndarray:
        """The Jacobian ``(m, d)`` at the accepted point ``u`` (residuals ``r``; ``at``: the caller's coordinates
        of it, kept for :meth:`misleads`): Broyden's update of the last one along the steps tried since, or
        ``differences()`` at the first point, after more than ``max_rejected`` rejected trials (only possible on a
        difference Jacobian: a secant one :meth:`misleads` first), after ``max_updates`` updates, or where the
        caller says (``differences_now``)."""
        if self._ref is not None and np.array_equal(u, self._ref[0]):  # asked again where it was (leastsq checks
            self._trials = []  # its Jacobian's shape with a call at the start): the same, no update
            return self._ref[2].copy()
        rejected = max(len(self._trials) - 1, 0)
        if differences_now or self._ref is None or rejected > self.max_rejected or self.updates >= self.max_updates:
            B = np.array(differences(), dtype=float)
            self.updates = 0
        else:
            u0, r0, B = self._ref
            B = B.copy()
            for ut, rt in self._trials:
                s = ut - u0
                ss = float(s @ s)
                if ss > 0.0:
                    B += np.outer(rt - r0 - B @ s, s) / ss
            self.updates += 1
        self._ref = (u.copy(), r.copy(), B)
        self._trials = []
        self.at = None if at is None else np.array(at, dtype=float)
        return B.copy()
