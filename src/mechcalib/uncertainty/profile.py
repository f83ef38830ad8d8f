"""Profile likelihood of one parameter: the parameter held at each value of a grid, the others re-fitted by
least squares (each grid point a run ``<run>.profile.<name>.<k>`` in the store, started from the polished
optimum), and ``D(v) = 2 (NLL(v) - NLL*)`` with the Gaussian negative log-likelihood of
:mod:`.likelihood`. Its 95 % interval is where ``D <= 3.84`` (chi-square, one degree of freedom; Venzon &
Moolgavkar 1988), read off the grid by linear interpolation; an end of the grid still below 3.84 leaves that
side open (``None``): the data do not bound it within the grid.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..calibrate import Termination, calibrate
from ..errors import ConfigurationError
from ..optimizers.least_squares import LeastSquaresTRF

CHI2_95 = 3.841458820694124


@dataclass
class Profile:
    """``values`` of the parameter, ``deviance`` ``D`` at each, the 95 % interval (``None``: open side)."""

    name: str
    values: np.ndarray
    deviance: np.ndarray
    lower: float | None
    upper: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "values": self.values.tolist(),
            "deviance": [float(x) if math.isfinite(x) else None for x in self.deviance],
            "lower": self.lower,
            "upper": self.upper,
        }


def _crossing(v: np.ndarray, D: np.ndarray, i0: int, step: int) -> float | None:
    i = i0
    while 0 <= i + step < len(v):
        j = i + step
        if D[j] > CHI2_95:
            t = (CHI2_95 - D[i]) / (D[j] - D[i])
            return float(v[i] + t * (v[j] - v[i]))
        i = j
    return None


@dataclass(frozen=True, kw_only=True)
class ProfileGrid:
    """The values a profile holds its parameter at: ``n_points`` in ``[lower, upper]``, spaced in the
    parameter's own scale (the polished optimum's value is added)."""

    lower: float
    upper: float
    n_points: int = 9


def profile(
    problem: Any,
    best: dict[str, float],
    sigma_res: np.ndarray,
    name: str,
    grid_spec: ProfileGrid,
    *,
    store: Any,
    run_name: str,
    budget: int | None = None,
    evaluator: Any = None,
) -> Profile:
    """The profile of ``name`` over the values of ``grid_spec`` and the polished optimum ``best`` (free
    parameters by name)."""
    space = problem.space
    if name not in space.free_names:
        raise ConfigurationError(f"profile: {name!r} is not a free parameter; free parameters are {space.free_names}")
    if space.dim < 2:
        raise ConfigurationError("profile: a profile needs another free parameter to re-fit; the problem has one")
    p = space[name]
    lower, upper, n_points = grid_spec.lower, grid_spec.upper, grid_spec.n_points
    grid = np.geomspace(lower, upper, n_points) if p.scale == "log" else np.linspace(lower, upper, n_points)
    grid = np.unique(np.append(grid, best[name]))
    s = np.asarray(sigma_res, dtype=float)
    D = np.empty(grid.size)
    for k, v in enumerate(grid):
        sub = replace(problem, space=space.with_fixed(**{name: float(v)}))
        x0 = sub.space.to_unit(np.array([[best[n] for n in sub.space.free_names]]))[0]
        opt = LeastSquaresTRF(x0=[np.clip(x0, 0.0, 1.0).tolist()], restart=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            calibrate(
                sub,
                opt,
                Termination(max_evals=budget or 30 * (sub.space.dim + 1)),
                store=store,
                run_name=f"{run_name}.{k}",
                evaluator=evaluator,
                progress=False,
            )
        if not opt.end_points:
            D[k] = math.nan
            continue
        u, loss = opt.end_points[0]
        if np.all(s == s[0]) and problem.objective.residual_loss == "sum_squares":
            D[k] = loss / s[0] ** 2  # 2 NLL from the stored loss
        else:  # channels of different noise: the residuals (one more simulation, not stored)
            r = sub.residuals(sub.space.from_unit(u[None, :]))[0]
            D[k] = float(np.sum((r / s) ** 2))
    D = D - np.nanmin(D)
    i0 = int(np.nanargmin(D))
    return Profile(name, grid, D, _crossing(grid, D, i0, -1), _crossing(grid, D, i0, +1))
