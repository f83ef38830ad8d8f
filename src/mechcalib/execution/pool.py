"""A local process pool whose workers can be killed one by one.

``concurrent.futures`` and ``multiprocessing.Pool`` cannot stop one hung task without tearing the pool
down, so this pool keeps its own worker processes, each behind a pipe: the parent sends one chunk at a
time to an idle worker, waits on all pipes with the nearest deadline as timeout, kills a worker whose chunk
runs past its deadline (recording its sets as ``"timeout"``) and starts a replacement. A worker that dies
(segfault, out of memory) fails its chunk as ``"crashed"`` and is replaced too. A chunk of several sets that
times out or crashes is retried one set per task, so only the culprit fails.

Workers are started with the ``spawn`` method by default (safe with threads, numba and on every OS): the
problem is pickled once per worker (with cloudpickle when installed, so lambdas and classes defined in a
script travel too). Scripts that use the pool must guard their entry point with
``if __name__ == "__main__":``, as for any spawn-based multiprocessing: every worker imports the script again.
A script that starts the pool from its top level outside that block is refused before any worker starts, with
the fix (:func:`unguarded_script`), instead of its workers dying while they start.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import logging
import multiprocessing as mp
import os
import pickle
import sys
import threading
import time
import traceback
import weakref
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from types import FrameType
from typing import Any

import numpy as np

from ..errors import ConfigurationError, InfrastructureError
from ._base import CRASHED, TIMEOUT, Evaluator, EvaluatorError, Outcome, chunks, evaluate_chunk, failed_outcomes

log = logging.getLogger(__name__)


def dumps_problem(problem: Any) -> bytes:
    """Pickle a problem for another process (cloudpickle when installed, else pickle)."""
    try:
        import cloudpickle

        return cloudpickle.dumps(problem)
    except ImportError:
        pass
    except Exception as exc:
        raise ConfigurationError(
            f"the problem cannot be pickled for worker processes ({type(exc).__name__}: {exc}); define its "
            "functions and classes at module level, or use the serial evaluator"
        ) from exc
    try:
        return pickle.dumps(problem, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise ConfigurationError(
            f"the problem cannot be pickled for worker processes ({type(exc).__name__}: {exc}); define its "
            "functions at module level (not lambdas), install cloudpickle, or use the serial evaluator"
        ) from exc


def unguarded_script() -> str | None:
    """The script run as ``__main__`` when the current call comes from its top level outside an
    ``if __name__ == "__main__":`` block, else ``None`` (an interactive session, ``python -c``, a guarded
    script, a call from elsewhere). Workers started with ``spawn`` or ``forkserver`` import that script again,
    run its top level, and would start workers of their own while starting: Python stops them with an error."""
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    if not path or not os.path.isfile(path):
        return None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__":
            break
        frame = frame.f_back
    if frame is None or not os.path.isfile(frame.f_code.co_filename):
        return None
    try:
        if not os.path.samefile(frame.f_code.co_filename, path):
            return None
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return None
    line = frame.f_lineno
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_main_test(node.test) and node.lineno <= line <= (node.end_lineno or 0):
            return None
    return path


def _is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    consts = [s.value for s in sides if isinstance(s, ast.Constant)]
    return names == ["__name__"] and consts == ["__main__"]


def _refuse_unguarded(start_method: str) -> None:
    if start_method == "fork":
        return
    path = unguarded_script()
    if path is not None:
        raise ConfigurationError(
            f"the script {path} starts the process pool from its top level, outside an "
            f'`if __name__ == "__main__":` block: with the {start_method!r} start method every worker imports the '
            "script again and would start a pool of its own, so the workers die while starting; put the script's "
            'calls under `if __name__ == "__main__":` (indent them below that line), or use evaluator="serial"'
        )


# -- worker side ------------------------------------------------------------------------------------
def _watch_parent(parent_pid: int) -> None:
    # A worker orphaned by a killed parent must not live on (its pipe only breaks when it next writes).
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(3)


def _worker_main(conn: Connection, parent_pid: int, name: str) -> None:
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    problem = None
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        kind = msg[0]
        if kind == "stop":
            return
        if kind == "problem":
            try:
                problem = pickle.loads(msg[1])
            except Exception:
                conn.send(("error", traceback.format_exc(limit=5)))
                continue
            conn.send(("ready", os.getpid()))
        elif kind == "eval":
            task_id, X = msg[1], msg[2]
            try:
                outs = evaluate_chunk(problem, X, name)
            except InfrastructureError as exc:  # the parent raises it again: the run stops
                conn.send(("infra", task_id, str(exc)))
                continue
            try:
                conn.send(("done", task_id, outs))
            except Exception as exc:  # a response that cannot be pickled: send the losses without it
                for o in outs:
                    o.response = None
                log.warning("%s: responses could not be sent back (%s); dropped", name, exc)
                conn.send(("done", task_id, outs))


# -- parent side -----------------------------------------------------------------------------------
@dataclass
class _Task:
    id: int
    gen: int
    positions: list[int]
    X: np.ndarray


class _Worker:
    def __init__(self, ctx: Any, slot: int, blob: bytes) -> None:
        self.slot = slot
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(
            target=_worker_main, args=(child, os.getpid(), f"pool-{slot}"), name=f"mechcalib-pool-{slot}", daemon=True
        )
        self.proc.start()
        child.close()  # so that the parent sees EOF when the worker dies
        self.conn.send(("problem", blob))
        self.ready = False
        self.started = time.monotonic()
        self.task: _Task | None = None
        self.deadline = float("inf")
        self.dispatched = 0.0

    @property
    def label(self) -> str:
        return f"pool-{self.slot}:{self.proc.pid}"

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5.0)


def _shutdown(workers: list[_Worker]) -> None:
    for w in workers:
        with contextlib.suppress(OSError, ValueError):
            w.conn.send(("stop",))
    t_end = time.monotonic() + 2.0
    for w in workers:
        w.proc.join(max(0.0, t_end - time.monotonic()))
        w.kill()
    workers.clear()


class PoolEvaluator(Evaluator):
    """Evaluates on local worker processes; hung evaluations are killed.

    Args:
        n_workers: number of worker processes (default: the number of CPUs).
        timeout: per-evaluation limit in seconds, measured from dispatch to a ready worker; a worker past
            its deadline is killed and replaced (starting a worker takes about a second).
        chunk_size: sets per task (default 1).
        start_method: ``"spawn"`` (default), ``"forkserver"`` or ``"fork"``.
        start_timeout: seconds a new worker may take to import the package and load the problem.
    """

    name = "pool"
    concurrent_submit = False  # one batch at a time: a new submit abandons the last one

    def __init__(
        self,
        *,
        n_workers: int | None = None,
        timeout: float | None = None,
        chunk_size: int | None = 1,
        start_method: str = "spawn",
        start_timeout: float = 120.0,
    ) -> None:
        super().__init__(timeout=timeout, chunk_size=chunk_size)
        n = (os.cpu_count() or 1) if n_workers is None else n_workers
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ConfigurationError(f"pool: n_workers must be an integer >= 1 or None, got {n_workers!r}")
        if start_method not in mp.get_all_start_methods():
            raise ConfigurationError(
                f"pool: start_method must be one of {mp.get_all_start_methods()}, got {start_method!r}"
            )
        self.n_workers_ = int(n)
        self.start_method = start_method
        self.start_timeout = float(start_timeout)
        self._ctx = mp.get_context(start_method)
        self._workers: list[_Worker] = []
        self._blob: bytes | None = None
        self._ids = itertools.count()
        self._gen = 0
        self._finalizer = weakref.finalize(self, _shutdown, self._workers)

    @property
    def n_workers(self) -> int:
        return self.n_workers_

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "start_method": self.start_method}

    # -- workers ----------------------------------------------------------------------------------
    def _start(self, problem: Any) -> None:
        _refuse_unguarded(self.start_method)
        self._blob = dumps_problem(problem)
        if not self._finalizer.alive:  # restarted after close()
            self._finalizer = weakref.finalize(self, _shutdown, self._workers)
        # Idle workers load the new problem; busy ones (abandoned work) are replaced.
        for i, w in enumerate(self._workers):
            if w.task is None and w.ready:
                w.conn.send(("problem", self._blob))
                w.ready = False
                w.started = time.monotonic()
            else:
                w.kill()
                self._workers[i] = _Worker(self._ctx, w.slot, self._blob)
        for slot in range(len(self._workers), self.n_workers_):
            self._workers.append(_Worker(self._ctx, slot, self._blob))
        self._wait_ready()

    def _wait_ready(self) -> None:
        while True:
            waiting = [w for w in self._workers if not w.ready]
            if not waiting:
                return
            for w in waiting:
                if time.monotonic() - w.started > self.start_timeout:
                    raise EvaluatorError(
                        f"pool worker {w.slot} did not start within {self.start_timeout:g} s; raise start_timeout "
                        "on a loaded machine"
                    )
            for conn in wait([w.conn for w in waiting], timeout=1.0):
                w = next(w for w in waiting if w.conn is conn)
                try:
                    self._receive(w, None)
                except _WorkerDied:
                    raise EvaluatorError(
                        f"pool worker {w.slot} died while starting (exit code {w.proc.exitcode}); run the problem "
                        "with the serial evaluator to see the error (a script that starts the pool needs its calls "
                        'under `if __name__ == "__main__":`)'
                    ) from None

    def _replace(self, w: _Worker) -> None:
        w.kill()
        assert self._blob is not None
        self._workers[self._workers.index(w)] = _Worker(self._ctx, w.slot, self._blob)

    def _receive(self, w: _Worker, gen: int | None) -> tuple[_Task, list[Outcome]] | None:
        """Read one message of ``w``; return ``(task, outcomes)`` when it finishes a task of ``gen``."""
        try:
            msg = w.conn.recv()
        except (EOFError, OSError):
            raise _WorkerDied from None
        if msg[0] == "ready":
            w.ready = True
            return None
        if msg[0] == "error":
            raise EvaluatorError(f"a pool worker could not load the problem:\n{msg[1]}")
        if msg[0] == "infra":
            w.task, w.deadline = None, float("inf")
            raise InfrastructureError(msg[2])
        task = w.task
        w.task, w.deadline = None, float("inf")
        if task is None or task.id != msg[1] or task.gen != gen:
            return None  # the result of abandoned work
        return task, msg[2]

    # -- dispatch ---------------------------------------------------------------------------------
    def _submit(self, X: np.ndarray) -> Iterator[Outcome]:
        self._gen += 1
        gen = self._gen
        pending: deque[_Task] = deque(
            _Task(next(self._ids), gen, list(r), X[r.start : r.stop]) for r in chunks(X.shape[0], self.chunk_size)
        )
        return self._run(gen, pending, X.shape[0])

    def _run(self, gen: int, pending: deque[_Task], n: int) -> Iterator[Outcome]:
        remaining = n
        while remaining > 0:
            now = time.monotonic()
            for w in self._workers:
                if pending and w.ready and w.task is None:
                    task = pending.popleft()
                    try:
                        w.conn.send(("eval", task.id, task.X))
                    except OSError:  # the idle worker died: replace it, keep the task
                        pending.appendleft(task)
                        self._replace(w)
                        continue
                    w.task, w.dispatched = task, now
                    w.deadline = now + self.timeout * len(task.positions) if self.timeout else float("inf")
            for w in self._workers:
                if not w.ready and now - w.started > self.start_timeout:
                    raise EvaluatorError(f"pool worker {w.slot} did not restart within {self.start_timeout:g} s")
            active = [w for w in self._workers if w.task is not None or not w.ready]
            if not active and not pending:  # cannot happen unless a task was lost: fail rather than spin
                raise EvaluatorError(f"pool: {remaining} outcome(s) of the batch were lost")
            nearest = min((w.deadline for w in active), default=float("inf"))
            wait_s = min(max(nearest - now, 0.0), 5.0)
            ready = wait([w.conn for w in active], timeout=wait_s)
            for conn in ready:
                owner = next((w for w in self._workers if w.conn is conn), None)
                if owner is None:
                    continue
                running = owner.task
                try:
                    got = self._receive(owner, gen)
                except _WorkerDied:
                    owner.proc.join(5.0)  # reap it, so that its exit code is known
                    msg = f"crashed: the worker process died (exit code {owner.proc.exitcode})"
                    for o in self._lost(owner, running, gen, pending, CRASHED, msg):
                        remaining -= 1
                        yield o
                    continue
                if got is None:
                    continue
                done, outs = got
                for o in outs:
                    o.index = done.positions[o.index]
                    o.worker = owner.label
                    remaining -= 1
                    yield o
            now = time.monotonic()
            for w in list(self._workers):
                if w.task is not None and now > w.deadline:
                    log.warning("%s: killing a worker whose task ran past its deadline", w.label)
                    msg = f"timeout: the evaluation did not finish within {self.timeout:g} s (worker process killed)"
                    for o in self._lost(w, w.task, gen, pending, TIMEOUT, msg):
                        remaining -= 1
                        yield o

    def _lost(
        self, w: _Worker, task: _Task | None, gen: int, pending: deque[_Task], status: str, msg: str
    ) -> Iterator[Outcome]:
        """Replace worker ``w`` whose ``task`` crashed or timed out. A task of several sets is split and
        retried set by set (only the culprit should fail); a single set becomes a failed outcome."""
        label, started = w.label, time.time() - (time.monotonic() - w.dispatched)
        self._replace(w)
        if task is None or task.gen != gen:
            return
        if len(task.positions) > 1:
            pending.extendleft(self._split(task))
            return
        for o in failed_outcomes(self._problem, 1, status, msg, started=started, worker=label):
            o.index = task.positions[0]
            yield o

    def _split(self, task: _Task) -> list[_Task]:
        # reversed, because extendleft reverses; keeps the retries in ask order
        return [_Task(next(self._ids), task.gen, [p], task.X[i : i + 1]) for i, p in enumerate(task.positions)][::-1]

    def close(self) -> None:
        self._finalizer()
        self._problem = None


class _WorkerDied(Exception):
    pass
