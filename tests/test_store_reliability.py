"""Stores on users' machines: read-only folders, damaged files, a deleted write-ahead log and a full disk.

Root's writes are not stopped by file modes, so the read-only and full-disk cases run in a private mount
namespace (``unshare -rm``: a read-only bind mount, a small tmpfs) where the sandbox allows it, and
otherwise through injected failures (the connection's writes raising what SQLite raises then)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import mechcalib as mc
from mechcalib.cli import app
from mechcalib.runs import RESULT_FILE, STORE_FILE, repair_run, run_config
from mechcalib.storage import RunStore
from mechcalib.storage.integrity import StoreDamagedError, StoreFullError, StoreReadOnlyError, counts_path

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


def _invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, dict]:
    """A finished 60-evaluation run folder and its result (the uninterrupted reference)."""
    root = tmp_path_factory.mktemp("ref")
    cfg = root / "duff.toml"
    cfg.write_text(CONFIG.format(budget=60))
    rec = run_config(cfg, root / "run")
    return root / "run", rec.summary


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _same_result(summary: dict, ref: dict) -> None:
    for k in ("best", "best_loss", "n_evaluations", "n_failed", "stop_reason", "seed"):
        assert summary[k] == ref[k], k


def _unshare(script: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        ["unshare", "-rm", "bash", "-c", script], env=env, capture_output=True, text=True, timeout=timeout
    )


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        r = _unshare("d=$(mktemp -d) && mount --bind -o ro $d $d && ! touch $d/x 2>/dev/null", timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0


needs_mount = pytest.mark.skipif(not _can_mount(), reason="no private mount namespace (unshare -rm) here")
CLI = f"{sys.executable} -m mechcalib.cli"


# ------------------------------------------------------------------------------------------------------
# Item 1: read-only stores
# ------------------------------------------------------------------------------------------------------
# the commands run in one process inside the namespace (one import instead of one per command)
COMMANDS = textwrap.dedent(
    """
    import sys
    from typer.testing import CliRunner
    from mechcalib.cli import app
    run, out = sys.argv[1], sys.argv[2]
    for name, args in [
        ("show", ["show", run, "--json"]),
        ("export", ["export", run, "--out", out + "/e.csv"]),
        ("export_default", ["export", run]),
        ("report", ["report", run, "--out", out + "/plots"]),
        ("dry", ["compact", run, "--all-finished", "--dry-run"]),
        ("resume", ["resume", run, "--budget", "70"]),
    ]:
        r = CliRunner().invoke(app, args)
        print(f"{name}={r.exit_code}")
        print(r.output)
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            print("Traceback", repr(r.exception))
        if name == "show":
            open(out + "/show.json", "w").write(r.output)
    """
)


@needs_mount
def test_read_only_finished_run_shown_exported_reported(finished, tmp_path):
    run = _copy(finished[0], tmp_path / "archived")
    out = tmp_path / "elsewhere"
    out.mkdir()
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    script = tmp_path / "commands.py"
    script.write_text(COMMANDS)
    r = _unshare(f"mount --bind -o ro {run} {run} || exit 99\n{sys.executable} {script} {run} {out}\n")
    text = r.stdout + r.stderr
    assert r.returncode == 0 and "Traceback" not in text, text
    for ok in ("show=0", "export=0", "report=0", "dry=0"):
        assert ok in text, text
    assert json.loads((out / "show.json").read_text())["n_evaluations"] == 60
    assert len((out / "e.csv").read_text().splitlines()) == 61
    assert (out / "plots" / "convergence.png").is_file()
    assert "export_default=1" in text and "read-only" in text and "--out" in text
    assert "resume=2" in text and "copy the folder" in text
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_read_only_open_falls_back_to_immutable_only_without_a_wal(finished, tmp_path, monkeypatch):
    """Injected: SQLite cannot open the file read-only in the usual way (as in a read-only folder, where
    its shared-memory file cannot be made)."""
    import mechcalib.storage.integrity as integrity

    run = _copy(finished[0], tmp_path / "run")
    real = sqlite3.connect
    opened: list[str] = []

    class RefusingConnection:
        def __init__(self, database: str, **kw):
            self.con = real(database, **kw)
            self.uri = database

        def execute(self, *a):
            if "immutable" not in self.uri:
                raise sqlite3.OperationalError("unable to open database file")
            return self.con.execute(*a)

        def __getattr__(self, name):
            return getattr(self.con, name)

    def fake_connect(database, **kw):
        opened.append(database)
        return RefusingConnection(database, **kw)

    monkeypatch.setattr(integrity.sqlite3, "connect", fake_connect)
    with RunStore(run / STORE_FILE, readonly=True) as st:
        assert st.run("duff").n_evals == 60 and st.damage == []
        with pytest.raises(StoreReadOnlyError, match="cannot be written"):
            st.touch(1, 3)  # a write through a read-only connection says so, naming the file
    assert "immutable=1" in opened[-1]
    (run / f"{STORE_FILE}-wal").write_bytes(b"x" * 100)  # a killed run's log: immutable would ignore it
    with pytest.raises(StoreReadOnlyError, match="write-ahead log"):
        RunStore(run / STORE_FILE, readonly=True)


def test_compact_dry_run_says_what_compaction_drops_and_changes_nothing(finished, tmp_path):
    run = _copy(finished[0], tmp_path / "run")
    before = (run / STORE_FILE).read_bytes()
    r = _invoke("compact", run, "--all-finished", "--dry-run")
    assert r.exit_code == 0, r.output
    assert (run / STORE_FILE).read_bytes() == before and "dry run" in r.output
    planned = [ln for ln in r.output.splitlines() if "duff" in ln][0]
    r = _invoke("compact", run, "--all-finished")
    assert r.exit_code == 0, r.output
    assert [ln for ln in r.output.splitlines() if "duff" in ln][0] == planned


# ------------------------------------------------------------------------------------------------------
# Item 2: damage detected and salvaged
# ------------------------------------------------------------------------------------------------------
def _page_of(path: Path, needle: bytes) -> int:
    data = path.read_bytes()
    at = data.find(needle)
    assert at > 0, needle
    return at // 4096


def _damage(run: Path, kind: str) -> None:
    db = run / STORE_FILE
    if kind == "json":  # one evaluation's params made invalid JSON, the file itself sound
        with sqlite3.connect(db) as con:
            con.execute("UPDATE evaluations SET params = substr(params, 1, 7) || '#' WHERE idx = 20")
        con.close()
        return
    with sqlite3.connect(db) as con:
        params = con.execute("SELECT params FROM evaluations WHERE idx = 30").fetchone()[0]
    con.close()
    data = bytearray(db.read_bytes())
    rng = np.random.default_rng(5)
    if kind == "truncated":
        data = data[: len(data) * 2 // 3]
    elif kind == "header":
        data[:100] = rng.integers(0, 256, 100, dtype=np.uint8).tobytes()
    elif kind == "page":  # the table page holding evaluation 30 (its params are in the table only)
        page = _page_of(db, params.encode())
        data[page * 4096 : (page + 1) * 4096] = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("kind", ["truncated", "page", "header", "json"])
def test_damaged_store_gives_a_clear_error_and_repair_salvages_it(finished, tmp_path, kind):
    ref_dir, ref = finished
    run = _copy(ref_dir, tmp_path / "run")
    _damage(run, kind)
    for cmd in (("show", run), ("export", run, "--out", tmp_path / "e.csv"), ("resume", run)):
        r = _invoke(*cmd)
        if kind == "json" and cmd[0] == "show":  # the best and the failures still read: a warning
            assert r.exit_code == 0 and "damaged" in r.output and "mechcalib repair" in r.output, r.output
            continue
        assert r.exit_code == 2, (cmd, r.output)
        assert "damaged" in r.output and "mechcalib repair" in r.output and str(STORE_FILE) in r.output, r.output
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    r = _invoke("repair", run)
    assert r.exit_code == 0, r.output
    salvage = tmp_path / "run.repaired"
    with RunStore(salvage / STORE_FILE, readonly=True) as st:
        kept = st.run("duff").n_evals
        assert st.damage == []
    lost = 60 - kept
    assert f"{kept} of 60 recorded evaluations kept, {lost} lost" in r.output, r.output
    if kind == "json":
        assert lost == 1
    if kind in ("page", "truncated"):
        assert 0 < lost < 60
    if kind == "header":
        assert lost == 0 and "header" in r.output
    r = _invoke("resume", salvage, "-q")
    assert r.exit_code == 0, r.output
    summary = json.loads((salvage / RESULT_FILE).read_text())
    _same_result(summary, ref)
    assert summary["n_simulated"] + summary["n_cached"] >= lost  # what was lost is evaluated again


def test_damage_that_spares_the_tables_is_warned_about_and_blocks_resume(finished, tmp_path, caplog):
    run = _copy(finished[0], tmp_path / "run")
    db = run / STORE_FILE
    with sqlite3.connect(db) as con:
        root = con.execute("SELECT rootpage FROM sqlite_master WHERE name='evaluations_key'").fetchone()[0]
    con.close()
    data = bytearray(db.read_bytes())
    data[(root - 1) * 4096 + 200 : root * 4096] = b"\x00" * (4096 - 200)  # the cache-key index, not a table
    db.write_bytes(bytes(data))
    with RunStore(db, readonly=True) as st:
        assert st.damage  # PRAGMA quick_check complains
        assert st.run("duff").n_evals == 60  # while the tables still read
    assert "mechcalib repair" in caplog.text
    r = _invoke("resume", run)
    assert r.exit_code == 2 and "damaged" in r.output and "repair" in r.output, r.output


def test_repair_refuses_to_overwrite_and_reports_an_unreadable_file(finished, tmp_path):
    run = _copy(finished[0], tmp_path / "run")
    (tmp_path / "run.repaired").mkdir()
    r = _invoke("repair", run)
    assert r.exit_code == 2 and "--out" in r.output
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"\x00" * 1000)
    with pytest.raises(StoreDamagedError, match="nothing can be salvaged"):
        repair_run(junk)


# ------------------------------------------------------------------------------------------------------
# Item 3: a deleted write-ahead log is noticed
# ------------------------------------------------------------------------------------------------------
PROBLEM = textwrap.dedent(
    """
    import time
    import numpy as np
    import mechcalib as mc
    from mechcalib.optimizers import RandomSearch

    def f(x):
        time.sleep(0.001)
        return float(np.sum((x - 0.3) ** 2))

    prob = mc.FunctionProblem(f, mc.ParameterSpace.from_bounds([0.0] * 3, [1.0] * 3), vectorized=False)
    prob.fingerprint = lambda: "wal-test"  # the same problem in the writer's process and the test's
    """
)
WRITER = PROBLEM + (
    "import sys\nfrom mechcalib.storage import RunStore\n"
    "mc.calibrate(prob, RandomSearch(seed=4, batch_size=10), max_evals=300, "
    "store=RunStore(sys.argv[1], sync_seconds=0), run_name='r')\n"
)


def _problem():
    """The writer's problem and optimiser."""
    ns: dict = {}
    exec(PROBLEM, ns)
    return ns["prob"], ns["RandomSearch"](seed=4, batch_size=10)


