"""A run folder's files and rules: their names, the run store's path, the run named in ``run.json``, JSON
written atomically, and the one-writer lock.

The lock: a process that runs or resumes in a folder holds an exclusive ``flock`` on its ``run.lock`` for the
run's whole life, taken before anything else is written there, so a second process is refused
(:class:`RunDirError`) having changed nothing. The kernel releases the lock when the process ends, killed or
not, so a stale lock never blocks a resume.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import secrets
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, writing
from ..storage import Store
from ..storage.codec import to_jsonable

log = logging.getLogger(__name__)

STORE_FILE = "store.sqlite"
RESULT_FILE = "result.json"
#: the suffixes of the runs an uncertainty analysis adds to a run folder's store (``<run>.polish``...)
ANALYSIS_SUFFIXES = (".polish", ".jacobian", ".posterior")
MANIFEST_FILE = "run.json"
#: the log of a run on dask workers (kind dask, slurm or pbs): lost workers, resubmitted simulations, walltimes
RUN_LOG = "run.log"
#: held (``flock``) by the one process writing in a run folder, for the run's whole life
LOCK_FILE = "run.lock"
UNCERTAINTY_FILE = "uncertainty.json"
SAMPLES_CSV = "samples.csv"
SAMPLES_NPZ = "samples.npz"

__all__ = [
    "LOCK_FILE",
    "MANIFEST_FILE",
    "RESULT_FILE",
    "RUN_LOG",
    "SAMPLES_CSV",
    "SAMPLES_NPZ",
    "STORE_FILE",
    "UNCERTAINTY_FILE",
    "RunDirError",
    "folder_lock",
    "folder_of",
    "json_clean",
    "locked_by_another",
    "now",
    "read_manifest",
    "read_uncertainty",
    "run_name_in",
    "store_path",
    "write_json",
]


class RunDirError(ConfigurationError):
    """A run folder is missing, holds no run store, already holds a run, or is in use by another process."""


def json_clean(v: Any) -> Any:
    """JSON-compatible, with non-finite floats as ``None`` (strict JSON has no inf/NaN)."""
    v = to_jsonable(v)
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: json_clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [json_clean(x) for x in v]
    return v


def write_json(path: Path, data: Mapping[str, Any]) -> Path:
    """Write atomically (a reader never sees half a file), through a temporary file of this process only."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with writing(path):
            tmp.write_text(json.dumps(json_clean(data), indent=2, allow_nan=False) + "\n")
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return path


def now() -> str:
    """The time of day in UTC, to the second, as the files of a run folder record it."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def store_path(out_dir: str | os.PathLike[str]) -> Path:
    """The run store of a run folder, or ``out_dir`` itself when it names a store file (one written from
    Python, ``calibrate(..., store="x.sqlite")``: no ``run.json`` beside it, outputs go to its folder)."""
    out = Path(out_dir)
    if out.is_file():
        return out
    if not out.is_dir():
        raise RunDirError(f"no run folder {str(out)!r}; give the folder of a run (`mechcalib run CONFIG --out DIR`)")
    path = out / STORE_FILE
    if not path.is_file():
        raise RunDirError(
            f"{str(out)!r} holds no run store ({STORE_FILE}); give the folder of a run "
            "(`mechcalib run CONFIG --out DIR`)"
        )
    return path


def folder_of(out_dir: str | os.PathLike[str]) -> Path:
    """The folder the run's outputs go to: the run folder, or a store file's folder."""
    return store_path(Path(out_dir)).parent


_WARNED: set[str] = set()


def _warn_unreadable(path: Path, exc: BaseException) -> None:
    """Say once per process that a run folder's JSON file is unreadable and ignored."""
    if str(path) not in _WARNED:
        _WARNED.add(str(path))
        log.warning("cannot read %s (%s); ignoring it", path, exc)


def read_manifest(out_dir: Path) -> dict[str, Any]:
    """The folder's ``run.json`` (empty without one or when unreadable)."""
    path = out_dir / MANIFEST_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        _warn_unreadable(path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def run_name_in(store: Store, out_dir: Path, run: str | None) -> str:
    """The run to act on: ``run``, else the one named in ``run.json``, else the store's latest that is not
    an uncertainty analysis's run."""
    if run is not None:
        store.run(run)  # raises with the list of runs
        return run
    name = read_manifest(out_dir).get("run_name")
    if isinstance(name, str) and store.has_run(name):
        return name
    runs = store.runs()
    if not runs:
        raise RunDirError(f"the store {store.path} holds no run yet")
    names = {r.name for r in runs}
    # the uncertainty analysis records its runs as <run>.polish, .jacobian, .posterior beside the run itself
    own = [r.name for r in runs if not any(r.name == f"{n}{s}" for n in names for s in ANALYSIS_SUFFIXES)]
    return own[-1] if own else runs[-1].name


def read_uncertainty(out_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The folder's ``uncertainty.json`` (``None`` without one or when unreadable)."""
    path = folder_of(out_dir) / UNCERTAINTY_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        _warn_unreadable(path, exc)
        return None
    return data if isinstance(data, dict) else None


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
