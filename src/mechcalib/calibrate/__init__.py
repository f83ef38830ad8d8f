"""The calibration loop: ask, evaluate, tell, record, until a termination rule fires.

With a run store the loop is durable: each evaluation is committed as it arrives, the optimiser is
checkpointed after told batches, and a run killed at any moment resumes (same ``run_name``) without
simulating a stored evaluation again, ending with exactly the result of an uninterrupted run.

The package: :mod:`.records` (Termination, History, Result, Persistence), :mod:`.loop` (the synchronous
loop), :mod:`.asynchronous` (the asynchronous loop) and here :func:`calibrate` and :func:`minimize`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ..core.problem import EvaluationBatch, ProblemBase, ProblemLike, check_problem, residual_problem
from ..errors import ConfigurationError
from ..execution._base import Evaluator, FunctionEvaluator, Outcome
from ..execution.slots import Slots, slots_for
from ..optimizers._base import Optimizer
from ..optimizers.residual import ResidualOptimizer
from ..storage.base import Store
from ..storage.sqlite import RunStore
from .asynchronous import AsyncCalibrationLoop
from .loop import CalibrationLoop
from .records import History, Persistence, Result, Termination

__all__ = [
    "AsyncCalibrationLoop",
    "CalibrationLoop",
    "History",
    "Persistence",
    "Result",
    "Termination",
    "calibrate",
    "minimize",
]

log = logging.getLogger(__name__)
# the start and end lines of a run, for Python users; the command line, which prints its own, silences this one
run_log = logging.getLogger(__name__ + ".run")


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
    problem, optimizer, source = _prepared(problem, optimizer, termination)
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


def _prepared(
    problem: ProblemLike, optimizer: Optimizer | None, termination: Termination
) -> tuple[ProblemLike, Optimizer, ProblemBase | None]:
    """The checked problem, the optimiser (default :class:`~mechcalib.optimizers.auto.Auto`) told its budget,
    and the problem residuals are read from (``None`` for an optimiser that takes losses only)."""
    check_problem(problem)
    if optimizer is None:
        from ..optimizers.auto import Auto

        optimizer = Auto()
    # a residual optimiser (least squares) checks the problem and budget, and gets the problem that keeps
    # the responses its residuals are computed from (called here: its warnings name the caller of calibrate)
    if isinstance(optimizer, ResidualOptimizer):
        problem = optimizer.prepare_problem(problem, max_evals=termination.max_evals)
    optimizer.set_budget(termination.max_evals)
    source = residual_problem(problem) if isinstance(optimizer, ResidualOptimizer) else None
    return problem, optimizer, source


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
    from ..display import LiveProgress, interactive

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
        from ..execution import make_evaluator

        return make_evaluator(evaluator), True
    if evaluator is None:
        return FunctionEvaluator(evaluate or problem.evaluate), False
    return evaluator, False


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
    from ..core.problem import FunctionProblem

    prob = FunctionProblem.from_bounds(fn, lower, upper, vectorized=vectorized)
    return calibrate(prob, optimizer, termination, max_evals=max_evals, **kw)
