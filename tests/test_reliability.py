"""Runs that survive users' habits: bad inputs refused with a clear message, fingerprints that do not depend
on key order, timings that add up, and one writer per run folder."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import mechcalib as mc
from mechcalib.cli import app
from mechcalib.config import ConfigFileError, load_config
from mechcalib.core.parameters import Parameter, ParameterSpace
from mechcalib.errors import ConfigurationError
from mechcalib.models import MODELS
from mechcalib.optimizers import make_optimizer
from mechcalib.runs import RESULT_FILE, STORE_FILE, resume_run, run_config
from mechcalib.storage import RunStore

runner = CliRunner()
SRC = Path(__file__).resolve().parents[1] / "src"


def duffing_toml(
    *,
    name: str = "duff",
    conditions: str = "{ t_end = 5.0, fs = 20.0 }",
    failure_loss: str = "inf",
    seed: int = 1,
    budget: int = 12,
    extra: str = "",
) -> str:
    return f"""
name = "{name}"
seed = {seed}
failure_loss = {failure_loss}
[model]
name = "duffing"
preset = "default"
{extra}
[[experiments]]
kind = "synthetic"
name = "synth"
noise = 0.02
seed = 7
conditions = {conditions}
[objective]
name = "overlap_rss"
options = {{ n_points = 50 }}
[optimizer]
name = "pso"
settings = {{ swarm_size = 4 }}
[budget]
max_evals = {budget}
[evaluator]
kind = "serial"
[output]
plots = false
"""


def _write(tmp_path: Path, text: str, name: str = "cfg.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def _snapshot(folder: Path) -> dict[str, bytes]:
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------------------------------------
# Item 8: bad inputs refused
# ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["../../escaped_run", "a/b", "..", "", "a\\\\b", "."])
def test_run_name_must_be_a_plain_name(tmp_path, bad):
    cfg = _write(tmp_path, duffing_toml(name=bad))
    with pytest.raises(ConfigFileError, match="name"):
        load_config(cfg)
    r = _invoke("check", cfg)
    assert r.exit_code != 0
    assert "Traceback" not in r.output


def test_escaped_run_name_writes_nothing_outside(tmp_path):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    cfg = _write(work, duffing_toml(name="../../escaped_run"))
    before = _snapshot(tmp_path)
    r = _invoke("run", cfg, "--quiet")
    assert r.exit_code != 0
    assert not (tmp_path / "escaped_run").exists()
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("bad", ["-inf", "nan"])
def test_failure_loss_must_be_finite_or_plus_inf(tmp_path, bad):
    cfg = _write(tmp_path, duffing_toml(failure_loss=bad))
    with pytest.raises(ConfigFileError, match="failure_loss"):
        load_config(cfg)


@pytest.mark.parametrize("bad", [-math.inf, math.nan])
def test_problem_refuses_a_failure_loss_below_every_loss(bad):
    from mechcalib.core.problem import FunctionProblem

    space = ParameterSpace([Parameter("a", 0.0, 1.0)])
    with pytest.raises(ConfigurationError, match="failure_loss"):
        FunctionProblem(lambda x: np.sum(x, axis=1), space, failure_loss=bad)


def test_finite_failure_loss_still_accepted(tmp_path):
    cfg = load_config(_write(tmp_path, duffing_toml(failure_loss="1e6")))
    assert cfg.build_problem().failure_loss == 1e6


@pytest.mark.parametrize("lo,hi", [(-1e308, 1e308), (-1.7e308, 1.7e308), (-1e308, 0.9e308)])
def test_bounds_whose_unit_map_overflows_are_refused(lo, hi):
    with pytest.raises(ConfigurationError, match="range"):
        Parameter("k", lo, hi)


@pytest.mark.parametrize("lo,hi,scale", [(-1e300, 1e300, "linear"), (0.0, 1.7e308, "linear"), (1e-300, 1e308, "log")])
def test_wide_but_usable_bounds_map_back_and_forth(lo, hi, scale):
    p = Parameter("k", lo, hi, scale=scale)
    u = np.array([0.0, 0.25, 0.5, 1.0])
    x = p.from_unit(u)
    assert np.all(np.isfinite(x))
    np.testing.assert_allclose(p.to_unit(x), u, atol=1e-12)


def test_huge_bounds_refused_in_a_config(tmp_path):
    extra = "[parameters.k]\nlower = -1e308\nupper = 1e308\n"
    cfg = _write(tmp_path, duffing_toml(extra=extra))
    r = _invoke("check", cfg)
    assert r.exit_code != 0
    assert "range" in r.output and "Traceback" not in r.output


BAD_CONDITIONS = [
    '{ t_end = "5", fs = 20.0 }',
    "{ t_end = -5.0, fs = 20.0 }",
    "{ t_end = 5.0, fs = 1e9 }",
    "{ t_end = 5.0, fs = 20.0, omega = nan }",
]


@pytest.mark.parametrize("cond", BAD_CONDITIONS)
def test_bad_conditions_refused_at_check_and_run(tmp_path, cond):
    cfg = _write(tmp_path, duffing_toml(conditions=cond))
    r = _invoke("check", cfg)
    assert r.exit_code != 0, r.output
    assert "Traceback" not in r.output
    out = tmp_path / "run"
    r = _invoke("run", cfg, "--out", out, "--quiet")
    assert r.exit_code != 0, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert not (out / STORE_FILE).exists()


@pytest.mark.parametrize("name", ["duffing", *[n for n in MODELS if n.startswith(("sdof_", "mdof_"))], "eepa_triaxial"])
@pytest.mark.parametrize(
    "bad", [{"t_end": "5"}, {"t_end": -5.0}, {"fs": 1e9, "t_end": 1e3}, {"omega": math.nan}], ids=repr
)
def test_every_model_with_these_conditions_refuses_them(name, bad):
    model = MODELS[name]()
    if not set(bad) <= set(model.default_conditions):
        pytest.skip(f"{name} has no condition {sorted(bad)}")
    with pytest.raises(ConfigurationError, match="|".join(bad)):
        model.validate_conditions(bad)


def test_bad_conditions_refused_at_run_from_python(tmp_path):
    # the config path validates conditions through the model (not only `check`)
    cfg = _write(tmp_path, duffing_toml(conditions="{ t_end = 5.0, fs = 20.0, omega = nan }"))
    with pytest.raises((ConfigurationError, ConfigFileError), match="omega"):
        run_config(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_run_where_every_evaluation_failed_exits_non_zero(tmp_path):
    # k3 very negative: the softening oscillator diverges for every parameter set
    extra = "[parameters.k3]\nlower = -1e6\nupper = -1e5\n[parameters.k]\nlower = -1e6\nupper = -1e5\n"
    cfg = _write(tmp_path, duffing_toml(extra=extra, conditions="{ t_end = 30.0, fs = 20.0 }", budget=8))
    out = tmp_path / "run"
    r = _invoke("run", cfg, "--out", out, "--quiet")
    summary = json.loads((out / RESULT_FILE).read_text())
    assert summary["best_loss"] is None and summary["n_failed"] == summary["n_evaluations"] == 8
    assert r.exit_code != 0
    assert "no evaluation" in r.output


# ------------------------------------------------------------------------------------------------------
# Item 7: the engine's own slips
# ------------------------------------------------------------------------------------------------------
def test_fingerprint_independent_of_condition_order(tmp_path):
    a = load_config(_write(tmp_path, duffing_toml(conditions="{ t_end = 5.0, fs = 20.0 }"), "a.toml"))
    b = load_config(_write(tmp_path, duffing_toml(conditions="{ fs = 20.0, t_end = 5.0 }"), "b.toml"))
    from mechcalib.storage.codec import problem_fingerprint

    assert problem_fingerprint(a.build_problem()) == problem_fingerprint(b.build_problem())


def test_resume_with_non_alphabetical_conditions(tmp_path):
    cfg = _write(tmp_path, duffing_toml(conditions="{ t_end = 5.0, fs = 20.0, omega = 1.2 }", budget=8))
    out = tmp_path / "run"
    r = _invoke("run", cfg, "--out", out, "--quiet")
    assert r.exit_code == 0, r.output
    r = _invoke("resume", out, "--budget", 16, "--quiet")
    assert r.exit_code == 0, r.output
    assert json.loads((out / RESULT_FILE).read_text())["n_evaluations"] == 16


def _duffing_with_curves(shared: bool):
    """Duffing's synthetic problem with its restoring-force curve's abscissa either the displacement array
    itself or an equal copy (which of the two a model returns depended on whether numba had just compiled
    its kernel or loaded it from the cache)."""
    from mechcalib.core.data import Curve, Experiment
    from mechcalib.models.oscillator import Duffing
    from mechcalib.objectives.curves import L2

    model = Duffing()
    resp = mc.experiment_from_model(model, name="d").channels
    d, f = resp["displacement"], resp["restoring_force"]
    x = d.y if shared else d.y.copy()
    rf = Curve(x, f.y.copy(), t=f.t, x_name=f.x_name, y_name=f.y_name, x_unit=f.x_unit, y_unit=f.y_unit)
    exp = Experiment({"displacement": d, "restoring_force": rf}, name="d")
    assert (exp.channels["restoring_force"].x is exp.channels["displacement"].y) == shared
    return mc.Problem(model, exp, L2(channels=("displacement",)))


def test_fingerprint_does_not_depend_on_which_arrays_are_shared(tmp_path):
    from mechcalib.storage.codec import earlier_fingerprints, problem_fingerprint

    shared, copied = _duffing_with_curves(True), _duffing_with_curves(False)
    assert problem_fingerprint(shared) == problem_fingerprint(copied)
    # the previous canonical form wrote a shared array once, so it told the two apart; a store holding it
    # still resumes
    assert earlier_fingerprints(shared)[0] != earlier_fingerprints(copied)[0]
    db = tmp_path / "s.db"
    with RunStore(db) as store:
        mc.calibrate(shared, make_optimizer("random", seed=1), max_evals=6, store=store, run_name="r")
    with sqlite3.connect(db) as con:
        con.execute("UPDATE runs SET fingerprint=?", (json.dumps(earlier_fingerprints(shared)[0]),))
    con.close()
    with RunStore(db) as store:
        res = mc.calibrate(shared, make_optimizer("random", seed=1), max_evals=10, store=store, run_name="r")
    assert res.n_evals == 10 and res.n_simulated == 4


def test_fingerprint_of_a_problem_with_a_cycle_is_still_taken():
    from mechcalib.storage.codec import problem_fingerprint

    problem = _duffing_with_curves(True)
    problem.model.loop = [problem.model]  # a reference cycle: written with the memo
    a = problem_fingerprint(problem)
    assert a is not None and a == problem_fingerprint(problem)


def test_store_with_the_previous_fingerprint_still_resumes(tmp_path):
    from mechcalib.storage.codec import problem_fingerprint

    cfg = _write(tmp_path, duffing_toml(conditions="{ fs = 20.0, t_end = 5.0 }", budget=8))
    out = tmp_path / "run"
    rec = run_config(cfg, out)
    problem = load_config(cfg).build_problem()
    legacy = problem_fingerprint(problem, legacy=True)
    assert legacy != problem_fingerprint(problem)
    with sqlite3.connect(out / STORE_FILE) as con:  # as a store written before the canonical fingerprint
        con.execute("UPDATE runs SET fingerprint=?", (json.dumps(legacy),))
    con.close()
    rec2 = resume_run(out, budget=16, config=cfg)
    assert rec2.result.n_evals == 16
    assert rec2.result.n_simulated == 8  # the stored 8 are answered from the store
    assert rec.result.n_evals == 8


def test_store_of_a_non_alphabetical_config_with_the_previous_fingerprint_resumes(tmp_path):
    # before the fix the store held the hash of the file's order while the stored config sorts the keys
    from mechcalib.storage.codec import problem_fingerprint

    cfg = _write(tmp_path, duffing_toml(conditions="{ t_end = 5.0, fs = 20.0, omega = 1.3 }", budget=8))
    out = tmp_path / "run"
    run_config(cfg, out)
    as_written = problem_fingerprint(load_config(cfg).build_problem(), legacy=True)
    from mechcalib.runs import load_run_config

    assert problem_fingerprint(load_run_config(out).build_problem(), legacy=True) != as_written
    with sqlite3.connect(out / STORE_FILE) as con:
        con.execute("UPDATE runs SET fingerprint=?", (json.dumps(as_written),))
    con.close()
    rec = resume_run(out, budget=16)
    assert rec.result.n_evals == 16 and rec.result.n_simulated == 8


def test_api_store_opens_with_show(tmp_path):
    cfg = load_config(_write(tmp_path, duffing_toml(budget=8)))
    path = tmp_path / "x.sqlite"
    mc.calibrate(cfg.build_problem(), cfg.build_optimizer(), cfg.build_termination(), store=str(path))
    r = _invoke("show", path)
    assert r.exit_code == 0, r.output
    assert "8" in r.output
    r = _invoke("show", path, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["n_evaluations"] == 8
    r = _invoke("export", path)
    assert r.exit_code == 0, r.output
    assert len((tmp_path / "evaluations.csv").read_text().splitlines()) == 9
    r = _invoke("report", path)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "convergence.png").is_file()


def test_simulation_time_does_not_exceed_wall_time(tmp_path):
    cfg = _write(tmp_path, duffing_toml(budget=16, conditions="{ t_end = 60.0, fs = 200.0 }"))
    rec = run_config(cfg, tmp_path / "run")
    t = rec.summary["timings"]
    assert 0 < t["simulation_seconds"] <= t["calibrate_seconds"] * 1.05 + 0.01, t


# ------------------------------------------------------------------------------------------------------
# Item 5: one writer per run folder
# ------------------------------------------------------------------------------------------------------
def _cli(*args: object) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.Popen(
        [sys.executable, "-m", "mechcalib.cli", *map(str, args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_two_runs_into_one_folder_exactly_one_writes(tmp_path):
    a = _write(tmp_path, duffing_toml(seed=1, budget=8), "a.toml")
    b = _write(tmp_path, duffing_toml(seed=2, budget=8), "b.toml")
    for trial in range(10):
        out = tmp_path / f"run{trial}"
        pa, pb = _cli("run", a, "--out", out, "--quiet"), _cli("run", b, "--out", out, "--quiet")
        oa, ob = pa.communicate(timeout=120)[0], pb.communicate(timeout=120)[0]
        codes = sorted([pa.returncode, pb.returncode])
        assert codes[0] == 0 and codes[1] != 0, (oa, ob)
        loser = ob if pb.returncode else oa
        winner_seed = 1 if pa.returncode == 0 else 2
        assert "Traceback" not in loser and "resume=True" not in loser, loser
        assert "--out" in loser or "resume" in loser, loser
        assert json.loads((out / "run.json").read_text())["overrides"] == {}
        assert json.loads((out / RESULT_FILE).read_text())["seed"] == winner_seed
        assert not list(out.glob("*.tmp"))


def test_refused_resume_changes_nothing_while_the_run_holds_the_folder(tmp_path):
    from mechcalib.runs import RunDirError, folder_lock

    cfg = _write(tmp_path, duffing_toml(budget=8))
    out = tmp_path / "run"
    run_config(cfg, out)
    before = _snapshot(out)
    with folder_lock(out):
        p = _cli("resume", out, "--budget", 20, "--quiet")
        text = p.communicate(timeout=120)[0]
        assert p.returncode != 0
        assert "Traceback" not in text and "running" in text, text
        with pytest.raises(RunDirError, match="--out"):
            run_config(cfg, out)
    assert _snapshot(out) == before
