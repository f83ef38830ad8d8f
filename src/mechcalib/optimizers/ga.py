"""Real-coded elitist genetic algorithm of Kibriya et al. (2023) (section 3.1), as run there through ``geneticalgorithm``.

Kibriya et al. (2023) (section 3.1, 3.5) specifies real-valued genes, fitness-proportionate selection, uniform crossover
with probability 0.5 per gene giving two complementary offspring, random mutation with probability 10 % per
gene and a population of 10; the computations were done with the ``geneticalgorithm`` Python library
(R. M. Solgi, 2020), whose remaining defaults (one elite, a parents portion of 0.3, a mating probability of
0.5) fill in what the paper leaves open. One generation of that library, in unit-cube coordinates:

1. sort the population by loss; selection probabilities follow :func:`selection_probabilities`;
2. parents: the ``n_elite`` best members, then ``n_parents - n_elite`` members drawn by roulette wheel
   (with replacement, :func:`roulette_select`);
3. mating pool: each parent enters it with probability ``mating_probability`` (redrawn until non-empty);
4. offspring, in pairs: two pool members drawn uniformly (with replacement) are crossed
   (:func:`uniform_crossover`); the first child's genes are reset with probability
   ``mutation_probability`` to a uniform value in ``[0, 1]``, the second child's to a uniform value between
   the parents' genes (``mutation="library"``, the library's ``mutmidle``; where the parents' genes are
   equal, in ``[0, 1]``) or in ``[0, 1]`` (``mutation="uniform"``) (:func:`random_reset`);
5. the new population is the parents (unchanged, with their known losses) plus the offspring.

All operators keep points inside ``[0, 1]`` by construction (genes are copied or drawn inside the cube), so
no repair rule is needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.presets import Preset, deprecated_preset, presets_by_name
from ..errors import ConfigurationError
from ._base import Optimizer, SeedLike, check_choice, check_positive_int, check_range

__all__ = [
    "GA",
    "selection_probabilities",
    "roulette_select",
    "uniform_crossover",
    "random_reset",
    "between_parents_bounds",
]


def selection_probabilities(f: np.ndarray) -> np.ndarray:
    """Fitness-proportionate selection probabilities from losses (lower loss, higher probability).

    The rule of ``geneticalgorithm`` (Kibriya et al. (2023) section 3.5): losses are shifted by ``|min f|`` when the minimum
    is negative (which cancels out below), the weights are ``w_i = max(f) - f_i + 1`` and ``p_i = w_i / sum w``.
    The worst member keeps weight 1, so every finite member can be selected; note that for losses much
    smaller than 1 the weights are all close to 1 and selection is nearly uniform (the library's behaviour).

    Infinite losses (failed simulations) get probability 0 -- the limit of the rule as one loss grows without
    bound -- and the finite members share the probability by the rule applied to the finite losses alone.
    When no loss is finite the probabilities are uniform.

    Args:
        f: ``(n,)`` losses; ``+inf`` allowed (NaN is not: the optimiser base turns it into ``+inf``).

    Returns:
        ``(n,)`` probabilities summing to 1.
    """
    f = np.asarray(f, dtype=float)
    finite = np.isfinite(f)
    if not finite.any():
        return np.full(f.shape, 1.0 / f.size)
    ff = f[finite]
    if ff.min() < 0:  # the library's shift; kept for fidelity although max - f cancels it
        ff = ff + abs(ff.min())
    w = np.zeros_like(f)
    w[finite] = ff.max() - ff + 1.0
    return w / w.sum()


def roulette_select(p: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Roulette-wheel draws: member ``i`` is chosen when ``cumsum(p)[i-1] <= u < cumsum(p)[i]``.

    Args:
        p: ``(n,)`` selection probabilities (:func:`selection_probabilities`).
        u: ``(m,)`` uniform numbers in ``[0, 1)``.

    Returns:
        ``(m,)`` member indices. A zero-probability member is never chosen; a ``u`` above the rounded total
        falls to the last member with positive probability.
    """
    p = np.asarray(p, dtype=float)
    cum = np.cumsum(p)
    idx = np.searchsorted(cum, np.asarray(u, dtype=float), side="right")
    last = int(np.flatnonzero(p > 0)[-1])
    return np.minimum(idx, last)


def uniform_crossover(p1: np.ndarray, p2: np.ndarray, swap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Uniform crossover (Kibriya et al. (2023) section 3.1): two complementary offspring per pair of parents.

    Where ``swap`` is True the first child takes the gene of the second parent and the second child that of
    the first parent; elsewhere each child keeps its own parent's gene. With ``swap`` drawn as
    ``u < 0.5`` each gene comes from either parent with probability 0.5.

    Args:
        p1, p2: ``(m, dim)`` first and second parents of ``m`` pairs.
        swap: ``(m, dim)`` boolean mask.

    Returns:
        ``(c1, c2)``, each ``(m, dim)``; ``c1 + c2 == p1 + p2`` gene by gene.
    """
    c1 = np.where(swap, p2, p1)
    c2 = np.where(swap, p1, p2)
    return c1, c2


def random_reset(
    x: np.ndarray, mask: np.ndarray, lo: np.ndarray | float, hi: np.ndarray | float, u: np.ndarray
) -> np.ndarray:
    """Random mutation (Kibriya et al. (2023) section 3.1): genes under ``mask`` are replaced by ``lo + u * (hi - lo)``.

    Args:
        x: ``(m, dim)`` offspring.
        mask: ``(m, dim)`` boolean, True where a gene mutates (drawn as ``u' < mutation_probability``).
        lo, hi: range of the new value, scalars or ``(m, dim)`` (``0, 1`` for the whole unit interval).
        u: ``(m, dim)`` uniform numbers in ``[0, 1)``.

    Returns:
        ``(m, dim)`` mutated copy.
    """
    return np.where(mask, lo + u * (np.asarray(hi) - lo), x)


def between_parents_bounds(p1: np.ndarray, p2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reset range of the second child in ``geneticalgorithm`` (``mutmidle``): between the parents' genes.

    Args:
        p1, p2: ``(m, dim)`` parents.

    Returns:
        ``(lo, hi)``, each ``(m, dim)``: ``min``/``max`` of the parents' genes, or ``0``/``1`` where the two
        genes are equal (the library then draws over the whole range).
    """
    lo = np.minimum(p1, p2)
    hi = np.maximum(p1, p2)
    same = lo == hi
    return np.where(same, 0.0, lo), np.where(same, 1.0, hi)


class GA(Optimizer):
    """Elitist real-coded genetic algorithm (Kibriya et al. (2023) section 3.1; ``geneticalgorithm`` library rules).

    Batches: the first ``ask`` returns the ``pop_size`` random initial chromosomes; every later ``ask`` returns
    one generation of offspring, ``n_offspring = pop_size - n_parents`` points. Parents (elites included) pass
    into the next generation unchanged and are not re-evaluated: their known losses are kept, as the library
    does. With the Kibriya et al. (2023) settings (population 10) that is 10 evaluations, then 6 per generation (Kibriya et al. (2023)
    section 4 states ten simulations per iteration for every method; the library it names evaluates only the
    offspring, which is what is reproduced here).

    Args:
        pop_size: chromosomes in the population (Kibriya et al. (2023): 10).
        mutation_probability: per-gene random-reset probability (Kibriya et al. (2023): 0.1).
        gene_swap_probability: per-gene swap probability of the uniform crossover (Kibriya et al. (2023): 0.5; fixed at
            0.5 in the library).
        mating_probability: probability that a selected parent enters the mating pool (the library's
            ``crossover_probability``, default 0.5).
        elite_ratio: elites ``= int(elite_ratio * pop_size)``, at least 1 when ``elite_ratio > 0`` (library
            default 0.01, i.e. one elite).
        parents_portion: parents ``= int(parents_portion * pop_size)``, plus one when that leaves an odd number
            of offspring (library default 0.3, i.e. 4 parents and 6 offspring for a population of 10).
        mutation: ``"library"`` (second child reset between its parents' genes, as ``geneticalgorithm``) or
            ``"uniform"`` (both children reset over ``[0, 1]``).
        seed: random seed or generator.

    The class defaults are the Kibriya et al. (2023) / library values, so :meth:`kibriya2023` equals ``GA()``.
    """

    name = "ga"
    setting_presets = presets_by_name(
        Preset(
            name="kibriya2023",
            source="Kibriya et al. (2023), sections 3.1, 3.5 and 4 (geneticalgorithm defaults)",
            settings=dict(
                pop_size=10,
                mutation_probability=0.1,
                gene_swap_probability=0.5,
                mating_probability=0.5,
                elite_ratio=0.01,
                parents_portion=0.3,
                mutation="library",
            ),
            aliases=("paper_000",),
        ),
    )

    def __init__(
        self,
        *,
        pop_size: int = 10,
        mutation_probability: float = 0.1,
        gene_swap_probability: float = 0.5,
        mating_probability: float = 0.5,
        elite_ratio: float = 0.01,
        parents_portion: float = 0.3,
        mutation: str = "library",
        seed: SeedLike = None,
    ) -> None:
        super().__init__(seed=seed)
        self.pop_size = check_positive_int(self.name, "pop_size", pop_size, minimum=3)
        self.mutation_probability = check_range(self.name, "mutation_probability", mutation_probability, 0.0, 1.0)
        self.gene_swap_probability = check_range(self.name, "gene_swap_probability", gene_swap_probability, 0.0, 1.0)
        self.mating_probability = check_range(
            self.name, "mating_probability", mating_probability, 0.0, 1.0, lo_open=True
        )
        self.elite_ratio = check_range(self.name, "elite_ratio", elite_ratio, 0.0, 1.0)
        self.parents_portion = check_range(self.name, "parents_portion", parents_portion, 0.0, 1.0)
        self.mutation = check_choice(self.name, "mutation", mutation, ("library", "uniform"))
        if self.n_parents < max(1, self.n_elite):
            raise ConfigurationError(
                f"{self.name}: parents_portion={parents_portion!r} gives {self.n_parents} parents for "
                f"{self.n_elite} elites (pop_size={self.pop_size}); raise parents_portion so that there are at "
                f"least max(1, elites) parents"
            )
        if self.n_offspring < 2:
            raise ConfigurationError(
                f"{self.name}: pop_size={self.pop_size} with parents_portion={parents_portion!r} leaves "
                f"{self.n_offspring} offspring per generation; lower parents_portion or raise pop_size so that "
                f"at least 2 offspring remain"
            )

    @classmethod
    def kibriya2023(cls, **overrides: Any) -> GA:
        """Kibriya et al. (2023) (sections 3.1, 3.5, 4): population 10, uniform crossover 0.5, mutation 0.1, with the
        ``geneticalgorithm`` defaults elite_ratio 0.01 (one elite), parents_portion 0.3 (four parents) and
        crossover (mating) probability 0.5."""
        return cls(**cls.setting_presets["kibriya2023"].merged(overrides))

    paper_000 = deprecated_preset("paper_000")

    # -- derived sizes (the library's integer rules) -------------------------------------------------
    @property
    def n_elite(self) -> int:
        """Elites per generation: ``int(elite_ratio * pop_size)``, but 1 when that is below 1 and the ratio > 0."""
        t = self.pop_size * self.elite_ratio
        return 1 if (t < 1 and self.elite_ratio > 0) else int(t)

    @property
    def n_parents(self) -> int:
        """Parents kept per generation: ``int(parents_portion * pop_size)``, +1 if the offspring count is odd."""
        n = int(self.parents_portion * self.pop_size)
        return n + 1 if (self.pop_size - n) % 2 else n

    @property
    def n_offspring(self) -> int:
        """New (evaluated) chromosomes per generation."""
        return self.pop_size - self.n_parents

    # -- protocol --------------------------------------------------------------------------------------
    def _init_state(self) -> None:
        self._pop: np.ndarray | None = None  # (pop_size, dim) current population
        self._fit: np.ndarray | None = None  # (pop_size,) its losses
        self._parents: np.ndarray | None = None  # (n_parents, dim) parents of the pending offspring
        self._parent_f: np.ndarray | None = None

    def _next_batch_size(self) -> int:
        return self.pop_size if self._pop is None else self.n_offspring

    def _ask(self) -> np.ndarray:
        if self._pop is None:
            return self._random_points(self.pop_size)
        rng, dim = self.rng, self.dim
        assert self._fit is not None
        order = np.argsort(self._fit, kind="stable")
        pop, fit = self._pop[order], self._fit[order]
        p = selection_probabilities(fit)
        n_par, n_el = self.n_parents, self.n_elite
        idx = np.concatenate([np.arange(n_el), roulette_select(p, rng.random(n_par - n_el))])
        self._parents, self._parent_f = pop[idx], fit[idx]
        pool = rng.random(n_par) < self.mating_probability
        while not pool.any():  # the library redraws until at least one parent may mate
            pool = rng.random(n_par) < self.mating_probability
        pool_idx = np.flatnonzero(pool)
        m = self.n_offspring // 2
        p1 = self._parents[pool_idx[rng.integers(0, pool_idx.size, m)]]
        p2 = self._parents[pool_idx[rng.integers(0, pool_idx.size, m)]]
        c1, c2 = uniform_crossover(p1, p2, rng.random((m, dim)) < self.gene_swap_probability)
        c1 = random_reset(c1, rng.random((m, dim)) < self.mutation_probability, 0.0, 1.0, rng.random((m, dim)))
        lo, hi = between_parents_bounds(p1, p2) if self.mutation == "library" else (0.0, 1.0)
        c2 = random_reset(c2, rng.random((m, dim)) < self.mutation_probability, lo, hi, rng.random((m, dim)))
        return np.stack([c1, c2], axis=1).reshape(-1, dim)  # pairs kept adjacent, as in the library

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        if self._pop is None:
            self._pop, self._fit = X.copy(), f.copy()
            return
        assert self._parents is not None and self._parent_f is not None
        self._pop = np.vstack([self._parents, X])
        self._fit = np.concatenate([self._parent_f, f])
        self._parents = self._parent_f = None
