"""A measured excitation as a model condition: what the record is, where it acts and how it is interpolated.

:func:`excitation` turns a condition value into an :class:`Excitation`. Accepted values:

* a file path (CSV: first column time [s], second the values; other formats need a table naming the column);
* a table (a TOML table or a mapping) ``{path, column, time | fs, units, unit, format, delimiter, decimal, names,
  period, interpolation, preprocess, node}``: the file (any measured table,
  :func:`~mechcalib.core.tables.read_measured`) and column (a name or a position, 0 for the first), the time
  column (or the sampling rate of a record without one), how the file is read, a units map (``{"force_lbf" = "lbf"}`` or ``"suffix"``), the values' unit when the file does
  not say it, the period of a periodic record [s], the interpolation (:data:`.interp.INTERPOLATIONS`), the
  pre-processing steps (:mod:`.preprocess`) and, for a model with several degrees of freedom, the node the
  force acts at;
* arrays: a :class:`~.io.Record`, a pair ``(t, values)``, a ``(K, 2)`` array, or a mapping with ``t`` and the
  values (under the condition's own name, e.g. ``force``, or ``values``) and any of ``unit``, ``period``,
  ``interpolation``, ``preprocess``, ``node``.

Values convert to the model's unit (pint, :mod:`mechcalib.core.units`); a record without a unit is read in it.
The interpolation left out follows :func:`.interp.default_interpolation` (band-limited for a periodic record,
cubic otherwise); :attr:`Excitation.describe` states what was used, and the run's conditions keep it.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError, DataError
from . import preprocess as _pre
from .interp import check_interpolation, default_interpolation, interpolate, samples_per_period
from .io import Record, check_record, read_record

FILE_KEYS = ("path", "column", "time", "fs", "units", "unit", "format", "delimiter", "decimal", "names")
COMMON_KEYS = ("period", "interpolation", "preprocess", "node")
_CACHE: OrderedDict[str, Excitation] = OrderedDict()
_CACHE_SIZE = 16


@dataclass(frozen=True)
class Excitation:
    """A record ready to drive a model: ``record`` in the model's unit, the ``interpolation`` to use
    (resolved), the ``period`` [s] of a periodic record and the ``node`` of a force (``None``: the model's)."""

    record: Record
    interpolation: str
    period: float | None = None
    node: int | None = None

    @property
    def t(self) -> np.ndarray:
        return self.record.t

    @property
    def values(self) -> np.ndarray:
        return self.record.values

    def at(self, t: np.ndarray) -> np.ndarray:
        """The excitation at times ``t`` [s] by its interpolation."""
        return interpolate(self.t, self.values, t, self.interpolation, self.period, label=self.record.label)

    def slopes_at(self, t: np.ndarray) -> np.ndarray:
        """The time derivative of the interpolated excitation at ``t`` [s] (0 outside a non-periodic record)."""
        return interpolate(
            self.t, self.values, t, self.interpolation, self.period, label=self.record.label, derivative=True
        )

    def describe(self) -> str:
        per = f", period {self.period:g} s" if self.period is not None else ""
        return (
            f"{self.record.label}: {self.t.size} samples at {self.record.fs:.6g} Hz over {self.t[-1] - self.t[0]:.6g} s"
            f"{per}, {self.interpolation} interpolation"
        )


def excitation(value: Any, *, name: str = "force", unit: str = "", model: str = "the model") -> Excitation | None:
    """The :class:`Excitation` of a condition value (see the module docstring); ``None`` for ``None``.

    ``name``: the condition (``force``, ``ground_acceleration``), ``unit``: the model's unit of it. Errors are
    :class:`~mechcalib.errors.ConfigurationError` naming the condition, the file and column, the rule and the fix.
    """
    if value is None:
        return None
    key = _cache_key(value, name, unit)
    if key is not None and key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    try:
        exc = _build(value, name, unit)
    except DataError as err:
        raise ConfigurationError(f"{model}: condition {name!r}: {err}") from None
    if key is not None:
        _CACHE[key] = exc
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return exc


def _cache_key(value: Any, name: str, unit: str) -> str | None:
    """A key for a file-backed value (path, the file's size and time, the table), ``None`` for arrays."""
    if isinstance(value, (str, os.PathLike)):
        spec: Any = {"path": str(value)}
    elif isinstance(value, Mapping) and "path" in value:
        spec = dict(value)
    else:
        return None
    try:
        st = Path(spec["path"]).stat()
        return json.dumps([spec, name, unit, st.st_size, st.st_mtime_ns], sort_keys=True, default=str)
    except (OSError, TypeError):
        return None


def _options(d: Mapping[str, Any], rec: Record, name: str) -> Excitation:
    period = d.get("period", rec.period)
    if period is not None:
        period = float(period)
        rec = Record(rec.t, rec.values, rec.unit, rec.source, rec.column, period)
    steps = d.get("preprocess", ())
    if isinstance(steps, Mapping | str):
        raise DataError(f"{rec.label}: preprocess must be a list of steps [{{op = ...}}, ...], got {steps!r}")
    rec = _pre.apply(rec, list(steps))
    period = rec.period
    method = d.get("interpolation") or default_interpolation(period)
    check_interpolation(method, period, label=rec.label)
    if method == "bandlimited":
        assert period is not None
        samples_per_period(rec.t, period, label=rec.label)  # whole periods of uniform samples, checked now
    node = d.get("node")
    if node is not None and (isinstance(node, bool) or not isinstance(node, (int, np.integer))):
        raise DataError(f"{rec.label}: node must be an integer (the node the {name} acts at), got {node!r}")
    return Excitation(rec, method, period, None if node is None else int(node))


def _build(value: Any, name: str, unit: str) -> Excitation:
    if isinstance(value, Excitation):
        return Excitation(value.record.converted(unit), value.interpolation, value.period, value.node)
    if isinstance(value, Record):
        return _options({}, value.converted(unit), name)
    if isinstance(value, (str, os.PathLike)):
        return _options({}, _legacy_csv(Path(value), unit), name)
    if isinstance(value, Mapping):
        d = dict(value)
        if "path" in d:
            bad = sorted(set(d) - set(FILE_KEYS) - set(COMMON_KEYS))
            if bad:
                raise DataError(f"{d['path']}: unknown keys {bad}; a file record takes {list(FILE_KEYS + COMMON_KEYS)}")
            if "column" not in d:
                if Path(str(d["path"])).suffix.lower() in (".csv", ".txt", ".dat", ".tsv") and not (
                    set(d) & {"time", "fs", "units", "format", "delimiter", "decimal", "names"}
                ):
                    return _options(d, _legacy_csv(Path(d["path"]), unit, d.get("unit")), name)
                raise DataError(f"{d['path']}: give `column`, the name of the {name} column or dataset")
            rec = read_record(
                d["path"],
                d["column"],
                time=d.get("time"),
                fs=d.get("fs"),
                units=d.get("units"),
                format=d.get("format"),
                delimiter=d.get("delimiter"),
                decimal=d.get("decimal"),
                names=d.get("names"),
            )
            if d.get("unit") is not None and not rec.unit:
                rec = Record(rec.t, rec.values, d["unit"], rec.source, rec.column)
            return _options(d, rec.converted(unit), name)
        vkey = name if name in d else "values"
        if "t" not in d or vkey not in d:
            raise DataError(
                f"a {name} mapping needs keys 't' and {name!r} (or 'values'), or 'path' for a file; got {sorted(d)}"
            )
        bad = sorted(set(d) - {"t", vkey, "unit"} - set(COMMON_KEYS))
        if bad:
            raise DataError(f"unknown keys {bad} in the {name} mapping; it takes t, {vkey}, unit, {list(COMMON_KEYS)}")
        t, x = check_record(d["t"], d[vkey], label=f"the {name} arrays", gaps=False)
        return _options(d, Record(t, x, d.get("unit") or "", "", name).converted(unit), name)
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 2 and arr.shape[1] == 2 and arr.shape[0] != 2:
        t, x = arr[:, 0], arr[:, 1]
    elif arr.ndim == 2 and arr.shape[0] == 2:
        t, x = arr[0], arr[1]
    else:
        raise DataError(
            f"the {name} condition must be a file path, a table {{path = ..., column = ...}}, a pair (t, values), a "
            f"(K, 2) array or {{'t', {name!r}}}, got an array of shape {arr.shape}"
        )
    t, x = check_record(t, x, label=f"the {name} arrays", gaps=False)
    return _options({}, Record(t, x, "", "", name), name)


def _legacy_csv(path: Path, unit: str, declared: str | None = None) -> Record:
    """A CSV whose first column is time and second the values (the form ``force = "file.csv"``)."""
    from ..core.data import read_table

    if not path.is_file():
        raise DataError(
            f"record file {str(path)!r} does not exist (relative paths in a config resolve from its folder)"
        )
    table, units = read_table(path)
    cols = list(table)
    if len(cols) < 2:
        raise DataError(f"{path}: need two columns (time, values), got {cols}")
    rec = read_record(path, cols[1], time=cols[0])
    if declared is not None and not rec.unit:
        rec = Record(rec.t, rec.values, declared, rec.source, rec.column)
    return rec.converted(unit)
