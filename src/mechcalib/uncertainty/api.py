"""``uncertainty(result, ...)``: the local intervals and, on request, the posterior of a calibration.

The steps (each a run in the calibration's store, :mod:`.engine`): polish the best point with one
least-squares start (refused when it does not meet its tolerances, unless ``force``); the residuals and their
Jacobian there; the Laplace covariance (:mod:`.local`); with ``posterior=True`` an emcee chain started around
the polished optimum with that covariance (:mod:`.sampler`, :mod:`.posterior`). Called again on the same store
everything stored is read back, nothing is simulated twice, and a longer ``steps`` extends the chain.

The library knows nothing of run folders: :func:`analyse` takes a :class:`CalibratedRun` (problem, store, run,
best point) and an :class:`UncertaintyOptions`; :func:`uncertainty` builds both from a calibration
:class:`~mechcalib.calibrate.Result`, and :func:`mechcalib.runs.folder_uncertainty` from a run folder.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.parameters import BOUND_TOLERANCE, bound_side, bound_warnings, bounds_report
from ..errors import ConfigurationError
from .engine import ChainSettings, finite, jacobian, polish, run_chain
from .likelihood import (
    NoiseLike,
    channel_blocks,
    check_counts,
    correlation_inflation,
    estimate_noise,
    noise_levels,
    per_residual,
)
from .local import LocalUncertainty, UncertaintyWarning, local_uncertainty
from .posterior import PosteriorSummary, summarize
from .profile import Profile, ProfileGrid
from .profile import profile as run_profile


@dataclass
class UncertaintyResult:
    """What :func:`uncertainty` returns.

    ``best``: the polished optimum (free parameters by name); ``converged``: whether its polish met its
    tolerances; ``local``: the :class:`~.local.LocalUncertainty`; ``posterior``: the
    :class:`~.posterior.PosteriorSummary` (``None`` without one); ``warnings``: every warning raised, as text.
    :meth:`parameters` gives per parameter ``best``, ``lower``, ``upper`` (95 %), ``std`` and ``method``
    (the posterior's when there is one, else the Laplace approximation's), ``at_bound`` (``"lower"``/``"upper"``
    when the best lies within 1 % of the range of that bound, else ``None``) and ``cut`` (``"lower"``,
    ``"upper"`` or ``"both"``: the ends of the interval that the search box cuts, ``None`` when neither);
    ``bounds``: the free parameters' ``(lower, upper)``."""

    run_name: str
    names: tuple[str, ...]
    scales: tuple[str, ...]
    best: dict[str, float]
    best_u: np.ndarray
    best_loss: float
    converged: bool
    polish: str
    local: LocalUncertainty
    posterior: PosteriorSummary | None = None
    n_simulated: int = 0
    warnings: list[str] = field(default_factory=list)
    profiles: dict[str, Any] = field(default_factory=dict)
    bounds: tuple[tuple[float, float], ...] = ()

    def parameters(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for i, n in enumerate(self.names):
            loc = self.local
            row: dict[str, Any] = {
                "best": self.best[n],
                "scale": self.scales[i],
                "local": {
                    "lower": float(loc.lower[i]),
                    "upper": float(loc.upper[i]),
                    "std": finite(float(loc.std[i])),
                    "rel_std": finite(float(loc.rel_std[i])),
                },
                "unidentifiable": n in loc.unidentifiable,
            }
            if self.posterior is not None:
                p = self.posterior
                row["posterior"] = {
                    "lower": float(p.lower[i]),
                    "upper": float(p.upper[i]),
                    "std": float(p.std[i]),
                    "mean": float(p.mean[i]),
                    "median": float(p.median[i]),
                    "prior_box": n in p.prior_box,
                }
            main = row.get("posterior", row["local"])
            row |= {
                "lower": main["lower"],
                "upper": main["upper"],
                "std": main["std"],
                "method": "posterior" if self.posterior is not None else "laplace",
            }
            if self.bounds:
                row |= self._at_bounds(i, main["lower"], main["upper"])
            out[n] = row
        return out

    def _at_bounds(self, i: int, lower: float, upper: float) -> dict[str, Any]:
        """``at_bound`` of the best and ``cut``: the interval's ends that the box cuts (the Laplace interval is
        clipped at a bound; a posterior's, drawn inside the box, ends within 1 % of the range of it)."""
        lo, hi = self.bounds[i]
        scale = self.scales[i]
        tol = BOUND_TOLERANCE if self.posterior is not None else 1e-9
        ends = (("lower", lower), ("upper", upper))
        cut = [side for side, end in ends if bound_side(end, lo, hi, scale, tol=tol) == side]
        return {
            "at_bound": bound_side(self.best[self.names[i]], lo, hi, scale),
            "cut": None if not cut else ("both" if len(cut) == 2 else cut[0]),
        }

    def bound_warnings(self) -> list[str]:
        """A line per parameter whose best ends at a bound, with the advice to widen the box."""
        params = [
            {"name": n, "lower": b[0], "upper": b[1], "scale": s, "fixed": None}
            for n, b, s in zip(self.names, self.bounds, self.scales, strict=True)
        ]
        return bound_warnings(bounds_report(params, self.best), self.best)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_name": self.run_name,
            "converged": self.converged,
            "polish": self.polish,
            "best_loss": self.best_loss,
            "method": "posterior" if self.posterior is not None else "laplace",
            "parameters": self.parameters(),
            "local": self.local.to_json(),
            "posterior": None if self.posterior is None else self.posterior.to_json(),
            "n_simulated": self.n_simulated,
            "warnings": list(self.warnings),
            "profiles": {n: p.to_json() for n, p in self.profiles.items()},
        }