def test_deleted_wal_after_a_kill_is_detected_with_the_count(tmp_path, caplog):
    db = tmp_path / "s.sqlite"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], env=env)
    reader = None
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not counts_path(db).exists():
            time.sleep(0.02)
        # a reader holding a snapshot (a notebook, `show` in a loop) keeps the checkpoints from moving
        # rows into the file, as a busy cluster file system would
        # (read-only: a closing reader must not checkpoint the log into the file either)
        reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM evaluations").fetchone()
        while time.time() < deadline:
            rec = json.loads(counts_path(db).read_text())["runs"]["1"]["n_evals"]
            if rec >= 100:
                break
            time.sleep(0.02)
        assert child.poll() is None, "the writer ended before it could be killed"
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
        if reader is not None:
            reader.close()
    recorded = json.loads(counts_path(db).read_text())["runs"]["1"]["n_evals"]
    for suffix in ("-wal", "-shm"):  # "temporary files" cleaned by the user
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    prob, opt = _problem()
    try:
        with RunStore(db) as st:
            held = st.n_evaluations("r")
        with caplog.at_level("WARNING"):
            res = mc.calibrate(prob, opt, max_evals=300, store=str(db), run_name="r", resume=True)
    except StoreDamagedError as exc:
        # the kill fell inside a checkpoint: part of the log's pages were copied into the file, which without
        # the log is inconsistent (found when a damaged page is read). The store says so and names the
        # repair, which salvages what is readable
        assert "mechcalib repair" in str(exc)
        from mechcalib.storage.repair import repair_store

        report = repair_store(db, tmp_path / "repaired.sqlite")
        assert report.evaluations < recorded and report.target.is_file()
        return
    assert held < recorded
    assert f"{recorded - held} evaluations of run 'r'" in caplog.text, caplog.text
    assert "evaluations will be simulated again" in caplog.text
    ref = mc.calibrate(*_problem(), max_evals=300)
    assert res.best_loss == ref.best_loss and np.array_equal(res.best_x, ref.best_x)
    assert res.n_simulated == 300 - held


