"""Loaders of the three calorimetry formats (mechcalib.models.hydration.calorimetry)."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from conftest import shared_path
from mechcalib.errors import DataError
from mechcalib.models.hydration.calorimetry import (
    load_cost_tu1404,
    load_gruyaert,
    load_tam_air,
    read_xlsx,
)


# -- COST TU1404 --------------------------------------------------------------------------------------
def test_cost_small_file_headers_blanks_and_sorting(tmp_path):
    p = tmp_path / "cost.csv"
    p.write_text("20_grad,,40_grad,\nX,Y,X,Y\n2.0,10.0,1.0,5.0\n1.0,4.0,3.0,50.0\n,,4.0,60.0\n")
    d = load_cost_tu1404(p)
    assert list(d) == [20.0, 40.0]
    c20 = d[20.0]["heat"]
    np.testing.assert_array_equal(c20.x, [1.0, 2.0])  # sorted by time
    np.testing.assert_array_equal(c20.y, [4.0, 10.0])
    assert len(d[40.0]["heat"]) == 3 and d[40.0].conditions == {"T": 40.0}
    assert c20.x_unit == "h" and c20.y_unit == "J/g"


def test_cost_rejects_bad_header_and_half_rows(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("20_grad,,x\nX,Y,\n1,2,\n")
    with pytest.raises(DataError, match="expected '<T>_grad'"):
        load_cost_tu1404(p)
    p.write_text("20_grad,\nX,Y\n1.0,\n")
    with pytest.raises(DataError, match="half empty"):
        load_cost_tu1404(p)


def test_cost_reference_file():
    d = load_cost_tu1404(shared_path("data", "calorimetry", "cost_tu1404", "cost_action_hydration_data.csv"))
    s = load_cost_tu1404(shared_path("data", "calorimetry", "cost_tu1404", "cost_action_hydration_data_sorted.csv"))
    assert sorted(d) == [20.0, 30.0, 40.0, 50.0, 60.0]
    for T in d:
        c = d[T]["heat"]
        assert 45 <= len(c) <= 95 and np.all(np.diff(c.x) >= 0)
        np.testing.assert_allclose(c.y, s[T]["heat"].y, rtol=1e-12)  # unsorted file sorted == sorted file
    assert d[20.0]["heat"].x[-1] == pytest.approx(100.0, abs=0.5)
    assert d[60.0]["heat"].x[-1] == pytest.approx(19.5, abs=0.1)


# -- TAM Air ------------------------------------------------------------------------------------------
_TAM_HEAD = "# Time;Temperature [Temperature];Heat flow [Signal  Ch 1];Heat [Signal  Ch 1];Normalized heat flow;Normalized heat\n"


def test_tam_small_file_nan_rows_and_units(tmp_path):
    p = tmp_path / "tam.csv"
    p.write_text(
        _TAM_HEAD
        + "36.0;2.0e+01;nan;nan;nan;nan\n"
        + "3600.0;2.0e+01;-4.0e-07;nan;-1.0e-07;nan\n"
        + "7200.0;2.0e+01;4.0e-06;1.0;1.0e-06;0.5\n"
        + "10800.0;2.1e+01;8.0e-06;2.0;2.0e-06;1.5\n"
    )
    e = load_tam_air(p)
    np.testing.assert_allclose(e["heat"].x, [2.0, 3.0])  # hours
    np.testing.assert_allclose(e["heat"].y, [0.5, 1.5])  # J/g
    np.testing.assert_allclose(e["heat_rate"].x, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(e["heat_rate"].y, [-3.6e-4, 3.6e-3, 7.2e-3])  # W/g -> J/(g h), baseline kept
    assert e.conditions["T"] == pytest.approx(20.0)
    p.write_text(_TAM_HEAD + "1;2;3\n")
    with pytest.raises(DataError, match="expected 6"):
        load_tam_air(p)


def test_tam_reference_file():
    e = load_tam_air(shared_path("data", "calorimetry", "kit_tam_air", "BAM_Sample_Ch1_calo.csv"))
    h = e["heat"]
    assert e.conditions["T"] == pytest.approx(20.0, abs=0.01)
    assert h.x[0] == pytest.approx(0.65, abs=0.01) and h.x[-1] == pytest.approx(221.0, abs=0.5)
    assert h.y[-1] == pytest.approx(225.0, abs=1.0)
    assert np.all(np.isfinite(h.y)) and e["heat_rate"].y.min() < 0  # negative baseline values are kept


# -- Gruyaert workbook --------------------------------------------------------------------------------
def _xlsx(path, rows):
    """A minimal workbook: ``rows`` is ``{(row, col letter): value}``; strings go to shared strings."""
    strings = sorted({v for v in rows.values() if isinstance(v, str)})
    cells = {}
    for (r, c), v in rows.items():
        ref = f"{c}{r}"
        xml = (
            f'<c r="{ref}" t="s"><v>{strings.index(v)}</v></c>'
            if isinstance(v, str)
            else f'<c r="{ref}"><v>{v}</v></c>'
        )
        cells.setdefault(r, []).append((c, xml))
    body = "".join(f'<row r="{r}">' + "".join(x for _, x in sorted(cs)) + "</row>" for r, cs in sorted(cells.items()))
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("xl/sharedStrings.xml", f"<sst {ns}>" + "".join(f"<si><t>{s}</t></si>" for s in strings) + "</sst>")
        z.writestr("xl/worksheets/sheet1.xml", f"<worksheet {ns}><sheetData>{body}</sheetData></worksheet>")


def test_gruyaert_small_workbook(tmp_path):
    p = tmp_path / "g.xlsx"
    _xlsx(
        p,
        {
            (1, "A"): "10C",
            (1, "E"): "20C",
            (2, "A"): "CP0",
            (2, "C"): "CP30",
            (2, "E"): "CP0",
            (3, "A"): "Age",
            (3, "B"): "Q",
            (3, "C"): "Age",
            (3, "D"): "Q",
            (3, "E"): "Age",
            (3, "F"): "Q",
            (4, "A"): 1.0,
            (4, "B"): 2.0,
            (4, "E"): 1.0,
            (4, "F"): 2.0,
            (5, "A"): 2.0,
            (5, "B"): 2.0,
            (5, "E"): 3.0,
            (5, "F"): 4.0,
            (6, "E"): 4.0,
            (6, "F"): 0.0,
        },
    )
    cells = read_xlsx(p)
    assert cells[(1, 5)] == "20C" and cells[(4, 6)] == 2.0
    e = load_gruyaert(p, paste="CP0", temperature=20)
    np.testing.assert_array_equal(e["heat_rate"].x, [1.0, 3.0, 4.0])
    np.testing.assert_allclose(e["heat"].y, [0.0, 6.0, 8.0])  # trapezoids: (2+4)/2*2, (4+0)/2*1
    assert e.conditions == {"T": 20.0}
    assert len(load_gruyaert(p, paste="CP0", temperature=10)["heat"]) == 2
    with pytest.raises(DataError, match="no paste 'CP50'"):
        load_gruyaert(p, paste="CP50", temperature=20)


def test_gruyaert_reference_workbook():
    path = shared_path("data", "calorimetry", "gruyaert", "gruyaert_hydration_data_processed.xlsx")
    e = load_gruyaert(path, paste="CP0", temperature=20)
    assert e["heat"].x[-1] == pytest.approx(150.0)
    assert e["heat"].y[-1] == pytest.approx(340.0, abs=5.0)  # README: about 340 J/g at 150 h
    for paste in ("CP0", "CP30", "CP50", "CP85"):
        for T in (10, 20, 35):
            assert len(load_gruyaert(path, paste=paste, temperature=T)["heat_rate"]) > 10
