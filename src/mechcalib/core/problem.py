"""A calibration problem: a model, the experiments it must match and the objective that scores it.

Every method family (optimisers, surrogate strategies, inverse networks) reads a problem through the
members :class:`ProblemLike` declares: ``space`` (the free parameters and their unit-cube map), ``evaluate``
(losses of a batch of free parameter sets, with per-set status so that a failed simulation is recorded, not
raised), ``failure_loss`` (the penalty the evaluators give a set that failed or timed out) and
``fingerprint()`` (the problem's identity for the run store's cache; ``None``: a hash of its pickle).
:class:`ProblemBase` gives the last two their defaults.
"""

from __future__ import annotations

import math
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from ..errors import ConfigurationError, InfrastructureError
from .data import Experiment
from .model import Model, Response, SimulationFailure
from .objective import Objective
from .parameters import ParameterSpace

OK, FAILED = "ok", "failed"


@dataclass
class EvaluationBatch:
    """Results of evaluating ``n`` parameter sets.

    ``losses`` holds the loss the optimiser sees (the penalty for a failed set), ``raw_losses`` the
    objective value (NaN when failed), ``status`` ``"ok"``/``"failed"``, ``errors`` the failure text.
    ``responses`` keeps the simulated curves (``None`` for failed sets or when not kept).
    """

    losses: np.ndarray
    raw_losses: np.ndarray
    status: list[str]
    errors: list[str | None]
    responses: list[Any] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def n_failed(self) -> int:
        return sum(s != OK for s in self.status)


class ProblemLike(Protocol):
    """What the engine (``calibrate``, the evaluators, the run store) reads of a problem."""

    space: ParameterSpace
    failure_loss: float

    def evaluate(self, x_free: np.ndarray) -> EvaluationBatch: ...

    def fingerprint(self) -> str | None: ...


PROBLEM_MEMBERS = ("space", "evaluate", "failure_loss", "fingerprint")


def check_problem(problem: Any) -> None:
    """Refuse a problem that lacks a member of :class:`ProblemLike`, naming the missing ones and the fix, or
    whose ``failure_loss`` is below the lowest loss it declares (``loss_lower_bound``, when it has one)."""
    missing = [m for m in PROBLEM_MEMBERS if not hasattr(problem, m)]
    if missing:
        raise ConfigurationError(
            f"a problem needs the members {list(PROBLEM_MEMBERS)}; {type(problem).__name__} lacks {missing}: "
            "subclass mechcalib.core.problem.ProblemBase (failure_loss = inf and fingerprint() -> None by default)"
        )
    lower = getattr(problem, "loss_lower_bound", -math.inf)
    objective = getattr(problem, "objective", None)
    source = f"objective {objective.name!r}" if isinstance(objective, Objective) else f"{type(problem).__name__}"
    check_failure_loss(problem.failure_loss, lower, source)


