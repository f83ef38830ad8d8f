"""No silent loss of committed evaluations: a run killed after a committed batch whose write-ahead log is
then deleted (also while a reader held a snapshot), an emptied (0-byte) store under a finished run, and the
``archive`` command that copies a run folder without leaving its log behind."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mechcalib as mc
from engine_helpers import CountingProblem, count_lines, kill_after, python_command, stored_evaluations
from mechcalib.cli import app
from mechcalib.optimizers import make_optimizer
from mechcalib.runs import RESULT_FILE, STORE_FILE, archive_run, run_config
from mechcalib.runs.loss import folder_loss
from mechcalib.storage import RunStore
from mechcalib.storage.integrity import EvaluationLoss, counts_path, evaluation_loss, write_counts

runner = CliRunner()
SRC = Path(__file__).resolve().parents[1] / "src"

CONFIG = """
name = "duff"
seed = 3
[model]
name = "duffing"
preset = "default"
[[experiments]]
kind = "synthetic"
name = "synth"
noise = 0.02
seed = 7
conditions = {{ t_end = 5.0, fs = 20.0 }}
[objective]
name = "overlap_rss"
options = {{ n_points = 50 }}
[optimizer]
name = "pso"
settings = {{ swarm_size = 6 }}
[budget]
max_evals = {budget}
[evaluator]
kind = "serial"
[output]
plots = false
"""
COMPARED = ("best", "best_loss", "n_evaluations", "n_failed", "stop_reason", "seed")


class _Out:
    """A command's exit code and its output with the console's line wrapping undone."""

    def __init__(self, r) -> None:
        self.exit_code = r.exit_code
        self.raw = r.output
        self.output = " ".join(r.output.split())


def _invoke(*args: object) -> _Out:
    r = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return _Out(r)


def _unwal(db: Path) -> None:
    for suffix in ("-wal", "-shm"):  # "temporary files" cleaned by the user, or a copy made without them
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def _snapshot(db: Path) -> sqlite3.Connection:
    """A reader holding a snapshot (a notebook, `show` in a loop): the checkpoints cannot fold the log in."""
    reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM evaluations").fetchone()
    return reader


def _wait_for(db: Path, run: str, n: int, child: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while stored_evaluations(str(db), run) < n and time.monotonic() < deadline:
        assert child.poll() is None, "the writer ended too early"
        time.sleep(0.01)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("ref")
    cfg = root / "duff.toml"
    cfg.write_text(CONFIG.format(budget=300))
    return run_config(cfg, root / "run").summary


def _killed_run(tmp_path: Path, reader: bool) -> tuple[Path, int]:
    """A CLI run killed (SIGKILL) after some committed batches, optionally while the test held a reader's
    snapshot; returns the folder and how many evaluations a reader counted at the kill."""
    cfg = tmp_path / "duff.toml"
    cfg.write_text(CONFIG.format(budget=5000))
    run = tmp_path / "run"
    db = run / STORE_FILE
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    child = subprocess.Popen(
        [sys.executable, "-m", "mechcalib.cli", "run", str(cfg), "--out", str(run), "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    snap = None
    try:
        _wait_for(db, "duff", 20, child)
        snap = _snapshot(db) if reader else None
        kill_after(child, str(db), "duff", 150)
    finally:
        if snap is not None:
            snap.close()
    return run, stored_evaluations(str(db), "duff")


@pytest.mark.parametrize("reader", [True, False], ids=["reader", "no-reader"])
def test_deleted_wal_after_a_kill_is_named_with_its_count_before_anything_is_simulated(reference, tmp_path, reader):
    run, seen = _killed_run(tmp_path, reader)
    db = run / STORE_FILE
    _unwal(db)
    with sqlite3.connect(db) as con:
        sound = con.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    if not sound:  # killed while a checkpoint wrote the file: SQLite needed the log to finish it
        r = _invoke("resume", run, "-q")
        assert r.exit_code != 0 and "damaged" in r.output and "mechcalib repair" in r.output, r.output
        return
    held = stored_evaluations(str(db), "duff")
    if reader:
        assert held < seen  # the reader kept the log from being folded into the file: committed rows are gone
    loss = folder_loss(run)
    if loss is None:  # nothing committed was lost: every counted evaluation is in the file
        assert held == seen
    else:
        assert held + loss.total >= seen  # the named loss covers every committed evaluation that is gone
        assert loss.total - loss.possible == loss.definite
        r = _invoke("resume", run, "-q")
        assert r.exit_code == 1, r.output
        assert f"{loss.total}" in r.output and "--accept-loss" in r.output and STORE_FILE in r.output, r.output
        assert "Nothing was simulated" in r.output
        assert stored_evaluations(str(db), "duff") == held  # refused before anything was simulated
        s = _invoke("show", run)
        assert s.exit_code == 0 and "warning:" in s.output and f"{loss.definite or loss.possible}" in s.output
    r = _invoke("resume", run, "--budget", 300, "-q", *(["--accept-loss"] if loss else []))
    assert r.exit_code == 0, r.output
    summary = json.loads((run / RESULT_FILE).read_text())
    for k in COMPARED:
        assert summary[k] == reference[k], k
    assert summary["n_replayed"] == held and summary["n_simulated"] + summary["n_cached"] == 300 - held
    assert folder_loss(run) is None
    assert _invoke("resume", run, "-q").exit_code == 0  # accepted once: no refusal afterwards


def test_python_resume_warns_with_the_count_before_simulating(tmp_path):
    """From Python (`calibrate(..., resume=True)`): the loss is logged with its count before the first
    simulation (counted by the problem's counter file)."""
    db, counter = tmp_path / "s.sqlite", tmp_path / "count.txt"
    child = subprocess.Popen(python_command(f"h.child_run({str(db)!r}, 'r', {str(counter)!r}, 400, 0.005)"))
    snap = None
    try:
        _wait_for(db, "r", 20, child)
        snap = _snapshot(db)
        kill_after(child, str(db), "r", 100)
    finally:
        if snap is not None:
            snap.close()
    seen = stored_evaluations(str(db), "r")
    _unwal(db)
    held = stored_evaluations(str(db), "r")
    assert held < seen
    n0 = count_lines(counter)
    said: list[tuple[int, str]] = []

    class Said(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append((count_lines(counter) - n0, record.getMessage()))

    handler = Said(logging.WARNING)
    logging.getLogger("mechcalib").addHandler(handler)
    try:
        res = mc.calibrate(
            CountingProblem(counter=str(counter)),
            make_optimizer("pso", seed=7),
            max_evals=400,
            store=str(db),
            run_name="r",
            cache=False,
        )
    finally:
        logging.getLogger("mechcalib").removeHandler(handler)
    lost = [(sims, msg) for sims, msg in said if "will be simulated again" in msg]
    assert lost and lost[0][0] == 0, said  # said before any simulation
    assert f"{seen - held} evaluations" in lost[0][1] or "up to" in lost[0][1], lost
    assert res.n_replayed == held and res.n_simulated == 400 - held


def test_counts_file_covers_every_committed_evaluation_as_it_is_committed(tmp_path):
    """After each commit (seen from ``on_evaluation``), the counts file already records the batch: its
    expected count covers what the store holds, and its confirmed count every earlier batch."""
    db = tmp_path / "s.sqlite"
    seen: list[tuple[int, int, int]] = []

    def peek(idx, batch, outcome):
        rec = json.loads(counts_path(db).read_text())["runs"]["1"]
        held = st.n_evaluations("r")
        seen.append((held, rec["n_evals"], rec.get("expected", rec["n_evals"])))

    with RunStore(db, sync_seconds=3600) as st:  # recorded every batch, whatever the sync's pace
        mc.calibrate(
            CountingProblem(),
            make_optimizer("random", seed=1, batch_size=10),
            max_evals=30,
            store=st,
            run_name="r",
            on_evaluation=peek,
        )
    assert len(seen) == 30
    for i, (held, confirmed, expected) in enumerate(seen):
        assert held == i + 1 and expected >= held and confirmed == 10 * (i // 10), seen
    rec = json.loads(counts_path(db).read_text())["runs"]["1"]
    assert rec["n_evals"] == 30 and "expected" not in rec


def test_emptied_store_under_a_finished_run_is_refused_with_the_count(reference, tmp_path):
    cfg = tmp_path / "duff.toml"
    cfg.write_text(CONFIG.format(budget=60))
    run = tmp_path / "run"
    run_config(cfg, run)
    db = run / STORE_FILE
    _unwal(db)
    db.write_bytes(b"")  # emptied: a failed copy, a cleaned disk
    r = _invoke("resume", run, "-q")
    assert r.exit_code == 1, r.output
    assert "60 evaluations" in r.output and "emptied or replaced" in r.output and "--accept-loss" in r.output
    assert db.stat().st_size == 0  # nothing was simulated, nothing written
    s = _invoke("show", run)
    assert s.exit_code != 0 and "60 evaluations" in s.output and STORE_FILE in s.output, s.output
    r = _invoke("resume", run, "-q", "--accept-loss")
    assert r.exit_code == 0, r.output
    summary = json.loads((run / RESULT_FILE).read_text())
    assert summary["n_evaluations"] == 60 and summary["n_simulated"] + summary["n_cached"] == 60
    assert (run / "result.before-loss.json").is_file()


def test_replaced_store_holding_fewer_evaluations_is_refused(tmp_path):
    cfg = tmp_path / "duff.toml"
    cfg.write_text(CONFIG.format(budget=60))
    small, run = tmp_path / "small", tmp_path / "run"
    run_config(cfg, small, budget=24)
    run_config(cfg, run)
    shutil.copy(small / STORE_FILE, run / STORE_FILE)  # an older copy put back over the store
    _unwal(run / STORE_FILE)
    r = _invoke("resume", run, "-q")
    assert r.exit_code == 1 and "36 evaluations" in r.output, r.output


@pytest.mark.parametrize("form", ["folder", "tar.gz", "zip"])
def test_archive_copies_the_log_and_the_copy_resumes_like_the_original(reference, tmp_path, form):
    run, seen = _killed_run(tmp_path, reader=True)  # much of the run lives only in the log
    dest = tmp_path / ("copy" if form == "folder" else f"copy.{form}")
    r = _invoke("archive", run, dest)
    assert r.exit_code == 0, r.output
    assert f"{seen} evaluations" in r.output
    if form == "tar.gz":
        with tarfile.open(dest) as tf:
            tf.extractall(tmp_path / "x", filter="data")
        dest = tmp_path / "x" / "copy"
    elif form == "zip":
        with zipfile.ZipFile(dest) as zf:
            zf.extractall(tmp_path / "x")
        dest = tmp_path / "x" / "copy"
    assert not Path(f"{dest / STORE_FILE}-wal").exists()  # one complete file
    assert (dest / "run.json").is_file() and counts_path(dest / STORE_FILE).is_file()
    _unwal(run / STORE_FILE)  # the original loses its log afterwards: the copy does not care
    shown = _invoke("show", dest, "--json")
    assert shown.exit_code == 0 and json.loads(shown.raw)["n_evaluations"] == seen
    assert json.loads(shown.raw)["lost"] is None
    r = _invoke("resume", dest, "--budget", 300, "-q")
    assert r.exit_code == 0, r.output
    summary = json.loads((dest / RESULT_FILE).read_text())
    for k in COMPARED:
        assert summary[k] == reference[k], k
    assert summary["n_replayed"] == seen


def test_archive_refuses_an_existing_destination_and_a_folder_without_a_store(tmp_path):
    (tmp_path / "empty").mkdir()
    r = _invoke("archive", tmp_path / "empty", tmp_path / "c")
    assert r.exit_code != 0 and "holds no run store" in r.output
    (tmp_path / "c").mkdir()
    store = tmp_path / "s.sqlite"
    RunStore(store).close()
    r = _invoke("archive", store, tmp_path / "c")
    assert r.exit_code != 0 and "exists" in r.output
    rep = archive_run(store, tmp_path / "copy.sqlite")
    assert rep.runs == 0 and (tmp_path / "copy.sqlite").is_file()


def test_loss_counts_tell_certain_from_possible(tmp_path):
    db = tmp_path / "s.sqlite"
    write_counts(db, 1, "r", 80, 90)  # 80 confirmed, a batch of 10 being committed
    assert evaluation_loss(db, "r", 90, wal_found=False) is None  # the batch is in the file
    assert evaluation_loss(db, "r", 80, wal_found=True) is None  # the log was replayed: never committed
    loss = evaluation_loss(db, "r", 80, wal_found=False)
    assert loss is not None and (loss.definite, loss.possible) == (0, 10) and "up to 10" in loss.describe()
    loss = evaluation_loss(db, "r", 20, wal_found=True)
    assert loss is not None and (loss.definite, loss.possible) == (60, 0) and "60 evaluations" in loss.describe()
    loss = evaluation_loss(db, "r", 0, wal_found=False, result_n=100)  # result.json says more: it counts
    assert loss is not None and loss.definite == 100 and loss.source == "result.json"
    assert "emptied or replaced" in loss.describe()
    assert evaluation_loss(db, "other", 0, wal_found=False) is None  # nothing recorded of that run
    assert EvaluationLoss(db, "r", 5, 5, 5, True, "x").total == 0
