"""One reader for measured tables (issue 30, items 1 and 2): each format from a file made here, read as an
experiment and as a record, with units through pint; through a config as a user would where it matters."""

from __future__ import annotations

import numpy as np
import pytest

from mechcalib.config import load_config
from mechcalib.core.data import Experiment
from mechcalib.core.tables import TableOptions, read_measured
from mechcalib.errors import ConfigurationError, DataError
from mechcalib.records import excitation, read_record

T = np.round(np.arange(0.0, 1.0, 0.01), 2)
F_KN = np.round(np.sin(2 * np.pi * T), 6)
U_MM = np.round(np.cos(2 * np.pi * T), 6)


def _config(tmp_path, experiment: str, model: str = "sdof_boucwen", name: str = "run.toml"):
    text = f'[model]\nname = "{model}"\n{experiment}\n[budget]\nmax_evals = 2\n'
    (tmp_path / name).write_text(text)
    return tmp_path / name


# -- formats -------------------------------------------------------------------------------------------------
def test_csv_with_metadata_lines_read_as_experiment_and_record(tmp_path):
    p = tmp_path / "test3.csv"
    meta = "Test: shaking table run 3\nOperator: A. N. Other\nDate: 2026-05-01, 14:02\nChannels: 3\n\n"
    rows = "".join(f"{t:g},{f:g},{u:g}\n" for t, f, u in zip(T, F_KN, U_MM, strict=True))
    p.write_text(meta + "time [s],force [kN],disp [mm]\n" + rows)
    e = Experiment.from_file(p, {"displacement": ("time", "disp")})
    np.testing.assert_array_equal(e["displacement"].y, U_MM)
    assert (e["displacement"].x_unit, e["displacement"].y_unit) == ("s", "mm")
    rec = read_record(p, "force", time="time", unit="N")
    np.testing.assert_allclose(rec.values, F_KN * 1e3)
    np.testing.assert_array_equal(rec.t, T)


def test_whitespace_text_without_header_by_position_and_by_names(tmp_path):
    p = tmp_path / "run.dat"
    p.write_text("".join(f"  {t:g}\t {f:g}    {u:g}\n" for t, f, u in zip(T, F_KN, U_MM, strict=True)))
    table = read_measured(p)
    assert table.names == ("0", "1", "2")
    np.testing.assert_array_equal(table.column(2), U_MM)
    rec = read_record(p, 1, time=0, units={"1": "kN"}, unit="N")
    np.testing.assert_allclose(rec.values, F_KN * 1e3)
    rec = read_record(p, "F", time="t", names=["t", "F [kN]", "u [mm]"], unit="N")  # names give units too
    np.testing.assert_allclose(rec.values, F_KN * 1e3)
    e = Experiment.from_file(p, {"d": ("t", "u")}, names=["t", "F [kN]", "u [mm]"])
    assert e["d"].y_unit == "mm"
    np.testing.assert_array_equal(e["d"].y, U_MM)


def test_semicolons_and_decimal_commas(tmp_path):
    p = tmp_path / "eu.csv"
    p.write_text(
        "Zeit [s];Kraft [kN]\n" + "".join(f"{t:g};{f:g}\n".replace(".", ",") for t, f in zip(T, F_KN, strict=True))
    )
    table = read_measured(p)
    np.testing.assert_array_equal(table.column("Kraft"), F_KN)
    assert table.units == {"Zeit": "s", "Kraft": "kN"}
    assert read_measured(p, TableOptions(delimiter=";", decimal=",")).column(0).tolist() == T.tolist()


def test_mat_file_read_as_record_and_experiment(tmp_path):
    scipy_io = pytest.importorskip("scipy.io")
    p = tmp_path / "lab.mat"
    scipy_io.savemat(p, {"t": T, "force": F_KN, "disp": U_MM})
    rec = read_record(p, "force", units={"force": "kN"}, unit="N")
    np.testing.assert_allclose(rec.values, F_KN * 1e3)
    e = Experiment.from_file(p, {"displacement": ("t", "disp")}, units={"disp": "mm", "t": "s"})
    np.testing.assert_array_equal(e["displacement"].y, U_MM)
    assert e["displacement"].y_unit == "mm"


