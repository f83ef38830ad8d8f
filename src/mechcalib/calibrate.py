"""The calibration loop: ask, evaluate, tell, record, until a termination rule fires.

With a run store the loop is durable: each evaluation is committed as it arrives, the optimiser is
checkpointed after told batches, and a run killed at any moment resumes (same ``run_name``) without
simulating a stored evaluation again, ending with exactly the result of an uninterrupted run.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .core.problem import EvaluationBatch, ProblemBase, ProblemLike, check_problem, residual_problem
from .errors import ConfigurationError, InfrastructureError
from .execution._base import Evaluator, FunctionEvaluator, Outcome, outcomes_to_batch
from .execution.slots import Slots, slots_for
from .optimizers._base import Optimizer
from .optimizers.residual import ResidualOptimizer
from .storage.base import Store
from .storage.session import RunSession
from .storage.sqlite import RunStore

log = logging.getLogger(__name__)
# the start and end lines of a run, for Python users; the command line, which prints its own, silences this one
run_log = logging.getLogger(__name__ + ".run")


@dataclass(frozen=True)
class Termination:
    """When to stop. Any rule that fires stops the run; at least one must be set.

    Args:
        max_evals: evaluation budget; the last batch is cut so the budget is never exceeded (points cut off
            are not evaluated and the optimiser is not told).
        max_iters: number of ask/tell batches.
        target: stop once the best loss is ``<= target``.
        patience: stop after this many batches without an improvement larger than ``min_delta``.
        min_delta: improvement threshold of ``patience``.
    """

    max_evals: int | None = None
    max_iters: int | None = None
    target: float | None = None
    patience: int | None = None
    min_delta: float = 0.0

    def __post_init__(self) -> None:
        if self.max_evals is None and self.max_iters is None and self.patience is None and self.target is None:
            raise ConfigurationError(
                "a Termination needs at least one rule (max_evals, max_iters, target or patience), got none; "
                "for example Termination(max_evals=1000)"
            )
        for k in ("max_evals", "max_iters", "patience"):
            v = getattr(self, k)
            if v is not None and (not isinstance(v, int) or v < 1):
                raise ConfigurationError(f"Termination: {k} must be a positive integer or None, got {v!r}")
        if self.target is None and self.max_evals is None and self.max_iters is None:
            log.debug("termination by patience only")


@dataclass
class History:
    """Every evaluation of a run, in order.

    ``U``: unit-cube points ``(N, dim)``; ``X``: free parameter values ``(N, dim)``; ``losses``: the loss
    told to the optimiser; ``status``/``errors``: failure records; ``batch``: the batch index of each
    evaluation; ``told``: False for points of a final batch cut by the budget. ``best_per_batch``: the
    best loss so far after each batch.
    """

    U: list[np.ndarray] = field(default_factory=list)
    X: list[np.ndarray] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    batch: list[int] = field(default_factory=list)
    told: list[bool] = field(default_factory=list)
    best_per_batch: list[float] = field(default_factory=list)
    evals_per_batch: list[int] = field(default_factory=list)

    def add(self, U: np.ndarray, X: np.ndarray, res: EvaluationBatch, batch: int, told: bool) -> None:
        self.U.extend(U)
        self.X.extend(X)
        self.losses.extend(res.losses.tolist())
        self.status.extend(res.status)
        self.errors.extend(res.errors)
        self.batch.extend([batch] * len(U))
        self.told.extend([told] * len(U))
        best = min(self.losses) if self.losses else math.inf
        self.best_per_batch.append(best)
        self.evals_per_batch.append(len(self.losses))

    @property
    def n_evals(self) -> int:
        return len(self.losses)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "U": np.array(self.U),
            "X": np.array(self.X),
            "losses": np.array(self.losses),
            "batch": np.array(self.batch),
        }

    def evals_to_reach(self, threshold: float) -> int | None:
        """The number of evaluations after which the best loss first fell to ``<= threshold``."""
        for i, f in enumerate(self.losses):
            if f <= threshold:
                return i + 1
        return None


@dataclass
class Result:
    """Outcome of a calibration.

    ``best_x``: best free parameters ``(dim,)``; ``best_params``: every parameter (fixed ones included) by
    name; ``alternatives``: the best distinct parameter sets found (Kibriya et al. (2023) reports five), as
    ``(params, loss)`` pairs, best first. ``run_name``: the run's name in the store (``None`` without
    one); ``n_simulated``, ``n_cached``, ``n_replayed``: how many of the evaluations were simulated by
    this call, reused from the cache, or read back from the store on resume. ``choices``: the decisions the
    method recorded (:attr:`~mechcalib.optimizers._base.Optimizer.choices`; ``auto``'s design, starts,
    fallback rule and phase boundaries), also stored in the run's record.
    """

    best_x: np.ndarray
    best_loss: float
    best_params: dict[str, float]
    history: History
    alternatives: list[tuple[dict[str, float], float]]
    n_evals: int
    n_batches: int
    n_failed: int
    stop_reason: str
    seconds: float
    optimizer: str
    settings: dict[str, Any]
    run_name: str | None = None
    n_simulated: int = 0
    n_cached: int = 0
    n_replayed: int = 0
    choices: list[dict[str, Any]] = field(default_factory=list)
    free_names: tuple[str, ...] = ()

    def to_dataframe(self) -> Any:
        """The run's evaluations as a pandas ``DataFrame`` (pandas, a core dependency, is imported here):
        one row per evaluation in order, columns ``evaluation``, ``batch``, the free parameters by name,
        ``loss`` (the loss the optimiser was told), ``status``, ``error`` and ``told`` (False for points of a
        last batch cut by the budget)."""
        import pandas as pd

        h = self.history
        X = np.array(h.X, dtype=float).reshape(len(h.X), -1)
        names = list(self.free_names) or [f"x{i}" for i in range(X.shape[1])]
        cols: dict[str, Any] = {"evaluation": np.arange(h.n_evals), "batch": np.array(h.batch, dtype=int)}
        cols |= {n: X[:, i] for i, n in enumerate(names)}
        cols |= {"loss": np.array(h.losses, dtype=float), "status": h.status, "error": h.errors, "told": h.told}
        return pd.DataFrame(cols)

    def _repr_html_(self) -> str:
        from .display import result_html

        return result_html(self)

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={v:.6g}" for k, v in self.best_params.items())
        return f"Result(best_loss={self.best_loss:.6g}, {p}, n_evals={self.n_evals}, stop_reason={self.stop_reason!r})"


def _alternatives(problem: ProblemLike, hist: History, k: int, min_distance: float) -> list:
    """The ``k`` best evaluations that are at least ``min_distance`` apart in the unit cube."""
    if not hist.losses or k <= 0:
        return []
    losses = np.array(hist.losses)
    U = np.array(hist.U)
    chosen: list[int] = []
    for i in np.argsort(losses, kind="stable"):
        if not np.isfinite(losses[i]):
            break
        if all(np.max(np.abs(U[i] - U[j])) >= min_distance for j in chosen):
            chosen.append(int(i))
        if len(chosen) == k:
            break
    space = problem.space
    return [(space.as_dict(space.to_full(hist.X[i])[0]), float(losses[i])) for i in chosen]


@dataclass(frozen=True)
class Persistence:
    """How a run is recorded: :func:`calibrate`'s ``store``, ``run_name``, ``config``, ``resume``, ``cache`` and
    ``checkpoint_every`` (documented there), grouped; ``checkpoint_every`` is checked here."""

    store: Store | str | os.PathLike[str] | None = None
    run_name: str | None = None
    config: Mapping[str, Any] | None = None
    resume: bool | str = True
    cache: bool | None = None
    checkpoint_every: int | None = 1

    def __post_init__(self) -> None:
        ce = self.checkpoint_every
        if ce is not None and (isinstance(ce, bool) or not isinstance(ce, int) or ce < 0):
            raise ConfigurationError(f"checkpoint_every must be an integer >= 0 or None, got {ce!r}")


def calibrate(
    problem: ProblemLike,
    optimizer: Optimizer | None = None,
    termination: Termination | None = None,
    *,
    max_evals: int | None = None,
    evaluate: Callable[[np.ndarray], EvaluationBatch] | None = None,
    callback: Callable[[int, Optimizer, History], bool | None] | None = None,
    n_alternatives: int = 5,
    alternative_distance: float = 0.02,
    evaluator: Evaluator | str | None = None,
    store: Store | str | os.PathLike[str] | None = None,
    run_name: str | None = None,
    config: Mapping[str, Any] | None = None,
    resume: bool | str = True,
    cache: bool | None = None,
    checkpoint_every: int | None = 1,
    on_evaluation: Callable[[int, int, Outcome], Any] | None = None,
    progress: bool | None = None,
    asynchronous: bool | int | Slots = False,
) -> Result:
    """Minimise ``problem``'s loss with an ask/tell ``optimizer``.

    Each batch the optimiser asks is dispatched whole to the evaluator; outcomes are recorded (store,
    ``on_evaluation``) in the order they finish, and the optimiser is told the complete batch in ask order,
    so a seeded run gives the same result whatever the evaluator and the timing.

    Args:
        problem: a :class:`~mechcalib.core.problem.Problem` or any :class:`~mechcalib.core.problem.ProblemLike`
            (``space``, ``evaluate``, ``failure_loss``, ``fingerprint``; see ``ProblemBase``).
        optimizer: an optimiser instance; it is (re)set up on the problem's dimension. Default:
            :class:`~mechcalib.optimizers.auto.Auto` (unseeded; a store records the seed drawn).
        termination: stopping rules; ``max_evals=`` is a shortcut for ``Termination(max_evals=...)``.
        evaluate: a batch function replacing ``problem.evaluate`` (evaluated in-process, whole batches).
        callback: called after each batch with ``(batch index, optimizer, history)``; returning True stops.
            On resume it is called for replayed batches, not for batches restored from a checkpoint.
        n_alternatives: how many distinct good parameter sets to report.
        alternative_distance: minimum unit-cube (max-norm) distance between reported alternatives.
        evaluator: where simulations run: an :class:`~mechcalib.execution.Evaluator` (kept open for
            reuse; close it yourself) or a name ``"serial"``, ``"pool"``, ``"dask"`` (built with default
            options and closed at the end). Default: ``problem.evaluate`` on whole batches, in-process.
        store: a :class:`~mechcalib.storage.RunStore` (or a path to one; any
            :class:`~mechcalib.storage.Store`, e.g. a :class:`~mechcalib.storage.MemoryStore`) that records
            the run: every evaluation committed as it arrives, an optimiser checkpoint after every
            ``checkpoint_every`` told batches, the run's settings and ``config``.
        run_name: the run's name in the store. A new name starts a run; the name of a stored run resumes
            it (see ``resume``). Default: a generated name (``Result.run_name``).
        config: the caller's configuration (JSON-compatible), stored with the run.
        resume: for a ``run_name`` already stored: ``True`` (or ``"checkpoint"``) continues it from the
            latest checkpoint whose batches are all stored, then replays; ``"replay"`` replays the ask/tell
            loop from the start, answering asks from the stored evaluations; ``False`` raises. Either way no
            stored evaluation is simulated again and a seeded run ends with exactly the result of an
            uninterrupted run. The optimiser must have the stored settings (its seed may be left ``None``:
            the stored seed is used; an unseeded new run gets a drawn seed, recorded).
        cache: reuse stored outcomes of identical parameter sets (same problem fingerprint, exact float
            match; timeouts and crashes are not reused) and evaluate duplicates within a batch once.
            Default: on when a store is given.
        checkpoint_every: save the optimiser's ``state_dict`` every this many told batches (``None`` or 0:
            never; resume then replays).
        on_evaluation: called as each evaluation arrives with ``(index in the run, batch, outcome)``;
            ``outcome.source`` is ``"live"``, ``"cache"`` or ``"replay"``.
        progress: show the evaluations done, the budget and the best loss while the run goes on
            (:mod:`mechcalib.display`: a rich bar on stderr in a terminal, an HTML bar in a Jupyter notebook).
            Default ``None``: on in a terminal or a notebook, off elsewhere (output redirected, tests); ``False``
            turns it off (the command line, which draws its own bars, does).
        asynchronous: ``True``, ``W`` or a :class:`~mechcalib.execution.slots.Slots`: ``W`` (``True``: one per
            worker thread) evaluations in flight, each told as it finishes and replaced by a new ask; the told
            order is stored and replayed on resume (docs/asynchronous.md). ``False``: synchronous batches.

    The run's start and end are logged (logger ``mechcalib.calibrate.run``, level INFO).
    """
    termination = _termination(termination, max_evals)
    if evaluate is not None and evaluator is not None:
        raise ConfigurationError("give either evaluate (a batch function) or evaluator, not both")
    persistence = Persistence(store, run_name, config, resume, cache, checkpoint_every)
    check_problem(problem)
    if optimizer is None:
        from .optimizers.auto import Auto

        optimizer = Auto()
    # a residual optimiser (least squares) checks the problem and budget, and gets the problem that keeps
    # the responses its residuals are computed from (called here: its warnings name the caller of calibrate)
    if isinstance(optimizer, ResidualOptimizer):
        problem = optimizer.prepare_problem(problem, max_evals=termination.max_evals)
    optimizer.set_budget(termination.max_evals)
    source = residual_problem(problem) if isinstance(optimizer, ResidualOptimizer) else None
    run_evaluator, own_evaluator = _evaluator_for(problem, evaluate, evaluator)
    own_store = store is not None and not isinstance(store, Store)
    if store is not None and not isinstance(store, Store):
        persistence = replace(persistence, store=RunStore(store))
    live = _live_progress(progress, termination)
    hook = on_evaluation if live is None else _both(on_evaluation, live)
    kind = CalibrationLoop if asynchronous is False else AsyncCalibrationLoop
    loop = kind(problem, optimizer, termination, run_evaluator, persistence, source, callback, hook)
    if isinstance(loop, AsyncCalibrationLoop):
        loop.slots = slots_for(asynchronous, run_evaluator)

    def close() -> None:
        if own_evaluator:
            run_evaluator.close()
        if own_store and isinstance(persistence.store, Store):
            persistence.store.close()

    return _run(loop, live, close, n_alternatives, alternative_distance)


def _run(
    loop: CalibrationLoop, live: Any, close: Callable[[], None], n_alternatives: int, alternative_distance: float
) -> Result:
    """Run ``loop`` with its progress display ``live`` (or ``None``), ``close`` what calibrate opened, log the
    start and the end; the result."""
    t0 = time.perf_counter()
    reason: str | None = None
    run_log.info(
        "calibrating %d parameters with %s (%s)", loop.space.dim, loop.optimizer.name, _rules(loop.termination)
    )
    try:
        reason = loop.run()
    except BaseException as exc:
        loop.abort(exc)
        raise
    finally:
        if live is not None:
            live.close(f"stopped: {reason}" if reason else "interrupted")
        close()
    result = loop.result(reason, time.perf_counter() - t0, n_alternatives, alternative_distance)
    run_log.info(
        "%s%d evaluations (%d failed), best loss %.6g, stopped on %s",
        f"run {result.run_name!r}: " if result.run_name else "",
        result.n_evals,
        result.n_failed,
        result.best_loss,
        reason,
    )
    return result


def _rules(termination: Termination) -> str:
    rules = {k: getattr(termination, k) for k in ("max_evals", "max_iters", "target", "patience")}
    return ", ".join(f"{k} {v}" for k, v in rules.items() if v is not None)


def _live_progress(progress: bool | None, termination: Termination) -> Any:
    """The progress display of a run (:mod:`.display`), or ``None``."""
    from .display import LiveProgress, interactive

    where = interactive()
    if progress is False or (progress is None and where is None):
        return None
    return LiveProgress(termination.max_evals, where or "terminal")


def _both(first: Callable[[int, int, Outcome], Any] | None, second: Callable[[int, int, Outcome], Any]):
    if first is None:
        return second

    def hook(idx: int, batch: int, outcome: Outcome) -> None:
        first(idx, batch, outcome)
        second(idx, batch, outcome)

    return hook


def _termination(termination: Termination | None, max_evals: int | None) -> Termination:
    if termination is None:
        if max_evals is None:
            raise ConfigurationError("calibrate needs a termination rule: pass termination=... or max_evals=...")
        return Termination(max_evals=max_evals)
    if max_evals is not None:
        raise ConfigurationError("give either termination or max_evals, not both")
    return termination


def _evaluator_for(
    problem: ProblemLike, evaluate: Callable[[np.ndarray], EvaluationBatch] | None, evaluator: Evaluator | str | None
) -> tuple[Evaluator, bool]:
    """The evaluator of a run and whether calibrate built it (and so closes it)."""
    if isinstance(evaluator, str):
        from .execution import make_evaluator

        return make_evaluator(evaluator), True
    if evaluator is None:
        return FunctionEvaluator(evaluate or problem.evaluate), False
    return evaluator, False


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
                from .storage.session import ResumeError

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


def minimize(
    fn: Callable[[np.ndarray], np.ndarray],
    lower,
    upper,
    optimizer: Optimizer,
    termination: Termination | None = None,
    *,
    max_evals: int | None = None,
    vectorized: bool = True,
    **kw: Any,
) -> Result:
    """Minimise a plain function over a box: ``fn`` maps ``(n, d)`` points to ``(n,)`` values."""
    from .core.problem import FunctionProblem

    prob = FunctionProblem.from_bounds(fn, lower, upper, vectorized=vectorized)
    return calibrate(prob, optimizer, termination, max_evals=max_evals, **kw)
