"""``auto``'s smoothness rule: least squares or CMA-ES, from forward-difference Jacobians at one point.

The first look compares the Jacobians with steps ``1e-6`` (least squares' own) and ``1e-3`` (unit cube). For a
smooth model they agree to about the curvature times the coarse step; noise of size ``s`` puts ``s / h`` into
the one with step ``h``; a kink or a plateau makes them disagree. Where they differ, a second look with step
``1e-4`` tells the causes apart: agreeing with the coarse one, the fine one carried noise (an integrator's
tolerance), and least squares differences with ``1e-4``; agreeing with the fine one, the coarse one carried
curvature (its error grows with the step), and least squares keeps its own step; agreeing with neither, the
model is noisy or non-smooth at every scale, and CMA-ES takes over. Each look returns the choice, its reason and
the measured values that ``auto`` records.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .differences import fd_points

#: forward-difference steps (unit cube): least squares' own, the coarse one, and the second look's
H_FINE = 1e-6
H_COARSE = 1e-3
H_MID = 1e-4

#: (choice: "lsq", "recheck" or "cmaes"; the reason; the measured values)
Verdict = tuple[str, str, dict[str, Any]]


def jacobian_mismatch(memo: dict, u: np.ndarray, fine: float = H_FINE, coarse: float = H_COARSE) -> float:
    """``||J_fine - J_coarse||_F / ||J_coarse||_F`` at ``u`` from the told residuals in ``memo`` (point bytes ->
    (loss, residuals or ``None``)), ``J_fine`` with step ``fine`` and ``J_coarse`` with step ``coarse``
    (``inf`` when a difference point failed or ``J_coarse`` is zero)."""
    r0 = memo[u.tobytes()][1]
    cols = []
    for pts in (fd_points(u, fine), fd_points(u, coarse)):
        J = []
        for i, p in enumerate(pts):
            r = memo[p.tobytes()][1]
            if r is None or r0 is None:
                return math.inf
            J.append((r - r0) / (p[i] - u[i]))
        cols.append(np.array(J).T)
    jf, jc = cols
    den = float(np.linalg.norm(jc))
    if den == 0.0:
        return math.inf
    return float(np.linalg.norm(jf - jc)) / den


def first_look(memo: dict, u: np.ndarray, tol: float, *, recheck: bool) -> Verdict:
    """The fine against the coarse Jacobian; ``recheck``: a second look is affordable."""
    mis = jacobian_mismatch(memo, u)
    if mis <= tol:
        return "lsq", f"smooth model: the Jacobians with two steps differ by {mis:.3g} (relative)", _v(mis, tol)
    if math.isfinite(mis) and recheck:
        d = len(u)
        return (
            "recheck",
            f"the Jacobians with steps {H_FINE:g} and {H_COARSE:g} differ by {mis:.3g} (relative), more than "
            f"smooth_tol={tol:g}: a third with step {H_MID:g} ({d} simulations)",
            _v(mis, tol),
        )
    return (
        "cmaes",
        f"noisy or non-smooth model: forward Jacobians with steps {H_FINE:g} and {H_COARSE:g} differ by "
        f"{mis:.3g} (relative), more than smooth_tol={tol:g}",
        _v(finite(mis), tol),
    )


def second_look(memo: dict, u: np.ndarray, tol: float) -> Verdict:
    """The middle Jacobian against the coarse one, then against the fine one (module docstring)."""
    mis = jacobian_mismatch(memo, u, H_MID)
    if mis <= tol:
        return (
            "lsq",
            f"smooth at step {H_MID:g}: its Jacobian and the one with step {H_COARSE:g} differ by {mis:.3g} "
            f"(relative); least squares differences with step {H_MID:g}",
            {**_v(mis, tol), "fd_step": H_MID},
        )
    near = jacobian_mismatch(memo, u, H_FINE, H_MID)
    if near <= tol:
        return (
            "lsq",
            f"smooth: the Jacobians with steps {H_FINE:g} and {H_MID:g} differ by {near:.3g} (relative); the one "
            f"with step {H_COARSE:g} differs from them by curvature ({mis:.3g})",
            {**_v(near, tol), "coarse_mismatch": finite(mis)},
        )
    return (
        "cmaes",
        f"noisy or non-smooth model: the Jacobians with steps {H_MID:g} and {H_COARSE:g} differ by "
        f"{mis:.3g} (relative) too, more than smooth_tol={tol:g}",
        _v(finite(mis), tol),
    )


def finite(v: float) -> float | None:
    """A measured value for a JSON record (``None`` for ``inf``: a failed difference point or a zero Jacobian)."""
    return v if math.isfinite(v) else None


def _v(mis: float | None, tol: float) -> dict[str, Any]:
    return {"mismatch": mis, "smooth_tol": tol}
