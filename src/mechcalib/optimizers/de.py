"""Differential evolution DE/rand/1/bin (Storn & Price 1997) over the unit cube.

R. Storn, K. Price, "Differential Evolution - A Simple and Efficient Heuristic for Global Optimization over
Continuous Spaces", Journal of Global Optimization 11 (1997) 341-359. One generation, for every target
vector ``x_i`` of the population of ``NP``:

* mutation: ``v_i = x_r1 + F (x_r2 - x_r3)``, with ``r1, r2, r3`` distinct, different from
  ``i`` and drawn anew for every ``i`` (:func:`draw_donors`, :func:`rand1_mutation`);
* bounds: a mutant coordinate outside ``[0, 1]`` is redrawn uniformly between the base vector's
  coordinate ``x_r1,j`` and the violated bound ("bounce-back", as in Price, Storn & Lampinen, *Differential Evolution*, 2005),
  which keeps points inside the cube without piling them on the wall (:func:`bounce_back`);
* binomial crossover: ``u_ij = v_ij`` if ``rand_ij < CR`` or ``j = j_rand``, else
  ``x_ij``; ``j_rand`` (drawn per vector) guarantees that the trial differs from the target
  (:func:`binomial_crossover`);
* selection: the trial replaces its target when ``f(u_i) <= f(x_i)`` (one-to-one, greedy;
  :func:`greedy_selection`).

One ``ask`` returns all ``NP`` trial vectors of a generation (the first ``ask`` the random initial
population), so the population is updated synchronously after each generation, as in the 1997 paper.
"""

from __future__ import annotations

import numpy as np

from ..errors import SettingError
from ._base import Optimizer, SeedLike, check_positive_int, check_range

__all__ = ["DE", "draw_donors", "rand1_mutation", "bounce_back", "binomial_crossover", "greedy_selection"]


def draw_donors(rng: np.random.Generator, n: int) -> np.ndarray:
    """Indices ``(r1, r2, r3)`` for each of ``n`` targets: mutually distinct and different from the target.

    Args:
        rng: the optimiser's generator.
        n: population size (at least 4).

    Returns:
        ``(n, 3)`` integer array; row ``i`` holds ``r1, r2, r3`` of target ``i``.
    """
    keys = rng.random((n, n))
    np.fill_diagonal(keys, np.inf)  # the target itself sorts last and is never among the first three
    return np.argsort(keys, axis=1)[:, :3]


def rand1_mutation(X: np.ndarray, r: np.ndarray, F: float | np.ndarray) -> np.ndarray:
    """DE/rand/1 mutant vectors (Storn & Price 1997): ``v_i = x_r1 + F (x_r2 - x_r3)``.

    Args:
        X: ``(n, dim)`` population.
        r: ``(n, 3)`` donor indices (:func:`draw_donors`).
        F: differential weight, a scalar or ``(n,)`` (one per vector, for dither).

    Returns:
        ``(n, dim)`` mutants (may leave the unit cube).
    """
    F = np.asarray(F, dtype=float).reshape(-1, 1) if np.ndim(F) else float(F)
    return X[r[:, 0]] + F * (X[r[:, 1]] - X[r[:, 2]])


