"""Loaders of isothermal calorimetry data for the hydration model (Mareš et al. (2016), section 9).

Every loader returns :class:`~mechcalib.core.data.Experiment` objects whose channels match
:class:`~mechcalib.models.hydration.Hydration`: ``heat`` [J/g of cement] and/or ``heat_rate`` [J/(g h)]
against time [h], with the isothermal temperature in ``conditions["T"]`` [°C].

* :func:`load_cost_tu1404`: the COST TU1404 table (two header rows ``<T>_grad`` and ``X,Y``; cumulative
  heat digitised from figures, so each curve is sorted by time; blank cells end the shorter columns).
* :func:`load_tam_air`: a TAM Air export (six columns by position: time in s, heat flow in W/g, heat in J/g;
  early rows hold ``nan`` and small negative baseline values), read by the general measured-table reader
  (``;``-separated with a ``#`` header line, or whitespace-delimited with metadata lines and quoted headers).
* :func:`load_gruyaert`: the Gruyaert workbook (.xlsx; three header rows: temperature, paste, ``Age``/``Q``;
  heat rate in J/(g h)); read with the standard library, so no spreadsheet package is needed. The heat
  channel is the trapezoidal integral of the rate from the first age on.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import numpy as np

from ...core.data import Curve, Experiment
from ...core.tables import read_measured
from ...errors import DataError

SECONDS_PER_HOUR = 3600.0


def _heat_curve(t: np.ndarray, q: np.ndarray) -> Curve:
    return Curve(t, q, x_name="time", y_name="heat", x_unit="h", y_unit="J/g")


def _rate_curve(t: np.ndarray, r: np.ndarray) -> Curve:
    return Curve(t, r, x_name="time", y_name="heat rate", x_unit="h", y_unit="J/(g h)")


def _number(cell: str) -> float:
    cell = cell.strip()
    if cell == "" or cell.lower() == "nan":
        return math.nan
    return float(cell)


# ------------------------------------------------------------------------------------------------------
# COST TU1404
# ------------------------------------------------------------------------------------------------------
def load_cost_tu1404(path: str | Path) -> dict[float, Experiment]:
    """The COST TU1404 heat table -> ``{temperature [°C]: Experiment}`` with one ``heat`` channel.

    Format: row 1 ``<T>_grad`` over each pair of columns, row 2 ``X,Y``; X = time [h], Y = cumulative heat
    [J/g]. Blank cells (shorter columns) are skipped; each curve is sorted by time.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"data file {str(path)!r} does not exist")
    lines = [ln.rstrip("\r\n") for ln in path.read_text().splitlines()]
    if len(lines) < 3:
        raise DataError(f"{path}: expected two header rows and data, got {len(lines)} line(s)")
    head = lines[0].split(",")
    sub = lines[1].split(",")
    cols: list[tuple[float, int]] = []
    for j, cell in enumerate(head):
        m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)_grad\s*", cell)
        if m:
            if j + 1 >= len(sub) or sub[j].strip().upper() != "X" or sub[j + 1].strip().upper() != "Y":
                raise DataError(
                    f"{path}: column {j + 1} ({cell!r}) must head an X,Y pair in row 2, got {sub[j : j + 2]}"
                )
            cols.append((float(m.group(1)), j))
        elif cell.strip():
            raise DataError(f"{path}: row 1, column {j + 1}: expected '<T>_grad' or an empty cell, got {cell!r}")
    if not cols:
        raise DataError(f"{path}: no '<T>_grad' columns in the first row")
    rows = [ln.split(",") for ln in lines[2:] if ln.strip()]
    out: dict[float, Experiment] = {}
    for T, j in cols:
        t, q = [], []
        for r, row in enumerate(rows, start=3):
            cx = row[j] if j < len(row) else ""
            cy = row[j + 1] if j + 1 < len(row) else ""
            try:
                x, y = _number(cx), _number(cy)
            except ValueError:
                raise DataError(f"{path}: row {r}, columns {j + 1}-{j + 2}: {cx!r}, {cy!r} are not numbers") from None
            if math.isnan(x) and math.isnan(y):
                continue
            if math.isnan(x) or math.isnan(y):
                raise DataError(f"{path}: row {r}: the {T:g} °C pair is half empty ({cx!r}, {cy!r})")
            t.append(x)
            q.append(y)
        order = np.argsort(t, kind="stable")
        out[T] = Experiment(
            {"heat": _heat_curve(np.asarray(t)[order], np.asarray(q)[order])},
            conditions={"T": T},
            name=f"cost_tu1404_{T:g}C",
        )
    return dict(sorted(out.items()))


