"""CMA-ES (Hansen & Ostermeier 2001; Hansen 2016) from ``cma`` (pycma), with IPOP and BIPOP restarts.

The covariance matrix adaptation evolution strategy samples a population of ``lambda`` points from a
multivariate normal distribution, ranks them by loss and moves the mean, the step size and the covariance
towards the better points. Only the ranks of the losses matter (the tolerances ``tolfun`` aside), so the
method is invariant to monotone transformations of the loss. The algorithm itself is pycma's
``CMAEvolutionStrategy``, driven through its own ask/tell interface; this module adds what a calibration run
needs around it:

* **Bounds.** pycma's ``bounds=[0, 1]`` option with its default ``BoundTransform`` handler (Hansen's
  piecewise linear-quadratic periodic transformation, ``cma.transformations.BoxConstraintsLinQuadTransformation``):
  the distribution lives in an unbounded space and every sampled point is mapped into the cube, linearly in the
  interior (identity on ``[0.05, 0.95]``) and smoothly folded near the walls. Every asked point is therefore
  feasible (no simulation is spent on a point outside the bounds, as a penalty method would) and an optimum on a
  wall is reachable; pycma keeps the genotype of each asked point, so ``tell`` updates the distribution exactly.
* **Restarts** (``restarts="ipop"`` or ``"bipop"``), implemented here because pycma's ``fmin`` restarts cannot
  be driven by ask/tell: when one of pycma's stop criteria fires (``tolx``, ``tolfun``, ``tolflatfitness``,
  ``tolstagnation``, ``conditioncov``, ``maxiter``...), a new strategy starts from a uniform random point of the
  cube (Auger & Hansen 2005). IPOP doubles the population size at every restart (``lambda_def 2^k`` for the
  ``k``-th). BIPOP (Hansen 2009) interleaves two regimes, choosing before each restart the one that has used
  fewer evaluations so far (the first run counts as the small regime, as in pycma's ``fmin``): the large regime
  is IPOP's doubling with ``sigma0``; the small regime draws ``lambda_s = floor(lambda_def m^(U^2))`` with
  ``m = 2^(large restarts so far)``, ``sigma = sigma0 0.01^U'`` (``U, U'`` uniform on ``[0, 1]``) and is cut at
  half the large regime's evaluations (``maxiter``). Without restarts, or after ``max_restarts``, the
  optimiser reports ``converged`` when a stop criterion fires and :func:`mechcalib.calibrate` ends the run.
* **Failed simulations** arrive as ``+inf`` losses; pycma needs finite values, so each is replaced by a finite
  penalty ranked below every finite loss: the worst finite loss seen in the run plus ``max(1, |worst|)`` (1.0
  while nothing finite has been seen) (:func:`failure_penalty`). Failed points tie, so a generation in which
  every simulation failed selects at random (the mean takes a random step, the step size is kept in
  expectation). Such a generation is flat, and pycma's flat-fitness criteria (``tolfun``, ``tolfunhist``,
  ``tolflatfitness``) would end the run at once; they are ignored for it, so that a few all-failed generations,
  likely while a model fails in much of the cube, neither spend the restarts nor double the population.
* **Reproducibility.** Each strategy samples from its own ``numpy.random.Generator`` (pycma's ``randn``
  option), seeded from the optimiser's ``rng``; the few places where pycma still draws from numpy's global
  generator run with that global state swapped for the optimiser's own (saved in its state and restored
  afterwards), so a seeded run gives identical asks and leaves the caller's global random state untouched.
  The swap is not thread-safe for code that uses ``numpy.random``'s global functions in another thread at the
  same time. The whole state (pycma's strategy included) pickles, so a checkpoint resumes identically.
* **One parameter.** pycma does not support a 1-D search (pycma issue 86); as its author suggests there, a
  one-parameter problem runs CMA-ES in 2-D on a loss that ignores the second coordinate, which is dropped from
  the asked points.

References: N. Hansen, A. Ostermeier, "Completely derandomized self-adaptation in evolution strategies",
Evolutionary Computation 9 (2001) 159-195; A. Auger, N. Hansen, "A restart CMA evolution strategy with
increasing population size", CEC 2005; N. Hansen, "Benchmarking a BI-population CMA-ES on the BBOB-2009
function testbed", GECCO 2009; N. Hansen, "The CMA evolution strategy: a tutorial", arXiv:1604.00772 (2016).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..core.presets import Preset, presets_by_name
from ..errors import ConfigurationError, SettingError
from ._base import Optimizer, SeedLike, check_bool, check_choice, check_positive_int, check_range, check_unit_points

__all__ = ["CMAES", "default_popsize", "failure_penalty"]

_RESTARTS = (0, "ipop", "bipop")
# pycma's stop criteria that a generation of failures only (tied penalties) satisfies by itself
_FLAT_STOPS = ("tolfun", "tolfunhist", "tolflatfitness", "tolfunrel")


def default_popsize(dim: int) -> int:
    """pycma's default population size ``4 + floor(3 ln dim)`` (Hansen 2016, table 1)."""
    return 4 + int(3 * math.log(dim))


