"""The synchronous calibration loop (:class:`CalibrationLoop`): restore, step batch after batch, finish."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.problem import ProblemBase, ProblemLike
from ..errors import ConfigurationError, InfrastructureError
from ..execution._base import Evaluator, Outcome, outcomes_to_batch
from ..optimizers._base import Optimizer
from ..optimizers.residual import ResidualOptimizer
from ..storage.base import Store
from ..storage.session import RunSession
from .records import History, Persistence, Result, Termination, _alternatives

log = logging.getLogger(__name__)


class CalibrationLoop:
    """One run of :func:`calibrate`: :meth:`restore` a resumed run's checkpoint, :meth:`step` batch after
    batch (ask, evaluate, record, tell), then :meth:`finish`; :meth:`run` does the three in order.

    ``residual_source``: the problem whose residuals the optimiser is told (a
    :class:`~mechcalib.optimizers.residual.ResidualOptimizer` on a problem with residuals), else ``None``.
    """

    def __init__(
        self,
        problem: ProblemLike,
        optimizer: Optimizer,
        termination: Termination,
        evaluator: Evaluator,
        persistence: Persistence,
        residual_source: ProblemBase | None = None,
        callback: Callable[[int, Optimizer, History], bool | None] | None = None,
        on_evaluation: Callable[[int, int, Outcome], Any] | None = None,
    ) -> None:
        self.problem, self.space = problem, problem.space
        self.optimizer, self.termination, self.evaluator = optimizer, termination, evaluator
        self.persistence = persistence
        self.residual_optimizer = optimizer if isinstance(optimizer, ResidualOptimizer) and residual_source else None
        self.residual_source = residual_source if self.residual_optimizer is not None else None
        self.callback, self.on_evaluation = callback, on_evaluation
        self.session: RunSession | None = None
        self.counts = {"live": 0, "cache": 0, "replay": 0}
        self.hist = History()
        self.stored_responses: dict[int, Any] = {}
        self.batches = 0
        self.best, self.stale = math.inf, 0

    def run(self) -> str:
        """Open the run's session, restore, step until a rule stops it, finish; returns the stop reason."""
        self._open_session()
        self.evaluator.start(self.problem)
        self.optimizer.setup(self.space.dim)
        self.restore()
        if self.batches:  # a checkpoint holds the budget it was taken under: a resume may have raised it
            self.optimizer.set_budget(self.termination.max_evals)
        reason = _after_batch(self.termination, self.best, self.stale) if self.batches else None
        while reason is None:
            reason = self._stop_before_batch() or self.step()
        self.finish(reason)
        return reason

    def _open_session(self) -> None:
        p = self.persistence
        if isinstance(p.store, Store):
            self.session = RunSession(
                p.store,
                self.problem,
                self.optimizer,
                self.termination,
                self._describe(),
                run_name=p.run_name,
                config=dict(p.config) if p.config is not None else None,
                resume=p.resume,
                cache=True if p.cache is None else p.cache,
            )
        elif p.run_name is not None:
            raise ConfigurationError("run_name needs a store: pass store=RunStore(path)")

    def _describe(self) -> dict[str, Any]:
        return self.evaluator.describe()

    def restore(self) -> None:
        """A resumed run: the latest usable checkpoint into the optimiser and the history it covers."""
        session = self.session
        if session is not None:
            told_residuals = None
            if self.residual_source is not None:  # a checkpoint leaves the residuals out: from the responses
                if session.resumed:
                    recs = session.store.evaluations(session.run_id, responses=True)
                    self.stored_responses = {r.idx: r.response for r in recs}
                told_residuals = self._stored_residuals
            self.batches = _restore_checkpoint(
                session, self.optimizer, self.space, self.hist, self.counts, told_residuals
            )
        for cur in self.hist.best_per_batch:
            self._note_best(cur)

    def _stored_residuals(self, recs: list) -> np.ndarray:
        assert self.residual_source is not None
        responses = [self.stored_responses.get(r.idx) if r.status == "ok" else None for r in recs]
        return self.residual_source.residuals_from_responses(responses)[0]

    def _note_best(self, cur: float) -> None:
        self.stale = 0 if cur < self.best - self.termination.min_delta else self.stale + 1
        self.best = min(self.best, cur)

    def _stop_before_batch(self) -> str | None:
        t = self.termination
        if t.max_iters is not None and self.batches >= t.max_iters:
            return "max_iters"
        if t.max_evals is not None and self.hist.n_evals >= t.max_evals:
            return "budget"
        if self.optimizer.converged:
            return self.optimizer.stop_reason
        return None

    def step(self) -> str | None:
        """One batch: ask, evaluate (the last one cut by the budget), record, tell; returns the stop reason
        of the rules checked after a batch, or ``None``."""
        hist, t = self.hist, self.termination
        U = self.optimizer.ask()
        n = U.shape[0]
        told = True
        if t.max_evals is not None and hist.n_evals + n > t.max_evals:
            n = t.max_evals - hist.n_evals
            told = False
        X = self.space.from_unit(U[:n])
        bt = time.perf_counter()
        outs = _run_batch(
            self.batches,
            U[:n],
            X,
            hist.n_evals,
            self.evaluator,
            self.session,
            self.on_evaluation,
            self.counts,
            self.residual_source is not None,
        )
        res = outcomes_to_batch(outs, time.perf_counter() - bt)
        R = self._residuals(outs) if told else None
        hist.add(U[:n], X, res, self.batches, told)
        if told:
            self._tell(U, res.losses, R)
        self.batches += 1
        self._record(told)
        self._note_best(hist.best_per_batch[-1])
        if self.callback is not None and self.callback(self.batches, self.optimizer, hist):
            return "callback"
        return _after_batch(t, self.best, self.stale)

    def _residuals(self, outs: list[Outcome]) -> np.ndarray | None:
        """The residuals of a told batch, for a residual optimiser (``None``: it is told losses only)."""
        if self.residual_source is None:
            return None
        base = self.hist.n_evals
        resp = [
            o.response if o.response is not None else self.stored_responses.get(base + i) for i, o in enumerate(outs)
        ]
        R, rerr = self.residual_source.residuals_from_responses(
            [r if o.ok else None for r, o in zip(resp, outs, strict=True)]
        )
        for i, err in enumerate(rerr):
            if err is not None and outs[i].ok:
                log.warning("evaluation %d: %s; the optimiser treats it as failed", base + i, err)
        return R

    def _tell(self, U: np.ndarray, losses: np.ndarray, R: np.ndarray | None) -> None:
        if self.residual_optimizer is not None:
            self.residual_optimizer.tell(U, losses, residuals=R)
        else:
            self.optimizer.tell(U, losses)

    def _record(self, told: bool) -> None:
        """A checkpoint every ``checkpoint_every`` told batches, else the run's progress."""
        if self.session is None:
            return
        every = self.persistence.checkpoint_every
        if told and every and self.batches % every == 0:
            self.session.checkpoint(self.batches, self.hist.n_evals, self.optimizer)
        else:
            self.session.touch(self.batches, self.hist.n_evals)

    def finish(self, reason: str) -> None:
        """Record the end of a run that stopped on ``reason``."""
        if self.session is not None:
            self.session.finish("finished", self.batches, stop_reason=reason, choices=_choices_of(self.optimizer))

    def abort(self, exc: BaseException) -> None:
        """Record the end of a run stopped by ``exc``: interrupted (a pause, resumed once fixed: an interrupt
        or the machine failing, :class:`InfrastructureError`) or failed."""
        session = self.session
        if session is None:
            return
        stopped = isinstance(exc, KeyboardInterrupt | GeneratorExit | InfrastructureError)
        status = "interrupted" if stopped else "failed"
        try:
            session.finish(
                status, self.batches, error=f"{type(exc).__name__}: {exc}", choices=_choices_of(self.optimizer)
            )
        except Exception as end_exc:  # the original error matters more (a full disk refuses both)
            log.warning("could not record the end of run %r: %s", session.run_name, end_exc)

    def result(self, reason: str, seconds: float, n_alternatives: int, alternative_distance: float) -> Result:
        hist, space, optimizer = self.hist, self.space, self.optimizer
        losses = np.array(hist.losses) if hist.losses else np.array([np.inf])
        i = int(np.argmin(losses))
        best_x = np.array(hist.X[i]) if hist.X else np.full(space.dim, np.nan)
        best_params = space.as_dict(space.to_full(best_x)[0]) if hist.X else {}
        return Result(
            best_x=best_x,
            best_loss=float(losses[i]),
            best_params=best_params,
            history=hist,
            alternatives=_alternatives(self.problem, hist, n_alternatives, alternative_distance),
            n_evals=hist.n_evals,
            n_batches=self.batches,
            n_failed=sum(s != "ok" for s in hist.status),
            stop_reason=reason,
            seconds=seconds,
            optimizer=optimizer.name,
            settings=optimizer.settings(),
            run_name=self.session.run_name if self.session is not None else None,
            n_simulated=self.counts["live"],
            n_cached=self.counts["cache"],
            n_replayed=self.counts["replay"],
            choices=_choices_of(optimizer) or [],
            free_names=tuple(space.free_names),
        )


