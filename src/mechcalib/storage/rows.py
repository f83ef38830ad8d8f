"""The store's rows as Python values, shared by the SQLite and the in-memory store: what is written (a new
run's :class:`RunSpec`, an :class:`EvaluationRow`), what is read back (a run's :class:`RunInfo`, an
:class:`EvaluationRecord`, a :class:`CompactionSummary`) and the conversions of stored rows into them."""

from __future__ import annotations

import json
import math
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

import numpy as np

from .codec import dumps


def now() -> str:
    """The current time as the store writes it: ISO 8601, UTC, milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def alive(host: str | None, pid: int | None) -> bool | None:
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


def nan(v: float | None) -> float:
    """A stored REAL (NULL for NaN) -> float."""
    return math.nan if v is None else float(v)


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """What a new run is created with (:meth:`~mechcalib.storage.base.Store.create_run`): each field is
    stored as canonical JSON in the ``runs`` column of its name (``config=None``: NULL)."""

    optimizer: str
    settings: dict[str, Any]
    seed: Any
    termination: dict[str, Any]
    evaluator: dict[str, Any]
    space: list[dict[str, Any]]
    fingerprint: str | None
    config: dict[str, Any] | None
    versions: dict[str, str]

    def columns(self) -> dict[str, Any]:
        """``{column: stored value}`` of the ``runs`` table, in the order of the fields: the optimiser's name
        as text, the others as canonical JSON text, a missing configuration as NULL."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            keep_as_is = f.name == "optimizer" or (f.name == "config" and value is None)
            out[f.name] = value if keep_as_is else dumps(value)
        return out


@dataclass(frozen=True, kw_only=True)
class EvaluationRow:
    """One evaluation as :meth:`~mechcalib.storage.base.Store.add_evaluation` writes it (the columns of
    :mod:`mechcalib.storage.schema`'s ``evaluations`` table but the ids): ``params`` (``{name: value}``) and
    ``u`` (the unit-cube point) as JSON text, the response as :func:`~mechcalib.storage.codec.encode_response`
    made it. ``(run_id, idx)`` is unique in a store."""

    idx: int
    batch: int
    pos: int
    key: str
    params: str
    u: str
    loss: float
    raw_loss: float
    status: str
    error: str | None
    started: float
    finished: float
    worker: str
    source: str = "live"
    cached_from: int | None = None
    response: bytes | None = None

    def values(self) -> tuple[Any, ...]:
        """The fields in column order (:data:`EVALUATION_ROW_COLUMNS`)."""
        return tuple(getattr(self, name) for name in EVALUATION_ROW_COLUMNS)


#: the ``evaluations`` columns an :class:`EvaluationRow` fills, in its field order (after ``run_id``)
EVALUATION_ROW_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(EvaluationRow))


@dataclass
class RunInfo:
    """A run's record. ``status`` reads ``"interrupted"`` for a run marked running whose writer process
    (on this host) is gone, e.g. killed. ``n_evals``, ``n_failed`` and ``best_loss`` are the run's totals,
    also after :meth:`RunStore.compact_run` (``compacted``; ``n_dropped`` evaluation rows were dropped).
    ``choices``: what the method recorded of its decisions when the run last ended (``auto``'s design,
    starts, fallback rule and phases; empty for methods that record none)."""

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
    choices: list[dict[str, Any]] = field(default_factory=list)

    @property
    def free_names(self) -> list[str]:
        return [p["name"] for p in self.space if p.get("fixed") is None]


@dataclass
class EvaluationRecord:
    """One stored evaluation (see :mod:`mechcalib.storage.schema` for the fields)."""

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


def run_info(r: Sequence[Any]) -> RunInfo:
    """A run's record from its stored row: the ``runs`` columns (``id`` ... ``updated``, the JSON ones as
    text) followed by ``n_evals``, ``n_failed``, the lowest loss (``None``: no loss), ``compacted`` and
    ``n_dropped`` and ``choices`` (JSON text or ``None``; :func:`mechcalib.storage.schema.run_sql`)."""
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
        best_loss=nan(r[21]) if r[21] is not None else math.inf,
        compacted=bool(r[22]),
        n_dropped=int(r[23]),
        choices=json.loads(r[24]) if len(r) > 24 and r[24] is not None else [],
    )
    if info.status == "running" and alive(info.host, info.pid) is False:
        info.status = "interrupted"
    return info


def evaluation_record(r: Sequence[Any], response: Any = None) -> EvaluationRecord:
    """An evaluation from its stored row (:data:`mechcalib.storage.schema.EVAL_COLS`; ``params``/``u`` as
    JSON text, NULL REALs as ``None``) and its decoded response."""
    return EvaluationRecord(
        id=r[0],
        run_id=r[1],
        idx=r[2],
        batch=r[3],
        pos=r[4],
        key=r[5],
        params=json.loads(r[6]),
        u=np.array(json.loads(r[7]), dtype=float),
        loss=nan(r[8]),
        raw_loss=nan(r[9]),
        status=r[10],
        error=r[11],
        started=nan(r[12]),
        finished=nan(r[13]),
        worker=r[14],
        source=r[15],
        cached_from=r[16],
        response=response,
    )


def evaluation_columns_of(
    names: Sequence[str], rows: Sequence[Sequence[Any]], params: Sequence[Mapping[str, float]]
) -> dict[str, np.ndarray]:
    """``{"idx", "loss", "status", "X"}`` of :meth:`Store.evaluation_table` from ``(idx, loss, status, ...)``
    rows and their decoded ``params``: ``X`` ``(N, dim)`` in the order of ``names``, NULL losses as NaN."""
    return {
        "idx": np.array([r[0] for r in rows], dtype=np.int64),
        "loss": np.array([nan(r[1]) for r in rows], dtype=float),
        "status": np.array([r[2] for r in rows], dtype=str),
        "X": np.array([[p.get(n, math.nan) for n in names] for p in params], dtype=float).reshape(
            len(rows), len(names)
        ),
    }
