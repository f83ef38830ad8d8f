"""A damped linear oscillator released from rest at a unit displacement: ``x'' + 2 zeta omega x' + omega^2 x = 0``.

Closed form (under-damped, ``0 < zeta < 1``): ``x(t) = exp(-zeta omega t) (cos(omega_d t) + zeta omega / omega_d
sin(omega_d t))`` with ``omega_d = omega sqrt(1 - zeta^2)``. The whole batch is one numpy expression.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mechcalib.core.data import Curve
from mechcalib.core.model import Channel, Model, Response, SimulationFailure
from mechcalib.core.parameters import Parameter, ParameterSpace
from mechcalib.errors import SettingError


class DampedOscillator(Model):
    """Free decay of a damped linear oscillator.

    Parameters: natural angular frequency ``omega`` [rad/s] and damping ratio ``zeta`` [-].
    Conditions: duration ``t_end`` [s] and number of samples ``n_points``.
    Option: ``amplitude``, the initial displacement [mm] (a constructor keyword: ``[model] options``).
    """

    name = "damped_oscillator"
    description = "free decay of a damped linear oscillator (closed form, numpy)"

    def __init__(self, *, amplitude: float = 1.0) -> None:
        if not (isinstance(amplitude, int | float) and np.isfinite(amplitude) and amplitude > 0):
            # a SettingError lets a config file report the problem on `model.options.amplitude`
            raise SettingError(self.name, "amplitude", "a finite number > 0", amplitude)
        self.amplitude = float(amplitude)
        self.space = ParameterSpace(
            [
                Parameter("omega", 1.0, 20.0, unit="rad/s", description="natural angular frequency"),
                Parameter("zeta", 0.01, 0.5, unit="-", description="damping ratio"),
            ]
        )
        self.channels = (Channel("displacement", "time", "displacement", "s", "mm"),)
        self.presets = {"default": {"omega": 6.0, "zeta": 0.1}}
        self.default_conditions = {"t_end": 3.0, "n_points": 200}

    def simulate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None
    ) -> list[Response | SimulationFailure]:
        theta = self.check_theta(theta)
        cond = self.conditions(conditions)
        t = np.linspace(0.0, float(cond["t_end"]), int(cond["n_points"]))
        omega, zeta = theta[:, :1], theta[:, 1:2]
        out: list[Response | SimulationFailure] = []
        ok = (omega[:, 0] > 0) & (zeta[:, 0] > 0) & (zeta[:, 0] < 1)
        wd = omega * np.sqrt(np.clip(1.0 - zeta * zeta, 1e-12, None))
        x = self.amplitude * np.exp(-zeta * omega * t) * (np.cos(wd * t) + zeta * omega / wd * np.sin(wd * t))
        for i in range(theta.shape[0]):
            if not ok[i]:  # one bad set fails alone, the rest of the batch goes on
                out.append(SimulationFailure(f"needs omega > 0 and 0 < zeta < 1, got {theta[i].tolist()}"))
                continue
            out.append({"displacement": Curve(t, x[i], x_name="time", y_name="displacement", x_unit="s", y_unit="mm")})
        return out
