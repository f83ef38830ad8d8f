"""Salvage of a damaged run folder or run store (the ``repair`` command)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..storage.repair import RepairReport, repair_store
from .folder import MANIFEST_FILE, STORE_FILE, RunDirError, now, read_manifest, store_path, write_json

__all__ = ["repair_run"]


def repair_run(path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> RepairReport:
    """Salvage a damaged run store (:func:`~mechcalib.storage.repair.repair_store`). ``path``: a run folder
    (the salvage is a new run folder, default ``<path>.repaired``, holding the salvaged store and a copy of
    ``run.json``, ready for :func:`~mechcalib.runs.resume_run`) or a store file (default
    ``<stem>.repaired.sqlite``)."""
    src = Path(path)
    if src.is_dir():
        dest = Path(out) if out is not None else src.with_name(src.name + ".repaired")
        if dest.exists():
            raise RunDirError(f"{str(dest)!r} exists; give a new folder with --out")
        dest.mkdir(parents=True)
        try:
            report = repair_store(store_path(src), dest / STORE_FILE)
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            raise
        if (src / MANIFEST_FILE).is_file():
            write_json(dest / MANIFEST_FILE, read_manifest(src) | {"repaired_from": str(src), "created": now()})
        report.target = dest
        return report
    dest = Path(out) if out is not None else src.with_name(f"{src.stem}.repaired{src.suffix or '.sqlite'}")
    return repair_store(src, dest)
