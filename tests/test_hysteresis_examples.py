"""The Ding et al. (2021) configuration examples: they build the paper's problems and run end to end with a tiny budget."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mechcalib.cli import app
from mechcalib.config import load_config
from mechcalib.core.problem import experiment_from_model
from mechcalib.models import get_model
from mechcalib.runs import RESULT_FILE, STORE_FILE, run_config
from mechcalib.storage import RunStore

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ACC = ["acceleration_node5", "acceleration_node7", "acceleration_node13", "acceleration_node19"]
CASES = {
    # file: (model, free parameters, true values, channels)
    "hysteresis_boucwen.toml": ("sdof_boucwen", ["a1", "a2", "a3", "a4"], [2.0, 1.0, 0.5, 2.0], ["acceleration"]),
    "hysteresis_frame.toml": (
        "mdof_frame",
        ["a11", "a12", "a13", "a21", "a22", "a23"],
        [0.75, 0.5, 0.2, 0.75, 0.5, 0.4],
        ACC,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_is_the_papers_identification_problem(name):
    model_name, free, truth, channels = CASES[name]
    cfg = load_config(EXAMPLES / name)
    problem = cfg.build_problem()
    assert problem.model.name == model_name and list(problem.space.free_names) == free
    lower = np.array([problem.space[n].lower for n in free])
    upper = np.array([problem.space[n].upper for n in free])
    assert np.allclose(lower, 0.5 * np.array(truth)) and np.allclose(upper, 2.0 * np.array(truth))
    assert np.allclose(cfg.build_model().full_vector()[: len(truth)], truth)
    (exp,) = problem.experiments
    assert list(exp.channel_names) == channels
    # 5 % noise of eq. 36 on each channel, the realisation of seed 1
    clean = experiment_from_model(get_model(model_name))
    noisy = experiment_from_model(get_model(model_name), noise=0.05, seed=1)
    for ch in channels:
        assert np.array_equal(exp[ch].y, noisy[ch].y)
        ratio = np.std(exp[ch].y - clean[ch].y) / np.std(clean[ch].y)
        assert 0.048 < ratio < 0.052
    # the objective is eq. 27: the plain sum of squares over the channels
    assert cfg.objective.name == "l2"
    noise_floor = sum(float(np.sum((exp[ch].y - clean[ch].y) ** 2)) for ch in channels)
    assert problem.evaluate(np.array([truth])).losses[0] == pytest.approx(noise_floor, rel=1e-9)
    # I-ABC with the paper's settings and budget: 50 bees x 500 cycles
    opt = cfg.build_optimizer()
    assert opt.name == "iabc" and (opt.group_size, opt.max_cycles, opt.F, opt.CR) == (50, 500, 0.5, 0.4)
    assert opt.selection == "tournament" and cfg.build_termination().max_evals == 25_000


def test_boucwen_example_runs_with_a_tiny_budget(tmp_path):
    rec = run_config(EXAMPLES / "hysteresis_boucwen.toml", tmp_path / "bw", budget=30, plots=False)
    res = json.loads(rec.result_path.read_text())
    assert res["status"] == "finished" and res["stop_reason"] == "budget"
    assert res["n_evaluations"] == 30 and res["n_failed"] == 0 and res["seed"] == 1
    best = np.array([res["best"][k] for k in ("a1", "a2", "a3", "a4")])
    assert np.all(best >= [1.0, 0.5, 0.25, 1.0]) and np.all(best <= [4.0, 2.0, 1.0, 4.0])
    # the stored loss is the objective at the stored parameters
    problem = load_config(EXAMPLES / "hysteresis_boucwen.toml").build_problem()
    assert problem.evaluate(best[None]).losses[0] == pytest.approx(res["best_loss"], rel=1e-12)
    with RunStore(tmp_path / "bw" / STORE_FILE, readonly=True) as st:
        (run,) = st.runs()
        assert st.n_evaluations(run.name) == 30 and run.settings["group_size"] == 50


def test_frame_example_runs_through_the_cli(tmp_path):
    out = tmp_path / "frame"
    r = CliRunner().invoke(
        app,
        ["run", str(EXAMPLES / "hysteresis_frame.toml"), "--out", str(out), "--budget", "26", "--no-plots", "--quiet"],
    )
    assert r.exit_code == 0, r.output
    res = json.loads((out / RESULT_FILE).read_text())
    assert res["n_evaluations"] == 26 and res["n_failed"] == 0 and res["stop_reason"] == "budget"
    assert set(res["best"]) >= {"a11", "a12", "a13", "a21", "a22", "a23"}
    with RunStore(out / STORE_FILE, readonly=True) as st:
        recs = st.evaluations(st.runs()[0].name)
    # I-ABC's first batch is the 25 initial sources (eq. 28), then the employed bees
    assert [r.batch for r in recs].count(0) == 25 and recs[-1].batch == 1
    assert min(r.loss for r in recs) == res["best_loss"]
