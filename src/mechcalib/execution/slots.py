"""Evaluation slots: ``W`` single evaluations in flight, each collected as it finishes (asynchronous
evaluation, ``calibrate(..., asynchronous=...)``, docs/asynchronous.md).

:class:`ThreadSlots` drives any evaluator: each slot is a thread that submits one parameter set through the
evaluator's ordinary :meth:`~mechcalib.execution.Evaluator.submit` and waits for its outcome, so a dask
evaluator keeps ``W`` tasks on the cluster and a process pool ``W`` sets on its workers. :class:`ClockSlots`
runs the same protocol on a simulated clock: each set takes ``duration(x)`` simulated seconds, the outcomes
come back in the order those durations decide, and nothing sleeps; it is the deterministic reference that
tests an asynchronous run and its resume against.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from ..errors import ConfigurationError
from ._base import Evaluator, Outcome


class Slots:
    """The protocol: :meth:`bind` to an evaluator, :meth:`submit` one set under a ticket, :meth:`next_done`
    for the next finished ``(ticket, outcome)``, :meth:`close` to abandon what is left."""

    width: int = 1

    def bind(self, evaluator: Evaluator) -> Slots:
        self.evaluator = evaluator
        return self

    def submit(self, ticket: int, x: np.ndarray) -> None:
        raise NotImplementedError

    def stored(self, ticket: int, x: np.ndarray) -> None:  # noqa: B027 - optional hook
        """A set asked again on resume whose outcome the store holds: not evaluated (a simulated clock
        still books its slot, so that the resumed run keeps the uninterrupted run's schedule)."""

    def take(self, ticket: int) -> None:  # noqa: B027 - optional hook
        """The stored set of ``ticket`` is told now, in the recorded told order (frees its slot)."""

    def next_done(self) -> tuple[int, Outcome]:
        raise NotImplementedError

    def close(self) -> None:  # noqa: B027 - optional hook
        """Abandon the evaluations still in flight (their outcomes are discarded)."""


def _one(evaluator: Evaluator, x: np.ndarray) -> Outcome:
    outs = list(evaluator.submit(x.reshape(1, -1)))
    if len(outs) != 1:
        raise RuntimeError(f"evaluator {evaluator.name!r} delivered {len(outs)} outcomes for one parameter set")
    return outs[0]


class ThreadSlots(Slots):
    """``width`` evaluations in flight through ``width`` threads, each submitting one set to the evaluator."""

    def __init__(self, width: int) -> None:
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise ConfigurationError(f"asynchronous: the number of evaluations in flight must be >= 1, got {width!r}")
        self.width = width
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[Future, int] = {}

    def submit(self, ticket: int, x: np.ndarray) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.width, thread_name_prefix="mechcalib-slot")
        self._futures[self._pool.submit(_one, self.evaluator, np.array(x, dtype=float))] = ticket

    def next_done(self) -> tuple[int, Outcome]:
        done, _ = wait(list(self._futures), return_when=FIRST_COMPLETED)
        fut = min(done, key=lambda f: self._futures[f])  # several at once: the lowest ticket first
        ticket = self._futures.pop(fut)
        return ticket, fut.result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self._futures.clear()