@dataclass(frozen=True, kw_only=True)
class UncertaintyOptions:
    """What an analysis computes, checked when built (the arguments of :func:`uncertainty` of the same names).

    ``posterior``: also sample the posterior with emcee; ``walkers``, ``steps``: the ensemble size (default
    ``max(16, 4 d)``, even) and the chain length (default 2000); ``noise``: the measurement noise's standard
    deviation, one number or ``{channel: sigma}`` (``None``: estimated per channel at the optimum); ``seed``: the
    chain's seed; ``move``: emcee's move; ``force``: go on past a polish that did not converge or a singular
    direction; ``polish_budget``: the polish's evaluation budget; ``difference``: the Jacobian's finite
    differences; ``profile``: one or two parameter names whose profile likelihood to compute;
    ``effective_samples``: scale each channel's likelihood by its effective sample size from the residuals'
    autocorrelation (:func:`~.likelihood.effective_sample_size`), for densely sampled records whose residuals
    are correlated (the intervals widen by ``sqrt(n / n_eff)``; the chain and profiles use the same scaling)."""

    posterior: bool = False
    walkers: int | None = None
    steps: int | None = None
    noise: NoiseLike = None
    seed: int | None = None
    move: str = "stretch"
    force: bool = False
    polish_budget: int | None = None
    difference: str = "central"
    profile: tuple[str, ...] = ()
    effective_samples: bool = False

    def __post_init__(self) -> None:
        profile = self.profile
        if len(profile) > 2:
            raise ConfigurationError(
                f"profile takes one or two parameters (each costs 10 re-fits), got {list(profile)}"
            )
        walkers, steps = self.walkers, self.steps
        if walkers is not None and (isinstance(walkers, bool) or not isinstance(walkers, int) or walkers < 4):
            raise ConfigurationError(f"walkers must be an even integer >= 4 (and >= 2 d), got {walkers!r}")
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
            raise ConfigurationError(f"steps must be an integer >= 1, got {steps!r}")
        object.__setattr__(self, "profile", tuple(profile))


