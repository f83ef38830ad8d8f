"""The SQLite run store.

One file holds any number of runs. Tables:

``runs``
    one row per run: ``name`` (unique), ``status`` (``running``/``finished``/``interrupted``/``failed``),
    ``stop_reason``, the optimiser's name, settings and seed (JSON), the termination rules, the evaluator's
    settings, the parameter space, the problem fingerprint, the caller's ``config`` (JSON), package
    versions, host and process id of the writer, ``created``/``updated`` (ISO 8601, UTC).
``evaluations``
    one row per evaluation, committed as it arrives: ``run_id``, ``idx`` (position in the run, from 0),
    ``batch``, ``pos`` (position in its batch), ``key`` (cache key), ``params`` (JSON ``{name: value}`` of
    the free parameters, exact floats), ``u`` (JSON unit-cube point), ``loss`` (told to the optimiser),
    ``raw_loss`` (objective value, NULL when failed), ``status``, ``error``, ``started``/``finished`` (Unix
    times), ``worker``, ``source`` (``live`` or ``cache``), ``cached_from`` (id of the row a cache hit was
    copied from), ``response`` (the simulated response, ``numpy.savez`` + zlib, NULL when not kept).
``checkpoints``
    the pickled ``optimizer.state_dict()`` after each told batch: ``run_id``, ``batch`` (batches done),
    ``n_evals`` (evaluations done), ``state``.
``compactions``
    one row per compacted run (:meth:`RunStore.compact_run`), written before its rows are dropped, so that
    its totals stay exact: ``run_id``, ``n_evals``, ``n_ok``, ``n_failed``, ``n_live`` (simulated, not
    cache hits, with recorded times), ``last_idx``, ``seconds`` (sum of ``finished - started``),
    ``first_started``, ``last_finished``, ``active_seconds`` (see :meth:`RunStore.timing`), ``n_dropped``
    (evaluation rows dropped), ``created``. Added to older stores when they are opened writable.

The database runs in WAL mode: readers (other processes included) never block the writer nor see a
half-written evaluation. ``durability="process"`` (``synchronous=NORMAL``) makes each commit survive a killed
process; ``"power"`` (``synchronous=FULL``) also a power cut, at the price of an fsync per evaluation.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import pickle
import socket
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError
from .codec import decode_response, dumps, flatten_response

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    stop_reason TEXT,
    error TEXT,
    optimizer TEXT,
    settings TEXT,
    seed TEXT,
    termination TEXT,
    evaluator TEXT,
    space TEXT,
    fingerprint TEXT,
    config TEXT,
    versions TEXT,
    host TEXT,
    pid INTEGER,
    n_batches INTEGER NOT NULL DEFAULT 0,
    created TEXT NOT NULL,
    updated TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    batch INTEGER NOT NULL,
    pos INTEGER NOT NULL,
    key TEXT NOT NULL,
    params TEXT NOT NULL,
    u TEXT NOT NULL,
    loss REAL,
    raw_loss REAL,
    status TEXT NOT NULL,
    error TEXT,
    started REAL,
    finished REAL,
    worker TEXT,
    source TEXT NOT NULL DEFAULT 'live',
    cached_from INTEGER,
    response BLOB,
    UNIQUE (run_id, idx)
);
CREATE INDEX IF NOT EXISTS evaluations_key ON evaluations (key);
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    batch INTEGER NOT NULL,
    n_evals INTEGER NOT NULL,
    state BLOB NOT NULL,
    created TEXT NOT NULL,
    PRIMARY KEY (run_id, batch)
);
CREATE TABLE IF NOT EXISTS compactions (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    n_evals INTEGER NOT NULL,
    n_ok INTEGER NOT NULL,
    n_failed INTEGER NOT NULL,
    n_live INTEGER NOT NULL,
    last_idx INTEGER NOT NULL,
    seconds REAL NOT NULL,
    first_started REAL,
    last_finished REAL,
    active_seconds REAL NOT NULL,
    n_dropped INTEGER NOT NULL,
    created TEXT NOT NULL
);
"""

