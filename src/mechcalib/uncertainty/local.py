"""Local (Laplace, Gauss-Newton) uncertainty at a least-squares optimum: pure functions of the Jacobian.

With the residuals ``r`` ``(m,)`` and their Jacobian ``J`` ``(m, d)`` in the unit cube at the optimum, and the
noise level of each residual ``s_i``, the Gauss-Newton approximation of the posterior is Gaussian with
covariance ``C_u = (J_w^T J_w)^-1``, ``J_w = diag(1/s) J`` (Bates & Watts 1988, ch. 2): with one estimated
noise level ``s^2 = RSS / (m - d)`` this is the textbook ``s^2 (J^T J)^-1``. The unit cube is linear in each
parameter's own scale (in ``ln x`` for a log-scaled one), so the 95 % interval is ``x* +- 1.96 sd`` for a
linear parameter and ``x* exp(+-1.96 sd_ln)`` for a log-scaled one; both are cut to the search bounds.

Identifiability is read in relative coordinates (``ln x``, or ``x / |x*|`` for a linear parameter):
the eigenvectors of the relative covariance are the combinations the data determine best and worst, the
ratio of its extreme eigenvalues is the condition number.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigurationError
from .likelihood import check_counts

Z95 = 1.959963984540054
#: a 95 % interval wider than this fraction of the search range marks a parameter practically unidentifiable
UNIDENTIFIABLE_FRACTION = 0.5
#: the variance given to a null direction of a singular Jacobian (force); a standard deviation above its
#: square root reads as unbounded
UNBOUNDED = 1e200


class UncertaintyWarning(UserWarning):
    """An uncertainty result that holds but needs care (not converged, unidentifiable, short chain...)."""


@dataclass
class LocalUncertainty:
    """The Laplace approximation at the optimum (module docstring).

    ``cov_u``: covariance ``(d, d)`` in the unit cube; ``std``: standard errors in each parameter's own
    units (for a log-scaled one, ``x* sd_ln``); ``rel_std``: relative (``sd / |x*|``; ``sd_ln`` for
    log-scaled ones); ``lower``/``upper``: the 95 % interval cut to the bounds; ``correlation`` ``(d, d)``;
    ``eigenvalues``/``eigenvectors`` of the relative covariance (largest first: the least identifiable
    direction); ``condition``: their ratio; ``weakest``/``strongest``: those directions in words;
    ``unidentifiable``: the parameters whose interval spans more than half their search range;
    ``effective_samples``: per channel, the effective sample size the likelihood was scaled by
    (``effective_samples=True``; ``None``, and absent from :meth:`to_json`, when the residuals were taken as
    independent).
    """

    names: tuple[str, ...]
    best: np.ndarray
    scales: tuple[str, ...]
    cov_u: np.ndarray
    std: np.ndarray
    rel_std: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    correlation: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    condition: float
    weakest: str
    strongest: str
    noise: dict[str, float]
    noise_estimated: bool
    unidentifiable: list[str] = field(default_factory=list)
    effective_samples: dict[str, float] | None = None

    def to_json(self) -> dict[str, Any]:
        extra = {} if self.effective_samples is None else {"effective_samples": self.effective_samples}
        return {
            "names": list(self.names),
            "covariance_unit": self.cov_u.tolist(),
            "correlation": self.correlation.tolist(),
            "eigenvalues_relative": self.eigenvalues.tolist(),
            "eigenvectors_relative": self.eigenvectors.tolist(),
            "condition_number": self.condition,
            "least_identifiable": self.weakest,
            "best_determined": self.strongest,
            "noise": self.noise,
            "noise_estimated": self.noise_estimated,
            "unidentifiable": list(self.unidentifiable),
        } | extra


def gauss_newton_cov(J: np.ndarray, sigma: np.ndarray, names: tuple[str, ...], *, force: bool = False) -> np.ndarray:
    """``(J_w^T J_w)^-1`` with ``J_w = J / sigma[:, None]``. A zero column (a parameter the data do not see)
    or a rank-deficient Jacobian is refused naming the parameters, unless ``force`` (then the pseudo-inverse,
    with an infinite variance along the null directions)."""
    m, d = J.shape
    check_counts(m, d)
    Jw = J / sigma[:, None]
    zero = [names[i] for i in range(d) if not np.any(Jw[:, i])]
    _, sv, vt = np.linalg.svd(Jw, full_matrices=False)
    tol = sv[0] * max(m, d) * np.finfo(float).eps if sv.size and sv[0] > 0 else 0.0
    null = vt[sv <= tol] if sv.size else np.eye(d)
    if zero or null.shape[0]:
        involved = zero or sorted({names[i] for v in null for i in np.flatnonzero(np.abs(v) > 0.1)})
        text = (
            f"the Jacobian at the optimum is singular (rank {int(np.sum(sv > tol))} of {d}): the data do not "
            f"determine {', '.join(repr(n) for n in involved)}"
            + (" (a zero column: the residuals do not change with it)" if zero else " (only a combination of them)")
            + "; fix one of them (a fixed parameter) or add data sensitive to them"
        )
        if not force:
            raise ConfigurationError(text + "; force=True (--force) reports them with an unbounded interval")
        warnings.warn(text, UncertaintyWarning, stacklevel=3)
        cov = np.linalg.pinv(Jw.T @ Jw)
        for v in null:
            cov = cov + UNBOUNDED * np.outer(v, v)
        return cov
    inv_s = 1.0 / sv
    return (vt.T * inv_s**2) @ vt


def _scale_factors(space: Any, best: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per free parameter: d(own coordinate)/du (``hi - lo`` or ``ln hi - ln lo``) and d(relative)/du."""
    own, rel = [], []
    for p, x in zip(space.free, best, strict=True):
        if p.scale == "log":
            f = math.log(p.upper) - math.log(p.lower)
            own.append(f)
            rel.append(f)
        else:
            f = p.upper - p.lower
            own.append(f)
            rel.append(f / abs(x) if x != 0 else 1.0)
    return np.array(own), np.array(rel)


