"""Run one external simulation and contain it: a standalone script (standard library only), started by
:mod:`mechcalib.models.external_process` as ``python -I -S _supervisor.py SPEC``.

It starts the program in a session of its own with its output on pipes, keeps at most ``limit`` bytes of each
stream (the tail; the log file holds the head live until the limit is reached), enforces the timeout and, when
the program ends for any reason, kills every process it left behind:

* the supervisor is a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so a descendant orphaned by a
  double fork or ``setsid`` is re-parented to it, not to init; being a process of its own per run, that
  process-wide setting changes nothing in mechcalib's main process or its pool workers;
* before killing, it freezes (``SIGSTOP``) its whole process tree and the program's process group, read from
  ``/proc/*/stat`` (or ``ps`` where there is no ``/proc``), until no new process appears, then kills them all
  (``SIGKILL``) and reaps what it adopted. Without a subreaper (other systems), a process whose parent
  exited before the walk escapes to init: the tree walk and the process group are all there is;
* it dies with its parent (``PR_SET_PDEATHSIG``): a mechcalib process or pool worker that is killed takes its
  simulations with it.

It prints one JSON line on stdout: the exit status ``rc`` (negative: killed by that signal), ``timed_out``,
``stopped`` (mechcalib went away), ``start_error`` / ``log_error`` (``[errno, text]`` of a program that could
not start or a log that could not be written), ``oom`` (killed by the kernel's out-of-memory killer),
``leftovers`` (processes still running after a normal exit, killed) and the ``bytes`` each stream wrote. The
out-of-memory verdict is a ``SIGKILL`` that the supervisor did not send while the kernel's count of such kills
(``oom_kill`` in ``/proc/vmstat``) rose, or cannot be read.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import selectors
import signal
import subprocess
import sys
import time
import typing
from collections import deque

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
_STOP: list[int] = []  # set by SIGTERM, SIGINT or SIGHUP (mechcalib's late timeout, its death, Ctrl-C)


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class Tail:
    """One output stream: the file gets the head live up to ``limit`` bytes; at the end, a stream that
    wrote more is rewritten as a one-line note followed by its last ``limit`` bytes."""

    def __init__(self, path: str, limit: int) -> None:
        self.path, self.limit, self.total, self.kept = path, limit, 0, 0
        self.chunks: deque[bytes] = deque()
        self.error: OSError | None = None
        self.file: typing.BinaryIO | None
        try:
            self.file = open(path, "wb")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            self.file, self.error = None, exc

    def add(self, data: bytes) -> None:
        head = max(self.limit - self.total, 0)
        self.total += len(data)
        self.chunks.append(data)
        self.kept += len(data)
        while len(self.chunks) > 1 and self.kept - len(self.chunks[0]) >= self.limit:
            self.kept -= len(self.chunks.popleft())
        if self.file is not None and head:
            try:
                self.file.write(data[:head])
                self.file.flush()
            except OSError as exc:
                self._lost(exc)

    def _lost(self, exc: OSError) -> None:
        self.error = self.error or exc
        try:
            if self.file is not None:
                self.file.close()
        except OSError:
            pass
        self.file = None

    def close(self) -> None:
        if self.file is not None:
            try:
                self.file.close()
            except OSError as exc:
                self._lost(exc)
            self.file = None
        if self.total > self.limit and self.error is None:
            tail = b"".join(self.chunks)[-self.limit :]
            note = f"[mechcalib: output cut to its last {len(tail)} bytes; {self.total - len(tail)} earlier bytes dropped]\n"
            try:
                with open(self.path, "wb") as f:
                    f.write(note.encode() + tail)
            except OSError as exc:
                self.error = exc


def _processes() -> dict[int, tuple[int, int]] | None:
    """``{pid: (ppid, pgrp)}`` of every visible live process (zombies are dead already: :func:`reap`
    collects those it adopted), or None when the system does not say."""
    out: dict[int, tuple[int, int]] = {}
    if os.path.isdir("/proc/self"):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read().decode(errors="replace")
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()  # state ppid pgrp ...; the name may hold spaces
            if fields[0] != "Z":
                out[int(name)] = (int(fields[1]), int(fields[2]))
        return out
    try:  # pragma: no cover - systems without /proc
        ps = subprocess.run(["ps", "-A", "-o", "pid=,ppid=,pgid=,stat="], capture_output=True, text=True, timeout=10)
        for line in ps.stdout.splitlines():
            pid, ppid, pgid, state = line.split()[:4]
            if not state.startswith("Z"):
                out[int(pid)] = (int(ppid), int(pgid))
        return out
    except (OSError, ValueError, subprocess.SubprocessError):  # pragma: no cover
        return None


def _tree(group: int) -> set[int]:
    """The supervisor's descendants (the program, what it started, what the supervisor adopted) and the
    members of the program's process group."""
    procs = _processes()
    if procs is None:  # pragma: no cover
        return set()
    me = os.getpid()
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    found, todo = set(), [me]
    while todo:
        for c in kids.get(todo.pop(), ()):
            if c not in found and c != me:
                found.add(c)
                todo.append(c)
    return found | {pid for pid, (_, pg) in procs.items() if pg == group and pid != me}