#: A pause between consecutive evaluations this long or longer is taken as the run being stopped and
#: resumed later, and left out of :meth:`RunStore.timing`'s ``active_seconds``.
ACTIVE_GAP_S = 60.0

_EVAL_COLS = (
    "id, run_id, idx, batch, pos, key, params, u, loss, raw_loss, status, error, started, finished, worker, "
    "source, cached_from"
)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _alive(host: str | None, pid: int | None) -> bool | None:
    """Whether the writer process still runs (``None``: it ran on another host, cannot tell)."""
    if pid is None:
        return False
    if host != socket.gethostname():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _nan(v: float | None) -> float:
    return math.nan if v is None else float(v)


@dataclass
class RunInfo:
    """A run's record. ``status`` reads ``"interrupted"`` for a run marked running whose writer process
    (on this host) is gone, e.g. killed. ``n_evals``, ``n_failed`` and ``best_loss`` are the run's totals,
    also after :meth:`RunStore.compact_run` (``compacted``; ``n_dropped`` evaluation rows were dropped)."""

    id: int
    name: str
    status: str
    stop_reason: str | None
    error: str | None
    optimizer: str | None
    settings: dict[str, Any]
    seed: Any
    termination: dict[str, Any]
    evaluator: dict[str, Any]
    space: list[dict[str, Any]]
    fingerprint: str | None
    config: dict[str, Any] | None
    versions: dict[str, str]
    host: str | None
    pid: int | None
    n_batches: int
    created: str
    updated: str
    n_evals: int = 0
    n_failed: int = 0
    best_loss: float = math.inf
    compacted: bool = False
    n_dropped: int = 0

    @property
    def free_names(self) -> list[str]:
        return [p["name"] for p in self.space if p.get("fixed") is None]


@dataclass
class EvaluationRecord:
    """One stored evaluation (see the module docstring for the fields)."""

    id: int
    run_id: int
    idx: int
    batch: int
    pos: int
    key: str
    params: dict[str, float]
    u: np.ndarray
    loss: float
    raw_loss: float
    status: str
    error: str | None
    started: float
    finished: float
    worker: str | None
    source: str
    cached_from: int | None
    response: Any = field(default=None, repr=False)

    @property
    def x(self) -> np.ndarray:
        """The free parameter values ``(dim,)`` in the space's order."""
        return np.array(list(self.params.values()), dtype=float)

    @property
    def seconds(self) -> float:
        return self.finished - self.started


@dataclass
class CompactionSummary:
    """What :meth:`RunStore.compact_run` did to one run.

    ``n_evals``/``n_ok``/``n_failed``: the run's totals (as before compaction); ``n_kept``: evaluation rows
    stored now; ``n_dropped``: rows dropped from the run in all (``dropped_now`` by this call);
    ``checkpoints_dropped``: by this call; ``seconds``, ``first_started``, ``last_finished``,
    ``active_seconds``: as :meth:`RunStore.timing`; ``created``: when the run was first compacted.
    """

    run: str
    run_id: int
    n_evals: int
    n_ok: int
    n_failed: int
    n_kept: int
    n_dropped: int
    dropped_now: int
    checkpoints_dropped: int
    seconds: float
    first_started: float
    last_finished: float
    active_seconds: float
    created: str


