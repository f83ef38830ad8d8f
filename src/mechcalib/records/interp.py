"""Evaluating a sampled excitation between its samples, and its bandwidth.

The integrators need the excitation at their stage times, which fall between the record's samples. Three
interpolations, chosen explicitly (:data:`INTERPOLATIONS`):

* ``"linear"``: straight lines between samples (the record held at its end values outside it). Exact for a
  piecewise-linear input; for a sampled smooth signal its error grows as ``(omega dt)^2 / 8``.
* ``"cubic"``: the not-a-knot cubic spline through the samples (held at its end values outside), error
  ``~ (omega dt)^4 / 384`` of a component of circular frequency ``omega``.
* ``"bandlimited"``: the trigonometric interpolant of a record declared periodic with period ``P`` (whole
  periods of uniformly spaced samples; the zero-padded FFT), exact for a periodic signal band-limited below
  the Nyquist frequency, such as a multisine. Beyond the record it repeats with ``P``.

Default rule (:func:`default_interpolation`): ``"bandlimited"`` for a record declared periodic, ``"cubic"``
otherwise.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import DataError

INTERPOLATIONS = ("linear", "cubic", "bandlimited")
#: the band-limited path evaluates exactly on a grid refined by an integer factor of the record's; off it,
#: a cubic spline on a grid at least this many times finer than the record's (error ~ 1e-9 of the signal)
_REFINE = 16
#: the bandwidth is the lowest frequency above which the record holds less than this fraction of its energy
BANDWIDTH_ENERGY = 1e-6


def default_interpolation(period: float | None) -> str:
    """The stated default: ``"bandlimited"`` when the record is declared periodic, ``"cubic"`` otherwise."""
    return "bandlimited" if period is not None else "cubic"


def check_interpolation(method: str, period: float | None, *, label: str = "the excitation") -> str:
    if method not in INTERPOLATIONS:
        raise DataError(f"{label}: interpolation must be one of {list(INTERPOLATIONS)}, got {method!r}")
    if method == "bandlimited" and period is None:
        raise DataError(
            f"{label}: interpolation 'bandlimited' needs the record's period (declare it periodic with `period`, "
            "in seconds); for a record that is not periodic use 'cubic'"
        )
    if period is not None and not (math.isfinite(period) and period > 0):
        raise DataError(f"{label}: the period must be a positive number of seconds, got {period!r}")
    return method


def samples_per_period(t: np.ndarray, period: float, *, label: str) -> int:
    """Samples in one period of a uniformly sampled record; :class:`DataError` when the sampling is not uniform
    or the period is not a whole number of intervals (within 1e-6)."""
    d = np.diff(t)
    dt = float(np.mean(d))
    if np.max(np.abs(d - dt)) > 1e-6 * dt:
        raise DataError(
            f"{label}: band-limited interpolation needs uniform sampling; intervals range from {d.min():.9g} to "
            f"{d.max():.9g} s: resample the record, or use interpolation = 'cubic'"
        )
    n = period / dt
    npp = round(n)
    if npp < 2 or abs(n - npp) > 1e-6 * n:
        raise DataError(
            f"{label}: the period {period!r} s is {n:.9g} sampling intervals of {dt:.9g} s; it must be a whole "
            "number of them: check the period and the sampling rate"
        )
    if t.size < npp:
        raise DataError(
            f"{label}: the record holds {t.size} samples, less than one period ({npp}); give a longer record or "
            "the right period"
        )
    return int(npp)


def interpolate(
    t: np.ndarray,
    x: np.ndarray,
    t_new: np.ndarray,
    method: str,
    period: float | None = None,
    *,
    label: str = "the excitation",
    derivative: bool = False,
) -> np.ndarray:
    """The record ``x(t)`` at ``t_new`` by ``method`` (:data:`INTERPOLATIONS`; ``period`` [s] for
    ``"bandlimited"``); ``derivative``: its time derivative instead (the interpolant's, exactly)."""
    check_interpolation(method, period, label=label)
    t = np.asarray(t, float)
    x = np.asarray(x, float)
    t_new = np.asarray(t_new, float)
    if method == "linear":
        if derivative:
            j = np.clip(np.searchsorted(t, t_new, side="right"), 1, t.size - 1)
            slope = (x[j] - x[j - 1]) / (t[j] - t[j - 1])
            return np.where((t_new < t[0]) | (t_new > t[-1]), 0.0, slope)
        return np.interp(t_new, t, x)
    if method == "cubic":
        from scipy.interpolate import CubicSpline

        if t.size < 4:
            return interpolate(t, x, t_new, "linear", derivative=derivative)
        y = CubicSpline(t, x, bc_type="not-a-knot", extrapolate=False)(t_new, 1 if derivative else 0)
        out = (t_new < t[0]) | (t_new > t[-1])
        if derivative:
            return np.where(out, 0.0, y)
        y = np.where(t_new < t[0], x[0], y)
        return np.where(t_new > t[-1], x[-1], y)
    assert period is not None
    return _bandlimited(t, x, t_new, period, label, derivative)


def _bandlimited(
    t: np.ndarray, x: np.ndarray, t_new: np.ndarray, period: float, label: str, derivative: bool = False
) -> np.ndarray:
    npp = samples_per_period(t, period, label=label)
    dt = period / npp
    X = np.fft.rfft(x[:npp])  # one period: the record repeats it (average noisy periods first)
    if t_new.size == 0:
        return np.empty(0)
    pos = (t_new - t[0]) / dt  # in record samples
    steps = np.diff(pos)
    q = _REFINE
    if steps.size and np.all(steps > 0):
        st = float(np.min(steps))
        ratio = 1.0 / st
        if abs(ratio - round(ratio)) < 1e-9 * ratio and round(ratio) >= 1:
            q = int(round(ratio))  # the new times lie on a refined grid: exact there
    nf = npp * q
    Y = np.zeros(nf // 2 + 1, dtype=complex)
    Y[: X.size] = X
    if npp % 2 == 0:  # split the Nyquist term between +- fs/2 so that the interpolant stays real and exact
        Y[npp // 2] *= 0.5
    if derivative:
        Y = Y * (2j * np.pi * np.arange(Y.size) / period)
    fine = np.fft.irfft(Y, nf) * q
    idx = pos * q
    near = np.rint(idx)
    on_grid = np.abs(idx - near) < 1e-6
    out = np.empty(t_new.size)
    out[on_grid] = fine[np.mod(near[on_grid].astype(np.int64), nf)]
    if not on_grid.all():
        from scipy.interpolate import CubicSpline

        grid = np.arange(nf + 1)
        spline = CubicSpline(grid, np.r_[fine, fine[0]], bc_type="periodic")
        out[~on_grid] = spline(np.mod(idx[~on_grid], nf))
    return out


def bandwidth(t: np.ndarray, x: np.ndarray, energy: float = BANDWIDTH_ENERGY) -> float:
    """The frequency [Hz] below which the record holds all but a fraction ``energy`` of the energy of its
    fluctuation (the mean removed), from its Hann-windowed periodogram on the median sampling interval; 0 for a
    constant."""
    t = np.asarray(t, float)
    x = np.asarray(x, float)
    dt = float(np.median(np.diff(t)))
    if np.max(np.abs(np.diff(t) - dt)) > 1e-6 * dt:
        x = np.interp(np.arange(t[0], t[-1] + 0.5 * dt, dt), t, x)
    x = x - np.mean(x)
    # a Hann window: the jump between the record's ends would otherwise leak energy up to the Nyquist frequency
    P = np.abs(np.fft.rfft(x * np.hanning(x.size))) ** 2
    total = float(P.sum())
    if total <= 0.0:
        return 0.0
    above = total - np.cumsum(P)  # energy above each bin
    k = int(np.argmax(above <= energy * total))
    return float(np.fft.rfftfreq(x.size, dt)[k])
