"""Helpers shared by the hysteretic structure models: force histories and curve building."""

from __future__ import annotations

import hashlib
import math
import warnings
import weakref
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.data import Curve
from ...core.model import Model, Response, SimulationFailure, check_condition
from ...errors import ConfigurationError
from ...records import Excitation, bandwidth, excitation
from . import steps as _steps
from .integrate import OK, batch_force, batch_grid, batch_system, integrate_batch, system_rows

SINE, TABLE, HERMITE = 0, 1, 2
#: the model unit of each excitation condition
UNITS = {"force": "N", "ground_acceleration": "m/s^2"}
#: the records each model object has checked (:meth:`BatchedModel._first_check`); weak, so that a dead model's
#: entry goes with it, and not on the object, so that its pickle (the fingerprint) stays put
_CHECKED: weakref.WeakKeyDictionary[BatchedModel, set[str]] = weakref.WeakKeyDictionary()
_STAGE_CACHE: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def force_history(force: Any) -> tuple[np.ndarray, np.ndarray]:
    """A tabulated force history ``(t, F)`` from a condition value (any form :func:`mechcalib.records.excitation`
    accepts: a file path or table, a pair ``(t, F)``, a ``(K, 2)`` array, ``{"t": ..., "force": ...}``)."""
    exc = excitation(force, name="force", unit="N")
    assert exc is not None
    return exc.t, exc.values


@dataclass(frozen=True)
class Loading:
    """What drives a batch: the sine (``mode`` SINE, ``amp`` [N], ``omega`` [rad/s]) or a measured record
    (``mode`` TABLE, ``exc``), as a force or a ground acceleration (``ground``), over ``t_end`` [s]."""

    mode: int
    amp: float
    omega: float
    exc: Excitation | None
    ground: bool
    t_end: float


def loading(cond: Mapping[str, Any], default_t_end: float, model: str = "the model") -> Loading:
    """The :class:`Loading` of validated conditions."""
    force, ground = cond["force"], cond.get("ground_acceleration")
    if force is not None and ground is not None:
        raise ConfigurationError(
            f"{model}: give the condition 'force' or 'ground_acceleration', not both (the record drives the model "
            "either as a force or through its base)"
        )
    if force is None and ground is None:
        t_end = default_t_end if cond["t_end"] is None else float(cond["t_end"])
        return Loading(SINE, float(cond["amplitude"]), float(cond["omega"]), None, False, t_end)
    name = "force" if ground is None else "ground_acceleration"
    exc = excitation(force if ground is None else ground, name=name, unit=UNITS[name], model=model)
    assert exc is not None
    t_end = float(exc.t[-1]) if cond["t_end"] is None else float(cond["t_end"])
    return Loading(TABLE, 0.0, 0.0, exc, ground is not None, t_end)


