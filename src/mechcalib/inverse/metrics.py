"""Regression metrics of Hu et al. (2024) (Appendix A) and the error quantification of its section 4.2.

Appendix A's formulas are the standard regression measures; for targets ``y`` and predictions ``ŷ`` of
shape ``(n,)`` or ``(n, d)`` (``n`` samples, ``d`` parameters):

* ``MSE = mean((y - ŷ)²)``, ``MAE = mean|y - ŷ|``, ``RMSE = sqrt(MSE)``, ``MedAE = median|y - ŷ|``, each over
  every entry (samples and parameters together, as a loss function sees them);
* quantile (pinball) loss at ``q`` (Table 1: 0.75): ``mean(max(q (y - ŷ), (q - 1) (y - ŷ)))``;
* ``R² = 1 - Σ(y - ŷ)² / Σ(y - ȳ)²`` per parameter, averaged over the parameters (``multioutput="uniform"``,
  the scikit-learn default), or over all entries pooled about each column's mean (``"pooled"``);
* the training time is measured by the trainer (:mod:`.train`) and reported beside these.

The paper reports these on min-max scaled parameters (its MSE of 9.34e-4 and R² of 0.913 are not in physical
units); :class:`~mechcalib.inverse.train.InverseCalibrator` evaluates them the same way.

Section 4.2 (eqs. 27-29): :func:`adaptive_difference` (the adaptive central difference of a discrete sequence),
:func:`systematic_error` (eq. 28 with the Taylor expansion of order 3 at ``ε = 1e-7``), ``e_optimizing`` as the
MSE (eq. 29), and :func:`standard_error`, this package's definition of Table 5's "standard error", which the
paper does not define (see its docstring).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import DataError

METRIC_NAMES = ("MSE", "MAE", "RMSE", "MedAE", "QLoss", "R2")


def _pair(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    yt = np.asarray(y_true, dtype=float)
    yp = np.asarray(y_pred, dtype=float)
    if yt.shape != yp.shape:
        raise DataError(f"targets and predictions must have the same shape, got {yt.shape} and {yp.shape}")
    if yt.size == 0:
        raise DataError("metrics need at least one sample, got none")
    return yt, yp


def mse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean squared error over every entry (eq. 29 when ``y_pred = h_θ(x)``)."""
    yt, yp = _pair(y_true, y_pred)
    return float(np.mean((yt - yp) ** 2))