def _h5(path):
    h5py = pytest.importorskip("h5py", reason="h5py (the extra 'hdf5') is not installed")
    with h5py.File(path, "w") as f:
        g = f.create_group("run3")
        for name, data, unit in (("time", T, "s"), ("force", F_KN, "kN"), ("displacement", U_MM, "mm")):
            g[name] = data
            g[name].attrs["units"] = unit


def test_hdf5_file_read_as_experiment_and_as_record_through_a_config(tmp_path):
    _h5(tmp_path / "lab.h5")
    cfg = _config(
        tmp_path,
        '[[experiments]]\npath = "lab.h5"\n[experiments.channels.displacement]\nx = "run3/time"\n'
        'y = "run3/displacement"\n[experiments.conditions.force]\npath = "lab.h5"\ncolumn = "run3/force"\n'
        'time = "run3/time"\n',
    )
    (exp,) = load_config(cfg).build_experiments()
    c = exp["displacement"]
    np.testing.assert_allclose(c.y, U_MM * 1e-3)  # mm -> the model's m
    assert (c.x_unit, c.y_unit) == ("s", "m")
    force = excitation(exp.conditions["force"], unit="N")  # what the model receives: the record, in N
    np.testing.assert_allclose(force.values, F_KN * 1e3)
    np.testing.assert_array_equal(force.t, T)


