"""Ensemble Kalman inversion (EKI): derivative-free least squares on residual vectors, one ensemble per round.

The method of Iglesias, Law and Stuart (2013) in the form EnsembleKalmanProcesses.jl (CliMA) runs it: an
ensemble of ``J`` parameter sets is simulated as one batch (a cluster runs a round at once), and every member
moves by the Kalman update built from the ensemble's own covariances, with no Jacobian:

    z_j <- z_j - C_zr (C_rr + Gamma / h)^-1 (r_j + xi_j),     xi_j ~ N(0, Gamma / h)

``r_j`` is member ``j``'s residual vector (the residual protocol of
:class:`~mechcalib.optimizers.residual.ResidualOptimizer`: the misfit is ``sum(r**2)``), ``C_zr`` and ``C_rr``
the ensemble's cross- and residual covariances, ``Gamma = gamma I`` the residuals' noise covariance and ``h``
the step (perturbed observations ``xi_j``, as in EnsembleKalmanProcesses.jl's ``Inversion``).

Ensemble space. Records give 10^4-10^5 residuals, so no residual-by-residual matrix is ever formed: with
``B`` the ``m x J`` residual anomalies over ``sqrt(J - 1)`` and ``A`` the parameter anomalies, the gain is
``A (B^T B + lambda I_J)^-1 B^T`` (push-through identity, ``lambda = gamma / h``), computed from the thin SVD
``B = U S W^T`` (``m x k``, ``k <= J``): each member moves by ``-A W diag(S / (S^2 + lambda)) (U^T r_j + eta_j)``
with ``eta_j ~ N(0, lambda I_k)``, the perturbation ``U^T xi_j`` drawn in the ``k``-dimensional space it
lives in. Memory and time grow as ``m J``.

Bounds by a transform. The optimisers search the unit cube; EKI updates ``z = Phi^-1(u)`` (the probit, ``Phi``
the standard normal distribution function), unbounded, and asks ``u = Phi(z)``. The initial ensemble is a
Latin hypercube in ``u``, i.e. draws of ``N(0, I)`` in ``z``: the prior is uniform over the box. The update
stays in the span of the initial ensemble's anomalies, so an ensemble of fewer than ``d + 1`` members (``d``
free parameters) cannot reach every direction and is refused.

Adaptive step: the data-misfit controller of Iglesias and Yang (2021), EnsembleKalmanProcesses.jl's
``DataMisfitController``: with ``Phi_j = |r_j|^2 / (2 gamma)``, ``h = min(max(m / (2 mean Phi),
sqrt(m / (2 var Phi))), 1 - t)`` and the time ``t`` summing the steps from 0 to 1 (at ``t = 1`` the
linear-Gaussian ensemble is the posterior). The noise variance ``gamma`` is the setting ``noise`` squared, or,
unset, estimated every round as the best member's mean squared residual (an upper bound of the noise that
tends to it as the ensemble converges).

Stop rules (``converged``, the rule recorded in :attr:`choices` with the evaluation): the controller's time
reached 1; the ensemble collapsed (every parameter's ensemble spread below ``xtol`` in the unit cube); the
ensemble's mean misfit stalled (relative change below ``ftol`` over ``stall`` rounds). The ensemble the rule
produced is simulated once more before the run stops; its spread is recorded (the ``spread`` choice: mean and
standard deviation per parameter in the unit cube) as a spread, not an interval: on the Duffing coverage
study its ``mean +- 1.96 std`` held the truth in 75-77 % of 100 replicates, where the Laplace and posterior
intervals hold it in 92-97 % (``benchmarks/eki_coverage.py``).

Failed simulations (``+inf`` or NaN losses, NaN residual rows) take no part in the update: the members that
succeeded are updated, and each failed one is redrawn from the Gaussian of the updated successful members
(EnsembleKalmanProcesses.jl's ``SampleSuccGauss``); a round with fewer than two successes redraws its failed
members from the prior. Told losses only (a problem without residual vectors, direct ask/tell), the one
residual ``sqrt(f)`` is used, with a warning under calibrate; it carries no noise level, so only the
collapse and stall rules stop such a run.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import numpy as np
from scipy.special import ndtr, ndtri
from scipy.stats import qmc

from ..core.problem import ProblemLike, residual_problem, residual_source
from ..errors import ConfigurationError, SettingError
from ._base import SeedLike, check_positive_int, check_range
from .residual import ResidualOptimizer

_Z_MAX = 8.0  # |z| cap: Phi(8) = 1 - 6e-16, so a member never sits on a bound exactly


def default_ensemble_size(dim: int) -> int:
    """The default ensemble: ``max(20, 4 (d + 1))`` members for ``d`` free parameters (on the Duffing study, 10
    members ended in a local minimum or short of the optimum on 3 of 8 seeds, 20 on 1 of 8)."""
    return max(20, 4 * (dim + 1))


def misfit_step(sq: np.ndarray, m: int, gamma: float, t: float) -> float:
    """The data-misfit controller's step (Iglesias and Yang 2021) from the members' squared residual norms
    ``sq``, ``m`` residuals, noise variance ``gamma`` and time ``t``."""
    phi = 0.5 * sq / gamma
    if not np.mean(phi) > 0.0:  # every member fits exactly: nothing to weigh
        return 1.0 - t
    a = m / (2.0 * float(np.mean(phi)))
    var = float(np.var(phi))
    b = math.sqrt(m / (2.0 * var)) if var > 0.0 else math.inf
    return min(max(a, b), 1.0 - t)


def kalman_moves(Z: np.ndarray, R: np.ndarray, lam: float, eta: np.ndarray) -> np.ndarray:
    """The members' moves ``(n, d)`` in ``z`` from their points ``Z`` ``(n, d)``, residuals ``R`` ``(n, m)``,
    regularisation ``lam = gamma / h`` and the perturbations ``eta`` ``(n, n)`` of standard normals (the first
    ``k`` columns are used, ``k`` the residual anomalies' rank), all in ensemble space (module docstring)."""
    n = Z.shape[0]
    scale = 1.0 / math.sqrt(n - 1)
    Za = (Z - Z.mean(axis=0)) * scale  # A^T, (n, d)
    Bt = (R - R.mean(axis=0)) * scale  # B^T, (n, m)
    W, S, Ut = np.linalg.svd(Bt, full_matrices=False)  # B^T = W S U^T
    keep = S > S[0] * 1e-12 if S.size and S[0] > 0 else np.zeros(S.shape, bool)
    W, S, Ut = W[:, keep], S[keep], Ut[keep]
    k = S.size
    if k == 0:
        return np.zeros_like(Z)
    P = R @ Ut.T + math.sqrt(lam) * eta[:, :k]  # U^T (r_j + xi_j), (n, k)
    C = (P * (S / (S**2 + lam))) @ W.T  # the members' coefficients over the ensemble, (n, n)
    return -C @ Za


class EKI(ResidualOptimizer):
    """Ensemble Kalman inversion (module docstring).

    Args:
        ensemble_size: members per round, at least the free parameters + 1 (default ``max(20, 4 (d + 1))``).
        noise: the residuals' noise standard deviation, in residual units (default: estimated each round).
        xtol: the ensemble has collapsed when every parameter's spread (unit cube) is below this.
        ftol, stall: the misfit has stalled when the ensemble's mean misfit changed by less than ``ftol``
            (relative) in each of ``stall`` consecutive rounds.
        seed: seed of the initial ensemble and the perturbations.
    """

    name: ClassVar[str] = "eki"

    def __init__(
        self,
        *,
        ensemble_size: int | None = None,
        noise: float | None = None,
        xtol: float = 1e-6,
        ftol: float = 1e-6,
        stall: int = 3,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(seed=seed)
        self.ensemble_size = (
            None if ensemble_size is None else check_positive_int(self.name, "ensemble_size", ensemble_size, 2)
        )
        self.noise = (
            None if noise is None else check_range(self.name, "noise", noise, 0.0, math.inf, lo_open=True, hi_open=True)
        )
        self.xtol = check_range(self.name, "xtol", xtol, 0.0, 1.0)
        self.ftol = check_range(self.name, "ftol", ftol, 0.0, 1.0)
        self.stall = check_positive_int(self.name, "stall", stall)

    # -- what calibrate asks of a residual optimiser ------------------------------------------------
    def members(self, dim: int) -> int:
        """The ensemble size for ``dim`` free parameters; refuses one below ``dim + 1``."""
        J = default_ensemble_size(dim) if self.ensemble_size is None else self.ensemble_size
        if J < dim + 1:
            raise SettingError(
                self.name,
                "ensemble_size",
                f"at least the free parameters + 1 = {dim + 1} (set ensemble_size >= {dim + 1}, or leave it unset "
                f"for {default_ensemble_size(dim)})",
                J,
                message=f"{self.name}: ensemble_size must be at least the number of free parameters + 1 = {dim + 1} "
                f"(the ensemble's iterates cannot leave the span of its initial members), got {J}; set "
                f"ensemble_size >= {dim + 1} or leave it unset (default max(20, 4 (d + 1)) = {default_ensemble_size(dim)})",
            )
        return J

    def prepare_problem(self, problem: ProblemLike, *, max_evals: int | None) -> ProblemLike:
        """Check the ensemble and the budget before a run (called by calibrate) and return the problem to run."""
        dim = problem.space.dim
        J = self.members(dim)
        if max_evals is not None and max_evals < J:
            raise ConfigurationError(
                f"{self.name}: one round simulates the whole ensemble, {J} members for {dim} free parameters, but "
                f"max_evals={max_evals}; raise max_evals to at least {J} (a few rounds: about {10 * J}) or lower "
                f"ensemble_size (at least {dim + 1})"
            )
        if residual_problem(problem) is None:
            warnings.warn(
                f"{self.name}: ensemble Kalman inversion needs residual vectors, and {residual_source(problem)!r} has "
                "none (has_residuals is False); it uses sqrt(loss) as one residual instead, which cannot steer the ensemble in several directions (expect "
                "little progress). "
                "Use an objective with residuals (l2, f1, f2, overlap_rss) or a derivative-free global optimizer",
                UserWarning,
                stacklevel=4,
            )
        return super().prepare_problem(problem, max_evals=max_evals)

    # -- state ---------------------------------------------------------------------------------------
    def _init_state(self) -> None:
        J = self.members(self.dim)
        u = qmc.LatinHypercube(d=self.dim, rng=self.rng).random(J)
        self._z = np.clip(ndtri(u), -_Z_MAX, _Z_MAX)
        self._t = 0.0
        self._precision = 0.0  # sum of h / gamma: the time is gamma * precision under the latest gamma
        self._round = 0
        self._restarts = 0
        self._m: int | None = None
        self._mode: str | None = None
        self._means: list[float] = []
        self._rule: tuple[str, str] | None = None  # a stop rule fired: its final ensemble is simulated next
        self._done = False
        self._choices: list[dict[str, Any]] = []

    def _next_batch_size(self) -> int:
        return int(self._z.shape[0])

    def _ask(self) -> np.ndarray:
        return ndtr(self._z)

    @property
    def converged(self) -> bool:
        return self.dim is not None and self._done

    @property
    def choices(self) -> list[dict[str, Any]]:
        return [dict(c) for c in self._choices]

    @property
    def ensemble(self) -> np.ndarray:
        """The current ensemble's points ``(J, d)`` in the unit cube (after a stop: the final ensemble)."""
        return ndtr(self._z)

    @property
    def time(self) -> float:
        """The data-misfit controller's time, from 0 to 1."""
        return float(self._t)

    # -- the update ----------------------------------------------------------------------------------
    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        R = self._residual_rows(X, f)
        ok = np.isfinite(f) & np.all(np.isfinite(R), axis=1)
        sq = np.where(ok, np.sum(np.where(ok[:, None], R, 0.0) ** 2, axis=1), np.inf)
        if self._done:
            return
        if self._rule is not None:  # the final ensemble has been simulated
            self._finish()
            return
        if int(ok.sum()) < 2:
            self._z[~ok] = self._prior(int((~ok).sum()))
            self._note(
                "failed", f"{int(ok.sum())} of {len(ok)} members succeeded; the failed ones redrawn from the prior"
            )
            return
        self._update(R[ok], sq[ok], ok)

    def _residual_rows(self, X: np.ndarray, f: np.ndarray) -> np.ndarray:
        R = self._take_told()
        if R is None:
            R = np.where(np.isfinite(f) & (f >= 0), np.sqrt(np.maximum(f, 0.0)), np.nan)[:, None]
        if R.shape[0] != X.shape[0]:
            raise ConfigurationError(f"{self.name}: got {R.shape[0]} residual rows for {X.shape[0]} points")
        if self._m is None:
            self._m = int(R.shape[1])
        elif R.shape[1] != self._m:
            raise ConfigurationError(
                f"{self.name}: the residual length is fixed per problem, got {R.shape[1]} after {self._m}"
            )
        return R

    def _update(self, R: np.ndarray, sq: np.ndarray, ok: np.ndarray) -> None:
        m = int(R.shape[1])
        tiny = 1e-300
        gamma = (
            self.noise**2 if self.noise is not None else max(float(sq.min()) / m, 1e-12 * float(sq.mean()) / m, tiny)
        )
        t_now = min(gamma * self._precision, 1.0)
        if t_now >= 1.0 - 1e-9 and self.noise is None:  # time 1 without agreement: a new clock from here
            self._precision, t_now = 0.0, 0.0
            self._restarts += 1
        h = misfit_step(sq, m, gamma, t_now)
        lam = gamma / max(h, tiny)
        n = int(ok.sum())
        eta = self.rng.standard_normal((n, n))
        Z = self._z[ok]
        Z = np.clip(Z + kalman_moves(Z, R, lam, eta), -_Z_MAX, _Z_MAX)
        self._z[ok] = Z
        if not ok.all():
            w = self.rng.standard_normal((int((~ok).sum()), n)) / math.sqrt(n - 1)
            self._z[~ok] = np.clip(Z.mean(axis=0) + w @ (Z - Z.mean(axis=0)), -_Z_MAX, _Z_MAX)
        self._precision += h / gamma
        self._t = min(gamma * self._precision, 1.0)
        self._round += 1
        self._means.append(float(sq.mean()))
        self._rule = self._stop_rule(float(sq.mean() - sq.min()), gamma)

    def _stop_rule(self, excess: float, gamma: float) -> tuple[str, str] | None:
        tol = 2.0 * (self.dim + 1) * gamma  # twice the mean excess misfit of a linear-Gaussian posterior ensemble
        gain = self._means[-2] - self._means[-1] if len(self._means) > 1 else math.inf
        agree = self.noise is not None or (excess <= tol and gain <= tol)
        if self._t >= 1.0 - 1e-12 and agree and self._mode == "residuals":  # sqrt(loss) carries no noise level
            why = "" if self.noise is not None else " and the members' misfits agree with the noise they imply"
            return "time", f"the data-misfit controller's time reached 1 (Iglesias and Yang 2021){why}"
        spread = float(np.max(np.std(ndtr(self._z), axis=0)))
        if spread < self.xtol:
            return "collapsed", f"the ensemble collapsed (largest spread {spread:.3g} < xtol={self.xtol:g}, unit cube)"
        k = self.stall
        if len(self._means) > k:
            last = np.array(self._means[-k - 1 :])
            rel = np.abs(np.diff(last)) / np.maximum(np.abs(last[:-1]), 1e-300)
            if np.all(rel < self.ftol):
                return "stalled", f"the ensemble's mean misfit changed by less than ftol={self.ftol:g} in {k} rounds"
        return None

    def _finish(self) -> None:
        assert self._rule is not None
        rule, reason = self._rule
        self._done = True
        again = (
            f" ({self._restarts} restart{'s' if self._restarts != 1 else ''} of the clock)" if self._restarts else ""
        )
        self._note("converged", f"{reason}, after {self._round} rounds{again}", rule=rule, rounds=self._round)
        u = ndtr(self._z)
        self._note(
            "spread",
            "the final ensemble's spread (unit cube): a spread, not an interval (its mean +- 1.96 std held the truth "
            "in 75-77 % of the Duffing coverage study's replicates, below the 90 % an interval needs: "
            "benchmarks/results/eki_coverage.md); intervals come from mechcalib uncertainty",
            mean=u.mean(axis=0).tolist(),
            std=u.std(axis=0, ddof=1).tolist(),
            members=u.tolist(),  # result.json and show give the spread in the parameters' units from these
        )

    def _prior(self, n: int) -> np.ndarray:
        return np.clip(ndtri(np.clip(self.rng.random((n, self.dim)), 1e-16, 1 - 1e-16)), -_Z_MAX, _Z_MAX)

    def _note(self, choice: str, reason: str, **values: Any) -> None:
        self._choices.append({"choice": choice, "reason": reason, "at_eval": int(self.n_evals), **values})
