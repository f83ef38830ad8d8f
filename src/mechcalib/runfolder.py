"""The run folder's one-writer rule: a process that runs or resumes in a folder holds an exclusive
``flock`` on its ``run.lock`` for the run's whole life, taken before anything else is written there, so a
second process is refused (:class:`RunDirError`) having changed nothing. The kernel releases the lock when
the process ends, killed or not, so a stale lock never blocks a resume."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from .errors import ConfigurationError

#: held (``flock``) by the one process writing in a run folder, for the run's whole life
LOCK_FILE = "run.lock"

__all__ = ["LOCK_FILE", "RunDirError", "folder_lock", "locked_by_another"]


class RunDirError(ConfigurationError):
    """A run folder is missing, holds no run store, already holds a run, or is in use by another process."""


@contextlib.contextmanager
def folder_lock(out_dir: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the run folder's lock (an exclusive ``flock`` on ``run.lock``) for the ``with`` block: one
    process writes in a run folder at a time. Taken before anything else is written there, so a process
    that is refused (:class:`RunDirError`) has changed nothing. The lock is released when the block ends
    or the process dies (the file stays). Without ``fcntl`` (Windows) nothing is locked."""
    out = Path(out_dir)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield out
        return
    path = out / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RunDirError(
            f"cannot write in the run folder {str(out)!r} ({exc.strerror}); a run or resume needs a writable "
            "folder: copy the folder elsewhere and resume the copy (`mechcalib resume COPY`)"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunDirError(
                f"the run folder {str(out)!r} is in use: another mechcalib process is running there (a `run` or "
                "`resume`); wait until it ends and `mechcalib resume` it, or give another folder with --out"
            ) from None
        yield out
    finally:
        os.close(fd)  # releases the lock


def locked_by_another(out: Path) -> bool:
    """Whether another process holds the folder's lock now (its store may be half created: not read)."""
    try:
        with folder_lock(out) if (out / LOCK_FILE).exists() else contextlib.nullcontext():
            return False
    except RunDirError:
        return True
