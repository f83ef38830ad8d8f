"""Text tables for :func:`~mechcalib.core.tables.read_measured`: the layout found from the first lines (the
delimiter, the decimal mark, where the rows of numbers start, the header row above them and a units row),
then the rows parsed by pandas' C reader."""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DataError
from .base import DELIMITERS, Table, csv_cells, select, split_header
from .limits import data_limits, scan_text

HEAD_LINES = 200

_NUMBER = re.compile(r"^[+-]?(\d+([.]\d*)?|[.]\d+)([eEdD][+-]?\d+)?$")
_NUMBER_COMMA = re.compile(r"^[+-]?(\d+(,\d*)?|,\d+)([eE][+-]?\d+)?$")
_MISSING = {"", "nan", "NaN", "NAN", "NA", "N/A", "-nan", "inf", "-inf", "+inf", "Inf", "-Inf"}
_UNIT_ROW = re.compile(r"^\s*[\[(].*[\])]\s*$")


@dataclass(frozen=True)
class Layout:
    delimiter: str  # one of DELIMITERS
    decimal: str
    start: int  # line number (1-based) of the first row of numbers
    width: int  # cells per row
    header: list[str] | None
    units_row: list[str] | None


def _head(path: Path) -> tuple[list[tuple[int, str]], str]:
    """``([(line number, text)], encoding)``: the first non-blank lines (UTF-8, else Latin-1 text)."""
    _, max_line = data_limits()
    for encoding in ("utf-8-sig", "latin-1"):
        lines: list[tuple[int, str]] = []
        try:
            with path.open(encoding=encoding, newline="") as f:
                for number in itertools.count(1):
                    ln = f.readline(max_line + 1)
                    if not ln or len(lines) >= HEAD_LINES:
                        break
                    if ln.strip():
                        lines.append((number, ln.rstrip("\r\n")))
        except UnicodeDecodeError:
            continue
        return lines, encoding
    raise AssertionError  # pragma: no cover  (latin-1 decodes every byte)


def _kind(cells: list[str], decimal: str) -> int:
    """0: not a row of numbers; 1: numbers (some missing); the pattern depends on the decimal mark."""
    pat = _NUMBER if decimal == "." else _NUMBER_COMMA
    seen = False
    for c in cells:
        c = c.strip()
        if c in _MISSING:
            continue
        if not pat.match(c):
            return 0
        seen = True
    return 1 if seen else 0


def _share(cells: list[str], decimal: str) -> float:
    """The share of ``cells`` that are numbers."""
    pat = _NUMBER if decimal == "." else _NUMBER_COMMA
    return sum(1 for c in cells if pat.match(c.strip())) / max(len(cells), 1)


def layout(lines: list[tuple[int, str]], delimiter: str | None, decimal: str | None, path: Path) -> Layout:
    """The layout that reads the most rows of numbers from ``lines``: a layout of several columns before one
    of a single column, then the most rows, then more columns, then the earlier delimiter of
    :data:`DELIMITERS`; the width is the most common one (ties: the first met)."""
    delims = DELIMITERS if delimiter is None else ("whitespace" if delimiter in (" ", "whitespace") else delimiter,)
    best: tuple[tuple[int, int, int], Layout] | None = None
    for d in delims:
        for dec in (decimal,) if decimal else ((".",) if d == "," else (".", ",")):
            cells = [csv_cells(text, d) for _, text in lines]
            numeric = [_kind(c, dec) == 1 for c in cells]
            widths = [len(c) for c, ok in zip(cells, numeric, strict=True) if ok]
            if not widths:
                continue
            width = max(set(widths), key=lambda w: (widths.count(w), -widths.index(w)))
            rows = [i for i, ok in enumerate(numeric) if ok and len(cells[i]) == width]
            first = next((i for i in rows if i + 1 in rows or i == len(lines) - 1), rows[0])
            while first > 0 and len(cells[first - 1]) == width and _share(cells[first - 1], dec) >= 0.5:
                first -= 1  # a row of numbers with a bad cell: the data start there, and pandas names the cell
            score = (int(width > 1), sum(1 for i in rows if i >= first), width)
            if best is not None and score <= best[0]:
                continue
            header, units_row = _header(cells, first, width)
            best = (score, Layout(d, dec, lines[first][0], width, header, units_row))
    if best is None:
        raise DataError(
            f"{path}: not a text table of numbers (no row of numbers in its first {len(lines)} non-blank line(s)); "
            "a data table is text with one row of numbers per line, optionally below a header row and metadata "
            "lines (a .npz, .mat, HDF5 or Parquet file is read by its suffix, or give format = ...)"
        )
    return best[1]