def failure_penalty(f: np.ndarray, worst: float) -> tuple[np.ndarray, float]:
    """Finite stand-ins for failed simulations (``+inf`` losses), ranked below every finite loss.

    Args:
        f: ``(n,)`` losses of one generation, ``+inf`` for a failure.
        worst: the worst finite loss seen before (``-inf`` if none).

    Returns:
        ``(losses, worst)``: ``f`` with each ``+inf`` replaced by ``worst' + max(1, |worst'|)`` (1.0 while no
        finite loss has been seen), where ``worst'`` is the updated worst finite loss, also returned.
    """
    f = np.asarray(f, dtype=float)
    ok = np.isfinite(f)
    if ok.any():
        worst = max(worst, float(f[ok].max()))
    penalty = worst + max(1.0, abs(worst)) if np.isfinite(worst) else 1.0
    return np.where(ok, f, penalty), worst


class _Normal:
    """pycma's ``randn(lam, dim)`` drawing from one generator (a picklable callable, unlike a bound method of
    numpy's global ``RandomState``, which pickles as a detached copy)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def __call__(self, *shape: int) -> np.ndarray:
        return self.rng.standard_normal(shape)


class CMAES(Optimizer):
    """CMA-ES over the unit cube with optional IPOP/BIPOP restarts (pycma's ``CMAEvolutionStrategy``).

    Args:
        popsize: ``lambda``, points per generation (at least 2); ``None`` uses pycma's default
            ``4 + floor(3 ln dim)``. Restarts multiply this base size.
        sigma0: initial step size as a fraction of the cube's side (each parameter's range), in ``(0, 1]``.
        restarts: ``0`` (none: ``converged`` once a stop criterion fires), ``"ipop"`` (Auger & Hansen 2005) or
            ``"bipop"`` (Hansen 2009); see the module docstring.
        max_restarts: the most restarts (of either regime) after the first run.
        tolx: pycma's ``tolx``, stop when the steps in x are all below it (unit-cube units).
        tolfun: pycma's ``tolfun``, stop when the losses of the recent generations span less than it (loss units).
        x0: the first run's mean, a unit-cube point (every coordinate in ``[0, 1]``); ``None``: the centre.
            ``auto`` passes the best point it has evaluated, with a smaller ``sigma0``.
        model_injection: each generation's first point is the minimiser of a linear-quadratic model of the
            loss fitted to the points told (pycma's ``LQModel``, the model of lq-CMA-ES, Hansen 2019), clipped to
            the cube and injected as an external solution (Hansen 2011: pycma clips its step in the update, so a
            poor model costs one point of the generation, not the distribution). Points told outside the
            strategy (a design) join the model through :meth:`add_model_data`. Each run (restart) starts a
            new model. Synchronous generations only; ``auto`` turns it on when its population is the batch.
        mu_ratio: the share of each generation selected as parents, ``mu = max(1, round(mu_ratio * lambda))``
            (pycma's ``CMA_mu``, with its default weights on them), in ``(0, 0.5]``; ``None``: pycma's
            ``lambda / 2``. With fewer parents a large population progresses faster per generation (the
            progress rate of intermediate recombination on the sphere peaks near a truncation ratio of 0.27,
            Beyer 2001); ``auto`` uses 0.25 when its population is the batch.
        seed: random seed or generator.

    The first run starts at ``x0`` (by default the centre of the cube); restarts start at uniform random points.
    Failed simulations (``+inf``) are given to pycma as the worst finite loss seen plus ``max(1, |worst|)``.
    Batches: one generation per ``ask`` (``lambda`` points of the current run).
    """

    name = "cmaes"
    setting_presets = presets_by_name(Preset(name="default", source="pycma's defaults (Hansen 2016)"))

    def __init__(
        self,
        *,
        popsize: int | None = None,
        sigma0: float = 0.3,
        restarts: int | str = "ipop",
        max_restarts: int = 9,
        tolx: float = 1e-11,
        tolfun: float = 1e-11,
        x0: list[float] | None = None,
        model_injection: bool = False,
        mu_ratio: float | None = None,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(seed=seed)
        self.model_injection = check_bool(self.name, "model_injection", model_injection)
        self.mu_ratio = (
            None if mu_ratio is None else check_range(self.name, "mu_ratio", mu_ratio, 0.0, 0.5, lo_open=True)
        )
        self.popsize = None if popsize is None else check_positive_int(self.name, "popsize", popsize, minimum=2)
        self.sigma0 = check_range(self.name, "sigma0", sigma0, 0.0, 1.0, lo_open=True)
        if isinstance(restarts, bool | float):
            raise SettingError(self.name, "restarts", f"one of {list(_RESTARTS)}", restarts)
        self.restarts = check_choice(self.name, "restarts", restarts, _RESTARTS)
        if self.restarts == 0:
            self.restarts = 0  # one spelling (not numpy's 0 or False) in settings and stores
        self.max_restarts = check_positive_int(self.name, "max_restarts", max_restarts, minimum=0)
        self.tolx = check_range(self.name, "tolx", tolx, 0.0, np.inf)
        self.tolfun = check_range(self.name, "tolfun", tolfun, 0.0, np.inf)
        self.x0: list[float] | None = None
        if x0 is not None:
            rows = check_unit_points(self.name, "x0", x0)
            if len(rows) != 1:
                raise SettingError(self.name, "x0", "one unit-cube point (the first run's mean)", x0)
            self.x0 = rows[0]

    @classmethod
    def default(cls, *, seed: SeedLike = None, **overrides: Any) -> CMAES:
        """pycma's defaults in the unit cube: ``lambda = 4 + floor(3 ln d)``, ``sigma0 = 0.3``, IPOP restarts
        (at most 9), ``tolx = tolfun = 1e-11``."""
        return cls(seed=seed, **overrides)

    # -- state ------------------------------------------------------------------------------------------
    @property
    def base_popsize(self) -> int:
        """``lambda_def``: ``popsize`` or pycma's default for the dimension it searches, ``max(2, dim)`` (valid
        after ``setup``)."""
        return self.popsize if self.popsize is not None else default_popsize(max(2, int(self.dim)))

    @property
    def runs(self) -> list[dict[str, Any]]:
        """One record per run so far (the first and each restart): ``regime`` (``"first"``, ``"large"`` or
        ``"small"``), ``popsize``, ``sigma0``, ``evals`` and ``stop`` (pycma's criteria that ended it, empty for
        the current run)."""
        return [dict(r, stop=list(r["stop"])) for r in self._runs]

    @property
    def parents(self) -> int:
        """``mu``, the points of a generation of the current run selected and recombined (valid after ``setup``)."""
        return int(self._es.sp.weights.mu)

    @property
    def converged(self) -> bool:
        """A stop criterion fired and no restart is left."""
        return bool(self._done)

    def _init_state(self) -> None:
        self._n_cma = max(2, int(self.dim))  # pycma cannot search in 1-D: a dummy coordinate (see above)
        self._np_state = np.random.RandomState(int(self.rng.integers(2**32))).get_state()
        self._asked: list[np.ndarray] | None = None
        self._worst = -np.inf  # worst finite loss seen (the failure penalty's base)
        self._runs: list[dict[str, Any]] = []
        self._evals_small = 0  # BIPOP budgets: the first run counts as the small regime (as pycma's fmin)
        self._evals_large = 0
        self._n_large = 0
        self._done = False
        self._model: Any = None  # the linear-quadratic model of the current run (model_injection)
        self._es = self._start(self._first_mean(), self.sigma0, self.base_popsize, "first", None)
        self._maxiter0 = float(self._es.opts["maxiter"])

    def _first_mean(self) -> np.ndarray:
        """``x0`` (the centre by default), with the dummy coordinate of a 1-D search at its centre."""
        d = int(self.dim)
        if self.x0 is None:
            return np.full(self._n_cma, 0.5)
        if len(self.x0) != d:
            raise ConfigurationError(
                f"{self.name}: x0 has {len(self.x0)} coordinates, the problem {d} free parameters; "
                "give one unit-cube coordinate per free parameter"
            )
        return np.concatenate([self.x0, np.full(self._n_cma - d, 0.5)])

    @contextmanager
    def _own_global_rng(self) -> Iterator[None]:
        """Run pycma with numpy's global random state swapped for this optimiser's own."""
        outer = np.random.get_state()  # noqa: NPY002
        np.random.set_state(self._np_state)  # noqa: NPY002
        try:
            yield
        finally:
            self._np_state = np.random.get_state()  # noqa: NPY002
            np.random.set_state(outer)  # noqa: NPY002

    def _start(self, x0: np.ndarray, sigma: float, popsize: int, regime: str, maxiter: float | None) -> Any:
        import cma

        opts: dict[str, Any] = {
            "bounds": [0.0, 1.0],
            "popsize": int(popsize),
            "tolx": self.tolx,
            "tolfun": self.tolfun,
            "randn": _Normal(np.random.default_rng(int(self.rng.integers(2**63)))),
            "seed": np.nan,  # pycma's "do not seed": sampling uses randn above
            "verbose": -10,  # silent, and no signals file read from the working directory
            "verb_disp": 0,
            "verb_log": 0,
        }
        if maxiter is not None:
            opts["maxiter"] = maxiter
        if self.mu_ratio is not None:
            opts["CMA_mu"] = max(1, round(self.mu_ratio * int(popsize)))
        with self._own_global_rng():
            es = cma.CMAEvolutionStrategy(list(x0), sigma, opts)
        if self.model_injection:
            from cma.fitness_models import LQModel

            self._model = LQModel()
        self._runs.append({"regime": regime, "popsize": int(es.popsize), "sigma0": sigma, "evals": 0, "stop": []})
        return es

    def _restart(self) -> None:
        lam0 = self.base_popsize
        x0 = self.rng.random(self._n_cma)
        if self.restarts == "bipop" and self._evals_small < max(1, self._evals_large):
            sigma = self.sigma0 * 0.01 ** self.rng.random()
            popsize = int(lam0 * (2.0**self._n_large) ** (self.rng.random() ** 2))
            maxiter = max(1.0, min(self._maxiter0, 0.5 * self._evals_large / popsize))
            self._es = self._start(x0, sigma, popsize, "small", maxiter)
            return
        self._n_large += 1
        self._es = self._start(
            x0, self.sigma0, lam0 * 2**self._n_large, "large", self._maxiter0 if self.restarts == "bipop" else None
        )

    # -- protocol ---------------------------------------------------------------------------------------
    def _next_batch_size(self) -> int:
        return int(self._es.popsize)

    def add_model_data(self, U: np.ndarray, f: np.ndarray) -> None:
        """Points told outside the strategy (unit cube, ``(n, dim)``, with their losses) for the model of
        ``model_injection``; failed ones (non-finite losses) are left out."""
        if self._model is None:
            return
        for u, v in zip(np.atleast_2d(np.asarray(U, dtype=float)), np.asarray(f, dtype=float), strict=True):
            if math.isfinite(v):
                self._model.add_data_row(np.array(u, dtype=float), float(v))

    def _model_optimum(self) -> np.ndarray | None:
        """The genotype of the model's minimiser in the cube (a 1-D search's dummy coordinate at the mean), or ``None``
        while the model has fewer than ``dim + 2`` points or its minimiser is not finite."""
        m = self._model
        if m is None or m.size < int(self.dim) + 2:
            return None
        x = np.asarray(m.xopt, dtype=float)
        if x.shape != (int(self.dim),) or not np.all(np.isfinite(x)):
            return None
        u = np.concatenate([np.clip(x, 0.0, 1.0), np.full(self._n_cma - int(self.dim), 0.5)])
        g = np.asarray(self._es.boundary_handler.inverse(u), dtype=float)  # the genotype that pycma maps to u
        g[int(self.dim) :] = self._es.mean[int(self.dim) :]
        return g

    def _ask(self) -> np.ndarray:
        with self._own_global_rng():
            x = self._model_optimum()
            if x is not None:
                self._es.inject([x], force=True)  # asked as it is; the update clips its step
            self._asked = self._es.ask()
        return np.array(self._asked, dtype=float)[:, : self.dim]

    def _tell(self, X: np.ndarray, f: np.ndarray, stale: bool = False) -> None:
        if not stale:
            self.add_model_data(X, f)
        fc, self._worst = failure_penalty(f, self._worst)
        with self._own_global_rng():
            # pycma's own asked arrays: it finds each point's genotype by them. ``stale``: points sampled before
            # the last update (asynchronous), whose long steps from the current mean are clipped as pycma clips
            # injected solutions (Hansen 2011)
            self._es.tell(self._asked, fc.tolist(), check_points=True if stale else None)
            stop = dict(self._es.stop())
        self._asked = None
        if not np.isfinite(f).any():
            for k in _FLAT_STOPS:
                stop.pop(k, None)
        n = len(f)
        run = self._runs[-1]
        run["evals"] += n
        if run["regime"] == "large":
            self._evals_large += n
        else:
            self._evals_small += n
        if not stop or self._done:
            return
        run["stop"] = sorted(stop)
        if self.restarts != 0 and len(self._runs) <= self.max_restarts:
            self._restart()
        else:
            self._done = True

    # -- asynchronous variant -----------------------------------------------------------------------
    asynchronous_variant = "CMA-ES with asynchronous updates (after Glasmachers 2013): an update per lambda told points"

    def ask_async(self, n: int) -> np.ndarray:
        """Asynchronous CMA-ES: each freed slot gets a point sampled from the distribution as it stands now;
        :meth:`tell_async` updates the distribution once ``lambda`` told points have accumulated, in told
        order, whatever distribution each was sampled from (the asynchronous strategy updates of Glasmachers
        2013, there for a natural evolution strategy): pycma's update recomputes each point's step from its
        genotype and the current mean, so a point sampled before the last update enters it as an
        injected solution would (Hansen 2011), its step clipped to a length a sample of the current distribution
        could have (``check_points``), and the search never waits for the slowest simulation."""
        st = self.__dict__.setdefault("_steady", {"slot": {}, "told": []})
        n = int(n)
        if n <= 0:
            return np.zeros((0, int(self.dim)))
        with self._own_global_rng():
            asked = self._es.ask(n)
        rows = []
        for a in asked:
            st["slot"][self._tickets] = (len(self._runs), a)
            self._tickets_add(1)
            rows.append(np.array(a, dtype=float)[: self.dim])
        return np.clip(np.array(rows, dtype=float), 0.0, 1.0)

    def tell_async(self, ticket: int, u: np.ndarray, f: float, residuals: np.ndarray | None = None) -> None:
        """Accumulate the told point; the first ``lambda`` accumulated update the distribution (and may
        restart), the rest wait for the next update. A point sampled in an earlier run (before a restart)
        only counts towards the best."""
        st = self.__dict__["_steady"]
        run, a = st["slot"].pop(ticket)
        self._note_async_best(u, f)
        if run != len(self._runs) or self._done:
            return
        st["told"].append((a, np.inf if np.isnan(f) else float(f)))
        lam = int(self._es.popsize)
        if len(st["told"]) < lam:
            return
        told, st["told"] = st["told"][:lam], st["told"][lam:]
        self._asked = [a for a, _ in told]
        # pycma refuses a second tell before the next ask, and a tell while the mirrored directions of its
        # last tell (popsize < 6) are not all asked: guards against misuse of the synchronous loop. Here
        # points are asked as slots free, so two populations can fill between two asks (more points in
        # flight than lambda) and the directions go partly unused; they are dropped, as a skipped ask would
        self._es._flgtelldone = False
        self._es.pop_injection_directions = []
        self._tell(np.array(self._asked)[:, : self.dim], np.array([v for _, v in told], dtype=float), stale=True)
        self.n_tells += 1
