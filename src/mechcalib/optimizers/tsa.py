"""Tree-seed algorithm (TSA) of Kiran (2015) over the unit cube.

M. S. Kiran, "TSA: Tree-seed algorithm for continuous optimization", Expert Systems with Applications 42
(2015) 6686-6698. The population (the *stand*) holds ``N`` trees ``T_i``. In each iteration every tree
produces ``ns_i`` seeds; for seed ``s`` of tree ``i``, with ``r`` a randomly chosen other tree (drawn per
seed) and ``alpha_sj`` uniform in ``[-1, 1]`` (drawn per seed and dimension), each dimension ``j`` is

* ``S_sj = T_ij + alpha_sj (B_j - T_rj)``   with probability ``ST`` (search tendency; Kiran's eq. 3),
* ``S_sj = T_ij + alpha_sj (T_ij - T_rj)``  otherwise (Kiran's eq. 4),

``B`` being the best tree (:func:`tsa_seeds`). The best seed of a tree replaces the tree when its loss is
strictly lower (:func:`replace_by_best_seed`). Kiran recommends ``ST = 0.1`` and between 10 % and 25 % of
the stand as the number of seeds per tree; the count follows the rule of Kiran's reference MATLAB code,
``low = ceil(0.1 N)``, ``high = ceil(0.25 N)``, ``ns = min(floor(low + (high - low) u) + 1, high)``
(:func:`seed_counts`; 2 or 3 seeds per tree for 10 trees). Seeds leaving ``[0, 1]`` are clipped to the
violated bound, as in that code.

Batching. One ``ask`` returns all seeds of all trees of one iteration, so its size varies; the counts are
drawn when the batch is prepared, and ``next_batch_size`` prepares it (the following ``ask`` returns exactly
that batch, and the random stream is the same whether or not ``next_batch_size`` was called). Because the
whole iteration is one batch, all seeds are generated from the stand and best tree at the start of the
iteration and the replacements are applied together after it (a synchronous update). Kiran's code processes
the trees one after another, so a later tree's seeds can use a tree (and a best tree) replaced earlier in the
same iteration; this is the only deviation from it.

Ding et al. (2021) compares its improved ABC with "the tree seed algorithm (Ding et al., 2019)", which its
introduction calls the Lévy tree-seed algorithm, a variant with Lévy-flight steps; that variant is not
implemented here -- this class is Kiran's basic TSA.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import SettingError
from ._base import Optimizer, SeedLike, check_positive_int, check_range

__all__ = ["TSA", "seed_counts", "draw_other_trees", "tsa_seeds", "replace_by_best_seed"]


def seed_counts(u: np.ndarray, low: int, high: int) -> np.ndarray:
    """Seeds per tree (Kiran's reference code): ``min(floor(low + (high - low) u) + 1, high)``.

    Args:
        u: ``(N,)`` uniform numbers in ``[0, 1)``, one per tree.
        low, high: ``ceil(0.1 N)`` and ``ceil(0.25 N)`` (with the default fractions).

    Returns:
        ``(N,)`` integer counts, each in ``[1, high]`` (uniform on ``low + 1 .. high`` when ``high > low``).
    """
    ns = np.floor(low + (high - low) * np.asarray(u, dtype=float)).astype(int) + 1
    return np.maximum(np.minimum(ns, high), 1)


def draw_other_trees(owner: np.ndarray, u: np.ndarray, n_trees: int) -> np.ndarray:
    """A uniformly chosen tree different from each seed's own tree.

    Args:
        owner: ``(m,)`` tree index ``i`` of each seed.
        u: ``(m,)`` uniform numbers in ``[0, 1)``.
        n_trees: stand size ``N >= 2``.

    Returns:
        ``(m,)`` indices ``r != i``: ``(i + 1 + floor(u (N - 1))) mod N``.
    """
    k = np.minimum((np.asarray(u) * (n_trees - 1)).astype(int), n_trees - 2)
    return (np.asarray(owner) + 1 + k) % n_trees


def tsa_seeds(
    T: np.ndarray, best: np.ndarray, owner: np.ndarray, other: np.ndarray, alpha: np.ndarray, use_best: np.ndarray
) -> np.ndarray:
    """Seed positions (Kiran 2015, eqs. 3 and 4), before the bound rule.

    ``S_sj = T_ij + alpha_sj (B_j - T_rj)`` where ``use_best_sj`` (drawn as ``rand < ST``), else
    ``S_sj = T_ij + alpha_sj (T_ij - T_rj)``; ``i = owner_s``, ``r = other_s``.

    Args:
        T: ``(N, dim)`` stand.
        best: ``(dim,)`` best tree ``B``.
        owner: ``(m,)`` tree of each seed.
        other: ``(m,)`` the random other tree of each seed.
        alpha: ``(m, dim)`` numbers in ``[-1, 1]``.
        use_best: ``(m, dim)`` boolean.

    Returns:
        ``(m, dim)`` seeds (may leave the unit cube; the optimiser clips them).
    """
    Ti = T[owner]
    ref = np.where(use_best, np.asarray(best)[None, :], Ti)
    return Ti + alpha * (ref - T[other])


def replace_by_best_seed(
    T: np.ndarray, fT: np.ndarray, S: np.ndarray, fS: np.ndarray, owner: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each tree is replaced by its best seed when that seed's loss is strictly lower.

    Ties among a tree's seeds go to the first seed (as ``min`` in Kiran's code).

    Args:
        T, fT: ``(N, dim)`` stand and ``(N,)`` losses.
        S, fS: ``(m, dim)`` seeds and ``(m,)`` losses (``+inf`` allowed: never replaces).
        owner: ``(m,)`` tree of each seed; every tree has at least one seed.

    Returns:
        New ``(T, fT)``.
    """
    order = np.lexsort((np.arange(len(fS)), fS, owner))  # by tree, then loss, then seed order
    trees, first = np.unique(owner[order], return_index=True)
    best = order[first]
    better = fS[best] < fT[trees]
    T, fT = T.copy(), fT.copy()
    T[trees[better]] = S[best[better]]
    fT[trees[better]] = fS[best[better]]
    return T, fT


class TSA(Optimizer):
    """Tree-seed algorithm (Kiran 2015), one iteration (all seeds of all trees) per ``ask``.

    Args:
        n_trees: stand size ``N`` (at least 2). Kiran treats it as a free control parameter; 10 is the size
            used in the reference implementations consulted and matches the ten evaluations per iteration of
            Kibriya et al.'s (2023) comparisons (it is not a value prescribed by Kiran's paper).
        search_tendency: ``ST``, probability of the best-tree equation per dimension (Kiran: 0.1).
        seed_min_fraction, seed_max_fraction: the 10 % and 25 % of the stand that bound the seed count.
        seed: random seed or generator.

    Batches: ``n_trees`` random initial trees, then one iteration of seeds (``n_trees * (low + 1) ..
    n_trees * high`` points; 20-30 for 10 trees). Points stay in the cube by clipping seeds to the bounds.
    """

    name = "tsa"

    def __init__(
        self,
        *,
        n_trees: int = 10,
        search_tendency: float = 0.1,
        seed_min_fraction: float = 0.1,
        seed_max_fraction: float = 0.25,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(seed=seed)
        self.n_trees = check_positive_int(self.name, "n_trees", n_trees, minimum=2)
        self.search_tendency = check_range(self.name, "search_tendency", search_tendency, 0.0, 1.0)
        self.seed_min_fraction = check_range(self.name, "seed_min_fraction", seed_min_fraction, 0.0, 1.0)
        self.seed_max_fraction = check_range(self.name, "seed_max_fraction", seed_max_fraction, 0.0, 1.0, lo_open=True)
        if self.seed_max_fraction < self.seed_min_fraction:
            raise SettingError(
                self.name,
                "seed_max_fraction",
                f"a value >= seed_min_fraction ({seed_min_fraction!r})",
                seed_max_fraction,
                message=f"{self.name}: seed_max_fraction must be >= seed_min_fraction, got {seed_max_fraction!r} < "
                f"{seed_min_fraction!r}",
            )

    @property
    def seed_range(self) -> tuple[int, int]:
        """``(low, high)`` of the seed-count rule: ``ceil`` of the two fractions times ``n_trees``."""
        # the 1e-9 guard keeps e.g. 30 * 0.1 = 3.0000000000000004 from rounding up to 4
        low = math.ceil(self.n_trees * self.seed_min_fraction - 1e-9)
        high = max(1, math.ceil(self.n_trees * self.seed_max_fraction - 1e-9))
        return low, high

    def _init_state(self) -> None:
        self._T: np.ndarray | None = None  # (N, dim) stand
        self._fT: np.ndarray | None = None  # (N,) its losses
        self._batch: np.ndarray | None = None  # (m, dim) prepared seeds of the next iteration
        self._owner: np.ndarray | None = None  # (m,) tree of each prepared seed

    def _prepare(self) -> None:
        """Draw the next iteration's seed counts and seeds (once; ``ask`` consumes them)."""
        if self._batch is not None:
            return
        rng, N, dim = self.rng, self.n_trees, self.dim
        low, high = self.seed_range
        ns = seed_counts(rng.random(N), low, high)
        owner = np.repeat(np.arange(N), ns)
        m = owner.size
        other = draw_other_trees(owner, rng.random(m), N)
        alpha = self._steps(m, dim)
        use_best = rng.random((m, dim)) < self.search_tendency
        assert self._T is not None and self._fT is not None
        best = self._T[int(np.argmin(self._fT))]
        self._batch = np.clip(tsa_seeds(self._T, best, owner, other, alpha, use_best), 0.0, 1.0)
        self._owner = owner

    def _steps(self, m: int, dim: int) -> np.ndarray:
        """The ``(m, dim)`` step factors ``alpha`` of eqs. 3-4: uniform in ``[-1, 1]`` (Kiran)."""
        return self.rng.uniform(-1.0, 1.0, (m, dim))

    def _next_batch_size(self) -> int:
        if self._T is None:
            return self.n_trees
        self._prepare()
        assert self._batch is not None
        return self._batch.shape[0]

    def _ask(self) -> np.ndarray:
        if self._T is None:
            return self._random_points(self.n_trees)
        self._prepare()
        S, self._batch = self._batch, None
        assert S is not None
        return S

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        if self._T is None:
            self._T, self._fT = X.copy(), f.copy()
            return
        assert self._fT is not None and self._owner is not None
        self._T, self._fT = replace_by_best_seed(self._T, self._fT, X, f, self._owner)
        self._owner = None
