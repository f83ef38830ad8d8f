"""The affinity hydration model of cement paste (Mareš et al. (2016), section 4, eqs. 5-9).

Isothermal hydration at temperature ``T`` follows ``dα/dt = Ã_T(α)`` (eq. 5) with the normalised affinity
(eq. 8)::

    Ã_25(α) = B1 (B2/α∞ + α)(α∞ - α) exp(-η̄ α/α∞)

scaled to ``T`` by the Arrhenius factor of eq. 9, ``exp[Ea/R (1/298.15 - 1/(273.15 + T))]``. The released
heat is ``Q(t) = Q_pot α(t)`` (eq. 6) and the heat rate ``q(t) = Q_pot Ã_T(α(t))`` (eq. 7), per gram of
cement. Time is in hours throughout (``B1`` in 1/h, as in Table 1).

Parameters (Table 1 bounds; ``B2`` is searched on a log scale, so the unit cube coordinate of ``B2`` is
the paper's ``p2 = (log10 B2 + 6)/3``): ``B1`` [1/h], ``B2``, ``eta`` (η̄), ``alpha_inf`` (α∞), and three
that are fixed unless named in the ``fit`` option: ``Q_pot`` [J/g], ``Ea`` [J/mol] and ``t0`` [h], the
onset of hydration on the data's clock (section 9 corrects measured curves by hours): the model gives
``α(t) = α_model(t - t0)``, and ``α = 0`` before ``t0``.

Default ``Ea`` = 38.3 kJ/mol: the factor 1.651 that section 4 quotes for 35 °C implies
``Ea = R ln(1.651) / (1/298.15 - 1/308.15) = 38.3 kJ/mol``.

Two invariances matter when fitting heat data. (i) ``α = c β`` turns eq. 8 into the same equation for ``β``
with ``(c B1, B2/c², α∞/c)``, and ``Q = Q_pot α = (c Q_pot) β``: heat alone cannot separate ``Q_pot`` from
``B1, B2, α∞``, so ``Q_pot`` is fixed from the cement (or bounded through ``α∞ <= 1``). (ii) In the
dormant stage ``α ≈ B2 exp(B1 α∞ (t - t0))``: a later onset ``t0`` trades against a larger ``B2`` and only
the earliest measurements separate them.

The output grid (conditions ``t_min``, ``t_max``, ``n_steps``) is uniform in log time, 1161 steps as in
section 5, from 0.1 h to 1e5 h by default (see :func:`log_time_grid`). Mareš et al. (2016) does not state the
range; of the ranges tried, 0.1-1e5 h reproduces the paper's networks best (their hidden-layer sizes and
per-network errors, Tables 4 and 9-10: benchmarks/results/hydration_grid.md, docs/hydration.md), because it
reaches the plateau of the slow curves of Table 1's box (η̄ up to 12), which 0.1-1000 h cuts while they still
rise. The conditions change it (``t_max=1000`` gives the earlier default, which covers the six weeks over
which calorimetry runs last). The integrator
(:func:`integrate_alpha`) is explicit RK4 with substeps sized so that α changes by at most ``dalpha``
per substep and the step stays well inside RK4's stability region; with the default ``dalpha = 2e-3``
α agrees with a converged solver to within 1e-6 on the default grid (tests/test_hydration.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numba as nb
import numpy as np

from ...core.data import Curve
from ...core.model import Channel, Model, Response, SimulationFailure, check_condition
from ...core.parameters import Parameter, ParameterSpace
from ...errors import ConfigurationError
from .._twins import twin_kernels

R_GAS = 8.314  # J/(mol K), the value section 4 quotes
T_REF = 273.15 + 25.0  # K, reference temperature of eq. 9
EA_DEFAULT = 38300.0  # J/mol, from the factor 1.651 at 35 °C (section 4)
N_STEPS = 1161  # section 5
T_MIN, T_MAX = 0.1, 1.0e5  # h, default range of the log-time grid (see the module docstring)
PARALLEL_MIN = 64  # batches at least this large run threaded
LAM_H = 0.25  # largest |dÃ/dα| h per RK4 substep: local error ~ (LAM_H)^5/120 of the local scale

BASE_NAMES = ("B1", "B2", "eta", "alpha_inf")
EXTRA_NAMES = ("Q_pot", "Ea", "t0")


def arrhenius_factor(temperature_c: np.ndarray | float, ea: np.ndarray | float) -> np.ndarray:
    """Eq. 9: ``exp[Ea/R (1/298.15 - 1/(273.15 + T))]`` for ``T`` in °C and ``Ea`` in J/mol (broadcast)."""
    T = np.asarray(temperature_c, dtype=float) + 273.15
    return np.exp(np.asarray(ea, dtype=float) / R_GAS * (1.0 / T_REF - 1.0 / T))


def log_time_grid(t_min: float = T_MIN, t_max: float = T_MAX, n_steps: int = N_STEPS) -> np.ndarray:
    """``(n_steps,)`` times [h] uniform in ``log t`` from ``t_min`` to ``t_max`` (section 5: 1161 steps)."""
    if not (0 < t_min < t_max) or not math.isfinite(t_max):
        raise ConfigurationError(
            f"the time grid needs 0 < t_min < t_max (finite), got t_min={t_min!r}, t_max={t_max!r}"
        )
    if int(n_steps) < 2:
        raise ConfigurationError(f"the time grid needs n_steps >= 2, got {n_steps!r}")
    return np.geomspace(float(t_min), float(t_max), int(n_steps))


@nb.njit(cache=True, inline="always")
def _affinity(a, b1, b2, eta, ainf):
    """Eq. 8 (times the Arrhenius factor folded into ``b1``); zero at and beyond α∞."""
    if a >= ainf:
        return 0.0
    return b1 * (b2 / ainf + a) * (ainf - a) * np.exp(-eta * a / ainf)


@nb.njit(cache=True)
def _advance(a, dt, b1, b2, eta, ainf, dalpha):
    """Integrate eq. 5 from ``a`` over ``dt`` with RK4 substeps bounded by ``dalpha`` and stability."""
    rem = dt
    while rem > 0.0:
        f = _affinity(a, b1, b2, eta, ainf)
        # local stiffness |dÃ/dα| (eq. 8 differentiated) keeps h inside RK4's accurate region
        c = b2 / ainf
        lam = b1 * abs((ainf - a) - (c + a) - eta / ainf * (c + a) * (ainf - a)) * np.exp(-eta * a / ainf)
        h = rem
        if f * h > dalpha:
            h = dalpha / f
        if lam * h > LAM_H:
            h = LAM_H / lam
        h = min(rem, h)
        k1 = f
        k2 = _affinity(a + 0.5 * h * k1, b1, b2, eta, ainf)
        k3 = _affinity(a + 0.5 * h * k2, b1, b2, eta, ainf)
        k4 = _affinity(a + h * k3, b1, b2, eta, ainf)
        a = a + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        a = min(a, ainf)
        rem -= h
    return a


@nb.njit(cache=True)
def _integrate_row(params: np.ndarray, times: np.ndarray, dalpha: float, out: np.ndarray) -> None:
    """α of one parameter row ``(6,)`` at ``times`` into ``out`` ``(m,)`` (α = 0 up to the onset ``t0``)."""
    b1, b2, eta, ainf, t0 = params[0], params[1], params[2], params[3], params[4]
    a = 0.0
    s = 0.0  # model time since the onset
    for k in range(times.shape[0]):
        sk = times[k] - t0
        if sk <= 0.0:
            out[k] = 0.0
            continue
        a = _advance(a, sk - s, b1, b2, eta, ainf, dalpha)
        s = sk
        out[k] = a


def _integrate_alpha(params: np.ndarray, times: np.ndarray, dalpha: float) -> np.ndarray:
    """Kernel of :func:`integrate_alpha`, compiled threaded and serial (:func:`~mechcalib.models._twins.twin_kernels`)."""
    out = np.zeros((params.shape[0], times.shape[0]))
    for i in nb.prange(params.shape[0]):
        _integrate_row(params[i], times, dalpha, out[i])
    return out


_integrate_alpha_parallel, _integrate_alpha_serial = twin_kernels(_integrate_alpha)


def integrate_alpha(params: np.ndarray, times: np.ndarray, dalpha: float) -> np.ndarray:
    """Batched degree of hydration on a time grid (eqs. 5, 8, 9).

    Args:
        params: ``(n, 6)`` rows ``(B1 [1/h] times the Arrhenius factor, B2, eta, alpha_inf, t0 [h], unused)``.
        times: ``(m,)`` increasing times [h] on the data's clock.
        dalpha: largest change of α per RK4 substep.

    Returns:
        ``(n, m)`` α at ``times``; α = 0 where ``times <= t0``. Batches of 64 rows or more run threaded.
    """
    params = np.ascontiguousarray(params, dtype=np.float64)
    times = np.ascontiguousarray(times, dtype=np.float64)
    if params.shape[0] >= PARALLEL_MIN:
        return _integrate_alpha_parallel(params, times, float(dalpha))
    return _integrate_alpha_serial(params, times, float(dalpha))


@nb.njit(parallel=True, cache=True)
def affinity_rate(params: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """``(n, m)`` rates ``Ã_T(α)`` [1/h] for ``(n, m)`` α and ``(n, 6)`` params as in :func:`integrate_alpha`."""
    n, m = alpha.shape
    out = np.empty((n, m))
    for i in nb.prange(n):
        for k in range(m):
            out[i, k] = _affinity(alpha[i, k], params[i, 0], params[i, 1], params[i, 2], params[i, 3])
    return out


class Hydration(Model):
    """Affinity hydration model (Mareš et al. (2016) eqs. 5-9) with channels ``alpha``, ``heat`` [J/g] and
    ``heat_rate`` [J/(g h)] against time [h].

    Args:
        fit: which of ``Q_pot``, ``Ea``, ``t0`` are searched besides ``B1, B2, eta, alpha_inf``.
        Q_pot: potential heat [J/g] used when not fitted.
        Ea: activation energy [J/mol] used when not fitted (default 38.3 kJ/mol, section 4).
        t0: onset of hydration on the data's clock [h] used when not fitted.

    Conditions: ``T`` [°C] (isothermal temperature, default 25), ``t_min``, ``t_max`` [h] and ``n_steps`` of
    the log-time grid (0.1 h, 1e5 h, 1161), ``dalpha`` (integrator accuracy, 2e-3).
    """

    name = "hydration"
    description = "affinity hydration model of cement (Mareš et al. (2016) eqs. 5-9), numba RK4 on a log-time grid"

    def __init__(
        self, *, fit: Sequence[str] = (), Q_pot: float = 500.0, Ea: float = EA_DEFAULT, t0: float = 0.0
    ) -> None:
        fit = tuple(fit)
        bad = [f for f in fit if f not in EXTRA_NAMES]
        if bad:
            raise ConfigurationError(
                f"fit may name {list(EXTRA_NAMES)}, got {bad}; B1, B2, eta, alpha_inf are always searched"
            )
        fixed = {"Q_pot": float(Q_pot), "Ea": float(Ea), "t0": float(t0)}
        self.space = ParameterSpace(
            [
                Parameter("B1", 0.1, 1.0, unit="1/h", description="affinity coefficient (Table 1)"),
                Parameter("B2", 1e-6, 1e-3, scale="log", description="affinity coefficient (Table 1, log scale)"),
                Parameter("eta", 2.0, 12.0, description="microdiffusion of free water, η̄ (Table 1)"),
                Parameter("alpha_inf", 0.7, 1.0, description="ultimate degree of hydration α∞ (Table 1)"),
                Parameter(
                    "Q_pot",
                    100.0,
                    700.0,
                    unit="J/g",
                    fixed=None if "Q_pot" in fit else fixed["Q_pot"],
                    description="potential heat of hydration (eq. 6)",
                ),
                Parameter(
                    "Ea",
                    20000.0,
                    70000.0,
                    unit="J/mol",
                    fixed=None if "Ea" in fit else fixed["Ea"],
                    description="activation energy (eq. 9)",
                ),
                Parameter(
                    "t0",
                    -6.0,
                    6.0,
                    unit="h",
                    fixed=None if "t0" in fit else fixed["t0"],
                    description="onset of hydration on the data's clock (section 9 time correction)",
                ),
            ]
        )
        self.channels = (
            Channel("alpha", "time", "degree of hydration", "h", "", "α(t), eq. 5"),
            Channel("heat", "time", "heat", "h", "J/g", "Q(t) = Q_pot α(t), eq. 6"),
            Channel("heat_rate", "time", "heat rate", "h", "J/(g h)", "q(t) = Q_pot Ã_T(α), eq. 7"),
        )
        self.presets = {
            # the centre of Table 1's standardised box
            "default": {"B1": 0.55, "B2": 10**-4.5, "eta": 7.0, "alpha_inf": 0.85, **fixed},
            # the central parameters of the COST TU1404 peer study (README of the reference data)
            "cost_tu1404": {
                "B1": 2.916e-4 * 3600.0,
                "B2": 2.4229e-3,
                "eta": 5.554,
                "alpha_inf": 0.875,
                "Q_pot": 500.0,
                "Ea": 47002.0,
                "t0": 0.0,
            },
        }
        self.default_conditions = {"T": 25.0, "t_min": T_MIN, "t_max": T_MAX, "n_steps": N_STEPS, "dalpha": 2e-3}

    # -- numerical core ---------------------------------------------------------------------------
    def kernel_params(self, theta: np.ndarray, temperature: float) -> np.ndarray:
        """``(n, 7)`` full parameters -> ``(n, 6)`` rows for :func:`integrate_alpha` at ``temperature`` °C."""
        theta = self.check_theta(theta)
        out = np.zeros((theta.shape[0], 6))
        out[:, 0] = theta[:, 0] * arrhenius_factor(temperature, theta[:, 5])
        out[:, 1:4] = theta[:, 1:4]
        out[:, 4] = theta[:, 6]
        return out

    def validate_conditions(self, conditions: Mapping[str, Any] | None = None, *, n_sets: int = 1) -> dict[str, Any]:
        cond = super().validate_conditions(conditions, n_sets=n_sets)
        check_condition(self.name, "T", cond["T"], low=-273.15, low_open=True, fix="T is in degrees Celsius")
        check_condition(self.name, "t_min", cond["t_min"], low=0.0, low_open=True)
        check_condition(self.name, "t_max", cond["t_max"], low=0.0, low_open=True)
        if not float(cond["t_min"]) < float(cond["t_max"]):
            raise ConfigurationError(
                f"the time grid needs 0 < t_min < t_max (finite), got t_min={cond['t_min']!r}, t_max={cond['t_max']!r}"
            )
        check_condition(self.name, "n_steps", cond["n_steps"], low=2, integer=True)
        check_condition(self.name, "dalpha", cond["dalpha"], low=0.0, low_open=True, high=1.0)
        # alpha, the rate and the heat and heat-rate curves: four arrays per set
        m = int(cond["n_steps"])
        self.check_memory(
            8.0 * m * (4 * max(n_sets, 1) + 1),
            f"a batch of {n_sets} set(s) on {m} time steps",
            "lower n_steps or simulate fewer parameter sets per batch",
        )
        return cond

    def alpha(
        self, theta: np.ndarray, times: np.ndarray | None = None, conditions: Mapping[str, Any] | None = None
    ) -> np.ndarray:
        """``(n, m)`` degree of hydration for ``(n, 7)`` full parameters on ``times`` (default: the grid)."""
        cond = self.validate_conditions(conditions)
        t = self.grid(cond) if times is None else np.asarray(times, dtype=float)
        return integrate_alpha(self.kernel_params(theta, float(cond["T"])), t, float(cond["dalpha"]))

    def channel_array(
        self, theta: np.ndarray, channel: str, x: np.ndarray | None = None, conditions: Mapping[str, Any] | None = None
    ) -> np.ndarray:
        """``(n, m)`` values of one channel (``alpha``, ``heat`` or ``heat_rate``) for ``(n, 7)`` full parameters
        at the times ``x`` [h] (default: the grid), without building curves: the fast path of batch calibrations."""
        cond = self.validate_conditions(conditions)
        t = self.grid(cond) if x is None else np.asarray(x, dtype=float)
        kp = self.kernel_params(theta, float(cond["T"]))
        A = integrate_alpha(kp, t, float(cond["dalpha"]))
        if channel == "alpha":
            return A
        q = self.check_theta(theta)[:, 4:5]
        if channel == "heat":
            return q * A
        if channel == "heat_rate":
            rate = affinity_rate(kp, A)
            rate[t[None, :] <= kp[:, 4:5]] = 0.0
            return q * rate
        raise ConfigurationError(
            f"model {self.name!r} has no channel {channel!r}; channels are {list(self.channel_names)}"
        )

    def grid(self, conditions: Mapping[str, Any] | None = None) -> np.ndarray:
        cond = self.conditions(conditions)
        return log_time_grid(float(cond["t_min"]), float(cond["t_max"]), int(cond["n_steps"]))

    def simulate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None
    ) -> list[Response | SimulationFailure]:
        theta = self.check_theta(theta)
        cond = self.validate_conditions(conditions, n_sets=theta.shape[0])
        t = self.grid(cond)
        kp = self.kernel_params(theta, float(cond["T"]))
        A = integrate_alpha(kp, t, float(cond["dalpha"]))
        rate = affinity_rate(kp, A)
        rate[t[None, :] <= kp[:, 4:5]] = 0.0
        out: list[Response | SimulationFailure] = []
        for i in range(theta.shape[0]):
            problem = _invalid(theta[i])
            if problem or not np.all(np.isfinite(A[i])):
                out.append(SimulationFailure(problem or "non-finite degree of hydration"))
                continue
            q = theta[i, 4]
            out.append(
                {
                    "alpha": Curve(t, A[i], x_name="time", y_name="degree of hydration", x_unit="h"),
                    "heat": Curve(t, q * A[i], x_name="time", y_name="heat", x_unit="h", y_unit="J/g"),
                    "heat_rate": Curve(t, q * rate[i], x_name="time", y_name="heat rate", x_unit="h", y_unit="J/(g h)"),
                }
            )
        return out


def _invalid(row: np.ndarray) -> str | None:
    """Why a full parameter row is outside the model's physical range (``None`` if valid)."""
    b1, b2, eta, ainf = row[:4]
    if not (b1 > 0 and b2 > 0 and ainf > 0 and np.isfinite(eta)):
        return f"B1, B2 and alpha_inf must be positive and eta finite, got B1={b1!r}, B2={b2!r}, alpha_inf={ainf!r}, eta={eta!r}"
    return None