class ClockSlots(Slots):
    """``width`` slots on a simulated clock: a set submitted at simulated time ``t`` finishes at
    ``t + duration(x)`` (``x``: its free parameter values), ties by ticket; it is evaluated (in-process,
    through the evaluator) when it finishes. ``busy`` and ``now`` give the simulated busy time and wall time,
    ``evaluated`` the sets it evaluated."""

    def __init__(self, width: int, duration: Callable[[np.ndarray], float]) -> None:
        ThreadSlots(width)  # the same check
        self.width = width
        self.duration = duration
        self.now = 0.0
        self.busy = 0.0
        self.evaluated = 0
        self._heap: list[tuple[float, int, Any]] = []

    def submit(self, ticket: int, x: np.ndarray) -> None:
        d = float(self.duration(np.asarray(x, dtype=float)))
        self.busy += d
        heapq.heappush(self._heap, (self.now + d, ticket, np.array(x, dtype=float)))

    def stored(self, ticket: int, x: np.ndarray) -> None:
        self.submit(ticket, x)

    def take(self, ticket: int) -> None:
        i = next(k for k, e in enumerate(self._heap) if e[1] == ticket)
        self.now = max(self.now, self._heap[i][0])
        self._heap.pop(i)
        heapq.heapify(self._heap)

    def next_done(self) -> tuple[int, Outcome]:
        t, ticket, x = heapq.heappop(self._heap)
        self.now = t
        self.evaluated += 1
        return ticket, _one(self.evaluator, x)

    def close(self) -> None:
        self._heap.clear()


class DaskSlots(Slots):
    """``width`` tasks of one set each on a :class:`~mechcalib.execution.dask_backend.DaskEvaluator`'s
    cluster, collected through one ``distributed.as_completed`` (no thread per slot: a few milliseconds less
    per evaluation than :class:`ThreadSlots`). A task lost with its worker is evaluated again through the
    evaluator's own :meth:`~mechcalib.execution.Evaluator.submit`, with its recovery rules."""

    def __init__(self, width: int) -> None:
        ThreadSlots(width)  # the same check
        self.width = width
        self._queue: Any = None
        self._tickets: dict[str, tuple[int, np.ndarray, Any]] = {}

    def submit(self, ticket: int, x: np.ndarray) -> None:
        from distributed import as_completed

        fut = self.evaluator._send_one(x)  # type: ignore[attr-defined]
        self._tickets[fut.key] = (ticket, np.array(x, dtype=float).ravel(), fut)
        if self._queue is None:
            self._queue = as_completed([fut], with_results=True, raise_errors=False)
        else:
            self._queue.add(fut)

    def next_done(self) -> tuple[int, Outcome]:
        fut, res = next(self._queue)
        self.evaluator._look_now_and_then()  # type: ignore[attr-defined]  # lost workers told as the run goes
        ticket, x, _ = self._tickets.pop(fut.key)
        if fut.status != "finished":  # lost with its worker (or the problem with it): the evaluator's rules
            return ticket, _one(self.evaluator, x)
        return ticket, res[0]

    def close(self) -> None:
        rest = [f for _, _, f in self._tickets.values()]
        if rest:
            self.evaluator.client.cancel(rest)  # type: ignore[attr-defined]
        self.evaluator._slots_closed()  # type: ignore[attr-defined]
        self._tickets.clear()
        self._queue = None


def slots_for(asynchronous: bool | int | Slots, evaluator: Evaluator) -> Slots:
    """The slots of an asynchronous run: given, ``W`` threads, or (``True``) one per worker thread."""
    if isinstance(asynchronous, Slots):
        return asynchronous.bind(evaluator)
    if not evaluator.concurrent_submit:
        raise ConfigurationError(
            f"asynchronous evaluation needs an evaluator that takes single sets from several threads at once; "
            f"the {evaluator.name!r} evaluator runs one batch at a time. Use the dask evaluator "
            "(a LocalCluster on this machine) or turn asynchronous off"
        )
    from .dask_backend import DaskEvaluator  # no dask import: the module imports it lazily

    kind = DaskSlots if isinstance(evaluator, DaskEvaluator) else ThreadSlots  # SLURM and PBS too
    if asynchronous is True:
        count = getattr(evaluator, "worker_slots", None)
        width = int(count()) if callable(count) else int(evaluator.n_workers)
        return kind(max(1, width)).bind(evaluator)
    if isinstance(asynchronous, bool) or not isinstance(asynchronous, int):
        raise ConfigurationError(
            f"asynchronous must be False, True, a number of evaluations in flight or a Slots, got {asynchronous!r}"
        )
    return kind(asynchronous).bind(evaluator)
