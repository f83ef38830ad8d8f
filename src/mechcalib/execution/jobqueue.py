"""Evaluation on batch-scheduler jobs (SLURM, PBS) through dask-jobqueue (extra ``mechcalib[cluster]``).

:class:`JobQueueEvaluator` is a :class:`~mechcalib.execution.dask_backend.DaskEvaluator` whose cluster is a
dask-jobqueue ``SLURMCluster`` or ``PBSCluster`` that it starts, scales (``adapt(minimum_jobs,
maximum_jobs)``, or ``scale(jobs=maximum_jobs)`` without adaptive scaling) and closes. Closing at exit is not
enough for a run killed with SIGKILL, so:

- every job id is written to ``jobs.json`` in the run folder (:meth:`JobQueueEvaluator.record_to`) as the
  scheduler accepts the job, with its submission time and walltime;
- the workers get ``--death-timeout`` (``death_timeout`` seconds): a worker whose scheduler is gone ends
  itself, and its job with it;
- :func:`cancel_recorded_jobs` cancels (``scancel``/``qdel``) the recorded jobs still alive; ``resume`` and
  ``mechcalib cancel-jobs RUN`` call it.

Lost workers, resubmitted simulations and jobs that ended at their walltime are logged and recorded in
``jobs.json`` under ``events`` (counted by ``mechcalib show``). docs/cluster.md tells the whole story.
"""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError, MissingExtraError
from ._base import Outcome
from .dask_backend import DaskEvaluator

log = logging.getLogger(__name__)

#: the file of a run folder that records the jobs a cluster run submitted, and its cluster events
JOBS_FILE = "jobs.json"
#: the command that cancels a job, per kind
CANCEL_COMMANDS = {"slurm": "scancel", "pbs": "qdel"}
#: a job whose worker left after this share of its walltime is counted as ended at its walltime
WALLTIME_SHARE = 0.9
_LOCK = threading.Lock()

__all__ = [
    "JOBS_FILE",
    "JobQueueEvaluator",
    "cancel_recorded_jobs",
    "cluster_evaluator",
    "read_jobs",
    "walltime_seconds",
]


def walltime_seconds(walltime: str) -> float:
    """Seconds of a walltime ``"HH:MM:SS"`` or ``"D-HH:MM:SS"``."""
    days, _, rest = walltime.rpartition("-")
    h, m, s = (int(p) for p in rest.split(":"))
    return float((int(days) if days else 0) * 86400 + h * 3600 + m * 60 + s)


