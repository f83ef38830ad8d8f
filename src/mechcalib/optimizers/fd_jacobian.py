"""The finite-difference Jacobian of the least-squares optimisers, asked batch by batch by a caller that sends
its simulations elsewhere (the uncertainty engine through :func:`~mechcalib.calibrate`; a test with a function):
the points, steps and failure rules are :class:`~mechcalib.optimizers.least_squares.LeastSquares`' own, since
it runs the same code."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ConfigurationError
from .least_squares import LeastSquares, _Need


class FDJacobian:
    """The finite-difference Jacobian ``(m, d)`` at the unit-cube point ``u``, asked batch by batch (push
    style, for a caller that sends simulations through :func:`~mechcalib.calibrate`): :meth:`pending` gives
    the next batch of unit-cube points (``None`` once :attr:`J` is ready), :meth:`tell` their residuals
    ``(k, m)`` (NaN rows: failed). The points, the steps and the failure rules are those of the optimisers
    of this module (they run the same code)."""

    def __init__(
        self, u: np.ndarray, *, difference: str = "forward", fd_step: float | None = None, names: tuple = ()
    ) -> None:
        self.u = np.asarray(u, dtype=float)
        self._opt = LeastSquares(difference=difference, fd_step=fd_step, n_starts=1, seed=0)
        self._opt.setup(self.u.shape[0])
        self._opt._names = tuple(names)
        self.J: np.ndarray | None = None

    def pending(self) -> np.ndarray | None:
        table = self._opt._table
        key = self.u.tobytes()
        if key not in table:
            return self.u[None, :].copy()
        if table[key] is None:
            raise ConfigurationError(f"the residuals at u={self.u.tolist()} failed; no Jacobian there")
        if self.J is None:
            try:
                self.J = self._opt._jacobian(self.u)
            except _Need as need:
                return np.array(need.points)
        return None

    def tell(self, points: np.ndarray, R: np.ndarray) -> None:
        R = np.atleast_2d(np.asarray(R, dtype=float))
        for p, r in zip(np.atleast_2d(points), R, strict=True):
            self._opt._table[np.asarray(p, float).tobytes()] = r.copy() if np.all(np.isfinite(r)) else None
        self._opt._m = R.shape[1]

    def residuals_at(self, u: np.ndarray) -> np.ndarray | None:
        """The residuals told at ``u`` (``None``: failed or not told)."""
        return self._opt._table.get(np.asarray(u, float).tobytes())


def batched_jacobian(
    fn: Any, u: np.ndarray, *, difference: str = "forward", fd_step: float | None = None
) -> np.ndarray:
    """The finite-difference Jacobian ``(m, d)`` at the unit-cube point ``u`` of ``fn``, which maps ``(k, d)``
    unit-cube points to ``(k, m)`` residuals (NaN rows: failed), exactly as the optimisers of this module
    take it: ``fn`` is called once at ``u``, once on the whole batch of difference points, and once more
    on the steps replacing failed ones, if any."""
    jac = FDJacobian(u, difference=difference, fd_step=fd_step)
    try:
        while (points := jac.pending()) is not None:
            jac.tell(points, fn(points))
    except ConfigurationError as exc:
        raise ConfigurationError(f"batched_jacobian: {exc}") from None
    assert jac.J is not None
    return jac.J
