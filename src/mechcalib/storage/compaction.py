"""Compaction: shrink a finished run to its failures and improvements, keeping its totals exact.

The rules (:func:`keep_mask`) and the totals a compacted run keeps exact (:func:`timing_of`,
:func:`best_so_far`) are plain functions of a run's columns, shared by every store; :func:`compact_sqlite`
applies them to a :class:`~mechcalib.storage.sqlite.RunStore`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigurationError
from .rows import CompactionSummary, nan, now

if TYPE_CHECKING:
    from .sqlite import RunStore

log = logging.getLogger(__name__)

#: A pause between consecutive evaluations this long or longer is taken as the run being stopped and
#: resumed later, and left out of :meth:`RunStore.timing`'s ``active_seconds``.
ACTIVE_GAP_S = 60.0


def keep_mask(loss: np.ndarray, ok: np.ndarray) -> np.ndarray:
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


def timing_of(started: np.ndarray, finished: np.ndarray, source: np.ndarray) -> dict[str, float | int]:
    """Totals of :meth:`RunStore.timing` from a run's full rows in evaluation order; ``seconds`` sums the
    simulation calls (sets simulated together share one call's times and count once)."""
    if started.size == 0:
        return {
            "seconds": 0.0,
            "first_started": math.nan,
            "last_finished": math.nan,
            "active_seconds": 0.0,
            "n_live": 0,
        }
    d = finished - started
    timed = np.isfinite(d)
    # wall time computing: the steps between consecutive ends (from the first start), long pauses left out
    t = np.concatenate(([started[0]], finished))
    gaps = np.diff(t)
    with np.errstate(invalid="ignore"):
        active = gaps[(gaps >= 0) & (gaps < ACTIVE_GAP_S)]
    # a chunk of sets simulated by one call shares the chunk's (started, finished): count each call once,
    # or a batch of n sets would add n times its wall time
    calls = {(float(a), float(b)) for a, b in zip(started[timed], finished[timed], strict=True)}
    return {
        "seconds": math.fsum(b - a for a, b in calls),
        "first_started": float(np.nanmin(started)) if np.isfinite(started).any() else math.nan,
        "last_finished": float(np.nanmax(finished)) if np.isfinite(finished).any() else math.nan,
        "active_seconds": math.fsum(active.tolist()),
        "n_live": int(np.sum(timed & (source == "live"))),
    }


def best_so_far(n: int, ok_rows: Sequence[tuple[int, float | None]]) -> tuple[np.ndarray, np.ndarray]:
    """The best-so-far curve of :meth:`RunStore.trace` from the run's index count and its ``ok`` rows
    ``(idx, loss)`` (a NaN loss as ``None``)."""
    f = np.full(n, np.inf)
    if ok_rows:
        i = np.array([r[0] for r in ok_rows], dtype=np.int64)
        v = np.array([nan(r[1]) for r in ok_rows], dtype=float)
        f[i] = np.where(np.isnan(v), np.inf, v)
    return np.arange(n, dtype=np.int64), np.minimum.accumulate(f) if n else f


def check_keep_checkpoints(keep_checkpoints: object) -> int:
    if isinstance(keep_checkpoints, bool) or not isinstance(keep_checkpoints, int | np.integer) or keep_checkpoints < 0:
        raise ConfigurationError(f"keep_checkpoints must be an integer >= 0, got {keep_checkpoints!r}")
    return int(keep_checkpoints)


def _not_finished(name: str, path: object, status: str) -> ConfigurationError:
    return ConfigurationError(
        f"run {name!r} in {path} is {status}; only a finished or failed run can be compacted: finish or resume it first"
    )


def compact_sqlite(store: RunStore, run: str | int, keep_checkpoints: int) -> CompactionSummary:
    """:meth:`RunStore.compact_run` (see there): the run's totals go to ``compactions`` first, then the
    dropped evaluation rows and old checkpoints are deleted, all in one transaction."""
    if store.readonly:
        raise ConfigurationError(f"{store!r} is read-only; open it writable to compact a run")
    keep_checkpoints = check_keep_checkpoints(keep_checkpoints)
    info = store.run(run)
    if info.status not in ("finished", "failed"):
        raise _not_finished(info.name, store.path, info.status)
    rid = info.id
    with store._tx() as con:
        status = con.execute("SELECT status FROM runs WHERE id=?", (rid,)).fetchone()[0]
        if status not in ("finished", "failed"):  # reopened since
            raise _not_finished(info.name, store.path, status)
        rows = con.execute(
            "SELECT id, idx, loss, status, started, finished, source FROM evaluations WHERE run_id=? ORDER BY idx",
            (rid,),
        ).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        loss = np.array([nan(r[2]) for r in rows], dtype=float)
        ok = np.array([r[3] == "ok" for r in rows], dtype=bool)
        keep = keep_mask(loss, ok)
        drop = ids[~keep].tolist()
        prev = con.execute("SELECT n_dropped, created FROM compactions WHERE run_id=?", (rid,)).fetchone()
        if prev is None:
            t = timing_of(
                np.array([nan(r[4]) for r in rows], dtype=float),
                np.array([nan(r[5]) for r in rows], dtype=float),
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
                    now(),
                ),
            )
        elif drop:  # cannot happen for rows written by this class (compaction is idempotent); kept exact anyway
            con.execute("UPDATE compactions SET n_dropped=n_dropped+? WHERE run_id=?", (len(drop), rid))
        con.executemany("DELETE FROM evaluations WHERE id=?", ((i,) for i in drop))
        sql = "SELECT batch FROM checkpoints WHERE run_id=? ORDER BY batch DESC"
        batches = [r[0] for r in con.execute(sql, (rid,))]
        old = batches[keep_checkpoints:]
        con.executemany("DELETE FROM checkpoints WHERE run_id=? AND batch=?", ((rid, b) for b in old))
    comp = store._compaction(rid)
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
        first_started=nan(comp["first_started"]),
        last_finished=nan(comp["last_finished"]),
        active_seconds=float(comp["active_seconds"]),
        created=comp["created"],
    )


def plan_compaction(store: RunStore, run: str | int, keep_checkpoints: int) -> dict[str, int]:
    """What :meth:`RunStore.compact_run` would drop, read only (``compact --dry-run``; works on a read-only
    store): ``{"n_evals", "n_kept", "n_dropped", "checkpoints_dropped"}`` (``n_dropped``: rows it would drop
    now)."""
    keep_checkpoints = check_keep_checkpoints(keep_checkpoints)
    info = store.run(run)
    if info.status not in ("finished", "failed"):
        raise _not_finished(info.name, store.path, info.status)
    recs = store.evaluations(info.id)
    loss = np.array([r.loss for r in recs], dtype=float)
    ok = np.array([r.status == "ok" for r in recs], dtype=bool)
    kept = int(keep_mask(loss, ok).sum())
    n_ckpt = len(store.checkpoints(info.id))
    return {
        "n_evals": info.n_evals,
        "n_kept": kept,
        "n_dropped": len(recs) - kept,
        "checkpoints_dropped": max(0, n_ckpt - keep_checkpoints),
    }
