"""Least squares on residual vectors through the ask/tell loop: trust-region reflective (TRF) and
Levenberg-Marquardt (LM) of :func:`scipy.optimize.least_squares`, with a batched finite-difference Jacobian.

How scipy is driven. ``least_squares`` is deterministic given the residuals it receives, so each ``ask``
re-runs it from the current start with every residual told so far (a table keyed by the exact unit-cube
point); the first residual or Jacobian it needs and has not been told stops it, and those points are the
batch asked: one point for a residual, the ``d`` (forward) or ``2 d`` (central) points of a Jacobian at
once, so an evaluator runs a whole Jacobian in one call. scipy itself never finite-differences (``jac=`` is a
callable) and every simulation goes through :func:`~mechcalib.calibrate`, its evaluator and its run store;
a resumed run replays the same asks and recomputes nothing stored. The state (the starts, the current
start's table, the end points) is plain data, so checkpoints work like any other optimiser's, except that a
checkpoint holds the table's keys without its residual vectors: on resume, :func:`~mechcalib.calibrate`
recomputes them from the stored responses (:meth:`LeastSquares.restore_told`), so a checkpoint stays small
however long the curves.

Residuals. Run through :func:`~mechcalib.calibrate` on a :class:`~mechcalib.core.problem.Problem` whose
objective has residuals (``has_residuals``), the optimiser is told the residual vectors with the losses
(``tell(X, f, residuals=R)``, the protocol of :class:`~mechcalib.optimizers.residual.ResidualOptimizer`;
calibrate keeps the simulated responses and recomputes the residuals of replayed and cached evaluations from
the stored responses). Told losses only (a problem without residuals,
with a warning; direct ask/tell use), it fits the one residual ``sqrt(f)``, which needs a loss >= 0.

Finite differences in the unit cube. Steps are taken on the unit-cube coordinates, i.e. relative to each
parameter's range and in log for a log-scaled parameter. Forward: ``u + h e_i`` (``h`` = ``fd_step``,
default 1e-6), stepping backwards where ``u_i + h > 1``. Central: ``u +- h e_i`` (default ``h`` = 1e-4),
one-sided at a bound. A failed simulation at a difference point is replaced by the opposite one-sided step
(forward) or the surviving side (central); when both fail, the column is set to zero with a warning. A zero
column where the simulations succeeded means the data do not see that parameter: warned, naming it.

Scipy's LM path can differ in the last bits from run to run, so every point scipy asks is rounded to
multiples of 2**-40 (:func:`snap`) before it is looked up or asked: a replay then finds what was told.
LM runs MINPACK's ``lmder`` through :func:`scipy.optimize.leastsq` (what ``least_squares(method="lm")``
wraps), which does not ask the extra Jacobian at the end point that ``least_squares`` does.

Bounds. TRF searches the unit cube with bounds ``[0, 1]``. LM takes no bounds: it searches ``z`` unbounded
with ``u = (1 - cos(pi z)) / 2`` (a smooth, periodic map onto ``[0, 1]``; ``du/dz = pi sin(pi z) / 2``), the
Jacobian multiplied by ``du/dz`` (chain rule); where the residuals are fewer than the parameters, LM's vector
is padded with zeros (MINPACK needs ``m >= d``).

Starts. ``n_starts`` points of a Latin-hypercube design (:class:`scipy.stats.qmc.LatinHypercube`, seeded);
each start runs until scipy stops (``ftol``, ``xtol``, ``gtol``, ``max_nfev`` per start); its end point is
kept when it is more than 1e-3 (max-norm, unit cube) from every kept one, else replaces the
nearby one it betters (``end_points``; calibrate reports
the distinct best evaluations as alternatives). With ``restart=True`` new uniform random starts follow the
design while the budget lasts; with ``restart=False`` the optimiser reports ``converged`` after the design.
A start whose first simulation fails ends at once. A failed point inside a start is given a residual of
``1e3 (1 + max|r_0|)`` in every entry (``r_0``: the start's residuals), so scipy rejects the step.
"""

from __future__ import annotations

import copy
import logging
import math
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from scipy.optimize import least_squares, leastsq
from scipy.stats import qmc

from ..core.problem import ProblemLike, residual_problem, residual_source
from ..errors import ConfigurationError, SettingError
from ._base import SeedLike, check_choice, check_positive_int, check_range, check_unit_points
from .differences import fd_column, fd_steps, snap, stepped
from .lockstep import Lockstep, near_face
from .residual import ResidualOptimizer
from .secant import Secant
from .told import TOLD, memo_checkpoint, memo_refilled, refill

log = logging.getLogger(__name__)

