"""In-process evaluation."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ._base import Evaluator, Outcome, chunks, evaluate_chunk_timed


class SerialEvaluator(Evaluator):
    """Evaluates in the calling process, one chunk after the other.

    Args:
        timeout: per-evaluation limit in seconds. In-process code cannot be killed: a call that runs past
            its deadline is abandoned in a daemon thread (it keeps its CPU until it returns) and its sets
            are recorded as ``"timeout"``. Use :class:`~mechcalib.execution.PoolEvaluator` to kill hung
            simulations.
        chunk_size: sets per ``problem.evaluate`` call. Default: the whole batch in one call (a vectorised
            model sees the full batch, exactly as :func:`~mechcalib.calibrate` without an evaluator), or
            one set per call when a ``timeout`` is set, so that a deadline applies to one simulation.
    """

    name = "serial"

    def __init__(self, *, timeout: float | None = None, chunk_size: int | None = None) -> None:
        super().__init__(timeout=timeout, chunk_size=chunk_size)

    def _submit(self, X: np.ndarray) -> Iterator[Outcome]:
        size = self.chunk_size if self.chunk_size is not None else (1 if self.timeout is not None else None)
        problem, timeout = self._problem, self.timeout
        for r in chunks(X.shape[0], size):
            for o in evaluate_chunk_timed(problem, X[r.start : r.stop], timeout, "serial"):
                o.index += r.start
                yield o
