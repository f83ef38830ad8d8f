"""Measured tables: one reader for the columns of a data file, shared by experiments (measured outputs) and
records (measured inputs).

:func:`read_measured` reads a file into a :class:`Table` (every column's name in order, the columns asked for,
the units the file states), whatever its format:

* text (``.csv``, ``.txt``, ``.dat``, ``.tsv``, ``.asc``): comma-, semicolon-, tab- or whitespace-delimited
  (found from the rows of numbers), decimal commas (``1,5;2,25``), metadata lines above the data (an
  instrument's header, as TAM Air exports and the conversions hydration-fitting tools write), a header row
  with quoted names and units in brackets (``"force [kN]"``) or parentheses (``Force (kN)``, when the
  parenthesis holds a unit), a units row under it (``[s] [kN]``), or no header at all (columns named
  ``"0"``, ``"1"``..., or the ``names`` given). pandas parses the rows (``read_csv``, the C engine);
* ``.npz`` (never unpickled), MATLAB ``.mat`` (scipy; a v7.3 file is read as the HDF5 it is), HDF5
  (``.h5``, ``.hdf5``; dataset paths ``"group/name"``, each dataset's ``units`` attribute; h5py, the extra
  ``hdf5``) and Parquet (``.parquet``; pyarrow, the extra ``parquet``).

A column is named by its name or by its position (an ``int``, 0 for the first). Every error of the
underlying libraries becomes a :class:`~mechcalib.errors.DataError` naming the file, the column where there
is one, the rule and the fix; the file's size and its longest line are checked before anything is parsed
(:func:`data_limits`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import DataError
from .base import DELIMITERS, Table, split_header
from .binary import read_hdf5, read_mat, read_npz, read_parquet
from .limits import MAX_ABS_VALUE, MAX_DATA_BYTES, MAX_LINE_CHARS, check_data_file, check_magnitude, data_limits
from .text import read_text

#: suffix -> format
SUFFIXES = dict.fromkeys((".csv", ".txt", ".dat", ".tsv", ".asc", ".prn"), "text")
SUFFIXES.update({".npz": "npz", ".mat": "mat", ".h5": "hdf5", ".hdf5": "hdf5", ".hdf": "hdf5"})
SUFFIXES.update({".parquet": "parquet", ".pq": "parquet"})
FORMATS = ("text", "csv", "npz", "mat", "hdf5", "parquet")
__all__ = [
    "DELIMITERS",
    "FORMATS",
    "MAX_ABS_VALUE",
    "MAX_DATA_BYTES",
    "MAX_LINE_CHARS",
    "SUFFIXES",
    "Table",
    "TableOptions",
    "check_data_file",
    "check_magnitude",
    "data_limits",
    "file_format",
    "read_measured",
    "split_header",
]


@dataclass(frozen=True)
class TableOptions:
    """How a file is read: ``format`` (``None``: from the suffix, :data:`SUFFIXES`), the text ``delimiter``
    (``None``: found), the ``decimal`` mark (``None``: found; ``","`` for decimal commas), and the column
    ``names`` (replace the header, or name a table without one)."""

    format: str | None = None
    delimiter: str | None = None
    decimal: str | None = None
    names: Sequence[str] | None = None

    @classmethod
    def of(cls, options: Mapping[str, Any], what: str) -> TableOptions:
        """Options from keywords (``format``, ``delimiter``, ``decimal``, ``names``); others are an error."""
        bad = sorted(set(options) - {"format", "delimiter", "decimal", "names"})
        if bad:
            raise DataError(f"{what}: unknown reading options {bad}; give format, delimiter, decimal or names")
        return cls(**{k: v for k, v in options.items() if v is not None})


def file_format(path: str | Path, format: str | None = None) -> str:
    """The format of ``path``: ``format`` if given (``"csv"`` is ``"text"``), else from its suffix."""
    fmt = format or SUFFIXES.get(Path(path).suffix.lower())
    if fmt not in FORMATS:
        raise DataError(
            f"{path}: unknown table format {format or Path(path).suffix!r}; use a file ending in one of "
            f"{sorted(SUFFIXES)} or give format = one of {list(FORMATS)}"
        )
    return "text" if fmt == "csv" else fmt


def read_measured(
    path: str | Path,
    options: TableOptions | None = None,
    *,
    wanted: Collection[str | int] | None = None,
    what: str = "data file",
) -> Table:
    """Read the table of ``path`` (see the module docstring). ``wanted``: the columns needed (names or
    positions; binary formats read no other); ``None`` reads all."""
    opts = options or TableOptions()
    path = check_data_file(path, what)
    fmt = file_format(path, opts.format)
    if opts.names is not None and wanted is not None:  # the names given replace the file's: ask by position
        given = [split_header(n)[0] for n in opts.names]
        wanted = {given.index(w) if w in given else w for w in wanted}
    if fmt == "text":
        table = read_text(path, opts.delimiter, opts.decimal, wanted)
    elif fmt == "npz":
        table = read_npz(path, wanted)
    elif fmt == "mat":
        table = read_mat(path, wanted)
    elif fmt == "hdf5":
        table = read_hdf5(path, wanted)
    else:
        table = read_parquet(path, wanted)
    if opts.names is not None:
        table = _renamed(table, list(opts.names))
    return table


def _renamed(table: Table, names: list[str]) -> Table:
    if len(names) != len(table.names):
        raise DataError(
            f"{table.source}: {len(names)} names given for {len(table.names)} columns ({list(table.names)}); give one "
            "name per column"
        )
    if len(set(names)) != len(names):
        raise DataError(f"{table.source}: the names given must be unique, got {names}")
    parsed = [split_header(n) for n in names]
    new = {old: new for old, (new, _) in zip(table.names, parsed, strict=True)}
    units = {n: u or table.units.get(old, "") for old, (n, u) in zip(table.names, parsed, strict=True)}
    return Table(table.source, tuple(new.values()), {new[k]: v for k, v in table.columns.items()}, units)
