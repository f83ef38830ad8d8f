"""An in-memory run store: the abstract :class:`~mechcalib.storage.base.Store` over plain Python
structures, for fast tests and throw-away runs.

It holds what the SQLite store's tables hold, in the same form (JSON text for settings and parameters, a
NaN REAL as ``None``), and answers the same queries with the same ordering rules, so a calibration gives
the same :class:`~mechcalib.calibrate.Result` with either store. Nothing survives the process; there is no
compaction (a run here is never compacted).
"""

from __future__ import annotations

import logging
import math
import os
import socket
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import ConfigurationError
from .base import Store
from .codec import decode_response, dumps
from .compaction import best_so_far, timing_of
from .rows import (
    EVALUATION_ROW_COLUMNS,
    EvaluationRecord,
    EvaluationRow,
    RunInfo,
    RunSpec,
    alive,
    evaluation_record,
    nan,
    now,
    run_info,
)

log = logging.getLogger(__name__)

# Column order of a stored run (that of the SQLite ``runs`` table, which :func:`run_info` reads).
_RUN_FIELDS = (
    "id",
    "name",
    "status",
    "stop_reason",
    "error",
    "optimizer",
    "settings",
    "seed",
    "termination",
    "evaluator",
    "space",
    "fingerprint",
    "config",
    "versions",
    "host",
    "pid",
    "n_batches",
    "created",
    "updated",
)
# Column order of a stored evaluation (:data:`mechcalib.storage.schema.EVAL_COLS`, then the response).
_EVAL_FIELDS = (
    "id",
    "run_id",
    "idx",
    "batch",
    "pos",
    "key",
    "params",
    "u",
    "loss",
    "raw_loss",
    "status",
    "error",
    "started",
    "finished",
    "worker",
    "source",
    "cached_from",
    "response",
)


def _real(v: Any) -> float | None:
    """A value as a SQLite REAL column returns it: float, NaN stored as NULL."""
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) else v


