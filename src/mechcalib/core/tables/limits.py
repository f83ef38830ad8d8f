"""Limits checked before a data file is parsed: its size, the length of a text table's lines, NUL bytes; and
the magnitude of measured values."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DataError

#: a measured value beyond this magnitude is a mistake (a fill value, an overflow), not a measurement
MAX_ABS_VALUE = 1e200
#: a data file larger than this is refused before it is read [bytes]; ``MECHCALIB_MAX_DATA_BYTES`` overrides it
MAX_DATA_BYTES = 2 * 1024**3
#: a line of a text table longer than this is refused before it is parsed [characters] (a field this long is a
#: file that is not a table); the environment variable ``MECHCALIB_MAX_LINE_CHARS`` overrides it
MAX_LINE_CHARS = 1024**2


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


def scan_text(path: Path) -> None:
    """Refuse a text file with a NUL byte (a binary file) or a line over the limit, without parsing it."""
    _, max_line = data_limits()
    start, line = 0, 1  # offset of the current line's start, its number
    offset = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 24):
            nul = chunk.find(b"\0")
            if nul >= 0:
                n = line + chunk.count(b"\n", 0, nul)
                raise DataError(
                    f"{path}: not a text table (line {n} holds a NUL byte: a binary file); give a CSV or delimited "
                    "text table, or the file's real format (format = 'npz' | 'mat' | 'hdf5' | 'parquet')"
                )
            nl = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10) + offset
            ends = np.concatenate([[start - 1], nl]) if nl.size else np.array([start - 1])
            lengths = np.diff(ends)
            tail = offset + len(chunk) - (int(nl[-1]) + 1 if nl.size else start)
            if (lengths.size and lengths.max() - 1 > max_line) or tail > max_line:
                k = (
                    int(np.flatnonzero(lengths - 1 > max_line)[0])
                    if lengths.size and lengths.max() - 1 > max_line
                    else nl.size
                )
                raise DataError(
                    f"{path}: line {line + k} is longer than {max_line} characters (rule: a line of a data table is at "
                    "most that long; a longer one is a file that is not a table, or one cell holding the whole data); "
                    "give one row of numbers per line, or raise the limit with the environment variable "
                    "MECHCALIB_MAX_LINE_CHARS"
                )
            if nl.size:
                start = int(nl[-1]) + 1
                line += int(nl.size)
            offset += len(chunk)