def _keep_mask(loss: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Rows a compaction keeps, in evaluation order: every failure (``ok`` false) and every ok evaluation
    whose loss is strictly below the best loss of the ok evaluations before it (the first ok one included).
    A NaN loss (stored NULL) never improves."""
    f = np.where(ok & ~np.isnan(loss), loss, np.inf)
    fo = f[ok]
    prior = np.concatenate(([np.inf], np.minimum.accumulate(fo)[:-1])) if fo.size else fo
    improves = fo < prior
    if fo.size:
        improves[0] = True
    keep = ~ok
    keep[np.flatnonzero(ok)] = improves
    return keep


def _timing_of(started: np.ndarray, finished: np.ndarray, source: np.ndarray) -> dict[str, float | int]:
    """Totals of :meth:`RunStore.timing` from a run's full rows in evaluation order."""
    if started.size == 0:
        return {"seconds": 0.0, "first_started": math.nan, "last_finished": math.nan, "active_seconds": 0.0,
                "n_live": 0}
    d = finished - started
    timed = np.isfinite(d)
    # wall time computing: the steps between consecutive ends (from the first start), long pauses left out
    t = np.concatenate(([started[0]], finished))
    gaps = np.diff(t)
    with np.errstate(invalid="ignore"):
        active = gaps[(gaps >= 0) & (gaps < ACTIVE_GAP_S)]
    return {
        "seconds": math.fsum(d[timed].tolist()),
        "first_started": float(np.nanmin(started)) if np.isfinite(started).any() else math.nan,
        "last_finished": float(np.nanmax(finished)) if np.isfinite(finished).any() else math.nan,
        "active_seconds": math.fsum(active.tolist()),
        "n_live": int(np.sum(timed & (source == "live"))),
    }


class RunStore:
    """Runs, evaluations and optimiser checkpoints in one SQLite file.

    Args:
        path: the database file (created with its folder if absent).
        durability: ``"process"`` (a commit survives a killed process; default) or ``"power"`` (also a
            power cut; an fsync per evaluation).
        timeout: seconds to wait for a lock held by another writer.
        readonly: open for queries only (any number of processes may read while a run writes).

    Queries take a run by name or id: :meth:`runs`, :meth:`run`, :meth:`status`, :meth:`n_evaluations`,
    :meth:`evaluations`, :meth:`failures`, :meth:`best`, :meth:`trace`, :meth:`timing`, :meth:`checkpoints`,
    :meth:`export_csv`, :meth:`dataset` and :meth:`export_dataset`. The writing methods are used by
    :func:`mechcalib.calibrate`.

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
    ) -> None:
        if durability not in ("process", "power"):
            raise ConfigurationError(f"RunStore: durability must be 'process' or 'power', got {durability!r}")
        self.path = Path(path)
        self.durability = durability
        self.readonly = readonly
        self._lock = threading.RLock()
        if readonly:
            if not self.path.exists():
                raise ConfigurationError(f"RunStore: no store at {self.path}; open it writable to create it")
            self._con = sqlite3.connect(
                f"file:{self.path}?mode=ro", uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            self._con.execute("PRAGMA query_only=ON")
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._con = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.execute(f"PRAGMA synchronous={'FULL' if durability == 'power' else 'NORMAL'}")
        self._con.execute("PRAGMA foreign_keys=ON")
        with self._tx() as con:
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    con.execute(stmt)
            row = con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                con.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) != SCHEMA_VERSION:
                raise ConfigurationError(
                    f"RunStore: {self.path} has schema version {row[0]}, this package reads version {SCHEMA_VERSION}"
                )

    # -- plumbing ----------------------------------------------------------------------------------
    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._con.execute("BEGIN IMMEDIATE")
            try:
                yield self._con
            except BaseException:
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

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

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

    # -- runs --------------------------------------------------------------------------------------
    def runs(self) -> list[RunInfo]:
        """Every run, oldest first, with its evaluation counts and best loss."""
        return [self._info(r) for r in self._q(self._run_sql() + " ORDER BY r.id")]

    def run(self, run: str | int) -> RunInfo:
        """One run by name or id."""
        return self._info(self._q(self._run_sql() + " WHERE r.id=?", (self._run_id(run),))[0])

    def has_run(self, name: str) -> bool:
        return bool(self._q("SELECT 1 FROM runs WHERE name=?", (name,)))

    def status(self, run: str | int) -> str:
        return self.run(run).status

    def config(self, run: str | int) -> dict[str, Any] | None:
        return self.run(run).config

    # A compacted run keeps every failure and its best evaluation, so ``n_failed`` and ``MIN(loss)`` read from
    # the kept rows stay exact; its total count comes from its compaction record.
    _RUN_SQL = (
        "SELECT r.id, r.name, r.status, r.stop_reason, r.error, r.optimizer, r.settings, r.seed, r.termination, "
        "r.evaluator, r.space, r.fingerprint, r.config, r.versions, r.host, r.pid, r.n_batches, r.created, "
        "r.updated, {n_evals}, "
        "(SELECT COUNT(*) FROM evaluations e WHERE e.run_id=r.id AND e.status!='ok'), "
        "(SELECT MIN(loss) FROM evaluations e WHERE e.run_id=r.id), {compacted}, {n_dropped} FROM runs r"
    )
    _COUNT_SQL = "(SELECT COUNT(*) FROM evaluations e WHERE e.run_id=r.id)"

    def _has_compactions(self) -> bool:
        """Whether the file has the ``compactions`` table (a store written by an older version and opened
        read-only has not)."""
        if not getattr(self, "_compactions", False):
            self._compactions = bool(
                self._q("SELECT 1 FROM sqlite_master WHERE type='table' AND name='compactions'")
            )
        return self._compactions

    def _run_sql(self) -> str:
        if not self._has_compactions():
            return self._RUN_SQL.format(n_evals=self._COUNT_SQL, compacted="0", n_dropped="0")
        c = "(SELECT {} FROM compactions c WHERE c.run_id=r.id)"
        return self._RUN_SQL.format(
            n_evals=f"COALESCE({c.format('n_evals')}, {self._COUNT_SQL})",
            compacted=f"EXISTS {c.format('1')}",
            n_dropped=f"COALESCE({c.format('n_dropped')}, 0)",
        )

    def _compaction(self, rid: int) -> dict[str, Any] | None:
        """The compaction record of a run, ``None`` when it was not compacted."""
        if not self._has_compactions():
            return None
        cols = ("n_evals", "n_ok", "n_failed", "n_live", "last_idx", "seconds", "first_started", "last_finished",
                "active_seconds", "n_dropped", "created")
        rows = self._q(f"SELECT {', '.join(cols)} FROM compactions WHERE run_id=?", (rid,))
        return dict(zip(cols, rows[0], strict=True)) if rows else None

    @staticmethod
    def _info(r: tuple) -> RunInfo:
        js = [json.loads(v) if v is not None else None for v in r[6:14]]
        info = RunInfo(
            id=r[0],
            name=r[1],
            status=r[2],
            stop_reason=r[3],
            error=r[4],
            optimizer=r[5],
            settings=js[0] or {},
            seed=js[1],
            termination=js[2] or {},
            evaluator=js[3] or {},
            space=js[4] or [],
            fingerprint=js[5],
            config=js[6],
            versions=js[7] or {},
            host=r[14],
            pid=r[15],
            n_batches=r[16],
            created=r[17],
            updated=r[18],
            n_evals=r[19],
            n_failed=r[20],
            best_loss=_nan(r[21]) if r[21] is not None else math.inf,
            compacted=bool(r[22]),
            n_dropped=int(r[23]),
        )
        if info.status == "running" and _alive(info.host, info.pid) is False:
            info.status = "interrupted"
        return info

    def create_run(
        self,
        name: str,
        *,
        optimizer: str,
        settings: dict[str, Any],
        seed: Any,
        termination: dict[str, Any],
        evaluator: dict[str, Any],
        space: list[dict[str, Any]],
        fingerprint: str | None,
        config: dict[str, Any] | None,
        versions: dict[str, str],
    ) -> int:
        """Insert a run marked ``running`` by this process; returns its id."""
        now = _now()
        with self._tx() as con:
            if con.execute("SELECT 1 FROM runs WHERE name=?", (name,)).fetchone():
                raise ConfigurationError(f"a run named {name!r} already exists in {self.path}; choose another name")
            cur = con.execute(
                "INSERT INTO runs (name, status, optimizer, settings, seed, termination, evaluator, space, "
                "fingerprint, config, versions, host, pid, created, updated) "
                "VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    optimizer,
                    dumps(settings),
                    dumps(seed),
                    dumps(termination),
                    dumps(evaluator),
                    dumps(space),
                    dumps(fingerprint),
                    dumps(config) if config is not None else None,
                    dumps(versions),
                    socket.gethostname(),
                    os.getpid(),
                    now,
                    now,
                ),
            )
            return int(cur.lastrowid)

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
                alive = _alive(host, pid)
                if alive:
                    raise ConfigurationError(
                        f"run {run_id} in {self.path} is being written by process {pid}; stop it first or "
                        "resume under another run name"
                    )
                if alive is None:
                    log.warning("run %s was marked running by process %s on host %s; taking it over", run_id, pid, host)
            sets = "status='running', error=NULL, termination=?, evaluator=?, versions=?, host=?, pid=?, updated=?"
            args: list[Any] = [
                dumps(termination),
                dumps(evaluator),
                dumps(versions),
                socket.gethostname(),
                os.getpid(),
                _now(),
            ]
            if config is not None:
                sets += ", config=?"
                args.append(dumps(config))
            con.execute(f"UPDATE runs SET {sets} WHERE id=?", (*args, run_id))

    def finish_run(
        self, run_id: int, *, status: str, n_batches: int, stop_reason: str | None = None, error: str | None = None
    ) -> None:
        """Record the end of a run (``finished``, ``interrupted`` or ``failed``)."""
        with self._lock:
            self._con.execute(
                "UPDATE runs SET status=?, stop_reason=?, error=?, n_batches=?, updated=? WHERE id=?",
                (status, stop_reason, error, n_batches, _now(), run_id),
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
            con.execute("UPDATE runs SET name=?, updated=? WHERE id=?", (new_name, _now(), rid))

    # -- evaluations -------------------------------------------------------------------------------
    def add_evaluation(
        self,
        run_id: int,
        *,
        idx: int,
        batch: int,
        pos: int,
        key: str,
        params: str,
        u: str,
        loss: float,
        raw_loss: float,
        status: str,
        error: str | None,
        started: float,
        finished: float,
        worker: str,
        source: str = "live",
        cached_from: int | None = None,
        response: bytes | None = None,
    ) -> int:
        """Insert one evaluation and commit it at once; returns its row id. ``params``/``u`` are JSON."""
        with self._lock:
            cur = self._con.execute(
                "INSERT INTO evaluations (run_id, idx, batch, pos, key, params, u, loss, raw_loss, status, error, "
                "started, finished, worker, source, cached_from, response) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    idx,
                    batch,
                    pos,
                    key,
                    params,
                    u,
                    loss,
                    raw_loss,
                    status,
                    error,
                    started,
                    finished,
                    worker,
                    source,
                    cached_from,
                    response,
                ),
            )
            return int(cur.lastrowid)

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
        cols = _EVAL_COLS + (", response" if responses else "")
        out = []
        for r in self._q(f"SELECT {cols} FROM evaluations WHERE {where} ORDER BY idx", args):
            out.append(
                EvaluationRecord(
                    id=r[0],
                    run_id=r[1],
                    idx=r[2],
                    batch=r[3],
                    pos=r[4],
                    key=r[5],
                    params=json.loads(r[6]),
                    u=np.array(json.loads(r[7]), dtype=float),
                    loss=_nan(r[8]),
                    raw_loss=_nan(r[9]),
                    status=r[10],
                    error=r[11],
                    started=_nan(r[12]),
                    finished=_nan(r[13]),
                    worker=r[14],
                    source=r[15],
                    cached_from=r[16],
                    response=decode_response(r[17]) if responses else None,
                )
            )
        return out

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
        f = np.full(n, np.inf)
        if rows:
            i = np.array([r[0] for r in rows], dtype=np.int64)
            v = np.array([_nan(r[1]) for r in rows], dtype=float)
            f[i] = np.where(np.isnan(v), np.inf, v)
        return np.arange(n, dtype=np.int64), np.minimum.accumulate(f) if n else f

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
                "first_started": _nan(comp["first_started"]),
                "last_finished": _nan(comp["last_finished"]),
                "active_seconds": float(comp["active_seconds"]),
                "n_live": int(comp["n_live"]),
            }
        return _timing_of(*self._time_columns(rid))

    def _time_columns(self, rid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = self._q("SELECT started, finished, source FROM evaluations WHERE run_id=? ORDER BY idx", (rid,))
        return (
            np.array([_nan(r[0]) for r in rows], dtype=float),
            np.array([_nan(r[1]) for r in rows], dtype=float),
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
        if self.readonly:
            raise ConfigurationError(f"{self!r} is read-only; open it writable to compact a run")
        if isinstance(keep_checkpoints, bool) or not isinstance(keep_checkpoints, int | np.integer) or keep_checkpoints < 0:
            raise ConfigurationError(f"keep_checkpoints must be an integer >= 0, got {keep_checkpoints!r}")
        info = self.run(run)
        if info.status not in ("finished", "failed"):
            raise ConfigurationError(
                f"run {info.name!r} in {self.path} is {info.status}; only a finished or failed run can be compacted: "
                "finish or resume it first"
            )
        rid = info.id
        with self._tx() as con:
            status = con.execute("SELECT status FROM runs WHERE id=?", (rid,)).fetchone()[0]
            if status not in ("finished", "failed"):  # reopened since
                raise ConfigurationError(
                    f"run {info.name!r} in {self.path} is {status}; only a finished or failed run can be compacted: "
                    "finish or resume it first"
                )
            rows = con.execute(
                "SELECT id, idx, loss, status, started, finished, source FROM evaluations WHERE run_id=? ORDER BY idx",
                (rid,),
            ).fetchall()
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            loss = np.array([_nan(r[2]) for r in rows], dtype=float)
            ok = np.array([r[3] == "ok" for r in rows], dtype=bool)
            keep = _keep_mask(loss, ok)
            drop = ids[~keep].tolist()
            prev = con.execute(
                "SELECT n_dropped, created FROM compactions WHERE run_id=?", (rid,)
            ).fetchone()
            if prev is None:
                t = _timing_of(
                    np.array([_nan(r[4]) for r in rows], dtype=float),
                    np.array([_nan(r[5]) for r in rows], dtype=float),
                    np.array([r[6] for r in rows], dtype=object),
                )
                con.execute(
                    "INSERT INTO compactions (run_id, n_evals, n_ok, n_failed, n_live, last_idx, seconds, first_started, "
                    "last_finished, active_seconds, n_dropped, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        rid,
                        len(rows),
                        int(ok.sum()),
                        int((~ok).sum()),
                        t["n_live"],
                        int(rows[-1][1]) if rows else -1,
                        t["seconds"],
                        None if math.isnan(t["first_started"]) else t["first_started"],
                        None if math.isnan(t["last_finished"]) else t["last_finished"],
                        t["active_seconds"],
                        len(drop),
                        _now(),
                    ),
                )
            elif drop:  # cannot happen for rows written by this class (compaction is idempotent); kept exact anyway
                con.execute("UPDATE compactions SET n_dropped=n_dropped+? WHERE run_id=?", (len(drop), rid))
            con.executemany("DELETE FROM evaluations WHERE id=?", ((i,) for i in drop))
            batches = [r[0] for r in con.execute("SELECT batch FROM checkpoints WHERE run_id=? ORDER BY batch DESC", (rid,))]
            old = batches[int(keep_checkpoints):]
            con.executemany("DELETE FROM checkpoints WHERE run_id=? AND batch=?", ((rid, b) for b in old))
        comp = self._compaction(rid)
        assert comp is not None
        log.info("compacted run %r: kept %d of %d evaluations", info.name, len(rows) - len(drop), comp["n_evals"])
        return CompactionSummary(
            run=info.name,
            run_id=rid,
            n_evals=int(comp["n_evals"]),
            n_ok=int(comp["n_ok"]),
            n_failed=int(comp["n_failed"]),
            n_kept=len(rows) - len(drop),
            n_dropped=int(comp["n_dropped"]),
            dropped_now=len(drop),
            checkpoints_dropped=len(old),
            seconds=float(comp["seconds"]),
            first_started=_nan(comp["first_started"]),
            last_finished=_nan(comp["last_finished"]),
            active_seconds=float(comp["active_seconds"]),
            created=comp["created"],
        )

    def vacuum(self) -> None:
        """Rebuild the file without the free pages left by deletions (:meth:`compact_run`,
        :meth:`delete_run`), then fold the write-ahead log into it: the file shrinks only then. Needs no other
        connection writing; rewrites the whole file (temporary disk space up to twice its size)."""
        if self.readonly:
            raise ConfigurationError(f"{self!r} is read-only; open it writable to vacuum it")
        with self._lock:
            self._con.execute("VACUUM")
            self._con.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- checkpoints ---------------------------------------------------------------------------------
    def save_checkpoint(self, run_id: int, batch: int, n_evals: int, state: bytes) -> None:
        """Store a pickled optimiser state after ``batch`` told batches and ``n_evals`` evaluations."""
        now = _now()
        with self._tx() as con:
            con.execute(
                "INSERT OR REPLACE INTO checkpoints (run_id, batch, n_evals, state, created) VALUES (?,?,?,?,?)",
                (run_id, batch, n_evals, state, now),
            )
            con.execute("UPDATE runs SET n_batches=?, updated=? WHERE id=?", (batch, now, run_id))

    def touch(self, run_id: int, n_batches: int) -> None:
        """Update a run's batch count and ``updated`` time (a heartbeat)."""
        with self._lock:
            self._con.execute("UPDATE runs SET n_batches=?, updated=? WHERE id=?", (n_batches, _now(), run_id))

    def checkpoints(self, run: str | int) -> list[tuple[int, int, str]]:
        """``(batch, n_evals, created)`` of a run's checkpoints, oldest first."""
        rid = self._run_id(run)
        return [
            tuple(r)
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
    def export_csv(self, run: str | int, path: str | os.PathLike[str]) -> Path:
        """Write a run's evaluations to CSV: ``idx, batch, pos``, one column per free parameter, ``u_<name>``
        per unit-cube coordinate, ``loss, raw_loss, status, error, started, finished, seconds, worker,
        source, cached_from``.

        Warning: for a compacted run (:meth:`compact_run`) only the kept rows are written (its failures and
        improvements, ``RunInfo.n_dropped`` fewer than it made); ``idx`` tells where each one stood."""
        info = self.run(run)
        names = info.free_names
        recs = self.evaluations(info.id)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(
                [
                    "idx",
                    "batch",
                    "pos",
                    *names,
                    *(f"u_{n}" for n in names),
                    "loss",
                    "raw_loss",
                    "status",
                    "error",
                    "started",
                    "finished",
                    "seconds",
                    "worker",
                    "source",
                    "cached_from",
                ]
            )
            for r in recs:
                w.writerow(
                    [
                        r.idx,
                        r.batch,
                        r.pos,
                        *(repr(r.params[n]) for n in names),
                        *(repr(float(v)) for v in r.u),
                        repr(r.loss),
                        repr(r.raw_loss),
                        r.status,
                        r.error or "",
                        repr(r.started),
                        repr(r.finished),
                        repr(r.seconds),
                        r.worker or "",
                        r.source,
                        "" if r.cached_from is None else r.cached_from,
                    ]
                )
        return path

    def dataset(self, run: str | int, *, include_failed: bool = False, unique: bool = True) -> dict[str, np.ndarray]:
        """A run's parameter sets and responses as arrays (for surrogate training).

        Keys: ``names`` (free parameter names), ``X`` ``(N, dim)`` free values, ``U`` ``(N, dim)`` unit-cube
        points, ``theta`` ``(N, n_params)`` full parameter vectors (fixed values inserted), ``param_names``,
        ``loss``, ``raw_loss``, ``status``, ``idx``; and for every response array path (``exp/channel/y``...)
        ``response/<path>`` stacked to ``(N, m)``: rows without it, or shorter, are padded with NaN, and
        ``response_len/<path>`` ``(N,)`` gives each row's length when they differ.

        Args:
            include_failed: keep failed evaluations (default: ``ok`` only).
            unique: keep one row per distinct parameter set (cache hits repeat their source).

        A compacted run (:meth:`compact_run`) is refused: a dataset needs all its rows.
        """
        info = self.run(run)
        if info.compacted:
            raise ConfigurationError(
                f"run {info.name!r} in {self.path} was compacted ({info.n_dropped} of its {info.n_evals} evaluations "
                "dropped); a dataset needs all its rows: build it from an uncompacted copy of the run"
            )
        recs = self.evaluations(info.id, status=None if include_failed else "ok", responses=True)
        if unique:
            seen, kept = set(), []
            for r in recs:
                if r.key not in seen:
                    seen.add(r.key)
                    kept.append(r)
            recs = kept
        names = info.free_names
        dim = len(names)
        X = np.array([[r.params[n] for n in names] for r in recs], dtype=float).reshape(len(recs), dim)
        theta = np.empty((len(recs), len(info.space)))
        j = 0
        for i, p in enumerate(info.space):
            if p.get("fixed") is not None:
                theta[:, i] = p["fixed"]
            else:
                theta[:, i] = X[:, j]
                j += 1
        out: dict[str, np.ndarray] = {
            "names": np.array(names),
            "param_names": np.array([p["name"] for p in info.space]),
            "X": X,
            "U": np.array([r.u for r in recs], dtype=float).reshape(len(recs), dim),
            "theta": theta,
            "loss": np.array([r.loss for r in recs], dtype=float),
            "raw_loss": np.array([r.raw_loss for r in recs], dtype=float),
            "status": np.array([r.status for r in recs]),
            "idx": np.array([r.idx for r in recs], dtype=int),
        }
        flat = [flatten_response(r.response) for r in recs]
        paths = sorted({k for f in flat for k in f})
        for p in paths:
            arrs = [f.get(p) for f in flat]
            shapes = {a.shape for a in arrs if a is not None}
            if len(shapes) == 1 and all(a is not None for a in arrs):
                out[f"response/{p}"] = np.stack(arrs)
                continue
            vecs = [np.ravel(a) if a is not None else np.empty(0) for a in arrs]
            m = max(v.size for v in vecs)
            M = np.full((len(vecs), m), np.nan)
            for i, v in enumerate(vecs):
                M[i, : v.size] = v
            out[f"response/{p}"] = M
            out[f"response_len/{p}"] = np.array([v.size for v in vecs])
        return out

    def export_dataset(
        self, run: str | int, path: str | os.PathLike[str], *, include_failed: bool = False, unique: bool = True
    ) -> Path:
        """Write :meth:`dataset` to a ``.npz`` file (``numpy.load(path)`` reads it back)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, **self.dataset(run, include_failed=include_failed, unique=unique))
        return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")
