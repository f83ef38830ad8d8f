"""Bird mating optimiser (BMO) of Askarzadeh (2014) over the unit cube.

A. Askarzadeh, "Bird mating optimizer: An optimization algorithm inspired by bird mating strategies",
Communications in Nonlinear Science and Numerical Simulation 19(4) (2014) 1213-1228. The society of ``N``
birds is ranked by loss every generation and split, best first, into five groups: parthenogenetic females,
polyandrous females, monogamous, polygynous and promiscuous males (default shares 5/5/50/30/10 %). Each bird
breeds one brood, which replaces it when its loss is strictly lower:

* monogamous male ``x`` with one interesting female ``x^i``:  ``x_b = x + w r .* (x^i - x)``;
* polygynous male with ``n_i`` females:  ``x_b = x + w sum_j r_j .* (x^i_j - x)``;
* polyandrous female with ``n_i`` males:  ``x_b = x + w sum_j r_j .* (x^m_j - x)``;
* promiscuous male: first replaced by a new bird from a logistic chaotic sequence ``z <- 4 z (1 - z)`` (one
  state per dimension, kept between generations), then bred as a monogamous male;
* after each of these, with probability ``1 - mcf`` one random coordinate ``c`` is reset,
  ``x_b(c) = l_c - r (l_c - u_c)`` (uniform in the bounds; ``r`` in ``[0, 1]``);
* parthenogenetic female, per coordinate:  ``x_b(k) = x(k) + mu (r1 - r2) x(k)`` if ``r > mcfp``, else ``x(k)``.

``r``, ``r_j`` are vectors of uniform numbers in ``[0, 1]`` (one per coordinate), ``w`` a weight decreasing
linearly over the run from ``w_start`` to ``w_end`` (:func:`bmo_weight`), and interesting mates are drawn
uniformly among the other sex (without replacement within one brood). Equation kernels:
:func:`mating_broods`, :func:`parthenogenetic_broods`, :func:`reset_one_coordinate`, :func:`logistic_map`.

Sources and choices. The update rules above are those of Askarzadeh (2014) as restated by Askarzadeh and
dos Santos Coelho (2015, Energy Conversion and Management 89: 608-614, which derives its simplified BMO from
it) and by two public re-implementations consulted; the 2014 paper itself could not be read here, so its
numbered equations are not cited. Its parameter values are taken where those sources agree (the group
shares, ``mcf = 0.9``, ``w`` from 2.5 to 0.25); where they differ we chose ``mcfp = 0.9`` (a constant),
``mu = 0.01`` and ``n_i = 3`` mates, and uniform mate choice (the simplified BMO's rule). In the unit cube the
bounds are 0 and 1; broods leaving them are clipped. Ding et al. (2021) give no BMO settings; the hysteresis
benchmark uses a society of 50 birds (I-ABC's group size) for its 25 000 evaluations.

Batching: the initial society (``N`` points); then each generation asks the new promiscuous birds (when
there are any) and then the ``N`` broods, so a generation costs ``N + n_promiscuous`` evaluations. The
weight's schedule needs the run's length: ``max_generations``, or else the budget that
:func:`~mechcalib.calibrate` passes to :meth:`BMO.set_budget`; with neither, ``w`` stays at ``w_start``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import SettingError
from ._base import Optimizer, SeedLike, check_positive_int, check_range

__all__ = [
    "BMO",
    "bmo_weight",
    "group_sizes",
    "mating_broods",
    "parthenogenetic_broods",
    "reset_one_coordinate",
    "logistic_map",
]

_GROUPS = ("parthenogenetic", "polyandrous", "monogamous", "polygynous", "promiscuous")


def bmo_weight(generation: int, n_generations: int | None, w_start: float, w_end: float) -> float:
    """The time-varying weight ``w = w_start - (w_start - w_end) g / G`` (``g`` from 0; ``G`` generations)."""
    if not n_generations:
        return w_start
    g = min(max(generation, 0), n_generations)
    return w_start - (w_start - w_end) * g / n_generations


def group_sizes(n: int, shares: tuple[float, ...]) -> tuple[int, ...]:
    """Sizes of the five groups (parthenogenetic, polyandrous, monogamous, polygynous, promiscuous).

    Each share of ``n`` is rounded to the nearest integer; the monogamous group takes what rounding leaves,
    so the sizes add up to ``n``.
    """
    k = [int(round(s * n)) for s in shares]
    k[2] = n - (k[0] + k[1] + k[3] + k[4])
    return tuple(k)


def mating_broods(X: np.ndarray, mates: np.ndarray, r: np.ndarray, w: float) -> np.ndarray:
    """Broods of birds mating with ``n_i`` partners: ``x_b = x + w sum_j r_j .* (x_j - x)``.

    Args:
        X: ``(n, D)`` the breeding birds.
        mates: ``(n, n_i, D)`` the partners of each bird (``n_i = 1``: monogamous and promiscuous).
        r: ``(n, n_i, D)`` uniform numbers in ``[0, 1]``.
        w: the weight.

    Returns:
        ``(n, D)`` broods, not yet mutated nor clipped.
    """
    X = np.asarray(X, dtype=float)
    return X + w * np.sum(np.asarray(r) * (np.asarray(mates) - X[:, None, :]), axis=1)


def reset_one_coordinate(B: np.ndarray, mutate: np.ndarray, coord: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The mutation ``x_b(c) = l_c - r (l_c - u_c)`` in the unit cube (``l = 0``, ``u = 1``: ``x_b(c) = r``).

    Args:
        B: ``(n, D)`` broods; mutate: ``(n,)`` bool (drawn as ``rand > mcf``); coord: ``(n,)`` the coordinate
            ``c`` of each; r: ``(n,)`` uniform numbers in ``[0, 1]``.

    Returns:
        ``(n, D)`` the broods with the chosen coordinates reset where ``mutate``.
    """
    B = np.array(B, dtype=float)
    rows = np.flatnonzero(mutate)
    lo, hi = 0.0, 1.0
    B[rows, np.asarray(coord)[rows]] = lo - np.asarray(r)[rows] * (lo - hi)
    return B


