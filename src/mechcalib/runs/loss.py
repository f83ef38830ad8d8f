"""Evaluations a run folder records as stored that its store does not hold: a deleted or forgotten
write-ahead log, an emptied (0-byte) or replaced ``store.sqlite``. Found against the counts file beside the
store (:mod:`mechcalib.storage.integrity`) and ``result.json``; ``resume`` refuses such a folder unless told
to simulate them again (``--accept-loss``), and ``show`` says how many are gone."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ..storage import RunStore
from ..storage.integrity import (
    EvaluationLoss,
    EvaluationsLostError,
    evaluation_loss,
    forget_counts,
    recorded_counts,
    wal_has_frames,
)
from .folder import RESULT_FILE, STORE_FILE, read_manifest

log = logging.getLogger(__name__)

__all__ = ["check_loss", "folder_loss"]


def _result_record(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / RESULT_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def folder_loss(out: Path, run: str | None = None) -> EvaluationLoss | None:
    """What the run folder ``out`` (or a store file) lost: ``None`` when its store holds every evaluation
    the counts file and ``result.json`` record. Read before anything opens the store for writing."""
    path = out if out.is_file() else out / STORE_FILE
    folder = path.parent
    result = _result_record(folder) if not out.is_file() else {}
    counts = recorded_counts(path)  # before the store is counted (a live writer only adds rows)
    name = run or read_manifest(folder).get("run_name") or result.get("run_name")
    wal_found = wal_has_frames(path)
    held, run_id = 0, None
    if path.is_file() and path.stat().st_size > 0:
        with RunStore(path, readonly=True) as store:
            if not isinstance(name, str):
                runs = store.runs()
                name = runs[-1].name if runs else None
            if isinstance(name, str) and store.has_run(name):
                info = store.run(name)
                if info.compacted:
                    return None
                held, run_id = info.n_evals, info.id
    if not isinstance(name, str):
        named = [e.get("name") for e in counts.values() if isinstance(e, dict)]
        name = next((n for n in named if isinstance(n, str)), None)
        if name is None:
            return None
    result_n = result.get("n_evaluations") if result.get("run_name") == name else None
    return evaluation_loss(
        path,
        name,
        held,
        wal_found=wal_found,
        run_id=run_id,
        counts=counts,
        result_n=result_n if isinstance(result_n, int) else None,
    )


def check_loss(out: Path, run: str | None, accept_loss: bool) -> EvaluationLoss | None:
    """Refuse to resume a folder that lost evaluations (:func:`folder_loss`), naming how many, unless
    ``accept_loss``: then warn that they will be simulated again."""
    loss = folder_loss(out, run)
    if loss is None:
        return None
    if not accept_loss:
        raise EvaluationsLostError(
            f"{loss.describe()}. Nothing was simulated. Put the missing file back if you have it (the "
            f"{loss.store.name}-wal of the stopped run, or the original {loss.store.name}), or continue with "
            f"`mechcalib resume {out} --accept-loss` to simulate those {loss.total} evaluations again"
        )
    log.warning("%s; %d evaluations will be simulated again (--accept-loss)", loss.describe(), loss.total)
    forget_counts(loss.store, loss.run)
    result = loss.store.parent / RESULT_FILE
    if not out.is_file() and result.is_file():  # its counts are those of the lost store: kept aside
        result.replace(result.with_name("result.before-loss.json"))
    return loss