def test_parquet_file(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow", reason="pyarrow (the extra 'parquet') is not installed")
    p = tmp_path / "lab.parquet"
    pd.DataFrame({"time [s]": T, "force [kN]": F_KN, "disp [mm]": U_MM}).to_parquet(p)
    e = Experiment.from_file(p, {"displacement": ("time", "disp")})
    assert e["displacement"].y_unit == "mm"
    np.testing.assert_array_equal(e["displacement"].y, U_MM)
    np.testing.assert_allclose(read_record(p, "force", unit="N").values, F_KN * 1e3)


TAM = """\
Instrument:        TAM Air 8-channel, channel 3
Sample:            "CEM I 42.5 R, w/c = 0.45"
Sample mass [g]:   6.012
Temperature [C]:   20.0
Exported by:       hydration fit, 2026-03-02

"Time [hr]"   "Temperature [°C]"   "Normalized heat flow [mW/g]"   "Normalized heat [J/g]"
"""


def _tam(path):
    t = np.arange(0.5, 48.0, 0.5)
    rate = 3.0 * np.exp(-((t - 10.0) ** 2) / 30.0) + 0.2  # mW/g
    heat = np.concatenate([[0.0], np.cumsum(0.5 * (rate[1:] + rate[:-1]) * np.diff(t) * 3.6)])  # J/g
    rows = "".join(f"{a:.2f}   {20.0:.2f}   {r:.6f}   {q:.6f}\n" for a, r, q in zip(t, rate, heat, strict=True))
    path.write_text(TAM + "nan   20.00   nan   nan\n" + rows)
    return t, rate, heat


def test_tam_air_whitespace_export_with_quoted_headers_read_with_no_conversion(tmp_path):
    t, rate, heat = _tam(tmp_path / "tam.txt")
    table = read_measured(tmp_path / "tam.txt")
    assert table.names == ("Time", "Temperature", "Normalized heat flow", "Normalized heat")
    assert table.units["Time"] == "hr" and table.units["Normalized heat flow"] == "mW/g"
    cfg = _config(
        tmp_path,
        '[[experiments]]\npath = "tam.txt"\nconditions = {T = 20.0}\n'
        '[experiments.channels]\nheat = ["Time", "Normalized heat"]\nheat_rate = ["Time", "Normalized heat flow"]\n',
        model="hydration",
    )
    with pytest.raises(ConfigurationError, match=r"tam\.txt.*must be finite"):  # the nan row, named
        load_config(cfg)
    text = (tmp_path / "tam.txt").read_text().replace("nan   20.00   nan   nan\n", "")
    (tmp_path / "tam.txt").write_text(text)
    (exp,) = load_config(cfg).build_experiments()
    np.testing.assert_allclose(exp["heat"].x, t)  # hr is the model's h
    np.testing.assert_allclose(exp["heat"].y, np.round(heat, 6), rtol=1e-12)
    np.testing.assert_allclose(exp["heat_rate"].y, np.round(rate, 6) * 3.6, rtol=1e-12)  # mW/g -> J/(g h)
    assert exp["heat_rate"].y_unit == "J/(g h)"


def test_load_tam_air_is_a_case_of_the_general_reader(tmp_path):
    from mechcalib.models.hydration.calorimetry import load_tam_air

    p = tmp_path / "tam6.txt"
    p.write_text(
        "TAM Air export\nSample: paste A\n\n"
        '"Time [s]" "Temperature [C]" "Heat flow [W]" "Heat [J]" "Normalized heat flow [W/g]" "Normalized heat [J/g]"\n'
        "3600 20,0 nan nan nan nan\n7200 20,0 4,0e-06 1,0 1,0e-06 0,5\n10800 21,0 8,0e-06 2,0 2,0e-06 1,5\n"
    )
    e = load_tam_air(p)
    np.testing.assert_allclose(e["heat"].x, [2.0, 3.0])
    np.testing.assert_allclose(e["heat"].y, [0.5, 1.5])
    np.testing.assert_allclose(e["heat_rate"].y, [3.6e-3, 7.2e-3])


# -- units ---------------------------------------------------------------------------------------------------
def test_time_in_hours_and_strain_in_microstrain_read_and_converted(tmp_path):
    p = tmp_path / "creep.csv"
    p.write_text("time [hr],strain [µε]\n0,0\n1,150\n2,240\n3,300\n")
    rec = read_record(p, "strain", unit="-")
    np.testing.assert_allclose(rec.t, [0.0, 3600.0, 7200.0, 10800.0])
    np.testing.assert_allclose(rec.values, [0.0, 150e-6, 240e-6, 300e-6])
    from mechcalib.core.units import curve_to_units

    c = curve_to_units(Experiment.from_file(p)["strain"], "day", "‰", what="creep")
    np.testing.assert_allclose(c.x, [0.0, 1 / 24, 2 / 24, 3 / 24])
    np.testing.assert_allclose(c.y, [0.0, 0.15, 0.24, 0.3])
    for spelling, factor in (("microstrain", 1e-6), ("με", 1e-6), ("%", 1e-2), ("‰", 1e-3)):
        p.write_text(f"time [min],strain [{spelling}]\n0,0\n1,1\n")
        rec = read_record(p, "strain", unit="1")
        assert rec.values[1] == pytest.approx(factor) and rec.t[1] == 60.0


@pytest.mark.parametrize(
    ("unit", "factor"),
    [("kip/in", 4448.2216152605 / 0.0254), ("N/mm^2", 1e6), ("kN", 1e3), ("lbf", 4.4482216152605)],
)
def test_compound_lab_units(unit, factor):
    from mechcalib.core.units import factor as f

    si = {"kip/in": "N/m", "N/mm^2": "Pa", "kN": "N", "lbf": "N"}[unit]
    assert f(unit, si) == pytest.approx(factor, rel=1e-12)


def test_g_and_gal_on_an_acceleration_channel_are_gravity_and_galileo(tmp_path):
    from mechcalib.core.units import factor

    assert factor("g", "m/s^2") == pytest.approx(9.80665) and factor("gal", "m/s^2") == pytest.approx(0.01)
    assert factor("mg", "m/s^2") == pytest.approx(9.80665e-3)
    assert factor("J/g", "J/kg") == pytest.approx(1e3)  # elsewhere g stays the gram
    (tmp_path / "acc.csv").write_text(
        "time [s],acc [g]\n" + "".join(f"{t:g},{f:g}\n" for t, f in zip(T, F_KN, strict=True))
    )
    cfg = _config(tmp_path, '[[experiments]]\npath = "acc.csv"\nchannels = {acceleration = ["time", "acc"]}\n')
    (exp,) = load_config(cfg).build_experiments()
    np.testing.assert_allclose(exp["acceleration"].y, F_KN * 9.80665)


def test_an_unknown_unit_names_the_line_to_add_and_that_line_works(tmp_path):
    (tmp_path / "m.csv").write_text("time [s],disp [milimeter]\n0,1.0\n0.01,2.0\n0.02,3.0\n")
    block = '[[experiments]]\npath = "m.csv"\n'
    channels = '[experiments.channels.displacement]\nx = "time"\ny = "disp"\n'
    cfg = _config(tmp_path, block + channels)
    with pytest.raises(ConfigurationError) as e:
        load_config(cfg)
    msg = str(e.value)
    assert "experiments[0].channels.displacement" in msg and "'milimeter' is not known" in msg
    line = 'units = {"disp" = "millimeter"}'
    assert line in msg and "under [[experiments]] number 1" in msg
    cfg = _config(tmp_path, block + line + "\n" + channels)  # the line, added where the message says
    (exp,) = load_config(cfg).build_experiments()
    np.testing.assert_allclose(exp["displacement"].y, [1e-3, 2e-3, 3e-3])


def test_an_unknown_unit_of_a_record_names_the_line_and_that_line_works(tmp_path):
    (tmp_path / "f.csv").write_text(
        "time [s],force [kilonewtn]\n" + "".join(f"{t:g},{f:g}\n" for t, f in zip(T, F_KN, strict=True))
    )
    with pytest.raises(DataError) as e:
        read_record(tmp_path / "f.csv", "force", unit="N")
    assert "'kilonewtn' is not known" in str(e.value) and 'units = {"force" = "kilonewton"}' in str(e.value)
    rec = read_record(tmp_path / "f.csv", "force", unit="N", units={"force": "kilonewton"})
    np.testing.assert_allclose(rec.values, F_KN * 1e3)


def test_an_experiment_takes_a_units_map_and_positions(tmp_path):
    (tmp_path / "raw.csv").write_text("a,b\n" + "".join(f"{t:g},{u:g}\n" for t, u in zip(T, U_MM, strict=True)))
    cfg = _config(
        tmp_path,
        '[[experiments]]\npath = "raw.csv"\nunits = {a = "ms", b = "in"}\n'
        "[experiments.channels.displacement]\nx = 0\ny = 1\n",
    )
    (exp,) = load_config(cfg).build_experiments()
    np.testing.assert_allclose(exp["displacement"].x, T * 1e-3)
    np.testing.assert_allclose(exp["displacement"].y, U_MM * 0.0254)
    bad = _config(
        tmp_path, '[[experiments]]\npath = "raw.csv"\nunits = {c = "ms"}\nchannels = {displacement = [0, 1]}\n'
    )
    with pytest.raises(ConfigurationError, match=r"experiments\[0\]\.units\.c.*a column name of raw\.csv"):
        load_config(bad)


def test_the_docs_semicolon_example_without_header(tmp_path):
    """docs/measured_data.md: decimal commas, no header, columns by position, units keyed by position names."""
    rows = "".join(f"{t:g};{u:g}\n".replace(".", ",") for t, u in zip(T, U_MM, strict=True))
    (tmp_path / "versuch.csv").write_text(rows)
    cfg = _config(
        tmp_path,
        '[[experiments]]\npath = "versuch.csv"\nunits = {"0" = "s", "1" = "mm"}\nchannels = {displacement = [0, 1]}\n',
    )
    (exp,) = load_config(cfg).build_experiments()
    np.testing.assert_allclose(exp["displacement"].x, T)
    np.testing.assert_allclose(exp["displacement"].y, U_MM * 1e-3)
