"""The run commands end to end: run, resume, show, export, report, with their error paths."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import mechcalib as mc
from mechcalib.cli import app
from mechcalib.config import RunConfig
from mechcalib.runs import RESULT_FILE, STORE_FILE, resume_run, run_config
from mechcalib.storage import RunStore

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DATA = EXAMPLES / "data" / "linear_measured.csv"

CONFIG = f"""
seed = 3
[model]
name = "linear"
[parameters.b]
lower = 1.0
upper = 10.0
[[experiments]]
path = "{DATA.as_posix()}"
name = "measured"
channels = {{ y = ["x", "y_measured"] }}
[objective]
name = "f1"
[optimizer]
name = "de"
settings = {{ pop_size = 6 }}
[budget]
max_evals = 30
[output]
keep_responses = true
plots = false
"""


@pytest.fixture
def config(tmp_path) -> Path:
    p = tmp_path / "lin.toml"
    p.write_text(CONFIG)
    return p


def _invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def _ok(*args: str):
    r = _invoke(*args)
    assert r.exit_code == 0, r.output
    return r


def _result(out: Path) -> dict:
    return json.loads((out / RESULT_FILE).read_text())


def _losses(out: Path) -> list[float]:
    with RunStore(out / STORE_FILE, readonly=True) as st:
        return [r.loss for r in st.evaluations(st.runs()[-1].name)]


def test_run_writes_result_and_store_then_show(config, tmp_path):
    out = tmp_path / "run"
    r = _ok("run", config, "--out", out, "--quiet")
    assert "best loss" in r.stdout and str(out / RESULT_FILE) in r.stdout
    res = _result(out)
    assert res["run_name"] == "lin" and res["status"] == "finished" and res["stop_reason"] == "budget"
    assert (
        res["n_evaluations"] == 30
        and res["n_simulated"] + res["n_cached"] == 30
        and res["n_failed"] == 0
        and res["seed"] == 3
    )
    assert set(res["best"]) == {"a", "b"} and 1.0 <= res["best"]["b"] <= 10.0
    assert len(res["alternatives"]) == 5 and res["alternatives"][0]["loss"] == res["best_loss"]
    assert res["timings"]["simulation_seconds"] >= 0 and res["timings"]["wall_seconds"] > 0
    # the result is the store's best, and the stored config rebuilds the run
    with RunStore(out / STORE_FILE, readonly=True) as st:
        best = st.best("lin")
        assert st.n_evaluations("lin") == 30 and best.loss == res["best_loss"]
        assert best.params == {k: res["best"][k] for k in ("a", "b")}
        stored = st.config("lin")
    assert RunConfig.from_dict(stored).to_dict() == stored and stored["budget"]["max_evals"] == 30
    assert not list(out.glob("*.png"))  # output.plots = false

    r = _ok("show", out)
    assert "finished" in r.stdout and "30 / 30" in r.stdout and f"{res['best_loss']:.6g}" in r.stdout
    r = _ok("show", out, "--json")
    s = json.loads(r.stdout)
    assert s["status"] == "finished" and s["n_evaluations"] == 30 and s["n_failed"] == 0 and s["failures"] == {}
    assert s["best"] == res["best"] and s["best_loss"] == res["best_loss"] and s["run_name"] == "lin"


def test_budget_and_seed_override_and_progress_bar(config, tmp_path):
    out = tmp_path / "o"
    r = _ok("run", config, "--out", out, "--budget", 12, "--seed", 5)
    assert "12/12" in r.output and "evaluations" in r.output  # the progress bar's last state, on stderr
    res = _result(out)
    assert res["n_evaluations"] == 12 and res["seed"] == 5 and res["budget"]["max_evals"] == 12
    # a run with seed 3 differs
    _ok("run", config, "--out", tmp_path / "p", "--budget", 12, "-q")
    assert _losses(out) != _losses(tmp_path / "p")


def test_export_csv_parquet_and_dataset(config, tmp_path):
    out = tmp_path / "run"
    _ok("run", config, "--out", out, "-q", "--budget", 18)
    r = _ok("export", out, "--dataset", out / "ds.npz")
    assert "18 evaluations" in r.stdout
    with open(out / "evaluations.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 18 and {"idx", "a", "b", "loss", "status"} <= set(rows[0])
    assert [float(row["loss"]) for row in rows] == _losses(out)
    d = np.load(out / "ds.npz")
    # one row per distinct parameter set (a repeated point is stored as a cache hit, not simulated again)
    distinct = {(row["a"], row["b"]) for row in rows}
    assert d["X"].shape == (len(distinct), 2) and len(distinct) >= 15 and list(d["names"]) == ["a", "b"]
    assert {(repr(float(a)), repr(float(b))) for a, b in d["X"]} == distinct
    assert set(d["loss"].tolist()) == set(_losses(out))
    y = d["response/measured/y/y"]
    assert y.shape == (len(distinct), 100) and np.all(np.isfinite(y))
    # the response is y = a x + b at the stored parameters
    x = d["response/measured/y/x"][0]
    assert np.allclose(y, d["X"][:, :1] * x + d["X"][:, 1:])

    r = _invoke("export", out, "--format", "parquet")
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        assert r.exit_code == 2 and "pip install" in r.output and "pyarrow" in r.output
    else:
        assert r.exit_code == 0, r.output
        import pandas as pd

        assert len(pd.read_parquet(out / "evaluations.parquet")) == 18
    assert _invoke("export", out, "--format", "xlsx").exit_code == 2


def test_report_writes_nontrivial_pngs(config, tmp_path):
    import matplotlib.image as mpimg

    out = tmp_path / "run"
    _ok("run", config, "--out", out, "-q", "--budget", 18)
    r = _ok("report", out)
    files = sorted(p.name for p in out.glob("*.png"))
    assert files == ["convergence.png", "fit_measured.png"] and "convergence.png" in r.stdout
    for f in files:
        img = mpimg.imread(out / f)
        # palette PNGs (reporting.save_png): a drawn plot is still several kB
        assert (out / f).stat().st_size > 4_000 and img.shape[0] > 300 and img.shape[1] > 400
        assert img[..., :3].std() > 0.05  # drawn on, not a blank canvas


def test_run_writes_plots_when_the_config_asks(config, tmp_path):
    config.write_text(CONFIG.replace("plots = false", "plots = true"))
    out = tmp_path / "run"
    r = _ok("run", config, "--out", out, "--budget", 6)
    assert (out / "convergence.png").is_file() and (out / "fit_measured.png").is_file() and "fit_measured" in r.stdout


def test_resume_recomputes_nothing_and_extends_the_budget(config, tmp_path):
    out = tmp_path / "run"
    _ok("run", config, "--out", out, "-q")
    first = _result(out)
    before = _losses(out)
    r = _ok("resume", out, "-q")
    again = _result(out)
    assert again["n_simulated"] == 0 and again["n_cached"] == 0 and again["n_evaluations"] == 30
    assert again["best"] == first["best"] and again["best_loss"] == first["best_loss"] and _losses(out) == before
    assert "0 simulated now" in r.stdout

    _ok("resume", out, "--budget", 50, "-q")
    ext = _result(out)
    assert ext["n_evaluations"] == 50 and ext["n_simulated"] == 20 and _losses(out)[:30] == before
    assert ext["budget"]["max_evals"] == 50 and ext["best_loss"] <= first["best_loss"]
    # the extension continues the same seeded run: a run of 50 from the start gives the same evaluations
    _ok("run", config, "--out", tmp_path / "direct", "--budget", 50, "-q")
    direct = _result(tmp_path / "direct")
    assert _losses(out) == _losses(tmp_path / "direct") and direct["best"] == ext["best"]
    # the extended budget is stored: a later resume keeps it and simulates nothing
    _ok("resume", out, "-q")
    assert _result(out)["n_evaluations"] == 50 and _result(out)["n_simulated"] == 0


def test_interrupted_run_resumes_to_the_uninterrupted_result(config, tmp_path):
    def stop_after(k):
        def hook(done, total, best):
            if done >= k:
                raise KeyboardInterrupt

        return hook

    out = tmp_path / "cut"
    with pytest.raises(KeyboardInterrupt):
        run_config(config, out, progress=stop_after(17))
    s = json.loads(_ok("show", out, "--json").stdout)
    assert s["status"] == "interrupted" and s["n_evaluations"] == 17 and not (out / RESULT_FILE).exists()
    _ok("resume", out, "-q")
    res = _result(out)
    assert res["status"] == "finished" and res["n_evaluations"] == 30 and res["n_simulated"] == 13
    full = run_config(config, tmp_path / "full")
    assert _losses(out) == _losses(tmp_path / "full") and res["best"] == full.summary["best"]
    # the Python API gives the same
    rec = resume_run(out)
    assert rec.result.n_simulated == 0 and rec.summary["best_loss"] == full.summary["best_loss"]


def test_pool_with_two_workers_matches_serial(config, tmp_path):
    _ok("run", config, "--out", tmp_path / "serial", "--budget", 18, "-q")
    _ok("run", config, "--out", tmp_path / "pool", "--budget", 18, "--workers", 2, "-q")
    serial, pool = _result(tmp_path / "serial"), _result(tmp_path / "pool")
    assert pool["evaluator"]["name"] == "pool" and pool["evaluator"]["n_workers"] == 2
    assert serial["evaluator"]["name"] == "serial"
    assert pool["best"] == serial["best"] and pool["best_loss"] == serial["best_loss"]
    assert _losses(tmp_path / "pool") == _losses(tmp_path / "serial")
    with RunStore(tmp_path / "pool" / STORE_FILE, readonly=True) as st:
        workers = {r.worker.split(":")[0] for r in st.evaluations("lin") if r.source == "live"}
    assert workers == {"pool-0", "pool-1"}


def test_show_reports_failures_and_report_without_config(tmp_path):
    def fn(X):
        return np.where(X[:, 0] > 0.5, np.nan, np.sum(X**2, axis=1))

    out = tmp_path / "f"
    out.mkdir()
    res = mc.minimize(
        fn,
        [0, 0],
        [1, 1],
        mc.optimizers.make_optimizer("lhs", seed=1, batch_size=10),
        max_evals=20,
        store=out / STORE_FILE,
        run_name="fails",
    )
    assert res.n_failed > 0
    s = json.loads(_ok("show", out, "--json").stdout)
    assert s["n_failed"] == res.n_failed and sum(s["failures"].values()) == res.n_failed
    assert s["recent_failures"] and all(f["error"] for f in s["recent_failures"])
    assert s["best_loss"] == res.best_loss
    r = _ok("show", out)
    assert f"failed: {res.n_failed}" in r.stdout and "failed evaluation" in r.stdout
    # a run stored without a configuration: the convergence plot only
    _ok("report", out)
    assert (out / "convergence.png").is_file() and not list(out.glob("fit_*.png"))
    # and it cannot be resumed from the folder
    r = _invoke("resume", out)
    assert r.exit_code == 2 and "--config" in r.output


def test_error_paths(config, tmp_path):
    # missing folder, folder without a store
    for cmd in ("show", "resume", "export", "report"):
        r = _invoke(cmd, tmp_path / "nothing")
        assert r.exit_code == 2 and "no run folder" in r.output, (cmd, r.output)
    r = _invoke("show", tmp_path)
    assert r.exit_code == 2 and "holds no run store" in r.output
    # bad or missing configuration
    r = _invoke("run", tmp_path / "none.toml", "--out", tmp_path / "x")
    assert r.exit_code == 2 and "not found" in r.output
    bad = tmp_path / "bad.toml"
    bad.write_text(CONFIG.replace("pop_size = 6", "pop_size = -6"))
    r = _invoke("run", bad, "--out", tmp_path / "x")
    assert r.exit_code == 2 and "optimizer.settings.pop_size" in r.output
    assert not (tmp_path / "x").exists()  # nothing is created for a configuration that fails
    # both evaluators, bad numbers
    r = _invoke("run", config, "--out", tmp_path / "x", "--workers", 2, "--scheduler", "tcp://127.0.0.1:1")
    assert r.exit_code == 2 and "not both" in r.output
    assert _invoke("run", config, "--out", tmp_path / "x", "--budget", 0).exit_code == 2
    assert _invoke("run", config, "--out", tmp_path / "x", "--workers", 0).exit_code == 2
    # a folder that holds a run already; a budget below what is stored
    out = tmp_path / "run"
    _ok("run", config, "--out", out, "-q", "--budget", 12)
    r = _invoke("run", config, "--out", out, "-q")
    assert r.exit_code == 2 and "already holds run 'lin'" in r.output and "mechcalib resume" in r.output
    r = _invoke("resume", out, "--budget", 6)
    assert r.exit_code == 2 and "below the 12 evaluations" in r.output
    r = _invoke("resume", out, "--workers", 2, "--scheduler", "tcp://127.0.0.1:1")
    assert r.exit_code == 2 and "not both" in r.output
    r = _invoke("show", out, "--run", "other")
    assert r.exit_code == 2 and "no run 'other'" in r.output


def test_resume_falls_back_to_the_config_file(config, tmp_path):
    out = tmp_path / "run"
    _ok("run", config, "--out", out, "-q", "--budget", 12)
    # the stored configuration no longer validates (its data file "moved"): the original file is used,
    # with the recorded --budget override
    with RunStore(out / STORE_FILE) as st:
        cfg = st.config("lin")
        cfg["experiments"][0]["path"] = str(tmp_path / "moved.csv")
        st._con.execute("UPDATE runs SET config=? WHERE name='lin'", (json.dumps(cfg),))
    r = _ok("resume", out, "-q")
    res = _result(out)
    assert res["n_evaluations"] == 12 and res["n_simulated"] == 0 and "best loss" in r.stdout


def test_evaluator_choice_and_overrides(config):
    from mechcalib.config import load_config
    from mechcalib.execution import DaskEvaluator, PoolEvaluator, SerialEvaluator
    from mechcalib.runs import apply_overrides, build_evaluator, cli_overrides

    cfg = load_config(config)
    ev = build_evaluator(cfg)
    assert isinstance(ev, SerialEvaluator) and ev.timeout is None
    pooled = apply_overrides(cfg, cli_overrides(budget=7, seed=9, workers=3, scheduler=None, timeout=5.0))
    assert pooled.budget.max_evals == 7 and pooled.seed == 9 and pooled.evaluator.timeout == 5.0
    ev = build_evaluator(pooled)
    assert isinstance(ev, PoolEvaluator) and ev.n_workers_ == 3 and ev.timeout == 5.0
    ev = build_evaluator(
        apply_overrides(
            cfg, cli_overrides(budget=None, seed=None, workers=None, scheduler="tcp://10.0.0.5:8786", timeout=None)
        )
    )
    assert isinstance(ev, DaskEvaluator) and ev.address == "tcp://10.0.0.5:8786"  # connects on first use only
    with pytest.raises(mc.ConfigurationError, match="not both"):
        cli_overrides(budget=None, seed=None, workers=2, scheduler="tcp://x:1", timeout=None)