def _choices_of(optimizer: Optimizer) -> list[dict[str, Any]] | None:
    """The optimiser's recorded choices (``None`` before setup: nothing to record)."""
    if optimizer.dim is None:
        return None
    return [dict(c) for c in optimizer.choices]


def _after_batch(termination: Termination, best: float, stale: int) -> str | None:
    """The stop rules checked after a batch (target, patience)."""
    if termination.target is not None and best <= termination.target:
        return "target"
    if termination.patience is not None and stale >= termination.patience:
        return "patience"
    return None


def _restore_checkpoint(
    session: RunSession, optimizer: Optimizer, space: Any, hist: History, counts: dict, told: Any = None
) -> int:
    """Load the latest usable checkpoint of a resumed run into ``optimizer`` and rebuild ``hist`` from the
    stored evaluations it covers; returns the number of batches restored (0: replay from the start).
    ``told(records)``: their residuals, for :meth:`~Optimizer.restore_told`."""
    for b, n, state, recs in session.checkpoints():
        try:
            optimizer.load_state_dict(state)
            if told is not None and n:
                optimizer.restore_told(np.array([r.u for r in recs]), told(recs))
        except Exception as exc:
            log.warning("checkpoint at batch %d cannot be restored (%s); trying an older one", b, exc)
            optimizer.setup(space.dim)
            continue
        i = 0
        while i < n:
            j = i
            while j < n and recs[j].batch == recs[i].batch:
                j += 1
            group = recs[i:j]
            U = np.array([r.u for r in group])
            X = np.array([[r.params[k] for k in space.free_names] for r in group], dtype=float)
            outs = [
                Outcome(
                    r.pos, r.loss, r.raw_loss, r.status, r.error, None, r.started, r.finished, r.worker or "", "replay"
                )
                for r in group
            ]
            hist.add(U, X, outcomes_to_batch(outs), recs[i].batch, True)
            i = j
        counts["replay"] += n
        log.info("run %r: restored the checkpoint after batch %d (%d evaluations)", session.run_name, b, n)
        return b
    return 0


