"""Sampling-based sensitivity analysis and response reduction (Mareš et al. (2016), section 5).

* :func:`spearman` : Spearman's rank correlation of each parameter with each response component
  (Fig. 4b), computed for all pairs at once.
* :class:`PCA` : principal components of the responses (Fig. 5a: variance explained), with
  :func:`spearman` of the parameters against the component scores giving Fig. 5b.
* :func:`sobol` : Sobol' first-order and total indices through SALib (beyond the paper; the optional
  extra ``mechcalib[sensitivity]``, imported only when called).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from ..errors import ConfigurationError, require


def _pearson_columns(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``(p, q)`` Pearson correlations between the columns of ``A`` ``(n, p)`` and ``B`` ``(n, q)``;
    NaN where a column is constant."""
    A = A - A.mean(axis=0)
    B = B - B.mean(axis=0)
    na = np.sqrt(np.sum(A * A, axis=0))
    nb = np.sqrt(np.sum(B * B, axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (A.T @ B) / np.outer(na, nb)


def spearman(P: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Spearman's rank correlation ρ for every (parameter, response component) pair (Mareš et al. (2016), Fig. 4b).

    Args:
        P: ``(n, d)`` parameters of ``n`` simulations.
        Y: ``(n, m)`` responses (or principal-component scores for Fig. 5b).

    Returns:
        ``(d, m)`` ρ; NaN where a response component is constant over the sample (ρ undefined).
    """
    P = np.atleast_2d(np.asarray(P, dtype=float))
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    if P.shape[0] != Y.shape[0]:
        raise ConfigurationError(f"P and Y need the same number of rows, got {P.shape[0]} and {Y.shape[0]}")
    return _pearson_columns(rankdata(P, axis=0), rankdata(Y, axis=0))


@dataclass
class PCA:
    """Principal component analysis of responses (Mareš et al. (2016), section 5).

    ``fit`` centres ``Y`` ``(n, m)`` and takes its SVD; the number of components with non-zero variance is
    at most ``min(n, m)`` (``N_PCA = N_DoE`` in the paper). ``transform`` gives the scores ``ᾱ``.

    Attributes (after fit):
        mean: ``(m,)`` column means.
        components: ``(k, m)`` principal directions, rows ordered by decreasing variance.
        variance: ``(k,)`` variance of each component's scores.
        explained: ``(k,)`` fraction of the total variance (Fig. 5a).
    """

    n_components: int | None = None

    def fit(self, Y: np.ndarray) -> PCA:
        Y = np.atleast_2d(np.asarray(Y, dtype=float))
        self.mean = Y.mean(axis=0)
        _, s, Vt = np.linalg.svd(Y - self.mean, full_matrices=False)
        k = len(s) if self.n_components is None else min(int(self.n_components), len(s))
        var = s * s / max(Y.shape[0] - 1, 1)
        self.components = Vt[:k]
        self.variance = var[:k]
        total = var.sum()
        self.explained = var[:k] / total if total > 0 else np.zeros(k)
        # a fixed sign convention (largest loading positive) makes scores reproducible across fits
        sign = np.sign(self.components[np.arange(k), np.argmax(np.abs(self.components), axis=1)])
        self.components = self.components * np.where(sign == 0, 1.0, sign)[:, None]
        return self

    def transform(self, Y: np.ndarray) -> np.ndarray:
        """``(n, m)`` responses -> ``(n, k)`` scores."""
        return (np.atleast_2d(np.asarray(Y, dtype=float)) - self.mean) @ self.components.T

    def inverse_transform(self, S: np.ndarray) -> np.ndarray:
        """``(n, j)`` scores of the first ``j`` components -> ``(n, m)`` responses."""
        S = np.atleast_2d(np.asarray(S, dtype=float))
        return self.mean + S @ self.components[: S.shape[1]]


def salib_seed(seed: int | None) -> int | None:
    """The seed to hand SALib's analysers: they test ``if seed:``, so a seed of 0 would leave their bootstrap to
    NumPy's global random state (not reproducible); 0 goes in as ``2**32 - 1``, any other seed as it is."""
    return 2**32 - 1 if seed == 0 else seed


def sobol(
    fn: Callable[[np.ndarray], np.ndarray],
    d: int,
    *,
    n: int = 512,
    names: tuple[str, ...] | None = None,
    seed: int | None = None,
) -> dict[str, np.ndarray]:
    """Sobol' indices of a vectorised function of the unit cube through SALib (Saltelli sampling).

    Args:
        fn: maps ``(N, d)`` points in ``[0, 1]^d`` to ``(N,)`` or ``(N, m)`` outputs.
        d: number of inputs.
        n: base sample size (a power of 2); ``fn`` is called on ``n (2 d + 2)`` points.

    Returns:
        ``{"S1": (d, m), "ST": (d, m), "S1_conf": ..., "ST_conf": ...}``; ``m = 1`` for a scalar output.

    Raises:
        MissingExtraError: when SALib is missing, naming the extra to install.
    """
    require("SALib", "sensitivity")
    from SALib.analyze import sobol as sobol_analyze
    from SALib.sample import sobol as sobol_sample

    names = tuple(names) if names is not None else tuple(f"p{i + 1}" for i in range(d))
    problem = {"num_vars": int(d), "names": list(names), "bounds": [[0.0, 1.0]] * int(d)}
    X = sobol_sample.sample(problem, int(n), calc_second_order=False, seed=seed)
    Y = np.asarray(fn(X), dtype=float)
    Y = Y[:, None] if Y.ndim == 1 else Y
    out = {k: np.empty((d, Y.shape[1])) for k in ("S1", "ST", "S1_conf", "ST_conf")}
    for j in range(Y.shape[1]):
        col = Y[:, j]
        if np.ptp(col) == 0:  # no variance: indices undefined
            for arr in out.values():
                arr[:, j] = np.nan
            continue
        res = sobol_analyze.analyze(problem, col, calc_second_order=False, seed=salib_seed(seed))
        for k, arr in out.items():
            arr[:, j] = res[k]
    return out
