"""Running one external simulation contained, and the housekeeping of its working folders.

Each run of an :class:`~mechcalib.models.external.ExternalModel` goes through a small supervisor process
(:mod:`mechcalib.models._supervisor`, one per run) that starts the program in a session of its own, caps its
output, enforces the timeout and, when the program ends, kills every process it left behind, including
descendants that started their own session (the supervisor is a Linux child subreaper: orphans come back to
it, not to init).

Why a supervisor process and not mechcalib itself as the subreaper: ``PR_SET_CHILD_SUBREAPER`` applies to a
whole process. Set in mechcalib's main process (or a pool worker) it would adopt the orphans of *every*
child (pool workers, dask, a user's own subprocesses) and turn them into zombies that only a ``waitpid(-1)``
could collect, which would steal the exit statuses ``subprocess`` and ``multiprocessing`` wait for. A
supervisor per run has no other children, so it may reap everything it adopts. It costs one interpreter
start (``python -I -S``, about 20 ms) per simulation. It also dies with the process that started it
(``PR_SET_PDEATHSIG``), so a pool worker killed for a timeout, or a killed mechcalib, takes its simulations
with it.

Failures caused by the machine rather than the parameter set (a program that cannot start, a log that cannot
be written, the kernel's out-of-memory killer, a full file system) are told apart here so that the model can
raise :class:`~mechcalib.errors.InfrastructureError` for them.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

SUPERVISOR = Path(__file__).with_name("_supervisor.py")
DEFAULT_OUTPUT_LIMIT = 1 << 20  # bytes kept of each of stdout and stderr
DEFAULT_MAX_FAILED_DIRS = 20
DEFAULT_MAX_FAILED_BYTES = 1 << 30
FAILURE_TXT = "failure.txt"  # marks a kept failed working folder; holds the failure's message
LOW_DISK_BYTES = 1 << 20  # a file system with less free space than this counts as full
_GRACE = 30.0  # seconds past the timeout before the supervisor itself is stopped
_POPEN_LOCK = threading.Lock()


@dataclass
class RunReport:
    """What the supervisor says about one run (see :mod:`mechcalib.models._supervisor`)."""

    rc: int | None = None
    timed_out: bool = False
    stopped: bool = False
    start_error: tuple[int, str] | None = None
    log_error: tuple[int, str] | None = None
    oom: bool = False
    leftovers: int = 0
    bytes: dict[str, int] = field(default_factory=dict)
    supervisor_error: str | None = None


def run_contained(
    args: list[str],
    cwd: Path,
    *,
    stdout: Path,
    stderr: Path,
    timeout: float | None,
    env: Mapping[str, str] | None,
    output_limit: int,
) -> RunReport:
    """Run ``args`` (no shell) in ``cwd`` through the supervisor. Raises :class:`OSError` when the
    supervisor itself cannot start (the machine: no process slot, no memory)."""
    if os.name != "posix":  # pragma: no cover - Windows: the program directly, no containment
        return _run_direct(args, cwd, stdout, stderr, timeout, env)
    spec = {
        "args": args,
        "cwd": str(cwd),
        "stdout": str(stdout),
        "stderr": str(stderr),
        "limit": int(output_limit),
        "timeout": timeout,
        "parent": os.getpid(),
    }
    cmd = [sys.executable, "-I", "-S", str(SUPERVISOR), json.dumps(spec)]
    # Popen from several threads at once can leak pipe handles into the wrong child on some platforms.
    with _POPEN_LOCK:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    late = False
    try:
        out, err = proc.communicate(timeout=None if timeout is None else timeout + _GRACE)
    except subprocess.TimeoutExpired:  # the supervisor hangs: ask it to contain the run, then kill it
        late = True
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            return RunReport(timed_out=True)
    lines = out.decode(errors="replace").strip().splitlines()
    try:
        rec = json.loads(lines[-1])
    except (IndexError, ValueError):
        text = err.decode(errors="replace").strip().splitlines()
        return RunReport(supervisor_error=f"exit status {proc.returncode}: {text[-1] if text else 'no output'}")
    return RunReport(
        rc=rec["rc"],
        timed_out=rec["timed_out"] or late,
        stopped=rec["stopped"],
        start_error=tuple(rec["start_error"]) if rec["start_error"] else None,
        log_error=tuple(rec["log_error"]) if rec["log_error"] else None,
        oom=rec["oom"],
        leftovers=rec["leftovers"],
        bytes=rec["bytes"],
    )


def _run_direct(args, cwd, stdout, stderr, timeout, env) -> RunReport:  # pragma: no cover - Windows
    with open(stdout, "wb") as fo, open(stderr, "wb") as fe, _POPEN_LOCK:
        proc = subprocess.Popen(args, cwd=cwd, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, env=env)
    try:
        return RunReport(rc=proc.wait(timeout=timeout))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return RunReport(timed_out=True)


# -- the machine or the parameter set --------------------------------------------------------------------
#: errors of a program that cannot start, or a file that cannot be written, that no parameter set causes
_MACHINE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.ENOMEM, errno.EAGAIN, errno.EMFILE, errno.ENFILE, errno.EROFS}


def is_machine_errno(code: int | None) -> bool:
    return code in _MACHINE_ERRNOS


def free_bytes(path: Path) -> int | None:
    """Bytes free to an unprivileged user on ``path``'s file system, ``None`` when it does not say."""
    try:
        st = os.statvfs(path)
    except (OSError, AttributeError):
        return None
    return None if st.f_blocks == 0 else st.f_bavail * st.f_frsize


def disk_full(path: Path) -> int | None:
    """The free bytes of ``path``'s file system when it is (nearly) full, else ``None``."""
    free = free_bytes(path)
    return free if free is not None and free < LOW_DISK_BYTES else None


def log_tail(path: Path, lines: int = 20, chars: int = 2000) -> str:
    """The last non-empty ``lines`` of a log, at most ``chars`` characters (for a failure's message)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(f.tell() - 4 * chars, 0))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    kept = [ln.rstrip() for ln in text.splitlines() if ln.strip()][-lines:]
    return "\n".join(kept)[-chars:]


# -- failed working folders --------------------------------------------------------------------------------
def _size(path: Path) -> int:
    total = 0
    for base, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(base, f)).st_size
    return total


def prune_failed(root: Path, prefix: str, max_dirs: int, max_bytes: int) -> list[Path]:
    """Delete the oldest failed working folders ``root/<prefix>XXXXXXXX`` (those holding :data:`FAILURE_TXT`) until
    at most ``max_dirs`` are left and together they hold at most ``max_bytes``; returns the folders deleted."""
    kept = []
    for marker in root.glob(f"{prefix}*/{FAILURE_TXT}"):
        if "-" in marker.parent.name[len(prefix) :]:  # another model's: "arch-x-..." is not "arch-"'s
            continue
        try:
            kept.append((marker.stat().st_mtime, marker.parent.name, marker.parent))
        except OSError:  # deleted meanwhile by another process
            continue
    kept.sort()
    sizes = [_size(d) for _, _, d in kept]
    total, removed = sum(sizes), list[Path]()
    for (_, _, d), size in zip(kept, sizes, strict=True):
        if len(kept) - len(removed) <= max_dirs and total <= max_bytes:
            break
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
        total -= size
    return removed
