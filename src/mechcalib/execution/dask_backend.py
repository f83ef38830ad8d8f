"""Evaluation on a dask.distributed cluster (optional extra ``mechcalib[dask]``, imported lazily).

By default a :class:`distributed.LocalCluster` is started; give ``address`` (a scheduler address such as
``"tcp://10.0.0.5:8786"``) or ``client`` to use an existing cluster, for example one made by dask-jobqueue::

    from dask_jobqueue import SLURMCluster
    cluster = SLURMCluster(cores=8, memory="16GB"); cluster.scale(jobs=4)
    ev = DaskEvaluator(address=cluster.scheduler_address, timeout=600)

The problem is scattered once to every worker; each chunk is one task. A dask worker cannot kill a running
task, so the per-evaluation ``timeout`` is enforced inside the task: the simulation runs in a thread of the
worker, and past its deadline the task returns a ``"timeout"`` outcome and frees its slot while the
abandoned thread runs on until the simulation returns (restart such workers, e.g. with dask's
``--lifetime``, if simulations can hang for ever). A task lost with its worker is recorded as ``"crashed"``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import ConfigurationError, require
from ._base import CRASHED, Evaluator, Outcome, chunks, evaluate_chunk_timed, failed_outcomes


def _run_chunk(problem: Any, X: np.ndarray, positions: list[int], timeout: float | None) -> list[Outcome]:
    """The task run on a dask worker: evaluate one chunk, outcomes indexed by batch position."""
    try:
        from distributed import get_worker

        worker = get_worker().address
    except Exception:  # pragma: no cover - outside a worker
        worker = "dask"
    outs = list(evaluate_chunk_timed(problem, X, timeout, worker))
    for o in outs:
        o.index = positions[o.index]
    return outs


class DaskEvaluator(Evaluator):
    """Evaluates on dask.distributed workers.

    Args:
        address: scheduler address of an existing cluster (``None``: start a LocalCluster).
        client: an existing :class:`distributed.Client` (not closed by :meth:`close`).
        n_workers, threads_per_worker, processes: LocalCluster settings (``processes=False`` runs the
            workers as threads of this process: quick to start, shares the GIL).
        timeout: per-evaluation limit in seconds, enforced on the worker (see the module docstring).
        chunk_size: sets per task (default 1).
        cluster_options: further keyword arguments of :class:`distributed.LocalCluster`.
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
        chunk_size: int | None = 1,
        cluster_options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(timeout=timeout, chunk_size=chunk_size)
        if address is not None and client is not None:
            raise ConfigurationError("dask: give either address or client, not both")
        for k, v in (("n_workers", n_workers), ("threads_per_worker", threads_per_worker)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigurationError(f"dask: {k} must be an integer >= 1, got {v!r}")
        self.address = address
        self.n_workers_ = n_workers
        self.threads_per_worker = threads_per_worker
        self.processes = bool(processes)
        self.cluster_options = dict(cluster_options or {})
        self._client = client
        self._own_client = client is None
        self._cluster: Any = None
        self._problem_future: Any = None

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
        return {**super().describe(), "address": self.address, "processes": self.processes}

    def _start(self, problem: Any) -> None:
        self._problem_future = self.client.scatter(problem, broadcast=True, hash=False)

    def _submit(self, X: np.ndarray) -> Iterator[Outcome]:
        client = self.client
        futures = {}
        for r in chunks(X.shape[0], self.chunk_size):
            f = client.submit(_run_chunk, self._problem_future, X[r.start : r.stop], list(r), self.timeout, pure=False)
            futures[f.key] = (f, list(r))
        return self._collect(futures)

    def _collect(self, futures: dict) -> Iterator[Outcome]:
        from distributed import as_completed

        done = set()
        try:
            for f in as_completed([f for f, _ in futures.values()]):
                positions = futures[f.key][1]
                try:
                    outs = f.result()
                except Exception as exc:  # the task was lost with its worker (KilledWorker...)
                    outs = failed_outcomes(
                        self._problem,
                        len(positions),
                        CRASHED,
                        f"crashed: {type(exc).__name__}: {exc}",
                        started=time.time(),
                        worker="dask",
                    )
                    for o, p in zip(outs, positions, strict=True):
                        o.index = p
                done.add(f.key)
                yield from outs
        finally:
            rest = [f for k, (f, _) in futures.items() if k not in done]
            if rest:  # abandoned iterator: do not leave tasks queued
                self._client.cancel(rest)

    def close(self) -> None:
        if self._own_client and self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
        self._problem_future = None
        self._problem = None
