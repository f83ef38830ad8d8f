"""Measured and simulated curves.

A :class:`Curve` is one channel: ordinate ``y`` against abscissa ``x`` (force against displacement,
acceleration against time), optionally with a monotonic *progress* coordinate ``t`` (time or load step)
that pairs points when ``x`` is not monotonic. An :class:`Experiment` is a set of named curves measured
under stated conditions (a temperature, a loading velocity), which the model receives.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError
from .tables import (
    MAX_ABS_VALUE,
    MAX_DATA_BYTES,
    MAX_LINE_CHARS,
    TableOptions,
    check_data_file,
    check_magnitude,
    data_limits,
    read_measured,
)
from .units import suffix_unit

__all__ = [
    "MAX_ABS_VALUE",
    "MAX_DATA_BYTES",
    "MAX_LINE_CHARS",
    "MIN_POINTS",
    "Curve",
    "Experiment",
    "check_data_file",
    "check_magnitude",
    "data_limits",
    "read_table",
]

MIN_POINTS = 2


def _finite_1d(a: Any, what: str) -> np.ndarray:
    arr = np.asarray(a, dtype=float)
    if arr.ndim != 1:
        raise DataError(f"{what} must be one-dimensional, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = np.flatnonzero(bad)
        raise DataError(
            f"{what} must be finite, got {int(bad.sum())} NaN/inf value(s), first at index {int(idx[0])}; "
            "remove or fill those rows before calibrating"
        )
    return arr


@dataclass(frozen=True)
class Curve:
    """One channel of data, ``y(x)``.

    Args:
        x, y: abscissa and ordinate, shape ``(m,)``, ``m >= 2``, finite.
        t: optional progress coordinate (time, load step), non-decreasing, shape ``(m,)``.
        x_name, y_name, x_unit, y_unit: labels for reports.
    """

    x: np.ndarray
    y: np.ndarray
    t: np.ndarray | None = None
    x_name: str = "x"
    y_name: str = "y"
    x_unit: str = ""
    y_unit: str = ""

    def __post_init__(self) -> None:
        label = f"curve {self.y_name!r} vs {self.x_name!r}"
        x = _finite_1d(self.x, f"{label}: x")
        y = _finite_1d(self.y, f"{label}: y")
        if x.shape != y.shape:
            raise DataError(
                f"{label}: x and y must have the same length, got {x.size} and {y.size}; "
                "check that both columns come from the same table"
            )
        if x.size < MIN_POINTS:
            raise DataError(
                f"{label}: at least {MIN_POINTS} points are needed, got {x.size}; give the whole curve (a table "
                "needs a header row and a row per point)"
            )
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)
        if self.t is not None:
            t = _finite_1d(self.t, f"{label}: t")
            if t.shape != x.shape:
                raise DataError(f"{label}: t must have the length of x ({x.size}), got {t.size}")
            if np.any(np.diff(t) < 0):
                i = int(np.flatnonzero(np.diff(t) < 0)[0])
                raise DataError(
                    f"{label}: the progress coordinate t must be non-decreasing, got t[{i}]={float(t[i])!r} > "
                    f"t[{i + 1}]={float(t[i + 1])!r}; sort the rows by time or load step"
                )
            object.__setattr__(self, "t", t)

    # -- properties -----------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.x.size)

    @property
    def progress(self) -> np.ndarray:
        """``t`` if given, else the normalised row index (load step) in [0, 1]."""
        if self.t is not None:
            return self.t
        return np.linspace(0.0, 1.0, self.x.size)

    def is_monotonic(self, strict: bool = False) -> bool:
        """Whether ``x`` is non-decreasing (``strict``: increasing)."""
        d = np.diff(self.x)
        return bool(np.all(d > 0)) if strict else bool(np.all(d >= 0))

    def require_increasing(self, why: str) -> None:
        if not self.is_monotonic():
            i = int(np.flatnonzero(np.diff(self.x) < 0)[0])
            raise DataError(
                f"curve {self.y_name!r} vs {self.x_name!r}: {why} needs a non-decreasing abscissa, got "
                f"x[{i}]={float(self.x[i])!r} > x[{i + 1}]={float(self.x[i + 1])!r}; sort the data, or give a progress "
                "coordinate t and pair by it"
            )

    # -- transforms -----------------------------------------------------------------------
    def interp(self, x_new: np.ndarray) -> np.ndarray:
        """Linear interpolation of ``y`` at ``x_new`` (needs non-decreasing ``x``)."""
        self.require_increasing("interpolation")
        return np.interp(np.asarray(x_new, dtype=float), self.x, self.y)

    def resample(self, n: int | None = None, x_new: np.ndarray | None = None) -> Curve:
        """A copy on ``n`` uniformly spaced abscissae over the curve's range, or on ``x_new``."""
        if (n is None) == (x_new is None):
            raise DataError("resample needs exactly one of n (number of points) or x_new (abscissae)")
        if x_new is None:
            if n is None or n < MIN_POINTS:
                raise DataError(f"resample: n must be at least {MIN_POINTS}, got {n}")
            x_new = np.linspace(self.x[0], self.x[-1], int(n))
        x_new = np.asarray(x_new, dtype=float)
        self.require_increasing("resampling")
        t_new = None if self.t is None else np.interp(x_new, self.x, self.t)
        return replace(self, x=x_new, y=np.interp(x_new, self.x, self.y), t=t_new)

    def shifted(self, dx: float) -> Curve:
        """A copy with the abscissa moved by ``dx`` (a time-origin shift, Mareš et al. (2016) section 9).

        Measured hydration curves start at mixing, the model at the onset of hydration: pass
        ``dx=-t0`` to move the data's origin ``t0`` hours later.
        """
        # A progress coordinate that is the abscissa itself (time) moves with it; a load step does not.
        t = self.t + dx if self.t is not None and np.array_equal(self.t, self.x) else self.t
        return replace(self, x=self.x + float(dx), t=t)

    def with_noise(self, level: float, seed: int | np.random.Generator | None = None) -> Curve:
        """Ding et al. (2021) eq. 36: ``y + level * std(y) * N(0, 1)`` (``level=0.05`` is 5 % noise)."""
        if level < 0:
            raise DataError(f"noise level must be >= 0, got {level!r}")
        rng = np.random.default_rng(seed)
        return replace(self, y=self.y + level * np.std(self.y) * rng.standard_normal(self.y.size))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "x": self.x.tolist(),
            "y": self.y.tolist(),
            "x_name": self.x_name,
            "y_name": self.y_name,
            "x_unit": self.x_unit,
            "y_unit": self.y_unit,
        }
        if self.t is not None:
            d["t"] = self.t.tolist()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Curve:
        for key in ("x", "y"):
            if key not in d:
                raise DataError(f"a curve needs the key {key!r}, got keys {sorted(d)}")
        return cls(
            x=d["x"],
            y=d["y"],
            t=d.get("t"),
            x_name=d.get("x_name", "x"),
            y_name=d.get("y_name", "y"),
            x_unit=d.get("x_unit", ""),
            y_unit=d.get("y_unit", ""),
        )