@dataclass(frozen=True, kw_only=True)
class CalibratedRun:
    """The calibration an analysis starts from: its ``problem`` (the objective must have residuals), the
    ``store`` its analysis runs are recorded in (``<run_name>.polish``, ``.jacobian``, ``.posterior``,
    ``.profile.<name>``; with ``effective_samples`` the chain and profiles as ``<run_name>.neff.posterior``
    and ``.neff.profile.<name>``), and its best point ``best_u`` in the unit cube."""

    problem: Any
    store: Any
    run_name: str
    best_u: np.ndarray


def _from_result(source: Any, problem: Any, store: Any, run: str | None) -> tuple[CalibratedRun, bool]:
    """The :class:`CalibratedRun` of a calibration Result, and whether its store was opened here."""
    from ..calibrate import Result

    if isinstance(source, str | os.PathLike):
        raise ConfigurationError(
            f"uncertainty() analyses a calibration Result, got the path {str(source)!r}; a run folder (or run "
            "store file) is analysed by mechcalib.runs.folder_uncertainty(folder, ...), as the command "
            "`mechcalib uncertainty FOLDER` does"
        )
    if not isinstance(source, Result):
        raise ConfigurationError(
            f"uncertainty takes a calibration Result (a run folder: mechcalib.runs.folder_uncertainty), got "
            f"{type(source).__name__}"
        )
    if problem is None:
        raise ConfigurationError(
            "uncertainty(result) needs the problem the result was calibrated on: uncertainty(result, problem=problem)"
        )
    if not source.history.losses:
        raise ConfigurationError("the result holds no evaluation; calibrate first")
    i = int(np.argmin(source.history.losses))
    u = np.asarray(source.history.U[i], dtype=float)
    own = store is None
    if own:
        from ..storage.memory import MemoryStore

        store = MemoryStore()
    elif not hasattr(store, "run"):
        from ..storage.sqlite import RunStore

        store, own = RunStore(store), True
    return CalibratedRun(problem=problem, store=store, run_name=run or source.run_name or "run", best_u=u), own


def uncertainty(
    source: Any,
    *,
    problem: Any = None,
    store: Any = None,
    run: str | None = None,
    posterior: bool = False,
    walkers: int | None = None,
    steps: int | None = None,
    noise: NoiseLike = None,
    seed: int | None = None,
    move: str = "stretch",
    force: bool = False,
    evaluator: Any = None,
    polish_budget: int | None = None,
    difference: str = "central",
    progress: Callable[[int, int], Any] | None = None,
    profile: tuple[str, ...] | list[str] = (),
    effective_samples: bool = False,
) -> UncertaintyResult:
    """Parameter uncertainty of a calibration (module docstring).

    Args:
        source: a :class:`~mechcalib.calibrate.Result` (give ``problem``, and ``store`` to persist); a run
            folder is analysed by :func:`mechcalib.runs.folder_uncertainty`.
        problem: the calibrated :class:`~mechcalib.core.problem.Problem` (its objective must have residuals).
        store: where the polish, Jacobian and chain runs are recorded (default: in memory).
        run: the name the analysis runs start from (default: the result's run name).
        posterior: also sample the posterior with emcee.
        walkers, steps: the ensemble size (default ``max(16, 4 d)``, even) and the chain length (default 2000).
        noise: the measurement noise's standard deviation, one number or ``{channel: sigma}`` (residual units);
            ``None``: estimated per channel at the optimum.
        seed: the chain's seed (``None``: drawn and recorded; a resumed chain reuses the stored one).
        move: emcee's move, ``"stretch"`` (default), ``"de"`` or ``"gauss"`` (Metropolis preconditioned by the
            Gauss-Newton covariance; :class:`~.sampler.EnsembleSampler`).
        force: analyse a run whose polish did not converge (with a warning) and report a singular direction
            with an unbounded interval instead of refusing.
        evaluator: where simulations run (as in :func:`~mechcalib.calibrate`).
        polish_budget: the polish's evaluation budget (default ``50 (d + 1)``).
        difference: the Jacobian's finite differences, ``"central"`` (default) or ``"forward"``.
        progress: ``progress(steps done, steps)`` during the chain.
        profile: one or two parameter names whose profile likelihood to compute (:mod:`.profile`; 9 values
            over the local interval widened to +-3 sd, each a least-squares re-fit of the others).
        effective_samples: the independent-residual likelihood scaled channel by channel by ``n_eff / n``, the
            effective sample size read from the residuals' autocorrelation at the optimum (densely sampled
            records with correlated residuals; docs/uncertainty.md).
    """
    options = UncertaintyOptions(
        posterior=posterior, walkers=walkers, steps=steps, noise=noise, seed=seed, move=move, force=force,
        polish_budget=polish_budget, difference=difference, profile=tuple(profile),
        effective_samples=effective_samples,
    )  # fmt: skip
    target, own = _from_result(source, problem, store, run)
    try:
        return analyse(target, options, evaluator=evaluator, progress=progress)
    finally:
        if own:
            target.store.close()