def mae(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Mean absolute error over every entry."""
    yt, yp = _pair(y_true, y_pred)
    return float(np.mean(np.abs(yt - yp)))


def rmse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Root of :func:`mse`."""
    return math.sqrt(mse(y_true, y_pred))


def medae(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Median absolute error over every entry."""
    yt, yp = _pair(y_true, y_pred)
    return float(np.median(np.abs(yt - yp)))


def quantile_loss(y_true: np.ndarray, y_pred: np.ndarray, q: float = 0.75) -> float:
    """Pinball loss ``mean(max(q r, (q - 1) r))`` with ``r = y - ŷ``: under-prediction costs ``q``, over-prediction
    ``1 - q`` per unit."""
    if not 0.0 < q < 1.0:
        raise DataError(f"the quantile q must lie in (0, 1), got {q!r}")
    yt, yp = _pair(y_true, y_pred)
    r = yt - yp
    return float(np.mean(np.maximum(q * r, (q - 1.0) * r)))


def r2(y_true: np.ndarray, y_pred: np.ndarray, multioutput: str = "uniform") -> float:
    """Coefficient of determination.

    Args:
        multioutput: ``"uniform"``: mean of the per-column ``R²`` (a column with no variance counts 1 when
            predicted exactly, else 0, as in scikit-learn); ``"pooled"``: ``1 - Σ_all (y - ŷ)² / Σ_all (y - ȳ_col)²``.
    """
    yt, yp = _pair(y_true, y_pred)
    if yt.ndim == 1:
        yt, yp = yt[:, None], yp[:, None]
    ss_res = np.sum((yt - yp) ** 2, axis=0)
    ss_tot = np.sum((yt - yt.mean(axis=0)) ** 2, axis=0)
    if multioutput == "pooled":
        tot = float(ss_tot.sum())
        return 1.0 - float(ss_res.sum()) / tot if tot > 0 else float(ss_res.sum() == 0)
    if multioutput != "uniform":
        raise DataError(f"multioutput must be 'uniform' or 'pooled', got {multioutput!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(ss_tot > 0, 1.0 - ss_res / np.where(ss_tot > 0, ss_tot, 1.0), (ss_res == 0).astype(float))
    return float(np.mean(per))


def r2_per_output(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """``(d,)`` ``R²`` of every column."""
    yt, yp = _pair(y_true, y_pred)
    if yt.ndim == 1:
        yt, yp = yt[:, None], yp[:, None]
    return np.array([r2(yt[:, j], yp[:, j]) for j in range(yt.shape[1])])


def regression_metrics(y_true: np.ndarray, y_pred: np.ndarray, q: float = 0.75) -> dict[str, float]:
    """Appendix A's six measures: ``{"MSE", "MAE", "RMSE", "MedAE", "QLoss", "R2"}``."""
    return {
        "MSE": mse(y_true, y_pred),
        "MAE": mae(y_true, y_pred),
        "RMSE": rmse(y_true, y_pred),
        "MedAE": medae(y_true, y_pred),
        "QLoss": quantile_loss(y_true, y_pred, q),
        "R2": r2(y_true, y_pred),
    }


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation coefficient of two equally long sequences (flattened)."""
    x, y = _pair(a, b)
    x, y = x.ravel() - x.mean(), y.ravel() - y.mean()
    den = math.sqrt(float(np.sum(x * x) * np.sum(y * y)))
    return float(np.sum(x * y) / den) if den > 0 else float("nan")


# ------------------------------------------------------------------------------------------------------
# Section 4.2: error quantification
# ------------------------------------------------------------------------------------------------------
def adaptive_difference(f: np.ndarray, s: np.ndarray | None = None) -> np.ndarray:
    """Derivative ``df/ds`` of a discrete sequence by section 4.2's adaptive difference.

    At each interior point the step is the smaller of the distances to the two neighbours,
    ``h_i = min(s_i - s_{i-1}, s_{i+1} - s_i)``, and the derivative is the central difference
    ``(f(s_i + h_i) - f(s_i - h_i)) / (2 h_i)``, the value at the farther side linearly interpolated; the end
    points use forward and backward differences. On a uniform grid this is the ordinary central difference.

    Args:
        f: ``(N,)`` or ``(N, m)`` sequence values (columns differentiated independently), ``N >= 2``.
        s: ``(N,)`` strictly increasing abscissa (default: the sample index ``0..N-1``).

    Returns:
        Array shaped like ``f``.
    """
    F = np.asarray(f, dtype=float)
    one = F.ndim == 1
    if one:
        F = F[:, None]
    N = F.shape[0]
    if N < 2:
        raise DataError(f"adaptive_difference needs at least 2 samples, got {N}")
    S = np.arange(N, dtype=float) if s is None else np.asarray(s, dtype=float)
    if S.shape != (N,) or np.any(np.diff(S) <= 0):
        raise DataError("adaptive_difference needs a strictly increasing abscissa s of the sequence's length")
    D = np.empty_like(F)
    D[0] = (F[1] - F[0]) / (S[1] - S[0])
    D[-1] = (F[-1] - F[-2]) / (S[-1] - S[-2])
    if N > 2:
        h = np.minimum(S[1:-1] - S[:-2], S[2:] - S[1:-1])
        for j in range(F.shape[1]):  # np.interp is one-dimensional; m (channels) is small
            fp = np.interp(S[1:-1] + h, S, F[:, j])
            fm = np.interp(S[1:-1] - h, S, F[:, j])
            D[1:-1, j] = (fp - fm) / (2.0 * h)
    return D[:, 0] if one else D


def taylor_correction(d: np.ndarray, s: np.ndarray | None = None, *, order: int = 3, eps: float = 1e-7) -> np.ndarray:
    """``Σ_{j=1}^{order} ε^j D^j(d) / j!``: eq. 28's Taylor terms of the difference sequence ``d``.

    ``D^j`` is the ``j``-th derivative by repeated :func:`adaptive_difference`. Eq. 28 as printed writes the same
    ``adaptive_difference(x_i, y_i)`` in every term; the Taylor expansion it names has the ``j``-th derivative
    there, which is what is used. At ``ε = 1e-7`` the terms are of order ``1e-7`` times the first derivative.
    """
    out = np.zeros_like(np.asarray(d, dtype=float))
    D = np.asarray(d, dtype=float)
    for j in range(1, int(order) + 1):
        D = adaptive_difference(D, s)
        out = out + eps**j * D / math.factorial(j)
    return out


def systematic_error(
    x: np.ndarray,
    y: np.ndarray,
    e_optimizing: float,
    s: np.ndarray | None = None,
    *,
    order: int = 3,
    eps: float = 1e-7,
) -> float:
    """Eq. 28: ``E_sys = | mean[(x - y) - Σ_j ε^j D^j(x - y) / j!] - e_optimizing |``.

    Args:
        x: ``(N, m)`` (or ``(N,)``) the sequence fed to the network (the experiment).
        y: the same shape: the sequence re-simulated with the predicted parameters.
        e_optimizing: eq. 29, the network's MSE on its labels (:func:`mse`).
        s: abscissa of the samples (default: their index).

    Eq. 28 divides the sums over the ``m`` channels by ``m``; each channel of ``x - y`` is itself a sequence of
    ``N`` samples, so the mean here is taken over samples and channels (``1 / (m N)``), which keeps the value
    independent of the sequence length. The sequences should be scaled alike (for instance by the network's input
    scaler) so that channels of different units add up meaningfully.
    """
    X, Y = _pair(x, y)
    d = X - Y
    return float(abs(np.mean(d - taylor_correction(d, s, order=order, eps=eps)) - float(e_optimizing)))


def _cases(a: np.ndarray | Sequence[np.ndarray]) -> list[np.ndarray]:
    """One flat array per case: a 1-D array is one case, a 2-D array or a sequence holds one per row/item."""
    if isinstance(a, np.ndarray) and a.ndim == 1:
        return [a.astype(float)]
    return [np.asarray(v, dtype=float).ravel() for v in a]


def standard_error(
    target: np.ndarray | Sequence[np.ndarray], resimulated: np.ndarray | Sequence[np.ndarray], n_params: int
) -> float:
    """Table 5's "standard error", as defined here: the standard error of the estimate of the re-simulated curves.

    For each case ``c`` with target response ``x_c`` (``N_c`` samples of the compared channel, physical units)
    and the response ``y_c`` simulated with the identified parameters, ``SSE_c = Σ (x_c - y_c)²``; the value is
    ``sqrt(Σ_c SSE_c / Σ_c (N_c - p))`` with ``p = n_params`` calibrated parameters, i.e. the residual standard
    deviation of the calibrated model across the verification cases, in the unit of the channel. Hu et al. (2024) reports
    6.863 (PartsNet) and 26.622 (GRU+TransE) for the triaxial load without a definition; the force curves there peak
    at 405-678 N, which makes a residual standard deviation in newtons a plausible reading, but it is a reading.

    Args:
        target, resimulated: one ``(N,)`` array per case (or ``(cases, N)`` arrays).
        n_params: number of calibrated parameters ``p``.
    """
    T, R = _cases(target), _cases(resimulated)
    if len(T) != len(R):
        raise DataError(f"standard_error needs as many re-simulated curves as targets, got {len(R)} and {len(T)}")
    sse, dof = 0.0, 0
    for t, r in zip(T, R, strict=True):
        if t.shape != r.shape:
            raise DataError(f"a target and its re-simulated curve differ in length: {t.size} and {r.size}")
        sse += float(np.sum((t - r) ** 2))
        dof += t.size - int(n_params)
    if dof <= 0:
        raise DataError(
            f"standard_error needs more samples than parameters, got {dof + len(T) * int(n_params)} samples"
        )
    return math.sqrt(sse / dof)
