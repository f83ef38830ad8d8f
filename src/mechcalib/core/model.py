"""The model protocol every forward model follows.

A model owns its parameter space (names, units, default search bounds, fixed values), its named output
channels and named parameter presets (``"paper"``: the case the seed reports). ``simulate`` is batched:
it takes ``(n, len(space))`` full parameter arrays in physical units and returns ``n`` responses, each a
``{channel: Curve}`` mapping, or a :class:`SimulationFailure` where that parameter set failed, so that one
bad set never fails its batch. Compiled kernels loop over the batch.

Every optional capability the engine uses is declared on :class:`Model` with a no-op default, under a name
no model uses for anything else, so that the engine calls it directly instead of looking a method up by name:
:meth:`Model.validate_conditions` (checked conditions, before any allocation), :meth:`Model.prepare_shared`
(state shared by every simulation, built once before workers start) and :meth:`Model.channel_array` (one
channel as an array, the fast path of direct curve fits; ``None`` when unsupported).
"""

from __future__ import annotations

import math
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import ConfigurationError
from .data import Curve
from .parameters import ParameterSpace

Response = Mapping[str, Curve]

#: environment variable overriding the memory a single simulation batch may request (GiB)
MEMORY_LIMIT_ENV = "MECHCALIB_MEMORY_LIMIT_GIB"
GIB = float(2**30)


def memory_limit_bytes() -> float:
    """Bytes a model may allocate for one batch: ``$MECHCALIB_MEMORY_LIMIT_GIB`` if set, else the machine's
    physical memory (an allocation beyond it can only swap or be killed), else 16 GiB."""
    env = os.environ.get(MEMORY_LIMIT_ENV)
    if env:
        try:
            gib = float(env)
        except ValueError:
            gib = math.nan
        if not (math.isfinite(gib) and gib > 0):
            raise ConfigurationError(f"${MEMORY_LIMIT_ENV} must be a positive number of GiB, got {env!r}")
        return gib * GIB
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return 16 * GIB


def check_condition(
    model: str,
    key: str,
    value: Any,
    *,
    low: float | None = None,
    low_open: bool = False,
    high: float | None = None,
    high_open: bool = False,
    integer: bool = False,
    fix: str = "",
) -> None:
    """Refuse a condition value that is not a finite real number (an integer with ``integer``) inside
    ``[low, high]`` (open ends with ``low_open`` / ``high_open``), with a message naming the rule."""
    kind = "an integer" if integer else "a finite number"
    bounds = []
    if low is not None:
        bounds.append(f"{'>' if low_open else '>='} {low!r}")
    if high is not None:
        bounds.append(f"{'<' if high_open else '<='} {high!r}")
    rule = kind + (" " + " and ".join(bounds) if bounds else "")
    ok = not isinstance(value, bool | str | bytes) and value is not None
    if ok:
        try:
            v = float(value)
        except (TypeError, ValueError):
            ok = False
    if ok:
        ok = math.isfinite(v) and (not integer or v == int(v))
        if ok and low is not None:
            ok = v > low if low_open else v >= low
        if ok and high is not None:
            ok = v < high if high_open else v <= high
    if not ok:
        raise ConfigurationError(
            f"model {model!r}: condition {key!r} must be {rule}, got {value!r}" + (f"; {fix}" if fix else "")
        )


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
    #: what each condition means, with its unit (``mechcalib models NAME`` prints it)
    condition_help: Mapping[str, str] = {}
    #: conditions whose string values are file paths: a configuration resolves them from its own folder
    file_conditions: tuple[str, ...] = ()

    @abstractmethod
    def simulate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None
    ) -> list[Response | SimulationFailure]:
        """Simulate ``theta`` of shape ``(n, len(self.space))`` (physical units, model order)."""

    # -- helpers shared by all models -----------------------------------------------------
    @property
    def channel_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.channels)

    def preset(self, name: str = "default") -> dict[str, float]:
        try:
            return dict(self.presets[name])
        except KeyError:
            raise ConfigurationError(
                f"model {self.name!r} has no preset {name!r}; presets are {sorted(self.presets)}"
            ) from None

    def full_vector(self, values: Mapping[str, float] | None = None, preset: str = "default") -> np.ndarray:
        """A full parameter vector from a preset, overridden by ``values``."""
        p = self.preset(preset)
        for k, v in (values or {}).items():
            if k not in self.space.names:
                raise ConfigurationError(
                    f"model {self.name!r} has no parameter {k!r}; parameters are {list(self.space.names)}"
                )
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

    # -- optional capabilities: declared here, so the engine calls them without looking them up ----------
    def validate_conditions(self, conditions: Mapping[str, Any] | None = None, *, n_sets: int = 1) -> dict[str, Any]:
        """The default conditions overridden by ``conditions``, checked: unknown names, types, signs,
        finiteness, and the memory a batch of ``n_sets`` simulations would allocate. Raises
        :class:`~mechcalib.errors.ConfigurationError` naming the condition, the rule and the value. Models
        extend it (``super().validate_conditions(...)`` first) and call it at the start of ``simulate``."""
        return self.conditions(conditions)

    def prepare_shared(self, conditions: Mapping[str, Any] | None = None) -> None:  # noqa: B027 - optional hook
        """Build the state every simulation under ``conditions`` shares (a poured DEM specimen) once, in this
        process, before worker processes start simulating (they then read it from a cache instead of racing
        to build it). The default does nothing."""

    def channel_array(
        self,
        theta: np.ndarray,
        channel: str,
        x: np.ndarray | None = None,
        conditions: Mapping[str, Any] | None = None,
    ) -> np.ndarray | None:
        """``(n, m)`` values of one channel for ``(n, len(space))`` full parameters at the abscissae ``x``
        (default: the model's own grid), without building curves: the fast path of direct curve fits.

        ``None`` means unsupported (the default); callers then go through :meth:`simulate`. A model that
        supports it returns an array for every input, so an empty batch ``(0, len(space))`` is a free probe.
        """
        return None

    def check_steps(self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None) -> str | None:
        """A report of the time integration's convergence for the first set of ``theta`` under ``conditions``
        (``mechcalib check`` prints it), warning when it is not converged; ``None`` (the default) when the
        model has nothing to report."""
        return None

    def check_memory(self, nbytes: float, what: str, fix: str) -> None:
        """Refuse an allocation of about ``nbytes`` beyond :func:`memory_limit_bytes` before it is made."""
        limit = memory_limit_bytes()
        if nbytes > limit:
            raise ConfigurationError(
                f"model {self.name!r}: {what} needs about {nbytes / GIB:.3g} GiB of memory, more than the "
                f"{limit / GIB:.3g} GiB available (physical memory, or ${MEMORY_LIMIT_ENV}); {fix}"
            )

    def conditions(self, conditions: Mapping[str, Any] | None) -> dict[str, Any]:
        """Default conditions overridden by ``conditions``; unknown names are an error."""
        out = dict(self.default_conditions)
        for k, v in (conditions or {}).items():
            if k not in out:
                raise ConfigurationError(f"model {self.name!r} has no condition {k!r}; conditions are {sorted(out)}")
            out[k] = v
        return out