def bounce_back(V: np.ndarray, base: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Bring mutants into ``[0, 1]``: a violating coordinate is redrawn between the base vector and the bound.

    ``v_j < 0  ->  base_j + u_j (0 - base_j)``; ``v_j > 1  ->  base_j + u_j (1 - base_j)``; other
    coordinates are kept.

    Args:
        V: ``(n, dim)`` mutants.
        base: ``(n, dim)`` base vectors ``x_r1`` (inside the cube).
        u: ``(n, dim)`` uniform numbers in ``[0, 1)``.

    Returns:
        ``(n, dim)`` mutants inside ``[0, 1]``.
    """
    V = np.where(V < 0.0, base - u * base, V)
    return np.where(V > 1.0, base + u * (1.0 - base), V)


def binomial_crossover(X: np.ndarray, V: np.ndarray, u: np.ndarray, j_rand: np.ndarray, CR: float) -> np.ndarray:
    """Binomial crossover (Storn & Price 1997).

    ``u_ij = v_ij`` if ``rand_ij < CR`` or ``j == j_rand_i``, else ``x_ij``.

    Args:
        X: ``(n, dim)`` targets.
        V: ``(n, dim)`` mutants.
        u: ``(n, dim)`` uniform numbers ``rand_ij`` in ``[0, 1)``.
        j_rand: ``(n,)`` integer index per vector, the coordinate always taken from the mutant.
        CR: crossover probability.

    Returns:
        ``(n, dim)`` trial vectors.
    """
    take = (u < CR) | (np.arange(X.shape[1])[None, :] == np.asarray(j_rand)[:, None])
    return np.where(take, V, X)


def greedy_selection(X: np.ndarray, fx: np.ndarray, U: np.ndarray, fu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One-to-one survivor selection: the trial replaces its target when ``f(u_i) <= f(x_i)``.

    Args:
        X, fx: ``(n, dim)`` targets and their ``(n,)`` losses.
        U, fu: ``(n, dim)`` trials and their ``(n,)`` losses (``+inf`` allowed; ``inf <= inf`` lets a failed
            trial replace a failed target, which keeps the population moving).

    Returns:
        New ``(X, fx)``.
    """
    win = fu <= fx
    return np.where(win[:, None], U, X), np.where(win, fu, fx)


class DE(Optimizer):
    """Differential evolution DE/rand/1/bin (Storn & Price 1997).

    Args:
        pop_size: ``NP``; ``None`` uses Storn & Price's rule of thumb ``NP = 10 * dim`` (set at ``setup``).
            At least 4 (three donors besides the target).
        F: differential weight (Storn & Price: 0.5 is a good first choice).
        CR: crossover probability (0.9 for non-separable problems, as recommended by Storn & Price).
        dither: ``None``, or ``(F_min, F_max)``: each trial vector then draws its own ``F`` uniformly from that
            range and the ``F`` setting is unused ("dither", Price, Storn & Lampinen 2005; e.g. ``(0.5, 1.0)``).
        seed: random seed or generator.

    Points stay in the unit cube by :func:`bounce_back`. Batches: ``NP`` initial points, then ``NP`` trials
    per generation.
    """

    name = "de"

    def __init__(
        self,
        *,
        pop_size: int | None = None,
        F: float = 0.5,
        CR: float = 0.9,
        dither: tuple[float, float] | None = None,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(seed=seed)
        self.pop_size = None if pop_size is None else check_positive_int(self.name, "pop_size", pop_size, minimum=4)
        self.F = check_range(self.name, "F", F, 0.0, 2.0, lo_open=True)
        self.CR = check_range(self.name, "CR", CR, 0.0, 1.0)
        if dither is not None:
            try:
                lo, hi = (float(v) for v in dither)
            except (TypeError, ValueError):
                raise SettingError(self.name, "dither", "None or a pair (F_min, F_max)", dither) from None
            check_range(self.name, "dither[0]", lo, 0.0, 2.0, lo_open=True)
            check_range(self.name, "dither[1]", hi, 0.0, 2.0, lo_open=True)
            if hi < lo:
                raise SettingError(
                    self.name,
                    "dither",
                    "a pair with F_min <= F_max",
                    dither,
                    message=f"{self.name}: dither must satisfy F_min <= F_max, got {dither!r}",
                )
            dither = (lo, hi)
        self.dither = dither

    @property
    def n_pop(self) -> int:
        """The population size in use (``pop_size`` or ``10 * dim``); valid after ``setup``."""
        return self.pop_size if self.pop_size is not None else max(4, 10 * int(self.dim))

    def _init_state(self) -> None:
        self._X: np.ndarray | None = None  # (NP, dim) population
        self._f: np.ndarray | None = None  # (NP,) its losses

    def _next_batch_size(self) -> int:
        return self.n_pop

    def _ask(self) -> np.ndarray:
        n = self.n_pop
        if self._X is None:
            return self._random_points(n)
        rng, dim = self.rng, self.dim
        r = draw_donors(rng, n)
        F = self.F if self.dither is None else rng.uniform(self.dither[0], self.dither[1], n)
        V = bounce_back(rand1_mutation(self._X, r, F), self._X[r[:, 0]], rng.random((n, dim)))
        return binomial_crossover(self._X, V, rng.random((n, dim)), rng.integers(0, dim, n), self.CR)

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        if self._X is None:
            self._X, self._f = X.copy(), f.copy()
        else:
            assert self._f is not None
            self._X, self._f = greedy_selection(self._X, self._f, X, f)

    # -- asynchronous variant -----------------------------------------------------------------------
    asynchronous_variant = "steady-state DE (Storn & Price 1997; asynchronous, Zhabitsky & Zhabitskaya 2013)"

    def ask_async(self, n: int) -> np.ndarray:
        """Steady-state DE for asynchronous evaluation: the first ``NP`` tickets are the initial population
        (uniform points); each later ticket is one DE/rand/1/bin trial for the next target in turn (cyclic),
        built from the population as it stands when the slot frees (a member still being evaluated takes part
        by its position). See :meth:`tell_async` for the selection."""
        st = self.__dict__.get("_steady")
        NP, dim, rng = self.n_pop, int(self.dim), self.rng
        if st is None:
            st = {"X": np.zeros((NP, dim)), "f": np.full(NP, np.inf), "slot": {}, "asked": 0}
            self.__dict__["_steady"] = st
        rows = []
        for _ in range(int(n)):
            t = self._tickets
            k = st["asked"]
            i = k % NP
            if k < NP:
                u = self._random_points(1)[0]
                st["X"][i] = u
            else:
                keys = rng.random(NP)
                keys[i] = np.inf
                r = np.argsort(keys)[:3].reshape(1, 3)
                F = self.F if self.dither is None else rng.uniform(self.dither[0], self.dither[1], 1)
                X = st["X"]
                V = bounce_back(rand1_mutation(X, r, F), X[r[:, 0]], rng.random((1, dim)))
                u = binomial_crossover(X[i : i + 1], V, rng.random((1, dim)), rng.integers(0, dim, 1), self.CR)[0]
            st["slot"][t] = (i, u.copy())
            st["asked"] = k + 1
            self._tickets_add(1)
            rows.append(u)
        return np.array(rows, dtype=float).reshape(-1, dim)

    def tell_async(self, ticket: int, u: np.ndarray, f: float, residuals: np.ndarray | None = None) -> None:
        """Greedy one-to-one selection at once: the told point replaces its target when ``f <= f_target``
        (the target as it stands now; an initial member still being evaluated counts as ``+inf``)."""
        st = self.__dict__["_steady"]
        i, point = st["slot"].pop(ticket)
        f = np.inf if np.isnan(f) else float(f)
        if f <= st["f"][i]:
            st["X"][i], st["f"][i] = point, f
        self._X, self._f = st["X"].copy(), st["f"].copy()
        self._note_async_best(point, f)
