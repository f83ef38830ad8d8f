"""The asynchronous calibration loop (:class:`AsyncCalibrationLoop`, docs/asynchronous.md)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..execution._base import Outcome, outcomes_to_batch
from ..execution.slots import Slots
from .loop import CalibrationLoop, _after_batch

log = logging.getLogger(__name__)


class AsyncCalibrationLoop(CalibrationLoop):
    """One asynchronous run: ``W`` evaluations in flight; each finished one is recorded, told at once and
    replaced by a new ask. Each told evaluation is one step (``batch`` = its rank in the told order, ``pos``
    0); a resumed run replays the stored told order, asking as it asks, and only then simulates."""

    slots: Slots

    def _describe(self) -> dict[str, Any]:
        return {**self.evaluator.describe(), "asynchronous": self.slots.width}

    def run(self) -> str:
        self._open_session()
        self.evaluator.start(self.problem)
        self.optimizer.setup(self.space.dim)
        session = self.session
        recs = sorted(session.replay.values(), key=lambda r: r.batch) if session is not None else []
        if self.residual_source is not None and recs:
            assert session is not None
            full = session.store.evaluations(session.run_id, responses=True)
            self.stored_responses = {r.idx: r.response for r in full}
        self.order = [r.idx for r in recs]
        self.inflight: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.n_asked = 0
        reason: str | None = None
        try:
            self._fill()
            while self.inflight and reason is None:
                reason = self._told(*self._next())
                if reason is None and not self.optimizer.converged:
                    self._fill()
                elif reason is None:
                    reason = self.optimizer.stop_reason
        finally:
            self.slots.close()
        reason = reason or ("budget" if self._budget_left() == 0 else self.optimizer.stop_reason)
        self.finish(reason)
        return reason

    def _budget_left(self) -> int | None:
        t = self.termination
        return None if t.max_evals is None else t.max_evals - self.n_asked

    def _fill(self) -> None:
        """Ask for as many points as slots are free (within the budget); submit those not stored."""
        free = self.slots.width - len(self.inflight)
        left = self._budget_left()
        if left is not None:
            free = min(free, left)
        if free <= 0:
            return
        U = self.optimizer.ask_async(free)
        stored = self.session.replay if self.session is not None else {}
        for u in U:
            idx = self.n_asked
            x = self.space.from_unit(u[None, :])[0]
            self.inflight[idx] = (u, x)
            self.n_asked += 1
            if idx in stored:
                self.slots.stored(idx, x)
            else:
                self.slots.submit(idx, x)

    def _next(self) -> tuple[int, Outcome]:
        """The next told evaluation: the recorded told order first (replay), then the slots."""
        if self.order:
            idx = self.order.pop(0)
            if idx not in self.inflight:
                from ..storage.session import ResumeError

                raise ResumeError(
                    f"resuming run {self.persistence.run_name!r}: evaluation {idx} is next in the recorded told "
                    f"order, but the optimiser has not asked it (asked so far: {self.n_asked}); the optimiser, its "
                    "settings, the number of evaluations in flight or the budget changed. Resume with the same ones"
                )
            assert self.session is not None
            rec = self.session.replay[idx]
            self.slots.take(idx)
            o = self.session.replayed(rec, self.inflight[idx][1], rec.batch, rec.pos, 0)
            self.counts["replay"] += 1
            return idx, o
        idx, o = self.slots.next_done()
        o.index = 0
        o.source = "live"
        if self.session is not None:
            u, x = self.inflight[idx]
            self.session.begin_batch(self.hist.n_evals, self.n_asked)
            key = self.session.keys(x[None, :])[0]
            self.session.record(o, idx=idx, batch=self.hist.n_evals, pos=0, key=key, x=x, u=u)
        self.counts["live"] += 1
        return idx, o

    def _told(self, idx: int, o: Outcome) -> str | None:
        u, x = self.inflight.pop(idx)
        rank = self.hist.n_evals
        if self.on_evaluation is not None:
            self.on_evaluation(idx, rank, o)
        r = None
        if self.residual_source is not None:
            resp = o.response if o.response is not None else self.stored_responses.get(idx)
            R, _ = self.residual_source.residuals_from_responses([resp if o.ok else None])
            r = R[0]
        self.optimizer.tell_async(idx, u, o.loss, r)
        self.hist.add(u[None, :], x[None, :], outcomes_to_batch([o]), rank, True)
        self.batches += 1
        if self.session is not None and o.source == "live":
            self.session.touch(self.batches, self.hist.n_evals)
        self._note_best(self.hist.best_per_batch[-1])
        if self.callback is not None and self.callback(self.batches, self.optimizer, self.hist):
            return "callback"
        t = self.termination
        if t.max_iters is not None and self.batches >= t.max_iters:
            return "max_iters"
        return _after_batch(t, self.best, self.stale)
