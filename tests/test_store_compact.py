"""Compaction of finished runs in the run store: what is kept, and every reader's totals and curves."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import mechcalib as mc
from engine_helpers import faulty_problem
from mechcalib import ConfigurationError
from mechcalib.cli import app
from mechcalib.optimizers import RandomSearch
from mechcalib.runs import (
    RunDirError,
    export_run,
    resume_run,
    run_config,
    run_summary,
    write_report,
)
from mechcalib.storage import RunSpec, RunStore
from mechcalib.storage.compaction import ACTIVE_GAP_S

N_EVALS = 300


def _study(path: Path, name: str = "study", seed: int = 1, n: int = N_EVALS) -> None:
    """A random search on a line model that fails for a < 0.2 (about a fifth of the evaluations)."""
    with RunStore(path) as store:
        mc.calibrate(
            faulty_problem(hang_s=0.0, keep_responses=True),
            RandomSearch(batch_size=10, seed=seed),
            max_evals=n,
            store=store,
            run_name=name,
        )


def _snapshot(store: RunStore, run: str) -> dict:
    info = store.run(run)
    return {
        "n_evals": info.n_evals,
        "n_failed": info.n_failed,
        "best_loss": info.best_loss,
        "n_all": store.n_evaluations(run),
        "n_ok": store.n_evaluations(run, status="ok"),
        "n_failed_status": store.n_evaluations(run, status="failed"),
        "best": store.best(run),
        "failures": [(r.idx, r.status, r.error, r.loss) for r in store.failures(run)],
        "timing": store.timing(run),
        "checkpoints": store.checkpoints(run),
    }


def _file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.is_file())


@pytest.fixture
def study(tmp_path) -> Path:
    path = tmp_path / "study.sqlite"
    _study(path)
    return path


def test_compaction_keeps_failures_and_improvements_and_exact_totals(study):
    with RunStore(study) as store:
        full = store.evaluations("study")
        before = _snapshot(store, "study")
        idx_full, trace_full = store.trace("study")
        # the reference curve and kept set, from the full rows
        ok = np.array([r.status == "ok" for r in full])
        losses = np.array([r.loss for r in full])
        expected_trace = np.minimum.accumulate(np.where(ok, losses, np.inf))
        expected_kept, best, seen_ok = [], math.inf, False
        for r in full:
            if r.status != "ok" or not seen_ok or r.loss < best:
                expected_kept.append(r.idx)
            if r.status == "ok":
                seen_ok, best = True, min(best, r.loss)
        s = store.compact_run("study")
        after = _snapshot(store, "study")
        kept = store.evaluations("study")
        idx, trace = store.trace("study")
        info = store.run("study")

    # the study is a real one: failures, many dropped rows, several improvements
    assert [r.idx for r in full] == list(range(N_EVALS))
    n_fail = int((~ok).sum())
    assert 30 < n_fail < 100 and before["n_failed"] == n_fail
    n_impr = len(expected_kept) - n_fail
    assert 3 <= n_impr < 40
    # kept rows: exactly the failures and the improvements, in evaluation order, unchanged
    assert [r.idx for r in kept] == sorted(expected_kept)
    assert [(r.params, r.loss, r.status) for r in kept] == [
        (full[i].params, full[i].loss, full[i].status) for i in sorted(expected_kept)
    ]
    assert s.n_kept == len(expected_kept) and s.n_dropped == s.dropped_now == N_EVALS - len(expected_kept)
    assert (s.n_evals, s.n_ok, s.n_failed) == (N_EVALS, N_EVALS - n_fail, n_fail)
    assert info.compacted and info.n_dropped == s.n_dropped
    # totals, best, failures and timings read as before
    for k in ("n_evals", "n_failed", "best_loss", "n_all", "n_ok", "n_failed_status", "failures", "timing"):
        assert after[k] == before[k], k
    assert after["n_all"] == N_EVALS and after["n_ok"] == N_EVALS - n_fail
    assert after["best"].idx == before["best"].idx and after["best"].params == before["best"].params
    assert after["best"].loss == before["best"].loss == expected_trace[-1]
    # the best-so-far trace, full run and compacted run alike
    assert np.array_equal(idx_full, np.arange(N_EVALS)) and np.array_equal(idx, np.arange(N_EVALS))
    assert np.array_equal(trace_full, expected_trace) and np.array_equal(trace, expected_trace)
    # only the last checkpoint is kept
    assert len(before["checkpoints"]) > 1 and after["checkpoints"] == before["checkpoints"][-1:]
    assert s.checkpoints_dropped == len(before["checkpoints"]) - 1


def test_timing_is_the_sum_of_simulation_calls_and_the_active_span(study):
    with RunStore(study) as store:
        recs = store.evaluations("study")
        t = store.timing("study")
    # sets simulated by one call share its times: each call counts once
    calls = {(r.started, r.finished) for r in recs}
    assert len(calls) < len(recs)  # the study simulates batches, so per-set sums would double count
    assert t["seconds"] == pytest.approx(sum(b - a for a, b in calls), rel=1e-12, abs=1e-15)
    assert t["first_started"] == min(r.started for r in recs)
    assert t["last_finished"] == max(r.finished for r in recs)
    steps = np.diff([recs[0].started] + [r.finished for r in recs])
    assert t["active_seconds"] == pytest.approx(float(np.sum(steps[(steps >= 0) & (steps < ACTIVE_GAP_S)])))
    assert 0 < t["active_seconds"] <= t["last_finished"] - t["first_started"] + 1e-9
    assert t["n_live"] == N_EVALS


def test_compaction_is_idempotent(study):
    with RunStore(study) as store:
        first = store.compact_run("study", keep_checkpoints=0)
        rows = [(r.idx, r.loss) for r in store.evaluations("study")]
        second = store.compact_run("study", keep_checkpoints=0)
        assert second.dropped_now == 0 and second.checkpoints_dropped == 0
        assert [(r.idx, r.loss) for r in store.evaluations("study")] == rows
        assert store.checkpoints("study") == []
    for k in (
        "n_evals",
        "n_ok",
        "n_failed",
        "n_kept",
        "n_dropped",
        "seconds",
        "first_started",
        "last_finished",
        "active_seconds",
        "created",
    ):
        assert getattr(second, k) == getattr(first, k), k


def test_only_a_finished_or_failed_run_is_compacted(study):
    with RunStore(study) as store:
        info = store.run("study")
        with pytest.raises(ConfigurationError, match="keep_checkpoints must be an integer >= 0, got -1"):
            store.compact_run("study", keep_checkpoints=-1)
        rid = store.create_run(
            "live",
            RunSpec(
                optimizer="random",
                settings={},
                seed=1,
                termination={},
                evaluator={},
                space=info.space,
                fingerprint=None,
                config=None,
                versions={},
            ),
        )
        with pytest.raises(ConfigurationError, match="'live' .* is running; .*finish or resume it first"):
            store.compact_run("live")
        store.finish_run(rid, status="interrupted", n_batches=0)
        with pytest.raises(ConfigurationError, match="is interrupted; .*finish or resume it first"):
            store.compact_run(rid)
        store.finish_run(rid, status="failed", n_batches=0, error="boom")
        s = store.compact_run("live")  # a failed run without evaluations: nothing to drop
        assert (s.n_evals, s.n_kept, s.n_dropped) == (0, 0, 0)
        idx, best = store.trace("live")
        assert idx.size == 0 and best.size == 0
        assert store.timing("live")["seconds"] == 0.0
    with RunStore(study, readonly=True) as ro, pytest.raises(ConfigurationError, match="read-only"):
        ro.compact_run("study")


def test_a_compacted_run_cannot_be_resumed_nor_give_a_dataset(study, tmp_path):
    with RunStore(study) as store:
        store.compact_run("study")
        n_kept = len(store.evaluations("study"))
        with pytest.raises(ConfigurationError, match="'study' .* was compacted .*cannot be resumed"):
            mc.calibrate(
                faulty_problem(hang_s=0.0, keep_responses=True),
                RandomSearch(batch_size=10, seed=1),
                max_evals=N_EVALS + 20,
                store=store,
                run_name="study",
            )
        assert store.status("study") == "finished" and store.n_evaluations("study") == N_EVALS
        with pytest.raises(ConfigurationError, match="was compacted .*a dataset needs all its rows"):
            store.dataset("study")
        out = store.export_csv("study", tmp_path / "kept.csv")
    assert len(out.read_text().splitlines()) == n_kept + 1


def test_an_older_store_without_the_table_opens(study):
    con = sqlite3.connect(study)
    con.execute("DROP TABLE compactions")
    con.commit()
    con.close()
    with RunStore(study, readonly=True) as ro:  # read-only: the table is not created, queries still work
        info = ro.run("study")
        assert info.n_evals == N_EVALS and not info.compacted and info.n_dropped == 0
        assert ro.n_evaluations("study", status="ok") == N_EVALS - info.n_failed
        assert ro.trace("study")[1].size == N_EVALS and ro.timing("study")["n_live"] == N_EVALS
    with RunStore(study) as store:  # writable: the table is added
        s = store.compact_run("study")
        assert store.run("study").compacted and store.n_evaluations("study") == N_EVALS and s.n_dropped > 0
    con = sqlite3.connect(study)
    assert con.execute("SELECT COUNT(*) FROM compactions").fetchone()[0] == 1
    con.close()


def test_vacuum_shrinks_the_file(study):
    with RunStore(study) as store:
        store._q("PRAGMA wal_checkpoint(TRUNCATE)")
        size0 = _file_bytes(study)
        s = store.compact_run("study")
        store.vacuum()
        size1 = _file_bytes(study)
        assert store.n_evaluations("study") == N_EVALS
    # about one row in six is kept; the responses make up most of the file
    assert s.n_kept < N_EVALS / 3
    assert size1 < 0.6 * size0, (size0, size1)


def test_cli_compact(tmp_path):
    path = tmp_path / "s.sqlite"
    _study(path, "a", seed=1, n=120)
    _study(path, "b", seed=2, n=120)
    with RunStore(path) as store:
        store.finish_run(store.run("b").id, status="failed", n_batches=12, error="stopped")
        n_kept_a = len([r for r in store.evaluations("a") if r.status != "ok"])
    runner = CliRunner()
    r = runner.invoke(app, ["compact", str(path)])
    assert r.exit_code == 2 and "--all-finished" in r.output
    r = runner.invoke(app, ["compact", str(path), "--run", "nope"])
    assert r.exit_code == 2 and "no run 'nope'" in r.output
    with RunStore(path) as store:
        store.finish_run(store.run("a").id, status="interrupted", n_batches=12)
    r = runner.invoke(app, ["compact", str(path), "--run", "b", "--run", "a"])  # nothing done when one is refused
    assert r.exit_code == 2 and "'a'" in r.output and "is interrupted" in r.output
    with RunStore(path) as store:
        assert not store.run("b").compacted
        store.finish_run(store.run("a").id, status="finished", n_batches=12, stop_reason="max_evals")
    r = runner.invoke(app, ["compact", str(tmp_path / "missing.sqlite"), "--all-finished"])
    assert r.exit_code == 2 and "no run store" in r.output
    r = runner.invoke(app, ["compact", str(path), "--all-finished", "--vacuum"])
    assert r.exit_code == 0, r.output
    assert "MiB before" in r.output and " a " in r.output and " b " not in r.output
    with RunStore(path, readonly=True) as store:
        a, b = store.run("a"), store.run("b")
        assert a.compacted and not b.compacted and a.n_evals == 120
        assert a.n_failed < len(store.evaluations("a")) < 120 and n_kept_a == a.n_failed
    r = runner.invoke(app, ["compact", str(path), "--run", "b", "--keep-checkpoints", "0"])  # a failed run by name
    assert r.exit_code == 0, r.output
    with RunStore(path, readonly=True) as store:
        assert store.run("b").compacted and store.checkpoints("b") == []


CONFIG = """
seed = 3
[model]
name = "linear"
[parameters.b]
lower = 1.0
upper = 10.0
[[experiments]]
path = "{data}"
name = "measured"
channels = {{ y = ["x", "y_measured"] }}
[objective]
name = "f1"
[optimizer]
name = "random"
settings = {{ batch_size = 10 }}
[budget]
max_evals = 200
[output]
plots = false
"""


def test_run_folder_readers_of_a_compacted_run(tmp_path):
    data = Path(__file__).resolve().parents[1] / "examples" / "data" / "linear_measured.csv"
    cfg = tmp_path / "lin.toml"
    cfg.write_text(CONFIG.format(data=data.as_posix()))
    out = tmp_path / "run"
    rec = run_config(cfg, out)
    full = run_summary(out)
    sim_s = rec.summary["timings"]["simulation_seconds"]
    with RunStore(out / "store.sqlite") as store:
        s = store.compact_run(rec.summary["run_name"])
    assert s.n_dropped > 100
    summ = run_summary(out)
    for k in ("n_evaluations", "n_failed", "best", "best_loss", "best_index", "failures"):
        assert summ[k] == full[k], k
    assert summ["n_evaluations"] == 200
    with RunStore(out / "store.sqlite", readonly=True) as store:
        assert store.timing(rec.summary["run_name"])["seconds"] == sim_s
    res = export_run(out)
    assert res["rows"] == s.n_kept == len(res["table"].read_text().splitlines()) - 1
    with pytest.raises(ConfigurationError, match="a dataset needs all its rows"):
        export_run(out, dataset=tmp_path / "d.npz")
    with pytest.raises(RunDirError, match="was compacted .*cannot be resumed"):
        resume_run(out, budget=300)
    pytest.importorskip("matplotlib")
    paths = write_report(out)
    assert paths[0].name == "convergence.png" and paths[0].stat().st_size > 0
