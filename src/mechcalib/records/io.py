"""Reading a measured record: one channel against time from any measured table (text, ``.npz``, MATLAB
``.mat``, HDF5, Parquet), through :func:`mechcalib.core.tables.read_measured`, the reader experiments use.

:func:`read_record` returns a :class:`Record` (time [s], values in a stated unit, where it came from) after
the checks every record gets (:func:`check_record`): finite values, equal lengths, strictly increasing time,
no gaps. Units come from the file (a CSV header's ``name [unit]``, an HDF5 dataset's ``units`` attribute),
from a ``units`` map (``{"displacement_in": "in"}``, or ``"suffix"`` to read the unit off the column name
after its last underscore), and convert to the unit asked for through :mod:`mechcalib.core.units`, the
mechanism experiments use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..core import units as _units
from ..core.tables import SUFFIXES, TableOptions, check_magnitude, file_format, read_measured
from ..errors import DataError

#: a sampling interval longer than this many times the median one is a gap
GAP_FACTOR = 1.5
__all__ = ["GAP_FACTOR", "SUFFIXES", "TIME_NAMES", "Record", "check_record", "read_record"]
TIME_NAMES = ("t", "time", "Time", "TIME", "time_s", "t_s")


@dataclass(frozen=True)
class Record:
    """One measured channel: ``values`` ``(K,)`` at times ``t`` ``(K,)`` [s], strictly increasing.

    ``unit``: the values' unit (``""``: the model's); ``source``: the file (``""`` for arrays);
    ``column``: its column or dataset; ``period``: the record's period [s] when it is declared periodic
    (needed by the band-limited interpolation and by :func:`~.preprocess.average_periods`).
    """

    t: np.ndarray
    values: np.ndarray
    unit: str = ""
    source: str = ""
    column: str = ""
    period: float | None = None

    @property
    def label(self) -> str:
        """``file, column 'x'`` for messages."""
        where = self.source or "an array"
        return f"{where}, column {self.column!r}" if self.column else where

    @property
    def dt(self) -> float:
        """Median sampling interval [s]."""
        return float(np.median(np.diff(self.t)))

    @property
    def fs(self) -> float:
        """Sampling rate [Hz] (from the median interval)."""
        return 1.0 / self.dt

    def with_values(self, t: np.ndarray, values: np.ndarray, **changes: Any) -> Record:
        return replace(self, t=np.ascontiguousarray(t, float), values=np.ascontiguousarray(values, float), **changes)

    def converted(self, unit: str) -> Record:
        """The record in ``unit`` (pint, :mod:`mechcalib.core.units`); unchanged when its unit is empty."""
        f = _units.factor(self.unit, unit, what=self.label, column=self.column)
        return replace(self, values=self.values * f, unit=unit if self.unit else self.unit)


def check_record(t: Any, values: Any, *, label: str, gaps: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(t, values)`` as float arrays after the checks of a measured record; raises :class:`DataError` naming
    ``label`` (file and column), the rule broken, where, and the fix."""
    t = np.asarray(t, dtype=float)
    x = np.asarray(values, dtype=float)
    if t.ndim != 1 or x.ndim != 1:
        raise DataError(f"{label}: time and values must be one-dimensional, got shapes {t.shape} and {x.shape}")
    if t.shape != x.shape:
        raise DataError(
            f"{label}: time has {t.size} samples and the values {x.size}; the two columns must have equal "
            "lengths (take both from the same table, or trim the longer one)"
        )
    if t.size < 2:
        raise DataError(
            f"{label}: a record needs at least 2 samples (a time and a value at two instants at least), got "
            f"{t.size}; give the whole record (a table needs a header row and a row per sample)"
        )
    for what, arr in (("time", t), ("values", x)):
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"{label}: {what} must be finite, got {int(bad.sum())} NaN/inf sample(s), the first at index {i} "
                f"(t={float(t[i])!r}); fill them (interpolate the gap) or trim the record to a finite stretch"
            )
    check_magnitude(t, f"{label} (its time)")
    check_magnitude(x, label)
    d = np.diff(t)
    if np.any(d <= 0):
        i = int(np.flatnonzero(d <= 0)[0])
        raise DataError(
            f"{label}: time must increase strictly, got t[{i}]={float(t[i])!r} then t[{i + 1}]={float(t[i + 1])!r}; sort the "
            "rows by time and drop repeated ones (a concatenated or wrapped record restarts its clock)"
        )
    if gaps and t.size > 2:
        med = float(np.median(d))
        big = d > GAP_FACTOR * med
        if big.any():
            i = int(np.flatnonzero(big)[0])
            raise DataError(
                f"{label}: a gap of {d[i]:.6g} s after t={float(t[i])!r} where the record is sampled every {med:.6g} s "
                f"(rule: no interval longer than {GAP_FACTOR}x the median); {int(big.sum())} gap(s) in all: fill "
                "them (resample the record) or trim it to a stretch without one"
            )
    return np.ascontiguousarray(t), np.ascontiguousarray(x)


