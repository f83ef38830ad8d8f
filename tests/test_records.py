"""Measured records (mechcalib.records): reading every format with units, interpolation against exact signals,
pre-processing on synthetic records with known offsets, drift and delay, and the errors bad records get."""

from __future__ import annotations

import numpy as np
import pytest

from mechcalib.core import units
from mechcalib.errors import ConfigurationError, DataError
from mechcalib.records import (
    Record,
    average_periods,
    bandwidth,
    decimate,
    default_interpolation,
    delay,
    excitation,
    interpolate,
    read_record,
    remove_drift,
    remove_offset,
    time_origin,
    trim,
)
from mechcalib.records.preprocess import apply

P = 4.0
FS = 100.0
FREQS = np.arange(1, 31) / P  # 0.25 ... 7.5 Hz: well below the 50 Hz Nyquist frequency
PHASES = np.random.default_rng(0).uniform(0, 2 * np.pi, FREQS.size)


def multisine(t: np.ndarray, derivative: bool = False) -> np.ndarray:
    w = 2 * np.pi * FREQS[:, None]
    if derivative:
        return (-w * np.sin(w * t + PHASES[:, None])).sum(0)
    return np.cos(w * t + PHASES[:, None]).sum(0)


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


# -- units ----------------------------------------------------------------------------------------------------
def test_unit_factors_and_spellings():
    assert units.factor("mm", "m") == 1e-3
    assert units.factor("in", "m") == pytest.approx(0.0254)
    assert units.factor("g", "m/s^2") == pytest.approx(9.80665)
    assert units.factor("m s^-2", "m/s2") == 1.0 and units.factor("m/s²", "m/s**2") == 1.0
    assert units.factor("kip/in", "N/m") == pytest.approx(4448.2216152605 / 0.0254)
    assert units.factor("", "N") == 1.0 and units.factor("counts", "counts") == 1.0
    assert units.suffix_unit("displacement_in") == "in" and units.suffix_unit("force_kN") == "kN"
    assert units.suffix_unit("force") == ""
    with pytest.raises(DataError, match="different quantities"):
        units.factor("mm", "N")
    with pytest.raises(DataError, match=r"'bananas' is not known.*add the line units = \{\"F\" = \"N\"\}"):
        units.factor("bananas", "N", what="rec.csv, column 'F'", column="F")


# -- reading --------------------------------------------------------------------------------------------------
def _signal():
    t = np.arange(0, 2, 0.01)
    return t, np.sin(2 * np.pi * t)


def test_read_csv_with_header_units_and_units_map(tmp_path):
    t, x = _signal()
    p = tmp_path / "rec.csv"
    np.savetxt(p, np.c_[t * 1e3, x], delimiter=",", header="time [ms],force [kN]", comments="")
    rec = read_record(p, "force", time="time", unit="N")
    np.testing.assert_allclose(rec.t, t, rtol=1e-12)
    np.testing.assert_allclose(rec.values, 1e3 * x)
    assert rec.unit == "N" and rec.column == "force" and rec.source == str(p)
    q = tmp_path / "suffix.csv"
    np.savetxt(q, np.c_[t, x], delimiter=",", header="t,displacement_in", comments="")
    by_suffix = read_record(q, "displacement_in", units="suffix", unit="m")
    by_map = read_record(q, "displacement_in", units={"displacement_in": "in"}, unit="mm")
    np.testing.assert_allclose(by_suffix.values, 0.0254 * x)
    np.testing.assert_allclose(by_map.values, 25.4 * x)


def test_read_npz_mat_hdf5(tmp_path):
    t, x = _signal()
    np.savez(tmp_path / "r.npz", time=t, acc=x)
    rec = read_record(tmp_path / "r.npz", "acc", time="time", units={"acc": "g"}, unit="m/s^2")
    np.testing.assert_allclose(rec.values, 9.80665 * x)
    import scipy.io

    scipy.io.savemat(tmp_path / "r.mat", {"F": x[:, None]})  # a column vector, as MATLAB writes one
    rec = read_record(tmp_path / "r.mat", "F", fs=100.0)
    np.testing.assert_allclose(rec.t, np.arange(t.size) / 100.0)
    np.testing.assert_array_equal(rec.values, x)
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "r.h5", "w") as f:
        f["test1/time"] = t
        f["test1/force"] = x
        f["test1/force"].attrs["units"] = "kN"
    rec = read_record(tmp_path / "r.h5", "test1/force", time="test1/time", unit="N")
    np.testing.assert_allclose(rec.values, 1e3 * x)


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ("t,F\n0,1\n0.01,nan\n0.02,3\n", r"column 'F'.*values must be finite.*index 1.*fill them"),
        ("t,F\n0,1\n0.02,2\n0.01,3\n", r"time must increase strictly.*t\[1\]=0.02.*sort the rows"),
        ("t,F\n0,1\n0.01,2\n0.02,3\n0.5,4\n0.51,5\n", r"a gap of 0.48 s after t=0.02.*fill them"),
    ],
)
def test_bad_records_name_file_column_rule_fix(tmp_path, rows, match):
    p = tmp_path / "bad.csv"
    p.write_text(rows)
    with pytest.raises(DataError, match=match) as ei:
        read_record(p, "F")
    assert str(p) in str(ei.value)


