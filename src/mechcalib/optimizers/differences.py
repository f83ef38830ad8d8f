"""Finite-difference points in the unit cube, shared by least squares and the starts it runs in lockstep."""

from __future__ import annotations

import numpy as np

__all__ = ["fd_column", "fd_points", "fd_steps", "snap", "stepped"]


def fd_steps(u: np.ndarray, h: float, central: bool) -> list[tuple[float, ...]]:
    """The primary steps of each coordinate: ``(+h, -h)`` (central, both inside ``[0, 1]``) or one step
    (forward: ``+h``, or ``-h`` where ``u_i + h > 1``)."""
    out: list[tuple[float, ...]] = []
    for ui in u:
        if central and ui - h >= 0.0 and ui + h <= 1.0:
            out.append((h, -h))
        else:
            out.append((h,) if ui + h <= 1.0 else (-h,))
    return out


_GRID = 2.0**40


def snap(u: np.ndarray) -> np.ndarray:
    """``u`` rounded to multiples of 2**-40 (about 1e-12; exact in float64): scipy's MINPACK path can differ
    in the last bits from one run to the next (its reductions depend on memory alignment), and the points it
    asks must repeat exactly for a replay to find what was told."""
    return np.round(np.asarray(u, float) * _GRID) / _GRID


def fd_points(u: np.ndarray, h: float, central: bool = False) -> list[np.ndarray]:
    """The difference points of the Jacobian at ``u`` (:func:`fd_steps`), coordinate by coordinate."""
    return [stepped(u, i, s) for i, ss in enumerate(fd_steps(u, h, central)) for s in ss]


def stepped(u: np.ndarray, i: int, s: float) -> np.ndarray:
    p = u.copy()
    p[i] = min(max(u[i] + s, 0.0), 1.0)
    return p


def fd_column(r0: np.ndarray, got: dict[float, np.ndarray | None], u_i: float) -> np.ndarray | None:
    """One Jacobian column from the residuals ``got`` at steps ``{step: r or None (failed)}``: central when
    both sides of a central pair succeeded, else one-sided on the surviving step; ``None``: none did."""
    ok = {s: r for s, r in got.items() if r is not None}
    pos = [s for s in ok if s > 0]
    neg = [s for s in ok if s < 0]
    if pos and neg:
        sp, sn = pos[0], neg[0]
        return (ok[sp] - ok[sn]) / ((u_i + sp) - (u_i + sn))
    if ok:
        s, r = next(iter(ok.items()))
        return (r - r0) / ((u_i + s) - u_i)
    return None
