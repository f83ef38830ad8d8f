"""Exports of a stored run, read through any :class:`~mechcalib.storage.base.Store`: the evaluation table
(CSV, or typed columns for Parquet) and the dataset of parameter sets and responses (arrays, ``.npz``)."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigurationError, writing
from .codec import flatten_response

if TYPE_CHECKING:
    from .base import Store


def _table_header(names: list[str]) -> list[str]:
    return [
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


def export_csv(store: Store, run: str | int, path: str | os.PathLike[str]) -> Path:
    """:meth:`Store.export_csv <mechcalib.storage.base.Store.export_csv>`: floats written with ``repr``
    (they read back exactly)."""
    info = store.run(run)
    names = info.free_names
    recs = store.evaluations(info.id)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with writing(path), open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(_table_header(names))
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


def evaluation_columns(store: Store, run: str | int) -> dict[str, list]:
    """The columns of :func:`export_csv` as typed lists (of a compacted run: its kept rows), e.g. for a
    Parquet table."""
    info = store.run(run)
    names = info.free_names
    recs = store.evaluations(info.id)
    cols: dict[str, list] = {
        "idx": [r.idx for r in recs],
        "batch": [r.batch for r in recs],
        "pos": [r.pos for r in recs],
    }
    for n in names:
        cols[n] = [float(r.params[n]) for r in recs]
    for j, n in enumerate(names):
        cols[f"u_{n}"] = [float(r.u[j]) for r in recs]
    cols |= {
        "loss": [r.loss for r in recs],
        "raw_loss": [r.raw_loss for r in recs],
        "status": [r.status for r in recs],
        "error": [r.error or "" for r in recs],
        "started": [r.started for r in recs],
        "finished": [r.finished for r in recs],
        "seconds": [r.seconds for r in recs],
        "worker": [r.worker or "" for r in recs],
        "source": [r.source for r in recs],
        "cached_from": [r.cached_from for r in recs],
    }
    return cols


def dataset(
    store: Store, run: str | int, *, include_failed: bool = False, unique: bool = True
) -> dict[str, np.ndarray]:
    """:meth:`Store.dataset <mechcalib.storage.base.Store.dataset>` (see there for the keys)."""
    info = store.run(run)
    if info.compacted:
        raise ConfigurationError(
            f"run {info.name!r} in {store.path} was compacted ({info.n_dropped} of its {info.n_evals} evaluations "
            "dropped); a dataset needs all its rows: build it from an uncompacted copy of the run"
        )
    recs = store.evaluations(info.id, status=None if include_failed else "ok", responses=True)
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
    _stack_responses(out, [flatten_response(r.response) for r in recs])
    return out


def _stack_responses(out: dict[str, np.ndarray], flat: list[dict[str, Any]]) -> None:
    """``response/<path>`` ``(N, m)`` per response array path; ragged or missing rows padded with NaN and
    their lengths in ``response_len/<path>``."""
    paths = sorted({k for f in flat for k in f})
    for p in paths:
        arrs = [f.get(p) for f in flat]
        shapes = {a.shape for a in arrs if a is not None}
        if len(shapes) == 1 and all(a is not None for a in arrs):
            out[f"response/{p}"] = np.stack([a for a in arrs if a is not None])
            continue
        vecs = [np.ravel(a) if a is not None else np.empty(0) for a in arrs]
        m = max(v.size for v in vecs)
        M = np.full((len(vecs), m), np.nan)
        for i, v in enumerate(vecs):
            M[i, : v.size] = v
        out[f"response/{p}"] = M
        out[f"response_len/{p}"] = np.array([v.size for v in vecs])


def export_dataset(
    store: Store, run: str | int, path: str | os.PathLike[str], *, include_failed: bool = False, unique: bool = True
) -> Path:
    """Write :func:`dataset` to a ``.npz`` file (``numpy.load(path)`` reads it back); returns its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = dataset(store, run, include_failed=include_failed, unique=unique)
    np.savez_compressed(path, **data)  # type: ignore[arg-type]  # numpy's stub takes **kwds for allow_pickle
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")
