"""The SQLite run store (:class:`RunStore`); the tables are described in :mod:`mechcalib.storage.schema`.

The database runs in WAL mode: readers (other processes included) never block the writer nor see a
half-written evaluation. ``durability="process"`` (``synchronous=NORMAL``) makes each commit survive a killed
process; ``"power"`` (``synchronous=FULL``) also a power cut, at the price of an fsync per evaluation.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import math
import os
import pickle
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError
from . import export
from .base import Store
from .codec import decode_response, dumps
from .compaction import ACTIVE_GAP_S, best_so_far, compact_sqlite, timing_of
from .integrity import (
    EvaluationLoss,
    GuardedMethods,
    connect_readonly,
    evaluation_loss,
    quick_check,
    recorded_counts,
    repair_hint,
    store_error,
    wal_has_frames,
    write_counts,
)
from .rows import (
    EVALUATION_ROW_COLUMNS,
    CompactionSummary,
    EvaluationRecord,
    EvaluationRow,
    RunInfo,
    RunSpec,
    alive,
    evaluation_columns_of,
    evaluation_record,
    nan,
    now,
    run_info,
)
from .schema import COMPACTION_COLS, EVAL_COLS, SCHEMA_VERSION, ensure_schema, run_sql

log = logging.getLogger(__name__)

_INSERT_EVALUATION = (
    f"INSERT INTO evaluations (run_id, {', '.join(EVALUATION_ROW_COLUMNS)}) "
    f"VALUES ({','.join('?' * (1 + len(EVALUATION_ROW_COLUMNS)))})"
)

# Re-exported: they were defined here before the store was split into modules.
__all__ = ["ACTIVE_GAP_S", "SCHEMA_VERSION", "CompactionSummary", "EvaluationRecord", "RunInfo", "RunStore"]


#: a sync after a batch waits at least this many times the last sync's duration since it: at most about 0.25 %
#: of a run's time goes to syncing, and the write-ahead log holds at most that long a span of batches (each
#: still named by the counts file before its commit)
SYNC_SPACING = 399.0

# the rows of a run whose index is a multiple of ?2 and those that improved the best ``ok`` loss before them
_THINNED = (
    "SELECT idx, loss, status, params FROM (SELECT idx, loss, status, params, MIN(CASE WHEN status='ok' THEN "
    "loss END) OVER (ORDER BY idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM evaluations "
    "WHERE run_id=?1) WHERE idx % ?2 = 0 OR (status='ok' AND (before IS NULL OR loss < before)) ORDER BY idx"
)


class RunStore(GuardedMethods, Store):
    """Runs, evaluations and optimiser checkpoints in one SQLite file.

    Args:
        path: the database file (created with its folder if absent).
        durability: ``"process"`` (a commit survives a killed process; default) or ``"power"`` (also a
            power cut; an fsync per evaluation).
        timeout: seconds to wait for a lock held by another writer.
        readonly: open for queries only (any number of processes may read while a run writes).
        check: run the time-capped integrity check on open (``damage``); ``False`` leaves ``damage`` ``None``
            (a reader that opens the same store again and again, the dashboard, checks it once).
        sync_seconds: the least time between two :meth:`sync` calls that write (default 0: after every
            batch, but never sooner than :data:`SYNC_SPACING` times what the last sync took, so syncing takes
            at most about 0.25 % of a run's time; some milliseconds each, which a model of microseconds may save
            with 1.0, leaving up to a second of evaluations only in the write-ahead log; the counts file
            still records each batch before its first commit, :meth:`expect`, so their loss with the log is
            found and named).

    Queries take a run by name or id: :meth:`runs`, :meth:`run`, :meth:`status`, :meth:`n_evaluations`,
    :meth:`evaluations`, :meth:`evaluation_table`, :meth:`failures`, :meth:`best`, :meth:`trace`, :meth:`timing`,
    :meth:`checkpoints`, :meth:`export_csv`, :meth:`dataset` and :meth:`export_dataset`. The writing methods are
    used by :func:`mechcalib.calibrate`.

    Every public method (and the constructor; a subclass's too, :class:`GuardedMethods`) turns SQLite's and
    the decoders' errors into a :class:`~mechcalib.storage.integrity.StoreError` naming the file and what to
    do (repair, free space, copy the folder).

    A finished study can be shrunk with :meth:`compact_run` (then :meth:`vacuum`): a compacted run keeps
    its record, its failures and the evaluations that improved its best loss, so that its counts,
    :meth:`best`, :meth:`trace` and :meth:`timing` stay exact; it can no longer be resumed, nor give a
    :meth:`dataset`, and :meth:`evaluations` returns the kept rows only.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: str = "process",
        timeout: float = 30.0,
        readonly: bool = False,
        sync_seconds: float = 0.0,
        check: bool = True,
    ) -> None:
        if durability not in ("process", "power"):
            raise ConfigurationError(f"RunStore: durability must be 'process' or 'power', got {durability!r}")
        self.path = Path(path)
        self.durability = durability
        self.readonly = readonly
        self.sync_seconds = float(sync_seconds)
        self._timeout = float(timeout)
        self._synced = -math.inf  # monotonic time of the last sync
        self._sync_took = 0.0  # how long the last sync took (seconds)
        self._lock = threading.RLock()
        self._compactions = False  # whether the file has the compactions table, once seen
        #: ``PRAGMA quick_check``'s complaints on open (``[]``: sound; ``None``: not checked, too large)
        self.damage: list[str] | None = None
        self._choices = False  # whether the runs table has the choices column, once seen
        #: whether the write-ahead log held frames when the store was opened (SQLite then replays every
        #: committed evaluation from it; without it, those committed since the last checkpoint are gone)
        self.wal_found = wal_has_frames(self.path)
        if readonly:
            if not self.path.exists():
                raise ConfigurationError(f"RunStore: no store at {self.path}; open it writable to create it")
            self._con = connect_readonly(self.path, timeout)
            self._con.execute("PRAGMA query_only=ON")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._con = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
            self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute(f"PRAGMA synchronous={'FULL' if durability == 'power' else 'NORMAL'}")
            self._con.execute("PRAGMA foreign_keys=ON")
        self.damage = quick_check(self._con) if check else None
        if self.damage:
            log.warning(
                "the run store %s is damaged (integrity check: %s); %s",
                self.path,
                "; ".join(self.damage[:3]),
                repair_hint(self.path),
            )
        if not readonly:
            with self._tx() as con:
                ensure_schema(con, self.path)

    # -- plumbing ----------------------------------------------------------------------------------
    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._con.execute("BEGIN IMMEDIATE")
            try:
                yield self._con
            except BaseException:
                with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already (disk full)
                    self._con.execute("ROLLBACK")
                raise
            self._con.execute("COMMIT")

    def _q(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._con.execute(sql, args).fetchall()
            except sqlite3.OperationalError as exc:
                # a reader that opened a store before its writer created the tables sees an empty store
                if self.readonly and "no such table" in str(exc):
                    return []
                raise

    def close(self) -> None:
        with self._lock:
            self._con.close()

    def __repr__(self) -> str:
        return f"RunStore({str(self.path)!r})"

    def _run_id(self, run: str | int) -> int:
        if isinstance(run, int | np.integer) and not isinstance(run, bool):
            rows = self._q("SELECT id FROM runs WHERE id=?", (int(run),))
        else:
            rows = self._q("SELECT id FROM runs WHERE name=?", (str(run),))
        if not rows:
            names = [r[0] for r in self._q("SELECT name FROM runs ORDER BY id")]
            raise ConfigurationError(f"no run {run!r} in {self.path}; runs are {names}")
        return int(rows[0][0])

    def _has_compactions(self) -> bool:
        """Whether the file has the ``compactions`` table (a store written by an older version and opened
        read-only has not; asked again until it has, as a writer may add it)."""
        if not self._compactions:
            self._compactions = bool(self._q("SELECT 1 FROM sqlite_master WHERE type='table' AND name='compactions'"))
        return self._compactions

    def _has_choices(self) -> bool:
        """Whether ``runs`` has the ``choices`` column (not in a store of an older version opened read-only)."""
        if not self._choices:
            self._choices = any(r[1] == "choices" for r in self._q("PRAGMA table_info(runs)"))
        return self._choices

    def _compaction(self, rid: int) -> dict[str, Any] | None:
        """The compaction record of a run, ``None`` when it was not compacted."""
        if not self._has_compactions():
            return None
        rows = self._q(f"SELECT {', '.join(COMPACTION_COLS)} FROM compactions WHERE run_id=?", (rid,))
        return dict(zip(COMPACTION_COLS, rows[0], strict=True)) if rows else None

    # -- runs --------------------------------------------------------------------------------------
    def runs(self) -> list[RunInfo]:
        """Every run, oldest first, with its evaluation counts and best loss."""
        return [run_info(r) for r in self._q(run_sql(self._has_compactions(), self._has_choices()) + " ORDER BY r.id")]

    def run(self, run: str | int) -> RunInfo:
        """One run by name or id."""
        return run_info(
            self._q(run_sql(self._has_compactions(), self._has_choices()) + " WHERE r.id=?", (self._run_id(run),))[0]
        )

    def has_run(self, name: str) -> bool:
        return bool(self._q("SELECT 1 FROM runs WHERE name=?", (name,)))

    def status(self, run: str | int) -> str:
        return self.run(run).status

    def create_run(self, name: str, spec: RunSpec) -> int:
        """Insert a run marked ``running`` by this process; returns its id."""
        t = now()
        cols = spec.columns()
        with self._tx() as con:
            if con.execute("SELECT 1 FROM runs WHERE name=?", (name,)).fetchone():
                raise ConfigurationError(f"a run named {name!r} already exists in {self.path}; choose another name")
            cur = con.execute(
                f"INSERT INTO runs (name, status, {', '.join(cols)}, host, pid, created, updated) "
                f"VALUES (?, 'running', {', '.join('?' * len(cols))}, ?, ?, ?, ?)",
                (name, *cols.values(), socket.gethostname(), os.getpid(), t, t),
            )
            return int(cur.lastrowid)  # type: ignore[arg-type]

    def reopen_run(
        self,
        run_id: int,
        *,
        termination: dict[str, Any],
        evaluator: dict[str, Any],
        config: dict[str, Any] | None,
        versions: dict[str, str],
    ) -> None:
        """Mark a stored run ``running`` by this process (resume).

        Refuses a run marked running by another live process of this host. A run marked running on another
        host cannot be checked; it is taken over with a warning (two writers of one run would collide on the
        ``(run_id, idx)`` uniqueness and fail rather than mix their evaluations). Refuses a compacted run:
        its dropped evaluations could not be replayed.
        """
        if self._compaction(run_id) is not None:
            name = self._q("SELECT name FROM runs WHERE id=?", (run_id,))[0][0]
            raise ConfigurationError(
                f"run {name!r} in {self.path} was compacted (only its improvements and failures are kept), so it "
                "cannot be resumed: its replay would be incomplete; start a new run under another name instead"
            )
        with self._tx() as con:
            status, host, pid = con.execute("SELECT status, host, pid FROM runs WHERE id=?", (run_id,)).fetchone()
            me = host == socket.gethostname() and pid == os.getpid()
            if status == "running" and not me:
                writer_alive = alive(host, pid)
                if writer_alive:
                    raise ConfigurationError(
                        f"run {run_id} in {self.path} is being written by process {pid}; stop it first or "
                        "resume under another run name"
                    )
                if writer_alive is None:
                    log.warning("run %s was marked running by process %s on host %s; taking it over", run_id, pid, host)
            sets = "status='running', error=NULL, termination=?, evaluator=?, versions=?, host=?, pid=?, updated=?"
            args: list[Any] = [
                dumps(termination),
                dumps(evaluator),
                dumps(versions),
                socket.gethostname(),
                os.getpid(),
                now(),
            ]
            if config is not None:
                sets += ", config=?"
                args.append(dumps(config))
            con.execute(f"UPDATE runs SET {sets} WHERE id=?", (*args, run_id))

    def finish_run(
        self,
        run_id: int,
        *,
        status: str,
        n_batches: int,
        stop_reason: str | None = None,
        error: str | None = None,
        choices: list[dict[str, Any]] | None = None,
    ) -> None:
        """Record the end of a run (``finished``, ``interrupted`` or ``failed``) and the method's choices."""
        with self._lock:
            self._con.execute(
                "UPDATE runs SET status=?, stop_reason=?, error=?, n_batches=?, updated=?, "
                "choices=COALESCE(?, choices) WHERE id=?",
                (status, stop_reason, error, n_batches, now(), None if choices is None else dumps(choices), run_id),
            )

    def delete_run(self, run: str | int) -> None:
        """Remove a run with its evaluations and checkpoints."""
        rid = self._run_id(run)
        with self._tx() as con:
            con.execute("DELETE FROM evaluations WHERE run_id=?", (rid,))
            con.execute("DELETE FROM checkpoints WHERE run_id=?", (rid,))
            con.execute("DELETE FROM compactions WHERE run_id=?", (rid,))
            con.execute("DELETE FROM runs WHERE id=?", (rid,))

    def rename_run(self, run: str | int, new_name: str) -> None:
        """Give a run a new name (its evaluations, checkpoints and records stay attached).

        A run may be renamed only while no process runs it; the new name must be free.
        """
        rid = self._run_id(run)
        new_name = str(new_name)
        if not new_name:
            raise ConfigurationError(f"RunStore.rename_run: the new name of run {run!r} is empty; give a name")
        if self.has_run(new_name):
            raise ConfigurationError(
                f"RunStore.rename_run: a run named {new_name!r} already exists in {self.path}; pick a free name "
                f"or delete that run first"
            )
        if self.status(rid) == "running":
            raise ConfigurationError(
                f"RunStore.rename_run: run {run!r} is marked running; stop it (or let it finish) before renaming"
            )
        with self._tx() as con:
            con.execute("UPDATE runs SET name=?, updated=? WHERE id=?", (new_name, now(), rid))

    # -- evaluations -------------------------------------------------------------------------------
    def add_evaluation(self, run_id: int, row: EvaluationRow) -> int:
        """Insert one evaluation and commit it at once; returns its row id."""
        with self._lock:
            cur = self._con.execute(_INSERT_EVALUATION, (run_id, *row.values()))
            return int(cur.lastrowid)  # type: ignore[arg-type]

    def lookup(self, key: str, statuses: Sequence[str] = ("ok", "failed")) -> tuple | None:
        """The first stored evaluation with this cache key and a reusable status:
        ``(id, loss, raw_loss, status, error, response blob)``. Rows dropped by :meth:`compact_run` are no
        longer found (those parameter sets are simulated again)."""
        marks = ",".join("?" * len(statuses))
        rows = self._q(
            f"SELECT id, loss, raw_loss, status, error, response FROM evaluations WHERE key=? AND status IN ({marks}) "
            "ORDER BY id LIMIT 1",
            (key, *statuses),
        )
        return rows[0] if rows else None

    def _records(self, where: str, args: Sequence[Any], responses: bool) -> list[EvaluationRecord]:
        cols = EVAL_COLS + (", response" if responses else "")
        return [
            evaluation_record(r, decode_response(r[17]) if responses else None)
            for r in self._q(f"SELECT {cols} FROM evaluations WHERE {where} ORDER BY idx", args)
        ]

    def evaluations(
        self, run: str | int, *, status: str | Sequence[str] | None = None, responses: bool = False
    ) -> list[EvaluationRecord]:
        """A run's stored evaluations in run order, optionally only some statuses, optionally with responses.

        For a compacted run (:meth:`compact_run`) these are the kept rows only: its failures and the
        evaluations that improved its best loss. Use :meth:`n_evaluations`, :meth:`trace` and
        :meth:`timing` for totals and curves, which are exact for compacted and full runs alike.
        """
        rid = self._run_id(run)
        if status is None:
            return self._records("run_id=?", (rid,), responses)
        sts = [status] if isinstance(status, str) else list(status)
        return self._records(f"run_id=? AND status IN ({','.join('?' * len(sts))})", (rid, *sts), responses)

    def n_evaluations(self, run: str | int, *, status: str | None = None) -> int:
        """How many evaluations a run made (of one status); for a compacted run, the totals from before
        compaction."""
        rid = self._run_id(run)
        comp = self._compaction(rid)
        if comp is not None and status in (None, "ok"):  # failures are all kept: their counts stay exact
            return int(comp["n_evals"] if status is None else comp["n_ok"])
        if status is None:
            return int(self._q("SELECT COUNT(*) FROM evaluations WHERE run_id=?", (rid,))[0][0])
        return int(self._q("SELECT COUNT(*) FROM evaluations WHERE run_id=? AND status=?", (rid, status))[0][0])

    def failures(self, run: str | int) -> list[EvaluationRecord]:
        """The run's failed evaluations (``failed``, ``timeout``, ``crashed``) with their error text."""
        rid = self._run_id(run)
        return self._records("run_id=? AND status!='ok'", (rid,), False)

    def best(self, run: str | int, *, responses: bool = False) -> EvaluationRecord | None:
        """The run's best evaluation so far (lowest loss, earliest on ties), or ``None``."""
        rid = self._run_id(run)
        rows = self._q("SELECT idx FROM evaluations WHERE run_id=? AND status='ok' ORDER BY loss, idx LIMIT 1", (rid,))
        if not rows:
            return None
        return self._records("run_id=? AND idx=?", (rid, rows[0][0]), responses)[0]

    def evaluation_table(self, run: str | int, *, every: int = 1) -> dict[str, np.ndarray]:
        """See :meth:`Store.evaluation_table`: one query, thinned inside SQLite, no per-row objects."""
        info = self.run(run)
        rows = self._q(_THINNED, (info.id, max(int(every), 1)))
        params = json.loads("[" + ",".join(r[3] for r in rows) + "]")
        return evaluation_columns_of(info.free_names, rows, params)

    def stored_evaluations(self, run_id: int) -> dict[int, EvaluationRecord]:
        """``{idx: record}`` of a run, without responses (what a resume replays)."""
        return {r.idx: r for r in self._records("run_id=?", (run_id,), False)}

    def trace(self, run: str | int) -> tuple[np.ndarray, np.ndarray]:
        """The run's best-so-far curve: ``(idx, best)``, ``(N,)`` int and float arrays over every evaluation
        index ``0 ... N - 1`` (``N`` = the number of evaluations when the run has no gap in its indices),
        ``best[i]`` the lowest loss of the ``ok`` evaluations up to and including ``i`` (``inf`` before the
        first one). Exact for a compacted run too: the step function only steps at the kept improvements.
        """
        rid = self._run_id(run)
        rows = self._q("SELECT idx, loss FROM evaluations WHERE run_id=? AND status='ok' ORDER BY idx", (rid,))
        comp = self._compaction(rid)
        if comp is not None:
            n = int(comp["last_idx"]) + 1
        else:
            n = int(self._q("SELECT COALESCE(MAX(idx) + 1, 0) FROM evaluations WHERE run_id=?", (rid,))[0][0])
        return best_so_far(n, rows)

    def timing(self, run: str | int) -> dict[str, float | int]:
        """The run's time totals, exact for a compacted run too.

        Keys: ``seconds`` (sum of ``finished - started`` over every evaluation with recorded times; cache hits
        add 0), ``first_started``/``last_finished`` (Unix times, NaN without evaluations), ``active_seconds``
        (wall time the run was computing: the steps between consecutive evaluations' ends in evaluation
        order, from the first one's start, leaving out negative steps and pauses of :data:`ACTIVE_GAP_S` or
        more, where the run was stopped and resumed later) and ``n_live`` (evaluations simulated, not taken
        from the cache, with recorded times).
        """
        rid = self._run_id(run)
        comp = self._compaction(rid)
        if comp is not None:
            return {
                "seconds": float(comp["seconds"]),
                "first_started": nan(comp["first_started"]),
                "last_finished": nan(comp["last_finished"]),
                "active_seconds": float(comp["active_seconds"]),
                "n_live": int(comp["n_live"]),
            }
        rows = self._q("SELECT started, finished, source FROM evaluations WHERE run_id=? ORDER BY idx", (rid,))
        return timing_of(
            np.array([nan(r[0]) for r in rows], dtype=float),
            np.array([nan(r[1]) for r in rows], dtype=float),
            np.array([r[2] for r in rows], dtype=object),
        )

    # -- compaction ----------------------------------------------------------------------------------
    def compact_run(self, run: str | int, *, keep_checkpoints: int = 1) -> CompactionSummary:
        """Drop the evaluations of a finished run that did not improve its best loss.

        Keeps, in evaluation order, every evaluation whose status is not ``ok`` (the failures) and every
        ``ok`` evaluation whose loss is strictly below the best loss of the ``ok`` evaluations before it (the
        first ``ok`` one included), and the last ``keep_checkpoints`` checkpoints. The run's totals (counts,
        times, last index) are recorded first in the ``compactions`` table, so :meth:`run`,
        :meth:`n_evaluations`, :meth:`best`, :meth:`trace` and :meth:`timing` answer as before. A second
        call drops nothing more and keeps the first record's totals. The file shrinks only after
        :meth:`vacuum`.

        A compacted run cannot be resumed (its replay would be incomplete), :meth:`dataset` refuses it,
        :meth:`evaluations` and :meth:`export_csv` give the kept rows only, and :meth:`lookup` (the cache)
        no longer finds the dropped parameter sets; ``cached_from`` of other runs' cache hits may then name
        a dropped row.

        Args:
            run: a run whose status is ``finished`` or ``failed``.
            keep_checkpoints: how many of the latest optimiser checkpoints to keep (``>= 0``).
        """
        return compact_sqlite(self, run, keep_checkpoints)

    def vacuum(self) -> None:
        """Rebuild the file without the free pages left by deletions (:meth:`compact_run`,
        :meth:`delete_run`), then fold the write-ahead log into it: the file shrinks only then. Needs no other
        connection writing; rewrites the whole file (temporary disk space up to twice its size)."""
        if self.readonly:
            raise ConfigurationError(f"{self!r} is read-only; open it writable to vacuum it")
        with self._lock:
            self._con.execute("VACUUM")
            self._con.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def backup(self, target: str | os.PathLike[str]) -> None:
        """Copy the store into the new file ``target`` through SQLite's backup API: a consistent snapshot
        that includes the evaluations still in the write-ahead log (a plain file copy may leave them
        behind), also while a run writes."""
        dst = Path(target)
        if dst.exists():
            raise ConfigurationError(f"RunStore.backup: {dst} exists; give a new file")
        con = sqlite3.connect(dst, isolation_level=None)
        try:
            with self._lock:
                self._con.backup(con)
            con.execute("PRAGMA journal_mode=WAL")
        finally:
            con.close()

    # -- checkpoints ---------------------------------------------------------------------------------
    def save_checkpoint(self, run_id: int, batch: int, n_evals: int, state: bytes) -> None:
        """Store a pickled optimiser state after ``batch`` told batches and ``n_evals`` evaluations."""
        t = now()
        with self._tx() as con:
            con.execute(
                "INSERT OR REPLACE INTO checkpoints (run_id, batch, n_evals, state, created) VALUES (?,?,?,?,?)",
                (run_id, batch, n_evals, state, t),
            )
            con.execute("UPDATE runs SET n_batches=?, updated=? WHERE id=?", (batch, t, run_id))

    def touch(self, run_id: int, n_batches: int) -> None:
        """Update a run's batch count and ``updated`` time (a heartbeat)."""
        with self._lock:
            self._con.execute("UPDATE runs SET n_batches=?, updated=? WHERE id=?", (n_batches, now(), run_id))

    def sync(self, run_id: int, n_evals: int, *, force: bool = False) -> None:
        """After a batch: record ``n_evals`` (the run's stored evaluations) in the counts file beside the
        store and fold the write-ahead log into the file (:meth:`_checkpoint`), so that only the evaluations
        since then live only in the log. Done at most every ``sync_seconds`` (the checkpoint syncs the file
        to disk: some milliseconds) and never sooner than :data:`SYNC_SPACING` times what the last one took
        (a model of 0.1 s in batches of one would otherwise spend about 1 % of its time here), unless ``force``."""
        t = time.monotonic()
        if not force and t - self._synced < max(self.sync_seconds, SYNC_SPACING * self._sync_took):
            return
        since = t - self._synced
        self._synced = t
        self._write_counts(run_id, n_evals, None)
        self._checkpoint(since)
        self._sync_took = time.monotonic() - t

    def expect(self, run_id: int, n_evals: int, expected: int) -> None:
        """Before the first evaluation of a batch is committed: record in the counts file that the run has
        ``n_evals`` evaluations stored (every earlier batch) and is about to hold up to ``expected``, so that
        a later loss of committed evaluations is found (:meth:`lost_evaluations`). Every batch, whatever
        ``sync_seconds``; on disk before the commit under ``durability="power"``."""
        self._write_counts(run_id, n_evals, expected)

    def _write_counts(self, run_id: int, n_evals: int, expected: int | None) -> None:
        with self._tx() as con:  # the transaction serialises the processes sharing the counts file
            name = con.execute("SELECT name FROM runs WHERE id=?", (run_id,)).fetchone()
            try:
                write_counts(
                    Path(self.path),
                    run_id,
                    name[0] if name else str(run_id),
                    n_evals,
                    expected,
                    fsync=self.durability == "power",
                )
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    raise store_error(self.path, sqlite3.OperationalError("database or disk is full"), "sync") from exc
                log.warning("cannot record the evaluation count beside %s: %s", self.path, exc)

    def _checkpoint(self, since: float) -> None:
        """Fold the write-ahead log into the file: ``PASSIVE`` (never waits); when a reader kept frames in
        the log, one ``TRUNCATE`` that waits for readers at most 1 % of the time since the last sync (at most
        0.2 s). A reader holding one snapshot longer keeps the later batches in the log: the counts file
        still names them should the log be lost."""
        with self._lock:
            busy, log_frames, done = self._con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if not busy and log_frames == done:
                return
            wait_ms = int(1000 * min(0.2, 0.01 * since)) if math.isfinite(since) else 0
            if wait_ms <= 0:
                return
            try:
                self._con.execute(f"PRAGMA busy_timeout={wait_ms}")
                self._con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                self._con.execute(f"PRAGMA busy_timeout={int(self._timeout * 1000)}")

    def lost_evaluations(self, run_id: int) -> EvaluationLoss | None:
        """The evaluations of a run that the counts file records as stored (or as being committed) and this
        store does not hold; ``None`` when nothing was lost or the run was compacted."""
        counts = recorded_counts(Path(self.path))  # before counting: a live writer only adds rows since
        info = self.run(run_id)
        if info.compacted:
            return None
        return evaluation_loss(
            Path(self.path),
            info.name,
            self.n_evaluations(run_id),
            wal_found=self.wal_found,
            run_id=run_id,
            counts=counts,
        )

    def recorded_evaluations(self, run_id: int) -> int | None:
        """The evaluation count last recorded by :meth:`sync` for a run (``None``: none recorded)."""
        rec = recorded_counts(Path(self.path)).get(str(run_id))
        n = rec.get("n_evals") if isinstance(rec, dict) else None
        return n if isinstance(n, int) else None

    def checkpoints(self, run: str | int) -> list[tuple[int, int, str]]:
        """``(batch, n_evals, created)`` of a run's checkpoints, oldest first."""
        rid = self._run_id(run)
        return [
            (r[0], r[1], r[2])
            for r in self._q("SELECT batch, n_evals, created FROM checkpoints WHERE run_id=? ORDER BY batch", (rid,))
        ]

    def load_checkpoint(self, run: str | int, batch: int | None = None) -> tuple[int, int, dict[str, Any]] | None:
        """``(batch, n_evals, state_dict)`` of the latest checkpoint (or of ``batch``), ``None`` if none."""
        for b, n, blob in self.iter_checkpoints(self._run_id(run)):
            if batch is None or b == batch:
                return b, n, pickle.loads(blob)
        return None

    def iter_checkpoints(self, run_id: int) -> Iterator[tuple[int, int, bytes]]:
        """``(batch, n_evals, pickled state)``, newest first."""
        for r in self._q("SELECT batch, n_evals, state FROM checkpoints WHERE run_id=? ORDER BY batch DESC", (run_id,)):
            yield int(r[0]), int(r[1]), r[2]

    # -- exports -------------------------------------------------------------------------------------
    def export_dataset(
        self, run: str | int, path: str | os.PathLike[str], *, include_failed: bool = False, unique: bool = True
    ) -> Path:
        """Write :meth:`dataset` to a ``.npz`` file (``numpy.load(path)`` reads it back)."""
        return export.export_dataset(self, run, path, include_failed=include_failed, unique=unique)
