"""Pre-processing of a measured record before it drives a model, each step a function of a :class:`Record`.

=====================  ===============================================================================
step (config ``op``)   what it does
=====================  ===============================================================================
``trim``               keep ``start <= t <= end`` [s] (either may be left out)
``remove_offset``      subtract the mean over ``[start, end]`` (default: the whole record; give the
                       quiet lead-in of a shaking-table record)
``remove_drift``       subtract the least-squares polynomial of degree ``order`` (1: a linear drift)
                       fitted over ``[start, end]`` (default: the whole record)
``time_origin``        ``t -> t - t0``: the sample at ``t0`` becomes time zero, samples before it dropped
``delay``              ``t -> t + delay``: the excitation acts ``delay`` seconds later (a transport or
                       instrument lag between input and output channels; negative: earlier)
``average_periods``    average the whole periods of a periodic record (``skip`` leading periods dropped,
                       the transient) into one period; the result is declared periodic
``decimate``           keep every ``factor``-th sample after an anti-aliasing low-pass (zero-phase FIR,
                       ``scipy.signal.decimate``): the content above the new Nyquist frequency is removed
=====================  ===============================================================================

:func:`apply` runs a list of steps as a configuration gives them (``[{op = "trim", start = 1.0}, ...]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import DataError
from .interp import samples_per_period
from .io import Record


def _window(rec: Record, start: float | None, end: float | None) -> np.ndarray:
    lo = rec.t[0] if start is None else float(start)
    hi = rec.t[-1] if end is None else float(end)
    keep = (rec.t >= lo) & (rec.t <= hi)
    if keep.sum() < 2:
        raise DataError(
            f"{rec.label}: the window [{lo!r}, {hi!r}] s holds {int(keep.sum())} sample(s) of a record spanning "
            f"[{rec.t[0]!r}, {rec.t[-1]!r}] s; widen it"
        )
    return keep


def trim(rec: Record, start: float | None = None, end: float | None = None) -> Record:
    """The samples with ``start <= t <= end`` (times unchanged)."""
    keep = _window(rec, start, end)
    return rec.with_values(rec.t[keep], rec.values[keep])


def remove_offset(rec: Record, start: float | None = None, end: float | None = None) -> Record:
    """The record minus its mean over ``[start, end]``."""
    keep = _window(rec, start, end)
    return rec.with_values(rec.t, rec.values - float(np.mean(rec.values[keep])))


def remove_drift(rec: Record, order: int = 1, start: float | None = None, end: float | None = None) -> Record:
    """The record minus the polynomial of degree ``order`` in time fitted (least squares) over ``[start, end]``."""
    if not isinstance(order, int) or order < 0:
        raise DataError(f"{rec.label}: remove_drift's order must be an integer >= 0, got {order!r}")
    keep = _window(rec, start, end)
    if keep.sum() <= order:
        raise DataError(f"{rec.label}: remove_drift of order {order} needs more than {order} samples in its window")
    tc = rec.t[keep].mean()
    poly = np.polynomial.Polynomial.fit(rec.t[keep] - tc, rec.values[keep], order)
    return rec.with_values(rec.t, rec.values - poly(rec.t - tc))


def time_origin(rec: Record, t0: float) -> Record:
    """Times shifted by ``-t0``; samples before the new origin dropped."""
    t = rec.t - float(t0)
    keep = t >= -1e-12 * max(1.0, abs(float(t0)))
    if keep.sum() < 2:
        raise DataError(
            f"{rec.label}: time_origin t0={t0!r} s leaves {int(keep.sum())} sample(s); give t0 inside the record"
        )
    return rec.with_values(np.maximum(t[keep], 0.0), rec.values[keep])


def delay(rec: Record, delay: float) -> Record:
    """Times shifted by ``+delay`` [s] (the model sees the excitation ``delay`` later)."""
    return rec.with_values(rec.t + float(delay), rec.values)


def average_periods(rec: Record, period: float | None = None, skip: int = 0) -> Record:
    """The mean of the record's whole periods after ``skip`` leading ones: one period starting at ``t = 0``,
    declared periodic. ``period``: [s], default the record's declared one."""
    P = period if period is not None else rec.period
    if P is None:
        raise DataError(f"{rec.label}: average_periods needs the period (declare it, or give period = ...)")
    npp = samples_per_period(rec.t, float(P), label=rec.label)
    n = rec.t.size // npp - int(skip)
    if n < 1:
        raise DataError(
            f"{rec.label}: {rec.t.size // npp} whole period(s) of {npp} samples, {skip} skipped: nothing to average"
        )
    block = rec.values[int(skip) * npp : (int(skip) + n) * npp].reshape(n, npp)
    dt = float(P) / npp
    return rec.with_values(np.arange(npp) * dt, block.mean(axis=0), period=float(P))


def decimate(rec: Record, factor: int) -> Record:
    """Every ``factor``-th sample after a zero-phase FIR low-pass at the new Nyquist frequency
    (``scipy.signal.decimate(..., ftype="fir", zero_phase=True)``); needs uniform sampling."""
    import scipy.signal

    if not isinstance(factor, int) or factor < 1:
        raise DataError(f"{rec.label}: decimate's factor must be an integer >= 1, got {factor!r}")
    if factor == 1:
        return rec
    d = np.diff(rec.t)
    if np.max(np.abs(d - d.mean())) > 1e-6 * d.mean():
        raise DataError(f"{rec.label}: decimate needs uniform sampling; resample the record first")
    if rec.t.size < 30 * factor:
        raise DataError(f"{rec.label}: {rec.t.size} samples are too few to decimate by {factor} (the filter needs 30x)")
    y = scipy.signal.decimate(rec.values, factor, ftype="fir", zero_phase=True)
    return rec.with_values(rec.t[::factor][: y.size], y)


STEPS = {
    "trim": trim,
    "remove_offset": remove_offset,
    "remove_drift": remove_drift,
    "time_origin": time_origin,
    "delay": delay,
    "average_periods": average_periods,
    "decimate": decimate,
}


def apply(rec: Record, steps: Sequence[Mapping[str, Any]]) -> Record:
    """Run the steps ``[{"op": name, **arguments}, ...]`` in order (:data:`STEPS`)."""
    for i, step in enumerate(steps):
        if not isinstance(step, Mapping) or "op" not in step:
            raise DataError(
                f"{rec.label}: preprocess[{i}] must be a table with `op` (one of {sorted(STEPS)}), got {step!r}"
            )
        args = {k: v for k, v in step.items() if k != "op"}
        fn = STEPS.get(step["op"])
        if fn is None:
            raise DataError(f"{rec.label}: preprocess[{i}]: unknown op {step['op']!r}; valid ops are {sorted(STEPS)}")
        try:
            rec = fn(rec, **args)
        except TypeError as exc:
            raise DataError(f"{rec.label}: preprocess[{i}] ({step['op']}): {exc}") from None
    return rec