def check_failure_loss(value: Any, lower_bound: float = -math.inf, source: str = "the objective") -> float:
    """``value`` as the loss of a failed evaluation: a finite number or ``+inf``, not below ``lower_bound``
    (the lowest loss a real result can have; ``source`` names what declares it, for the message). ``-inf``,
    NaN or a number below the bound would rank a failed simulation above every real result, so all are
    refused."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(value, bool) or math.isnan(v) or v == -math.inf:
        raise ConfigurationError(
            f"failure_loss must be a finite number or inf, got {value!r}: a failed simulation must not beat a "
            "real result; give inf (the default) or a large finite penalty"
        )
    if v < lower_bound:
        raise ConfigurationError(failure_loss_below(value, lower_bound, source))
    return v


def failure_loss_below(value: Any, lower_bound: float, source: str) -> str:
    """The message refusing a ``failure_loss`` below the lowest loss ``source`` can give."""
    return (
        f"failure_loss must not be below the lowest loss {source} can give ({lower_bound!r}), got {value!r}: a "
        f"failed simulation would beat every real result; give inf (the default) or a large penalty >= "
        f"{lower_bound!r}, above the losses real simulations give"
    )


def objective_lower_bound(objective: Any, weights: Sequence[float]) -> float:
    """The lowest loss ``objective`` can give summed over experiments of ``weights`` (each >= 0): its declared
    ``lower_bound`` times their sum; ``-inf`` when it declares none."""
    lb = float(getattr(objective, "lower_bound", -math.inf))
    if not math.isfinite(lb):
        return -math.inf
    return lb * math.fsum(float(w) for w in weights) if lb else 0.0


class ProblemBase(ABC):
    """Base of problems: declares :class:`ProblemLike` with the defaults of its optional members."""

    space: ParameterSpace
    #: loss of a failed or timed-out evaluation
    failure_loss: float = math.inf

    @property
    def loss_lower_bound(self) -> float:
        """The lowest loss a real result can have (``failure_loss`` may not be below it); ``-inf``: unknown."""
        return -math.inf

    @abstractmethod
    def evaluate(self, x_free: np.ndarray) -> EvaluationBatch:
        """Losses of the ``(n, dim)`` free parameter sets ``x_free``."""

    def fingerprint(self) -> str | None:
        """The problem's identity for the run store's cache; ``None`` (default): a hash of its pickle and the
        package version (see :func:`mechcalib.storage.codec.problem_fingerprint`)."""
        return None

    # -- the residual capability (read by the residual optimisers and the uncertainty engine) ------------
    @property
    def has_residuals(self) -> bool:
        """Whether :meth:`residuals_from_responses` gives residual vectors; default ``False``."""
        return False

    @property
    def residual_source(self) -> str:
        """What the residuals come from, for messages (a :class:`Problem`: its objective's name)."""
        return type(self).__name__

    def residuals_from_responses(self, responses: Sequence[Any]) -> tuple[np.ndarray, list[str | None]]:
        """The residuals ``(n, m)`` of the responses kept by :meth:`evaluate` (``None`` for a failed set; NaN
        rows for failures) and each set's failure text. Default: none, refused."""
        raise ConfigurationError(
            f"{type(self).__name__} has no residual vectors (has_residuals is False); use a Problem whose objective "
            "has residuals (l2, f1, f2, overlap_rss, smoothed_overlap_rss) or a derivative-free optimizer"
        )

    def keeping_responses(self, keep: bool | str) -> ProblemBase:
        """This problem made to keep its simulated responses (``True``: every channel, ``"measured"``: the
        channels the experiments measure) when it keeps none yet. Default: unchanged (it keeps none)."""
        return self


def residual_problem(problem: ProblemLike) -> ProblemBase | None:
    """``problem`` when it gives residual vectors (a :class:`ProblemBase` whose ``has_residuals`` is True),
    else ``None``: a problem that only follows :class:`ProblemLike` has no residuals."""
    return problem if isinstance(problem, ProblemBase) and problem.has_residuals else None


def residual_source(problem: ProblemLike) -> str:
    """What ``problem``'s residuals would come from, for messages (its objective's name, or its type's)."""
    return problem.residual_source if isinstance(problem, ProblemBase) else type(problem).__name__


class _PenaltyMixin(ProblemBase):
    def _finish(self, raw: np.ndarray, errors: list[str | None], responses: list[Any], t0: float) -> EvaluationBatch:
        status = [OK if e is None else FAILED for e in errors]
        losses = np.where([s == OK for s in status], raw, self.failure_loss).astype(float)
        return EvaluationBatch(losses, raw, status, errors, responses, time.perf_counter() - t0)


@dataclass
class Problem(_PenaltyMixin):
    """Model + experiment(s) + objective.

    Args:
        model: the forward model.
        experiments: one or several experiments; each one's ``conditions`` go to the model and its
            ``weight`` multiplies its loss.
        objective: misfit of one simulated response against one experiment.
        space: the searched parameter space (default: the model's own, with its default bounds).
        failure_loss: loss given to a failed simulation (default ``inf``; every optimiser handles it).
        keep_responses: keep simulated curves in the returned batches (for plots and stores): ``True`` every
            channel the model returns, ``"measured"`` only the channels each experiment measures (what the
            objective and its residuals read; least squares and ``auto`` ask for these, so that a store keeps
            a few curves per evaluation rather than every output of the model).
    """

    model: Model
    experiments: Sequence[Experiment]  # one Experiment is accepted too (made a one-element list)
    objective: Objective
    space: ParameterSpace = None  # type: ignore[assignment]  # None: the model's own space
    failure_loss: float = math.inf
    keep_responses: bool | str = False

    def __post_init__(self) -> None:
        if isinstance(self.experiments, Experiment):
            self.experiments = [self.experiments]
        self.experiments = list(self.experiments)
        if not self.experiments:
            raise ConfigurationError("a Problem needs at least one experiment, got none")
        check_failure_loss(self.failure_loss)
        if not isinstance(self.objective, Objective):
            raise ConfigurationError(
                f"a Problem's objective must be a mechcalib.objectives.Objective (it declares values_many and "
                f"channels), got {type(self.objective).__name__}; subclass Objective and define channel_misfit"
            )
        check_failure_loss(self.failure_loss, self.loss_lower_bound, f"objective {self.objective.name!r}")
        if self.space is None:
            self.space = self.model.space
        if self.space.names != self.model.space.names:
            raise ConfigurationError(
                f"the problem's parameter space must list the model's parameters in order "
                f"{list(self.model.space.names)}, got {list(self.space.names)}"
            )
        for e in self.experiments:
            self.model.validate_conditions(e.conditions)  # a bad condition fails here, not as every set failing
            unknown = set(e.channel_names) - set(self.model.channel_names)
            if unknown and self.objective.channels is None:
                raise ConfigurationError(
                    f"experiment {e.name!r} has channel(s) {sorted(unknown)} that model {self.model.name!r} "
                    f"does not produce; its channels are {list(self.model.channel_names)}"
                )

    def simulate(self, x_free: np.ndarray, experiment: Experiment | None = None) -> list[Response | SimulationFailure]:
        """Simulate free parameter sets ``(n, dim)`` under an experiment's conditions."""
        exp = experiment or self.experiments[0]
        theta = self.space.to_full(x_free)
        return self.model.simulate(theta, exp.conditions)

    def evaluate(self, x_free: np.ndarray) -> EvaluationBatch:
        t0 = time.perf_counter()
        x_free = np.atleast_2d(np.asarray(x_free, dtype=float))
        n = x_free.shape[0]
        raw = np.zeros(n)
        errors: list[str | None] = [None] * n
        responses: list[Any] = [dict() for _ in range(n)] if self.keep_responses else []
        for exp in self.experiments:
            sims = _simulate_isolated(self.simulate, x_free, exp)
            for i, sim in enumerate(sims):
                if errors[i] is None and isinstance(sim, SimulationFailure):
                    errors[i] = f"experiment {exp.name!r}: {sim.message}"
            live = [i for i in range(n) if errors[i] is None]
            for i, val in zip(live, self._score([sims[i] for i in live], exp), strict=True):
                if isinstance(val, Exception):  # a response the objective cannot score is a failed set
                    errors[i] = f"experiment {exp.name!r}: objective failed: {type(val).__name__}: {val}"
                    continue
                val = exp.weight * val
                sim = sims[i]
                if not math.isfinite(val):
                    errors[i] = f"experiment {exp.name!r}: objective is not finite ({val!r})"
                    continue
                raw[i] += val
                if self.keep_responses == "measured":
                    responses[i][exp.name] = {c: sim[c] for c in exp.channels if c in sim}
                elif self.keep_responses:
                    responses[i][exp.name] = sim
        raw = np.where([e is None for e in errors], raw, np.nan)
        return self._finish(raw, errors, responses, t0)

    @property
    def loss_lower_bound(self) -> float:
        """The objective's declared ``lower_bound`` summed over the experiments' weights (``-inf``: none)."""
        return objective_lower_bound(self.objective, [e.weight for e in self.experiments])

    # -- residuals (least-squares methods) ---------------------------------------------------------
    @property
    def has_residuals(self) -> bool:
        """Whether the objective gives residual vectors (see :mod:`mechcalib.core.objective`)."""
        return bool(self.objective.has_residuals)

    @property
    def residual_source(self) -> str:
        return str(self.objective.name)

    def keeping_responses(self, keep: bool | str) -> Problem:
        return self if self.keep_responses else replace(self, keep_responses=keep)

    @property
    def n_residuals(self) -> int:
        """The residual length ``m``, fixed by the experiments: the sum over experiments of the objective's
        ``n_residuals``."""
        return sum(self.objective.n_residuals(e) for e in self.experiments)

    def residuals_from_responses(self, responses: Sequence[Any]) -> tuple[np.ndarray, list[str | None]]:
        """The residuals ``(n, m)`` of responses kept by :meth:`evaluate` (``{experiment name: response}``
        each, ``None`` for a failed set), experiments concatenated in order, each scaled by the square root
        of its weight; with the failure text of each set (``None`` when ok). A failed set's row is NaN, so is
        the row of a response that cannot be scored or gives another length than :attr:`n_residuals`."""
        if not self.has_residuals:
            raise ConfigurationError(
                f"objective {self.objective.name!r} has no residual vector (has_residuals is False: its loss is not "
                "a sum of squares); use an objective with residuals (l2, f1, f2, overlap_rss, smoothed_overlap_rss) or a derivative-free "
                "optimizer"
            )
        names = [e.name for e in self.experiments]
        if len(set(names)) != len(names):
            raise ConfigurationError(
                f"residuals need experiments with distinct names (responses are kept by name), got {names}; "
                "name each experiment (Experiment(..., name=...))"
            )
        m = self.n_residuals
        R = np.full((len(responses), m), np.nan)
        errors: list[str | None] = [None] * len(responses)
        for i, resp in enumerate(responses):
            if resp is None or not all(n in resp for n in names):
                errors[i] = "no response kept (the set failed)"
                continue
            try:
                parts = [np.sqrt(e.weight) * self.objective.residuals(resp[e.name], e) for e in self.experiments]
                r = np.concatenate(parts) if parts else np.zeros(0)
                if r.shape != (m,):
                    raise ConfigurationError(
                        f"the residual length is fixed per problem: expected {m}, got {r.shape[0]}; the "
                        "objective's residuals must depend on the experiments only"
                    )
            except Exception as exc:  # noqa: BLE001 - that set's failure
                errors[i] = f"residuals failed: {type(exc).__name__}: {exc}"
                continue
            R[i] = r
        return R, errors

    def evaluate_residuals(self, x_free: np.ndarray) -> tuple[np.ndarray, EvaluationBatch]:
        """Simulate ``x_free`` ``(n, dim)``: the residuals ``(n, m)`` (NaN rows for failed sets) and the
        evaluation batch, whose ``status``/``errors`` record each failure."""
        prob = self if self.keep_responses else replace(self, keep_responses=True)
        batch = prob.evaluate(x_free)
        resp = [r if s == OK else None for r, s in zip(batch.responses, batch.status, strict=True)]
        R, errors = self.residuals_from_responses(resp)
        for i, err in enumerate(errors):
            if err is not None and batch.status[i] == OK:
                batch.status[i], batch.errors[i] = FAILED, err
                batch.losses[i], batch.raw_losses[i] = self.failure_loss, math.nan
        return R, batch

    def residuals(self, x_free: np.ndarray) -> np.ndarray:
        """The residuals ``(n, m)`` of the free parameter sets ``x_free`` ``(n, dim)``: experiments
        concatenated, each scaled by the square root of its weight; a failed set's row is NaN (its failure is
        in :meth:`evaluate_residuals`'s batch). For a ``"sum_squares"`` objective ``sum(r**2)`` is the loss."""
        return self.evaluate_residuals(x_free)[0]

    def _score(self, sims: list, exp: Experiment) -> list[float | Exception]:
        """The objective of each response against ``exp``, or the exception it raised, through the objective's
        ``values_many`` (response by response by default; the neural smoother trains one stacked fit per
        batch)."""
        if not sims:
            return []
        try:
            return list(self.objective.values_many(sims, exp))
        except Exception as exc:  # noqa: BLE001 - e.g. the experiment itself cannot be scored
            return [exc] * len(sims)


def _simulate_isolated(simulate: Callable, x: np.ndarray, exp: Experiment) -> list:
    """Run a batch; if the batch raises, retry one set at a time so one bad set fails alone."""
    try:
        out = simulate(x, exp)
        if len(out) != x.shape[0]:
            raise RuntimeError(f"model returned {len(out)} responses for {x.shape[0]} parameter sets")
        return out
    except InfrastructureError:  # the machine failed, not a set: the run stops
        raise
    except Exception:
        if x.shape[0] == 1:
            return [SimulationFailure(traceback.format_exc(limit=3).strip().splitlines()[-1])]
        out = []
        for i in range(x.shape[0]):
            out.extend(_simulate_isolated(simulate, x[i : i + 1], exp))
        return out


@dataclass
class FunctionProblem(_PenaltyMixin):
    """A problem defined by a loss function of the free parameters (benchmarks, custom losses).

    ``fn`` maps ``(n, dim)`` physical values to ``(n,)`` losses (``vectorized=True``) or one ``(dim,)``
    vector to a float. Exceptions and non-finite values become failed evaluations.
    """

    fn: Callable[[np.ndarray], Any]
    space: ParameterSpace
    vectorized: bool = True
    failure_loss: float = math.inf

    def __post_init__(self) -> None:
        check_failure_loss(self.failure_loss)

    @classmethod
    def from_bounds(cls, fn, lower, upper, **kw) -> FunctionProblem:
        return cls(fn, ParameterSpace.from_bounds(lower, upper), **kw)

    def evaluate(self, x_free: np.ndarray) -> EvaluationBatch:
        t0 = time.perf_counter()
        x = np.atleast_2d(np.asarray(x_free, dtype=float))
        n = x.shape[0]
        raw = np.full(n, np.nan)
        errors: list[str | None] = [None] * n
        if self.vectorized:
            try:
                raw = np.asarray(self.fn(x), dtype=float).reshape(n)
            except InfrastructureError:
                raise
            except Exception as exc:
                errors = [f"{type(exc).__name__}: {exc}"] * n
        else:
            for i in range(n):
                try:
                    raw[i] = float(self.fn(x[i]))
                except InfrastructureError:
                    raise
                except Exception as exc:
                    errors[i] = f"{type(exc).__name__}: {exc}"
        for i in range(n):
            if errors[i] is None and not math.isfinite(raw[i]):
                errors[i] = f"loss is not finite ({float(raw[i])!r})"
        return self._finish(np.where([e is None for e in errors], raw, np.nan), errors, [], t0)


def experiment_from_model(
    model: Model,
    values: Mapping[str, float] | None = None,
    *,
    preset: str = "default",
    conditions: Mapping[str, Any] | None = None,
    noise: float = 0.0,
    seed: int | np.random.Generator | None = None,
    name: str = "synthetic",
) -> Experiment:
    """A synthetic experiment: the model's response at known parameters, optionally with Ding et al.'s (2021)
    eq. 36 noise. The ground truth of recovery tests."""
    theta = model.full_vector(values, preset)
    (resp,) = model.simulate(theta[None, :], conditions)
    if isinstance(resp, SimulationFailure):
        raise ConfigurationError(f"model {model.name!r} failed at the given parameters: {resp.message}")
    exp = Experiment(dict(resp), conditions=dict(conditions or {}), name=name)
    return exp.with_noise(noise, seed) if noise else exp