def test_counts_file_follows_each_batch(tmp_path, monkeypatch):
    db = tmp_path / "s.sqlite"
    prob, opt = _problem()
    seen: list[int] = []
    covered: list[int] = []

    def cb(b, optimizer, hist):
        rec = json.loads(counts_path(db).read_text())["runs"]["1"]
        seen.append(rec["n_evals"])
        covered.append(max(rec["n_evals"], rec.get("expected", 0)))

    with RunStore(db) as st:  # after every batch by default, spaced by what a sync takes on a fast model
        mc.calibrate(prob, opt, max_evals=50, store=st, run_name="r", callback=cb)
        assert covered == [10, 20, 30, 40, 50]  # each batch recorded before its commit
        assert all(b - 10 <= n <= b for n, b in zip(seen, covered, strict=True))
        assert st.recorded_evaluations(1) == 50
    seen.clear()
    monkeypatch.setattr("mechcalib.storage.sqlite.SYNC_SPACING", 0.0)
    db = tmp_path / "u.sqlite"
    with RunStore(db) as st:  # not spaced: the count after every batch
        mc.calibrate(*_problem(), max_evals=50, store=st, run_name="r", callback=cb)
        assert seen == [10, 20, 30, 40, 50]
    seen.clear()
    db = tmp_path / "t.sqlite"
    with RunStore(db, sync_seconds=3600) as st:  # at most once an hour (the first batch), and at the end
        mc.calibrate(*_problem(), max_evals=50, store=st, run_name="r", callback=cb)
        # between syncs, each batch's record (made before its first commit) confirms the batches before it
        assert seen == [10, 10, 20, 30, 40]
        assert st.recorded_evaluations(1) == 50