def _header(cells: list[list[str]], first: int, width: int) -> tuple[list[str] | None, list[str] | None]:
    """The header row above the first row of numbers (and a units row between them), or ``None``."""
    above = list(cells[max(0, first - 2) : first])
    if not above:
        return None, None
    last = [c.strip() for c in above[-1]]
    if last and last[0].startswith("#"):
        last[0] = last[0].lstrip("#").strip()
    if len(last) == width and all(_UNIT_ROW.match(c) or not c for c in last) and len(above) == 2:
        names = [c.strip() for c in above[0]]
        if len(names) == width:
            return names, [c.strip()[1:-1].strip() if c else "" for c in last]
    if len(last) == width:
        return last, None
    return None, None


def read_text(path: Path, delimiter: str | None, decimal: str | None, wanted: Collection[str | int] | None) -> Table:
    """A text table read through pandas after :func:`layout`; every error names the file."""
    import pandas as pd

    scan_text(path)
    lines, encoding = _head(path)
    if not lines:
        raise DataError(f"{path}: an empty file; a data table needs rows of numbers (and a header row)")
    lay = layout(lines, delimiter, decimal, path)
    names, units = _names(lay, path)
    keep = select(names, wanted)
    sep = r"\s+" if lay.delimiter == "whitespace" else lay.delimiter
    try:
        df = pd.read_csv(
            path,
            sep=sep,
            header=None,
            names=list(range(lay.width)),
            skiprows=lay.start - 1,
            decimal=lay.decimal,
            encoding=encoding,
            skipinitialspace=lay.delimiter != "whitespace",
            comment="#",
            engine="c",
            index_col=False,
        )
    except pd.errors.ParserError as exc:
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if m:
            raise DataError(
                f"{path}: line {m.group(2)} has {m.group(3)} cells, the header has {lay.width}; give every row the "
                "same number of cells (or the delimiter: delimiter = ',' | ';' | '\\t' | 'whitespace')"
            ) from None
        raise DataError(f"{path}: not a readable table ({exc}); give one row of numbers per line") from None
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}: not a text table (it holds bytes such as {exc.object[exc.start]:#04x} that are not "
            f"{exc.encoding} text: a binary or differently encoded file); save it as UTF-8 text"
        ) from None
    except (ValueError, OSError) as exc:
        raise DataError(f"{path}: not a readable table ({exc}); give one row of numbers per line") from None
    cols = {names[j]: _column(df[j], names[j], lay, path) for j in (names.index(k) for k in keep)}
    _short_rows(cols, lay, path)
    return Table(str(path), tuple(names), cols, units)


def _names(lay: Layout, path: Path) -> tuple[list[str], dict[str, str]]:
    if lay.header is None:
        names = [str(j) for j in range(lay.width)]
        return names, dict.fromkeys(names, "")
    names, units = [], {}
    for j, cell in enumerate(lay.header):
        n, u = split_header(cell)
        n = n or f"column{j}"
        if n in units:
            raise DataError(f"{path}: column names must be unique, {n!r} appears twice (give names = [...])")
        names.append(n)
        units[n] = (lay.units_row[j] if lay.units_row else "") or u
    return names, units


def _column(s: Any, name: str, lay: Layout, path: Path) -> np.ndarray:
    """A parsed column as floats; a cell that is not a number is an error naming its line."""
    import pandas as pd

    if s.dtype.kind in "fiu":
        return s.to_numpy(dtype=float)
    num = pd.to_numeric(s.str.replace(",", ".", regex=False) if lay.decimal == "," else s, errors="coerce")
    bad = num.isna() & s.notna() & ~s.astype(str).str.strip().isin(list({"nan", "NaN", "NA", "N/A", "-nan"}))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{path}: line {lay.start + i}, column {name!r}: {s.iloc[i]!r} is not a number (rows of numbers start "
            f"at line {lay.start}); correct the cell, or remove the row"
        )
    return num.to_numpy(dtype=float)


def _short_rows(cols: dict[str, np.ndarray], lay: Layout, path: Path) -> None:
    """A row with fewer cells than the header reads as NaN: name its line (the first such row)."""
    rows = [np.flatnonzero(np.isnan(v)) for v in cols.values() if v.size]
    first = min((int(r[0]) for r in rows if r.size), default=None)
    if first is None:
        return
    with path.open(encoding="utf-8", errors="replace") as f:
        k = -1
        for number, text in enumerate(f, start=1):
            if number < lay.start or not text.strip() or text.lstrip().startswith("#"):
                continue
            k += 1
            if k == first:
                n = len(csv_cells(text.rstrip("\r\n"), lay.delimiter))
                if n < lay.width:
                    raise DataError(
                        f"{path}: line {number} has {n} cell(s), the header has {lay.width}; give every row the same "
                        "number of cells (an empty cell or nan marks a missing value)"
                    )
                return
