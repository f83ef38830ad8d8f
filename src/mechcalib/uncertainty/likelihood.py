"""The Gaussian likelihood of a problem's residual vector, channel by channel.

A :class:`~mechcalib.core.problem.Problem` with residuals concatenates, experiment by experiment and channel
by channel, the objective's residuals (data units times the square root of the channel's and the experiment's
weight). Each such block is a *channel* here, named ``"channel"`` (one experiment) or ``"experiment:channel"``,
with its own noise level: given by the user, or estimated at the least-squares optimum as
``s_b^2 = RSS_b / (n_b (m - d) / m)`` (the textbook ``RSS / (m - d)`` shared out by channel length, ``m``
residuals, ``d`` free parameters). The negative log-likelihood, up to a constant, is
``0.5 * sum_b sum_i (r_i / s_b)^2``; :class:`LikelihoodProblem` makes it the loss of each evaluation, so a
posterior chain runs, persists and resumes through :func:`~mechcalib.calibrate` like any calibration.

That likelihood treats the residuals as independent. A densely sampled record whose residuals are correlated
(smooth noise, a filtered signal, a model-form error that varies slowly) carries fewer independent pieces of
information than it has samples, and the intervals come out too narrow. :func:`effective_sample_size` reads
``n_eff = n / (1 + 2 sum_k rho_k)`` from a channel's residual autocorrelation ``rho_k`` (the sum truncated by
Geyer's (1992) initial positive sequence); :func:`correlation_inflation` turns it into the factor ``n / n_eff``
by which a channel's noise variance is scaled (its likelihood divided), the remedy the uncertainty engine
applies with ``effective_samples=True``.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.problem import OK, EvaluationBatch, ProblemBase, residual_problem, residual_source
from ..errors import ConfigurationError

NoiseLike = float | Mapping[str, float] | None


@dataclass(frozen=True)
class Block:
    """One channel of the residual vector: its name and its slice."""

    name: str
    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start


def channel_blocks(problem: Any) -> list[Block]:
    """The channels of ``problem``'s residual vector in order (see the module docstring)."""
    if residual_problem(problem) is None:
        objective = residual_source(problem)
        raise ConfigurationError(
            f"uncertainty needs residual vectors, and the objective {objective!r} has none (has_residuals is "
            "False: its loss is not a sum of squares); calibrate with an objective that has residuals (l2, f1, "
            "overlap_rss)"
        )
    blocks, i = [], 0
    many = len(problem.experiments) > 1
    for e in problem.experiments:
        for ch in problem.objective._names(e):
            n = int(problem.objective.channel_residual_count(e[ch]))
            blocks.append(Block(f"{e.name}:{ch}" if many else str(ch), i, i + n))
            i += n
    return blocks


def noise_levels(noise: NoiseLike, blocks: list[Block]) -> np.ndarray | None:
    """The noise level of each block from a number (every channel) or ``{channel: sigma}`` (every channel
    named, as ``"channel"`` or ``"experiment:channel"``); ``None`` (estimate them) stays ``None``."""
    if noise is None:
        return None
    if isinstance(noise, Mapping):
        out = []
        for b in blocks:
            short = b.name.split(":")[-1]
            v = noise.get(b.name, noise.get(short))
            if v is None:
                raise ConfigurationError(
                    f"a noise level is needed for every channel; channel {b.name!r} has none in {dict(noise)}; "
                    f"give {{{', '.join(repr(x.name) for x in blocks)}}} or one number for all"
                )
            out.append(_positive(v, b.name))
        return np.array(out)
    return np.full(len(blocks), _positive(noise, "every channel"))


def _positive(v: Any, where: str) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(v, bool) or not math.isfinite(x) or x <= 0:
        raise ConfigurationError(
            f"a noise level must be a finite number > 0 (the standard deviation of the measurement noise, in the "
            f"residuals' units), got {v!r} for {where}; give the noise's standard deviation, or none to estimate "
            "it from the residuals at the optimum"
        )
    return x


def estimate_noise(r: np.ndarray, blocks: list[Block], dim: int) -> np.ndarray:
    """Each block's noise level estimated from the residuals ``r`` ``(m,)`` at the optimum of ``dim`` free
    parameters: ``s_b^2 = RSS_b / (n_b (m - d) / m)``."""
    m = r.shape[0]
    check_counts(m, dim)
    out = []
    for b in blocks:
        rss = float(np.sum(r[b.start : b.stop] ** 2))
        s2 = rss / (b.size * (m - dim) / m)
        if not s2 > 0:
            raise ConfigurationError(
                f"channel {b.name!r} fits exactly at the optimum (residual sum of squares {rss!r}), so its noise "
                "cannot be estimated; give the noise level (noise=... / --noise SIGMA)"
            )
        out.append(math.sqrt(s2))
    return np.array(out)