def analyse(
    target: CalibratedRun,
    options: UncertaintyOptions,
    *,
    evaluator: Any = None,
    progress: Callable[[int, int], Any] | None = None,
) -> UncertaintyResult:
    """The analysis of ``target`` (module docstring); every warning raised is shown to the caller and listed,
    once each, in the result's ``warnings``. ``evaluator``: where simulations run; ``progress(steps done,
    steps)`` during the chain."""
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = _analyse(target, options, evaluator, progress)
    finally:
        for w in caught:  # shown to the caller as raised
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    seen: list[str] = []
    for w in caught:
        if issubclass(w.category, UserWarning) and str(w.message) not in seen:
            seen.append(str(w.message))
    out.warnings = seen + [w for w in out.bound_warnings() if w not in seen]
    return out


def _analyse(
    target: CalibratedRun,
    options: UncertaintyOptions,
    evaluator: Any,
    progress: Callable[[int, int], Any] | None,
) -> UncertaintyResult:
    prob, st, name = target.problem, target.store, target.run_name
    blocks = channel_blocks(prob)
    given = noise_levels(options.noise, blocks)  # a bad noise level is refused before any simulation
    space = prob.space
    check_counts(prob.n_residuals, space.dim)
    pol = _polished(target, options, evaluator)
    r, J, n_jac = jacobian(
        prob, pol.u, store=st, run_name=f"{name}.jacobian", difference=options.difference, evaluator=evaluator
    )
    sigma = given if given is not None else estimate_noise(r, blocks, space.dim)
    inflation = correlation_inflation(r, blocks) if options.effective_samples else np.ones(len(blocks))
    sig_res = per_residual(sigma * np.sqrt(inflation), blocks)
    loc = local_uncertainty(
        space,
        pol.u,
        J,
        r,
        sig_res,
        {b.name: float(s) for b, s in zip(blocks, sigma, strict=True)},
        noise_estimated=given is None,
        force=options.force,
    )
    if options.effective_samples:
        loc.effective_samples = {b.name: b.size / float(f) for b, f in zip(blocks, inflation, strict=True)}
    best = dict(zip(space.free_names, space.from_unit(pol.u[None, :])[0].tolist(), strict=True))
    post = None
    n_sim = pol.n_simulated + n_jac
    # the chain and the profiles depend on the likelihood: the scaled one's runs are kept apart, <run>.neff.*
    scaled = dataclasses.replace(target, run_name=f"{name}.neff") if options.effective_samples else target
    if options.posterior:
        post = _posterior(scaled, options, sig_res, pol.u, loc.cov_u, evaluator, progress)
        n_sim += post.n_simulated
    profiles = _profiles(scaled, options.profile, best, sig_res, loc, evaluator)
    return UncertaintyResult(
        profiles=profiles,
        run_name=name,
        names=tuple(space.free_names),
        scales=tuple(p.scale for p in space.free),
        bounds=tuple((p.lower, p.upper) for p in space.free),
        best=best,
        best_u=pol.u,
        best_loss=pol.loss,
        converged=pol.converged,
        polish=pol.reason,
        local=loc,
        posterior=post,
        n_simulated=n_sim,
    )


