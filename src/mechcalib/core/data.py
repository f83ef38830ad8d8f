"""Measured and simulated curves.

A :class:`Curve` is one channel: ordinate ``y`` against abscissa ``x`` (force against displacement,
acceleration against time), optionally with a monotonic *progress* coordinate ``t`` (time or load step)
that pairs points when ``x`` is not monotonic. An :class:`Experiment` is a set of named curves measured
under stated conditions (a temperature, a loading velocity), which the model receives.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError

MIN_POINTS = 2
#: a measured value beyond this magnitude is a mistake (a fill value, an overflow), not a measurement
MAX_ABS_VALUE = 1e200
#: a data file (table, record, experiment JSON) larger than this is refused before it is read [bytes];
#: the environment variable ``MECHCALIB_MAX_DATA_BYTES`` overrides it
MAX_DATA_BYTES = 2 * 1024**3
#: a line of a text table longer than this is refused as soon as it is met [characters] (a field this long is
#: a file that is not a table); the environment variable ``MECHCALIB_MAX_LINE_CHARS`` overrides it
MAX_LINE_CHARS = 1024**2
_UNIT_RE = re.compile(r"^\s*(?P<name>[^\[\]]+?)\s*(\[(?P<unit>[^\]]*)\])?\s*$")


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


def _limit(env: str, default: int) -> int:
    text = os.environ.get(env)
    if text is None or not text.strip():
        return default
    try:
        value = int(float(text))
    except ValueError:
        raise DataError(f"{env} must be a positive number of bytes or characters, got {text!r}") from None
    if value <= 0:
        raise DataError(f"{env} must be a positive number of bytes or characters, got {text!r}")
    return value


def data_limits() -> tuple[int, int]:
    """``(bytes, line characters)``: the largest data file read, and the longest line of a text table
    (:data:`MAX_DATA_BYTES` and :data:`MAX_LINE_CHARS`, or the environment's ``MECHCALIB_MAX_DATA_BYTES`` and
    ``MECHCALIB_MAX_LINE_CHARS``)."""
    return _limit("MECHCALIB_MAX_DATA_BYTES", MAX_DATA_BYTES), _limit("MECHCALIB_MAX_LINE_CHARS", MAX_LINE_CHARS)


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def check_data_file(path: str | Path, what: str = "data file") -> Path:
    """``path`` if it is an existing file no larger than the data limit (:func:`data_limits`), checked before
    anything is read; else a :class:`DataError` naming the file, the rule and the fix."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{what} {str(path)!r} does not exist (relative paths in a config resolve from its folder)")
    if not path.is_file():
        raise DataError(f"{what} {str(path)!r} is not a file (a folder?); give the path of the file")
    limit, _ = data_limits()
    size = path.stat().st_size
    if size > limit:
        raise DataError(
            f"{path}: {_size(size)}, larger than the {_size(limit)} a {what} may have (rule: data files are "
            "checked for size before they are read); give a shorter or decimated record (split the file, or "
            "keep the stretch and channels the calibration needs), or raise the limit with the environment "
            f"variable MECHCALIB_MAX_DATA_BYTES={size}"
        )
    return path


def check_magnitude(values: Any, label: str, *, where: str = "index", first: int = 0) -> None:
    """Refuse values beyond :data:`MAX_ABS_VALUE` in magnitude (NaN and inf are the finiteness checks'):
    a :class:`DataError` naming ``label`` (file and column), the first such value and where it is (``where``
    numbered from ``first``)."""
    arr = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        bad = np.abs(arr) > MAX_ABS_VALUE
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise DataError(
            f"{label}: {int(bad.sum())} value(s) beyond +-{MAX_ABS_VALUE:g}, the first {float(arr.ravel()[i])!r} at "
            f"{where} {i + first} (rule: a measured value is at most {MAX_ABS_VALUE:g} in magnitude; larger ones are fill "
            "values or overflows that fail every simulation); correct or remove those rows in the data file"
        )


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
        channels: Mapping[str, Sequence[str]] | None = None,
        *,
        conditions: Mapping[str, float] | None = None,
        name: str | None = None,
        delimiter: str | None = None,
    ) -> Experiment:
        """Read a table with a header row.

        Header cells may carry units in brackets (``force [kN]``). ``channels`` maps a channel name to
        ``(x column, y column)`` or ``(x column, y column, t column)``; by default the first column is the
        abscissa and every other column a channel named after its header. Rows with an empty or non-numeric
        cell are an error that names the row and column.
        """
        table, units = read_table(path, delimiter=delimiter)
        cols = list(table)
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
                if col not in table:
                    raise DataError(f"{path}: channel {ch!r} names column {col!r}, but the columns are {cols}")
            xc, yc = spec[0], spec[1]
            for col in spec:
                check_magnitude(table[col], f"{path}, column {col!r}", where="data row", first=1)
            try:
                curves[ch] = Curve(
                    x=table[xc],
                    y=table[yc],
                    t=table[spec[2]] if len(spec) == 3 else None,
                    x_name=xc,
                    y_name=yc,
                    x_unit=units[xc],
                    y_unit=units[yc],
                )
            except DataError as exc:
                raise DataError(f"{path}: {exc}") from None
        return cls(curves, conditions=conditions or {}, name=name or Path(path).stem)


