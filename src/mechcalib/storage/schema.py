"""The SQLite store's on-disk format: tables, schema version, the additions made to older stores, and the
SQL its queries share.

One file holds any number of runs. Tables:

``runs``
    one row per run: ``name`` (unique), ``status`` (``running``/``finished``/``interrupted``/``failed``),
    ``stop_reason``, the optimiser's name, settings and seed (JSON), the termination rules, the evaluator's
    settings, the parameter space, the problem fingerprint, the caller's ``config`` (JSON), package
    versions, host and process id of the writer, ``created``/``updated`` (ISO 8601, UTC), ``choices`` (JSON:
    the choices the method recorded at the run's end, e.g. ``auto``'s phases; added to older stores).
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
``meta``
    ``schema_version``: :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..errors import ConfigurationError

SCHEMA_VERSION = 1

# Every statement is CREATE ... IF NOT EXISTS: run on each writable open, it creates a new store and adds
# the tables a store written by an older version lacks (``compactions``) without touching the rest.
SCHEMA = """
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
    updated TEXT NOT NULL,
    choices TEXT
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

#: The evaluation columns an :class:`~mechcalib.storage.rows.EvaluationRecord` is read from, in its
#: field order (``response`` is appended when wanted).
EVAL_COLS = (
    "id, run_id, idx, batch, pos, key, params, u, loss, raw_loss, status, error, started, finished, worker, "
    "source, cached_from"
)

#: The columns of a ``compactions`` row, as :meth:`RunStore._compaction` returns them.
COMPACTION_COLS = (
    "n_evals",
    "n_ok",
    "n_failed",
    "n_live",
    "last_idx",
    "seconds",
    "first_started",
    "last_finished",
    "active_seconds",
    "n_dropped",
    "created",
)

# A run's record with its totals, in the order :func:`~mechcalib.storage.rows.run_info` reads. A
# compacted run keeps every failure and its best evaluation, so ``n_failed`` and ``MIN(loss)`` read from the
# kept rows stay exact; its total count comes from its compaction record.
_RUN_SQL = (
    "SELECT r.id, r.name, r.status, r.stop_reason, r.error, r.optimizer, r.settings, r.seed, r.termination, "
    "r.evaluator, r.space, r.fingerprint, r.config, r.versions, r.host, r.pid, r.n_batches, r.created, "
    "r.updated, {n_evals}, "
    "(SELECT COUNT(*) FROM evaluations e WHERE e.run_id=r.id AND e.status!='ok'), "
    "(SELECT MIN(loss) FROM evaluations e WHERE e.run_id=r.id), {compacted}, {n_dropped}, {choices} FROM runs r"
)
_COUNT_SQL = "(SELECT COUNT(*) FROM evaluations e WHERE e.run_id=r.id)"


def run_sql(has_compactions: bool, has_choices: bool = True) -> str:
    """The ``SELECT`` of :func:`~mechcalib.storage.rows.run_info` rows (append ``WHERE``/``ORDER BY``);
    ``has_compactions``/``has_choices``: whether the file has the ``compactions`` table and the ``runs.choices``
    column (a store written by an older version and opened read-only has not)."""
    choices = "r.choices" if has_choices else "NULL"
    if not has_compactions:
        return _RUN_SQL.format(n_evals=_COUNT_SQL, compacted="0", n_dropped="0", choices=choices)
    c = "(SELECT {} FROM compactions c WHERE c.run_id=r.id)"
    return _RUN_SQL.format(
        n_evals=f"COALESCE({c.format('n_evals')}, {_COUNT_SQL})",
        compacted=f"EXISTS {c.format('1')}",
        n_dropped=f"COALESCE({c.format('n_dropped')}, 0)",
        choices=choices,
    )


def has_column(con: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in con.execute(f"PRAGMA table_info({table})"))


def ensure_schema(con: sqlite3.Connection, path: Path) -> None:
    """Create the tables a store lacks and record or check its schema version (inside a transaction)."""
    for stmt in SCHEMA.split(";"):
        if stmt.strip():
            con.execute(stmt)
    if not has_column(con, "runs", "choices"):  # a store written before the column was added
        con.execute("ALTER TABLE runs ADD COLUMN choices TEXT")
    row = con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    if row is None:
        con.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    elif int(row[0]) != SCHEMA_VERSION:
        raise ConfigurationError(
            f"RunStore: {path} has schema version {row[0]}, this package reads version {SCHEMA_VERSION}"
        )
