"""A safe copy of a run folder (the ``archive`` command).

Copying ``store.sqlite`` with ``cp`` or a file manager leaves behind the evaluations that still live only in
its write-ahead log (``store.sqlite-wal``) when the run was killed or is still running, or when a reader held
the log open; :func:`archive_run` copies the store through SQLite's backup API instead, which reads the log
too, so the copy is one complete, consistent file. The counts file beside the store is written for the copy
(what the copy holds; a loss the original already had is carried over, so the copy is refused like the
original), and every other file of the folder (``run.json``, ``result.json``, ``uncertainty.json``, plots) is
copied as it is. The copy can be packed as a ``.tar.gz``/``.tgz`` or ``.zip`` archive.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..storage import RunStore
from ..storage.integrity import counts_path, evaluation_loss, recorded_counts, write_counts
from .folder import LOCK_FILE, STORE_FILE, RunDirError

__all__ = ["ArchiveReport", "archive_run"]

_ARCHIVES = (".tar.gz", ".tgz", ".zip")


@dataclass
class ArchiveReport:
    """What :func:`archive_run` copied: the store's runs and evaluations, the other files, and notes (a
    loss the original had, a run still being written)."""

    source: Path
    target: Path
    runs: int = 0
    evaluations: int = 0
    files: int = 0
    notes: list[str] = field(default_factory=list)


def _archive_kind(dest: Path) -> str | None:
    name = dest.name.lower()
    return next((k for k in _ARCHIVES if name.endswith(k)), None)


def copy_store(src: Path, dst: Path, report: ArchiveReport) -> None:
    """Copy the store ``src`` to ``dst`` through SQLite's backup API and write ``dst``'s counts file."""
    counts = recorded_counts(src)  # before the copy: a live writer only adds rows after it
    with RunStore(src, readonly=True) as store:
        wal_found = store.wal_found
        store.backup(dst)
    with RunStore(dst) as copy:
        if copy.damage:
            report.notes.append(f"the copy {dst} is damaged too ({'; '.join(copy.damage[:3])})")
        for info in copy.runs():
            report.runs += 1
            report.evaluations += info.n_evals
            if info.status == "running":
                report.notes.append(
                    f"run {info.name!r} was running (or was killed): the copy holds the {info.n_evals} evaluations "
                    "stored when it was made"
                )
            loss = None
            if not info.compacted:
                loss = evaluation_loss(src, info.name, info.n_evals, wal_found=wal_found, run_id=info.id, counts=counts)
            if loss is None:
                write_counts(dst, info.id, info.name, info.n_evals)
            else:  # the original lost them already: the copy says so too
                write_counts(dst, info.id, info.name, loss.recorded, loss.expected if loss.possible else None)
                report.notes.append(f"the original had lost evaluations: {loss.describe()}")


def _copy_folder(src: Path, dst: Path, report: ArchiveReport) -> None:
    dst.mkdir(parents=True)
    skip = {STORE_FILE, f"{STORE_FILE}-wal", f"{STORE_FILE}-shm", counts_path(Path(STORE_FILE)).name, LOCK_FILE}
    for entry in sorted(src.iterdir()):
        if entry.name in skip or entry.name.endswith(".tmp"):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dst / entry.name)
        else:
            shutil.copy2(entry, dst / entry.name)
        report.files += 1
    if (src / STORE_FILE).is_file():
        copy_store(src / STORE_FILE, dst / STORE_FILE, report)


def _pack(folder: Path, dest: Path, kind: str) -> None:
    part = dest.with_name(dest.name + ".part")
    try:
        if kind == ".zip":
            with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as zf:
                for p in sorted(folder.rglob("*")):
                    zf.write(p, Path(folder.name) / p.relative_to(folder))
        else:
            with tarfile.open(part, "w:gz") as tf:
                tf.add(folder, arcname=folder.name)
        os.replace(part, dest)
    finally:
        with contextlib.suppress(OSError):
            part.unlink()


def archive_run(path: str | os.PathLike[str], dest: str | os.PathLike[str]) -> ArchiveReport:
    """Copy the run folder ``path`` (or a store file written from Python) to ``dest``: a new folder (a new
    store file for a store file), or an archive when ``dest`` ends in ``.tar.gz``, ``.tgz`` or ``.zip`` (one
    folder inside, named after the archive). Safe while the run is running or after it was killed: the
    evaluations in the write-ahead log are copied too."""
    src, dest = Path(path), Path(dest)
    if not src.exists():
        raise RunDirError(f"no run folder or store {str(src)!r} to copy; give a run folder (`mechcalib run ... --out`)")
    if src.is_dir() and not (src / STORE_FILE).is_file():
        raise RunDirError(f"{str(src)!r} holds no run store ({STORE_FILE}); give the folder of a run")
    if dest.exists():
        raise RunDirError(f"{str(dest)!r} exists; give a new name for the copy")
    report = ArchiveReport(src, dest)
    kind = _archive_kind(dest)
    if kind is None:
        try:
            if src.is_dir():
                _copy_folder(src, dest, report)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                copy_store(src, dest, report)
        except BaseException:
            if dest.is_dir():
                shutil.rmtree(dest, ignore_errors=True)
            else:
                for p in (dest, counts_path(dest)):
                    p.unlink(missing_ok=True)
            raise
        return report
    stem = dest.name[: -len(kind)] or "run"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{stem}.") as tmp:
        folder = Path(tmp) / stem
        if src.is_dir():
            _copy_folder(src, folder, report)
        else:
            folder.mkdir()
            copy_store(src, folder / src.name, report)
        for p in folder.glob("*-shm"):
            p.unlink()
        _pack(folder, dest, kind)
    return report
