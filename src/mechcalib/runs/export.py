"""A run's evaluations as a table (CSV or Parquet) and its dataset for surrogate training (the ``export``
command)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError, MissingExtraError
from ..storage import RunStore
from ..storage.export import evaluation_columns
from .folder import run_name_in, store_path

__all__ = ["export_run"]


def _check_parquet_engine() -> None:
    missing = [m for m in ("pandas",) if importlib.util.find_spec(m) is None]
    if importlib.util.find_spec("pyarrow") is None and importlib.util.find_spec("fastparquet") is None:
        missing.append("pyarrow")
    if missing:
        raise MissingExtraError(
            f"Parquet export needs {' and '.join(missing)}, which is not installed; install it with "
            f"`pip install 'mechcalib[parquet]'` (pandas and pyarrow), or export CSV (format 'csv')"
        )


def export_run(
    out_dir: str | os.PathLike[str],
    *,
    path: str | os.PathLike[str] | None = None,
    fmt: str = "csv",
    dataset: str | os.PathLike[str] | None = None,
    include_failed: bool = False,
    run: str | None = None,
    all_runs: bool = False,
) -> dict[str, Any]:
    """Write a run's evaluations as a table, and optionally its dataset for surrogate training.

    A run folder's store holds, beside the folder's run, the runs made from it: ``<run>.polish``,
    ``<run>.jacobian``, ``<run>.posterior`` and ``<run>.profile.<name>`` of ``mechcalib uncertainty`` (and
    ``<run>.neff.*`` with ``--effective-samples``). ``run``
    exports one of them, ``all_runs`` every run in the store.

    Args:
        path: the table file (default ``<out_dir>/evaluations.csv`` or ``.parquet`` for the folder's run,
            ``evaluations.<run>.csv`` for another); columns as :meth:`RunStore.export_csv`. With ``all_runs``
            a folder for the tables (default the store's folder), named as by default.
        fmt: ``"csv"`` or ``"parquet"`` (needs pandas with pyarrow or fastparquet).
        dataset: an ``.npz`` file for :meth:`RunStore.dataset` (parameters, losses and, when the run kept
            them (``output.keep_responses``), the simulated responses); with ``all_runs`` each run's dataset is
            ``<stem>.<run>.npz`` beside it (the folder's run keeps ``<stem>.npz``).
        include_failed: keep failed evaluations in the dataset.
        run: the run to export (default: the folder's run, :func:`~.folder.run_name_in`).
        all_runs: export every run in the store (``run`` must then be ``None``).

    Returns, for the run exported (with ``all_runs``, the folder's run), ``{"run": name, "table": path,
    "rows": n, "dataset": path or None, "dataset_rows": n, "responses": [keys]}``, plus ``"exports"`` (that
    dict for every run written, in store order) and ``"other_runs"`` (``[{"name", "status", "evaluations"}]``
    of the store's runs not written). A compacted run (:meth:`RunStore.compact_run`) exports its kept rows
    only (``rows`` counts them) and gives no dataset.
    """
    if fmt not in ("csv", "parquet"):
        raise ConfigurationError(f"export format must be 'csv' or 'parquet', got {fmt!r}")
    if all_runs and run is not None:
        raise ConfigurationError(
            f"export takes one run (--run {run!r}) or every run (--all), not both; drop one of them"
        )
    if fmt == "parquet":
        _check_parquet_engine()
    out = Path(out_dir)
    spath = store_path(out)
    with RunStore(spath, readonly=True) as store:
        main = run_name_in(store, out, run)
        home = main if run is None else run_name_in(store, out, None)  # the folder's own run
        infos = store.runs()
        names = [r.name for r in infos] if all_runs else [main]
        folder = Path(path) if all_runs and path is not None else spath.parent
        exports = []
        for name in names:
            own = name == home
            table = folder / _file_name("evaluations", None if own else name, f".{fmt}")
            if path is not None and not all_runs:
                table = Path(path)
            dpath = None
            if dataset is not None:
                d = Path(dataset)
                stem = d.name[: -len(".npz")] if d.suffix == ".npz" else d.name
                dpath = d.with_name(_file_name(stem, None if own or not all_runs else name, ".npz"))
            exports.append(_export_one(store, name, table, fmt, dpath, include_failed))
        others = [{"name": r.name, "status": r.status, "evaluations": r.n_evals} for r in infos if r.name not in names]
    first = next(e for e in exports if e["run"] == main)
    return first | {"exports": exports, "other_runs": others}


def _file_name(stem: str, run: str | None, suffix: str) -> str:
    """``stem.suffix``, or ``stem.<run>.suffix`` with the run name made safe for a file name."""
    if run is None:
        return stem + suffix
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in run)
    return f"{stem}.{safe}{suffix}"


def _export_one(
    store: RunStore, name: str, table: Path, fmt: str, dataset: Path | None, include_failed: bool
) -> dict[str, Any]:
    """One run's table (and dataset) written; the dict of :func:`export_run` for it."""
    if fmt == "csv":
        store.export_csv(name, table)
        info = store.run(name)
        rows = info.n_evals - info.n_dropped  # the rows stored (and written)
    else:
        import pandas as pd

        cols = evaluation_columns(store, name)
        table.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(cols).to_parquet(table, index=False)
        rows = len(cols["idx"])
    res: dict[str, Any] = {
        "run": name, "table": table, "rows": rows, "dataset": None, "dataset_rows": 0, "responses": []
    }  # fmt: skip
    if dataset is not None:
        data = store.dataset(name, include_failed=include_failed)
        dataset.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, Any] = dict(data)
        np.savez_compressed(dataset, **arrays)
        res |= {
            "dataset": dataset,
            "dataset_rows": int(data["X"].shape[0]),
            "responses": sorted(k for k in data if k.startswith("response/")),
        }
    return res