# ------------------------------------------------------------------------------------------------------
# TAM Air
# ------------------------------------------------------------------------------------------------------
def load_tam_air(path: str | Path, *, name: str | None = None) -> Experiment:
    """A TAM Air export -> Experiment with ``heat`` [J/g] and ``heat_rate`` [J/(g h)] against time [h].

    Columns, by position: time [s]; temperature [°C]; heat flow [W]; heat [J]; normalised heat flow [W/g];
    normalised heat [J/g]. The file is read by :func:`~mechcalib.core.tables.read_measured` (the reader of
    every measured table), so any delimiter, metadata lines above the data and decimal commas are accepted.
    Rows whose value is ``nan`` are left out of that channel; negative baseline values are kept (they are
    measurement, not errors). ``conditions["T"]`` is the median temperature; the ``mix_name`` of a JSON file
    of the same stem names the experiment. Sample mass is not used: the normalised columns are per gram.
    """
    table = read_measured(path, what="TAM Air export")
    if len(table.names) != 6:
        raise DataError(
            f"{path}: {len(table.names)} columns, expected 6 (time; temperature; heat flow; heat; normalised heat "
            "flow; normalised heat)"
        )
    A = np.column_stack([table.column(j) for j in range(6)])
    t = A[:, 0] / SECONDS_PER_HOUR
    if np.any(np.diff(t[np.isfinite(t)]) < 0):
        raise DataError(f"{path}: the time column must be non-decreasing")
    T = float(np.nanmedian(A[:, 1]))
    ok_q = np.isfinite(t) & np.isfinite(A[:, 5])
    ok_r = np.isfinite(t) & np.isfinite(A[:, 4])
    if ok_q.sum() < 2:
        raise DataError(f"{path}: fewer than two rows hold a normalised heat")
    channels = {"heat": _heat_curve(t[ok_q], A[ok_q, 5])}
    if ok_r.sum() >= 2:
        channels["heat_rate"] = _rate_curve(t[ok_r], A[ok_r, 4] * SECONDS_PER_HOUR)
    meta = Path(path).with_suffix(".json")
    exp_name = name or Path(path).stem
    if meta.exists() and name is None:
        with contextlib.suppress(json.JSONDecodeError):
            exp_name = json.loads(meta.read_text()).get("mix_name", exp_name) or exp_name
    return Experiment(channels, conditions={"T": T}, name=str(exp_name))


# ------------------------------------------------------------------------------------------------------
# Gruyaert workbook
# ------------------------------------------------------------------------------------------------------
_NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}


def _col_index(ref: str) -> tuple[int, int]:
    """``"AB12"`` -> ``(row 12, column 28)`` (1-based)."""
    m = re.fullmatch(r"([A-Z]+)(\d+)", ref)
    if not m:
        raise DataError(f"bad cell reference {ref!r}")
    col = 0
    for ch in m.group(1):
        col = col * 26 + (ord(ch) - 64)
    return int(m.group(2)), col