def check_counts(m: int, dim: int) -> None:
    """The rule "more residuals than free parameters" (a covariance needs ``m > d``)."""
    if m <= dim:
        raise ConfigurationError(
            f"uncertainty needs more residuals than free parameters, got {m} residuals for {dim} free parameters; "
            "add data points or experiments, or fix parameters"
        )


def effective_sample_size(r: np.ndarray) -> float:
    """The effective number of independent samples of the residual series ``r`` ``(n,)``:
    ``n / tau`` with ``tau = 1 + 2 sum_{k>=1} rho_k`` the integrated autocorrelation of ``r`` (about its mean),
    the sum over lags taken in pairs ``rho_{2j} + rho_{2j+1}`` while a pair stays positive (Geyer 1992's
    initial positive sequence). ``tau`` is kept at or above 1, so ``n_eff <= n`` (white noise gives about
    ``n``; AR(1) noise of lag-one correlation ``rho`` about ``n (1 - rho) / (1 + rho)``)."""
    x = np.asarray(r, dtype=float).ravel()
    n = x.size
    if n < 4 or not np.all(np.isfinite(x)):
        return float(n)
    x = x - x.mean()
    f = np.fft.rfft(x, 2 * n)
    acov = np.fft.irfft(f * np.conj(f), 2 * n)[:n]
    if not acov[0] > 0:
        return float(n)
    rho = acov / acov[0]
    tau = -1.0  # rho_0 is counted twice by the pairs below: 2 (rho_0 + rho_1 + ...) - 1
    for j in range(n // 2):
        pair = rho[2 * j] + rho[2 * j + 1]
        if not pair > 0:
            break
        tau += 2.0 * pair
    return float(n / max(tau, 1.0))


def correlation_inflation(r: np.ndarray, blocks: list[Block]) -> np.ndarray:
    """Per block, ``n_b / n_eff_b`` (>= 1) from the residuals ``r`` ``(m,)`` at the optimum: the factor by which
    an independent-residual likelihood's noise variance is scaled when the residuals are correlated."""
    return np.array([b.size / effective_sample_size(r[b.start : b.stop]) for b in blocks])


def per_residual(sigma: np.ndarray, blocks: list[Block]) -> np.ndarray:
    """The noise level of every residual ``(m,)``."""
    return np.concatenate([np.full(b.size, s) for b, s in zip(blocks, sigma, strict=True)])


@dataclass
class LikelihoodProblem(ProblemBase):
    """A problem whose loss is the Gaussian negative log-likelihood ``0.5 sum (r / sigma)^2`` of another
    problem's residuals (``sigma`` per residual, :func:`per_residual`); a failed set keeps its failure.

    Args:
        problem: a :class:`~mechcalib.core.problem.Problem` with residuals.
        sigma: the noise level of each residual ``(m,)``, as a tuple.
    """

    problem: Any
    sigma: tuple[float, ...]
    space: Any = field(init=False)
    failure_loss: float = math.inf

    def __post_init__(self) -> None:
        self.space = self.problem.space

    def evaluate(self, x_free: np.ndarray) -> EvaluationBatch:
        t0 = time.perf_counter()
        R, batch = self.problem.evaluate_residuals(x_free)
        s = np.asarray(self.sigma, dtype=float)
        nll = 0.5 * np.sum((R / s) ** 2, axis=1)
        ok = np.array([st == OK for st in batch.status]) & np.isfinite(nll)
        status = [OK if k else "failed" for k in ok]
        errors = [None if k else (e or "log-likelihood not finite") for k, e in zip(ok, batch.errors, strict=True)]
        raw = np.where(ok, nll, np.nan)
        return EvaluationBatch(np.where(ok, nll, self.failure_loss), raw, status, errors, [], time.perf_counter() - t0)

    def fingerprint(self) -> str | None:
        from ..storage.codec import problem_fingerprint

        inner = problem_fingerprint(self.problem)
        if inner is None:
            return None
        sig = hashlib.sha256(np.asarray(self.sigma, dtype=float).tobytes()).hexdigest()[:16]
        return f"gaussian-nll({inner},{sig})"
