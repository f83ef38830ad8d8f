"""Closed-form models for tests and peer comparisons."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core.data import MIN_POINTS, Curve
from ..core.model import Channel, Model, Response, SimulationFailure, check_condition
from ..core.parameters import Parameter, ParameterSpace


class Linear(Model):
    """``y = a x + b`` on ``x = 0 ... n_points - 1``: GrainLearning's linear-regression peer test
    (truth ``a = 0.2``, ``b = 5.0``; bounds ``a`` in [0.1, 1], ``b`` in [0.1, 10])."""

    name = "linear"
    description = "y = a*x + b (GrainLearning's linear-regression peer test)"

    def __init__(self) -> None:
        self.space = ParameterSpace([Parameter("a", 0.1, 1.0), Parameter("b", 0.1, 10.0)])
        self.channels = (Channel("y", "x", "y"),)
        self.presets = {"default": {"a": 0.2, "b": 5.0}}
        self.default_conditions = {"n_points": 100}

    def validate_conditions(self, conditions: Mapping[str, Any] | None = None, *, n_sets: int = 1) -> dict[str, Any]:
        cond = super().validate_conditions(conditions, n_sets=n_sets)
        check_condition(self.name, "n_points", cond["n_points"], low=MIN_POINTS, integer=True)
        self.check_memory(
            8.0 * int(cond["n_points"]) * (2 * max(n_sets, 1) + 1),
            f"a batch of {n_sets} set(s) of {int(cond['n_points'])} points",
            "lower n_points or simulate fewer parameter sets per batch",
        )
        return cond

    def simulate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None
    ) -> list[Response | SimulationFailure]:
        theta = self.check_theta(theta)
        x = np.arange(int(self.validate_conditions(conditions, n_sets=theta.shape[0])["n_points"]), dtype=float)
        Y = theta[:, :1] * x[None, :] + theta[:, 1:2]
        return [
            {"y": Curve(x, Y[i], x_name="x", y_name="y")}
            if np.all(np.isfinite(Y[i]))
            else SimulationFailure(f"non-finite line for a={theta[i, 0]!r}, b={theta[i, 1]!r}")
            for i in range(theta.shape[0])
        ]
