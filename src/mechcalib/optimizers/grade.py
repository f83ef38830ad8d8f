"""GRADE: genetic algorithm with differential-evolution-like crossover (Kučerová 2007).

Mareš et al. (2016) (section 8, and again in section 9 for the direct calibrations) minimises its error functions
with "the evolutionary algorithm GRADE, see [9]", without restating the algorithm or its settings. The
operators below follow the published description of GRADE (Ibrahimbegović, Knopf-Lenoir, Kučerová &
Villon 2004, IJNME; Kučerová's PhD thesis 2007; the author's GRADE page) and the authors' C++ source,
whose commented defaults are ``pool_rate = 25``, ``radioactivity = 0.05``, ``cross_limit = 2.0``.

One generation, with ``N = pool_rate * dim`` parents (the population) and a pool of ``2 N``:

* MUTATE: each parent ``P``, with probability ``radioactivity``, begets ``O = P + MR (R - P)``, ``R`` a
  fresh uniform point, ``MR`` a random coefficient (:func:`mutate`).
* CROSS: fills the pool with ``O = P_better + CR (P_better - P_worse)`` for random distinct parent
  pairs, ``CR`` a random coefficient (:func:`cross`).
* SELECT: the worse of a random pair of the pool dies until ``N`` remain (:func:`tournament_select`).

Which coefficient reaches beyond 1 is where the sources differ: the published description draws
``MR`` from ``[0, 1]`` (the mutant lies on the segment from ``P`` to ``R``) and ``CR`` from
``[0, cross_limit]`` (``limit_on="cross"``, the default and the preset); the C++ source draws
``CR`` from ``[0, 1]`` and ``MR`` from ``[0, cross_limit]`` (``limit_on="mutate"``).

Ask/tell: the first ask is the ``N`` random initial parents; every later ask is the ``N`` new points of
one generation (mutants first, then crossover children); parents' losses are already known, so
``next_batch_size`` is always ``N``. Points leaving ``[0, 1]`` (crossover extrapolates up to
``cross_limit`` times the parents' distance) are clipped to the cube, as the C++ source returns
children to the domain.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.presets import Preset, deprecated_preset, presets_by_name
from ..errors import ConfigurationError
from ._base import Optimizer, SeedLike, check_choice, check_positive_int, check_range

LIMIT_ON = ("cross", "mutate")


# -- kernels ------------------------------------------------------------------------------------------
def mutate(P: np.ndarray, R: np.ndarray, mr: np.ndarray) -> np.ndarray:
    """GRADE MUTATE: ``O = P + MR (R - P)``.

    Args:
        P: ``(m, dim)`` mutated parents.
        R: ``(m, dim)`` fresh random points.
        mr: ``(m,)`` mutation coefficients ``MR``.

    Returns:
        ``(m, dim)`` mutants (not clipped).
    """
    P = np.asarray(P, dtype=float)
    return P + np.asarray(mr, dtype=float)[:, None] * (np.asarray(R, dtype=float) - P)


def cross(Xa: np.ndarray, fa: np.ndarray, Xb: np.ndarray, fb: np.ndarray, cr: np.ndarray) -> np.ndarray:
    """GRADE CROSS: ``O = P_better + CR (P_better - P_worse)`` for each pair ``(a, b)``.

    The better parent is the one with the lower loss; on a tie ``b`` counts as the better one (as in
    the C++ source). ``+inf`` losses compare normally, so no NaN can arise.

    Args:
        Xa, Xb: ``(m, dim)`` first and second parents of each pair.
        fa, fb: ``(m,)`` their losses.
        cr: ``(m,)`` crossover coefficients ``CR``.

    Returns:
        ``(m, dim)`` children (not clipped).
    """
    a_better = (np.asarray(fa) < np.asarray(fb))[:, None]
    better = np.where(a_better, Xa, Xb)
    worse = np.where(a_better, Xb, Xa)
    return better + np.asarray(cr, dtype=float)[:, None] * (better - worse)


def tournament_select(f: np.ndarray, n_keep: int, u1: np.ndarray, u2: np.ndarray) -> np.ndarray:
    """GRADE SELECT: remove the worse of a random distinct pair until ``n_keep`` members remain.

    Removal ``k`` acts on the ``n = len(f) - k`` members still alive: it picks positions
    ``i1 = floor(u1[k] n)`` and ``i2 = floor(u2[k] (n - 1))`` (shifted up by one when ``>= i1``, so
    the pair is distinct and uniform), kills ``i2`` if ``f[i1] <= f[i2]`` else ``i1``, and moves the last
    alive member into the hole (as the C++ source does). The loop is sequential by nature: each removal
    changes the set the next pair is drawn from. The best loss always survives.

    Args:
        f: ``(n_pool,)`` losses of the pool.
        n_keep: survivors wanted, ``1 <= n_keep <= n_pool``.
        u1, u2: ``(n_pool - n_keep,)`` uniform numbers in ``[0, 1)``.

    Returns:
        ``(n_keep,)`` indices into ``f`` of the survivors.
    """
    f = np.asarray(f, dtype=float)
    n = f.shape[0]
    n_remove = n - int(n_keep)
    if n_remove < 0 or n_keep < 1:
        raise ValueError(f"tournament_select: n_keep must lie in [1, {n}], got {n_keep}")
    alive = np.arange(n)
    sizes = n - np.arange(n_remove)
    i1s = np.minimum((np.asarray(u1[:n_remove]) * sizes).astype(int), sizes - 1)
    i2s = np.minimum((np.asarray(u2[:n_remove]) * (sizes - 1)).astype(int), sizes - 2)
    i2s = i2s + (i2s >= i1s)
    for k in range(n_remove):
        i1, i2, last = i1s[k], i2s[k], sizes[k] - 1
        dead = i2 if f[alive[i1]] <= f[alive[i2]] else i1
        alive[dead] = alive[last]
    return alive[: int(n_keep)].copy()


def draw_coefficients(rng: np.random.Generator, n: int, limit: float) -> np.ndarray:
    """``(n,)`` coefficients uniform on ``[0, limit]``."""
    return limit * rng.random(n)


# -- optimiser ----------------------------------------------------------------------------------------
class GRADE(Optimizer):
    """GRADE (genetic algorithm + differential evolution), Kučerová 2007; used by Mareš et al. (2016) section 8.

    Args:
        pool_rate: population size per dimension: ``N = pool_rate * dim`` parents, pool ``2 N``.
        radioactivity: probability that a parent begets a mutant in a generation.
        cross_limit: upper bound of the random coefficient named by ``limit_on``.
        limit_on: ``"cross"`` (published description: ``CR`` in ``[0, cross_limit]``, ``MR`` in
            ``[0, 1]``) or ``"mutate"`` (C++ source: ``CR`` in ``[0, 1]``, ``MR`` in
            ``[0, cross_limit]``).
        seed: random seed or generator.

    Each ask returns ``N`` points (the initial population, then one generation's mutants and crossover
    children); children outside the unit cube are clipped to it.
    """

    name = "grade"
    setting_presets = presets_by_name(
        Preset(
            name="mares2016",
            source="Mareš et al. (2016), with the GRADE authors' defaults (Ibrahimbegović et al. 2004; Kučerová 2007)",
            settings=dict(pool_rate=25, radioactivity=0.05, cross_limit=2.0, limit_on="cross"),
            aliases=("paper_003",),
        ),
        Preset(
            name="tight_budget",
            source="the project's own, not a published setting",
            settings=dict(pool_rate=5, radioactivity=0.05, cross_limit=2.0, limit_on="cross"),
        ),
    )

    def __init__(
        self,
        *,
        pool_rate: int = 25,
        radioactivity: float = 0.05,
        cross_limit: float = 2.0,
        limit_on: str = "cross",
        seed: SeedLike = None,
    ) -> None:
        super().__init__(seed=seed)
        # pool_rate >= 2 guarantees two distinct parents for CROSS even when dim == 1
        self.pool_rate = check_positive_int(self.name, "pool_rate", pool_rate, minimum=2)
        self.radioactivity = check_range(self.name, "radioactivity", radioactivity, 0.0, 1.0)
        self.cross_limit = check_range(self.name, "cross_limit", cross_limit, 0.0, np.inf, lo_open=True, hi_open=True)
        self.limit_on = check_choice(self.name, "limit_on", limit_on, LIMIT_ON)

    # -- presets ------------------------------------------------------------------------------------
    @classmethod
    def mares2016(cls, seed: SeedLike = None, **overrides: Any) -> GRADE:
        """Mareš et al.'s (2016) optimiser: GRADE with its authors' defaults (pool_rate 25, radioactivity 0.05,
        cross_limit 2, published coefficient convention). Mareš et al. (2016) itself quotes no values."""
        return cls(seed=seed, **cls.setting_presets["mares2016"].merged(overrides))

    paper_003 = deprecated_preset("paper_003")

    @classmethod
    def tight_budget(cls, seed: SeedLike = None, **overrides: Any) -> GRADE:
        """A smaller population (pool_rate 5) for budgets of a few thousand evaluations, where
        pool_rate 25 leaves only a handful of generations (not a published setting)."""
        return cls(seed=seed, **cls.setting_presets["tight_budget"].merged(overrides))

    # -- protocol -------------------------------------------------------------------------------------
    @property
    def population_size(self) -> int:
        """``N = pool_rate * dim`` (valid after ``setup``)."""
        if self.dim is None:
            raise ConfigurationError(f"{self.name}: call setup(dim) before asking for population_size")
        return self.pool_rate * self.dim

    @property
    def pool_size(self) -> int:
        """``2 N``: parents plus one generation's new points (valid after ``setup``)."""
        return 2 * self.population_size

    def _init_state(self) -> None:
        self._X: np.ndarray | None = None  # (N, dim) parents
        self._f: np.ndarray | None = None  # (N,) their losses
        self._generation = 0

    def _coefficient_limits(self) -> tuple[float, float]:
        """(MR bound, CR bound) for the chosen convention."""
        if self.limit_on == "cross":
            return 1.0, self.cross_limit
        return self.cross_limit, 1.0

    def _ask(self) -> np.ndarray:
        N = self.population_size
        if self._X is None:
            return self._random_points(N)
        assert self._f is not None
        mr_max, cr_max = self._coefficient_limits()
        # MUTATE: each parent independently, with probability radioactivity (at most N mutants)
        who = np.flatnonzero(self.rng.random(N) < self.radioactivity)
        mutants = mutate(self._X[who], self._random_points(who.size), draw_coefficients(self.rng, who.size, mr_max))
        # CROSS: fill the pool with children of random distinct parent pairs
        m = N - who.size
        ia = self.rng.integers(0, N, size=m)
        ib = self.rng.integers(0, N - 1, size=m)
        ib = ib + (ib >= ia)
        children = cross(self._X[ia], self._f[ia], self._X[ib], self._f[ib], draw_coefficients(self.rng, m, cr_max))
        return np.clip(np.vstack([mutants, children]), 0.0, 1.0)

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        if self._X is None:
            self._X, self._f = X.copy(), f.copy()
            return
        pool_X = np.vstack([self._X, X])
        pool_f = np.concatenate([self._f, f])
        N = self.population_size
        n_remove = pool_f.size - N
        keep = tournament_select(pool_f, N, self.rng.random(n_remove), self.rng.random(n_remove))
        self._X, self._f = pool_X[keep], pool_f[keep]
        self._generation += 1

    def _next_batch_size(self) -> int:
        return self.population_size
