"""What every format's reader gives: a :class:`Table` of named columns, and the header cells' names and units."""

from __future__ import annotations

import csv
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import DataError

#: delimiters a text table may use (``"whitespace"``: runs of blanks and tabs)
DELIMITERS = (",", ";", "\t", "whitespace")
_BRACKET = re.compile(r"^\s*(?P<name>.*?)\s*\[(?P<unit>[^\[\]]*)\]\s*$")
_PAREN = re.compile(r"^\s*(?P<name>.*?\S)\s*\((?P<unit>[^()]*)\)\s*$")
_WS_CELLS = re.compile(r'"([^"]*)"|(\S+)')


@dataclass(frozen=True)
class Table:
    """Columns of one file: ``names`` (all, in file order), ``columns`` (those read: name -> raw array),
    ``units`` (name -> unit the file states; ``""`` none) and ``source`` (the file, for messages)."""

    source: str
    names: tuple[str, ...]
    columns: dict[str, Any]
    units: dict[str, str] = field(default_factory=dict)

    def name_of(self, ref: str | int, role: str = "column") -> str:
        """The column ``ref`` names (a name, or a position from 0); a :class:`DataError` listing the columns."""
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool):
            if not 0 <= int(ref) < len(self.names):
                raise DataError(
                    f"{self.source}: no {role} column at position {int(ref)} (positions count from 0; the file has "
                    f"{len(self.names)} column(s): {list(self.names)})"
                )
            return self.names[int(ref)]
        if ref not in self.names:
            raise DataError(
                f"{self.source}: no {role} column {ref!r}; the file has {list(self.names)} (names are case-sensitive; "
                "a header's [unit] is not part of the name; a position is a number, 0 for the first column)"
            )
        return str(ref)

    def column(self, ref: str | int, role: str = "column") -> np.ndarray:
        """Column ``ref`` as a one-dimensional float array (one value per row); errors name file and column."""
        name = self.name_of(ref, role)
        return _numbers(self.columns[name], f"{self.source}, {role} {name!r}")

    def unit(self, ref: str | int) -> str:
        return self.units.get(self.name_of(ref), "")


def _numbers(raw: Any, label: str) -> np.ndarray:
    try:
        arr = np.asarray(raw, dtype=float).squeeze()
    except (TypeError, ValueError):
        kind = getattr(raw, "dtype", type(raw).__name__)
        raise DataError(f"{label}: holds {kind} data, not numbers; store the column as an array of numbers") from None
    if arr.ndim == 0:  # one sample: the records' and curves' checks say that two are needed
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise DataError(
            f"{label}: must be one-dimensional (one value per sample), got shape {arr.shape}; store each channel as "
            "its own array"
        )
    return arr


def split_header(cell: str) -> tuple[str, str]:
    """``(name, unit)`` of a header cell: ``force [kN]`` and ``Force (kN)`` (when pint reads the parenthesis
    as a unit) carry a unit, any other cell is a name without one."""
    cell = cell.strip()
    m = _BRACKET.match(cell)
    if m and m.group("name"):
        return m.group("name").strip(), m.group("unit").strip()
    m = _PAREN.match(cell)
    if m and m.group("unit").strip():
        from ..units import header_unit

        u = header_unit(m.group("unit").strip())
        if u is not None:
            return m.group("name").strip(), u
    return cell, ""


def select(names: Sequence[str], wanted: Collection[str | int] | None) -> list[str]:
    if wanted is None:
        return list(names)
    out = []
    for w in wanted:
        if isinstance(w, (int, np.integer)) and not isinstance(w, bool):
            if 0 <= int(w) < len(names):
                out.append(names[int(w)])
        elif w in names:
            out.append(str(w))
    return out


def csv_cells(line: str, delimiter: str) -> list[str]:
    """The cells of one text line (quotes removed) for ``delimiter`` (:data:`DELIMITERS`)."""
    if delimiter == "whitespace":
        return [a if a or b == "" else b for a, b in _WS_CELLS.findall(line)]
    return next(csv.reader([line], delimiter=delimiter, skipinitialspace=True), [])
