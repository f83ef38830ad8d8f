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
"""

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
    (on this host) is gone, e.g. killed."""

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


class RunStore:
    """Runs, evaluations and optimiser checkpoints in one SQLite file.

    Args:
        path: the database file (created with its folder if absent).
        durability: ``"process"`` (a commit survives a killed process; default) or ``"power"`` (also a
            power cut; an fsync per evaluation).
        timeout: seconds to wait for a lock held by another writer.
        readonly: open for queries only (any number of processes may read while a run writes).

    Queries take a run by name or id: :meth:`runs`, :meth:`run`, :meth:`status`, :meth:`n_evaluations`,
    :meth:`evaluations`, :meth:`failures`, :meth:`best`, :meth:`checkpoints`, :meth:`export_csv`,
    :meth:`dataset` and :meth:`export_dataset`. The writing methods are used by
    :func:`mechcalib.calibrate`.
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
        return [self._info(r) for r in self._q(self._RUN_SQL + " ORDER BY r.id")]

    def run(self, run: str | int) -> RunInfo:
        """One run by name or id."""
        return self._info(self._q(self._RUN_SQL + " WHERE r.id=?", (self._run_id(run),))[0])

    def has_run(self, name: str) -> bool:
        return bool(self._q("SELECT 1 FROM runs WHERE name=?", (name,)))

    def status(self, run: str | int) -> str:
        return self.run(run).status

    def config(self, run: str | int) -> dict[str, Any] | None:
        return self.run(run).config

    _RUN_SQL = (
        "SELECT r.id, r.name, r.status, r.stop_reason, r.error, r.optimizer, r.settings, r.seed, r.termination, "
        "r.evaluator, r.space, r.fingerprint, r.config, r.versions, r.host, r.pid, r.n_batches, r.created, "
        "r.updated, (SELECT COUNT(*) FROM evaluations e WHERE e.run_id=r.id), "
        "(SELECT COUNT(*) FROM evaluations e WHERE e.run_id=r.id AND e.status!='ok'), "
        "(SELECT MIN(loss) FROM evaluations e WHERE e.run_id=r.id) FROM runs r"
    )

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
        ``(run_id, idx)`` uniqueness and fail rather than mix their evaluations).
        """
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
            con.execute("DELETE FROM runs WHERE id=?", (rid,))

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
        ``(id, loss, raw_loss, status, error, response blob)``."""
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
        """A run's evaluations in run order, optionally only some statuses, optionally with responses."""
        rid = self._run_id(run)
        if status is None:
            return self._records("run_id=?", (rid,), responses)
        sts = [status] if isinstance(status, str) else list(status)
        return self._records(f"run_id=? AND status IN ({','.join('?' * len(sts))})", (rid, *sts), responses)

    def n_evaluations(self, run: str | int, *, status: str | None = None) -> int:
        """How many evaluations a run has stored (of one status)."""
        rid = self._run_id(run)
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
        source, cached_from``."""
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
        """
        info = self.run(run)
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