# ------------------------------------------------------------------------------------------------------
# Item 4: a full disk
# ------------------------------------------------------------------------------------------------------
class FillingConnection:
    """A connection whose evaluation inserts fail as SQLite's do on a full disk after ``room`` of them."""

    def __init__(self, con: sqlite3.Connection, room: int) -> None:
        self.con, self.room = con, room

    def execute(self, sql: str, *args):
        if sql.startswith("INSERT INTO evaluations"):
            if self.room <= 0:
                raise sqlite3.OperationalError("database or disk is full")
            self.room -= 1
        return self.con.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.con, name)


def test_full_disk_stops_the_run_cleanly_and_resume_loses_nothing(tmp_path):
    db = tmp_path / "s.sqlite"
    st = RunStore(db)
    st._con = FillingConnection(st._con, room=37)  # type: ignore[assignment]
    with pytest.raises(StoreFullError) as info:
        mc.calibrate(*_problem(), max_evals=120, store=st, run_name="r")
    msg = str(info.value)
    assert str(db) in msg and "full" in msg and "MiB free" in msg and "mechcalib resume" in msg
    st.close()
    with RunStore(db) as again:  # space freed
        assert again.n_evaluations("r") == 37
        res = mc.calibrate(*_problem(), max_evals=120, store=again, run_name="r", resume=True)
    ref = mc.calibrate(*_problem(), max_evals=120)
    assert res.best_loss == ref.best_loss and np.array_equal(res.best_x, ref.best_x)
    assert res.n_simulated == 120 - 37 and res.n_replayed == 37


