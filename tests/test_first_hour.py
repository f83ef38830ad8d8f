"""The first hour of a new user (issue 30, item 4): `simulate` with measured conditions from files, the demo's
run folder, no stale design line, the output folder recorded as given, the inverse help text, and the step
check at the points a run visits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
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
    # within its 40 (auto ends early when the next batch does not fit)
    assert res["model"] == "duffing" and 30 <= res["n_evaluations"] <= 40 and res["best"]["k"] > 0
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


# -- the step check judges the points the run visits ----------------------------------------------------------
TOY = '''
import warnings

import numpy as np

from mechcalib.models.analytic import Linear


class StepToy(Linear):
    """y = a x + b whose integration "converges" only for a <= 0.5; its preset a = 0.9 lies outside the box."""

    name = "step_toy"

    def __init__(self):
        super().__init__()
        self.presets = {"default": {"a": 0.9, "b": 5.0}}

    def check_steps(self, theta, conditions=None):
        a = float(np.atleast_2d(theta)[0, 0])
        if a > 0.5:
            msg = f"step_toy: at a={a:.4g} the steps are too coarse; set the model option substeps = 36"
            warnings.warn(msg)
            return msg
        return f"step_toy: at a={a:.4g}: converged"
'''


def _toy_config(tmp_path, monkeypatch, upper: float) -> Path:
    (tmp_path / "steptoy_mod.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = tmp_path / f"toy{upper:g}.toml"
    cfg.write_text(
        f"""seed = 0
[model]
name = "steptoy_mod:StepToy"
preset = "default"
[parameters.a]
bounds = [0.1, {upper}]
[[experiments]]
kind = "synthetic"
name = "synthetic"
[objective]
name = "f1"
[optimizer]
name = "auto"
[budget]
max_evals = 40
[output]
plots = false
"""
    )
    return cfg


def test_check_judges_the_steps_at_the_first_design_points_not_at_a_preset_outside_the_box(tmp_path, monkeypatch):
    r = _ok("check", _toy_config(tmp_path, monkeypatch, 0.4))
    assert "substeps = 36" not in r.stdout  # the preset a = 0.9 is never simulated by this run
    assert "converged" in r.stdout and "first design points" in r.stdout
    at = [float(v) for v in __import__("re").findall(r"this one at a=([0-9.]+)", r.stdout)]
    assert at and all(0.1 <= a <= 0.4 for a in at)


def test_a_run_warns_when_the_steps_at_its_best_point_are_not_converged(tmp_path, monkeypatch, caplog):
    import logging

    from mechcalib.runs import run_config

    with caplog.at_level(logging.WARNING, logger="mechcalib"):
        rec = run_config(_toy_config(tmp_path, monkeypatch, 1.0), tmp_path / "run")
    assert rec.summary["best"]["a"] > 0.5
    (msg,) = [m for m in caplog.messages if "best point" in m]
    assert "substeps = 36" in msg and f"a={rec.summary['best']['a']:.4g}" in msg
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mechcalib"):
        run_config(_toy_config(tmp_path, monkeypatch, 0.4), tmp_path / "run2")  # converged at its best
    assert not [m for m in caplog.messages if "best point" in m]


# -- no stale design line; the output folder as given; the inverse help --------------------------------------
def test_the_design_line_is_logged_by_a_run_with_its_budget_not_by_check_or_show(tmp_path, monkeypatch, caplog):
    import logging

    cfg = _toy_config(tmp_path, monkeypatch, 0.4)
    with caplog.at_level(logging.INFO, logger="mechcalib"):
        _ok("check", cfg)
        assert not [m for m in caplog.messages if "Sobol points" in m]
        _ok("run", cfg, "--out", tmp_path / "run")
        _ok("show", tmp_path / "run")
    assert [m for m in caplog.messages if "Sobol points" in m] == [
        "auto: design: 6 Sobol points (budget 40) (after 0 evaluations)"
    ]


def test_the_stored_configuration_keeps_out_as_given(tmp_path, monkeypatch):
    cfg = _toy_config(tmp_path, monkeypatch, 0.4)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    _ok("run", cfg, "--out", "runs/toy", "--quiet")
    folder = work / "runs" / "toy"
    assert json.loads((folder / "run.json").read_text())["out"] == "runs/toy"
    from mechcalib.storage import RunStore

    with RunStore(folder / "store.sqlite", readonly=True) as st:
        stored = st.config(st.runs()[-1].name)
    assert stored["output"]["directory"] == "runs"  # not <the config's folder>/runs, where the run is not
    _ok("resume", "runs/toy", "--budget", "44", "--quiet")
    with RunStore(folder / "store.sqlite", readonly=True) as st:
        assert st.config(st.runs()[0].name)["output"]["directory"] == "runs"


def test_inverse_dataset_help_names_plug_ins_not_only_built_in_models():
    r = _ok("inverse", "dataset", "--help", env={"COLUMNS": "200"})
    text = " ".join(r.output.split())
    assert "built-in model" not in text.lower() and "plug-ins included" in text
    assert "built-in model" not in " ".join(_ok("simulate", "--help", env={"COLUMNS": "200"}).output.split()).lower()
