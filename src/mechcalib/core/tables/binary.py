"""The binary formats of :func:`~mechcalib.core.tables.read_measured`: ``.npz`` (never unpickled), MATLAB
``.mat`` (scipy; v7.3 read as HDF5), HDF5 (h5py) and Parquet (pyarrow); every error names the file."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DataError, require
from .base import Table, select, split_header


def read_npz(path: Path, wanted: Collection[str | int] | None) -> Table:
    import zipfile
    import zlib

    broken = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error)
    try:
        z = np.load(path, allow_pickle=False)
    except broken as exc:
        # numpy reads a file that is neither a zip archive nor a .npy array as a pickle, which it refuses
        why = "neither a zip archive nor a .npy array" if "pickle" in str(exc) else str(exc)
        raise DataError(
            f"{path}: not a NumPy .npz archive ({why}); save the data with numpy.savez(path, t=..., force=...), "
            "or give the file's real format (format = 'csv' | 'mat' | 'hdf5' | 'parquet')"
        ) from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise DataError(
            f"{path}: a single .npy array, not a .npz archive of named arrays; save the data with "
            "numpy.savez(path, t=..., force=...)"
        )
    with z:
        names = list(z.files)
        cols: dict[str, Any] = {}
        for k in select(names, wanted):
            try:
                cols[k] = z[k]
            except ValueError as exc:
                if "allow_pickle" in str(exc) or "pickled" in str(exc):
                    raise DataError(
                        f"{path}: array {k!r} holds Python objects (dtype object), which are never unpickled (a "
                        "pickle can run code); save it as an array of numbers: numpy.savez(path, "
                        f"{k}=numpy.asarray(values, dtype=float), ...)"
                    ) from None
                raise DataError(f"{path}: array {k!r} cannot be read ({exc}); write the file again") from None
            except broken as exc:
                raise DataError(f"{path}: array {k!r} cannot be read ({exc}); the archive is damaged") from None
    return Table(str(path), tuple(names), cols, {})


def read_mat(path: Path, wanted: Collection[str | int] | None) -> Table:
    import scipy.io

    try:
        data = scipy.io.loadmat(path, squeeze_me=True)
    except NotImplementedError:  # a v7.3 file: HDF5 inside
        return read_hdf5(path, wanted)
    except Exception as exc:  # scipy's parser fails on a foreign file with assorted types; the file is at fault
        raise DataError(
            f"{path}: not a readable MATLAB v4-v7.3 file ({type(exc).__name__}: {exc}); save it with MATLAB's save, "
            "or give the file's real format (format = 'csv' | 'npz' | 'hdf5' | 'parquet')"
        ) from None
    cols = {k: v for k, v in data.items() if not k.startswith("__")}
    names = list(cols)
    return Table(str(path), tuple(names), {k: cols[k] for k in select(names, wanted)}, {})


def read_hdf5(path: Path, wanted: Collection[str | int] | None) -> Table:
    h5py = require("h5py", "hdf5")
    datasets: dict[str, Any] = {}
    cols: dict[str, Any] = {}
    found_units: dict[str, str] = {}
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise DataError(
            f"{path}: not a readable HDF5 file ({exc}); give an HDF5 file (h5py, MATLAB v7.3), or the file's "
            "real format (format = 'csv' | 'npz' | 'mat' | 'parquet')"
        ) from None
    with f:

        def visit(name: str, obj: Any) -> None:
            if isinstance(obj, h5py.Dataset):
                datasets[name] = obj

        try:
            f.visititems(visit)
            names = list(datasets)
            for name in select(names, wanted):
                obj = datasets[name]
                cols[name] = obj[()]
                u = obj.attrs.get("units", obj.attrs.get("unit", ""))
                found_units[name] = u.decode() if isinstance(u, bytes) else str(u)
        except (OSError, RuntimeError, KeyError, ValueError, TypeError) as exc:
            raise DataError(f"{path}: the HDF5 file cannot be read ({exc}); it is damaged: write it again") from None
    return Table(str(path), tuple(names), cols, found_units)


def read_parquet(path: Path, wanted: Collection[str | int] | None) -> Table:
    require("pyarrow", "parquet")
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        raw_names = list(pf.schema_arrow.names)
        parsed = [split_header(n) for n in raw_names]
        names = [n for n, _ in parsed]
        keep = select(names, wanted)
        by_name = dict(zip(names, raw_names, strict=True))
        tbl = pf.read(columns=[by_name[k] for k in keep])
        cols = {k: tbl.column(by_name[k]).to_numpy(zero_copy_only=False) for k in keep}
    except (OSError, ValueError, TypeError, KeyError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise DataError(
            f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc}); write it with "
            "pandas.DataFrame.to_parquet, or give the file's real format (format = 'csv' | 'npz' | 'mat' | 'hdf5')"
        ) from None
    if len(set(names)) != len(names):
        raise DataError(f"{path}: column names must be unique, got {names}")
    return Table(str(path), tuple(names), cols, dict(parsed))
