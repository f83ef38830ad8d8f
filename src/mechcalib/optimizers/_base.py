"""The ask/tell protocol every optimiser follows.

Optimisers search the unit cube ``[0, 1]^dim``; the problem's :class:`~mechcalib.core.parameters.ParameterSpace`
maps it onto physical (possibly logarithmic) bounds, so every algorithm handles bounds the same way and
"points stay inside bounds" is one check. The loop lives outside (:func:`mechcalib.calibrate`):

    opt = PSO.kibriya2023(seed=1).setup(dim=3)
    while ...:
        U = opt.ask()              # (n, dim) points in [0, 1]
        opt.tell(U, losses(U))     # (n,) losses, lower is better; +inf marks a failed simulation

A subclass implements ``_init_state`` (called by ``setup``; draws the initial population from
``self.rng``), ``_ask`` and ``_tell``. Algorithms with several phases per generation (the bee colonies)
ask one batch per phase. ``tell`` must receive exactly the points of the last ``ask`` in the same order.
Losses may be ``+inf`` (a failed simulation under the default penalty); NaN is turned into ``+inf``.
"""

from __future__ import annotations

import copy
import functools
import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ..core.presets import Preset
from ..errors import ConfigurationError, SettingError

SeedLike = int | np.random.Generator | None


class Optimizer(ABC):
    """Base class of ask/tell optimisers over the unit cube.

    Attributes kept by the base class: ``dim``, ``rng``, ``n_asks``/``n_tells`` (batches), ``n_evals``
    (points told), ``best_x`` (unit cube) and ``best_f``.
    """

    name: ClassVar[str] = "optimizer"
    #: the number of free parameters once set up (``None`` before :meth:`setup`, where nothing reads it as a
    #: number: declared ``int`` so that the algorithms' arithmetic on it type-checks)
    dim: int
    #: the named settings (name -> :class:`~mechcalib.core.presets.Preset`), each also a classmethod
    setting_presets: ClassVar[Mapping[str, Preset]] = {}

    def __init__(self, *, seed: SeedLike = None) -> None:
        self.seed = seed
        self.dim = None  # type: ignore[assignment]  # not set up yet (see the class attribute)
        self._pending: np.ndarray | None = None

    # -- configuration ----------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """The constructor's keyword settings (for stores, configs and reports): the attributes named by a
        parameter of an ``__init__`` of the class or its bases, in the order they were set; any other public
        attribute is state, not a setting."""
        declared = declared_settings(type(self))
        return {k: v for k, v in vars(self).items() if k in declared}

    def copy(self, **changes: Any) -> Optimizer:
        """An unset-up copy with some settings changed (``opt.copy(seed=2)``)."""
        s = self.settings()
        s.update(changes)
        return type(self)(**s)

    def set_budget(self, max_evals: int | None) -> None:
        """Told the run's ``max_evals`` (``None``: no evaluation budget) by :func:`~mechcalib.calibrate` before
        ``setup``; a method that plans its phases inside the budget (``auto``) keeps it. Default: ignored."""
        return None

    def setup(self, dim: int) -> Optimizer:
        """(Re)start the optimiser on a ``dim``-dimensional unit cube; returns ``self``."""
        if not isinstance(dim, int | np.integer) or dim < 1:
            raise ConfigurationError(f"{self.name}: dim must be a positive integer, got {dim!r}")
        self.dim = int(dim)
        self.rng = self.seed if isinstance(self.seed, np.random.Generator) else np.random.default_rng(self.seed)
        self.n_asks = 0
        self.n_tells = 0
        self.n_evals = 0
        self.best_x: np.ndarray | None = None
        self.best_f = np.inf
        self._pending = None
        self._init_state()
        return self

    # -- protocol -----------------------------------------------------------------------------
    def ask(self) -> np.ndarray:
        """Propose a batch ``(n, dim)`` of points in the unit cube."""
        if self.dim is None:
            raise ConfigurationError(f"{self.name}: call setup(dim) before ask()")
        if self._pending is not None:
            raise ConfigurationError(f"{self.name}: ask() called twice without tell(); tell the last batch first")
        X = np.array(self._ask(), dtype=float)
        if X.ndim != 2 or X.shape[1] != self.dim or X.shape[0] < 1:
            raise RuntimeError(f"{self.name}: _ask returned shape {X.shape}, expected (n >= 1, {self.dim})")
        np.clip(X, 0.0, 1.0, out=X)  # guards rounding only; algorithms keep bounds themselves
        self._pending = X.copy()
        self.n_asks += 1
        return X

    def tell(self, X: np.ndarray, f: np.ndarray) -> None:
        """Report the losses ``f`` (``(n,)``) of the batch ``X`` returned by the last ``ask``."""
        if self._pending is None:
            raise ConfigurationError(f"{self.name}: tell() without a pending ask()")
        X = np.asarray(X, dtype=float)
        f = np.asarray(f, dtype=float).reshape(-1)
        if X.shape != self._pending.shape or not np.array_equal(X, self._pending):
            raise ConfigurationError(
                f"{self.name}: tell() must receive the points of the last ask() in order; got shape {X.shape}, "
                f"expected {self._pending.shape}"
            )
        if f.shape[0] != X.shape[0]:
            raise ConfigurationError(f"{self.name}: got {f.shape[0]} losses for {X.shape[0]} points")
        f = np.where(np.isnan(f), np.inf, f)
        self._pending = None
        i = int(np.argmin(f))
        if f[i] < self.best_f:
            self.best_f = float(f[i])
            self.best_x = X[i].copy()
        self.n_tells += 1
        self.n_evals += X.shape[0]
        self._tell(X, f)

    def withdraw(self) -> None:
        """Forget the last asked batch without telling it: its points will not be evaluated (``auto`` drops its
        polisher's batch that does not fit the budget and ends). The next call may be ``ask`` again."""
        self._pending = None

    @property
    def next_batch_size(self) -> int:
        """The number of points the next ``ask`` returns (valid after ``setup``)."""
        return int(self._next_batch_size())

    @property
    def choices(self) -> list[dict[str, Any]]:
        """The decisions a method made during the run (JSON-compatible records, e.g. ``auto``'s phases), kept
        with the run by :func:`~mechcalib.calibrate` (``Result.choices``, the store's run record); default none."""
        return []

    @property
    def converged(self) -> bool:
        """The algorithm's own stopping signal (a collapsed population...); default never."""
        return False

    @property
    def stop_reason(self) -> str:
        """Why :attr:`converged` turned true, as a run's stop reason: ``"converged"`` (a rule of the method
        fired), or ``"budget"`` where the method stopped because its next batch does not fit the budget
        (``auto``); a resume with a larger budget continues the latter (:meth:`set_budget`)."""
        return "converged"

    # -- asynchronous protocol ------------------------------------------------------------------
    #: True where the class has its own asynchronous variant (DE, CMA-ES); the default below keeps batches
    asynchronous_variant: ClassVar[str | None] = None

    def ask_async(self, n: int) -> np.ndarray:
        """Up to ``n`` points to evaluate now, as evaluation slots free (asynchronous evaluation, see
        ``docs/asynchronous.md``); 0 rows: wait for an outstanding result first. The points are numbered in
        ask order from 0 (their *tickets*), and each is told back once through :meth:`tell_async`.

        Default: the batch of :meth:`ask` handed out row by row as slots free, and told whole with :meth:`tell`
        once all its rows are told (a synchronous barrier at the end of each batch: ``auto``'s design is
        submitted as slots free). DE and CMA-ES override it with their steady-state variants."""
        st = self.__dict__.get("_async_batch")
        if st is None:
            U = self.ask()
            st = {"U": U, "next": 0, "f": np.full(U.shape[0], np.inf), "told": 0, "R": None, "base": self._tickets}
            self.__dict__["_async_batch"] = st
        k = min(int(n), st["U"].shape[0] - st["next"])
        out = st["U"][st["next"] : st["next"] + k]
        st["next"] += k
        self._tickets_add(k)
        return out

    def tell_async(self, ticket: int, u: np.ndarray, f: float, residuals: np.ndarray | None = None) -> None:
        """The loss ``f`` (and, for a residual method, the residual vector) of the point of ``ticket``."""
        st = self.__dict__["_async_batch"]
        pos = ticket - st["base"]
        st["f"][pos] = f
        if residuals is not None:
            r = np.asarray(residuals, dtype=float).reshape(-1)
            if st["R"] is None:
                st["R"] = np.full((st["U"].shape[0], r.shape[0]), np.nan)
            st["R"][pos] = r
        st["told"] += 1
        if st["told"] == st["U"].shape[0]:
            self.__dict__["_async_batch"] = None
            if st["R"] is not None:
                self.tell(st["U"], st["f"], residuals=st["R"])  # type: ignore[call-arg]
            else:
                self.tell(st["U"], st["f"])

    @property
    def _tickets(self) -> int:
        return int(self.__dict__.get("_async_tickets", 0))

    def _tickets_add(self, k: int) -> None:
        self.__dict__["_async_tickets"] = self._tickets + k

    def _note_async_best(self, u: np.ndarray, f: float) -> None:
        """Keep ``best_x``/``best_f`` and the counters for one told point of an asynchronous variant."""
        f = np.inf if np.isnan(f) else float(f)
        if f < self.best_f:
            self.best_f, self.best_x = f, np.array(u, dtype=float).copy()
        self.n_evals += 1

    # -- subclass hooks -------------------------------------------------------------------------
    @abstractmethod
    def _init_state(self) -> None: ...

    @abstractmethod
    def _ask(self) -> np.ndarray: ...

    @abstractmethod
    def _tell(self, X: np.ndarray, f: np.ndarray) -> None: ...

    @abstractmethod
    def _next_batch_size(self) -> int: ...

    # -- helpers for subclasses ---------------------------------------------------------------------
    def _random_points(self, n: int) -> np.ndarray:
        """``n`` uniform points in the unit cube (Ding et al. (2021) eq. 28 in unit coordinates)."""
        return self.rng.random((n, self.dim))

    def state_dict(self) -> dict[str, Any]:
        """A deep copy of the full state (settings, RNG, population), for checkpoints."""
        return copy.deepcopy(dict(vars(self).items()))

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.__dict__.update(copy.deepcopy(dict(state)))

    def checkpoint_state(self) -> dict[str, Any]:
        """The state a checkpoint of :func:`~mechcalib.calibrate` stores (default :meth:`state_dict`). An
        optimiser that keeps every told residual vector leaves them out (they can be larger than the
        simulations are slow: 20 001 residuals each on the SDOF study), and :meth:`restore_told` gives them
        back from the stored responses on resume."""
        return self.state_dict()

    def checkpoint_copy(self) -> Optimizer:
        """An unlinked copy of this optimiser holding :meth:`checkpoint_state`, for an optimiser that keeps this
        one in its own checkpoint (``auto``'s polisher or CMA-ES)."""
        light = copy.copy(self)
        light.__dict__ = self.checkpoint_state()
        return light

    def restore_told(self, U: np.ndarray, R: np.ndarray) -> None:
        """After a checkpoint's state was loaded: the residuals ``(n, m)`` (NaN rows: failed) of the
        unit-cube points ``U`` the checkpoint covers, for the vectors :meth:`checkpoint_state` left out;
        raises ``ValueError`` when one is still missing. Default: nothing was left out."""
        return None


@functools.cache
def declared_settings(cls: type[Optimizer]) -> frozenset[str]:
    """The names of the settings of ``cls``: the named parameters of the ``__init__`` of the class and its
    bases (an optimiser's constructor takes its settings as keywords)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        for p in list(inspect.signature(init).parameters.values())[1:]:  # after self
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
                names.add(p.name)
    return frozenset(names)


def check_positive_int(owner: str, name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise SettingError(owner, name, f"an integer >= {minimum}", value)
    return int(value)


def check_bool(owner: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise SettingError(owner, name, "true or false", value)
    return bool(value)


def check_range(owner: str, name: str, value: Any, lo: float, hi: float, *, lo_open=False, hi_open=False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SettingError(owner, name, "a number", value) from None
    ok = (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
    if not ok or not np.isfinite(v) and hi != np.inf:
        lb = "(" if lo_open else "["
        ub = ")" if hi_open else "]"
        raise SettingError(
            owner,
            name,
            f"a value in {lb}{lo}, {hi}{ub}",
            value,
            message=f"{owner}: {name} must lie in {lb}{lo}, {hi}{ub}, got {value!r}",
        )
    return v


def check_unit_points(owner: str, name: str, value: Any) -> list[list[float]]:
    """Unit-cube points (one point, or a list of them) as rows of floats, every coordinate in ``[0, 1]``."""
    rule = "unit-cube points: numbers in [0, 1], one list per point"
    try:
        X = np.atleast_2d(np.asarray(value, dtype=float))
    except (TypeError, ValueError):
        raise SettingError(owner, name, rule, value) from None
    if X.ndim != 2 or X.size == 0 or not np.all((X >= 0.0) & (X <= 1.0)):  # NaN fails the comparison
        raise SettingError(owner, name, rule, value)
    return X.tolist()


def check_choice(owner: str, name: str, value: Any, choices: tuple) -> Any:
    if value not in choices:
        raise SettingError(owner, name, f"one of {list(choices)}", value)
    return value


def reflect(X: np.ndarray) -> np.ndarray:
    """Fold points back into ``[0, 1]`` by reflection at the walls (keeps the step's distribution)."""
    X = np.mod(X, 2.0)
    return np.where(X > 1.0, 2.0 - X, X)
