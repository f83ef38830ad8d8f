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
) -> dict[str, Any]:
    """Write a run's evaluations as a table, and optionally its dataset for surrogate training.

    Args:
        path: the table file (default ``<out_dir>/evaluations.csv`` or ``.parquet``); columns as
            :meth:`RunStore.export_csv`.
        fmt: ``"csv"`` or ``"parquet"`` (needs pandas with pyarrow or fastparquet).
        dataset: an ``.npz`` file for :meth:`RunStore.dataset` (parameters, losses and, when the run kept
            them (``output.keep_responses``), the simulated responses).
        include_failed: keep failed evaluations in the dataset.

    Returns ``{"table": path, "rows": n, "dataset": path or None, "dataset_rows": n, "responses": [keys]}``.
    A compacted run (:meth:`RunStore.compact_run`) exports its kept rows only (``rows`` counts them) and
    gives no dataset.
    """
    if fmt not in ("csv", "parquet"):
        raise ConfigurationError(f"export format must be 'csv' or 'parquet', got {fmt!r}")
    if fmt == "parquet":
        _check_parquet_engine()
    out = Path(out_dir)
    spath = store_path(out)
    with RunStore(spath, readonly=True) as store:
        name = run_name_in(store, out, run)
        table = Path(path) if path is not None else spath.parent / f"evaluations.{fmt}"
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
        res: dict[str, Any] = {"table": table, "rows": rows, "dataset": None, "dataset_rows": 0, "responses": []}
        if dataset is not None:
            data = store.dataset(name, include_failed=include_failed)
            dpath = Path(dataset)
            if dpath.suffix != ".npz":
                dpath = dpath.with_name(dpath.name + ".npz")
            dpath.parent.mkdir(parents=True, exist_ok=True)
            arrays: dict[str, Any] = dict(data)
            np.savez_compressed(dpath, **arrays)
            res |= {
                "dataset": dpath,
                "dataset_rows": int(data["X"].shape[0]),
                "responses": sorted(k for k in data if k.startswith("response/")),
            }
    return res