def read_table(path: str | Path, delimiter: str | None = None) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Read a CSV (or whitespace/semicolon separated) table with a header row -> columns and units.

    The file's size and each line's length are checked before they are read (:func:`data_limits`); every
    error is a :class:`DataError` naming the file."""
    path = check_data_file(path)
    lines = _table_lines(path)
    if len(lines) < 2:
        raise DataError(f"{path}: a header row and at least one data row are needed, got {len(lines)} line(s)")
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(lines[0], delimiters=",;\t ").delimiter
        except csv.Error:
            delimiter = ","
    try:
        rows = list(csv.reader(lines, delimiter=delimiter, skipinitialspace=True))
    except csv.Error as exc:
        raise DataError(
            f"{path}: not a readable table ({exc}); a data table is text with a header row and one row of numbers "
            "per line"
        ) from None
    header = [h for h in rows[0] if h != ""] if delimiter == " " else rows[0]
    names, units = [], {}
    for h in header:
        m = _UNIT_RE.match(h)
        n = m.group("name").strip() if m else h.strip()
        if n in units:
            raise DataError(f"{path}: column names must be unique, {n!r} appears twice")
        names.append(n)
        units[n] = (m.group("unit") or "").strip() if m else ""
    data: dict[str, list[float]] = {n: [] for n in names}
    for r, row in enumerate(rows[1:], start=2):
        cells = [c for c in row if c != ""] if delimiter == " " else row
        if len(cells) != len(names):
            raise DataError(f"{path}: row {r} has {len(cells)} cells, the header has {len(names)}")
        for n, cell in zip(names, cells, strict=True):
            try:
                data[n].append(float(cell))
            except ValueError:
                raise DataError(f"{path}: row {r}, column {n!r}: {cell!r} is not a number") from None
    return {n: np.asarray(v) for n, v in data.items()}, units


def _table_lines(path: Path) -> list[str]:
    """The lines of a text table that are neither blank nor ``#`` comments, each line's length checked as it
    is read, so that a file with an absurdly long field is refused without reading it whole."""
    _, max_line = data_limits()
    lines: list[str] = []
    try:
        with path.open() as f:
            for number in itertools.count(1):
                ln = f.readline(max_line + 1)
                if not ln:
                    break
                if len(ln) > max_line and not ln.endswith("\n"):
                    raise DataError(
                        f"{path}: line {number} is longer than {max_line} characters (rule: a line of a data table "
                        "is at most that long; a longer one is a file that is not a table, or one cell holding the "
                        "whole data); give one row of numbers per line, or raise the limit with the environment "
                        "variable MECHCALIB_MAX_LINE_CHARS"
                    )
                if "\0" in ln:
                    raise DataError(
                        f"{path}: not a text table (line {number} holds a NUL byte: a binary file); give a CSV or "
                        "delimited text table (a .npz, .mat or HDF5 file is read as a record, by its suffix)"
                    )
                if ln.strip() and not ln.lstrip().startswith("#"):
                    lines.append(ln.rstrip("\r\n"))
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}: not a text table (it holds bytes such as {exc.object[exc.start]:#04x} that are not "
            f"{exc.encoding} text: a binary or differently encoded file); give a CSV or delimited text table, saved as "
            "UTF-8 (a .npz, .mat or HDF5 file is read as a record, by its suffix)"
        ) from None
    return lines