def contain(group: int) -> set[int]:
    """Freeze the tree until it stops growing, kill it; the processes killed (live ones: the program, once
    ended, is a zombie that keeps its group's number reserved). ``group``: the program's pid and group."""
    frozen: set[int] = set()
    for _ in range(100):
        new = _tree(group) - frozen
        if not new:
            break
        for pid in new:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        frozen |= new
    with contextlib.suppress(OSError):
        os.killpg(group, signal.SIGKILL)
    for pid in frozen:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return frozen


def reap(deadline: float) -> None:
    """Collect every child (adopted processes included) until there is none or the deadline passes."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if time.monotonic() > deadline:
                return
            time.sleep(0.005)


def _oom_kills() -> int | None:
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _exited(sim: subprocess.Popen) -> bool:
    """Whether the program ended, without reaping it: its pid, and so its process group's number, stay
    reserved until the leftovers are killed (no unrelated process can take them over)."""
    if hasattr(os, "waitid"):
        try:
            return os.waitid(os.P_PID, sim.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None
        except ChildProcessError:  # pragma: no cover - already reaped
            return True
    return sim.poll() is not None  # pragma: no cover - systems without waitid


def _pump(sel: selectors.BaseSelector, timeout: float) -> None:
    for key, _ in sel.select(timeout):
        try:
            data = os.read(key.fd, 65536)
        except OSError:
            data = b""
        if data:
            key.data.add(data)
        else:
            sel.unregister(key.fileobj)


def supervise(spec: dict) -> dict:
    report: dict = {"rc": None, "timed_out": False, "stopped": False, "start_error": None, "log_error": None}
    report.update(oom=False, leftovers=0, bytes={}, subreaper=False)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # Ctrl-C in mechcalib's terminal reaches it too
        signal.signal(sig, lambda *_: _STOP.append(1))
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != spec["parent"]:  # the parent died before the death signal was armed
        report["stopped"] = True
        return report
    report["subreaper"] = _prctl(PR_SET_CHILD_SUBREAPER, 1)
    limit, timeout = int(spec["limit"]), spec["timeout"]
    logs = {"stdout": Tail(spec["stdout"], limit), "stderr": Tail(spec["stderr"], limit)}
    unwritable = [t.error for t in logs.values() if t.error is not None]
    if unwritable:  # no log, no run: the program is not started
        report["log_error"] = [unwritable[0].errno, unwritable[0].strerror or str(unwritable[0])]
        return report
    oom0 = _oom_kills()
    try:
        sim = subprocess.Popen(
            spec["args"], cwd=spec["cwd"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        report["start_error"] = [exc.errno, exc.strerror or str(exc)]
        for t in logs.values():
            t.close()
        return report
    sel = selectors.DefaultSelector()
    sel.register(sim.stdout, selectors.EVENT_READ, logs["stdout"])  # type: ignore[arg-type]
    sel.register(sim.stderr, selectors.EVENT_READ, logs["stderr"])  # type: ignore[arg-type]
    deadline = None if timeout is None else time.monotonic() + float(timeout)
    nap = 0.002
    while not _exited(sim):
        if _STOP:
            report["stopped"] = True
            break
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            report["timed_out"] = True
            break
        wait = 0.2 if deadline is None else min(0.2, deadline - now)
        if sel.get_map():
            _pump(sel, wait)
        else:  # output closed: wait for the exit status
            time.sleep(min(nap, wait))
            nap = min(2 * nap, 0.05)
    ended = not (report["timed_out"] or report["stopped"])
    killed = contain(sim.pid)  # the group of the program is its pid (a session of its own)
    sim.wait()
    if ended:
        report["leftovers"] = len(killed)
    reap(time.monotonic() + 5.0)
    end = time.monotonic() + 2.0  # what the killed processes wrote before dying
    while sel.get_map() and time.monotonic() < end:
        _pump(sel, 0.05)
    for t in logs.values():
        t.close()
    report["rc"] = sim.returncode
    report["bytes"] = {k: t.total for k, t in logs.items()}
    errors = [t.error for t in logs.values() if t.error is not None]
    if errors:
        report["log_error"] = [errors[0].errno, errors[0].strerror or str(errors[0])]
    sigkill = sim.returncode == -signal.SIGKILL and not (report["timed_out"] or report["stopped"])
    oom1 = _oom_kills()
    report["oom"] = bool(sigkill and (oom0 is None or oom1 is None or oom1 > oom0))
    return report


if __name__ == "__main__":
    print(json.dumps(supervise(json.loads(sys.argv[1]))), flush=True)
