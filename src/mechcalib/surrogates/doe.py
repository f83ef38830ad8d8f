"""Designs of experiments and simulated datasets (Mareš et al. (2016), section 5).

* :func:`lhs_md`: a Latin hypercube optimised for the modified L2 discrepancy (section 5: "Latin Hypercube
  Sampling optimised with respect to the modified L2 discrepancy"). scipy's own LHS optimiser minimises
  the centred discrepancy, so the optimisation here is a swap search scored by
  ``scipy.stats.qmc.discrepancy(method="MD")``: swapping two entries of one column keeps the Latin
  property, and a swap is kept when it lowers the discrepancy.
* :func:`random_design`: uniform random points (the 50 test simulations of section 6).
* :class:`CurveDataset`: standardised parameters and responses on a common grid, the ``(p_i, α_i)`` pairs
  every strategy of Table 2 is fitted on (a view of the one :class:`~mechcalib.core.dataset.Dataset`);
  :func:`simulate_dataset` builds one from a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.stats import qmc

from ..core.dataset import Dataset
from ..core.model import Model, SimulationFailure
from ..core.parameters import ParameterSpace
from ..errors import ConfigurationError

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


class CurveDataset(Dataset):
    """A :class:`~mechcalib.core.dataset.Dataset` of one channel on a common grid, read as the ``(p_i, y_i)`` pairs
    of the strategies: a view with the names of section 5.

    Args:
        P: ``(n, d)`` standardised parameters (unit-cube coordinates of ``space``).
        Y: ``(n, m)`` responses (for hydration: α at the grid times).
        t: ``(m,)`` grid (abscissa of the responses).
        names: the ``d`` parameter names.
        space: the parameter space mapping ``P`` to physical values (optional; without it the parameters are
            ``P``).
        meta: free information (model name, ``channel``, conditions).
        theta: ``(n, d)`` physical values when known (default: ``P`` mapped by ``space``).
    """

    def __init__(
        self,
        P: np.ndarray,
        Y: np.ndarray,
        t: np.ndarray,
        names: Sequence[str] = (),
        space: ParameterSpace | None = None,
        meta: Mapping[str, Any] | None = None,
        *,
        theta: np.ndarray | None = None,
    ) -> None:
        P = np.atleast_2d(np.asarray(P, dtype=float))
        Y = np.atleast_2d(np.asarray(Y, dtype=float))
        t = np.asarray(t, dtype=float)
        if P.shape[0] != Y.shape[0]:
            raise ConfigurationError(f"P and Y need the same number of rows, got {P.shape[0]} and {Y.shape[0]}")
        if Y.shape[1] != t.size:
            raise ConfigurationError(f"Y has {Y.shape[1]} columns but the grid t has {t.size} points")
        meta = dict(meta or {})
        ch = str(meta.setdefault("channel", "y"))
        if theta is None:
            theta = space.from_unit(P) if space is not None else P
        super().__init__(theta, {ch: Y}, names=names or None, abscissa={ch: t}, space=space, unit=P, meta=meta)

    @property
    def P(self) -> np.ndarray:
        return self.unit()

    @property
    def Y(self) -> np.ndarray:
        return self.curves()

    @property
    def t(self) -> np.ndarray:
        return self.grid()

    def physical(self) -> np.ndarray:
        """``(n, d)`` physical parameter values (needs ``space``)."""
        if self.space is None:
            raise ConfigurationError("this dataset has no parameter space; pass space= when building it")
        return self.theta


def as_curves(data: Dataset, channel: str | None = None) -> CurveDataset:
    """``data`` as the strategies read it: one channel (default: the only one, or ``meta["channel"]``) on its grid,
    the parameters in unit-cube coordinates (:meth:`Dataset.unit`)."""
    if isinstance(data, CurveDataset) and (channel is None or channel == data.meta.get("channel")):
        return data
    ch = data._key(channel)
    return CurveDataset(
        data.unit(),
        data.curves(ch),
        data.grid(ch),
        data.names,
        data.space,
        {**data.meta, "channel": ch},
        theta=data.theta,
    )


def simulate_dataset(
    model: Model,
    U: np.ndarray,
    *,
    channel: str,
    space: ParameterSpace | None = None,
    conditions: Mapping[str, Any] | None = None,
) -> CurveDataset:
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
    return CurveDataset(
        np.asarray(U, dtype=float),
        np.vstack(rows),
        t,
        space.free_names,
        space,
        {"model": model.name, "channel": channel, "conditions": dict(conditions or {})},
    )
