"""The model protocol every forward model follows.

A model owns its parameter space (names, units, default search bounds, fixed values), its named output
channels and named parameter presets (``"paper"``: the case the seed reports). ``simulate`` is batched:
it takes ``(n, len(space))`` full parameter arrays in physical units and returns ``n`` responses, each a
``{channel: Curve}`` mapping, or a :class:`SimulationFailure` where that parameter set failed, so that one
bad set never fails its batch. Compiled kernels loop over the batch.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .data import Curve
from ..errors import ConfigurationError
from .parameters import ParameterSpace

Response = Mapping[str, Curve]


@dataclass(frozen=True)
class SimulationFailure:
    """Marks a parameter set whose simulation failed; ``message`` says why."""

    message: str

    def __bool__(self) -> bool:
        return False


@dataclass(frozen=True)
class Channel:
    """Description of one output channel: ``y_name [y_unit]`` against ``x_name [x_unit]``."""

    name: str
    x_name: str
    y_name: str
    x_unit: str = ""
    y_unit: str = ""
    description: str = ""


class Model(ABC):
    """Base class of forward models.

    Subclasses set ``name``, ``space`` (a :class:`ParameterSpace` whose bounds are the documented default
    search bounds), ``channels``, ``presets`` (``{preset: {parameter: value}}``, with a ``"default"`` entry
    that reproduces the seed's test case) and implement :meth:`simulate`.
    """

    name: ClassVar[str] = "model"
    description: ClassVar[str] = ""
    space: ParameterSpace
    channels: tuple[Channel, ...]
    presets: Mapping[str, Mapping[str, float]]
    default_conditions: Mapping[str, Any] = {}

    @abstractmethod
    def simulate(self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None) -> list[Response | SimulationFailure]:
        """Simulate ``theta`` of shape ``(n, len(self.space))`` (physical units, model order)."""

    # -- helpers shared by all models -----------------------------------------------------
    @property
    def channel_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.channels)

    def preset(self, name: str = "default") -> dict[str, float]:
        try:
            return dict(self.presets[name])
        except KeyError:
            raise ConfigurationError(f"model {self.name!r} has no preset {name!r}; presets are {sorted(self.presets)}") from None

    def full_vector(self, values: Mapping[str, float] | None = None, preset: str = "default") -> np.ndarray:
        """A full parameter vector from a preset, overridden by ``values``."""
        p = self.preset(preset)
        for k, v in (values or {}).items():
            if k not in self.space.names:
                raise ConfigurationError(f"model {self.name!r} has no parameter {k!r}; parameters are {list(self.space.names)}")
            p[k] = float(v)
        missing = [n for n in self.space.names if n not in p]
        if missing:
            raise ConfigurationError(f"model {self.name!r}: preset {preset!r} lacks values for {missing}")
        return np.array([p[n] for n in self.space.names])

    def check_theta(self, theta: np.ndarray) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        if theta.ndim == 1:
            theta = theta[None, :]
        if theta.ndim != 2 or theta.shape[1] != len(self.space):
            raise ConfigurationError(
                f"model {self.name!r} takes parameter arrays of shape (n, {len(self.space)}) ordered as "
                f"{list(self.space.names)}, got shape {theta.shape}"
            )
        return theta

    def conditions(self, conditions: Mapping[str, Any] | None) -> dict[str, Any]:
        """Default conditions overridden by ``conditions``; unknown names are an error."""
        out = dict(self.default_conditions)
        for k, v in (conditions or {}).items():
            if k not in out:
                raise ConfigurationError(
                    f"model {self.name!r} has no condition {k!r}; conditions are {sorted(out)}"
                )
            out[k] = v
        return out
