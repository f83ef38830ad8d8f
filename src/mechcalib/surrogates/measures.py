"""Error measures of Mareš et al. (2016) (eq. 15, section 8) and measured curves on a strategy's grid."""

from __future__ import annotations

import numpy as np


def relative_errors(true: np.ndarray, pred: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Eq. 15: ``Σ_i |x_ij - x̂_ij| / (|D| (max_train x_j - min_train x_j))`` per column ``j``.

    Args:
        true, pred: ``(n, q)`` true and identified values (parameters, or responses for ``ε̂(α)``).
        train: ``(N, q)`` the training values that give each column's range.

    Returns:
        ``(q,)`` errors (fractions; NaN for a column whose training range is zero).
    """
    true, pred, train = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (true, pred, train))
    span = np.ptp(train, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(span > 0, np.mean(np.abs(true - pred), axis=0) / span, np.nan)


def response_error(true: np.ndarray, pred: np.ndarray, train: np.ndarray, *, min_span: float = 0.01) -> float:
    """``ε̂(α)``: eq. 15 applied to every response component and averaged over the components (section 8).

    Components whose training range is below ``min_span`` times the largest range are left out: on a grid
    that starts in the dormant period their range is ~1e-4, and dividing by it would let errors of 1e-4 in
    α dominate the average. ``min_span=0`` averages over every component with a non-zero range.
    """
    train = np.atleast_2d(np.asarray(train, dtype=float))
    span = np.ptp(train, axis=0)
    keep = span > min_span * span.max() if span.max() > 0 else span > 0
    if not keep.any():
        return float("nan")
    t = np.atleast_2d(np.asarray(true, dtype=float))[:, keep]
    p = np.atleast_2d(np.asarray(pred, dtype=float))[:, keep]
    return float(np.nanmean(relative_errors(t, p, train[:, keep])))


def curve_on_grid(t: np.ndarray, y: np.ndarray, grid: np.ndarray, *, origin: float | None = 0.0) -> np.ndarray:
    """A measured curve on a strategy's grid (section 9): linear interpolation, the last measured value held
    after the last measurement, and (with ``origin``) the point ``(origin, 0)`` added before the first
    measurement so that the curve starts from zero at the onset."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    order = np.argsort(t, kind="stable")
    t, y = t[order], y[order]
    if origin is not None and t[0] > origin:
        t, y = np.concatenate([[origin], t]), np.concatenate([[0.0], y])
    return np.interp(np.asarray(grid, dtype=float), t, y, left=0.0 if origin is not None else y[0], right=y[-1])