@dataclass(frozen=True)
class Experiment:
    """Named curves measured under given conditions.

    Args:
        channels: ``{channel name: Curve}``; the names match the model's output channels.
        conditions: model inputs that are not calibrated (temperature, loading velocity...).
        name: label for reports.
        weight: factor on this experiment's loss when a problem has several experiments.
    """

    channels: Mapping[str, Curve]
    conditions: Mapping[str, float] = field(default_factory=dict)
    name: str = "experiment"
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not self.channels:
            raise DataError(f"experiment {self.name!r} has no channels; give at least one curve")
        for k, c in self.channels.items():
            if not isinstance(c, Curve):
                raise DataError(f"experiment {self.name!r}: channel {k!r} must be a Curve, got {type(c).__name__}")
        if not np.isfinite(self.weight) or self.weight < 0:
            raise DataError(f"experiment {self.name!r}: weight must be finite and >= 0, got {self.weight!r}")
        object.__setattr__(self, "channels", dict(self.channels))
        object.__setattr__(self, "conditions", dict(self.conditions))

    def __getitem__(self, channel: str) -> Curve:
        try:
            return self.channels[channel]
        except KeyError:
            raise KeyError(
                f"experiment {self.name!r} has no channel {channel!r}; it has {list(self.channels)}"
            ) from None

    @property
    def channel_names(self) -> tuple[str, ...]:
        return tuple(self.channels)

    def map(self, fn) -> Experiment:
        """A copy with ``fn(curve)`` applied to every channel."""
        return replace(self, channels={k: fn(c) for k, c in self.channels.items()})

    def with_noise(self, level: float, seed: int | np.random.Generator | None = None) -> Experiment:
        rng = np.random.default_rng(seed)
        return self.map(lambda c: c.with_noise(level, rng))

    def shifted(self, dx: float) -> Experiment:
        return self.map(lambda c: c.shifted(dx))

    def resample(self, n: int) -> Experiment:
        return self.map(lambda c: c.resample(n))

    # -- I/O ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "weight": self.weight,
            "conditions": dict(self.conditions),
            "channels": {k: c.to_dict() for k, c in self.channels.items()},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Experiment:
        if "channels" not in d:
            raise DataError(f"an experiment needs a 'channels' mapping, got keys {sorted(d)}")
        return cls(
            channels={k: Curve.from_dict(c) for k, c in d["channels"].items()},
            conditions=d.get("conditions", {}),
            name=d.get("name", "experiment"),
            weight=float(d.get("weight", 1.0)),
        )

    def to_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def from_json(cls, path: str | Path) -> Experiment:
        """Read an experiment written by :meth:`to_json`; every error names the file."""
        path = check_data_file(path, "experiment file")
        try:
            d = json.loads(path.read_bytes())
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{path}: not a JSON text file (byte {exc.object[exc.start]:#04x} at offset {exc.start} is not "
                "UTF-8 text); an experiment file is JSON (Experiment.to_json) or a CSV table"
            ) from None
        except json.JSONDecodeError as exc:
            raise DataError(
                f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); an experiment file "
                "is the JSON that Experiment.to_json writes: correct the file or write it again"
            ) from None
        if not isinstance(d, Mapping):
            raise DataError(f"{path}: an experiment file holds a JSON object with 'channels', got a {type(d).__name__}")
        try:
            exp = cls.from_dict(d)
        except DataError as exc:
            raise DataError(f"{path}: {exc}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise DataError(
                f"{path}: not an experiment ({exc}); its 'channels' map names to curves "
                '{"x": [numbers], "y": [numbers]} as Experiment.to_json writes them'
            ) from None
        for ch, c in exp.channels.items():
            for role in ("x", "y", "t"):
                arr = getattr(c, role)
                if arr is not None:
                    check_magnitude(arr, f"{path}, channel {ch!r}, {role}")
        return exp

    @classmethod
    def from_csv(
        cls,
        path: str | Path,
        channels: Mapping[str, Sequence[str | int]] | None = None,
        *,
        conditions: Mapping[str, float] | None = None,
        name: str | None = None,
        delimiter: str | None = None,
    ) -> Experiment:
        """Read a delimited text table: :meth:`from_file` with ``delimiter`` (``None``: found)."""
        return cls.from_file(path, channels, conditions=conditions, name=name, delimiter=delimiter)

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        channels: Mapping[str, Sequence[str | int]] | None = None,
        *,
        conditions: Mapping[str, float] | None = None,
        name: str | None = None,
        units: Mapping[str, str] | str | None = None,
        **read: Any,
    ) -> Experiment:
        """Read the curves of a measured table (:func:`~mechcalib.core.tables.read_measured`: text, ``.npz``,
        ``.mat``, HDF5, Parquet).

        ``channels`` maps a channel name to ``(x column, y column)`` or ``(x column, y column, t column)``, each
        a name or a position (0 for the first column); by default the first column is the abscissa and every
        other column a channel named after its header. Units come from the file (``force [kN]``, an HDF5
        ``units`` attribute) or from ``units`` (``{"force": "kip"}``, or ``"suffix"`` for names such as
        ``force_kN``), which overrides the file. ``read``: ``format``, ``delimiter``, ``decimal``, ``names``
        (:class:`~mechcalib.core.tables.TableOptions`). Every error names the file and the column.
        """
        options = TableOptions.of(read, str(path))
        wanted = None if channels is None else {c for spec in channels.values() for c in spec}
        table = read_measured(path, options, wanted=wanted, what="experiment file")
        cols = list(table.names)
        if channels is None:
            if len(cols) < 2:
                raise DataError(f"{path}: need at least two columns (x and one channel), got {cols}")
            channels = {c: (cols[0], c) for c in cols[1:]}
        curves = {}
        for ch, spec in channels.items():
            spec = list(spec)
            if len(spec) not in (2, 3):
                raise DataError(f"channel {ch!r}: give (x column, y column[, t column]), got {spec}")
            for col in spec:
                if not isinstance(col, int) and col not in table.names:
                    raise DataError(f"{path}: channel {ch!r} names column {col!r}, but the columns are {cols}")
            named = [table.name_of(c) for c in spec]
            data = [table.column(c) for c in named]
            for col, arr in zip(named, data, strict=True):
                check_magnitude(arr, f"{path}, column {col!r}", where="data row", first=1)
            try:
                curves[ch] = Curve(
                    x=data[0],
                    y=data[1],
                    t=data[2] if len(spec) == 3 else None,
                    x_name=named[0],
                    y_name=named[1],
                    x_unit=_unit_of(named[0], table.units, units, path),
                    y_unit=_unit_of(named[1], table.units, units, path),
                )
            except DataError as exc:
                raise DataError(f"{path}: {exc}") from None
        return cls(curves, conditions=conditions or {}, name=name or Path(path).stem)


def _unit_of(column: str, found: Mapping[str, str], units: Mapping[str, str] | str | None, path: Any) -> str:
    """A column's unit: the ``units`` map's (or its name's suffix with ``"suffix"``), else the file's."""
    if isinstance(units, str):
        if units != "suffix":
            raise DataError(f"{path}: units must be a map column -> unit or 'suffix', got {units!r}")
        return suffix_unit(column) or found.get(column, "")
    if units and column in units:
        return str(units[column])
    return found.get(column, "")


def read_table(path: str | Path, delimiter: str | None = None) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """A text table's columns and units: ``({name: values}, {name: unit})``, read by
    :func:`~mechcalib.core.tables.read_measured` (metadata lines, quoted headers, any delimiter, decimal
    commas). The file's size and each line's length are checked before it is parsed (:func:`data_limits`);
    every error is a :class:`DataError` naming the file."""
    table = read_measured(path, TableOptions(format="text", delimiter=delimiter))
    return {n: table.column(n) for n in table.names}, dict(table.units)