_DISTINCT = 1e-3
#: the most further scipy runs of one start confirming a secant end (each begins with a difference Jacobian)
_MAX_LINKS = 30
#: ... and ends them where one lowers the loss by less than this (relative; auto's "same loss" of two ends near
#: each other): a run begun on a difference Jacobian that finds little more is at the end (seen ad hoc on the
#: frame's seed 61: with 1e-6 a TRF start at a face chained five runs, the last three for 1e-4 of the loss)
_SAME = 1e-3
#: an accepted LM step near a face that lowers the loss by less than this (relative) hands the start to TRF
CRAWL = 1e-2


class LeastSquaresWarning(UserWarning):
    """A least-squares run works but not as intended (no residuals, a parameter the data do not see...)."""


class _Handover(Exception):
    """An LM start crawls along a face of the cube: it ends at ``point`` (the last accepted one), for TRF."""

    def __init__(self, point: np.ndarray) -> None:
        self.point = point


class _Mislead(Exception):
    """A secant Jacobian misled two trials: run again from ``at`` (the last accepted point, scipy's coordinates)."""

    def __init__(self, at: np.ndarray) -> None:
        self.at = at


class _Need(Exception):
    """scipy asked for residuals not told yet: ``points`` ``(k, d)`` is the next batch."""

    def __init__(self, points: list[np.ndarray]) -> None:
        super().__init__(len(points))
        self.points = points


# --------------------------------------------------------------------------------------------
# Pure kernels
# --------------------------------------------------------------------------------------------
def unit_from_z(z: np.ndarray) -> np.ndarray:
    """The LM transform ``u = (1 - cos(pi z)) / 2``: any real ``z`` onto the unit cube."""
    return 0.5 * (1.0 - np.cos(np.pi * np.asarray(z, float)))


def dunit_dz(z: np.ndarray) -> np.ndarray:
    """Its derivative ``pi sin(pi z) / 2``."""
    return 0.5 * np.pi * np.sin(np.pi * np.asarray(z, float))


def z_from_unit(u: np.ndarray) -> np.ndarray:
    """The inverse on ``[0, 1]``: ``z = arccos(1 - 2 u) / pi``."""
    return np.arccos(np.clip(1.0 - 2.0 * np.asarray(u, float), -1.0, 1.0)) / np.pi