class MemoryStore(Store):
    """Runs, evaluations and optimiser checkpoints in dictionaries (see the module docstring).

    Args:
        name: named in error messages in place of a file path.
    """

    def __init__(self, *, name: str = ":memory:") -> None:
        self.path = name
        self.readonly = False
        self._runs: dict[int, dict[str, Any]] = {}
        self._evals: dict[int, dict[str, Any]] = {}  # row id -> row, in insertion (= id) order
        self._by_run: dict[int, dict[int, int]] = {}  # run id -> {idx: row id}
        self._by_key: dict[str, list[int]] = {}  # cache key -> row ids, ascending
        self._checkpoints: dict[int, dict[int, tuple[int, bytes, str]]] = {}  # run -> {batch: (n, state, created)}
        self._next_run = 1
        self._next_eval = 1

    def __repr__(self) -> str:
        return f"MemoryStore({self.path!r})"

    def close(self) -> None:
        """Nothing to release: the runs stay readable until the store is dropped."""

    # -- runs ---------------------------------------------------------------------------------------
    def _run_id(self, run: str | int) -> int:
        if isinstance(run, int | np.integer) and not isinstance(run, bool):
            if int(run) in self._runs:
                return int(run)
        else:
            for rid, r in self._runs.items():
                if r["name"] == str(run):
                    return rid
        names = [r["name"] for r in self._runs.values()]
        raise ConfigurationError(f"no run {run!r} in {self.path}; runs are {names}")

    def _rows(self, rid: int) -> list[dict[str, Any]]:
        """A run's evaluation rows by ``idx``."""
        by_idx = self._by_run.get(rid, {})
        return [self._evals[by_idx[i]] for i in sorted(by_idx)]

    def _info(self, rid: int) -> RunInfo:
        r = self._runs[rid]
        rows = self._rows(rid)
        losses = [e["loss"] for e in rows if e["loss"] is not None]
        totals = (
            len(rows),
            sum(e["status"] != "ok" for e in rows),
            min(losses) if losses else None,
            False,
            0,
            r.get("choices"),
        )
        return run_info(tuple(r[f] for f in _RUN_FIELDS) + totals)

    def runs(self) -> list[RunInfo]:
        return [self._info(rid) for rid in sorted(self._runs)]

    def run(self, run: str | int) -> RunInfo:
        return self._info(self._run_id(run))

    def has_run(self, name: str) -> bool:
        return any(r["name"] == name for r in self._runs.values())

    def create_run(self, name: str, spec: RunSpec) -> int:
        if self.has_run(name):
            raise ConfigurationError(f"a run named {name!r} already exists in {self.path}; choose another name")
        rid, self._next_run = self._next_run, self._next_run + 1
        t = now()
        self._runs[rid] = {
            "id": rid,
            "name": name,
            "status": "running",
            "stop_reason": None,
            "error": None,
            **spec.columns(),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "n_batches": 0,
            "created": t,
            "updated": t,
        }
        return rid

    def reopen_run(
        self,
        run_id: int,
        *,
        termination: dict[str, Any],
        evaluator: dict[str, Any],
        config: dict[str, Any] | None,
        versions: dict[str, str],
    ) -> None:
        """Mark a stored run ``running`` by this process (resume); refuses a run another live process of
        this host is marked writing, as the SQLite store does."""
        r = self._runs[run_id]
        me = r["host"] == socket.gethostname() and r["pid"] == os.getpid()
        if r["status"] == "running" and not me:
            writer_alive = alive(r["host"], r["pid"])
            if writer_alive:
                raise ConfigurationError(
                    f"run {run_id} in {self.path} is being written by process {r['pid']}; stop it first or "
                    "resume under another run name"
                )
            if writer_alive is None:
                log.warning(
                    "run %s was marked running by process %s on host %s; taking it over", run_id, r["pid"], r["host"]
                )
        r |= {
            "status": "running",
            "error": None,
            "termination": dumps(termination),
            "evaluator": dumps(evaluator),
            "versions": dumps(versions),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "updated": now(),
        }
        if config is not None:
            r["config"] = dumps(config)

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
        if run_id in self._runs:  # as an SQL UPDATE, an unknown id changes nothing
            self._runs[run_id] |= {
                "status": status,
                "stop_reason": stop_reason,
                "error": error,
                "n_batches": n_batches,
                "updated": now(),
            }
            if choices is not None:
                self._runs[run_id]["choices"] = dumps(choices)

    # -- evaluations --------------------------------------------------------------------------------
    def add_evaluation(self, run_id: int, row: EvaluationRow) -> int:
        if run_id not in self._runs:
            raise ConfigurationError(f"no run with id {run_id} in {self.path}; create the run first")
        by_idx = self._by_run.setdefault(run_id, {})
        idx = int(row.idx)
        if idx in by_idx:
            raise ConfigurationError(
                f"run {self._runs[run_id]['name']!r} in {self.path} already has evaluation {row.idx}; each index "
                "is stored once (is another writer running this run?)"
            )
        eid, self._next_eval = self._next_eval, self._next_eval + 1
        # as the SQLite columns hold them: INTEGER as int, REAL as float with NaN as NULL
        self._evals[eid] = {
            "id": eid,
            "run_id": run_id,
            **dict(zip(EVALUATION_ROW_COLUMNS, row.values(), strict=True)),
            "idx": idx,
            "batch": int(row.batch),
            "pos": int(row.pos),
            **{k: _real(getattr(row, k)) for k in ("loss", "raw_loss", "started", "finished")},
            "cached_from": None if row.cached_from is None else int(row.cached_from),
        }
        by_idx[idx] = eid
        self._by_key.setdefault(row.key, []).append(eid)
        return eid

    def lookup(self, key: str, statuses: Sequence[str] = ("ok", "failed")) -> tuple | None:
        for eid in self._by_key.get(key, ()):
            e = self._evals[eid]
            if e["status"] in statuses:
                return (eid, e["loss"], e["raw_loss"], e["status"], e["error"], e["response"])
        return None

    @staticmethod
    def _record(e: dict[str, Any], responses: bool) -> EvaluationRecord:
        return evaluation_record(
            tuple(e[f] for f in _EVAL_FIELDS[:-1]), decode_response(e["response"]) if responses else None
        )

    def evaluations(
        self, run: str | int, *, status: str | Sequence[str] | None = None, responses: bool = False
    ) -> list[EvaluationRecord]:
        rows = self._rows(self._run_id(run))
        if status is not None:
            sts = {status} if isinstance(status, str) else set(status)
            rows = [e for e in rows if e["status"] in sts]
        return [self._record(e, responses) for e in rows]

    def stored_evaluations(self, run_id: int) -> dict[int, EvaluationRecord]:
        return {e["idx"]: self._record(e, False) for e in self._rows(run_id)}

    def failures(self, run: str | int) -> list[EvaluationRecord]:
        return [self._record(e, False) for e in self._rows(self._run_id(run)) if e["status"] != "ok"]

    def best(self, run: str | int, *, responses: bool = False) -> EvaluationRecord | None:
        ok = [e for e in self._rows(self._run_id(run)) if e["status"] == "ok"]
        if not ok:
            return None
        # ORDER BY loss, idx as SQLite orders it: NULL (a NaN loss) first
        e = min(ok, key=lambda e: (e["loss"] is not None, e["loss"] or 0.0, e["idx"]))
        return self._record(e, responses)

    def trace(self, run: str | int) -> tuple[np.ndarray, np.ndarray]:
        rows = self._rows(self._run_id(run))
        n = rows[-1]["idx"] + 1 if rows else 0
        return best_so_far(n, [(e["idx"], e["loss"]) for e in rows if e["status"] == "ok"])

    def timing(self, run: str | int) -> dict[str, float | int]:
        rows = self._rows(self._run_id(run))
        return timing_of(
            np.array([nan(e["started"]) for e in rows], dtype=float),
            np.array([nan(e["finished"]) for e in rows], dtype=float),
            np.array([e["source"] for e in rows], dtype=object),
        )

    # -- checkpoints --------------------------------------------------------------------------------
    def save_checkpoint(self, run_id: int, batch: int, n_evals: int, state: bytes) -> None:
        t = now()
        self._checkpoints.setdefault(run_id, {})[int(batch)] = (int(n_evals), bytes(state), t)
        self._runs[run_id] |= {"n_batches": batch, "updated": t}

    def touch(self, run_id: int, n_batches: int) -> None:
        if run_id in self._runs:
            self._runs[run_id] |= {"n_batches": n_batches, "updated": now()}

    def iter_checkpoints(self, run_id: int) -> Iterator[tuple[int, int, bytes]]:
        cps = self._checkpoints.get(run_id, {})
        for b in sorted(cps, reverse=True):
            yield b, cps[b][0], cps[b][1]
