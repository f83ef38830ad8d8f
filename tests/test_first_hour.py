"""The first hour of a new user (issue 30, item 4): `simulate` with measured conditions from files, the demo's
run folder, no stale design line, the output folder recorded as given, the inverse help text, and the step
check at the points a run visits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import mechcalib as mc
from mechcalib.cli import app
from mechcalib.models import get_model

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DAMPER = EXAMPLES / "friction_damper" / "data" / "sine_1Hz_30lb_1in.csv"


def _ok(*args: str, **kw):
    r = runner.invoke(app, [str(a) for a in args], **kw)
    assert r.exit_code == 0, r.output
    return r


def _force(path: Path) -> np.ndarray:
    return mc.Experiment.from_csv(path, {"force": ("force.x", "force.y")})["force"].y


# -- simulate takes conditions from files, as a configuration does -----------------------------------------
def test_simulate_reads_a_measured_record_from_a_conditions_file_and_from_the_command_line(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    shutil.copy(DAMPER, tmp_path / "data" / "rec.csv")
    (tmp_path / "conds.toml").write_text(
        '# paths read against this file\'s folder, as in a configuration\ndisplacement = "data/rec.csv"\n'
        'column = "displacement"\ntime_column = "time"\n'
    )
    m = get_model("hysteresis_protocol")
    cond = {"displacement": str(tmp_path / "data" / "rec.csv"), "column": "displacement", "time_column": "time"}
    (ref,) = m.simulate(m.full_vector()[None, :], cond)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the file's paths do not depend on where the command starts
    _ok("simulate", "hysteresis_protocol", "--conditions", tmp_path / "conds.toml", "--out", "a.csv")
    np.testing.assert_array_equal(_force(elsewhere / "a.force.csv"), ref["force"].y)
    monkeypatch.chdir(tmp_path)  # --condition paths read against the current folder
    args = ["--condition", "displacement=data/rec.csv", "--condition", "column=displacement"]
    _ok("simulate", "hysteresis_protocol", *args, "--condition", "time_column=time", "--out", "b.csv")
    np.testing.assert_array_equal(_force(tmp_path / "b.force.csv"), ref["force"].y)


def test_simulate_refuses_a_missing_record_and_an_unknown_condition_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["simulate", "hysteresis_protocol", "--condition", "displacement=gone.csv", "-o", "x.csv"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert str(tmp_path / "gone.csv") in r.output and "does not exist" in r.output
    (tmp_path / "c.toml").write_text("bogus = 1\n")
    r = runner.invoke(app, ["simulate", "hysteresis_protocol", "--conditions", "c.toml", "-o", "x.csv"])
    assert r.exit_code == 2 and "conditions.bogus" in r.output and "unknown condition 'bogus'" in r.output
    assert not list(tmp_path.glob("x*.csv"))


# -- the demo writes a run folder that the next commands open ------------------------------------------------
def test_demo_writes_a_run_folder_that_show_report_and_uncertainty_open(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = _ok("demo", "--evals", "40", "--quiet")
    folder = Path("runs") / "demo"  # the default
    for cmd in ("show", "report", "uncertainty"):
        assert f"mechcalib {cmd} {folder}" in r.stdout  # the next commands, told
    res = json.loads((folder / "result.json").read_text())
    assert res["model"] == "duffing" and res["n_evaluations"] == 40 and res["best"]["k"] > 0
    shown = _ok("show", folder, "--json")
    assert json.loads(shown.stdout)["best"] == res["best"]
    written = _ok("report", folder).stdout
    assert "convergence.png" in written and (folder / "fit_synthetic_duffing.png").is_file()
    _ok("uncertainty", folder, "--force")
    assert (folder / "uncertainty.json").is_file()
    again = _ok("demo", "--evals", "20", "--quiet")  # the default folder holds a run: the next free one
    assert "mechcalib show runs/demo-2" in again.stdout and (tmp_path / "runs/demo-2/result.json").is_file()
    taken = runner.invoke(app, ["demo", "--evals", "20", "--out", str(folder)])  # given: refused, not replaced
    assert taken.exit_code != 0 and "already holds run" in taken.output
