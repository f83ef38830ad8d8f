"""The evaluator protocol: where and how a batch of parameter sets is evaluated.

An evaluator is bound to a problem with :meth:`Evaluator.start`, then receives whole ask batches with
:meth:`Evaluator.submit`, which dispatches the batch at once and returns an iterator of
:class:`Outcome` objects, one per parameter set, **in the order they finish**. The caller (the calibration
loop) records each outcome on arrival and assembles the batch in ask order before telling the optimiser,
so a result never depends on timing.

Failures are per evaluation: a parameter set whose simulation raises, returns a non-finite loss, runs past
the per-evaluation ``timeout`` or takes its worker down is reported as a failed :class:`Outcome` with its
error text and the problem's penalty loss (``problem.failure_loss``, default ``inf``); the other sets of
the batch are unaffected.

Statuses: ``"ok"``; ``"failed"`` (the problem reported the failure: an exception, NaN/inf, an objective
that could not be computed: deterministic, so the store may reuse it); ``"timeout"`` (the evaluation ran
past ``timeout`` and was killed or abandoned); ``"crashed"`` (the worker process died or the task was
lost). Timeouts and crashes depend on the machine, so they are never reused from the cache.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..core.problem import OK, EvaluationBatch
from ..errors import ConfigurationError, InfrastructureError

log = logging.getLogger(__name__)

FAILED, TIMEOUT, CRASHED = "failed", "timeout", "crashed"
STATUSES = (OK, FAILED, TIMEOUT, CRASHED)
#: statuses whose outcome depends only on the parameter values (safe to reuse from the cache)
DETERMINISTIC_STATUSES = (OK, FAILED)


class EvaluatorError(RuntimeError):
    """The evaluator itself cannot work (workers cannot start, the problem cannot be sent to them)."""


@dataclass
class Outcome:
    """The result of one parameter set.

    Attributes:
        index: position of the set in the submitted batch (``0 <= index < n``).
        loss: the loss the optimiser is told (the problem's penalty when the set failed).
        raw_loss: the objective value (NaN when the set failed).
        status: ``"ok"``, ``"failed"``, ``"timeout"`` or ``"crashed"``.
        error: the failure text (``None`` when ok).
        response: the simulated response kept by the problem (``None`` when not kept).
        started, finished: wall-clock times (``time.time()``) of the evaluation; a chunk of several sets
            evaluated by one call shares the chunk's times.
        worker: where it ran (``"serial"``, ``"pool-0:12345"``, a dask worker address, ``"cache"``...).
        source: ``"live"`` (simulated now), ``"cache"`` (an identical parameter set already evaluated) or
            ``"replay"`` (read back from the store when a run resumes).
    """

    index: int
    loss: float
    raw_loss: float
    status: str
    error: str | None = None
    response: Any = None
    started: float = math.nan
    finished: float = math.nan
    worker: str = ""
    source: str = "live"

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def seconds(self) -> float:
        return self.finished - self.started


def failure_loss(problem: Any) -> float:
    """The penalty loss of a failed evaluation: the problem's ``failure_loss`` (``inf`` in
    :class:`~mechcalib.core.problem.ProblemBase`)."""
    return float(problem.failure_loss)


def failed_outcomes(
    problem: Any, n: int, status: str, error: str, *, started: float, worker: str, offset: int = 0
) -> list[Outcome]:
    """``n`` failed outcomes (indices ``offset ... offset + n - 1``) with one status and error text."""
    now = time.time()
    pen = failure_loss(problem)
    return [Outcome(offset + i, pen, math.nan, status, error, None, started, now, worker) for i in range(n)]


def evaluate_chunk(
    problem: Any, X: np.ndarray, worker: str = "serial", evaluate: Callable[[np.ndarray], EvaluationBatch] | None = None
) -> list[Outcome]:
    """Evaluate ``X`` ``(k, dim)`` with one ``problem.evaluate`` call (or ``evaluate``, a replacement
    batch function) and split the batch into outcomes.

    Never raises for a failing parameter set: a problem that raises as a whole fails the chunk's sets
    with the exception text (:class:`~mechcalib.core.problem.Problem` itself already isolates sets), and a
    set reported ok with a non-finite loss is turned into a failure.
    """
    X = np.atleast_2d(np.asarray(X, dtype=float))
    k = X.shape[0]
    t0 = time.time()
    try:
        res: EvaluationBatch = (evaluate or problem.evaluate)(X)
        losses = np.asarray(res.losses, dtype=float).reshape(-1)
        raw = np.asarray(res.raw_losses, dtype=float).reshape(-1)
        if losses.shape[0] != k or raw.shape[0] != k or len(res.status) != k or len(res.errors) != k:
            raise RuntimeError(f"problem.evaluate returned {losses.shape[0]} results for {k} parameter sets")
    except InfrastructureError:  # not the sets' failure: the run stops (see calibrate)
        raise
    except Exception as exc:
        text = traceback.format_exception_only(type(exc), exc)[-1].strip()
        log.warning("%s: evaluate raised for a whole chunk of %d set(s): %s", worker, k, text)
        return failed_outcomes(problem, k, FAILED, f"evaluate raised {text}", started=t0, worker=worker)
    t1 = time.time()
    pen = failure_loss(problem)
    out = []
    for i in range(k):
        status, error, loss = str(res.status[i]), res.errors[i], float(losses[i])
        if status == OK and not math.isfinite(loss):
            status, error, loss = FAILED, f"loss is not finite ({loss!r})", pen
        elif status != OK and error is None:
            error = "failed (no error text given)"
        resp = res.responses[i] if i < len(res.responses) else None
        out.append(Outcome(i, loss, float(raw[i]) if status == OK else math.nan, status, error, resp, t0, t1, worker))
    return out


def call_with_timeout(fn: Callable[[], Any], timeout: float) -> tuple[bool, Any]:
    """Run ``fn()`` in a daemon thread for at most ``timeout`` seconds: ``(True, value)`` when it
    returned, ``(False, None)`` when the deadline passed (the thread is abandoned and keeps running
    until ``fn`` returns: Python cannot kill a thread). An exception of ``fn`` is re-raised."""
    box: list = []

    def target() -> None:
        try:
            box.append((True, fn()))
        except BaseException as exc:  # handed to the caller
            box.append((False, exc))

    th = threading.Thread(target=target, name="mechcalib-evaluation", daemon=True)
    th.start()
    th.join(timeout)
    if not box:
        return False, None
    ok, value = box[0]
    if not ok:
        raise value
    return True, value


def evaluate_chunk_timed(
    problem: Any, X: np.ndarray, timeout: float | None, worker: str = "serial"
) -> Iterator[Outcome]:
    """:func:`evaluate_chunk` under a per-evaluation ``timeout`` enforced in-process.

    A chunk of ``k`` sets gets ``k * timeout`` seconds; when it runs past that, its sets are retried one
    at a time with ``timeout`` each, so only the hung set is recorded as ``"timeout"``. A timed-out call
    is abandoned (it keeps running in a background thread until it returns). Outcomes are yielded as
    they are known, with indices relative to ``X``.
    """
    X = np.atleast_2d(np.asarray(X, dtype=float))
    if timeout is None:
        yield from evaluate_chunk(problem, X, worker)
        return
    k = X.shape[0]
    t0 = time.time()
    done, outs = call_with_timeout(lambda: evaluate_chunk(problem, X, worker), timeout * k)
    if done:
        yield from outs
        return
    if k == 1:
        yield from failed_outcomes(
            problem,
            1,
            TIMEOUT,
            f"timeout: the evaluation did not finish within {timeout:g} s (abandoned in a background thread)",
            started=t0,
            worker=worker,
        )
        return
    for i in range(k):
        for o in evaluate_chunk_timed(problem, X[i : i + 1], timeout, worker):
            o.index = i
            yield o


def chunks(n: int, chunk_size: int | None) -> list[range]:
    """Split positions ``0 ... n - 1`` into consecutive ranges of at most ``chunk_size`` (all at once
    when ``None``)."""
    if n == 0:
        return []
    size = n if chunk_size is None else chunk_size
    return [range(i, min(i + size, n)) for i in range(0, n, size)]


def check_timeout(owner: str, timeout: float | None) -> float | None:
    if timeout is None:
        return None
    try:
        t = float(timeout)
    except (TypeError, ValueError):
        raise ConfigurationError(f"{owner}: timeout must be a number of seconds or None, got {timeout!r}") from None
    if not (t > 0 and math.isfinite(t)):
        raise ConfigurationError(
            f"{owner}: timeout must be a positive finite number of seconds or None, got {timeout!r}"
        )
    return t


def check_chunk_size(owner: str, chunk_size: int | None) -> int | None:
    if chunk_size is None:
        return None
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer) or chunk_size < 1:
        raise ConfigurationError(f"{owner}: chunk_size must be an integer >= 1 or None, got {chunk_size!r}")
    return int(chunk_size)


class Evaluator(ABC):
    """Base class of evaluators.

    Life cycle::

        with PoolEvaluator(n_workers=2, timeout=60) as ev:
            ev.start(problem)                 # bind (sends the problem to the workers)
            for o in ev.submit(X):            # X: (n, dim) free parameter values
                ...                           # outcomes in completion order, o.index is the position
            batch = ev.evaluate(X)            # or: an EvaluationBatch in input order

    :func:`mechcalib.calibrate` calls ``start`` itself; an evaluator passed to it is not closed by it, so
    its workers can serve several runs (close it, or use it as a context manager). ``start`` with another
    problem rebinds the evaluator.

    Args common to all evaluators:
        timeout: per-evaluation limit in seconds (``None``: no limit). A chunk of ``k`` sets gets
            ``k * timeout``; a chunk that runs past it is retried set by set so only the hung set fails.
        chunk_size: how many parameter sets go to one ``problem.evaluate`` call (one task). Larger chunks
            let a vectorised model work on several sets at once; ``1`` balances load best.
    """

    name: ClassVar[str] = "evaluator"
    #: whether several threads may each :meth:`submit` a set at once (asynchronous evaluation's slots)
    concurrent_submit: ClassVar[bool] = True

    def __init__(self, *, timeout: float | None = None, chunk_size: int | None = None) -> None:
        self.timeout = check_timeout(self.name, timeout)
        self.chunk_size = check_chunk_size(self.name, chunk_size)
        self._problem: Any = None

    # -- protocol ------------------------------------------------------------------------------
    def start(self, problem: Any) -> Evaluator:
        """Bind the evaluator to ``problem`` (anything with ``evaluate(X) -> EvaluationBatch``)."""
        if problem is not self._problem:
            self._start(problem)
            self._problem = problem
        return self

    @property
    def problem(self) -> Any:
        return self._problem

    def submit(self, X: np.ndarray) -> Iterator[Outcome]:
        """Dispatch the ``(n, dim)`` batch at once; iterate over its outcomes as they finish.

        Every position ``0 ... n - 1`` is delivered exactly once. Abandoning the iterator early leaves
        no result behind: outcomes of abandoned work are discarded.
        """
        if self._problem is None:
            raise ConfigurationError(f"{self.name} evaluator: call start(problem) before submit()")
        X = np.atleast_2d(np.asarray(X, dtype=float))
        if X.shape[0] == 0:
            return iter(())
        return self._submit(X)

    def evaluate(self, X: np.ndarray) -> EvaluationBatch:
        """Evaluate ``X`` and return the results in input order (a drop-in for ``problem.evaluate``)."""
        t0 = time.perf_counter()
        X = np.atleast_2d(np.asarray(X, dtype=float))
        outs: list[Outcome | None] = [None] * X.shape[0]
        for o in self.submit(X):
            outs[o.index] = o
        return outcomes_to_batch(outs, time.perf_counter() - t0)  # type: ignore[arg-type]

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release workers and clusters this evaluator started. Safe to call twice."""

    @property
    def n_workers(self) -> int:
        return 1

    def describe(self) -> dict[str, Any]:
        """The evaluator's settings, for the run store."""
        return {"name": self.name, "timeout": self.timeout, "chunk_size": self.chunk_size, "n_workers": self.n_workers}

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- subclass hooks ----------------------------------------------------------------------------
    def _start(self, problem: Any) -> None:  # noqa: B027 - optional hook
        """Prepare workers for ``problem`` (default: nothing)."""

    @abstractmethod
    def _submit(self, X: np.ndarray) -> Iterator[Outcome]: ...


def outcomes_to_batch(outs: list[Outcome], seconds: float = 0.0) -> EvaluationBatch:
    """Outcomes in order -> an :class:`~mechcalib.core.problem.EvaluationBatch`."""
    keep = any(o.response is not None for o in outs)
    return EvaluationBatch(
        losses=np.array([o.loss for o in outs], dtype=float),
        raw_losses=np.array([o.raw_loss for o in outs], dtype=float),
        status=[o.status for o in outs],
        errors=[o.error for o in outs],
        responses=[o.response for o in outs] if keep else [],
        seconds=seconds,
    )


class FunctionEvaluator(Evaluator):
    """Wraps a batch function ``evaluate(X) -> EvaluationBatch`` (the ``evaluate=`` argument of
    :func:`~mechcalib.calibrate`): the whole batch in one call, in-process, no timeout."""

    name = "function"

    def __init__(self, evaluate: Callable[[np.ndarray], EvaluationBatch]) -> None:
        super().__init__()
        self._fn = evaluate

    def _submit(self, X: np.ndarray) -> Iterator[Outcome]:
        return iter(evaluate_chunk(self._problem, X, "serial", self._fn))