def _polished(target: CalibratedRun, options: UncertaintyOptions, evaluator: Any) -> Any:
    """The least-squares polish of the best point; refused when it did not converge, unless ``force``."""
    name = target.run_name
    pol = polish(
        target.problem,
        target.best_u,
        store=target.store,
        run_name=f"{name}.polish",
        budget=options.polish_budget,
        evaluator=evaluator,
    )
    if not pol.converged:
        text = (
            f"run {name!r} has not converged: the least-squares polish of its best point {pol.reason} (the rule: "
            "intervals are computed at an optimum)"
        )
        if not options.force:
            raise ConfigurationError(
                text + "; resume the calibration with a larger budget or raise polish_budget, or pass force=True "
                "(--force) to compute them at the polished point anyway"
            )
        warnings.warn(text + "; computed anyway (force)", UncertaintyWarning, stacklevel=5)
    return pol


def _posterior(
    target: CalibratedRun,
    options: UncertaintyOptions,
    sig_res: np.ndarray,
    u0: np.ndarray,
    cov_u: np.ndarray,
    evaluator: Any,
    progress: Callable[[int, int], Any] | None,
) -> PosteriorSummary:
    """The emcee chain from the polished optimum ``u0`` with the Laplace covariance, summarised."""
    space = target.problem.space
    w = options.walkers or max(16, 4 * space.dim)
    w += w % 2
    n_steps = options.steps or 2000
    t0 = time.perf_counter()
    sampler, res = run_chain(
        target.problem,
        sig_res,
        u0,
        cov_u,
        chain=ChainSettings(walkers=w, steps=n_steps, seed=options.seed, move=options.move),
        store=target.store,
        run_name=f"{target.run_name}.posterior",
        evaluator=evaluator,
        progress=progress,
    )
    return summarize(
        space,
        sampler.chain[:n_steps],
        sampler.log_prob[:n_steps],
        sampler.acceptance_fraction,
        n_evals=res.n_evals,
        n_simulated=res.n_simulated,
        seconds=time.perf_counter() - t0,
        seed=sampler.seed,
        move=options.move,
    )


def _profiles(
    target: CalibratedRun,
    names: tuple[str, ...],
    best: dict[str, float],
    sig_res: np.ndarray,
    loc: LocalUncertainty,
    evaluator: Any,
) -> dict[str, Profile]:
    """The profile likelihood of each of ``names`` over the local interval widened to +-3 sd."""
    space = target.problem.space
    profiles = {}
    for pname in names:
        i = list(space.free_names).index(pname) if pname in space.free_names else -1
        if i < 0:
            raise ConfigurationError(f"profile: {pname!r} is not a free parameter; they are {list(space.free_names)}")
        par = space[pname]
        x = best[pname]
        if par.scale == "log":
            f = math.exp(3.0 * loc.rel_std[i]) if math.isfinite(loc.std[i]) else par.upper / par.lower
            lo, hi = max(par.lower, x / f), min(par.upper, x * f)
        else:
            w = 3.0 * loc.std[i] if math.isfinite(loc.std[i]) else par.upper - par.lower
            lo, hi = max(par.lower, x - w), min(par.upper, x + w)
        profiles[pname] = run_profile(
            target.problem,
            best,
            sig_res,
            pname,
            ProfileGrid(lower=lo, upper=hi),
            store=target.store,
            run_name=f"{target.run_name}.profile.{pname}",
            evaluator=evaluator,
        )
    return profiles