def read_record(
    path: str | Path,
    column: str | int,
    *,
    time: str | int | None = None,
    fs: float | None = None,
    unit: str | None = None,
    units: Mapping[str, str] | str | None = None,
    period: float | None = None,
    **read: Any,
) -> Record:
    """Read the channel ``column`` of a file as a :class:`Record`.

    Args:
        path: a measured table, read by :func:`~mechcalib.core.tables.read_measured` (the reader experiments
            use): text (``.csv``, ``.txt``, ``.dat``: any delimiter, metadata lines, a header row with units in
            brackets, decimal commas), ``.npz``, MATLAB ``.mat``, HDF5 (``.h5``, ``.hdf5``; the extra ``hdf5``)
            or Parquet (the extra ``parquet``).
        column: the column's name (CSV header, ``.npz``/``.mat`` array name, HDF5 dataset path
            ``"group/name"``) or position (0 for the first).
        time: the time column [s in its unit]; ``None``: a column named ``t`` or ``time`` if there is one,
            else ``fs`` must be given.
        fs: sampling rate [Hz] of a record without a time column (samples at ``k / fs`` from 0).
        unit: convert the values to this unit (``None``: keep the file's).
        units: column -> unit for files whose header carries none (``{"force_lbf": "lbf"}``), or
            ``"suffix"`` to take it from the column name after its last underscore; overrides the header.
        period: declare the record periodic with this period [s].
        read: how the file is read: ``format``, ``delimiter``, ``decimal``, ``names``
            (:class:`~mechcalib.core.tables.TableOptions`).
    """
    path = Path(path)
    options = TableOptions.of(read, str(path))
    file_format(path, options.format)
    if fs is not None and time is not None:
        raise DataError(f"{path}: give the time column `time` or the sampling rate `fs`, not both")
    wanted = {column} | ({time} if time is not None else set(TIME_NAMES) if fs is None else set())
    table = read_measured(path, options, wanted=wanted, what="record file")
    column = table.name_of(column, "record")
    x = table.column(column, "record")
    if time is None and fs is None:
        time = next((n for n in TIME_NAMES if n in table.names and n != column), None)
        if time is None:
            raise DataError(
                f"{path}: no time column found (looked for {list(TIME_NAMES)}) among {list(table.names)}; name it "
                'with `time = "..."` or give the sampling rate `fs`'
            )
    label = f"{path}, column {column!r}"

    def unit_of(name: str) -> str:
        if isinstance(units, str):
            if units != "suffix":
                raise DataError(f"{path}: units must be a map column -> unit or 'suffix', got {units!r}")
            return _units.suffix_unit(name) or table.units.get(name, "")
        if units and name in units:
            return units[name]
        return table.units.get(name, "")

    if time is not None:
        time = table.name_of(time, "time")
        t = table.column(time, "time")
        t = t * _units.factor(unit_of(time), "s", what=f"{path}, column {time!r}", column=time)
    else:
        assert fs is not None
        if not (np.isfinite(fs) and fs > 0):
            raise DataError(f"{path}: the sampling rate fs must be a positive number, got {fs!r}")
        t = np.arange(x.size) / float(fs)
    t, x = check_record(t, x, label=label)
    rec = Record(t, x, unit_of(column), str(path), column, None if period is None else float(period))
    return rec.converted(unit) if unit is not None else rec
