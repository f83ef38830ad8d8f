"""Evaluation on a dask.distributed cluster (optional extra ``mechcalib[dask]``, imported lazily).

By default a :class:`distributed.LocalCluster` is started; give ``address`` (a scheduler address such as
``"tcp://10.0.0.5:8786"``) or ``client`` to use an existing cluster, for example one made by dask-jobqueue::

    from dask_jobqueue import SLURMCluster
    cluster = SLURMCluster(cores=8, memory="16GB"); cluster.scale(jobs=4)
    ev = DaskEvaluator(address=cluster.scheduler_address, timeout=600)

The problem is scattered once to every worker when the evaluator is bound to it (``start``), not sent
with each task, and scattered again if every worker that held it dies. A dask task costs milliseconds of
scheduling (4-6 ms on a loaded 2-CPU machine), so a batch (a Jacobian, a swarm) is sent as one graph of
slices sized to the workers: by default one slice per worker thread (``tasks_per_worker``), and more, in a
multiple of the worker threads, once the sets evaluated so far show that a slice would last longer than
``task_seconds``, so that a slow slice keeps the other workers waiting for little; sets slower than that
go one per task (for minute-long simulations scheduling costs nothing, and a lost task then loses one
set). The sets of a slice are evaluated one at a time on the worker, each with its own timeout, times and
outcome, as with one set per task; ``chunk_size=k`` instead sends ``k`` sets to one ``problem.evaluate``
call (for a vectorised model).

A dask worker cannot kill a running task, so the per-evaluation ``timeout`` is enforced inside the task:
the simulation runs in a thread of the worker, and past its deadline the set is recorded as ``"timeout"``
and the task goes on while the abandoned thread runs on until the simulation returns (restart such
workers, e.g. with dask's ``--lifetime``, if simulations can hang for ever). A task lost with its worker is
retried one set per task, and a set lost alone is run once more at the end of the batch with nothing beside
it, so only the set that takes its worker down is recorded as ``"crashed"`` (not a bystander on that worker).

Before the problem is scattered, every worker imports the modules of the problem's own model and objective
classes, which are shipped to workers that cannot (:mod:`.shipping`). The cluster is told, not hidden: the
workers it lost (with the simulations they were running, which dask runs again elsewhere) and the
simulations sent again are logged and, with :meth:`DaskEvaluator.record_to`, recorded in ``jobs.json`` of
the run folder (:func:`event_counts`; ``mechcalib show`` counts them; docs/cluster.md).
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError, InfrastructureError, require
from ._base import CRASHED, OK, Evaluator, Outcome, chunks, evaluate_chunk_timed, failed_outcomes
from .shipping import prepare_workers

log = logging.getLogger(__name__)

#: times a task cancelled with the scattered problem (lost with its workers) is sent again
_MAX_RESENDS = 3
#: seconds between two looks at the cluster's worker threads (an adaptive cluster grows and shrinks)
_SLOTS_TTL = 5.0


#: the file of a run folder that records its cluster events (lost workers, resubmitted simulations, jobs at
#: their walltime) and, for the kinds slurm and pbs, the jobs submitted
JOBS_FILE = "jobs.json"
_LOCK = threading.Lock()


def read_jobs(path: str | os.PathLike[str] | None) -> dict[str, Any]:
    """The contents of a ``jobs.json`` (a folder or the file); empty when there is none."""
    if path is None:
        return {}
    p = Path(path)
    p = p / JOBS_FILE if p.is_dir() else p
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def update_jobs(path: Path, change: Any) -> None:
    """Read, change and write ``jobs.json`` atomically (one writer: the run, under its folder lock)."""
    with _LOCK:
        data = read_jobs(path)
        data.setdefault("jobs", {})
        data.setdefault("events", [])
        change(data)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
        os.replace(tmp, path)


def event_counts(folder: str | os.PathLike[str]) -> dict[str, int]:
    """The cluster events of a run folder: ``lost_worker`` and ``walltime`` (workers), ``resubmitted``
    (simulations sent again); only those that happened."""
    counts: dict[str, int] = {}
    for e in read_jobs(folder).get("events", []):
        kind = str(e.get("event"))
        counts[kind] = counts.get(kind, 0) + (int(e.get("simulations", 1)) if kind == "resubmitted" else 1)
    return counts


def _removed_workers(start: int, dask_scheduler: Any = None) -> tuple[int, list[tuple[str, list[str]]]]:
    """Run on the scheduler: the workers removed unexpectedly (not retired by scaling) since event
    ``start`` of the topic ``all``, with the keys of the tasks each was running; the count of events seen."""
    events = list(dask_scheduler.get_events("all")) if dask_scheduler is not None else []
    lost = []
    for _, msg in events[start:]:
        if isinstance(msg, dict) and msg.get("action") == "remove-worker" and not msg.get("expected"):
            lost.append((str(msg.get("worker")), [str(k) for k in msg.get("processing-tasks") or ()]))
    return len(events), lost


def _killed_worker() -> type[BaseException]:
    from distributed.scheduler import KilledWorker

    return KilledWorker


def _run_chunk(
    problem: Any, X: np.ndarray, positions: list[int], timeout: float | None, one_call: bool = True
) -> list[Outcome]:
    """The task run on a dask worker: evaluate one slice of the batch, outcomes indexed by batch position.

    ``one_call``: the slice is one ``problem.evaluate`` call (``chunk_size`` given); otherwise its sets
    are evaluated one at a time, each with its own ``timeout``, times and outcome.
    """
    try:
        from distributed import get_worker

        worker = get_worker().address
    except Exception:  # pragma: no cover - outside a worker
        worker = "dask"
    if one_call:
        outs = list(evaluate_chunk_timed(problem, X, timeout, worker))
    else:
        outs = []
        for i in range(X.shape[0]):
            for o in evaluate_chunk_timed(problem, X[i : i + 1], timeout, worker):
                o.index = i
                outs.append(o)
    for o in outs:
        o.index = positions[o.index]
    return outs


def slice_count(n: int, slots: int, tasks_per_worker: int, seconds_per_set: float | None, task_seconds: float) -> int:
    """Tasks for a batch of ``n`` sets: ``tasks_per_worker`` per worker thread, more when the time of a set
    is known and a slice would last longer than ``task_seconds`` (rounded up to a multiple of the worker
    threads, so that they all get as many; at most one task per set)."""
    slots = max(slots, 1)
    m = tasks_per_worker * slots
    if seconds_per_set is not None and seconds_per_set > 0:
        per_task = max(1, int(task_seconds / seconds_per_set))
        m = max(m, slots * math.ceil(n / per_task / slots))
    return max(1, min(n, m))


def balanced_slices(n: int, m: int) -> list[range]:
    """Positions ``0 ... n - 1`` in ``m`` consecutive slices whose sizes differ by one at most (10 sets in 4
    slices: 3, 3, 2, 2, where slices of 3 would leave 3, 3, 3, 1 and one worker with 6 sets, the other 4)."""
    q, r = divmod(n, m)
    edges = [0]
    for i in range(m):
        edges.append(edges[-1] + q + (1 if i < r else 0))
    return [range(edges[i], edges[i + 1]) for i in range(m)]


class DaskEvaluator(Evaluator):
    """Evaluates on dask.distributed workers.

    Args:
        address: scheduler address of an existing cluster (``None``: start a LocalCluster).
        client: an existing :class:`distributed.Client` (not closed by :meth:`close`).
        n_workers, threads_per_worker, processes: LocalCluster settings (``processes=False`` runs the
            workers as threads of this process: quick to start, shares the GIL).
        timeout: per-evaluation limit in seconds, enforced on the worker (see the module docstring).
        chunk_size: ``None`` (default): slices sized to the workers, evaluated set by set; ``k``: ``k``
            sets per task in one ``problem.evaluate`` call (``1``: one task per set).
        tasks_per_worker: with ``chunk_size=None``, slices per worker thread and batch (more balance the
            load better when sets differ in cost, fewer cost less scheduling; default 1).
        task_seconds: with ``chunk_size=None``, the longest a slice should take, judged from the sets
            evaluated so far (sets slower than this go one per task).
        cluster_options: further keyword arguments of :class:`distributed.LocalCluster`.
        ship_code: upload the problem's own modules (a ``"module:Class"`` model) to workers that cannot import
            them (:mod:`.shipping`); every worker is checked before the first batch either way.
    """

    name = "dask"

    def __init__(
        self,
        *,
        address: str | None = None,
        client: Any = None,
        n_workers: int = 2,
        threads_per_worker: int = 1,
        processes: bool = True,
        timeout: float | None = None,
        chunk_size: int | None = None,
        tasks_per_worker: int = 1,
        task_seconds: float = 0.5,
        cluster_options: dict[str, Any] | None = None,
        ship_code: bool = True,
    ) -> None:
        super().__init__(timeout=timeout, chunk_size=chunk_size)
        if address is not None and client is not None:
            raise ConfigurationError("dask: give either address or client, not both")
        for k, v in (
            ("n_workers", n_workers),
            ("threads_per_worker", threads_per_worker),
            ("tasks_per_worker", tasks_per_worker),
        ):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigurationError(f"dask: {k} must be an integer >= 1, got {v!r}")
        if isinstance(task_seconds, bool) or not isinstance(task_seconds, int | float) or not task_seconds > 0:
            raise ConfigurationError(f"dask: task_seconds must be a number of seconds > 0, got {task_seconds!r}")
        self.address = address
        self.n_workers_ = n_workers
        self.threads_per_worker = threads_per_worker
        self.processes = bool(processes)
        self.tasks_per_worker = tasks_per_worker
        self.task_seconds = float(task_seconds)
        self.cluster_options = dict(cluster_options or {})
        self.ship_code = bool(ship_code)
        self._client = client
        self._own_client = client is None
        self._cluster: Any = None
        self._problem_future: Any = None
        self._slots: tuple[float, int] | None = None  # (when counted, worker threads)
        self._seconds_per_set: float | None = None  # running mean of a set's evaluation time
        self.jobs_path: Path | None = None  # where cluster events are recorded (record_to)
        self._workers: dict[str, str] = {}  # worker address -> worker name
        self._seen_events = 0
        self._names_at = -math.inf
        self._sets_of: dict[str, int] = {}  # task key -> parameter sets, of the batch in flight
        self._slot_keys: set[str] = set()  # the one-set tasks of an asynchronous run (DaskSlots), kept to its end

    @property
    def client(self) -> Any:
        """The :class:`distributed.Client` (started on first use)."""
        if self._client is None:
            distributed = require("distributed", "dask")
            if self.address is not None:
                self._client = distributed.Client(self.address)
            else:
                opts = {"dashboard_address": None, **self.cluster_options}
                self._cluster = distributed.LocalCluster(
                    n_workers=self.n_workers_,
                    threads_per_worker=self.threads_per_worker,
                    processes=self.processes,
                    **opts,
                )
                self._client = distributed.Client(self._cluster)
        return self._client

    @property
    def n_workers(self) -> int:
        if self._client is None:
            return self.n_workers_
        return len(self._client.scheduler_info().get("workers", {})) or self.n_workers_

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "address": self.address,
            "processes": self.processes,
            "tasks_per_worker": self.tasks_per_worker,
            "task_seconds": self.task_seconds,
        }

    def _start(self, problem: Any) -> None:
        # the user's code on every worker before the problem travels: a worker that cannot unpickle it would
        # fail inside distributed, with a long traceback and no word of the module
        prepare_workers(self.client, problem, ship=self.ship_code, fix=self._code_fix())
        self._scatter(problem)
        self._seconds_per_set = None

    def _code_fix(self) -> str:
        """How code reaches this cluster's workers, for the error of a worker that cannot import it."""
        if self.address is None and self._own_client:
            return "PYTHONPATH in the environment of this process: the local workers inherit it"
        return "in the environment of `dask worker`, or its --preload"

    def _scatter(self, problem: Any) -> None:
        # once per problem and cluster: tasks then carry only their slice of the batch
        self._problem_future = self.client.scatter(problem, broadcast=True, hash=False)

    def _problem_on_cluster(self) -> Any:
        """The scattered problem, scattered again when every worker that held it died (dask cannot
        recompute scattered data)."""
        if self._problem_future is None or self._problem_future.status != "finished":
            self._scatter(self._problem)
        return self._problem_future

    def worker_slots(self) -> int:
        """Worker threads of the cluster (counted again after ``_SLOTS_TTL`` seconds)."""
        now = time.monotonic()
        if self._slots is None or now - self._slots[0] > _SLOTS_TTL:
            counted = sum(self.client.nthreads().values())
            self._slots = (now, counted or self.n_workers_ * self.threads_per_worker)
        return self._slots[1]

    def _plan(self, n: int) -> list[range]:
        if self.chunk_size is not None:
            return chunks(n, self.chunk_size)
        m = slice_count(n, self.worker_slots(), self.tasks_per_worker, self._seconds_per_set, self.task_seconds)
        return balanced_slices(n, m)

    def _submit(self, X: np.ndarray) -> Iterator[Outcome]:
        self._look_at_cluster()
        try:
            for o in self._collect({p: X[p.start : p.stop] for p in self._plan(X.shape[0])}):
                self._look_now_and_then()
                yield o
        finally:
            self._look_at_cluster()

    def _send(self, positions: range | list[int], X: np.ndarray) -> Any:
        one_call = self.chunk_size is not None
        return self.client.submit(
            _run_chunk, self._problem_on_cluster(), X, list(positions), self.timeout, one_call, pure=False
        )

    def _send_one(self, x: np.ndarray) -> Any:
        """One set as a task of its own (a slot of an asynchronous run), counted as one simulation should its
        worker be lost while it runs."""
        fut = self._send([0], np.asarray(x, dtype=float).reshape(1, -1))
        self._slot_keys.add(str(fut.key))
        return fut

    def _slots_closed(self) -> None:
        """The asynchronous run's slots are closed: a last look at the cluster, then its tasks forgotten."""
        self._look_at_cluster()
        self._slot_keys.clear()

    def _collect(self, slices: dict[range, np.ndarray]) -> Iterator[Outcome]:
        from distributed import as_completed

        tasks: dict[str, tuple[Any, list[int], np.ndarray]] = {}
        m = len(slices)
        one_call = self.chunk_size is not None
        # one graph update for the whole batch rather than one message per task
        futs = self.client.map(
            _run_chunk,
            [self._problem_on_cluster()] * m,
            list(slices.values()),
            [list(r) for r in slices],
            [self.timeout] * m,
            [one_call] * m,
            pure=False,
        )
        for f, (r, Xs) in zip(futs, slices.items(), strict=True):
            tasks[f.key] = (f, list(r), Xs)
        self._sets_of = {str(k): len(t[1]) for k, t in tasks.items()}  # a lost worker's tasks in simulations
        pending = set(tasks)
        resent: dict[int, int] = {}  # position -> times sent again after losing the problem
        suspects: list[tuple[list[int], np.ndarray]] = []  # sets lost alone, decided at the end
        try:
            # results fetched by the client's event loop as tasks finish, not one round trip each here
            queue = as_completed([f for f, _, _ in tasks.values()], with_results=True, raise_errors=False)
            for f, res in queue:
                _, positions, Xs = tasks[f.key]
                pending.discard(f.key)
                if f.status in ("error", "cancelled"):  # the task was lost with its worker (KilledWorker...)
                    exc = res[1] if isinstance(res, tuple) else res
                    if isinstance(exc, InfrastructureError):  # the machine failed: the run stops
                        raise exc
                    lost = not isinstance(exc, _killed_worker()) and self._problem_future.status != "finished"
                    if lost and resent.get(positions[0], 0) < _MAX_RESENDS:
                        # cancelled because the scattered problem died with the workers: send it again
                        g = self._send(positions, Xs)
                        tasks[g.key] = (g, positions, Xs)
                        self._sets_of[str(g.key)] = len(positions)
                        pending.add(g.key)
                        queue.add(g)
                        for p in positions:
                            resent[p] = resent.get(p, 0) + 1
                        self._note_resent(len(positions))
                        continue
                    self._note_resent(len(positions))
                    if len(positions) > 1:  # retried one set per task: only the culprit should fail
                        for i, p in enumerate(positions):
                            g = self._send([p], Xs[i : i + 1])
                            tasks[g.key] = (g, [p], Xs[i : i + 1])
                            pending.add(g.key)
                            queue.add(g)
                        continue
                    # A set lost alone may still be a bystander of another set's crash on the same worker:
                    # it is decided once the batch is done, run with nothing beside it.
                    suspects.append((positions, Xs))
                    continue
                outs = res
                self._learn(outs)
                yield from outs
            for positions, Xs in suspects:
                yield from self._run_alone(positions, Xs)
        finally:
            rest = [tasks[k][0] for k in pending]
            if rest:  # abandoned iterator: do not leave tasks queued
                self._client.cancel(rest)

    # ---- cluster events: logged, recorded in jobs.json, counted by `mechcalib show` --------------------
    def record_to(self, folder: str | os.PathLike[str]) -> None:
        """Record the cluster's events in ``folder/jobs.json`` (the run folder; written at the first event)."""
        self.jobs_path = Path(folder) / JOBS_FILE

    def _event(self, kind: str, **info: Any) -> None:
        if self.jobs_path is None:
            return

        def add(d: dict[str, Any]) -> None:
            d["events"].append({"event": kind, "time": time.time(), **info})

        update_jobs(self.jobs_path, add)

    def _note_resent(self, n: int) -> None:
        """``n`` simulations lost with their worker are sent again."""
        log.warning("%d simulation(s) lost with their worker were submitted again", n)
        self._event("resubmitted", simulations=n)

    def _look_now_and_then(self) -> None:
        """Look at the cluster while work runs, at most once a second (the progress line reads jobs.json)."""
        if time.monotonic() - self._names_at > 1.0:
            self._look_at_cluster()

    def _look_at_cluster(self) -> None:
        """Log and record the workers the cluster lost since the last look (not those retired by scaling)."""
        if self._client is None:
            return
        self._learn_names()
        try:
            events = self._client.run_on_scheduler(_removed_workers, self._seen_events)
        except Exception:  # noqa: BLE001 - a look at the cluster must not stop the run
            return
        self._seen_events, lost = events
        for address, keys in lost:
            sets = sum(self._sets_of.get(k, 1 if k in self._slot_keys else 0) for k in keys)
            self._worker_lost(self._workers.get(address, address), len(keys), sets)
            if sets:  # the scheduler runs them again elsewhere
                log.warning("%d simulation(s) running on worker %s are run again on another worker", sets, address)
                self._event("resubmitted", simulations=sets)

    def _worker_lost(self, name: str, tasks: int, sets: int) -> None:
        """Log and record a worker the cluster lost (``tasks`` running on it, ``sets`` simulations of them)."""
        log.warning("the cluster lost worker %s with %d task(s) running", name, tasks)
        self._event("lost_worker", job=None, worker=name, tasks=tasks, simulations=sets)

    def _learn_names(self) -> None:
        """The names of the workers now present (a removed worker's name is no longer known to dask)."""
        self._names_at = time.monotonic()
        try:
            for addr, w in self._client.scheduler_info().get("workers", {}).items():
                self._workers[addr] = str(w.get("name", addr))
        except Exception:  # noqa: BLE001 - a look at the cluster must not stop the run
            return

    def _run_alone(self, positions: list[int], Xs: np.ndarray) -> Iterator[Outcome]:
        """One set, sent with no other task of the batch running: a second loss is its own crash."""
        g = self._send(positions, Xs)
        try:
            outs = g.result()
        except InfrastructureError:
            raise
        except Exception as exc:  # noqa: BLE001 - the worker died under this set: record it, go on
            outs = failed_outcomes(
                self._problem, 1, CRASHED, f"crashed: {type(exc).__name__}: {exc}", started=time.time(), worker="dask"
            )
            outs[0].index = positions[0]
        else:
            self._learn(outs)
        yield from outs

    def _learn(self, outs: list[Outcome]) -> None:
        """Update the running mean time of a set from the sets evaluated alone and ok."""
        if self.chunk_size is not None:
            return
        for o in outs:
            if o.status == OK and math.isfinite(o.seconds):
                s = max(o.seconds, 0.0)
                m = self._seconds_per_set
                self._seconds_per_set = s if m is None else 0.8 * m + 0.2 * s

    def close(self) -> None:
        self._look_at_cluster()
        if self._own_client and self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            cluster, self._cluster = self._cluster, None
            try:
                cluster.close()
            except Exception as exc:  # noqa: BLE001 - dask's own close raced a starting worker: the run is done
                log.warning("closing the dask cluster: %s: %s", type(exc).__name__, exc)
        self._problem_future = None
        self._problem = None
        self._slots = None
