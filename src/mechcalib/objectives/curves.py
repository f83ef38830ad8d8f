"""Misfits between simulated and measured curves.

Pure array functions implement the papers' equations; the :class:`Objective` classes apply them
channel by channel to a simulated response and an :class:`~mechcalib.core.data.Experiment` and sum the
weighted per-channel values.

* Kibriya et al. (2023), objective 1 (eqs. 16-20): :func:`overlap_rss` and :class:`OverlapRSS`.
* Mareš et al. (2016), F1 (eq. 3) and F2 (eq. 4): :func:`sum_squares`, :func:`sum_abs`; classes ``F1``, ``F2``.
* Ding et al. (2021), eq. 27, ``g(a) = ||R_m - R_c(a)||^2``: the same sum of squares; class ``L2``.

Pairing policy of objective 1 for a non-monotonic abscissa
-----------------------------------------------------------
Eqs. 16-19 interpolate the force at 200 abscissae, which needs ``F(w)`` to be a function. The force
against the horizontal abutment displacement is not one once sliding reverses the displacement. With
``pairing="auto"`` (default) a channel whose two curves both have a monotonic abscissa is treated
exactly as printed; otherwise the curves are paired by their *progress* coordinate ``t`` (time or load
step; the normalised row index when neither curve has one): 200 points uniform over the overlap of
``t``, both coordinates interpolated there, and the misfit is the root of
``sum((F_exp - F_sim)^2 + (s * (w_exp - w_sim))^2)`` with ``s = range(F_exp) / range(w_exp)``, so that
the displacement error is counted in force units and the two channels stay summable as in eq. 20.
``pairing="abscissa"`` forces the printed rule (and rejects a non-monotonic curve);
``pairing="progress"`` always pairs by ``t``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..core.data import Curve
from ..core.objective import Objective
from ..errors import DataError, SettingError
from ..registry import Registry

Pairing = Literal["auto", "abscissa", "progress"]


# --------------------------------------------------------------------------------------------
# Pure kernels
# --------------------------------------------------------------------------------------------
def overlap_bounds(x_exp: np.ndarray, x_sim: np.ndarray) -> tuple[float, float]:
    """Kibriya et al. (2023) eqs. 16-17: ``(max(min x_exp, min x_sim), min(max x_exp, max x_sim))``."""
    return float(max(np.min(x_exp), np.min(x_sim))), float(min(np.max(x_exp), np.max(x_sim)))


def _increasing(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(x, y)`` ordered by increasing ``x`` if ``x`` is monotonic in either direction, else ``None``."""
    d = np.diff(x)
    if np.all(d >= 0):
        return x, y
    if np.all(d <= 0):
        return x[::-1], y[::-1]
    return None


def overlap_residuals(
    x_exp: np.ndarray, y_exp: np.ndarray, x_sim: np.ndarray, y_sim: np.ndarray, n_points: int = 200
) -> np.ndarray:
    """Kibriya et al. (2023) eqs. 16-18 for one curve: the ordinate differences ``(n_points,)``
    ``y_exp(w) - y_sim(w)`` at ``n_points`` abscissae ``w`` uniformly spaced over the overlap of the two
    abscissa ranges, both curves linearly interpolated there. Both abscissae must be monotonic."""
    e = _increasing(np.asarray(x_exp, float), np.asarray(y_exp, float))
    s = _increasing(np.asarray(x_sim, float), np.asarray(y_sim, float))
    if e is None or s is None:
        which = "experimental" if e is None else "simulated"
        raise DataError(
            f"overlap_rss: the {which} abscissa is not monotonic; pair the curves by progress "
            "(pairing='progress' or 'auto') instead"
        )
    lb, ub = overlap_bounds(e[0], s[0])
    if not lb < ub:
        raise DataError(f"overlap_rss: the curves' abscissa ranges do not overlap (lower={lb!r}, upper={ub!r})")
    w = np.linspace(lb, ub, n_points)
    return np.interp(w, *e) - np.interp(w, *s)


def overlap_rss(
    x_exp: np.ndarray, y_exp: np.ndarray, x_sim: np.ndarray, y_sim: np.ndarray, n_points: int = 200
) -> float:
    """Kibriya et al. (2023) eqs. 16-19 for one curve: root of the summed squared ordinate differences of
    :func:`overlap_residuals`."""
    diff = overlap_residuals(x_exp, y_exp, x_sim, y_sim, n_points)
    return float(np.sqrt(np.sum(diff * diff)))


