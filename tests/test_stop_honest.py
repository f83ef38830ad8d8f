"""A run says why it stopped: ``converged`` (at which evaluation, by which rule) or ``budget`` (stopped by the
budget before converging), and ``resume --budget`` continues a run its budget stopped without simulating a
stored evaluation again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import mechcalib as mc
from mechcalib.cli import app
from mechcalib.errors import ConfigurationError
from mechcalib.models import get_model
from mechcalib.objectives import L2
from mechcalib.optimizers import Auto
from mechcalib.runs import RESULT_FILE, STORE_FILE
from mechcalib.storage import RunStore

runner = CliRunner()

CONFIG = """\
name = "duff"
seed = 2
[model]
name = "duffing"
preset = "default"
[[experiments]]
kind = "synthetic"
name = "synth"
seed = 7
conditions = {{ t_end = 5.0, fs = 20.0 }}
[budget]
max_evals = {budget}
[output]
plots = false
"""
TRUTH = {"c": 0.2, "k": 1.0, "k3": 0.5}  # the preset: noise-free data, the optimum is the truth


def _cli(*args: object) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    return " ".join(r.output.split())


def _result(run: Path) -> dict:
    return json.loads((run / RESULT_FILE).read_text())


def _error(best: dict) -> float:
    return max(abs(best[k] - v) / v for k, v in TRUTH.items())


def _points(run: Path) -> list[bytes]:
    with RunStore(run / STORE_FILE, readonly=True) as st:
        return [np.asarray(r.u).tobytes() for r in st.evaluations("duff")]


@pytest.fixture()
def cut_run(tmp_path) -> Path:
    """A run whose budget (20) stops auto's least squares before it converges."""
    cfg = tmp_path / "duff.toml"
    cfg.write_text(CONFIG.format(budget=20))
    run = tmp_path / "run"
    _cli("run", cfg, "--out", run, "-q")
    return run


def test_a_run_stopped_by_its_budget_says_budget_everywhere(cut_run):
    res = _result(cut_run)
    assert res["stop_reason"] == "budget" and "before converging" in res["stop"]
    assert "mechcalib resume RUN --budget" in res["stop"]
    shown = _cli("show", cut_run)
    assert "finished (budget)" in shown and f"mechcalib resume {cut_run} --budget" in shown
    assert json.loads(runner.invoke(app, ["show", str(cut_run), "--json"]).output)["stop_reason"] == "budget"


def test_resume_with_a_larger_budget_continues_deterministically(cut_run, tmp_path):
    before = _result(cut_run)
    assert _error(before["best"]) > 1e-3  # the small budget missed the target
    other = tmp_path / "copy"
    shutil.copytree(cut_run, other)
    stored = _points(cut_run)
    out = _cli("resume", cut_run, "--budget", 200)
    assert "the design of" in out or "converged" in out
    after = _result(cut_run)
    assert after["n_replayed"] == before["n_evaluations"]  # nothing stored is simulated again
    assert after["n_simulated"] == after["n_evaluations"] - before["n_evaluations"]
    points = _points(cut_run)
    assert points[: len(stored)] == stored and len(set(points)) == len(points)
    assert _error(after["best"]) < 1e-3  # the larger budget reaches the target
    assert after["stop_reason"] == "converged" and after["n_evaluations"] < 200
    _cli("resume", other, "--budget", 200)
    again = _result(other)
    assert again["best"] == after["best"] and again["n_evaluations"] == after["n_evaluations"]
    choices = [c["choice"] for c in after["choices"]]
    assert choices.count("design") == 1 and "budget" in choices  # the design is kept, and it is said


def test_a_converged_run_stops_early_and_says_where(tmp_path):
    cfg = tmp_path / "duff.toml"
    cfg.write_text(CONFIG.format(budget=400))
    run = tmp_path / "run"
    out = _cli("run", cfg, "--out", run)
    res = _result(run)
    assert res["stop_reason"] == "converged" and res["n_evaluations"] < 200, res["n_evaluations"]
    rule = next(c for c in res["choices"] if c["choice"] == "converged")
    assert f"converged at evaluation {rule['at_eval']}" in res["stop"] and "converged at evaluation" in out
    assert _error(res["best"]) < 1e-3
    n = res["n_evaluations"]
    out = _cli("resume", run, "--budget", 800)  # converged: nothing more to do, and it says what to ask
    assert _result(run)["n_evaluations"] == n and _result(run)["n_simulated"] == 0
    assert "converged" in out and "confirm" in out


