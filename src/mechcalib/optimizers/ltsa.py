"""Tree-seed algorithm with Lévy-flight seed steps (the ``ltsa`` of the hysteresis comparison).

Ding et al. (2021) compare their I-ABC with "the tree seed algorithm (Ding et al., 2019)", an *improved Lévy
tree-seed algorithm* (Ding, Li, Hao and Lu 2019, Swarm and Evolutionary Computation 46: 69-83). That paper's
update rules could not be obtained (the public literature and code searched hold its title and abstract-level
descriptions of Lévy-flight TSA variants, not its equations; docs/hysteresis.md lists where we looked). This
class is therefore the generic Lévy-flight TSA that those descriptions share: Kiran's (2015) tree-seed
algorithm (:mod:`mechcalib.optimizers.tsa`, eqs. 3-4) with the uniform step ``alpha ~ U[-1, 1]`` of each seed
and dimension replaced by a Lévy-stable step drawn with Mantegna's (1994) algorithm:

* ``S_sj = T_ij + L_sj (B_j - T_rj)``  with probability ``ST`` (Kiran's eq. 3),
* ``S_sj = T_ij + L_sj (T_ij - T_rj)``  otherwise (Kiran's eq. 4),
* ``L_sj = scale * u / |v|^(1/beta)``,  ``u ~ N(0, sigma_u^2)``, ``v ~ N(0, 1)`` (Mantegna 1994, eq. 15),
* ``sigma_u = [Gamma(1 + beta) sin(pi beta / 2) / (Gamma((1 + beta) / 2) beta 2^((beta - 1) / 2))]^(1/beta)``
  (:func:`mantegna_sigma`; Yang and Deb's (2009) cuckoo-search form, ``beta = 1.5``).

Most steps are short (the median ``|L|`` is about 0.45 for ``beta = 1.5``, against 0.5 for the uniform step),
a few are long jumps (the distribution's tail falls as ``|L|^-(1 + beta)``), which is what the Lévy variants add
to Kiran's search. Everything else (seed counts, synchronous replacement, clipping to the cube) is
:class:`~mechcalib.optimizers.tsa.TSA`'s; the settings are Kiran's (``ST = 0.1``, 10 %-25 % of the stand as
seeds per tree) with the usual ``beta = 1.5`` and ``scale = 1`` (the uniform step's scale).
"""

from __future__ import annotations

import math

import numpy as np

from ._base import SeedLike, check_range
from .tsa import TSA

__all__ = ["LevyTSA", "mantegna_sigma", "levy_steps"]


def mantegna_sigma(beta: float) -> float:
    """``sigma_u`` of Mantegna's algorithm for the stability index ``beta`` in ``(0, 2]`` (1.5: 0.6966)."""
    num = math.gamma(1.0 + beta) * math.sin(math.pi * beta / 2.0)
    den = math.gamma((1.0 + beta) / 2.0) * beta * 2.0 ** ((beta - 1.0) / 2.0)
    return (num / den) ** (1.0 / beta)


def levy_steps(u: np.ndarray, v: np.ndarray, beta: float, scale: float = 1.0) -> np.ndarray:
    """Lévy-flight steps ``scale * sigma_u u / |v|^(1/beta)`` from standard normal draws ``u``, ``v``.

    Args:
        u, v: arrays of one shape, independent standard normal numbers (``u`` is scaled by ``sigma_u`` here).
        beta: stability index (1.5 by default in :class:`LevyTSA`).
        scale: the step scale.

    Returns:
        The steps, same shape as ``u``.
    """
    return (
        scale * mantegna_sigma(beta) * np.asarray(u, dtype=float) / np.abs(np.asarray(v, dtype=float)) ** (1.0 / beta)
    )


class LevyTSA(TSA):
    """Tree-seed algorithm with Lévy-flight steps (see the module docstring), one iteration per ``ask``.

    Args:
        beta: stability index of the Lévy steps, in ``(0, 2]`` (1.5).
        levy_scale: the steps' scale (1.0: the magnitude of Kiran's uniform step).
        n_trees, search_tendency, seed_min_fraction, seed_max_fraction, seed: as :class:`TSA`.
    """

    name = "ltsa"

    def __init__(
        self,
        *,
        n_trees: int = 10,
        search_tendency: float = 0.1,
        seed_min_fraction: float = 0.1,
        seed_max_fraction: float = 0.25,
        beta: float = 1.5,
        levy_scale: float = 1.0,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(
            n_trees=n_trees,
            search_tendency=search_tendency,
            seed_min_fraction=seed_min_fraction,
            seed_max_fraction=seed_max_fraction,
            seed=seed,
        )
        self.beta = check_range(self.name, "beta", beta, 0.0, 2.0, lo_open=True)
        self.levy_scale = check_range(self.name, "levy_scale", levy_scale, 0.0, np.inf, lo_open=True)

    def _steps(self, m: int, dim: int) -> np.ndarray:
        """Mantegna's Lévy steps in place of Kiran's uniform factors (the rest of the iteration is :class:`TSA`'s)."""
        u = self.rng.standard_normal((m, dim))
        v = self.rng.standard_normal((m, dim))
        return levy_steps(u, v, self.beta, self.levy_scale)