def test_missing_column_lengths_and_units(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("time [s],force [lbf]\n0,1\n0.01,2\n0.02,3\n")
    with pytest.raises(DataError, match=r"no record column 'Force'.*\['time', 'force'\]"):
        read_record(p, "Force")
    with pytest.raises(DataError, match="cannot convert 'lbf' \\(force\\) to 'm' \\(length\\)"):
        read_record(p, "force", unit="m")
    np.savez(tmp_path / "r.npz", t=np.arange(5.0), F=np.arange(4.0))
    with pytest.raises(DataError, match="time has 5 samples and the values 4.*equal lengths"):
        read_record(tmp_path / "r.npz", "F")
    with pytest.raises(DataError, match="no time column found.*`fs`"):
        np.savez(tmp_path / "s.npz", F=np.arange(4.0))
        read_record(tmp_path / "s.npz", "F")


def test_excitation_forms_and_default_interpolation(tmp_path):
    t = np.arange(0, 8, 1 / FS)
    x = multisine(t)
    p = tmp_path / "f.csv"
    np.savetxt(p, np.c_[t, x / 1e3], delimiter=",", header="t [s],F [kN]", comments="")
    exc = excitation({"path": str(p), "column": "F", "period": P}, unit="N")
    assert exc.interpolation == "bandlimited" and default_interpolation(P) == "bandlimited"
    np.testing.assert_allclose(exc.values, x, rtol=1e-9, atol=1e-9)
    legacy = excitation(str(p), unit="N")  # first column time, second the force
    assert legacy.interpolation == "cubic" == default_interpolation(None)
    arrays = excitation({"t": t, "force": x, "interpolation": "linear"})
    assert arrays.interpolation == "linear"
    with pytest.raises(ConfigurationError, match="condition 'force'.*'bandlimited' needs the record's period"):
        excitation({"t": t, "force": x, "interpolation": "bandlimited"})
    with pytest.raises(ConfigurationError, match="whole number"):
        excitation({"t": t, "force": x, "period": 4.005})
    with pytest.raises(ConfigurationError, match="unknown keys \\['colum'\\]"):
        excitation({"path": str(p), "colum": "F"})


# -- interpolation --------------------------------------------------------------------------------------------
def test_each_interpolation_against_the_exact_multisine():
    t = np.arange(0, 2 * P, 1 / FS)
    x = multisine(t)
    fine = np.arange(0, 2 * P, 1 / (8 * FS))
    off = np.sort(np.random.default_rng(1).uniform(0, 2 * P, 500))  # off any grid
    exact = multisine(fine)
    err = {
        m: rms(interpolate(t, x, fine[fine <= t[-1]], m, P) - exact[fine <= t[-1]]) / rms(exact)
        for m in ("linear", "cubic")
    }
    err["bandlimited"] = rms(interpolate(t, x, fine, "bandlimited", P) - exact) / rms(exact)
    assert err["bandlimited"] < 1e-12 < err["cubic"] < 1e-3 < err["linear"] < 0.1, err
    assert rms(interpolate(t, x, off, "bandlimited", P) - multisine(off)) / rms(exact) < 1e-8
    slope = interpolate(t, x, fine, "bandlimited", P, derivative=True)
    assert rms(slope - multisine(fine, derivative=True)) / rms(multisine(fine, derivative=True)) < 1e-11
    assert bandwidth(t, x) == pytest.approx(FREQS[-1], abs=0.5)


# -- pre-processing -------------------------------------------------------------------------------------------
def test_offset_drift_delay_trim():
    t = np.arange(0, 10, 0.01)
    clean = np.sin(2 * np.pi * 1.3 * t)
    clean = np.where(t < 2, 0.0, clean)  # a quiet lead-in, as a shaking-table record has
    rec = Record(t, clean + 0.7 + 0.05 * t, "N", "", "F")
    no_drift = remove_drift(rec, order=1, end=1.99)  # the drift fitted where the record is quiet
    assert np.max(np.abs(no_drift.values - clean)) < 1e-12
    quiet = Record(t, np.where(t < 2, 0.0, clean) + 0.3, "N")
    assert np.allclose(remove_offset(quiet, end=1.99).values[:200], 0.0)
    late = delay(Record(t, clean), 0.25)
    np.testing.assert_allclose(late.t, t + 0.25)
    back = time_origin(late, 0.25)
    np.testing.assert_allclose(back.t, t, atol=1e-12)
    cut = trim(rec, start=1.0, end=2.0)
    assert cut.t[0] == pytest.approx(1.0) and cut.t[-1] == pytest.approx(2.0) and cut.t.size == 101
    # the same steps from a configuration's list
    steps = [{"op": "remove_drift", "order": 1}, {"op": "trim", "start": 1.0, "end": 2.0}]
    np.testing.assert_allclose(apply(rec, steps).values, remove_drift(rec).values[100:201])
    with pytest.raises(DataError, match="unknown op 'smooth'"):
        apply(rec, [{"op": "smooth"}])


def test_average_periods_and_decimate():
    t = np.arange(0, 5 * P, 1 / FS)
    x = multisine(t)
    noisy = x + 0.1 * np.random.default_rng(2).standard_normal(t.size)
    avg = average_periods(Record(t, noisy, period=P), skip=1)  # 4 periods averaged: noise / 2
    assert avg.period == P and avg.t.size == 400 and avg.t[0] == 0.0
    assert rms(avg.values - x[:400]) == pytest.approx(0.05, rel=0.15)
    # a 40 Hz tone above the new Nyquist frequency (25 Hz) is removed, the multisine (< 7.5 Hz) kept
    dec = decimate(Record(t, x + np.sin(2 * np.pi * 40 * t)), 2)
    assert dec.t.size == t.size // 2 and dec.fs == pytest.approx(50.0)
    inner = slice(50, -50)  # away from the filter's edge transients
    assert rms(dec.values[inner] - x[::2][inner]) / rms(x) < 5e-3  # the FIR passband ripple; the tone: 0.18