def parthenogenetic_broods(X: np.ndarray, change: np.ndarray, r1: np.ndarray, r2: np.ndarray, mu: float) -> np.ndarray:
    """``x_b(k) = x(k) + mu (r1 - r2) x(k)`` where ``change`` (drawn as ``rand > mcfp``), else ``x(k)``.

    Args:
        X: ``(n, D)`` parthenogenetic birds; change: ``(n, D)`` bool; r1, r2: ``(n, D)`` uniform numbers.
        mu: the step size.
    """
    X = np.asarray(X, dtype=float)
    return np.where(change, X + mu * (np.asarray(r1) - np.asarray(r2)) * X, X)


def logistic_map(z: np.ndarray) -> np.ndarray:
    """One step of the logistic chaotic map ``z <- 4 z (1 - z)`` (values in ``[0, 1]``)."""
    z = np.asarray(z, dtype=float)
    return 4.0 * z * (1.0 - z)


class BMO(Optimizer):
    """Bird mating optimiser (Askarzadeh 2014); see the module docstring for the rules and sources.

    Args:
        n_birds: society size ``N`` (at least 10).
        shares: fractions of the society in the five groups (parthenogenetic, polyandrous, monogamous,
            polygynous, promiscuous); they must add up to 1 and leave at least one female and one male.
        n_mates: partners of a polygynous male or a polyandrous female (``n_i``).
        w_start, w_end: the weight's values at the first and the last generation.
        mcf: mutation control factor of the mating broods (a coordinate is reset when ``rand > mcf``).
        mcfp: that of the parthenogenetic broods (a coordinate moves when ``rand > mcfp``).
        mu: the parthenogenetic step size.
        max_generations: the schedule's length; ``None``: from the budget (:meth:`set_budget`).
        seed: random seed or generator.
    """

    name = "bmo"

    def __init__(
        self,
        *,
        n_birds: int = 50,
        shares: tuple[float, ...] = (0.05, 0.05, 0.5, 0.3, 0.1),
        n_mates: int = 3,
        w_start: float = 2.5,
        w_end: float = 0.25,
        mcf: float = 0.9,
        mcfp: float = 0.9,
        mu: float = 0.01,
        max_generations: int | None = None,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(seed=seed)
        self.n_birds = check_positive_int(self.name, "n_birds", n_birds, minimum=10)
        shares = tuple(float(s) for s in shares)
        if len(shares) != 5 or min(shares) < 0 or abs(sum(shares) - 1.0) > 1e-9:
            raise SettingError(
                self.name, "shares", "five non-negative fractions adding up to 1 (" + ", ".join(_GROUPS) + ")", shares
            )
        sizes = group_sizes(self.n_birds, shares)
        if sizes[0] + sizes[1] < 1 or sizes[2] + sizes[3] + sizes[4] < 1 or min(sizes) < 0:
            raise SettingError(
                self.name,
                "shares",
                "shares leaving at least one female and one male bird",
                shares,
                message=f"{self.name}: shares {shares!r} of {self.n_birds} birds give groups {sizes}; "
                "at least one female (the first two groups) and one male are needed",
            )
        self.shares = shares
        self.n_mates = check_positive_int(self.name, "n_mates", n_mates)
        self.w_start = check_range(self.name, "w_start", w_start, 0.0, np.inf)
        self.w_end = check_range(self.name, "w_end", w_end, 0.0, np.inf)
        self.mcf = check_range(self.name, "mcf", mcf, 0.0, 1.0)
        self.mcfp = check_range(self.name, "mcfp", mcfp, 0.0, 1.0)
        self.mu = check_range(self.name, "mu", mu, 0.0, np.inf)
        self.max_generations = (
            None if max_generations is None else check_positive_int(self.name, "max_generations", max_generations)
        )
        self._budget: int | None = None

    @property
    def sizes(self) -> tuple[int, ...]:
        """The five group sizes (see :func:`group_sizes`)."""
        return group_sizes(self.n_birds, self.shares)

    def set_budget(self, max_evals: int | None) -> None:
        self._budget = max_evals

    def _generations(self) -> int | None:
        if self.max_generations is not None:
            return self.max_generations
        if self._budget is None:
            return None
        per = self.n_birds + self.sizes[4]
        return max(1, (self._budget - self.n_birds) // per)

    def _init_state(self) -> None:
        self._X: np.ndarray | None = None  # (N, D) the society, ranked best first after each tell
        self._f: np.ndarray | None = None
        self._z = self.rng.uniform(0.01, 0.99, self.dim)  # the chaotic sequence's state
        self._gen = 0
        self._phase = "init"

    def _next_batch_size(self) -> int:
        if self._phase == "promiscuous":
            return self.sizes[4]
        return self.n_birds

    def _rank(self) -> None:
        assert self._X is not None and self._f is not None
        order = np.argsort(self._f, kind="stable")
        self._X, self._f = self._X[order], self._f[order]

    def _chaotic_birds(self, n: int) -> np.ndarray:
        out = np.empty((n, self.dim))
        for i in range(n):
            self._z = logistic_map(self._z)
            # the map's fixed points and the 0/1 trap would end the sequence: restart such coordinates
            stuck = (self._z <= 1e-12) | (self._z >= 1.0 - 1e-12) | (np.abs(self._z - 0.75) < 1e-12)
            if stuck.any():
                self._z[stuck] = self.rng.uniform(0.01, 0.99, int(stuck.sum()))
            out[i] = self._z
        return out

    def _pick(self, pool: np.ndarray, n: int, k: int) -> np.ndarray:
        """``(n, k)`` indices drawn uniformly from ``pool``, distinct within a row when the pool allows."""
        if k <= pool.size:
            keys = self.rng.random((n, pool.size))
            return pool[np.argsort(keys, axis=1)[:, :k]]
        return pool[self.rng.integers(pool.size, size=(n, k))]

    def _broods(self) -> np.ndarray:
        X, D, rng = self._X, self.dim, self.rng
        assert X is not None
        n_par, n_pa, n_mo, n_pg, n_pr = self.sizes
        females = np.arange(n_par + n_pa)
        males = np.arange(n_par + n_pa, self.n_birds)
        w = bmo_weight(self._gen, self._generations(), self.w_start, self.w_end)
        B = np.empty_like(X)
        # parthenogenetic females (the best birds)
        P = X[:n_par]
        B[:n_par] = parthenogenetic_broods(
            P, rng.random(P.shape) > self.mcfp, rng.random(P.shape), rng.random(P.shape), self.mu
        )
        # polyandrous females, monogamous, polygynous and promiscuous males
        spans = (
            (n_par, n_par + n_pa, males, self.n_mates),
            (n_par + n_pa, n_par + n_pa + n_mo, females, 1),
            (n_par + n_pa + n_mo, n_par + n_pa + n_mo + n_pg, females, self.n_mates),
            (self.n_birds - n_pr, self.n_birds, females, 1),
        )
        for a, b, pool, k in spans:
            n = b - a
            if n == 0:
                continue
            mates = X[self._pick(pool, n, k)]
            Bx = mating_broods(X[a:b], mates, rng.random((n, k, D)), w)
            B[a:b] = reset_one_coordinate(Bx, rng.random(n) > self.mcf, rng.integers(D, size=n), rng.random(n))
        return np.clip(B, 0.0, 1.0)

    def _ask(self) -> np.ndarray:
        if self._phase == "init":
            return self._random_points(self.n_birds)
        if self._phase == "promiscuous":
            return self._chaotic_birds(self.sizes[4])
        return self._broods()

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        if self._phase == "init":
            self._X, self._f = X.copy(), f.copy()
            self._rank()
        elif self._phase == "promiscuous":
            assert self._X is not None and self._f is not None
            n = X.shape[0]  # the new birds take the places of the worst ones
            self._X[-n:], self._f[-n:] = X, f
        else:
            assert self._X is not None and self._f is not None
            better = f < self._f
            self._X[better], self._f[better] = X[better], f[better]
            self._gen += 1
            self._rank()
        self._phase = "promiscuous" if self._phase != "promiscuous" and self.sizes[4] > 0 else "broods"

    def settings(self) -> dict[str, Any]:
        out = super().settings()
        out["shares"] = tuple(self.shares)
        return out