def read_xlsx(path: str | Path, sheet: int = 1) -> dict[tuple[int, int], str | float]:
    """The cells of one worksheet of an .xlsx file: ``{(row, column): value}`` (1-based; strings or floats).

    Reads the OOXML parts with the standard library (shared strings, inline strings, numbers); formulas give
    their cached values; merged cells hold their value in the top-left cell only.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"data file {str(path)!r} does not exist")
    try:
        z = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise DataError(f"{path}: not an .xlsx workbook ({exc})") from exc
    with z:
        shared: list[str] = []
        if "xl/sharedStrings.xml" in z.namelist():
            root = ElementTree.fromstring(z.read("xl/sharedStrings.xml"))
            for si in root.findall("m:si", _NS):
                shared.append("".join(t.text or "" for t in si.iter(f"{{{_NS['m']}}}t")))
        part = f"xl/worksheets/sheet{int(sheet)}.xml"
        if part not in z.namelist():
            raise DataError(f"{path}: no worksheet {sheet}")
        root = ElementTree.fromstring(z.read(part))
    cells: dict[tuple[int, int], str | float] = {}
    for c in root.iter(f"{{{_NS['m']}}}c"):
        kind = c.get("t", "n")
        v = c.find("m:v", _NS)
        if kind == "inlineStr":
            cells[_col_index(c.get("r"))] = "".join(t.text or "" for t in c.iter(f"{{{_NS['m']}}}t"))
            continue
        if v is None or v.text is None:
            continue
        if kind == "s":
            cells[_col_index(c.get("r"))] = shared[int(v.text)]
        elif kind in ("str", "e"):
            cells[_col_index(c.get("r"))] = v.text
        elif kind == "b":
            cells[_col_index(c.get("r"))] = float(v.text)
        else:
            cells[_col_index(c.get("r"))] = float(v.text)
    return cells


def load_gruyaert(path: str | Path, *, paste: str = "CP0", temperature: float = 20.0) -> Experiment:
    """One paste at one temperature from the Gruyaert workbook -> Experiment with ``heat_rate`` [J/(g h)]
    and ``heat`` [J/g] (the rate integrated by the trapezoidal rule from the first age, where it is 0).

    Layout: row 1 ``<T>C`` over the first column of each temperature block, row 2 the paste name (CP0,
    CP30, CP50, CP85) over its ``Age``/``Q`` pair, row 3 ``Age``, ``Q``; data from row 4, blank cells
    closing the shorter columns.
    """
    cells = read_xlsx(path)
    temps = {c: str(v) for (r, c), v in cells.items() if r == 1 and isinstance(v, str)}
    if not temps:
        raise DataError(f"{path}: row 1 holds no temperature labels such as '20C'")
    blocks = sorted(temps)
    col = None
    available = []
    for (r, c), v in sorted(cells.items()):
        if r != 2 or not isinstance(v, str):
            continue
        start = max(b for b in blocks if b <= c) if any(b <= c for b in blocks) else None
        if start is None:
            continue
        m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*C\s*", temps[start])
        if not m:
            raise DataError(f"{path}: row 1 label {temps[start]!r} is not a temperature such as '20C'")
        T = float(m.group(1))
        available.append((v.strip(), T))
        if v.strip() == paste and T == float(temperature):
            col = c
    if col is None:
        raise DataError(f"{path}: no paste {paste!r} at {temperature:g} °C; available: {sorted(set(available))}")
    if str(cells.get((3, col), "")).strip().lower() != "age" or str(cells.get((3, col + 1), "")).strip().lower() != "q":
        raise DataError(f"{path}: row 3 must read 'Age', 'Q' above the {paste} {temperature:g} °C columns")
    last = max(r for (r, _c) in cells)
    t, q = [], []
    for r in range(4, last + 1):
        a, b = cells.get((r, col)), cells.get((r, col + 1))
        if a is None and b is None:
            continue
        if not isinstance(a, float) or not isinstance(b, float):
            raise DataError(
                f"{path}: row {r}: expected two numbers for {paste} at {temperature:g} °C, got {a!r}, {b!r}"
            )
        t.append(a)
        q.append(b)
    t_arr, q_arr = np.asarray(t), np.asarray(q)
    order = np.argsort(t_arr, kind="stable")
    t_arr, q_arr = t_arr[order], q_arr[order]
    heat = np.concatenate([[0.0], np.cumsum(0.5 * (q_arr[1:] + q_arr[:-1]) * np.diff(t_arr))])
    return Experiment(
        {"heat_rate": _rate_curve(t_arr, q_arr), "heat": _heat_curve(t_arr, heat)},
        conditions={"T": float(temperature)},
        name=f"gruyaert_{paste}_{temperature:g}C",
    )
