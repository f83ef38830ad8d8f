"""A posterior chain's convergence diagnostics and its intervals.

The integrated autocorrelation time ``tau`` of each parameter is emcee's estimate (Goodman & Weare 2010;
Sokal's automatic window ``c = 5``) over the walkers' mean autocorrelation; the first ``2 tau_max`` steps are
discarded as burn-in (at most half the chain), the effective sample size is ``walkers (steps - burn) / tau``.
A chain shorter than 50 ``tau_max`` is warned about: ``tau`` itself is then underestimated, and the
intervals with it. The posterior's 95 % interval is the 2.5-97.5 % percentile range of the kept samples in
each parameter's own units; where it covers at least 80 % of the search range the data do not constrain
the parameter and the posterior is the prior box.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .local import UncertaintyWarning

#: a chain shorter than this many autocorrelation times is warned about
MIN_TAUS = 50
#: a 95 % posterior interval over at least this fraction of the search range is "the prior box"
PRIOR_BOX_FRACTION = 0.8


@dataclass
class PosteriorSummary:
    """A chain and what it says: ``samples`` ``(n, d)`` (free parameters, burn-in removed), ``chain`` ``(steps,
    walkers, d)`` and ``log_prob`` ``(steps, walkers)`` (unit cube), ``tau``/``ess`` per parameter,
    ``acceptance`` (mean over walkers), ``burn`` (steps discarded), ``mean``/``median``/``std``/``lower``/
    ``upper`` per parameter, ``prior_box`` (the parameters whose interval is the search range), the
    simulations of the chain (``n_evals``, ``n_simulated`` by the last call) and the noise level used."""

    names: tuple[str, ...]
    samples: np.ndarray
    chain: np.ndarray
    log_prob: np.ndarray
    tau: np.ndarray
    ess: np.ndarray
    acceptance: float
    burn: int
    mean: np.ndarray
    median: np.ndarray
    std: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    prior_box: list[str]
    walkers: int
    n_evals: int
    n_simulated: int
    seconds: float
    seed: Any
    move: str

    @property
    def steps(self) -> int:
        return int(self.chain.shape[0])

    @property
    def n_taus(self) -> float:
        t = float(np.max(self.tau))
        return self.steps / t if t > 0 else math.inf

    def to_json(self) -> dict[str, Any]:
        return {
            "sampler": f"emcee ({self.move} move)",
            "walkers": self.walkers,
            "steps": self.steps,
            "burn_in": self.burn,
            "tau": dict(zip(self.names, self.tau.tolist(), strict=True)),
            "chain_over_tau": self.n_taus,
            "ess": dict(zip(self.names, self.ess.tolist(), strict=True)),
            "acceptance_fraction": self.acceptance,
            "n_samples": int(self.samples.shape[0]),
            "n_evaluations": self.n_evals,
            "n_simulated": self.n_simulated,
            "seconds": self.seconds,
            "seed": self.seed,
            "prior_box": list(self.prior_box),
        }


def autocorr_time(chain: np.ndarray) -> np.ndarray:
    """emcee's integrated autocorrelation time of each coordinate of ``chain`` ``(steps, walkers, d)``."""
    from emcee.autocorr import integrated_time

    if chain.shape[0] < 4:
        return np.full(chain.shape[2], float(chain.shape[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(integrated_time(chain, c=5, tol=0, quiet=True), dtype=float)


def summarize(
    space: Any,
    chain: np.ndarray,
    log_prob: np.ndarray,
    acceptance: np.ndarray,
    *,
    n_evals: int,
    n_simulated: int,
    seconds: float,
    seed: Any,
    move: str,
) -> PosteriorSummary:
    """The :class:`PosteriorSummary` of a unit-cube chain, with the short-chain and prior-box warnings."""
    names = tuple(space.free_names)
    steps, walkers, d = chain.shape
    tau = autocorr_time(chain)
    tau = np.where(np.isfinite(tau) & (tau > 0), tau, float(steps))
    burn = int(min(math.ceil(2 * float(np.max(tau))), steps // 2))
    kept_u = chain[burn:].reshape(-1, d)
    X = space.from_unit(kept_u)
    ess = walkers * (steps - burn) / tau
    lo, med, hi = np.percentile(X, [2.5, 50.0, 97.5], axis=0)
    ulo, uhi = np.percentile(kept_u, [2.5, 97.5], axis=0)
    box = [n for n, a, b in zip(names, ulo, uhi, strict=True) if b - a >= PRIOR_BOX_FRACTION]
    if steps < MIN_TAUS * float(np.max(tau)):
        warnings.warn(
            f"the chain is {steps} steps long, {steps / float(np.max(tau)):.1f} autocorrelation times (tau up to "
            f"{float(np.max(tau)):.1f} steps); the rule is at least {MIN_TAUS} tau, so tau and the intervals are not "
            f"reliable yet: resume the chain with steps >= {math.ceil(MIN_TAUS * float(np.max(tau)))}",
            UncertaintyWarning,
            stacklevel=2,
        )
    for n in box:
        warnings.warn(
            f"the posterior of {n!r} is the prior box: its 95 % interval covers at least {PRIOR_BOX_FRACTION:.0%} of "
            "the search range, so the data do not constrain it (its value is the bounds' choice)",
            UncertaintyWarning,
            stacklevel=2,
        )
    return PosteriorSummary(
        names=names,
        samples=X,
        chain=chain,
        log_prob=log_prob,
        tau=tau,
        ess=ess,
        acceptance=float(np.mean(acceptance)),
        burn=burn,
        mean=X.mean(axis=0),
        median=med,
        std=X.std(axis=0, ddof=1) if X.shape[0] > 1 else np.zeros(d),
        lower=lo,
        upper=hi,
        prior_box=box,
        walkers=walkers,
        n_evals=n_evals,
        n_simulated=n_simulated,
        seconds=seconds,
        seed=seed,
        move=move,
    )
