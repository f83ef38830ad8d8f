"""A forced Duffing oscillator: the built-in demonstration model.

``m x'' + c x' + k x + k3 x^3 = F0 sin(Omega t)``, ``x(0) = x'(0) = 0``, integrated by classical RK4 in a
numba kernel that loops over the parameter batch in parallel. Two channels: the displacement history and the
restoring force ``k x + k3 x^3`` against the displacement (a loop, so its abscissa is not monotonic and the
objectives pair it by time).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numba as nb
import numpy as np

from ..core.data import Curve
from ..core.model import Channel, Model, Response, SimulationFailure, check_condition
from ..core.parameters import Parameter, ParameterSpace
from ..errors import ConfigurationError


@nb.njit(cache=True, fastmath=False)
def _rhs(x, v, t, m, c, k, k3, f0, omega):
    return v, (f0 * np.sin(omega * t) - c * v - k * x - k3 * x * x * x) / m


@nb.njit(parallel=True, cache=True)
def duffing_rk4(theta: np.ndarray, m: float, f0: float, omega: float, dt: float, n_out: int, sub: int) -> np.ndarray:
    """Batched RK4. ``theta``: ``(n, 3)`` rows ``(c, k, k3)``; returns ``(n, n_out)`` displacements sampled
    every ``sub`` steps of length ``dt`` (the first sample is t = 0)."""
    n = theta.shape[0]
    out = np.empty((n, n_out))
    for i in nb.prange(n):
        c, k, k3 = theta[i, 0], theta[i, 1], theta[i, 2]
        x, v, t = 0.0, 0.0, 0.0
        out[i, 0] = x
        for j in range(1, n_out):
            for _ in range(sub):
                k1x, k1v = _rhs(x, v, t, m, c, k, k3, f0, omega)
                k2x, k2v = _rhs(x + 0.5 * dt * k1x, v + 0.5 * dt * k1v, t + 0.5 * dt, m, c, k, k3, f0, omega)
                k3x, k3v = _rhs(x + 0.5 * dt * k2x, v + 0.5 * dt * k2v, t + 0.5 * dt, m, c, k, k3, f0, omega)
                k4x, k4v = _rhs(x + dt * k3x, v + dt * k3v, t + dt, m, c, k, k3, f0, omega)
                x += dt / 6.0 * (k1x + 2 * k2x + 2 * k3x + k4x)
                v += dt / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v)
                t += dt
            out[i, j] = x
    return out


class Duffing(Model):
    """Forced Duffing oscillator with calibrated damping ``c``, stiffness ``k`` and cubic stiffness ``k3``.

    Conditions: mass ``m`` [kg], force amplitude ``F0`` [N], angular frequency ``omega`` [rad/s], duration
    ``t_end`` [s], output sampling ``fs`` [Hz] and integration substeps per sample ``substeps``.
    """

    name = "duffing"
    description = "forced Duffing oscillator (RK4, numba); demonstration model"

    def __init__(self) -> None:
        self.space = ParameterSpace(
            [
                Parameter("c", 0.02, 1.0, unit="N*s/m", description="viscous damping"),
                Parameter("k", 0.2, 5.0, unit="N/m", description="linear stiffness"),
                Parameter("k3", 0.0, 2.0, unit="N/m^3", description="cubic stiffness"),
            ]
        )
        self.channels = (
            Channel("displacement", "time", "displacement", "s", "m"),
            Channel("restoring_force", "displacement", "restoring force", "m", "N"),
        )
        self.presets = {"default": {"c": 0.2, "k": 1.0, "k3": 0.5}}
        self.default_conditions = {"m": 1.0, "F0": 1.0, "omega": 1.2, "t_end": 30.0, "fs": 20.0, "substeps": 5}

    def validate_conditions(self, conditions: Mapping[str, Any] | None = None, *, n_sets: int = 1) -> dict[str, Any]:
        cond = super().validate_conditions(conditions, n_sets=n_sets)
        check_condition(self.name, "m", cond["m"], low=0.0, low_open=True)
        check_condition(self.name, "F0", cond["F0"])
        check_condition(self.name, "omega", cond["omega"])
        check_condition(self.name, "t_end", cond["t_end"], low=0.0, low_open=True)
        check_condition(self.name, "fs", cond["fs"], low=0.0, low_open=True)
        check_condition(self.name, "substeps", cond["substeps"], low=1, integer=True)
        n_out = round(float(cond["t_end"]) * float(cond["fs"])) + 1
        if n_out < 2:
            raise ConfigurationError(
                f"model {self.name!r}: t_end * fs must give at least two samples, got t_end={cond['t_end']!r}, "
                f"fs={cond['fs']!r}; lengthen t_end or raise fs"
            )
        # the kernel's output, the restoring force and the curves' copies: about four arrays per set
        self.check_memory(
            8.0 * n_out * (4 * max(n_sets, 1) + 1),
            f"a batch of {n_sets} set(s) of {n_out} samples",
            "lower fs or t_end, or simulate fewer parameter sets per batch",
        )
        return cond

    def simulate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None
    ) -> list[Response | SimulationFailure]:
        theta = self.check_theta(theta)
        cond = self.validate_conditions(conditions, n_sets=theta.shape[0])
        fs, sub = float(cond["fs"]), int(cond["substeps"])
        n_out = int(round(cond["t_end"] * fs)) + 1
        t = np.arange(n_out) / fs
        X = duffing_rk4(theta, float(cond["m"]), float(cond["F0"]), float(cond["omega"]), 1.0 / (fs * sub), n_out, sub)
        out: list[Response | SimulationFailure] = []
        for i in range(theta.shape[0]):
            x = X[i]
            if not np.all(np.isfinite(x)):
                out.append(SimulationFailure("the response diverged (non-finite displacement)"))
                continue
            force = theta[i, 1] * x + theta[i, 2] * x**3
            out.append(
                {
                    "displacement": Curve(t, x, t=t, x_name="time", y_name="displacement", x_unit="s", y_unit="m"),
                    "restoring_force": Curve(
                        x, force, t=t, x_name="displacement", y_name="restoring force", x_unit="m", y_unit="N"
                    ),
                }
            )
        return out