def test_confirm_counts_the_starts_that_agree():
    model = get_model("duffing")
    exp = mc.experiment_from_model(model, model.preset("default"), noise=0.0, seed=0, name="d")
    prob = mc.Problem(model, exp, L2(channels=("displacement",)))
    one = mc.calibrate(prob, Auto(seed=1, confirm=1), max_evals=400)
    two = mc.calibrate(prob, Auto(seed=1, confirm=2), max_evals=400)
    assert one.stop_reason == two.stop_reason == "converged"
    assert one.n_evals < two.n_evals < 400
    assert abs(one.best_loss - two.best_loss) <= 1e-6 * max(abs(two.best_loss), 1e-300) + 1e-12


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_confirm_must_be_a_positive_integer(bad):
    with pytest.raises(ConfigurationError, match="confirm"):
        Auto(confirm=bad)


def test_a_run_cut_before_a_batch_that_did_not_fit_is_reopened_by_a_larger_budget(tmp_path):
    """auto ends when its next batch does not fit (a Jacobian cut in half would be wasted): stop reason
    ``budget``; a resume with a larger budget plans that batch again and goes on."""
    model = get_model("duffing")
    exp = mc.experiment_from_model(model, model.preset("default"), noise=0.0, seed=0, name="d")
    prob = mc.Problem(model, exp, L2(channels=("displacement",)))
    for budget in range(16, 52):
        store = tmp_path / f"s{budget}.sqlite"
        cut = mc.calibrate(prob, Auto(seed=1), max_evals=budget, store=str(store), run_name="r")
        if cut.stop_reason == "budget" and cut.n_evals < budget:
            break
    else:
        pytest.fail("no budget in 16-51 cut a batch")
    more = mc.calibrate(prob, Auto(seed=1), max_evals=300, store=str(store), run_name="r", resume=True)
    assert more.n_replayed == cut.n_evals and more.n_simulated == more.n_evals - cut.n_evals > 0
    assert more.stop_reason == "converged" and more.best_loss <= cut.best_loss
    assert [c["choice"] for c in more.choices].count("budget") == 1


SDOF_CONFIG = """\
name = "sd"
seed = 2
[model]
name = "sdof_boucwen"
preset = "default"
[[experiments]]
kind = "synthetic"
name = "synth"
seed = 7
conditions = { t_end = 10.0, fs = 200.0 }
[budget]
max_evals = 20
[output]
plots = false
"""
SDOF_TRUTH = {"a1": 2.0, "a2": 1.0, "a3": 0.5, "a4": 2.0}  # the preset, noise-free


def test_resume_with_a_larger_budget_reaches_the_sdof_target_the_small_budget_missed(tmp_path):
    cfg = tmp_path / "sd.toml"
    cfg.write_text(SDOF_CONFIG)
    run = tmp_path / "run"
    _cli("run", cfg, "--out", run, "-q")
    before = _result(run)
    err = lambda best: max(abs(best[k] - v) / v for k, v in SDOF_TRUTH.items())  # noqa: E731
    assert before["stop_reason"] == "budget" and err(before["best"]) > 1e-2  # missed: stopped by its budget
    with RunStore(run / STORE_FILE, readonly=True) as st:
        stored = [np.asarray(r.u).tobytes() for r in st.evaluations("sd")]
    _cli("resume", run, "--budget", 300, "-q")
    after = _result(run)
    assert after["n_replayed"] == before["n_evaluations"]  # nothing stored is simulated again
    with RunStore(run / STORE_FILE, readonly=True) as st:
        points = [np.asarray(r.u).tobytes() for r in st.evaluations("sd")]
    assert points[: len(stored)] == stored and len(set(points)) == len(points)
    assert after["stop_reason"] == "converged" and err(after["best"]) < 1e-4