def stage_table(
    load: Loading, dt_out: float, n_out: int, steps: tuple[int, int]
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """``(mode, t, F, dF/dt)`` of the table the kernels read (:class:`.integrate.ForceHistory`): the record
    itself for ``linear`` interpolation (mode 1, the kernels' own), else the record's interpolant and its
    slope on a grid holding every RK4 stage time and every output time (mode 2, cubic Hermite between the
    nodes: exact at the stages, error ~ (omega delta)^4 / 384 at the times a located switch cuts a step)."""
    exc = load.exc
    if exc is None:
        return SINE, np.zeros(2), np.zeros(2), np.zeros(2)
    if exc.interpolation == "linear":
        return TABLE, exc.t, exc.values, np.zeros(2)
    substeps, per_step = steps
    h = dt_out * per_step / substeps
    n_steps = ((n_out - 1) * substeps + per_step - 1) // per_step
    delta = 0.5 * min(h, dt_out)
    n = int(math.ceil(n_steps * h / delta - 1e-9)) + 1
    # keyed by the record's content: a run evaluates one record at one setting over and over, and the table
    # costs about a third of a simulation to build
    digest = hashlib.blake2b(exc.t.tobytes() + exc.values.tobytes(), digest_size=16).hexdigest()
    key = (digest, exc.interpolation, exc.period, delta, n)
    hit = _STAGE_CACHE.get(key)
    if hit is not None:
        return HERMITE, *hit
    t = delta * np.arange(n)
    tab = (t, exc.at(t), exc.slopes_at(t))
    _STAGE_CACHE.clear()  # one table kept
    _STAGE_CACHE[key] = tab
    return (HERMITE, *tab)


def output_grid(t_end: float, fs: float) -> tuple[int, float]:
    if not (np.isfinite(fs) and fs > 0):
        raise ConfigurationError(f"the sampling rate fs must be positive, got {fs!r}")
    if not (np.isfinite(t_end) and t_end > 0):
        raise ConfigurationError(f"the duration t_end must be positive, got {t_end!r}")
    n_out = round(t_end * fs) + 1
    if n_out < 2:
        raise ConfigurationError(f"t_end * fs must give at least two samples, got t_end={t_end!r}, fs={fs!r}")
    return n_out, 1.0 / fs


def time_curve(t: np.ndarray, y: np.ndarray, y_name: str, y_unit: str) -> Curve:
    return Curve(t, y, t=t, x_name="time", y_name=y_name, x_unit="s", y_unit=y_unit)


def check_substeps(substeps: int, what: str = "substeps") -> int:
    if not isinstance(substeps, (int, np.integer)) or isinstance(substeps, bool) or substeps < 1:
        raise ConfigurationError(f"{what} must be a positive integer, got {substeps!r}")
    return int(substeps)


def run_batch(
    laws: np.ndarray,
    A: np.ndarray,
    Minv_K: np.ndarray,
    Minv_C: np.ndarray,
    Minv_p: np.ndarray,
    Minv_Tt: np.ndarray,
    T: np.ndarray,
    plan: Plan,
    locate_events: bool,
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The output times and :func:`.integrate.integrate_batch`'s arrays for a batch under the :class:`Plan`
    ``plan``; the matrices as documented there. ``Minv_p`` is the force's pattern; under a ground acceleration
    the caller passes the base's (``-1`` per degree of freedom moving with the ground), and the accelerations
    returned are absolute (relative ones plus the ground's)."""
    load, dt, n_out = plan.load, plan.dt_out, plan.n_out
    substeps, per_step = plan.steps
    mode, ft, fv, fd = stage_table(load, dt, n_out, plan.steps)
    res = integrate_batch(
        batch_system(laws, A, system_rows(Minv_K, Minv_C, Minv_p, Minv_Tt), T),
        batch_force(mode, load.amp, load.omega, ft, fv, fd),
        batch_grid(dt, n_out, substeps, samples_per_step=per_step, locate_events=locate_events),
    )
    t = np.arange(n_out) * dt
    if load.ground and load.exc is not None:
        res[2][...] += np.interp(t, ft, fv)[None, :, None]  # on the table's grid: its values at the samples
    return t, res


@dataclass(frozen=True)
class Plan:
    """A batch's validated conditions ``cond``, its :class:`Loading`, output grid (``dt_out`` [s], ``n_out``)
    and RK4 ``steps`` ``(substeps, samples_per_step)``."""

    cond: dict[str, Any]
    load: Loading
    dt_out: float
    n_out: int
    steps: tuple[int, int]


class LazyResponse(Mapping[str, Curve]):
    """A response whose curves are built (and validated) on first access: an identification reads one or
    a few of a model's channels, and building the others cost about as much as a fifth of a simulation."""

    def __init__(self, make: Mapping[str, Callable[[], Curve]]) -> None:
        self._make = dict(make)
        self._built: dict[str, Curve] = {}

    def __getitem__(self, name: str) -> Curve:
        if name not in self._built:
            self._built[name] = self._make[name]()  # KeyError for an unknown channel, as a dict
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._make)

    def __len__(self) -> int:
        return len(self._make)


class BatchedModel(Model):
    """A model whose ``integrate(theta, conditions)`` returns a batch's raw arrays (with ``status`` and ``a``);
    :meth:`simulate` turns them into one response per set with :meth:`response_at`, or a failure.

    Conditions (validated by :meth:`validate_conditions`): ``amplitude`` and ``omega`` of the sine force, or a
    measured ``force`` or ``ground_acceleration`` (:func:`mechcalib.records.excitation`), ``t_end`` (``None``:
    :attr:`default_t_end` for the sine, the record's end for a record) and the sampling rate ``fs``.

    Steps: the subclass's explicit setting, the papers' defaults under the sine, and under a record the rule of
    :mod:`.steps`; the first simulation of each record checks convergence (:meth:`check_steps`) and warns."""

    #: what a rejected input (status -1) violated
    invalid_input: str = "parameters must be finite"
    #: duration [s] of a sine-loaded record when the condition ``t_end`` is ``None``
    default_t_end: float = 20.0
    file_conditions = ("force", "ground_acceleration")
    condition_help = {
        "amplitude": "[N] amplitude of the sine force amplitude * sin(omega t) (without a record)",
        "omega": "[rad/s] circular frequency of the sine force",
        "force": "[N] a measured force replacing the sine: a file path, a table {path, column, time | fs, units, "
        "period, interpolation, preprocess, node} or arrays (docs/lab_records.md)",
        "ground_acceleration": "[m/s^2] a measured base acceleration (same forms as force); displacements are "
        "then relative to the ground, accelerations absolute",
        "t_end": "[s] duration (None: the record's end, or the sine's default)",
        "fs": "[Hz] output sampling rate of every channel",
    }
    #: raw arrays the convergence check compares
    checked_arrays: tuple[str, ...] = ("u", "a")

    @abstractmethod
    def floats_per_sample(self) -> int:
        """Floats the integrator stores per output sample and parameter set (the memory estimate)."""

    @abstractmethod
    def natural_frequencies(self) -> np.ndarray:
        """The natural frequencies [Hz] of the model at rest (elastic components) at its default preset."""

    @abstractmethod
    def explicit_steps(self) -> tuple[int, int] | None:
        """``(substeps, samples_per_step)`` the user set, ``None`` for the automatic choice."""

    @abstractmethod
    def sine_steps(self) -> tuple[int, int]:
        """The documented steps under the papers' sine force."""

    def max_samples_per_step(self) -> int:
        return 1

    def plan(self, conditions: Mapping[str, Any] | None = None, *, n_sets: int = 1, steps=None) -> Plan:
        """Validated conditions, loading, output grid and steps (``steps`` overrides the choice)."""
        cond = self.validate_conditions(conditions, n_sets=n_sets)
        load = loading(cond, self.default_t_end, self.name)
        n_out, dt = output_grid(load.t_end, float(cond["fs"]))
        if steps is None:
            steps = self.explicit_steps()
        if steps is None:
            if load.exc is None:
                steps = self.sine_steps()
            else:
                f = max(bandwidth(load.exc.t, load.exc.values), float(np.max(self.natural_frequencies())))
                steps = _steps.choose_steps(dt, f, self.max_samples_per_step())
        return Plan(cond, load, dt, n_out, (int(steps[0]), int(steps[1])))

    def validate_conditions(self, conditions: Mapping[str, Any] | None = None, *, n_sets: int = 1) -> dict[str, Any]:
        cond = super().validate_conditions(conditions, n_sets=n_sets)
        if cond["force"] is None and cond.get("ground_acceleration") is None:
            check_condition(self.name, "amplitude", cond["amplitude"])
            check_condition(self.name, "omega", cond["omega"])
        if cond["t_end"] is not None:
            check_condition(self.name, "t_end", cond["t_end"], low=0.0, low_open=True)
        check_condition(self.name, "fs", cond["fs"], low=0.0, low_open=True)
        load = loading(cond, self.default_t_end, self.name)  # parses and checks a record
        n_out, _ = output_grid(load.t_end, float(cond["fs"]))
        self.check_memory(
            8.0 * n_out * self.floats_per_sample() * max(n_sets, 1),
            f"a batch of {n_sets} set(s) of {n_out} samples ({load.t_end:g} s at {float(cond['fs']):g} Hz)",
            "lower fs or t_end, or simulate fewer parameter sets per batch",
        )
        if load.exc is not None:
            self._check_sampling(load.exc, float(cond["fs"]))
        return cond

    def _check_sampling(self, exc: Excitation, fs: float) -> None:
        fn = float(np.max(self.natural_frequencies()))
        if exc.record.fs < 2.0 * fn:
            warnings.warn(
                f"{self.name}: {exc.record.label} is sampled at {exc.record.fs:.6g} Hz, below twice the model's "
                f"highest natural frequency {fn:.6g} Hz (rule: its Nyquist frequency must reach the model's "
                "dynamics): the record cannot hold what excites them; use a record sampled faster, or check the "
                "model's mass and stiffness",
                _steps.StepWarning,
                stacklevel=3,
            )
        if fs < 2.0 * fn:
            warnings.warn(
                f"{self.name}: the output sampling rate fs = {fs:.6g} Hz is below twice the model's highest natural "
                f"frequency {fn:.6g} Hz: the response channels alias it; raise the condition fs",
                _steps.StepWarning,
                stacklevel=3,
            )

    @abstractmethod
    def integrate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None, *, steps=None
    ) -> dict[str, np.ndarray]:
        """The raw arrays of a batch (``status``, ``a`` and the model's own), at ``steps`` if given."""

    @abstractmethod
    def response_at(self, res: Mapping[str, np.ndarray], i: int) -> Response:
        """The channels of set ``i`` of the raw arrays ``res``."""

    def check_steps(self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None) -> str | None:
        """Under a measured record: the convergence check of the first set of ``theta`` (the response at the
        chosen steps against twice as many, :mod:`.steps`), as a message; ``None`` under the sine. Warns
        (:class:`.steps.StepWarning`) when the difference exceeds the tolerance."""
        chk = self.step_check(np.atleast_2d(theta)[:1], conditions)
        if chk is None:
            return None
        msg = chk.message(self.name)
        if not chk.ok:
            warnings.warn(msg, _steps.StepWarning, stacklevel=2)
        return msg

    def step_check(self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None, ref=None):
        """The :class:`.steps.StepCheck` of set 0 of ``theta`` (``ref``: its raw arrays at the chosen steps,
        if already computed); ``None`` under the sine or when set 0 failed."""
        plan = self.plan(conditions)
        if plan.load.exc is None:
            return None
        if ref is None:
            ref = self.integrate(theta[:1], conditions, steps=plan.steps)
        if ref["status"][0] != OK:
            return None
        fine_steps = _steps.finer(plan.steps)
        fine = self.integrate(theta[:1], conditions, steps=fine_steps)
        if fine["status"][0] != OK:
            return None
        diff, which = _steps.compare(ref, fine, self.checked_arrays)
        return _steps.StepCheck(diff, which, plan.steps, fine_steps)

    def simulate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None
    ) -> list[Response | SimulationFailure]:
        res = self.integrate(theta, conditions)
        self._first_check(theta, conditions, res)
        out: list[Response | SimulationFailure] = []
        for i, st in enumerate(res["status"]):
            if st == -1:
                out.append(SimulationFailure(self.invalid_input))
            elif st != OK or not np.all(np.isfinite(res["a"][i])):
                out.append(SimulationFailure("the response diverged (non-finite or > 1e100 state)"))
            else:
                out.append(self.response_at(res, i))
        return out

    def _first_check(self, theta: np.ndarray, conditions: Mapping[str, Any] | None, res) -> None:
        """The convergence check on the first simulation of each record (once per model object and record)."""
        cond = conditions or {}
        rec = cond.get("force", None), cond.get("ground_acceleration", None)
        if rec == (None, None):
            return
        key = repr(rec)[:2000]
        done = _CHECKED.setdefault(self, set())
        if key in done:
            return
        done.add(key)
        theta = np.atleast_2d(np.asarray(theta, float))
        if res["status"][0] != OK:
            return
        one = {k: (v[:1] if isinstance(v, np.ndarray) and v.ndim > 1 else v) for k, v in res.items()}
        chk = self.step_check(theta[:1], conditions, ref=one)
        if chk is not None and not chk.ok:
            warnings.warn(chk.message(self.name), _steps.StepWarning, stacklevel=3)
