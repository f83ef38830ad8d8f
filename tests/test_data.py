from __future__ import annotations

import json

import numpy as np
import pytest

from mechcalib import Curve, DataError, Experiment


def test_curve_validation_messages():
    with pytest.raises(DataError, match=r"finite.*1 NaN/inf value\(s\), first at index 1"):
        Curve([0, 1, 2], [0, np.nan, 2])
    with pytest.raises(DataError, match="same length, got 3 and 2"):
        Curve([0, 1, 2], [0, 1])
    with pytest.raises(DataError, match="at least 2 points"):
        Curve([0], [1])
    with pytest.raises(DataError, match=r"non-decreasing, got t\[1\]=2.0 > t\[2\]=1.0"):
        Curve([0, 1, 2], [0, 1, 2], t=[0, 2, 1])


def test_interpolation_needs_monotonic_abscissa():
    c = Curve([0, 2, 1], [0, 1, 2], x_name="u_h")
    assert not c.is_monotonic()
    with pytest.raises(DataError, match=r"non-decreasing abscissa, got x\[1\]=2.0 > x\[2\]=1.0"):
        c.resample(5)


def test_resample_and_shift():
    c = Curve([0.0, 1.0, 3.0], [0.0, 2.0, 6.0], t=[0.0, 1.0, 3.0])
    r = c.resample(4)
    assert np.allclose(r.x, [0, 1, 2, 3]) and np.allclose(r.y, [0, 2, 4, 6]) and np.allclose(r.t, [0, 1, 2, 3])
    r2 = c.resample(x_new=[0.5, 2.0])
    assert np.allclose(r2.y, [1.0, 4.0])
    s = c.shifted(-0.5)
    assert np.allclose(s.x, [-0.5, 0.5, 2.5]) and np.allclose(s.t, s.x)  # time moves with the time axis
    d = Curve([0.0, 1.0], [0.0, 1.0], t=[0.0, 10.0]).shifted(2.0)
    assert np.allclose(d.t, [0.0, 10.0])  # a load-step coordinate does not


def test_noise_model_eq36_is_seeded_and_scaled():
    y = np.sin(np.linspace(0, 20, 4001))
    c = Curve(np.arange(y.size), y)
    a, b = c.with_noise(0.1, seed=3), c.with_noise(0.1, seed=3)
    assert np.array_equal(a.y, b.y)
    e = a.y - y
    # e = 0.1 * std(y) * N(0,1): its sample std is 0.1*std(y) within sampling error
    assert np.std(e) == pytest.approx(0.1 * np.std(y), rel=0.05)
    assert abs(np.mean(e)) < 0.01
    with pytest.raises(DataError):
        c.with_noise(-1)


def test_experiment_csv_with_units_and_channels(tmp_path):
    p = tmp_path / "arch.csv"
    p.write_text("w_v [mm], w_h [mm], F [kN], step\n0, 0, 0, 0\n1, 0.1, 5, 1\n2, 0.05, 7, 2\n")
    e = Experiment.from_csv(p, {"vertical": ("w_v", "F"), "horizontal": ("w_h", "F", "step")}, conditions={"v": 10.0})
    assert e.name == "arch" and e.conditions == {"v": 10.0}
    assert e["vertical"].x_unit == "mm" and e["vertical"].y_unit == "kN"
    assert np.allclose(e["horizontal"].t, [0, 1, 2]) and not e["horizontal"].is_monotonic()
    # default: first column is x, the rest are channels
    e2 = Experiment.from_csv(p)
    assert e2.channel_names == ("w_h", "F", "step")


def test_experiment_csv_errors(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("t,a\n0,1\n1,x\n")
    with pytest.raises(DataError, match=r"line 3, column 'a': 'x' is not a number"):
        Experiment.from_csv(p)
    p.write_text("t,a\n0,1\n1\n")
    with pytest.raises(DataError, match=r"line 3 has 1 cell\(s\), the header has 2"):
        Experiment.from_csv(p)
    p.write_text("t,a\n0,1\n1,2\n")
    with pytest.raises(DataError, match=r"names column 'b', but the columns are \['t', 'a'\]"):
        Experiment.from_csv(p, {"ch": ("t", "b")})
    with pytest.raises(DataError, match="does not exist"):
        Experiment.from_csv(tmp_path / "none.csv")


def test_whitespace_table_like_grainlearning(tmp_path):
    p = tmp_path / "lin.dat"
    p.write_text("#\t\tu\t\tf\n0\t\t5.0\n1\t\t5.2\n2\t\t5.4\n")
    # a commented header is skipped, so give the header explicitly as first line
    p.write_text("u f\n0 5.0\n1 5.2\n2 5.4\n")
    e = Experiment.from_csv(p)
    assert np.allclose(e["f"].y, [5.0, 5.2, 5.4])


def test_json_roundtrip(tmp_path):
    e = Experiment({"a": Curve([0, 1], [2, 3], t=[0, 1], x_unit="s")}, conditions={"T": 25.0}, name="x", weight=2.0)
    e.to_json(tmp_path / "e.json")
    f = Experiment.from_json(tmp_path / "e.json")
    assert f.to_dict() == e.to_dict()
    (tmp_path / "bad.json").write_text(json.dumps({"name": "x"}))
    with pytest.raises(DataError, match="'channels'"):
        Experiment.from_json(tmp_path / "bad.json")


def test_experiment_validation():
    with pytest.raises(DataError, match="no channels"):
        Experiment({})
    with pytest.raises(DataError, match="weight"):
        Experiment({"a": Curve([0, 1], [0, 1])}, weight=-1)
    with pytest.raises(KeyError, match=r"no channel 'b'; it has \['a'\]"):
        Experiment({"a": Curve([0, 1], [0, 1])})["b"]