def _run_batch(
    b: int,
    U: np.ndarray,
    X: np.ndarray,
    base: int,
    evaluator: Evaluator,
    session: RunSession | None,
    on_evaluation: Callable[[int, int, Outcome], Any] | None,
    counts: dict,
    want_responses: bool = False,
) -> list[Outcome]:
    """Outcomes of one batch in ask order: stored ones (replay), cache hits, then live evaluations, each
    recorded as it arrives; ``want_responses``: cache hits carry their stored response."""
    n = X.shape[0]
    outs: list[Outcome | None] = [None] * n
    todo = list(range(n))
    keys: list[str] = []
    dups: dict[int, list[int]] = {}

    def deliver(i: int, o: Outcome, **rec: Any) -> int | None:
        rid = None
        if session is not None:
            rid = session.record(o, idx=base + i, batch=b, pos=i, key=keys[i], x=X[i], u=U[i], **rec)
        outs[i] = o
        counts[o.source] += 1
        if on_evaluation is not None:
            on_evaluation(base + i, b, o)
        return rid

    if session is not None:
        session.begin_batch(base, base + n)
        keys = session.keys(X)
        todo = []
        first: dict[str, int] = {}
        for i in range(n):
            stored = session.replay.get(base + i)
            if stored is not None:
                o = session.replayed(stored, X[i], b, i, i)
                outs[i] = o
                counts["replay"] += 1
                if on_evaluation is not None:
                    on_evaluation(base + i, b, o)
                continue
            if session.cache:
                if keys[i] in first:  # the same point earlier in this batch: evaluate once
                    dups.setdefault(first[keys[i]], []).append(i)
                    continue
                hit = session.lookup(keys[i], i)
                if hit is not None:
                    o, src, blob = hit
                    if want_responses:
                        o.response = session.response_of(blob)
                    deliver(i, o, cached_from=src, blob=blob)
                    continue
                first[keys[i]] = i
            todo.append(i)
    if todo:
        for o in evaluator.submit(X[todo]):
            i = todo[o.index]
            o.index = i
            rid = deliver(i, o)
            for j in dups.get(i, ()):
                now = time.time()
                copy = Outcome(j, o.loss, o.raw_loss, o.status, o.error, o.response, now, now, "cache", "cache")
                deliver(j, copy, cached_from=rid)
    missing = [i for i, o in enumerate(outs) if o is None]
    if missing:  # an evaluator broke its contract; fail loudly rather than tell the optimiser garbage
        raise RuntimeError(f"evaluator {evaluator.name!r} delivered no outcome for batch positions {missing}")
    return outs  # type: ignore[return-value]