def progress_residuals(exp: Curve, sim: Curve, n_points: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Objective 1 paired by progress (module docstring): ``(dy, s * dx)``, each ``(n_points,)``."""
    if (exp.t is None) != (sim.t is None):
        raise DataError(
            "progress pairing needs a progress coordinate t on both curves or on neither; "
            f"experiment has t: {exp.t is not None}, simulation has t: {sim.t is not None}"
        )
    te, ts = exp.progress, sim.progress
    lb, ub = overlap_bounds(te, ts)
    if not lb < ub:
        raise DataError(f"progress_rss: the curves' progress ranges do not overlap (lower={lb!r}, upper={ub!r})")
    t = np.linspace(lb, ub, n_points)
    dy = np.interp(t, te, exp.y) - np.interp(t, ts, sim.y)
    dx = np.interp(t, te, exp.x) - np.interp(t, ts, sim.x)
    xr = np.ptp(exp.x)
    scale = np.ptp(exp.y) / xr if xr > 0 else 0.0
    return dy, scale * dx


def progress_rss(exp: Curve, sim: Curve, n_points: int = 200) -> float:
    """Objective 1 with the curves paired by their progress coordinate (see the module docstring)."""
    dy, sdx = progress_residuals(exp, sim, n_points)
    return float(np.sqrt(np.sum(dy * dy + sdx**2)))


def sum_squares(r: np.ndarray, d: np.ndarray) -> float:
    """Mareš et al. (2016) eq. 3 (F1) and Ding et al. (2021) eq. 27: ``sum_i (r_i - d_i)^2``."""
    r, d = np.asarray(r, float), np.asarray(d, float)
    if r.shape != d.shape:
        raise DataError(f"response and data must have the same shape, got {r.shape} and {d.shape}")
    e = r - d
    return float(np.sum(e * e))


def sum_abs(r: np.ndarray, d: np.ndarray) -> float:
    """Mareš et al. (2016) eq. 4 (F2): ``sum_i |r_i - d_i|``."""
    r, d = np.asarray(r, float), np.asarray(d, float)
    if r.shape != d.shape:
        raise DataError(f"response and data must have the same shape, got {r.shape} and {d.shape}")
    return float(np.sum(np.abs(r - d)))


def sim_at_data(sim: Curve, exp: Curve, rtol: float = 1e-9) -> np.ndarray:
    """The simulated ordinate at the measured abscissae (linear interpolation; no extrapolation)."""
    if sim.x.shape == exp.x.shape and np.allclose(sim.x, exp.x, rtol=rtol, atol=0.0):
        return sim.y
    sim.require_increasing("interpolation onto the measured abscissae")
    span = max(np.ptp(sim.x), np.finfo(float).tiny)
    if exp.x.min() < sim.x[0] - rtol * span or exp.x.max() > sim.x[-1] + rtol * span:
        raise DataError(
            f"the simulation covers {sim.x_name} in [{float(sim.x[0])!r}, {float(sim.x[-1])!r}] but the data "
            f"span [{float(exp.x.min())!r}, {float(exp.x.max())!r}]; simulate the whole measured range"
        )
    return np.interp(exp.x, sim.x, sim.y)


# --------------------------------------------------------------------------------------------
# Objectives over experiments
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OverlapRSS(Objective):
    """Kibriya et al. (2023) objective 1 (eqs. 16-20); ``n_points`` = 200 as in the paper.

    Residuals: per channel the ``n_points`` ordinate differences of eq. 18 (abscissa pairing), or
    ``2 * n_points`` (``dy`` then ``s * dx``) when paired by progress; each channel's misfit is the root of
    their sum of squares (``residual_loss = "root_per_channel"``), so for one channel of weight 1 the loss
    is ``sqrt(sum(r**2))``. The pairing of a channel is decided by the monotonicity of the *experiment's*
    abscissa (the residual length must not depend on the simulation): a channel whose simulated curve is
    not monotonic where the experiment's is fails under ``pairing="abscissa"`` rules.
    """

    n_points: int = 200
    pairing: Pairing = "auto"
    name = "overlap_rss"
    lower_bound = 0.0
    has_residuals = True
    residual_loss = "root_per_channel"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_points < 2:
            raise SettingError(
                "",
                "n_points",
                "an integer >= 2",
                self.n_points,
                message=f"n_points must be >= 2, got {self.n_points!r}",
            )
        if self.pairing not in ("auto", "abscissa", "progress"):
            raise SettingError("", "pairing", "'auto', 'abscissa' or 'progress'", self.pairing)

    def channel_misfit(self, sim: Curve, exp: Curve) -> float:
        monotonic = _increasing(exp.x, exp.y) is not None and _increasing(sim.x, sim.y) is not None
        if self.pairing == "progress" or (self.pairing == "auto" and not monotonic):
            return progress_rss(exp, sim, self.n_points)
        return overlap_rss(exp.x, exp.y, sim.x, sim.y, self.n_points)

    def _by_progress(self, exp: Curve) -> bool:
        return self.pairing == "progress" or (self.pairing == "auto" and _increasing(exp.x, exp.y) is None)

    def channel_residual_count(self, exp: Curve) -> int:
        return (2 if self._by_progress(exp) else 1) * self.n_points

    def channel_residuals(self, sim: Curve, exp: Curve) -> np.ndarray:
        if self._by_progress(exp):
            return np.concatenate(progress_residuals(exp, sim, self.n_points))
        return overlap_residuals(exp.x, exp.y, sim.x, sim.y, self.n_points)


@dataclass(frozen=True)
class F1(Objective):
    """Mareš et al. (2016) eq. 3: sum of squared differences at the measured points.

    Residuals: ``sim(x_i) - y_i`` at the measured points, times ``sqrt(weight)``; the loss is ``sum(r**2)``
    (``residual_loss = "sum_squares"``)."""

    name = "f1"
    lower_bound = 0.0
    has_residuals = True
    residual_loss = "sum_squares"

    def channel_misfit(self, sim: Curve, exp: Curve) -> float:
        return sum_squares(sim_at_data(sim, exp), exp.y)

    def channel_residual_count(self, exp: Curve) -> int:
        return int(exp.y.shape[0])

    def channel_residuals(self, sim: Curve, exp: Curve) -> np.ndarray:
        return np.asarray(sim_at_data(sim, exp), float) - np.asarray(exp.y, float)


@dataclass(frozen=True)
class F2(Objective):
    """Mareš et al. (2016) eq. 4: sum of absolute differences at the measured points.

    Residuals: written as a sum of squares, ``|e_i| = (sign(e_i) sqrt(|e_i|))^2`` with ``e_i = sim(x_i) - y_i``,
    so the residuals are ``sign(e_i) sqrt(|e_i|)`` times ``sqrt(weight)`` and the loss is ``sum(r**2)``
    (``residual_loss = "sum_squares"``). Their derivative ``1 / (2 sqrt(|e_i|))`` grows without bound as a
    point is fitted exactly, so a Gauss-Newton step on F2 is a reweighted (L1-like) step rather than a
    quadratic model: fine on noisy data, where no ``e_i`` vanishes; on noise-free synthetic data prefer F1/L2.
    """

    name = "f2"
    lower_bound = 0.0
    has_residuals = True
    residual_loss = "sum_squares"

    def channel_misfit(self, sim: Curve, exp: Curve) -> float:
        return sum_abs(sim_at_data(sim, exp), exp.y)

    def channel_residual_count(self, exp: Curve) -> int:
        return int(exp.y.shape[0])

    def channel_residuals(self, sim: Curve, exp: Curve) -> np.ndarray:
        e = np.asarray(sim_at_data(sim, exp), float) - np.asarray(exp.y, float)
        return np.sign(e) * np.sqrt(np.abs(e))


@dataclass(frozen=True)
class L2(F1):
    """Ding et al. (2021) eq. 27, ``||R_m - R_c(a)||^2`` over all measured channels (numerically F1; the
    same residuals, loss ``sum(r**2)``)."""

    name = "l2"


#: Kept for code that names the registry's type; every registry is a :class:`~mechcalib.registry.Registry`.
ObjectiveRegistry = Registry

#: The objective registry: the built-in objectives, plus those that installed distributions declare in the
#: entry-point group ``mechcalib.objectives``.
OBJECTIVES: Registry[type[Objective]] = Registry(
    "objective",
    base=Objective,
    group="mechcalib.objectives",
    entries={
        **{c.name: c for c in (OverlapRSS, F1, F2, L2)},
        # Kibriya et al. (2023) objective 2 (neural smoother, optional torch backend) lives in its own module.
        "smoothed_overlap_rss": "mechcalib.objectives.smoothing:SmoothedOverlapRSS",
    },
)


def make_objective(name: str, **options) -> Objective:
    """Build an objective by registry name or ``"package.module:Class"`` target; an unknown name lists the
    valid ones."""
    return OBJECTIVES.resolve(name)(**options)
