"""Baselines: uniform random search and Latin-hypercube sampling."""

from __future__ import annotations

import numpy as np
from scipy.stats import qmc

from ._base import Optimizer, SeedLike, check_choice, check_positive_int


class RandomSearch(Optimizer):
    """Uniform random points in the unit cube, ``batch_size`` per ask."""

    name = "random"

    def __init__(self, *, batch_size: int = 10, seed: SeedLike = None) -> None:
        super().__init__(seed=seed)
        self.batch_size = check_positive_int(self.name, "batch_size", batch_size)

    def _init_state(self) -> None:
        pass

    def _ask(self) -> np.ndarray:
        return self._random_points(self.batch_size)

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        pass

    def _next_batch_size(self) -> int:
        return self.batch_size


class LatinHypercube(RandomSearch):
    """Latin-hypercube designs of ``batch_size`` points, a fresh (independently scrambled) design per ask.

    ``optimization`` is passed to :class:`scipy.stats.qmc.LatinHypercube` (``None``, ``"random-cd"`` or
    ``"lloyd"``).
    """

    name = "lhs"

    def __init__(self, *, batch_size: int = 10, optimization: str | None = None, seed: SeedLike = None) -> None:
        super().__init__(batch_size=batch_size, seed=seed)
        self.optimization = check_choice(self.name, "optimization", optimization, (None, "random-cd", "lloyd"))

    def _init_state(self) -> None:
        self._sampler = qmc.LatinHypercube(d=self.dim, optimization=self.optimization, rng=self.rng)

    def _ask(self) -> np.ndarray:
        return self._sampler.random(self.batch_size)

    def _next_batch_size(self) -> int:
        return self.batch_size