def intervals(space: Any, best: np.ndarray, sd_u: np.ndarray, z: float = Z95) -> tuple[np.ndarray, ...]:
    """``(std, rel_std, lower, upper)`` of the free parameters at ``best`` from unit-cube standard deviations
    ``sd_u``: symmetric in each parameter's own scale (log-aware), cut to its bounds."""
    own, _ = _scale_factors(space, best)
    sd = sd_u * own
    std, rel, lo, hi = (np.empty_like(best) for _ in range(4))
    for i, (p, x) in enumerate(zip(space.free, best, strict=True)):
        if p.scale == "log":
            std[i], rel[i] = x * sd[i], sd[i]
            with np.errstate(over="ignore"):
                lo[i], hi[i] = x * math.exp(-min(z * sd[i], 700.0)), x * math.exp(min(z * sd[i], 700.0))
        else:
            std[i] = sd[i]
            rel[i] = sd[i] / abs(x) if x != 0 else math.inf
            lo[i], hi[i] = x - z * sd[i], x + z * sd[i]
        lo[i], hi[i] = max(lo[i], p.lower), min(hi[i], p.upper)
    return std, rel, lo, hi


def direction_words(v: np.ndarray, names: tuple[str, ...], half_width: float) -> tuple[str, str, list[str]]:
    """The unit vector ``v`` (relative coordinates, 95 % half-width ``half_width`` along it) as the
    combination ``"a2 - 0.8·a3"`` (leading coefficient 1), its half-width in words, the names it involves."""
    lead = v[np.argmax(np.abs(v))]
    v, half_width = v / lead, half_width / abs(lead)  # the printed combination's own half-width
    terms = [(names[i], v[i]) for i in np.argsort(-np.abs(v), kind="stable") if abs(v[i]) >= 0.1]
    combo = terms[0][0]
    for n, c in terms[1:]:
        combo += f" {'+' if c > 0 else '-'} {abs(c):.2g}·{n}"
    width = f"±{100.0 * half_width:.3g} %" if half_width < 5 else "no better than the search range"
    return combo, width, [n for n in names if any(n == t for t, _ in terms)]


