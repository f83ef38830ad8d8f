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

import logging
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, MissingExtraError
from .dask_backend import JOBS_FILE, DaskEvaluator, read_jobs, update_jobs

log = logging.getLogger(__name__)

#: the command that cancels a job, per kind
CANCEL_COMMANDS = {"slurm": "scancel", "pbs": "qdel"}
#: a job whose worker left after this share of its walltime is counted as ended at its walltime
WALLTIME_SHARE = 0.9

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


def _alive(kind: str, job_id: str) -> bool:
    """Whether the scheduler still knows the job (``squeue -h -j ID`` / ``qstat ID``)."""
    cmd = ["squeue", "-h", "-j", job_id] if kind == "slurm" else ["qstat", job_id]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return True  # cannot tell: cancel it to be safe
    return r.returncode == 0 and bool(r.stdout.strip())


def cancel_recorded_jobs(folder: str | os.PathLike[str], left_by: str = "a stopped run") -> list[str]:
    """Cancel the jobs recorded in ``folder/jobs.json`` that the scheduler still knows; the ids cancelled.
    ``left_by``: who left them, for the log line.

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
        log.warning("cancelled %d job(s) %s left behind: %s", len(cancelled), left_by, " ".join(cancelled))

    def mark(d: dict[str, Any]) -> None:
        for j in open_ids:
            d["jobs"][j]["state"] = "cancelled" if j in cancelled else "ended"

    update_jobs(path, mark)
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
        given = {k: settings.pop(k, None) for k in job_keys}  # a key the configuration leaves out is None
        self.job = {k: v for k, v in given.items() if v is not None}
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
        super().__init__(address=None, **settings)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "kind": self.kind, "maximum_jobs": self.maximum_jobs, "adaptive": self.adaptive}

    def _code_fix(self) -> str:
        return 'e.g. job_script_prologue = ["export PYTHONPATH=/path/to/code:$PYTHONPATH"] in [evaluator]'

    def record_to(self, folder: str | os.PathLike[str]) -> None:
        """Record the jobs and cluster events in ``folder/jobs.json`` (the run folder)."""
        super().record_to(folder)
        assert self.jobs_path is not None

        def init(d: dict[str, Any]) -> None:
            d["kind"] = self.kind

        update_jobs(self.jobs_path, init)

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

        update_jobs(self.jobs_path, add)

    def _job_closed(self, job_id: str) -> None:
        if self.jobs_path is None:
            return

        def close(d: dict[str, Any]) -> None:
            if job_id in d["jobs"]:
                d["jobs"][job_id]["state"] = "ended"

        update_jobs(self.jobs_path, close)

    def _worker_lost(self, name: str, tasks: int, sets: int) -> None:
        jobs = read_jobs(self.jobs_path).get("jobs", {}) if self.jobs_path else {}
        job = next((j for j, i in jobs.items() if name.startswith(str(i.get("name")))), None)
        age = time.time() - float(jobs[job]["submitted"]) if job else 0.0
        if job is not None and age >= WALLTIME_SHARE * self.walltime_s:
            log.warning(
                "%s job %s ended at its walltime (%s); its worker %s left", self.kind, job, self.job["walltime"], name
            )
            self._event("walltime", job=job, worker=name, tasks=tasks, simulations=sets)
        else:
            log.warning("the cluster lost worker %s (job %s) with %d task(s) running", name, job or "?", tasks)
            self._event("lost_worker", job=job, worker=name, tasks=tasks, simulations=sets)

    def close(self) -> None:
        super().close()
        if self.jobs_path is not None:  # a job dask's close missed (still starting, say) is cancelled here
            cancel_recorded_jobs(self.jobs_path.parent, left_by="the closing of the dask cluster")


def cluster_evaluator(kind: str, **settings: Any) -> JobQueueEvaluator:
    """A :class:`JobQueueEvaluator` from Python, e.g. ``cluster_evaluator("slurm", cores=8, memory="16GB",
    walltime="02:00:00", maximum_jobs=10, queue="normal")``."""
    return JobQueueEvaluator(kind, **settings)
