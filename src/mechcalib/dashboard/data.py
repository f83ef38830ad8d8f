"""What the dashboard shows of one run folder, read in one short read-only transaction (:func:`read_run`).

The store is opened read-only, read and closed again within the call, so that nothing holds a snapshot of it
between two refreshes (a held reader would stop the running calibration's write-ahead-log checkpoint). Large
runs are thinned inside SQLite (:meth:`~mechcalib.storage.base.Store.evaluation_table`): every improvement is
kept, so the best-so-far curve stays exact, and about :data:`MAX_POINTS` other evaluations are drawn.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MechcalibError
from ..runs.folder import SAMPLES_NPZ, UNCERTAINTY_FILE, json_clean, run_name_in, store_path
from ..storage import RunStore

#: about how many evaluations a history or trace figure draws (every improvement is drawn besides)
MAX_POINTS = 1500

__all__ = ["MAX_POINTS", "RunRead", "floats", "read_run", "read_uncertainty_files"]


@dataclass
class RunRead:
    """One read of a run folder: ``view`` (the JSON the page draws) and what the figures need beyond it."""

    folder: Path
    view: dict[str, Any]
    run_name: str | None = None
    best_x: np.ndarray | None = None
    config: dict[str, Any] | None = None
    uncertainty: dict[str, Any] | None = None
    samples_key: tuple[Any, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


def _error_view(folder: Path, message: str) -> dict[str, Any]:
    return {"folder": str(folder), "ok": False, "message": message}


def read_run(folder: Path, *, check: bool = False) -> RunRead:
    """A run folder (or store file) read once; a folder that is not a run, a damaged or unreadable store gives
    a view with ``ok: false`` and the message in words (never an exception of the package's own)."""
    try:
        return _read(folder, check)
    except (MechcalibError, sqlite3.Error, OSError, ValueError) as exc:
        text = str(exc) if isinstance(exc, MechcalibError) else f"{type(exc).__name__}: {exc}"
        return RunRead(folder, _error_view(folder, text))


def _read(folder: Path, check: bool) -> RunRead:
    spath = store_path(folder)
    with RunStore(spath, readonly=True, check=check) as store:  # one short read, closed at once
        name = run_name_in(store, folder, None)
        info = store.run(name)
        every = max(1, math.ceil(info.n_evals / MAX_POINTS))
        table = store.evaluation_table(info.id, every=every)
        best = store.best(info.id)
        damage = store.damage
    free = [p for p in info.space if p.get("fixed") is None]
    loss = table["loss"]
    ok = table["status"] == "ok"
    best_so_far = np.minimum.accumulate(np.where(ok & np.isfinite(loss), loss, np.inf)) if loss.size else loss
    improved = np.flatnonzero(np.diff(np.concatenate([[np.inf], best_so_far])) < 0)
    unc = read_uncertainty_files(spath.parent, shown=folder)
    budget = (info.termination or {}).get("max_evals")
    view: dict[str, Any] = {
        "folder": str(folder),
        "ok": True,
        "message": None,
        "warnings": [],
        "run_name": info.name,
        "status": info.status,
        "stop_reason": info.stop_reason,
        "error": info.error,
        "optimizer": info.optimizer,
        "n_evaluations": info.n_evals,
        "n_failed": info.n_failed,
        "budget": budget,
        "updated": info.updated,
        "best_loss": None if best is None else best.loss,
        "best_index": None if best is None else best.idx,
        "parameters": [{k: p.get(k) for k in ("name", "unit", "lower", "upper", "scale")} for p in free],
        "best": None if best is None else {p["name"]: best.params.get(p["name"]) for p in free},
        "intervals": _intervals(unc["data"], best.idx if best is not None else None),
        "uncertainty_note": unc["note"],
    }
    view = json_clean(view)  # the small part; the arrays below are made JSON-safe as arrays
    last = [info.n_evals - 1] if improved.size else []
    view["history"] = {
        "every": every,
        "idx": table["idx"][ok].tolist(),
        "loss": floats(loss[ok]),
        "failed_idx": table["idx"][~ok].tolist(),
        "best_idx": table["idx"][improved].tolist() + last,
        "best_loss": floats(np.concatenate([best_so_far[improved], best_so_far[-1:] if last else []])),
    }
    view["traces"] = {"idx": table["idx"][ok].tolist(), "X": [floats(col) for col in table["X"][ok].T]}
    if damage:
        view["warnings"].append(
            f"the run store {spath} is damaged ({'; '.join(damage[:3])}); salvage it with `mechcalib repair {folder}`"
        )
    if info.compacted:
        view["warnings"].append(f"compacted run: {info.n_dropped} evaluations that did not improve were dropped")
    best_x = None if best is None else np.array([best.params[p["name"]] for p in free], dtype=float)
    return RunRead(
        folder,
        view,
        run_name=info.name,
        best_x=best_x,
        config=info.config,
        uncertainty=unc["data"],
        samples_key=unc["key"],
    )


def floats(a: np.ndarray) -> list[float | None]:
    """An array as a JSON list, non-finite values as ``None`` (strict JSON has no NaN or infinity)."""
    a = np.asarray(a, dtype=float)
    if np.isfinite(a).all():
        return a.tolist()
    return [float(v) if np.isfinite(v) else None for v in a]


def read_uncertainty_files(folder: Path, *, shown: Path | None = None) -> dict[str, Any]:
    """``uncertainty.json`` and whether ``samples.npz`` is there: ``data`` (``None`` without, with ``note``
    saying why, naming the run as ``shown``) and ``key`` (the files' sizes and times: what a cached band
    depends on)."""
    path, npz = folder / UNCERTAINTY_FILE, folder / SAMPLES_NPZ
    key = tuple((p.stat().st_mtime_ns, p.stat().st_size) if p.is_file() else None for p in (path, npz))
    if not path.is_file():
        run = folder if shown is None else shown
        note = f"no {UNCERTAINTY_FILE} in {folder}: run `mechcalib uncertainty {run}` for intervals, corner and band"
        return {"data": None, "note": note, "key": key}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return {"data": None, "note": f"{path} cannot be read ({exc}); run `mechcalib uncertainty` again", "key": key}
    if not isinstance(data, dict) or not isinstance(data.get("parameters"), dict):
        return {"data": None, "note": f"{path} holds no parameters; run `mechcalib uncertainty` again", "key": key}
    return {"data": data, "note": None, "key": key}


def _intervals(data: dict[str, Any] | None, best_index: int | None) -> dict[str, Any] | None:
    """Per parameter ``best``, ``lower``, ``upper``, ``std`` of the 95 % intervals, the method and staleness."""
    if data is None:
        return None
    source = data.get("source") or {}
    stale = best_index is not None and source.get("best_index") not in (None, best_index)
    return {
        "method": data.get("method"),
        "parameters": {
            n: {k: p.get(k) for k in ("best", "lower", "upper", "std")} for n, p in data["parameters"].items()
        },
        "stale": bool(stale),
        "computed_at": source.get("best_index"),
    }