def describe(eigvals: np.ndarray, eigvecs: np.ndarray, names: tuple[str, ...]) -> tuple[str, str]:
    """The least and the best identifiable directions in words (relative changes, 95 %)."""
    hw = Z95 * np.sqrt(np.maximum(eigvals, 0.0))
    combo, width, who = direction_words(eigvecs[:, 0], names, float(hw[0]))
    if len(who) > 1:
        weakest = (
            f"{', '.join(who[:-1])} and {who[-1]} trade off: {combo} (relative changes) is determined only to {width}"
        )
    else:
        weakest = f"{combo} is the least determined parameter: to {width} (relative)"
    combo2, width2, _ = direction_words(eigvecs[:, -1], names, float(hw[-1]))
    strongest = f"{combo2} (relative changes) is determined to {width2}"
    if len(names) > 1 and len(who) > 1:
        weakest += f"; the best determined combination, {strongest}"
    return weakest, strongest


def local_uncertainty(
    space: Any,
    best_u: np.ndarray,
    J: np.ndarray,
    r: np.ndarray,
    sigma_res: np.ndarray,
    noise: dict[str, float],
    *,
    noise_estimated: bool,
    force: bool = False,
) -> LocalUncertainty:
    """The :class:`LocalUncertainty` at the unit-cube optimum ``best_u`` from the residuals ``r`` ``(m,)``,
    their Jacobian ``J`` ``(m, d)`` in the unit cube and the noise level of each residual ``sigma_res``."""
    names = tuple(space.free_names)
    best = np.asarray(space.from_unit(best_u[None, :])[0], dtype=float)
    cov_u = gauss_newton_cov(J, sigma_res, names, force=force)
    sd_u = np.sqrt(np.maximum(np.diag(cov_u), 0.0))
    sd_u = np.where(sd_u >= np.sqrt(UNBOUNDED) * 1e-3, np.inf, sd_u)
    std, rel, lo, hi = intervals(space, best, sd_u)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = cov_u / np.outer(sd_u, sd_u)
    corr = np.where(np.isfinite(corr), corr, 0.0)
    np.fill_diagonal(corr, 1.0)
    _, relf = _scale_factors(space, best)
    cov_rel = cov_u * np.outer(relf, relf)
    w, V = np.linalg.eigh(cov_rel)
    w, V = w[::-1], V[:, ::-1]
    for k in range(V.shape[1]):  # a sign convention, so the words repeat
        if V[np.argmax(np.abs(V[:, k])), k] < 0:
            V[:, k] = -V[:, k]
    cond = float(w[0] / w[-1]) if w[-1] > 0 else math.inf
    weakest, strongest = describe(w, V, names)
    frac = 2 * Z95 * sd_u
    unid = [n for n, f in zip(names, frac, strict=True) if f > UNIDENTIFIABLE_FRACTION]
    for n, f in zip(names, frac, strict=True):
        if f > UNIDENTIFIABLE_FRACTION:
            warnings.warn(
                f"parameter {n!r} is practically unidentifiable: its 95 % interval spans "
                f"{'more than the whole' if f > 1 else format(f, '.0%') + ' of its'} search range (the rule: at most {UNIDENTIFIABLE_FRACTION:.0%}); the data barely constrain it. Fix "
                "it, add data sensitive to it, or read the posterior (--posterior), which shows the real shape",
                UncertaintyWarning,
                stacklevel=2,
            )
    return LocalUncertainty(
        names=names,
        best=best,
        scales=tuple(p.scale for p in space.free),
        cov_u=cov_u,
        std=std,
        rel_std=rel,
        lower=lo,
        upper=hi,
        correlation=corr,
        eigenvalues=w,
        eigenvectors=V,
        condition=cond,
        weakest=weakest,
        strongest=strongest,
        noise=noise,
        noise_estimated=noise_estimated,
        unidentifiable=unid,
    )


def laplace_samples(space: Any, best_u: np.ndarray, cov_u: np.ndarray, n: int, seed: Any = 0) -> np.ndarray:
    """``n`` draws ``(n, d)`` of the free parameters from the Laplace Gaussian (in the unit cube, kept inside
    it), for plots where no posterior chain exists."""
    rng = np.random.default_rng(seed)
    c = np.where(np.isfinite(cov_u), cov_u, 0.0)
    u = rng.multivariate_normal(best_u, c, size=n, method="eigh")
    u = u[np.all((u >= 0) & (u <= 1), axis=1)]
    if not len(u):
        raise ConfigurationError("the Laplace Gaussian lies outside the search box; no draws to plot")
    return space.from_unit(u)


__all__ = ["LocalUncertainty", "UncertaintyWarning", "gauss_newton_cov", "intervals", "local_uncertainty"]