# --------------------------------------------------------------------------------------------
# The optimiser
# --------------------------------------------------------------------------------------------
class LeastSquares(ResidualOptimizer):
    """Multi-start least squares of :func:`scipy.optimize.least_squares` over the unit cube (module
    docstring).

    Args:
        method: ``"trf"`` (trust-region reflective, bounds ``[0, 1]``) or ``"lm"`` (Levenberg-Marquardt
            through the cosine transform).
        n_starts: size of the Latin-hypercube design of starts.
        restart: keep starting from random points after the design while the budget lasts (``False``:
            ``converged`` after the design).
        difference: ``"forward"`` (``d`` simulations per Jacobian) or ``"central"`` (``2 d``).
        fd_step: the difference step in the unit cube (default 1e-6 forward, 1e-4 central).
        ftol, xtol, gtol: scipy's tolerances, per start.
        max_nfev: scipy's residual evaluations per start (default: scipy's).
        x0: starts of its own ``(k, d)`` in the unit cube, run before the design (e.g. the best points of a
            global search to polish; ``n_starts`` then defaults to 0).
        batch_size: the simulations the evaluator runs at once (a round). 1 (default): one start at a time, each
            batch a Jacobian or a step. Larger: ``batch_size // (J + 1)`` starts (``J`` the simulations of a
            Jacobian; at most the starts of ``x0`` and the design) advance in lockstep, each round holding their requests and, with room, the Jacobian at
            each trial point asked ahead (:mod:`~mechcalib.optimizers.lockstep`, as ``auto``'s polishing); the
            run then ends when its starts have (``restart=False``) or goes on from random points.
        trials_ahead: with ``batch_size > 1`` and TRF, the round's spare room also holds each start's next trial
            steps should the current one be rejected (with their Jacobians), up to this many per start: a run of
            rejections then costs one round. scipy's TRF shrinks its trust region by a fixed factor whatever the
            rejected loss, so these are exactly the steps it would try (:meth:`rejected_fork`); the start's path
            and end are those without them. 0 (default): measured in ``benchmarks/efficiency.md`` ("Trial steps
            asked ahead"), they saved no round where TRF rejected no step and few where it did, at several
            times the simulations.
        face_handover: an LM start within 0.05 of a face whose accepted step lowered the loss by less than 1 %
            (``CRAWL``) ends there (not converged) with :attr:`handover` set, for TRF to go on from it (the cosine
            map is flat at a face, so LM creeps towards it). Set by ``auto``'s lockstep starts, which queue that
            TRF start; a sequential run would go on to its next start instead.
        secant: with one slot, Jacobians after a scipy run's first are secant (Broyden) updates
            (:mod:`~mechcalib.optimizers.secant`): an iteration costs one simulation, not ``d + 1``; an end met on
            a secant Jacobian is confirmed by a run begun on a difference one. Refused with ``batch_size > 1``.
        seed: seed of the design and the restarts.
    """

    name: ClassVar[str] = "lsq"
    #: the starts in lockstep (``batch_size > 1``); none in a checkpoint from before ``batch_size`` existed
    _lock: Lockstep | None = None
    #: a :meth:`rejected_fork` (says nothing in the log)
    _fork = False
    #: where an LM start crawling along a face stopped for TRF to go on (``face_handover``)
    handover: np.ndarray | None = None
    # a checkpoint from before these settings has neither
    face_handover = False
    secant = False
    #: where a secant start's Jacobians switch between differences (``True``) and secant updates: (residuals
    #: answered in the start when switched, exact) pairs (:meth:`set_exact`)
    _switches: tuple[tuple[int, bool], ...] = ()
    _answered = 0
    _default_method: ClassVar[str] = "trf"
    _default_starts: ClassVar[int] = 5

    def __init__(
        self,
        *,
        method: str | None = None,
        n_starts: int | None = None,
        restart: bool = True,
        difference: str = "forward",
        fd_step: float | None = None,
        ftol: float = 1e-8,
        xtol: float = 1e-8,
        gtol: float = 1e-8,
        max_nfev: int | None = None,
        x0: list[list[float]] | None = None,
        batch_size: int = 1,
        trials_ahead: int = 0,
        face_handover: bool = False,
        secant: bool = False,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(seed=seed)
        self.batch_size = check_positive_int(self.name, "batch_size", batch_size)
        self.face_handover = bool(face_handover)
        self.secant = bool(secant)
        if self.secant and self.batch_size > 1:
            raise SettingError(
                self.name,
                "secant",
                "False with batch_size > 1",
                secant,
                message=f"{self.name}: secant=True is for one slot (batch_size=1): with a batch of {self.batch_size} "
                "the Jacobian's simulations run in the same round as the step, so differences cost no time; set "
                "secant=False or batch_size=1",
            )
        self.method = check_choice(self.name, "method", method or self._default_method, ("trf", "lm"))
        self.trials_ahead = check_positive_int(self.name, "trials_ahead", trials_ahead, 0)
        if self.trials_ahead and self.method != "trf":
            raise SettingError(
                self.name,
                "trials_ahead",
                "0 with method='lm'",
                trials_ahead,
                message=f"{self.name}: trials_ahead={trials_ahead} needs method='trf' (LM's next trial after a rejected "
                "step depends on its loss, so it cannot be asked ahead); set method='trf' or trials_ahead=0",
            )
        self.x0 = None if x0 is None else check_unit_points(self.name, "x0", x0)
        default = self._default_starts if self.x0 is None else 0
        minimum = 1 if self.x0 is None else 0
        self.n_starts = check_positive_int(self.name, "n_starts", default if n_starts is None else n_starts, minimum)
        self.restart = bool(restart)
        self.difference = check_choice(self.name, "difference", difference, ("forward", "central"))
        self.fd_step = None if fd_step is None else check_range(self.name, "fd_step", fd_step, 0.0, 0.5, lo_open=True)
        self.ftol = check_range(self.name, "ftol", ftol, 0.0, 1.0)
        self.xtol = check_range(self.name, "xtol", xtol, 0.0, 1.0)
        self.gtol = check_range(self.name, "gtol", gtol, 0.0, 1.0)
        self.max_nfev = None if max_nfev is None else check_positive_int(self.name, "max_nfev", max_nfev)
        self._names: tuple[str, ...] | None = None
        self._end_status: list[bool] = []
        self._end_losses: list[float] = []

    # -- what calibrate asks of a residual optimiser ------------------------------------------------
    def evals_per_jacobian(self, dim: int) -> int:
        return dim if self.difference == "forward" else 2 * dim

    def prepare_problem(self, problem: ProblemLike, *, max_evals: int | None) -> ProblemLike:
        """Check the problem and budget before a run (called by calibrate) and return the problem to run:
        a :class:`~mechcalib.core.problem.Problem` with residuals is made to keep its responses (the measured
        channels: what the residuals read)."""
        dim = problem.space.dim
        need = 1 + self.evals_per_jacobian(dim)
        if max_evals is not None and max_evals < need:
            raise ConfigurationError(
                f"{self.name}: one residual and one {self.difference} Jacobian take 1 + "
                f"{self.evals_per_jacobian(dim)} = {need} simulations for {dim} free parameters, but max_evals="
                f"{max_evals}; raise max_evals to at least {need} (a least-squares step needs a Jacobian) or use "
                "a derivative-free optimizer"
            )
        self._names = tuple(problem.space.free_names)
        if residual_problem(problem) is None:
            objective = residual_source(problem)
            warnings.warn(
                f"{self.name}: least squares needs residual vectors, and {objective!r} has none (has_residuals is "
                "False); it fits sqrt(loss) as one residual instead, which needs loss >= 0 and converges slowly. "
                "Use an objective with residuals (l2, f1, f2, overlap_rss, smoothed_overlap_rss) or a derivative-free optimizer (de, lhs)",
                LeastSquaresWarning,
                stacklevel=4,
            )
        return super().prepare_problem(problem, max_evals=max_evals)

    @property
    def end_points(self) -> list[tuple[np.ndarray, float]]:
        """The distinct end points of the finished starts ``(u, loss)``, best first."""
        if self._lock is None:
            return sorted(((u.copy(), f) for u, f in self._ends), key=lambda e: e[1])
        ends: list[tuple[np.ndarray, float]] = []
        for u, f in self._lock.end_points:
            _keep_distinct(ends, np.asarray(u, dtype=float), f)
        return sorted(ends, key=lambda e: e[1])

    @property
    def finished_starts(self) -> list[tuple[float, bool]]:
        """Per finished start, in order: the loss it ended at and whether scipy met a tolerance."""
        if self._lock is not None:
            return list(self._lock.ends)
        return list(zip(self._end_losses, self._end_status, strict=True))

    @property
    def tolerances_met(self) -> list[bool]:
        """Per finished start, whether scipy stopped on ``ftol``/``xtol``/``gtol`` (``False``: on its
        evaluation cap ``max_nfev``)."""
        return [met for _, met in self.finished_starts]

    @property
    def converged(self) -> bool:
        if self.dim is None or self.restart:
            return False
        if self._lock is not None:  # every start ended
            return self._next_batch_size() == 0
        # the start index before a batch planned by next_batch_size, which runs scipy (and may end a start)
        start = self._start if self._planned is None else self._start_at_plan
        return start >= len(self.x0 or ()) + self.n_starts

    # -- ask/tell ------------------------------------------------------------------------------------------
    def _init_state(self) -> None:
        assert self.dim is not None
        d = self.dim
        own = np.array(self.x0, dtype=float).reshape(-1, d) if self.x0 is not None else np.zeros((0, d))
        if self.x0 is not None and own.shape[1] != d:
            raise ConfigurationError(f"{self.name}: x0 has {len(self.x0[0])} coordinates, the problem {d}")
        design = qmc.LatinHypercube(d=d, rng=self.rng).random(self.n_starts) if self.n_starts else own[:0]
        self._starts = np.vstack([own, design])
        self._warned: set[tuple[str, int]] = set()
        self._start = 0
        self._table: dict[bytes, np.ndarray | None] = {}
        self._loss: dict[bytes, float] = {}
        self._jacs: dict[bytes, np.ndarray] = {}
        self._ends: list[tuple[np.ndarray, float]] = []
        self._m: int | None = None
        self._mode: str | None = None  # "residuals" or "loss", fixed by the first tell
        self._r0_scale = 1.0
        self._end_status = []  # per finished start: scipy met a tolerance (not its evaluation cap)
        self._end_losses = []  # per finished start: the loss it ended at
        self._planned: np.ndarray | None = None  # the next batch, when next_batch_size planned it
        self._start_at_plan = 0
        self._lock = None
        if self.batch_size > 1:  # the starts in lockstep, their evaluations in one memory
            self._memo: dict[bytes, tuple[float, np.ndarray | None]] = {}
            self._lock = Lockstep(
                dim=d,
                method=self.method,
                fd_step=self.fd_step or (1e-6 if self.difference == "forward" else 1e-4),
                starts=list(self._starts),
                # the listed starts at most: random restarts at once would spend a round's room on new starts
                width=min(self.batch_size // (self.evals_per_jacobian(d) + 1), max(1, len(self._starts))),
                batch_size=self.batch_size,
                seed=int(self.rng.integers(2**31)),
                restart=self.restart,
                central=self.difference == "central",
                options={"ftol": self.ftol, "xtol": self.xtol, "gtol": self.gtol, "max_nfev": self.max_nfev},
                face_trf=False,
                start_type=LeastSquares,
                trials_ahead=self.trials_ahead,
            )

    def _next_batch_size(self) -> int:
        """The next batch is known only by running scipy up to its next request: plan it now and keep it for
        ``ask``; the run (its RNG draws included) is the same as planning it in ``ask``."""
        if self._lock is not None:
            if self._planned is None:
                self._planned = self._plan_lockstep()
            return int(self._planned.shape[0])
        if self._planned is None:
            self._start_at_plan = self._start
            self._planned = self._plan_batch()
        return int(self._planned.shape[0])

    def checkpoint_state(self) -> dict[str, Any]:
        """:meth:`state_dict` without the told residual vectors (keys kept, values :data:`TOLD`) and the
        Jacobians derived from them, in residual mode; :meth:`restore_told` fills them in again."""
        if self._lock is not None:
            state = copy.deepcopy({k: v for k, v in vars(self).items() if k not in ("_memo", "_lock")})
            state["_memo"] = memo_checkpoint(self._memo)
            state["_lock"] = self._lock.checkpoint_copy()
            return state
        if self._mode != "residuals":
            return self.state_dict()
        big = ("_table", "_jacs")
        state = copy.deepcopy({k: v for k, v in vars(self).items() if k not in big})
        state["_table"] = {k: None if v is None else TOLD for k, v in self._table.items()}
        state["_jacs"] = {}
        return state

    def restore_told(self, U: np.ndarray, R: np.ndarray) -> None:
        if self._lock is not None:
            self._memo = memo_refilled(self._memo, U, R, self.name)
            self._lock.restore_told(U, R)
            return
        self._table = refill(self._table, U, R, self.name)

    def _plan_lockstep(self) -> np.ndarray:
        """The starts' next round less the points answered from memory (empty once every start has ended)."""
        lock = self._lock
        assert lock is not None
        while lock.advance(self._memo):
            pass
        U = lock.batch(self._memo, math.inf) if lock.requests else None
        return np.zeros((0, int(self.dim))) if U is None else U

    def _ask(self) -> np.ndarray:
        if self._planned is None:
            self._planned = self._plan_lockstep() if self._lock is not None else self._plan_batch()
        X = self._planned
        self._planned = None
        return X

    def _plan_batch(self) -> np.ndarray:
        """Run scipy start after start until it asks for residuals not told yet: the next batch."""
        for _ in range(100_000):
            if self._start >= len(self._starts):
                self._starts = np.vstack([self._starts, self.rng.random((1, self.dim))])
            try:
                self._run_start()
            except _Need as need:
                return np.array(need.points)
            self._start += 1
            self._table, self._jacs, self._loss = {}, {}, {}  # a new start replays only its own evaluations
        raise RuntimeError(f"{self.name}: no start asked for a simulation")  # pragma: no cover

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        R = self._take_told()
        if R is None:
            R = np.where(np.isfinite(f) & (f >= 0), np.sqrt(np.maximum(f, 0.0)), np.nan)[:, None]
        if R.shape[0] != X.shape[0]:
            raise ConfigurationError(f"{self.name}: got {R.shape[0]} residual rows for {X.shape[0]} points")
        if self._m is None:
            self._m = R.shape[1]
        elif R.shape[1] != self._m:
            raise ConfigurationError(
                f"{self.name}: the residual length is fixed per problem, got {R.shape[1]} after {self._m}; the "
                "objective's residuals must depend on the experiments only"
            )
        for x, fi, r in zip(X, f, R, strict=True):
            key = x.tobytes()
            good = bool(np.all(np.isfinite(r))) and math.isfinite(fi)
            if self._lock is not None:
                self._memo[key] = (float(fi), r.copy() if good else None)
                continue
            self._table[key] = r.copy() if good else None
            self._loss[key] = float(fi)

    # -- one start driven from outside (auto's lockstep starts) ---------------------------------------------
    def pending_points(self) -> np.ndarray | None:
        """The points the current start needs next (``(k, d)``), or ``None`` once it has ended (its end point
        recorded, :attr:`finished_starts`); no further start is begun. Feed the answers with :meth:`record`."""
        if self._start >= len(self._starts):
            return None
        try:
            self._run_start()
        except _Need as need:
            return np.array(need.points)
        self._start += 1
        return None

    def record(self, U: np.ndarray, f: np.ndarray, R: np.ndarray) -> None:
        """Keep the losses ``f`` and residuals ``R`` (``(k, m)``, NaN rows: failed) of the points ``U`` for the
        current start, outside ask/tell (the caller's evaluations answer :meth:`pending_points`)."""
        self._mode = "residuals"
        self._m = R.shape[1]
        for x, fi, r in zip(U, f, R, strict=True):
            key = x.tobytes()
            good = bool(np.all(np.isfinite(r))) and math.isfinite(fi)
            self._table[key] = r.copy() if good else None
            self._loss[key] = float(fi)

    @property
    def exact(self) -> bool:
        """Whether this start's next Jacobians are taken by differences: not ``secant``, or :meth:`set_exact`."""
        return not self.secant or (self._switches[-1][1] if self._switches else False)

    def set_exact(self, exact: bool) -> None:
        """From its next Jacobian on, this secant start takes its Jacobians by differences (``True``: a leading
        start of the lockstep, whose Jacobians are asked ahead in the round of each trial step) or by its secant
        model. The switch is kept as the count of residuals answered in the start, so a replay takes the same
        Jacobians."""
        if self.secant and exact != self.exact:
            self._switches = (*self._switches, (self._answered, exact))

    def _exact_now(self) -> bool:
        """Whether the Jacobian asked now (after :attr:`_answered` residuals) is to be taken by differences."""
        mode = False
        for at, exact in self._switches:
            if at >= self._answered:
                break
            mode = exact
        return mode

    def cut(self) -> None:
        """End the current start at its best point so far, not met (:class:`Lockstep`'s ``cap``)."""
        told = [(f, k) for k, f in self._loss.items() if math.isfinite(f)]
        f, key = min(told) if told else (math.inf, np.clip(self._starts[self._start], 0.0, 1.0).tobytes())
        self._end_status.append(False)
        self._end_losses.append(float(f))
        _keep_distinct(self._ends, np.frombuffer(key).copy(), float(f))
        log.info("%s: start %d cut after %d simulations at loss %.6g", self.name, self._start, len(self._loss), f)
        self._start += 1

    def rejected_fork(self, u: np.ndarray) -> LeastSquares:
        """A copy of this start that has been told ``u`` failed (its residuals the large constant of a failed
        point, so a trial step at ``u`` is rejected); its :meth:`pending_points` are what this start asks next
        if the step at ``u`` is rejected. With TRF that is exact for any rejection: scipy shrinks the trust
        region to a quarter of the rejected step whatever its loss (``update_tr_radius``: ratio below 0.25), so
        the next trial point is known before the loss. MINPACK's LM shrinks by a factor that depends on the
        loss: there the fork is a guess. Told nothing, changes nothing in this start."""
        fork = copy.copy(self)
        key = u.tobytes()
        fork._table, fork._loss, fork._jacs = (
            {**self._table, key: None},
            {**self._loss, key: math.inf},
            dict(self._jacs),
        )
        fork._ends, fork._end_status, fork._end_losses = (
            list(self._ends),
            list(self._end_status),
            list(self._end_losses),
        )
        fork._warned = set(self._warned)
        fork._fork = True
        return fork

    # -- scipy, replayed ------------------------------------------------------------------------------------
    def _lookup(self, u: np.ndarray) -> np.ndarray | None:
        """The told residuals at ``u`` (``None``: failed); raises :class:`_Need` when not told yet."""
        key = u.tobytes()
        if key not in self._table:
            raise _Need([u])
        return self._table[key]

    def _pad(self, r: np.ndarray) -> np.ndarray:
        if self.method == "lm" and r.shape[0] < self.dim:
            return np.concatenate([r, np.zeros(self.dim - r.shape[0])])
        return r

    def _residual(self, u: np.ndarray) -> np.ndarray:
        r = self._lookup(u)
        if r is None:
            assert self._m is not None
            r = np.full(self._m, self._r0_scale)
        return self._pad(r).copy()

    def _jacobian(self, u: np.ndarray) -> np.ndarray:
        """The forward/central difference Jacobian ``(m, d)`` at ``u`` in the unit cube, its difference
        points asked as one batch (and a second batch for the steps replacing failed ones)."""
        key = u.tobytes()
        if key in self._jacs:
            return self._jacs[key]
        r0 = self._lookup(u)
        assert r0 is not None and self._m is not None
        h = self.fd_step or (1e-6 if self.difference == "forward" else 1e-4)
        steps = fd_steps(u, h, self.difference == "central")
        # primary steps as one batch
        self._gather([stepped(u, i, s) for i, ss in enumerate(steps) for s in ss])
        got = [{s: self._table[stepped(u, i, s).tobytes()] for s in ss} for i, ss in enumerate(steps)]
        # forward steps that failed: the opposite step, as a second batch
        retry = [
            (i, -ss[0])
            for i, ss in enumerate(steps)
            if len(ss) == 1 and got[i][ss[0]] is None and 0.0 <= u[i] - ss[0] <= 1.0
        ]
        self._gather([stepped(u, i, s) for i, s in retry])
        for i, s in retry:
            got[i][s] = self._table[stepped(u, i, s).tobytes()]
        J = np.zeros((self._m, self.dim))
        for i in range(self.dim):
            col = fd_column(r0, got[i], float(u[i]))
            if col is None:
                self._warn(
                    ("failed", i),
                    f"every difference point of {self._label(i)} failed at u={u.tolist()}; its column is zero",
                )
            elif not np.any(col):
                self._warn(
                    ("zero", i),
                    f"the residuals do not change with {self._label(i)} (its Jacobian column is zero at "
                    f"u={u.tolist()}): the data do not see it; fix it (a fixed parameter) or add data sensitive to it",
                )
            else:
                J[:, i] = col
        self._jacs[key] = J
        return J

    def _gather(self, points: list[np.ndarray]) -> None:
        missing, seen = [], set()
        for p in points:
            k = p.tobytes()
            if k not in self._table and k not in seen:
                seen.add(k)
                missing.append(p)
        if missing:
            raise _Need(missing)

    def _label(self, i: int) -> str:
        names = self._names or ()
        return f"parameter {names[i]!r}" if i < len(names) else f"free parameter {i} (unit-cube coordinate)"

    def _warn(self, what: tuple[str, int], text: str) -> None:
        """Warn once per run and kind for a coordinate."""
        if what in self._warned:
            return
        self._warned.add(what)
        warnings.warn(f"{self.name}: {text}", LeastSquaresWarning, stacklevel=2)

    def _run_start(self) -> None:
        """Run scipy from the current start with the told residuals; raises :class:`_Need` for the next
        batch, returns when the start has ended (its end point recorded)."""
        start = snap(np.clip(self._starts[self._start], 0.0, 1.0))
        z0 = z_from_unit(start)
        u0 = snap(unit_from_z(z0)) if self.method == "lm" else start  # the point scipy evaluates first
        r0 = self._lookup(u0)
        if r0 is None:
            if not self._fork:
                log.info("%s: start %d failed at its first simulation; next start", self.name, self._start)
            return
        self._r0_scale = 1e3 * (1.0 + float(np.max(np.abs(r0)) if r0.size else 0.0))
        self.handover = None
        self._answered = 0
        if self.method == "lm":
            x_end, met, msg = self._links(z0, self._lm)
        else:
            x_end, met, msg = self._links(u0, self._trf)
        u_end = self._to_unit(x_end) if self.handover is None else self.handover
        self._end_status.append(bool(met))
        f_end = self._loss.get(u_end.tobytes(), math.inf)
        self._end_losses.append(float(f_end))
        if not self._fork:
            log.info("%s: start %d ended (%s) at loss %.6g", self.name, self._start, msg, f_end)
        _keep_distinct(self._ends, u_end, f_end)

    def _links(
        self, x0: np.ndarray, run: Callable[..., tuple[np.ndarray, bool, str, bool]]
    ) -> tuple[np.ndarray, bool, str]:
        """``run(x0, model)`` (:meth:`_lm` or :meth:`_trf`; ``x`` in its coordinates), with ``secant`` a
        :class:`~.secant.Secant` model; where the model misled two trials, again from the last accepted point
        with a new model (its first Jacobian by differences); where scipy's tolerances were met on a secant
        Jacobian, again from the end, until a run ends on a difference Jacobian; ``(end, met, message)``. Each
        such run begins on a difference Jacobian. A confirming run that lowers the loss by less than a relative
        ``_SAME`` ends the start (the difference Jacobian found little more), and so do two misled runs in a row
        that each lower it by less (a secant model creeping along a face, misled run after run), as met. An LM
        start crawling along a face (``face_handover``) ends at once, for TRF."""
        x, model = x0, Secant() if self.secant else None
        met, msg = False, "secant runs exhausted"
        f_run = self._loss_at(x0)  # the loss where the current run began
        slow = 0  # misled runs in a row that lowered the loss by less than _SAME
        f0: float | None = None  # the loss where the confirming run began
        try:
            for _ in range(_MAX_LINKS):
                try:
                    x, met, msg, exact = run(x, model)
                except _Mislead as m:
                    x, model, f = m.at, Secant(), self._loss_at(m.at)
                    slow = slow + 1 if f_run - f <= _SAME * abs(f_run) else 0
                    if slow == 2:
                        return x, True, f"stalled: two runs in a row lowered the loss by less than a relative {_SAME:g}"
                    f_run = f
                    continue
                if model is None or not met or exact:
                    break
                f = self._loss_at(x)
                if f0 is not None and f0 - f <= _SAME * abs(f0):
                    break
                model, f0, f_run = Secant(), f, f
        except _Handover as h:
            self.handover = h.point.copy()
            return h.point, False, "crawling along a face: handed over to TRF"
        return x, met, msg

    def _to_unit(self, x: np.ndarray) -> np.ndarray:
        """The unit-cube point of scipy's ``x`` (LM's ``z``, TRF's ``u``), as every point is looked up."""
        return snap(unit_from_z(x)) if self.method == "lm" else snap(np.clip(x, 0.0, 1.0))

    def _loss_at(self, x: np.ndarray) -> float:
        return self._loss.get(self._to_unit(x).tobytes(), math.inf)

    def _lm(self, z0: np.ndarray, model: Secant | None) -> tuple[np.ndarray, bool, str, bool]:
        """MINPACK's LM (``lmder``) in ``z`` from ``z0``, its Jacobians by differences or from ``model``."""
        path: list[tuple[bytes, float]] = []  # the accepted points and their losses (MINPACK's Jacobian calls)
        if self.face_handover:
            self._start_near_face(snap(unit_from_z(z0)))

        def fun(z: np.ndarray) -> np.ndarray:
            return self._answer(snap(unit_from_z(z)), model)

        def jac(z: np.ndarray) -> np.ndarray:
            u = snap(unit_from_z(z))
            if self.face_handover:
                self._check_crawl(u, path)
            return self._pad_rows(self._model_jacobian(u, model, z) * dunit_dz(z)[None, :])

        # MINPACK's lmder through leastsq, the routine least_squares(method="lm") wraps: least_squares asks one
        # more Jacobian at the end point, d simulations spent on nothing
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            z, *_, msg, ier = leastsq(
                fun,
                z0,
                Dfun=jac,
                full_output=True,
                ftol=self.ftol,
                xtol=self.xtol,
                gtol=self.gtol,
                maxfev=self.max_nfev or 0,
            )
        return z, ier in (1, 2, 3, 4), str(msg), model is None or model.exact

    def _trf(self, u0: np.ndarray, model: Secant | None) -> tuple[np.ndarray, bool, str, bool]:
        """scipy's TRF on the unit cube from ``u0``, its Jacobians by differences or from ``model``."""

        def fun_u(u: np.ndarray) -> np.ndarray:
            return self._answer(snap(np.clip(u, 0.0, 1.0)), model)

        def jac_u(u: np.ndarray) -> np.ndarray:
            return self._model_jacobian(snap(np.clip(u, 0.0, 1.0)), model, u).copy()  # scipy may change it in place

        kw: dict[str, Any] = {"ftol": self.ftol, "xtol": self.xtol, "gtol": self.gtol, "max_nfev": self.max_nfev}
        res = least_squares(fun_u, u0, jac=jac_u, bounds=(0.0, 1.0), method="trf", **kw)
        return res.x, res.status > 0, str(res.message), model is None or model.exact

    def _answer(self, u: np.ndarray, model: Secant | None) -> np.ndarray:
        if model is not None and model.misleads():
            assert model.at is not None
            raise _Mislead(model.at)
        r = self._residual(u)
        self._answered += 1
        if model is not None:
            model.told(u, self._table[u.tobytes()])
        return r

    def _model_jacobian(self, u: np.ndarray, model: Secant | None, at: np.ndarray) -> np.ndarray:
        if model is None:
            return self._jacobian(u)
        r = self._table[u.tobytes()]
        assert r is not None  # scipy asks Jacobians at accepted points, which succeeded
        return model.jacobian(u, r, lambda: self._jacobian(u), at=at, differences_now=self._exact_now())

    def _start_near_face(self, u0: np.ndarray) -> None:
        """Raise :class:`_Handover` where an LM run (a confirming or restarted one) begins within ``FACE`` of a
        face at a nonzero loss: as :class:`~.lockstep.Lockstep` starts such a point with TRF."""
        if near_face(u0) and self._loss.get(u0.tobytes(), 0.0) != 0.0:
            raise _Handover(u0)

    def _check_crawl(self, u: np.ndarray, path: list[tuple[bytes, float]]) -> None:
        """Raise :class:`_Handover` at an accepted LM point within ``FACE`` of a face whose step lowered the
        loss by less than a relative ``CRAWL``: the cosine map is flat there, LM creeps towards the face in
        many small steps (never meeting its tolerances) where TRF, bounded in ``u``, lands on it. A point asked
        again (``leastsq`` checks its Jacobian's shape with a call at the start) is no step."""
        f = self._loss.get(u.tobytes(), math.inf)
        if path and path[-1][0] == u.tobytes():
            return
        path.append((u.tobytes(), f))
        if len(path) >= 2 and near_face(u) and path[-2][1] - f < CRAWL * abs(path[-2][1]):
            raise _Handover(u)

    def _pad_rows(self, J: np.ndarray) -> np.ndarray:
        if J.shape[0] < self.dim:
            return np.vstack([J, np.zeros((self.dim - J.shape[0], self.dim))])
        return J


def _keep_distinct(ends: list[tuple[np.ndarray, float]], u_end: np.ndarray, f_end: float) -> None:
    """Add an end point to ``ends``, or let it replace the one within ``_DISTINCT`` (max-norm) that it betters."""
    near = [j for j, (u, _) in enumerate(ends) if np.max(np.abs(u_end - u)) <= _DISTINCT]
    if not near:
        ends.append((u_end.copy(), f_end))
    elif f_end < ends[near[0]][1]:  # the same basin, ended lower
        ends[near[0]] = (u_end.copy(), f_end)


class LeastSquaresTRF(LeastSquares):
    """One start of trust-region reflective least squares (``n_starts=1``, ``method="trf"``)."""

    name: ClassVar[str] = "lsq-trf"
    _default_method: ClassVar[str] = "trf"
    _default_starts: ClassVar[int] = 1


class LeastSquaresLM(LeastSquares):
    """One start of Levenberg-Marquardt through the cosine transform (``n_starts=1``, ``method="lm"``)."""

    name: ClassVar[str] = "lsq-lm"
    _default_method: ClassVar[str] = "lm"
    _default_starts: ClassVar[int] = 1
