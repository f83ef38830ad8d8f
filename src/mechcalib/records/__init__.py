"""Measured records: reading (:mod:`.io`), interpolation and bandwidth (:mod:`.interp`), pre-processing
(:mod:`.preprocess`) and excitations as model conditions (:mod:`.excitation`). See docs/lab_records.md."""

from __future__ import annotations

from .excitation import Excitation, excitation
from .interp import INTERPOLATIONS, bandwidth, default_interpolation, interpolate
from .io import Record, check_record, read_record
from .preprocess import (
    STEPS,
    apply,
    average_periods,
    decimate,
    delay,
    remove_drift,
    remove_offset,
    time_origin,
    trim,
)

__all__ = [
    "INTERPOLATIONS",
    "STEPS",
    "Excitation",
    "Record",
    "apply",
    "average_periods",
    "bandwidth",
    "check_record",
    "decimate",
    "default_interpolation",
    "delay",
    "excitation",
    "interpolate",
    "read_record",
    "remove_drift",
    "remove_offset",
    "time_origin",
    "trim",
]
