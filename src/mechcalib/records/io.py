"""Reading a measured record: one channel against time from CSV, ``.npz``, MATLAB ``.mat`` or HDF5.

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
from ..core.data import check_data_file, check_magnitude, read_table
from ..errors import DataError, require

#: a sampling interval longer than this many times the median one is a gap
GAP_FACTOR = 1.5
SUFFIXES = {".csv": "csv", ".txt": "csv", ".dat": "csv", ".tsv": "csv", ".npz": "npz", ".mat": "mat"}
SUFFIXES.update({".h5": "hdf5", ".hdf5": "hdf5", ".hdf": "hdf5"})
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
        """The record in ``unit`` (a known factor, :mod:`mechcalib.core.units`); unchanged when its unit is empty."""
        f = _units.factor(self.unit, unit, what=self.label)
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
    column: str,
    *,
    time: str | None = None,
    fs: float | None = None,
    unit: str | None = None,
    units: Mapping[str, str] | str | None = None,
    format: str | None = None,
    delimiter: str | None = None,
    period: float | None = None,
) -> Record:
    """Read the channel ``column`` of a file as a :class:`Record`.

    Args:
        path: a CSV (``.csv``, ``.txt``, ``.dat``: header row, units in brackets as experiments), ``.npz``,
            MATLAB ``.mat`` (``scipy.io.loadmat``) or HDF5 (``.h5``, ``.hdf5``; needs ``h5py``, the extra
            ``hdf5``) file; ``format`` overrides the suffix.
        column: the column (CSV), array name (``.npz``, ``.mat``) or dataset path (HDF5, ``"group/name"``).
        time: the time column [s in its unit]; ``None``: a column named ``t`` or ``time`` if there is one,
            else ``fs`` must be given.
        fs: sampling rate [Hz] of a record without a time column (samples at ``k / fs`` from 0).
        unit: convert the values to this unit (``None``: keep the file's).
        units: column -> unit for files whose header carries none (``{"force_lbf": "lbf"}``), or
            ``"suffix"`` to take it from the column name after its last underscore; overrides the header.
        period: declare the record periodic with this period [s].
    """
    path = Path(path)
    fmt = format or SUFFIXES.get(path.suffix.lower())
    if fmt not in ("csv", "npz", "mat", "hdf5"):
        raise DataError(
            f"{path}: unknown record format {path.suffix!r}; use one of {sorted(SUFFIXES)} or give "
            "format = 'csv' | 'npz' | 'mat' | 'hdf5'"
        )
    check_data_file(path, "record file")
    if fs is not None and time is not None:
        raise DataError(f"{path}: give the time column `time` or the sampling rate `fs`, not both")
    wanted = {column} | ({time} if time is not None else set(TIME_NAMES) if fs is None else set())
    cols, names, file_units = _read_columns(path, fmt, delimiter, wanted)

    def pick(name: str, role: str) -> np.ndarray:
        if name not in cols:
            raise DataError(
                f"{path}: no {role} column {name!r}; the file has {names} (names are case-sensitive; a CSV "
                "header's [unit] is not part of the name)"
            )
        raw = cols[name]
        try:
            arr = np.asarray(raw, dtype=float).squeeze()
        except (TypeError, ValueError):
            kind = getattr(raw, "dtype", type(raw).__name__)
            raise DataError(
                f"{path}: {role} {name!r} holds {kind} data, not numbers; store the {role} as an array of numbers"
            ) from None
        if arr.ndim == 0:  # one sample: check_record says that a record needs two
            arr = arr.reshape(1)
        if arr.ndim != 1:
            raise DataError(
                f"{path}: {role} {name!r} must be one-dimensional (one value per sample), got shape {arr.shape}; "
                "store each channel as its own array"
            )
        return arr

    x = pick(column, "record")
    if time is None and fs is None:
        time = next((n for n in TIME_NAMES if n in names and n != column), None)
        if time is None:
            raise DataError(
                f"{path}: no time column found (looked for {list(TIME_NAMES)}) among {names}; name it with "
                '`time = "..."` or give the sampling rate `fs`'
            )
    label = f"{path}, column {column!r}"

    def unit_of(name: str) -> str:
        if isinstance(units, str):
            if units != "suffix":
                raise DataError(f"{path}: units must be a map column -> unit or 'suffix', got {units!r}")
            return _units.suffix_unit(name) or file_units.get(name, "")
        if units and name in units:
            return units[name]
        return file_units.get(name, "")

    if time is not None:
        t = pick(time, "time")
        t = t * _units.factor(unit_of(time), "s", what=f"{path}, column {time!r}")
    else:
        assert fs is not None
        if not (np.isfinite(fs) and fs > 0):
            raise DataError(f"{path}: the sampling rate fs must be a positive number, got {fs!r}")
        t = np.arange(x.size) / float(fs)
    t, x = check_record(t, x, label=label)
    rec = Record(t, x, unit_of(column), str(path), column, None if period is None else float(period))
    return rec.converted(unit) if unit is not None else rec


def _read_columns(
    path: Path, fmt: str, delimiter: str | None, wanted: set[str]
) -> tuple[dict[str, Any], list[str], dict[str, str]]:
    """``(columns, names, units)``: the ``wanted`` columns the file has (binary formats read no other), the
    names of all its columns, and the units it states. Every error is a :class:`DataError` naming the file."""
    if fmt == "csv":
        table, found = read_table(path, delimiter=delimiter)
        return table, sorted(table), found
    if fmt == "npz":
        return _read_npz(path, wanted)
    if fmt == "mat":
        return _read_mat(path)
    return _read_hdf5(path, wanted)


def _read_npz(path: Path, wanted: set[str]) -> tuple[dict[str, Any], list[str], dict[str, str]]:
    import zipfile
    import zlib

    broken = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error)
    try:
        z = np.load(path, allow_pickle=False)
    except broken as exc:
        # numpy reads a file that is neither a zip archive nor a .npy array as a pickle, which it refuses
        why = "neither a zip archive nor a .npy array" if "pickle" in str(exc) else str(exc)
        raise DataError(
            f"{path}: not a NumPy .npz archive ({why}); save the record with numpy.savez(path, t=..., force=...), "
            "or give the file's real format (format = 'csv' | 'mat' | 'hdf5')"
        ) from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise DataError(
            f"{path}: a single .npy array, not a .npz archive of named arrays; save the record with "
            "numpy.savez(path, t=..., force=...)"
        )
    with z:
        names = sorted(z.files)
        cols: dict[str, Any] = {}
        for k in sorted(wanted & set(names)):
            try:
                cols[k] = z[k]
            except ValueError as exc:
                if "allow_pickle" in str(exc) or "pickled" in str(exc):
                    raise DataError(
                        f"{path}: array {k!r} holds Python objects (dtype object), which are never unpickled (a "
                        "pickle can run code); save it as an array of numbers: numpy.savez(path, "
                        f"{k}=numpy.asarray(values, dtype=float), ...)"
                    ) from None
                raise DataError(f"{path}: array {k!r} cannot be read ({exc}); write the file again") from None
            except broken as exc:
                raise DataError(f"{path}: array {k!r} cannot be read ({exc}); the archive is damaged") from None
    return cols, names, {}


def _read_mat(path: Path) -> tuple[dict[str, Any], list[str], dict[str, str]]:
    import scipy.io

    try:
        data = scipy.io.loadmat(path, squeeze_me=True)
    except Exception as exc:  # scipy's parser fails on a foreign file with assorted types; the file is at fault
        raise DataError(
            f"{path}: not a readable MATLAB v4-v7.2 file ({type(exc).__name__}: {exc}); a v7.3 file is HDF5: "
            "give format = 'hdf5'"
        ) from None
    cols = {k: v for k, v in data.items() if not k.startswith("__")}
    return cols, sorted(cols), {}


def _read_hdf5(path: Path, wanted: set[str]) -> tuple[dict[str, Any], list[str], dict[str, str]]:
    h5py = require("h5py", "hdf5")
    datasets: dict[str, Any] = {}
    cols: dict[str, Any] = {}
    found_units: dict[str, str] = {}
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise DataError(
            f"{path}: not a readable HDF5 file ({exc}); give an HDF5 file (h5py, MATLAB v7.3), or the file's "
            "real format (format = 'csv' | 'npz' | 'mat')"
        ) from None
    with f:

        def visit(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Dataset):
                datasets[name] = obj

        try:
            f.visititems(visit)
            for name in sorted(wanted & set(datasets)):
                obj = datasets[name]
                cols[name] = obj[()]
                u = obj.attrs.get("units", obj.attrs.get("unit", ""))
                found_units[name] = u.decode() if isinstance(u, bytes) else str(u)
        except (OSError, RuntimeError, KeyError) as exc:
            raise DataError(f"{path}: the HDF5 file cannot be read ({exc}); it is damaged: write it again") from None
    return cols, sorted(datasets), found_units
