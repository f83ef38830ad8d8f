"""``auto``: the default method, a short space-filling design then least-squares polishing, with a
derivative-free fallback (CMA-ES) where least squares does not apply."""

from __future__ import annotations

import copy
import logging
import math
from typing import Any, ClassVar

import numpy as np
from scipy.stats import qmc

from ..core.problem import ProblemLike, residual_problem
from ..errors import ConfigurationError, SettingError
from . import smoothness
from ._base import Optimizer, SeedLike, check_bool, check_choice, check_positive_int, check_range
from .cmaes import CMAES
from .differences import fd_points, snap
from .least_squares import LeastSquares
from .lockstep import Lockstep, on_face, same_basin
from .residual import ResidualOptimizer
from .smoothness import H_COARSE, H_FINE, H_MID
from .told import memo_checkpoint, memo_refilled

log = logging.getLogger(__name__)


class Auto(ResidualOptimizer):
    """The default method: a scrambled Sobol design, then least squares (Levenberg-Marquardt) from its best distinct
    points, all inside the budget; CMA-ES (Hansen 2016) where least squares does not apply.

    Phases:

    1. **Design**: ``n0 = max(2 d + 2, ceil(design_fraction * budget))`` points of a scrambled Sobol sequence
       (:class:`scipy.stats.qmc.Sobol`, seeded), capped at a quarter of the budget (at least ``d + 1``) so that
       polishing keeps most of it, and with a batch (``batch_size > 1``) at one round (``batch_size`` points, at
       least ``2 d + 2``): at 32 workers a tenth of the arch's budget was six rounds of design, and a second
       round cost the smooth problems a round each (``benchmarks/efficiency.md``). The budget is ``max_evals`` (calibrate passes it through
       :meth:`~mechcalib.optimizers._base.Optimizer.set_budget`); without one, ``n0 = max(2 d + 2, 10)``.
       With one slot and residuals only the first ``2 d + 2`` of them are asked before the rule; the rest
       (phase ``extend``) only where the rule chose CMA-ES, which starts from the best of all ``n0``. Least
       squares needs a good start, not a tenth of the budget: with the whole design first, what auto spent
       before it stopped grew with the budget (the demo, ``max_evals = 400``: 40 design points before its
       first start). Measured in ``benchmarks/efficiency.md`` ("auto's stop against one least-squares start",
       and success over seeds 1-60 on the smooth problems).
    2. **Rule** (choosing least squares or CMA-ES), stated and tested: CMA-ES when (a) the batches are told
       without residual vectors (an objective without residuals, ``has_residuals`` False, or direct ask/tell),
       (b) the budget cannot hold one more residual and one forward Jacobian (``d + 1``) after the design, or
       (c) the model is noisy or non-smooth: at the best design point the forward-difference Jacobians with
       steps ``1e-6`` and ``1e-3`` (unit cube) differ, ``||J_fine - J_coarse||_F > smooth_tol ||J_coarse||_F``
       (``smooth_tol`` 0.1), and a third with step ``1e-4`` (``d`` more simulations, asked only then) differs
       from the coarse one and from the fine one; or the coarse one is zero or a difference point failed. For a smooth model the
       Jacobians agree to ``O(1e-3)`` (the curvature times the coarse step); noise of size ``s`` puts
       ``s / h`` into the one with step ``h``, and a kink or a step puts a zero or a jump into one of them. A
       smooth model whose residuals carry a small noise (an integrator's tolerance) fools the first look only:
       where the ``1e-4`` Jacobian agrees, least squares runs with difference step ``1e-4`` (recorded as
       ``fd_step`` in the ``lsq`` choice). Measured in ``tests/test_auto.py``: on a smooth model with noise
       ``3e-7`` the two-step rule switched to CMA-ES on 40 of 40 seeds, the rule with the second look on none.
       A strongly curved smooth model fools the coarse step instead (its error grows with the step): where
       the ``1e-4`` Jacobian agrees with the fine one, least squares runs with the fine step (the ``lsq``
       choice records ``coarse_mismatch``). The frame of ``benchmarks/efficiency.md`` met this on three seeds
       of 80 (one of them, seed 32, prompted the look); the arch (non-smooth) still goes to CMA-ES on every seed.
       The fine Jacobian is the first one least squares needs (its step is least squares' own, and the
       polishing answers it from memory), so the check costs ``d`` simulations.
    3. **Polishing**: :class:`~mechcalib.optimizers.least_squares.LeastSquares` (``polish``: ``"lm"``,
       Levenberg-Marquardt through the cosine transform, by default; ``"trf"``) started (``x0=``) from
       the best design points that are more than ``distinct`` apart (max-norm), best first, then random
       restarts while the budget lasts; ``batch_size // (d + 1)`` starts at once, in lockstep
       (:mod:`~mechcalib.optimizers.lockstep`: each round holds their requests and, with room, the Jacobian
       at each trial point asked ahead), one at a time with one slot. A start within 0.05 of a face of the
       unit cube runs TRF (LM's cosine map is flat there and it crawls), and an LM start that comes within 0.05
       of a face and creeps along it (an accepted step lowering the loss by less than 1 %) hands over to TRF from
       where it is. With one slot the Jacobians after the first of each scipy run are secant (Broyden) updates
       along the steps tried (:mod:`~mechcalib.optimizers.secant`, Madsen, Nielsen and Tingleff 2004): an
       iteration costs its trial point instead of ``d + 1``; a model that misled two trials in a row is taken
       again by differences, and an end met on a secant Jacobian is confirmed by a run begun on a difference
       one. With a batch, the starts whose loss is within ``lead`` (2) times the lowest take their Jacobians by
       differences, asked in the step's round (they cost no time), and the others secant ones at one simulation
       a round: a start far behind the best matters only where the best one fails, and differences would cost it
       ``d`` simulations a round.
       With one slot a start told ``10 (d + 1)`` points without ending is cut at its best, the next begins (the frame's
       first starts walked a face basin for most of the budget). Points already evaluated are answered from
       memory. **Convergence**: once ``confirm`` starts have ended on scipy's tolerances at the best loss
       found (within a relative ``1e-6``), the run stops with stop reason ``converged`` instead of restarting
       where it has already been. An end on a face of the box (a coordinate within ``1e-3`` of it) needs
       ``confirm_face`` starts: a box truncates a descent path into a minimum on its face, the frame of
       ``benchmarks/efficiency.md`` has such basins (``a11`` at its upper bound, a loss far above the truth's 0:
       ``tests/test_auto.py``), and a user whose best fit pins a parameter at a bound wants a second
       look. The next batch is planned as soon as the last one is told, so a batch that does not fit in the
       remaining budget (a Jacobian cut in half) is never asked: the run ends at its best
       with stop reason ``budget`` rather than spend the rest on a Jacobian it cannot use, and a resume with a
       larger budget (:meth:`set_budget`) continues it, keeping its design.
    4. **Derivative-free search** (when the rule chose CMA-ES): :class:`~mechcalib.optimizers.cmaes.CMAES` with
       its IPOP restarts, its first run started at the best point told so far (the design's, or a check point)
       with step size ``cmaes_sigma0`` (0.1 of each range): the design has already located the best basin it
       saw, so the first run refines it instead of searching the whole cube again from its centre. When no
       point has succeeded, it starts at the centre with pycma's ``sigma0 = 0.3``. Measured on the masonry arch
       of ``benchmarks/efficiency.md`` (non-smooth), with a check on seeds not used to choose the step. With a
       population of ``batch_size`` (below), a quarter of it selected as parents (``cmaes_mu_ratio``), and
       ``cmaes_model`` true, each generation's first point is the
       minimiser of a linear-quadratic model fitted to the points told, the design's included
       (:class:`~mechcalib.optimizers.cmaes.CMAES`'s ``model_injection``: lq-CMA-ES's model, Hansen 2019,
       injected as Hansen 2011 describes).

    Choices are logged (logger ``mechcalib.optimizers.auto``) and kept in :attr:`choices` (part of the
    optimiser state that checkpoints store; :func:`~mechcalib.calibrate` puts them in ``Result.choices``,
    the store's run record and, through ``mechcalib run``, ``result.json``). Each is a record
    ``{"choice", "reason", "at_eval"}`` (``at_eval``: evaluations told before it, so consecutive records
    give the phase boundaries) with the measured values: ``design`` (``n``: asked before the rule, ``full``: in
    all, ``budget``), ``extend`` (``n``: the rest of the design, asked where the rule chose CMA-ES), ``check``
    (``point``: the best design point, unit cube; ``loss``), ``lsq`` or ``cmaes`` (the rule: ``mismatch``, ``smooth_tol``,
    or ``left`` when the budget decided; for ``cmaes`` also ``start``, ``start_loss`` and ``sigma0``, its first mean and
    step size), ``polish`` (``starts``: unit-cube points, ``start_losses``),
    ``converged`` (``starts``: the starts that confirmed the best loss, ``loss``, ``on_face``), ``stop`` (``batch``:
    the batch that did not fit, ``left``), ``budget`` (a resume raised the budget: ``budget``, ``before``).

    Args:
        design_fraction: share of the budget for the design (before the caps).
        smooth_tol: the threshold of rule (c).
        distinct: the least max-norm distance between polishing starts.
        max_starts: the most design points polished.
        polish: the least-squares method of the polishing, ``"lm"`` (default) or ``"trf"``. Measured in
            ``benchmarks/efficiency.md`` (10 seeds): on the SDOF Bouc-Wen problem single LM starts reach 1 %
            in a median of 24 simulations, TRF starts in 36; after the 14 of design and check, ``max_evals =
            50`` leaves room for LM's, and auto ends within 1 % in 9 of 10 runs.
        cmaes_sigma0: the first CMA-ES run's step size (fraction of each range) around the best point so far.
        confirm: how many least-squares starts must end at the best loss found before the run stops as
            converged (1: the first start that converges; more: further distinct starts confirm the basin).
        confirm_face: the same where the best end lies on a face of the box (2: a distinct start confirms it,
            or finds a better basin inside). The ``converged`` record says which applied (``on_face``).
        batch_size: the simulations the evaluator runs at once (a round): ``batch_size // (d + 1)`` starts
            (at least 1, at most ``max_starts`` and 3) polish in lockstep, and each round also asks the Jacobian at
            every trial point ahead while it has room. 1 (default): one start at a time, nothing asked ahead.
            ``mechcalib run`` sets it from ``--workers`` (the evaluator's workers) unless the configuration
            gives it, and records it in ``run.json``, so that a resume on another number of workers asks the
            same batches. It must not exceed the budget. Where the rule chose CMA-ES, its population is
            ``batch_size`` when that is larger than pycma's default, at most a tenth of the budget left.
        cmaes_model: with a CMA-ES population of ``batch_size``, spend one point a generation on the optimum of
            a quadratic model of the loss (phase 4). One worker (pycma's default population) never does.
        cmaes_mu_ratio: with a CMA-ES population of ``batch_size``, the share of each generation selected as
            parents (:class:`~mechcalib.optimizers.cmaes.CMAES`'s ``mu_ratio``; pycma's default is 0.5). One
            worker (pycma's default population) keeps pycma's.
        lead: with a batch, the polishing starts whose loss is at most ``lead`` times the lowest take difference
            Jacobians asked ahead, the others secant ones at one simulation a round (:class:`Lockstep`). Larger:
            fewer rounds where a trailing start wins, more simulations (``inf``: all by differences). 2: chosen
            among 1, 2, 10 on seeds 1-25 at 32 workers, checked on 26-45 (``benchmarks/efficiency.md``).
        seed: seed of the design and of the methods it runs.
    """

    name: ClassVar[str] = "auto"
    _phase: str  # "design", "check", "recheck", "extend", "lsq", "cmaes" or "done" (set by _init_state)
    #: the design points asked before the smoothness check (``None``: all, as in a checkpoint of a one-part design)
    _n_first: int | None = None
    #: the derivative-free search decided, waiting for the rest of the design: its reason and measured values
    _cmaes_due: tuple[str, dict[str, Any]] | None = None

    def __init__(
        self,
        *,
        design_fraction: float = 0.1,
        smooth_tol: float = 0.1,
        distinct: float = 0.1,
        max_starts: int = 5,
        polish: str = "lm",
        cmaes_sigma0: float = 0.1,
        confirm: int = 1,
        confirm_face: int = 2,
        batch_size: int = 1,
        cmaes_model: bool = True,
        cmaes_mu_ratio: float = 0.25,
        lead: float = 2.0,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(seed=seed)
        self.lead = check_range(self.name, "lead", lead, 1.0, np.inf)
        self.cmaes_model = check_bool(self.name, "cmaes_model", cmaes_model)
        self.cmaes_mu_ratio = check_range(self.name, "cmaes_mu_ratio", cmaes_mu_ratio, 0.0, 0.5, lo_open=True)
        self.design_fraction = check_range(self.name, "design_fraction", design_fraction, 0.0, 1.0, hi_open=True)
        self.smooth_tol = check_range(self.name, "smooth_tol", smooth_tol, 0.0, np.inf, lo_open=True)
        self.distinct = check_range(self.name, "distinct", distinct, 0.0, 1.0)
        self.max_starts = check_positive_int(self.name, "max_starts", max_starts)
        self.polish = check_choice(self.name, "polish", polish, ("trf", "lm"))
        self.cmaes_sigma0 = check_range(self.name, "cmaes_sigma0", cmaes_sigma0, 0.0, 1.0, lo_open=True)
        self.confirm = check_positive_int(self.name, "confirm", confirm)
        self.confirm_face = check_positive_int(self.name, "confirm_face", confirm_face)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer) or batch_size < 1:
            raise SettingError(
                self.name,
                "batch_size",
                "an integer >= 1",
                batch_size,
                message=f"{self.name}: batch_size must be an integer >= 1 (the simulations run at once, one round), "
                f"got {batch_size!r}; set it to the evaluator's workers (or leave it out: --workers sets it)",
            )
        self.batch_size = int(batch_size)
        self._budget: int | None = None
        self._has_residuals: bool | None = None
        self._choices: list[dict[str, Any]] = []

    # -- what calibrate asks of it -----------------------------------------------------------------------
    def set_budget(self, max_evals: int | None) -> None:
        """Keep the run's budget. Told again after a resume restored a checkpoint: a larger budget reopens a
        run that stopped because its next batch did not fit (its design is kept, as planned for the old one)."""
        before = self._budget
        self._budget = None if max_evals is None else int(max_evals)
        if self.dim is None or not hasattr(self, "_phase") or self._budget == before:
            return
        self._log_choice(
            "budget",
            f"the budget changed from {before} to {self._budget}; the design of {len(self._design)} points is kept",
            budget=self._budget,
            before=before,
        )
        if self._phase == "done" and self._stop == "budget" and isinstance(self._sub, Lockstep):
            self._phase = "lsq"
            self._plan_lsq()

    def prepare_problem(self, problem: ProblemLike, *, max_evals: int | None) -> ProblemLike:
        """Note whether the problem has residuals; a problem with them is made to keep the measured channels of
        its responses."""
        self._has_residuals = residual_problem(problem) is not None
        if max_evals is not None and max_evals < self.batch_size:
            raise ConfigurationError(
                f"{self.name}: batch_size={self.batch_size} is larger than the budget max_evals={max_evals}: not one "
                f"round fits; raise max_evals to at least {self.batch_size} or lower batch_size (--workers)"
            )
        return super().prepare_problem(problem, max_evals=max_evals)

    @property
    def choices(self) -> list[dict[str, Any]]:
        """The choices made so far: ``{"choice": ..., "reason": ..., "at_eval": ...}`` records."""
        return [dict(c) for c in self._choices]

    @property
    def method(self) -> str | None:
        """``"check"``, ``"lsq"``, ``"cmaes"``, ``"done"``, or ``None`` (not set up, or still in the design)."""
        return None if self.dim is None or self._phase in ("design", "extend") else self._phase

    @property
    def converged(self) -> bool:
        return self.dim is not None and self._phase == "done"

    @property
    def stop_reason(self) -> str:
        """``"converged"`` (``confirm`` starts ended at the best loss) or ``"budget"`` (the next batch did not
        fit the budget)."""
        return "budget" if getattr(self, "_stop", None) == "budget" else "converged"

    # -- ask/tell --------------------------------------------------------------------------------------
    def design_size(self, dim: int) -> int:
        """The design's size for ``dim`` free parameters and the current budget (class docstring)."""
        if self._budget is None:
            return max(2 * dim + 2, 10)
        n0 = max(2 * dim + 2, math.ceil(self.design_fraction * self._budget))
        if self.batch_size > 1:  # one round: a design of many rounds keeps a cluster from polishing
            n0 = min(n0, max(self.batch_size, 2 * dim + 2))
        return max(min(n0, self._budget // 4), min(dim + 1, self._budget))

    def first_design_size(self, dim: int, n0: int) -> int:
        """The design points asked before the smoothness check: ``2 d + 2`` of the ``n0`` with one slot and
        residuals, all of them with a batch (one round) or without residuals (no check)."""
        if self.batch_size > 1 or self._has_residuals is False:
            return n0
        return min(n0, 2 * dim + 2)

    def _first(self) -> int:
        return int(self._design.shape[0]) if self._n_first is None else self._n_first

    def _init_state(self) -> None:
        assert self.dim is not None
        n0 = self.design_size(self.dim)
        m = 2 ** math.ceil(math.log2(max(n0, 1)))  # Sobol's balance holds for powers of two; take the first n0
        sobol = qmc.Sobol(d=self.dim, scramble=True, rng=self.rng)
        self._design = snap(sobol.random(m)[:n0])
        self._n_first = self.first_design_size(self.dim, n0)
        self._cmaes_due = None
        self._phase = "design"
        self._choices = []
        self._memo: dict[bytes, tuple[float, np.ndarray | None]] = {}
        self._mode: str | None = None
        self._sub: Optimizer | Lockstep | None = None
        self._next: np.ndarray | None = None  # the unknown points of that batch, planned when the last one was told
        self._check: np.ndarray | None = None  # the best design point under the smoothness check
        self._stop: str | None = None  # why the phase is "done": "converged" or "budget"
        self._fd_step = H_FINE  # the polishing's difference step (the check may choose a coarser one)
        # recorded now, said when the design is first asked: a resume replaces this state by a checkpoint's
        n1 = self._n_first
        text = f"{n0} Sobol points (budget {self._budget})"
        if n1 < n0:
            text = (
                f"{n1} Sobol points before the smoothness check, {n0 - n1} more only for CMA-ES (budget {self._budget})"
            )
        self._log_choice("design", text, say=False, n=n1, full=n0, budget=self._budget)

    def _log_choice(self, choice: str, reason: str, *, say: bool = True, **values: Any) -> None:
        rec = {"choice": choice, "reason": reason, "at_eval": int(self.n_evals), **values}
        self._choices.append(rec)
        if say:
            self._say(rec)

    def _say(self, rec: dict[str, Any]) -> None:
        log.info("%s: %s: %s (after %d evaluations)", self.name, rec["choice"], rec["reason"], rec["at_eval"])

    def _remaining(self) -> float:
        return math.inf if self._budget is None else self._budget - self.n_evals

    def _next_batch_size(self) -> int:
        """Known without asking: every phase plans its batch before it is asked (the polisher's when the
        last batch was told)."""
        if self._phase == "design":
            return self._first()
        if self._phase == "extend":
            return int(self._design.shape[0]) - self._first()
        if self._phase == "check":
            assert self._check is not None
            return len(self._check_points(self._check))
        if self._phase == "recheck":
            assert self._check is not None
            return len(fd_points(self._check, H_MID))
        if self._phase == "cmaes":
            assert isinstance(self._sub, CMAES)
            return self._sub.next_batch_size
        if self._phase == "done":
            return 0
        return int(self._ask_lsq().shape[0])

    def checkpoint_state(self) -> dict[str, Any]:
        """:meth:`state_dict` without the told residual vectors (the memory's and the polisher's), which
        :meth:`restore_told` fills in again from the stored responses."""
        state = copy.deepcopy({k: v for k, v in vars(self).items() if k not in ("_memo", "_sub")})
        state["_memo"] = memo_checkpoint(self._memo)
        state["_sub"] = None if self._sub is None else self._sub.checkpoint_copy()
        return state

    def restore_told(self, U: np.ndarray, R: np.ndarray) -> None:
        self._memo = memo_refilled(self._memo, U, R, self.name)
        if isinstance(self._sub, Lockstep):
            self._sub.restore_told(U, R)

    def _ask(self) -> np.ndarray:
        if self._phase == "design":
            self._say(self._choices[0])
            return self._design[: self._first()].copy()
        if self._phase == "extend":
            return self._design[self._first() :].copy()
        if self._phase == "check":
            assert self._check is not None
            return np.array(self._check_points(self._check))
        if self._phase == "recheck":
            assert self._check is not None
            return np.array(fd_points(self._check, H_MID))
        if self._phase == "cmaes":
            assert isinstance(self._sub, CMAES)
            return self._sub.ask()
        return self._ask_lsq()

    def _check_points(self, u: np.ndarray) -> list[np.ndarray]:
        """The check's batch: the fine and coarse Jacobians' points, and the second look's where the batch has
        room for it (``batch_size >= 3 d``: it then costs no round of its own)."""
        pts = fd_points(u, H_FINE) + fd_points(u, H_COARSE)
        if self.batch_size >= 3 * len(u) and self._remaining() >= 3 * len(u) + 1:
            pts += fd_points(u, H_MID)
        return pts

    def _ask_lsq(self) -> np.ndarray:
        assert self._next is not None  # planned by _plan_lsq when the previous batch was told
        return self._next

    def _plan_lsq(self) -> None:
        """The starts' next round, less the points answered from memory; ``done`` when it converged or when no
        request fits the budget."""
        lock = self._sub
        assert isinstance(lock, Lockstep)
        lock.start_type = lock.start_type or LeastSquares  # a checkpoint from before start_type
        while True:
            ended = lock.advance(self._memo)
            confirmed = self._confirmed(lock)
            if confirmed is not None:
                self._phase, self._next, self._stop = "done", None, "converged"
                n, loss, face = confirmed
                rule = (
                    f"confirm_face={self.confirm_face}: it lies on a face of the box"
                    if face
                    else f"confirm={self.confirm}"
                )
                self._log_choice(
                    "converged",
                    f"{n} least-squares start{'s' if n > 1 else ''} ended at the best loss {loss:.6g} ({rule})",
                    starts=n,
                    loss=loss,
                    on_face=face,
                )
                return
            if not ended:
                break
        U = lock.batch(self._memo, self._remaining())
        if U is None:
            # a request cut by the budget (half a Jacobian) would be wasted: end at the best point
            self._phase, self._next, self._stop = "done", None, "budget"
            left = self._remaining()
            need = min(r.shape[0] for r in lock.requests)
            self._log_choice("stop", f"the next batch of {need} does not fit the {left} left", batch=need, left=left)
            return
        self._next = U

    def _confirmed(self, lock: Lockstep) -> tuple[int, float, bool] | None:
        """``(starts, loss, on a face)`` once ``confirm`` finished starts (``confirm_face`` where the best end lies
        on a face of the box, ``lockstep.AT_FACE``) met scipy's tolerances at the best loss told:
        within a relative ``1e-6`` of it, or at an end point within ``lockstep.SAME_POINT`` (max-norm, unit cube) of the
        best end and a loss within a relative ``lockstep.SAME_LOSS`` (a rough objective, the overlap of the demo, has
        shallow dimples at the optimum where two starts stop a few 1e-5 apart); ``None`` before."""
        ends = [(f, u) for (f, met), u in zip(lock.ends, lock.end_at, strict=True) if met and math.isfinite(f)]
        if not ends:
            return None
        best, u_best = min(ends, key=lambda e: e[0])
        bx = None if self.best_x is None else self.best_x.tolist()
        if not same_basin(best, u_best, self.best_f, bx):
            return None  # a point told outside the starts is better: they have not found its basin
        n = sum(same_basin(f, u, best, u_best) for f, u in ends)
        face = u_best is not None and on_face(u_best)
        need = max(self.confirm, self.confirm_face) if face else self.confirm
        return (n, best, face) if n >= need else None

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        R = self._take_residuals()
        for j, x in enumerate(X):
            r = None if R is None or not np.all(np.isfinite(R[j])) or not math.isfinite(f[j]) else R[j].copy()
            self._memo[x.tobytes()] = (float(f[j]), r)
        if self._phase == "design":
            self._after_design(X, f, R)
        elif self._phase == "extend":
            assert self._cmaes_due is not None
            reason, values = self._cmaes_due
            self._cmaes_due = None
            self._start_cmaes(reason, **values)
        elif self._phase == "check":
            self._after_check()
        elif self._phase == "recheck":
            self._after_recheck()
        elif self._phase == "cmaes":
            assert isinstance(self._sub, CMAES)
            self._sub.tell(X, f)
        if self._phase == "lsq":  # plan now, so that `converged` says whether a next batch fits the budget
            self._plan_lsq()

    def _after_design(self, X: np.ndarray, f: np.ndarray, R: np.ndarray | None) -> None:
        assert self.dim is not None
        d = self.dim
        if R is None or self._has_residuals is False:
            return self._fallback("the objective gives no residual vectors")
        if not np.isfinite(f).any():
            return self._fallback("every design point failed")
        if self._remaining() < 2 * d + 1:
            left = self._remaining()
            return self._fallback(f"{left} evaluations left cannot hold a smoothness check and a step", left=left)
        i = int(np.argmin(f))
        self._check = X[i].copy()
        self._phase = "check"
        self._log_choice(
            "check",
            f"forward Jacobians with steps {H_FINE:g} and {H_COARSE:g} at the best design point ({2 * d} simulations)",
            point=self._check.tolist(),
            loss=float(f[i]),
        )

    def _after_check(self) -> None:
        u = self._check
        assert u is not None and self.dim is not None
        recheck = self._remaining() >= 2 * self.dim + 1
        choice, reason, values = smoothness.first_look(self._memo, u, self.smooth_tol, recheck=recheck)
        if choice != "recheck":
            return self._decide(choice, reason, values)
        # finite-difference noise of a smooth model (an integrator's tolerance) shows at the fine step only, the
        # curvature of a smooth one at the coarse step only: a third Jacobian tells them from a rough model
        self._phase = "recheck"
        self._log_choice(choice, reason, **values)
        if all(p.tobytes() in self._memo for p in fd_points(u, H_MID)):
            self._after_recheck()  # asked with the check
        return None

    def _after_recheck(self) -> None:
        assert self._check is not None
        self._decide(*smoothness.second_look(self._memo, self._check, self.smooth_tol))

    def _decide(self, choice: str, reason: str, values: dict[str, Any]) -> None:
        if choice == "cmaes":
            return self._fallback(reason, **values)
        self._fd_step = values.get("fd_step", H_FINE)
        self._log_choice("lsq", reason, **values)
        return self._start_lsq()

    def jacobian_mismatch(self, u: np.ndarray, fine: float = H_FINE, coarse: float = H_COARSE) -> float:
        """:func:`~mechcalib.optimizers.smoothness.jacobian_mismatch` at ``u`` from the told residuals."""
        return smoothness.jacobian_mismatch(self._memo, u, fine, coarse)

    def width(self) -> int:
        """How many least-squares starts run at once: ``batch_size // (d + 1)`` (a start's Jacobian and trial
        step per round), at least 1 and at most ``max_starts`` and ``_AT_ONCE``."""
        assert self.dim is not None
        return min(max(self.batch_size // (self.dim + 1), 1), self.max_starts, _AT_ONCE)

    def _start_lsq(self) -> None:
        assert self.dim is not None
        design = [(self._memo[p.tobytes()][0], p) for p in self._design[: self._first()]]
        design = [(f, p) for f, p in design if self._memo[p.tobytes()][1] is not None]
        design.sort(key=lambda e: e[0])
        width = self.width()
        starts: list[np.ndarray] = []
        losses: list[float] = []
        for f, p in design:
            if all(np.max(np.abs(p - s)) > self.distinct for s in starts):
                starts.append(p)
                losses.append(f)
            if len(starts) == max(self.max_starts, width):
                break
        self._sub = Lockstep(
            dim=self.dim,
            method=self.polish,
            fd_step=self._fd_step,
            starts=starts,
            width=width,
            batch_size=self.batch_size,
            seed=int(self.rng.integers(2**31)),
            start_type=LeastSquares,
            options={"face_handover": True, "secant": True},
            lead=self.lead if self.batch_size > 1 else 0.0,
            cap=_START_CAP * (self.dim + 1) if self.batch_size == 1 else 0,
        )
        self._phase = "lsq"
        self._log_choice(
            "polish",
            f"least squares ({self.polish}) from {len(starts)} distinct design points, {width} at a time",
            starts=[s.tolist() for s in starts],
            start_losses=losses,
            width=width,
        )

    def _cmaes_popsize(self) -> int | None:
        """CMA-ES's population: pycma's default ``4 + 3 ln d`` (``None``) unless ``batch_size`` is larger; then
        ``batch_size``, at most a tenth of the budget left (ten generations), never below the default."""
        default = 4 + int(3 * math.log(self.dim))
        if self.batch_size <= default:
            return None
        left = self._remaining()
        cap = self.batch_size if math.isinf(left) else max(default, int(left) // 10)
        size = min(self.batch_size, cap)
        return None if size <= default else size

    def _fallback(self, reason: str, **values: Any) -> None:
        """CMA-ES (:meth:`_start_cmaes`), after the rest of the design where it is not asked yet."""
        rest = int(self._design.shape[0]) - self._first()
        if rest == 0 or self._remaining() < rest:
            return self._start_cmaes(reason, **values)
        self._cmaes_due = (reason, values)
        self._phase = "extend"
        self._log_choice(
            "extend",
            f"{rest} more Sobol points of the design before CMA-ES ({int(self._design.shape[0])} in all)",
            n=rest,
        )
        return None

    def _start_cmaes(self, reason: str, **values: Any) -> None:
        """CMA-ES from the best point told so far with ``cmaes_sigma0``; from the centre with pycma's 0.3 when
        nothing has succeeded yet."""
        assert self.dim is not None
        told = [(f, k) for k, (f, _) in self._memo.items() if math.isfinite(f)]
        seed = int(self.rng.integers(2**31))
        popsize = self._cmaes_popsize()
        inject = popsize is not None and self.cmaes_model  # a generation of a whole batch has a point to spare
        mu_ratio = None if popsize is None else self.cmaes_mu_ratio  # a large population, few parents
        x0 = np.frombuffer(min(told)[1]).tolist() if told else None
        sigma0 = self.cmaes_sigma0 if told else 0.3  # pycma's from the centre
        sub = CMAES(x0=x0, sigma0=sigma0, popsize=popsize, model_injection=inject, mu_ratio=mu_ratio, seed=seed)
        self._sub = sub.setup(self.dim)
        if told:
            f0 = min(told)[0]
            start = f"from the best point so far (loss {f0:.4g}) with sigma0={sigma0:g}"
            values.update(start=x0, start_loss=f0, sigma0=sigma0)
        else:
            start = "from the centre with sigma0=0.3 (no point has succeeded yet)"
            values.update(start=None, start_loss=None, sigma0=0.3)
        if popsize is not None:
            start += f", population {popsize} (batch_size), {sub.parents} parents"
            values.update(popsize=popsize, mu_ratio=mu_ratio)
        if inject:
            start += ", one point a generation the optimum of a quadratic model"
            values.update(model_injection=True)
            if told:  # the design and the check points start the model
                sub.add_model_data(np.array([np.frombuffer(k) for _, k in told]), np.array([f for f, _ in told]))
        self._phase = "cmaes"
        self._log_choice("cmaes", f"{reason}; CMA-ES {start}", **values)


#: a polishing start told this many times ``d + 1`` points without ending is cut (docstring, phase 3)
_START_CAP = 10

#: the most least-squares starts at once (3 reached the target in the rounds of 5 for fewer simulations; 32 workers)
_AT_ONCE = 3
