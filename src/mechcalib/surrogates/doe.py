"""Designs of experiments and simulated datasets (seed 003, section 5).

* :func:`lhs_md`: a Latin hypercube optimised for the modified L2 discrepancy (section 5: "Latin Hypercube
  Sampling optimised with respect to the modified L2 discrepancy"). scipy's own LHS optimiser minimises
  the centred discrepancy, so the optimisation here is a swap search scored by
  ``scipy.stats.qmc.discrepancy(method="MD")``: swapping two entries of one column keeps the Latin
  property, and a swap is kept when it lowers the discrepancy.
* :func:`random_design`: uniform random points (the 50 test simulations of section 6).
* :class:`Dataset`: standardised parameters and responses on a common grid, the ``(p_i, α_i)`` pairs
  every strategy of Table 2 is fitted on; :func:`simulate_dataset` builds one from a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import qmc

from ..errors import ConfigurationError
from ..core.model import Model, SimulationFailure
from ..core.parameters import ParameterSpace

SeedLike = int | np.random.Generator | None


def md_discrepancy(U: np.ndarray) -> float:
    """Modified L2 discrepancy of ``(n, d)`` points in ``[0, 1]^d`` (scipy's ``method="MD"``)."""
    return float(qmc.discrepancy(np.asarray(U, dtype=float), method="MD"))


def lhs_md(n: int, d: int, *, iterations: int = 2000, restarts: int = 1, seed: SeedLike = None) -> np.ndarray:
    """A Latin hypercube of ``n`` points in ``[0, 1]^d`` optimised for the modified L2 discrepancy.

    Each restart draws a random Latin hypercube (one point per stratum of every axis, uniform within it)
    and runs ``iterations`` proposals: swap the values of two random rows in one random column, keep the
    swap if the MD discrepancy decreases. The best design over restarts is returned.

    Returns:
        ``(n, d)`` design; every column has exactly one value in each interval ``[k/n, (k+1)/n)``.
    """
    if int(n) < 2 or int(d) < 1:
        raise ConfigurationError(f"lhs_md needs n >= 2 points and d >= 1 dimensions, got n={n!r}, d={d!r}")
    rng = np.random.default_rng(seed)
    best, best_D = None, np.inf
    for _ in range(max(1, int(restarts))):
        U = qmc.LatinHypercube(d, rng=rng).random(int(n))
        D = md_discrepancy(U)
        rows = rng.integers(0, n, size=(int(iterations), 2))
        cols = rng.integers(0, d, size=int(iterations))
        for (i, k), j in zip(rows, cols, strict=True):
            if i == k:
                continue
            U[[i, k], j] = U[[k, i], j]
            D_new = md_discrepancy(U)
            if D_new < D:
                D = D_new
            else:
                U[[i, k], j] = U[[k, i], j]
        if D < best_D:
            best, best_D = U.copy(), D
    return best


def random_design(n: int, d: int, *, seed: SeedLike = None) -> np.ndarray:
    """``(n, d)`` uniform random points in ``[0, 1]^d`` (section 6's test set)."""
    return np.random.default_rng(seed).random((int(n), int(d)))


@dataclass
class Dataset:
    """Simulations on a common grid.

    Attributes:
        P: ``(n, d)`` standardised parameters (unit-cube coordinates of ``space``).
        Y: ``(n, m)`` responses (for hydration: α at the grid times).
        t: ``(m,)`` grid (abscissa of the responses).
        names: the ``d`` parameter names.
        space: the parameter space mapping ``P`` to physical values (optional).
        meta: free information (model name, channel, conditions).
    """

    P: np.ndarray
    Y: np.ndarray
    t: np.ndarray
    names: tuple[str, ...] = ()
    space: ParameterSpace | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.P = np.atleast_2d(np.asarray(self.P, dtype=float))
        self.Y = np.atleast_2d(np.asarray(self.Y, dtype=float))
        self.t = np.asarray(self.t, dtype=float)
        if self.P.shape[0] != self.Y.shape[0]:
            raise ConfigurationError(f"P and Y need the same number of rows, got {self.P.shape[0]} and {self.Y.shape[0]}")
        if self.Y.shape[1] != self.t.size:
            raise ConfigurationError(f"Y has {self.Y.shape[1]} columns but the grid t has {self.t.size} points")
        if not self.names:
            self.names = tuple(f"p{i + 1}" for i in range(self.P.shape[1]))

    def __len__(self) -> int:
        return int(self.P.shape[0])

    def subset(self, idx: np.ndarray) -> Dataset:
        return Dataset(self.P[idx], self.Y[idx], self.t, self.names, self.space, dict(self.meta))

    def physical(self) -> np.ndarray:
        """``(n, d)`` physical parameter values (needs ``space``)."""
        if self.space is None:
            raise ConfigurationError("this dataset has no parameter space; pass space= when building it")
        return self.space.from_unit(self.P)


def simulate_dataset(
    model: Model,
    U: np.ndarray,
    *,
    channel: str,
    space: ParameterSpace | None = None,
    conditions: Mapping[str, Any] | None = None,
) -> Dataset:
    """Simulate unit-cube points ``U`` ``(n, dim)`` of ``space`` (default: the model's) and collect one
    channel on the model's grid. A failed simulation is an error (a design point must have a response)."""
    space = space or model.space
    theta = space.full_from_unit(U)
    sims = model.simulate(theta, conditions)
    rows = []
    for i, s in enumerate(sims):
        if isinstance(s, SimulationFailure):
            raise ConfigurationError(f"design point {i} ({space.as_dict(theta[i])}) failed: {s.message}")
        rows.append(s[channel].y)
    t = sims[0][channel].x
    return Dataset(np.asarray(U, dtype=float), np.vstack(rows), t, space.free_names, space,
                   {"model": model.name, "channel": channel, "conditions": dict(conditions or {})})