def read_jobs(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The contents of a ``jobs.json`` (a folder or the file); empty when there is none."""
    p = Path(path)
    p = p / JOBS_FILE if p.is_dir() else p
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _update(path: Path, change: Any) -> None:
    """Read, change and write ``jobs.json`` atomically (one writer: the run, under its folder lock)."""
    with _LOCK:
        data = read_jobs(path)
        data.setdefault("jobs", {})
        data.setdefault("events", [])
        change(data)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
        os.replace(tmp, path)


def _alive(kind: str, job_id: str) -> bool:
    """Whether the scheduler still knows the job (``squeue -h -j ID`` / ``qstat ID``)."""
    cmd = ["squeue", "-h", "-j", job_id] if kind == "slurm" else ["qstat", job_id]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return True  # cannot tell: cancel it to be safe
    return r.returncode == 0 and bool(r.stdout.strip())


def cancel_recorded_jobs(folder: str | os.PathLike[str]) -> list[str]:
    """Cancel the jobs recorded in ``folder/jobs.json`` that the scheduler still knows; the ids cancelled.

    Jobs are marked ``cancelled`` or ``ended`` in the file, so a second call cancels nothing."""
    path = Path(folder) / JOBS_FILE
    data = read_jobs(path)
    kind = data.get("kind")
    jobs = data.get("jobs") or {}
    open_ids = [j for j, info in jobs.items() if info.get("state") == "submitted"]
    if not open_ids or kind not in CANCEL_COMMANDS:
        return []
    cancelled = [j for j in open_ids if _alive(kind, j)]
    if cancelled:
        subprocess.run([CANCEL_COMMANDS[kind], *cancelled], capture_output=True, timeout=60, check=False)
        log.warning("cancelled %d job(s) a stopped run left behind: %s", len(cancelled), " ".join(cancelled))

    def mark(d: dict[str, Any]) -> None:
        for j in open_ids:
            d["jobs"][j]["state"] = "cancelled" if j in cancelled else "ended"

    _update(path, mark)
    return cancelled


def _cluster_class(kind: str) -> Any:
    try:
        import dask_jobqueue
    except ImportError:
        raise MissingExtraError(
            f'[evaluator] kind = "{kind}" needs dask-jobqueue, which is not installed; install it with '
            "`pip install 'mechcalib[cluster]'`, or use kind = \"dask\" with the scheduler address of a cluster "
            "started by hand (docs/cluster.md)"
        ) from None
    return {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[kind]


def _recording_job_class(base_cluster: Any, evaluator: JobQueueEvaluator) -> type:
    """The cluster's job class, recording each job id in ``jobs.json`` as the scheduler accepts it."""
    job_cls = base_cluster.job_cls

    class RecordedJob(job_cls):  # type: ignore[valid-type, misc]
        async def start(self) -> None:
            await super().start()
            evaluator._job_submitted(str(self.job_id), str(self.name))

        async def close(self) -> None:
            await super().close()
            evaluator._job_closed(str(self.job_id))

    return RecordedJob


def _removed_workers(start: int, dask_scheduler: Any = None) -> tuple[int, list[tuple[str, int]]]:
    """Run on the scheduler: the workers removed unexpectedly (not retired by scaling) since event
    ``start`` of the topic ``all``, with the tasks each was running; the count of events seen."""
    events = list(dask_scheduler.get_events("all")) if dask_scheduler is not None else []
    lost = []
    for _, msg in events[start:]:
        if isinstance(msg, dict) and msg.get("action") == "remove-worker" and not msg.get("expected"):
            lost.append((str(msg.get("worker")), len(msg.get("processing-tasks") or ())))
    return len(events), lost


def _problem_plugin(problem: Any) -> Any:
    """A worker plugin that holds the problem on every worker, those joining later included."""
    from distributed import WorkerPlugin

    plugin = WorkerPlugin()
    plugin.problem = problem  # type: ignore[attr-defined]
    return plugin


class _ProblemOnWorker:
    """Stands for the problem in a task: resolved on the worker from its plugin (``status`` as a future's)."""

    status = "finished"

    def __init__(self, key: str) -> None:
        self.key = key

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        from distributed import get_worker

        return getattr(get_worker().plugins[self.key].problem, name)  # type: ignore[attr-defined]


class JobQueueEvaluator(DaskEvaluator):
    """Evaluates on dask workers started as SLURM or PBS jobs (dask-jobqueue).

    Args:
        kind: ``"slurm"`` or ``"pbs"``.
        cores, memory, walltime, queue, account, job_extra_directives, job_script_prologue, processes: the
            job's request (dask-jobqueue's arguments of the same names; ``processes`` worker processes per
            job share its ``cores``).
        minimum_jobs, maximum_jobs: bounds of the adaptive scaling (``adaptive=False``: ``maximum_jobs``
            jobs are held for the whole run).
        death_timeout: seconds after which a worker that lost its scheduler ends itself.
        timeout, chunk_size, tasks_per_worker, task_seconds: as :class:`DaskEvaluator`.
        cluster_options: further keyword arguments of the dask-jobqueue cluster (e.g. ``interface``).
    """

    name = "jobqueue"

    def __init__(self, kind: str, **settings: Any) -> None:
        if kind not in CANCEL_COMMANDS:
            raise ConfigurationError(f'cluster kind must be "slurm" or "pbs", got {kind!r}')
        job_keys: tuple[str, ...] = ("cores", "memory", "walltime", "queue", "account", "job_extra_directives")
        job_keys += ("job_script_prologue", "processes")
        self.kind = kind
        _cluster_class(kind)  # dask-jobqueue missing: said now, before a run folder is made
        self.job = {k: settings.pop(k) for k in job_keys if settings.get(k) is not None}
        for k in ("cores", "memory", "walltime"):
            if k not in self.job:
                raise ConfigurationError(f"{kind} cluster: {k} is required (every job asks the scheduler for it)")
        self.minimum_jobs = int(settings.pop("minimum_jobs", 0))
        self.maximum_jobs = int(settings.pop("maximum_jobs", 1))
        if self.maximum_jobs < max(self.minimum_jobs, 1):
            raise ConfigurationError(
                f"{kind} cluster: maximum_jobs must be >= minimum_jobs and >= 1, got {self.maximum_jobs}"
            )
        self.adaptive = bool(settings.pop("adaptive", True))
        self.death_timeout = float(settings.pop("death_timeout", 60.0))
        self.walltime_s = walltime_seconds(str(self.job["walltime"]))
        self.jobs_path: Path | None = None
        self._workers: dict[str, str] = {}  # worker address -> worker name
        self._seen_events = 0
        self._names_at = -math.inf
        super().__init__(address=None, **settings)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "kind": self.kind, "maximum_jobs": self.maximum_jobs, "adaptive": self.adaptive}

    def _code_fix(self) -> str:
        return 'e.g. job_script_prologue = ["export PYTHONPATH=/path/to/code:$PYTHONPATH"] in [evaluator]'

    def record_to(self, folder: str | os.PathLike[str]) -> None:
        """Record the jobs and cluster events in ``folder/jobs.json`` (the run folder)."""
        self.jobs_path = Path(folder) / JOBS_FILE

        def init(d: dict[str, Any]) -> None:
            d["kind"] = self.kind

        _update(self.jobs_path, init)

    @property
    def client(self) -> Any:
        if self._client is None:
            distributed = __import__("distributed")
            cls = _cluster_class(self.kind)
            extra = ["--death-timeout", str(self.death_timeout)]
            self._cluster = cls(
                job_cls=_recording_job_class(cls, self),
                worker_extra_args=extra,
                scheduler_options={"dashboard_address": None},
                **self.job,
                **self.cluster_options,
            )
            if self.adaptive:
                self._cluster.adapt(minimum_jobs=self.minimum_jobs, maximum_jobs=self.maximum_jobs)
            else:
                self._cluster.scale(jobs=self.maximum_jobs)
            self._client = distributed.Client(self._cluster)
        return self._client

    def _scatter(self, problem: Any) -> None:
        # Jobs come and go (walltimes, adaptive scaling): rather than scattered data, which dies with the last
        # worker that holds it, the problem is a worker plugin that the scheduler gives every worker that joins.
        key = f"mechcalib-problem-{uuid.uuid4().hex}"
        self.client.register_plugin(_problem_plugin(problem), name=key)
        self._problem_future = _ProblemOnWorker(key)

    def worker_slots(self) -> int:
        # an adaptive cluster may hold no worker yet: plan for the most it may grow to
        procs = int(self.job.get("processes", 1))
        threads = max(1, int(self.job["cores"]) // procs)
        return max(super().worker_slots(), self.maximum_jobs * procs * threads if self.adaptive else 1)

    # ---- records ------------------------------------------------------------------------------------
    def _job_submitted(self, job_id: str, name: str) -> None:
        log.info("%s job %s submitted (%s)", self.kind, job_id, name)
        if self.jobs_path is None:
            return

        def add(d: dict[str, Any]) -> None:
            d["jobs"][job_id] = {"name": name, "submitted": time.time(), "walltime_s": self.walltime_s}
            d["jobs"][job_id]["state"] = "submitted"

        _update(self.jobs_path, add)

    def _job_closed(self, job_id: str) -> None:
        if self.jobs_path is None:
            return

        def close(d: dict[str, Any]) -> None:
            if job_id in d["jobs"]:
                d["jobs"][job_id]["state"] = "ended"

        _update(self.jobs_path, close)

    def _event(self, kind: str, **info: Any) -> None:
        if self.jobs_path is None:
            return

        def add(d: dict[str, Any]) -> None:
            d["events"].append({"event": kind, "time": time.time(), **info})

        _update(self.jobs_path, add)

    def _note_resent(self, n: int) -> None:
        log.warning("%d simulation(s) lost with their worker were submitted again", n)
        self._event("resubmitted", simulations=n)

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
        for address, tasks in lost:
            self._worker_lost(address, tasks)

    def _worker_lost(self, address: str, tasks: int) -> None:
        name = self._workers.get(address, address)
        jobs = read_jobs(self.jobs_path).get("jobs", {}) if self.jobs_path else {}
        job = next((j for j, i in jobs.items() if name.startswith(str(i.get("name")))), None)
        age = time.time() - float(jobs[job]["submitted"]) if job else 0.0
        if job is not None and age >= WALLTIME_SHARE * self.walltime_s:
            log.warning(
                "%s job %s ended at its walltime (%s); its worker %s left", self.kind, job, self.job["walltime"], name
            )
            self._event("walltime", job=job, worker=name, tasks=tasks)
        else:
            log.warning("the cluster lost worker %s (job %s) with %d task(s) running", name, job or "?", tasks)
            self._event("lost_worker", job=job, worker=name, tasks=tasks)

    def _learn_names(self) -> None:
        """The names of the workers now present (a removed worker's name is no longer known to dask)."""
        self._names_at = time.monotonic()
        try:
            for addr, w in self._client.scheduler_info().get("workers", {}).items():
                self._workers[addr] = str(w.get("name", addr))
        except Exception:  # noqa: BLE001 - a look at the cluster must not stop the run
            return

    def _submit(self, X: np.ndarray) -> Iterator[Outcome]:
        self._look_at_cluster()
        try:
            for o in super()._submit(X):
                if time.monotonic() - self._names_at > 1.0:
                    self._learn_names()
                yield o
        finally:
            self._look_at_cluster()

    def close(self) -> None:
        self._look_at_cluster()
        super().close()


def cluster_evaluator(kind: str, **settings: Any) -> JobQueueEvaluator:
    """A :class:`JobQueueEvaluator` from Python, e.g. ``cluster_evaluator("slurm", cores=8, memory="16GB",
    walltime="02:00:00", maximum_jobs=10, queue="normal")``."""
    return JobQueueEvaluator(kind, **settings)
