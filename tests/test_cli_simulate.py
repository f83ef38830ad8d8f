from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import mechcalib as mc
from mechcalib.cli import app, write_response_csv
from mechcalib.models import get_model

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_simulate_duffing_writes_csv_that_reads_back_exactly(tmp_path):
    out = tmp_path / "sim" / "duffing.csv"
    r = runner.invoke(
        app, ["simulate", "duffing", "--set", "k=1.5", "--set", "c=0.3", "--condition", "t_end=3", "--out", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert "wrote" in r.output and "restoring_force.t" in r.output
    lines = out.read_text().splitlines()
    assert lines[0].startswith("# mechcalib simulate duffing: preset default; c=0.3, k=1.5, k3=0.5;")
    assert lines[1] == (
        "displacement.x [s],displacement.y [m],displacement.t,"
        "restoring_force.x [m],restoring_force.y [N],restoring_force.t"
    )
    assert len(lines) == 2 + 61  # t = 0 ... 3 s at 20 Hz
    m = get_model("duffing")
    (ref,) = m.simulate(np.array([[0.3, 1.5, 0.5]]), {"t_end": 3})
    mapping = {ch: (f"{ch}.x", f"{ch}.y", f"{ch}.t") for ch in m.channel_names}
    exp = mc.Experiment.from_csv(out, mapping)
    for ch in m.channel_names:
        a, b = exp[ch], ref[ch]
        np.testing.assert_array_equal(a.x, b.x)  # repr round trip: bit for bit
        np.testing.assert_array_equal(a.y, b.y)
        np.testing.assert_array_equal(a.t, b.t)
        assert (a.x_unit, a.y_unit) == (b.x_unit, b.y_unit)


def test_simulate_linear_preset_and_default_reading(tmp_path):
    out = tmp_path / "lin.csv"
    r = runner.invoke(app, ["simulate", "linear", "--preset", "default", "--condition", "n_points=5", "-o", str(out)])
    assert r.exit_code == 0, r.output
    exp = mc.Experiment.from_csv(out)  # one channel: the default reading (first column = abscissa) works too
    np.testing.assert_array_equal(exp["y.y"].x, [0.0, 1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(exp["y.y"].y, 0.2 * np.arange(5.0) + 5.0)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["simulate", "duffing", "--set", "kk=1"], "unknown parameter 'kk'; valid names are ['c', 'k', 'k3']"),
        (["simulate", "duffing", "--set", "k=abc"], "k: 'abc' is not a number"),
        (["simulate", "duffing", "--set", "k=nan"], "not a finite number"),
        (["simulate", "duffing", "--set", "k"], "expected NAME=VALUE"),
        (["simulate", "duffing", "--set", "k=1; rm -rf ~"], "is not a number"),
        (["simulate", "duffing", "--condition", "mass=2"], "unknown condition 'mass'"),
        (["simulate", "duff", "--set", "k=1"], "unknown model 'duff'; valid names are ['duffing'"),
        (["simulate", "duffing", "--preset", "paper"], "has no preset 'paper'"),
    ],
)
def test_bad_arguments_exit_with_status_2(tmp_path, args, needle):
    out = tmp_path / "x.csv"
    r = runner.invoke(app, [*args, "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert needle in " ".join(r.output.replace("│", " ").split())
    assert not out.exists()


def test_unequal_channel_lengths_go_to_separate_files(tmp_path):
    resp = {
        "a": mc.Curve([0.0, 1.0, 2.0], [1.0, 2.0, 3.0], x_unit="s", y_unit="N"),
        "b": mc.Curve([0.0, 0.5], [4.0, 5.0], t=[0.0, 1.0]),
    }
    files = write_response_csv(resp, tmp_path / "r.csv")
    assert [p.name for p, _ in files] == ["r.a.csv", "r.b.csv"]
    for (path, mapping), (ch, curve) in zip(files, resp.items(), strict=True):
        exp = mc.Experiment.from_csv(path, mapping)
        np.testing.assert_array_equal(exp[ch].y, curve.y)
    assert (tmp_path / "r.a.csv").read_text().splitlines()[0] == "a.x [s],a.y [N]"


def test_check_command(tmp_path):
    r = runner.invoke(app, ["check", str(EXAMPLES / "linear.toml")])
    assert r.exit_code == 0, r.output
    assert "model linear" in r.output and "budget {'max_evals': 300, 'target': 1.0}" in r.output
    bad = tmp_path / "bad.toml"
    bad.write_text((EXAMPLES / "linear.toml").read_text().replace('name = "de"', 'name = "dee"'))
    r = runner.invoke(app, ["check", str(bad)])
    assert r.exit_code == 2
    assert "`optimizer.name`: expected one of" in r.output and "got 'dee' (a string)" in r.output


def test_existing_commands_still_listed():
    r = runner.invoke(app, ["--help"])
    assert r.exit_code == 0
    for cmd in ("models", "optimizers", "demo", "simulate", "check"):
        assert cmd in r.output


def test_simulate_takes_a_user_model_by_target(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES / "plugin_model" / "src"))
    out = tmp_path / "decay.csv"
    r = runner.invoke(
        app, ["simulate", "mechcalib_decay.model:DampedOscillator", "--set", "zeta=0.2", "--out", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert out.read_text().splitlines()[0].startswith("# mechcalib simulate mechcalib_decay.model:DampedOscillator")
    bad = runner.invoke(
        app, ["simulate", "mechcalib_decay.model:NoSuchClass", "--out", str(out)], env={"COLUMNS": "300"}
    )
    text = " ".join(bad.output.split())
    assert bad.exit_code == 2 and "NoSuchClass" in text, bad.output