@pytest.mark.slow
@needs_mount
def test_full_disk_on_a_small_file_system_then_resume(finished, tmp_path):
    ref_dir, _ = finished
    cfg = tmp_path / "big.toml"
    cfg.write_text(CONFIG.format(budget=200).replace("plots = false", "plots = false\nkeep_responses = true"))
    ref = run_config(cfg, tmp_path / "ref").summary
    fs = tmp_path / "fs"
    fs.mkdir()
    r = _unshare(
        f"mount -t tmpfs -o size=2m tmpfs {fs} || exit 99\n"
        f"head -c 1900000 /dev/zero > {fs}/filler\n"
        f"{CLI} run {cfg} --out {fs}/run -q; echo run=$?\n"
        f"{CLI} show {fs}/run --json > {tmp_path}/kept.json\n"
        f"rm {fs}/filler\n"
        f"{CLI} resume {fs}/run -q; echo resume=$?\n"
        f"cp {fs}/run/{RESULT_FILE} {tmp_path}/result.json\n",
        timeout=300,
    )
    text = r.stdout + r.stderr
    assert "run=1" in text and "is full" in text and "Traceback" not in text, text
    assert "resume=0" in text, text
    kept = json.loads((tmp_path / "kept.json").read_text())["n_evaluations"]
    summary = json.loads((tmp_path / "result.json").read_text())
    _same_result(summary, ref)
    assert 0 < kept < 200 and summary["n_replayed"] == kept


def test_resume_of_a_run_killed_before_it_was_recorded_starts_it(finished, tmp_path):
    ref_dir, ref = finished
    cfg = tmp_path / "duff.toml"
    cfg.write_text(CONFIG.format(budget=60))
    for what in ("empty store", "no store"):
        run = tmp_path / what.replace(" ", "_")
        run.mkdir()
        shutil.copy(ref_dir / "run.json", run / "run.json")
        man = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**man, "config_path": str(cfg)}))
        if what == "empty store":
            RunStore(run / STORE_FILE).close()  # the tables, no run: killed right after creating the store
        r = _invoke("resume", run, "-q")
        assert r.exit_code == 0, r.output
        _same_result(json.loads((run / RESULT_FILE).read_text()), ref)


def test_every_public_store_method_translates_errors_by_construction(tmp_path):
    """A method added to the store later is guarded without being listed anywhere; private helpers are not
    wrapped (their errors are translated once, by the public method that calls them)."""
    from mechcalib.storage.integrity import is_guarded

    class LaterStore(RunStore):
        def added_query(self) -> None:
            raise sqlite3.DatabaseError("file is not a database")

        def added_scan(self):
            yield 1
            raise sqlite3.DatabaseError("database disk image is malformed")

        def _added_helper(self) -> None:
            raise sqlite3.DatabaseError("file is not a database")

    with LaterStore(tmp_path / "s.db") as store:
        with pytest.raises(StoreDamagedError, match=r"s\.db is damaged .*in added_query\(\).*mechcalib repair"):
            store.added_query()
        with pytest.raises(StoreDamagedError, match=r"in added_scan\(\)"):
            list(store.added_scan())
        with pytest.raises(sqlite3.DatabaseError) as raised:
            store._added_helper()
        assert not isinstance(raised.value, StoreDamagedError)
    for cls in (RunStore, LaterStore):
        for name in ("__init__", "runs", "add_evaluation", "export_csv", "dataset", "iter_checkpoints"):
            assert is_guarded(getattr(cls, name)), (cls.__name__, name)
        assert not is_guarded(cls._q) and not is_guarded(cls._tx)
    # the subclass kept the inherited wrappers as they were: one layer each, not two
    assert LaterStore.runs is RunStore.runs and LaterStore.__init__ is RunStore.__init__
    assert not is_guarded(LaterStore.runs.__wrapped__)
