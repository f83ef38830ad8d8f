"""Parameters and parameter spaces.

A :class:`ParameterSpace` maps between physical parameter values and the unit cube ``[0, 1]^d`` in
which every optimiser works. A parameter is free (bounds, linear or logarithmic scale) or fixed
(a constant that the model receives but no optimiser sees). Mareš et al. (2016) (Table 1) searches B2 through
a logarithm: ``Parameter("B2", 8e-7, 8e-3, scale="log")``.

A space is set in one line without rebuilding it: ``space.with_bounds(a3=(-1, 1))``,
``space.with_bounds(k=(1e3, 1e6, "log"))``, ``space.with_scale(k="log")``, ``space.with_sign(gamma="negative")`` or
all at once ``space.with_settings(k=dict(bounds=(1e3, 1e6), scale="log"), n=dict(fixed=2.0))``; a config writes
``[parameters.k] bounds = [1e3, 1e6], scale = "log"``. ``sign`` states which side of zero a parameter lives on:
``"positive"`` and ``"negative"`` refuse bounds that cross zero, and a negative parameter may take a log scale
(its magnitude is searched logarithmically). Default bounds are a starting point stated by each model; a model
that derives a box from a value it was given says so with a :class:`DerivedBoundsWarning`
(:func:`derived_bounds`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import ConfigurationError

Scale = Literal["linear", "log"]
Sign = Literal["any", "positive", "negative"]
_SETTINGS = ("bounds", "lower", "upper", "scale", "sign", "fixed", "unit", "description")


class DerivedBoundsWarning(UserWarning):
    """A parameter's search box was derived from a value given for another purpose (e.g. 0.5x-2x a constant)."""


def derived_bounds(owner: str, name: str, value: float, low: float = 0.5, high: float = 2.0) -> tuple[float, float]:
    """``(low * value, high * value)`` (``(0, 1)`` for ``value = 0``), announced with a
    :class:`DerivedBoundsWarning` that names the box and how to set another: a box derived from a value is a
    guess, not a measurement."""
    lo, hi = (low * value, high * value) if value > 0 else ((high * value, low * value) if value < 0 else (0.0, 1.0))
    warnings.warn(
        f"{owner}: parameter {name!r} will be searched in [{lo:g}, {hi:g}], derived from its given value {value:g} "
        f"({low:g}x to {high:g}x), not from your data; set the box you mean with "
        f"space.with_bounds({name}=(lower, upper)) or `[parameters.{name}] bounds = [lower, upper]`",
        DerivedBoundsWarning,
        stacklevel=3,
    )
    return lo, hi


@dataclass(frozen=True)
class Parameter:
    """One model parameter.

    Args:
        name: identifier used in configs, results and the model.
        lower, upper: search bounds in physical units (``lower < upper``, both finite).
        scale: ``"linear"`` or ``"log"`` (log needs ``lower > 0``, or ``upper < 0`` with ``sign="negative"``):
            how the unit cube maps onto the bounds.
        unit: physical unit, for reports and plots.
        fixed: if given, the parameter is held at this value and is not searched.
        description: free text.
        sign: ``"any"`` (default), ``"positive"`` (``lower >= 0``) or ``"negative"`` (``upper <= 0``); a negative
            log-scaled parameter is searched on the log of its magnitude.
    """

    name: str
    lower: float = math.nan
    upper: float = math.nan
    scale: Scale = "linear"
    unit: str = ""
    fixed: float | None = None
    description: str = ""
    sign: Sign = "any"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ConfigurationError(
                f"a parameter name must be a valid identifier (letters, digits, underscores), got {self.name!r}; "
                "rename the parameter"
            )
        if self.scale not in ("linear", "log"):
            raise ConfigurationError(f"parameter {self.name!r}: scale must be 'linear' or 'log', got {self.scale!r}")
        if self.sign not in ("any", "positive", "negative"):
            raise ConfigurationError(
                f"parameter {self.name!r}: sign must be 'any', 'positive' or 'negative', got {self.sign!r}"
            )
        if self.fixed is not None:
            if not math.isfinite(float(self.fixed)):
                raise ConfigurationError(
                    f"parameter {self.name!r}: a fixed value must be finite, got fixed={self.fixed!r}"
                )
            object.__setattr__(self, "fixed", float(self.fixed))
            if math.isnan(self.lower) and math.isnan(self.upper):
                return
        lo, hi = float(self.lower), float(self.upper)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ConfigurationError(
                f"parameter {self.name!r}: bounds must be finite, got lower={self.lower!r}, upper={self.upper!r}; "
                "give both bounds as finite numbers"
            )
        if not lo < hi:
            raise ConfigurationError(
                f"parameter {self.name!r}: `lower < upper` must hold, got lower={lo!r}, upper={hi!r}; "
                "swap or widen the bounds (use fixed=... for a constant)"
            )
        if self.scale == "linear" and not math.isfinite(hi - lo):
            # the unit-cube map x = lower + u * (upper - lower) overflows: every proposal would be inf or nan
            raise ConfigurationError(
                f"parameter {self.name!r}: the range upper - lower must be a finite float64 (at most about "
                f"1.8e308) for the unit-cube map, got lower={lo!r}, upper={hi!r}; narrow the bounds, or give "
                "positive bounds with scale='log'"
            )
        if self.sign == "positive" and lo < 0:
            raise ConfigurationError(
                f"parameter {self.name!r}: sign='positive' needs lower >= 0, got lower={lo!r}, upper={hi!r}; "
                "raise the lower bound or use sign='any'"
            )
        if self.sign == "negative" and hi > 0:
            raise ConfigurationError(
                f"parameter {self.name!r}: sign='negative' needs upper <= 0, got lower={lo!r}, upper={hi!r}; "
                "lower the upper bound or use sign='any'"
            )
        if self.scale == "log" and self.sign == "negative" and hi >= 0:
            raise ConfigurationError(
                f"parameter {self.name!r}: a negative log scale needs upper < 0, got lower={lo!r}, upper={hi!r}; "
                "use scale='linear' or bounds below zero"
            )
        if self.scale == "log" and self.sign != "negative" and lo <= 0:
            raise ConfigurationError(
                f"parameter {self.name!r}: a log scale needs a positive range, got lower={lo!r}, upper={hi!r}; "
                "use scale='linear', positive bounds, or sign='negative' with bounds below zero"
            )
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

    @property
    def is_fixed(self) -> bool:
        return self.fixed is not None

    def to_unit(self, value: np.ndarray | float) -> np.ndarray:
        """Physical value(s) -> unit interval (values outside the bounds map outside [0, 1])."""
        v = np.asarray(value, dtype=float)
        if self.scale == "log" and self.sign == "negative":
            return (np.log(-v) - math.log(-self.lower)) / (math.log(-self.upper) - math.log(-self.lower))
        if self.scale == "log":
            return (np.log(v) - math.log(self.lower)) / (math.log(self.upper) - math.log(self.lower))
        return (v - self.lower) / (self.upper - self.lower)

    def from_unit(self, u: np.ndarray | float) -> np.ndarray:
        """Unit interval -> physical value(s)."""
        u = np.asarray(u, dtype=float)
        if self.scale == "log" and self.sign == "negative":
            return -np.exp(math.log(-self.lower) + u * (math.log(-self.upper) - math.log(-self.lower)))
        if self.scale == "log":
            return np.exp(math.log(self.lower) + u * (math.log(self.upper) - math.log(self.lower)))
        return self.lower + u * (self.upper - self.lower)

    def with_fixed(self, value: float | None) -> Parameter:
        return Parameter(self.name, self.lower, self.upper, self.scale, self.unit, value, self.description, self.sign)

    def with_settings(self, **settings: Any) -> Parameter:
        """A copy with any of ``bounds=(lower, upper)`` (or ``lower``, ``upper``), ``scale``, ``sign``,
        ``fixed`` (``None`` frees it), ``unit``, ``description`` replaced; the rest kept."""
        unknown = set(settings) - set(_SETTINGS)
        if unknown:
            raise ConfigurationError(
                f"parameter {self.name!r}: unknown setting(s) {sorted(unknown)}; settings are {list(_SETTINGS)}"
            )
        v: dict[str, Any] = {
            "lower": self.lower,
            "upper": self.upper,
            "scale": self.scale,
            "unit": self.unit,
            "fixed": self.fixed,
            "description": self.description,
            "sign": self.sign,
        }
        if "bounds" in settings:
            b = settings.pop("bounds")
            if "lower" in settings or "upper" in settings:
                raise ConfigurationError(
                    f"parameter {self.name!r}: give bounds=(lower, upper) or lower/upper, not both"
                )
            if isinstance(b, str | bytes) or not isinstance(b, Sequence) or len(b) not in (2, 3):
                raise ConfigurationError(
                    f"parameter {self.name!r}: bounds must be (lower, upper) or (lower, upper, scale), got {b!r}"
                )
            v["lower"], v["upper"] = b[0], b[1]
            if len(b) == 3:
                if "scale" in settings:
                    raise ConfigurationError(f"parameter {self.name!r}: the scale is given twice (in bounds and scale)")
                v["scale"] = b[2]
        v.update(settings)
        if v["fixed"] is None and (math.isnan(float(v["lower"])) or math.isnan(float(v["upper"]))):
            raise ConfigurationError(
                f"parameter {self.name!r} has no bounds to search; give bounds=(lower, upper) when freeing it"
            )
        return Parameter(
            self.name,
            v["lower"],
            v["upper"],
            v["scale"],
            v["unit"],
            v["fixed"],
            v["description"],
            v["sign"],
        )


@dataclass(frozen=True)
class ParameterSpace:
    """An ordered set of parameters.

    ``names`` lists all parameters in model order; ``free_names`` those searched by optimisers, whose
    count ``dim`` is the dimension of the unit cube. ``to_full`` turns free values (``(n, dim)``)
    into full parameter arrays (``(n, len(names))``) in physical units, inserting fixed values.
    """

    parameters: tuple[Parameter, ...]
    _index: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __init__(self, parameters: Iterable[Parameter]):
        params = tuple(parameters)
        for p in params:
            if not isinstance(p, Parameter):
                raise ConfigurationError(f"a ParameterSpace holds Parameter objects, got {p!r}")
        seen: dict[str, int] = {}
        for i, p in enumerate(params):
            if p.name in seen:
                raise ConfigurationError(
                    f"parameter names must be unique, got {p.name!r} at positions {seen[p.name]} and {i}; "
                    "rename one of them"
                )
            seen[p.name] = i
        if not params:
            raise ConfigurationError("a ParameterSpace needs at least one parameter, got none")
        object.__setattr__(self, "parameters", params)
        object.__setattr__(self, "_index", seen)

    # -- construction helpers -------------------------------------------------------------
    @classmethod
    def from_bounds(cls, lower: Sequence[float], upper: Sequence[float], names: Sequence[str] | None = None):
        lower, upper = list(lower), list(upper)
        if len(lower) != len(upper):
            raise ConfigurationError(
                f"lower and upper bounds must have the same length, got {len(lower)} and {len(upper)}"
            )
        names = list(names) if names is not None else [f"x{i}" for i in range(len(lower))]
        return cls(Parameter(n, lo, hi) for n, lo, hi in zip(names, lower, upper, strict=True))

    @classmethod
    def from_record(cls, records: Iterable[Mapping[str, Any]]) -> ParameterSpace:
        """The space of a stored run's record (``storage.session.space_record``: name, bounds, scale, unit,
        fixed). The record keeps no sign; the one sign that changes the unit-cube map is derived: a log scale
        below zero is ``"negative"``."""
        return cls(
            Parameter(
                r["name"],
                r["lower"],
                r["upper"],
                scale=r.get("scale", "linear"),
                unit=r.get("unit") or "",
                fixed=r.get("fixed"),
                sign="negative" if r.get("scale") == "log" and r["upper"] < 0 else "any",
            )
            for r in records
        )

    def with_fixed(self, **values: float) -> ParameterSpace:
        """A copy where the named parameters are fixed at the given values."""
        unknown = set(values) - set(self.names)
        if unknown:
            raise ConfigurationError(
                f"cannot fix unknown parameter(s) {sorted(unknown)}; valid names are {list(self.names)}"
            )
        return ParameterSpace(p.with_fixed(values[p.name]) if p.name in values else p for p in self.parameters)

    def with_bounds(self, **bounds: tuple[float, float] | tuple[float, float, str]) -> ParameterSpace:
        """A copy with new ``(lower, upper)`` or ``(lower, upper, scale)`` bounds for the named parameters."""
        return self.with_settings(**{n: {"bounds": b} for n, b in bounds.items()})

    def with_scale(self, **scales: Scale) -> ParameterSpace:
        """A copy with the named parameters' scale (``"linear"`` or ``"log"``) changed, bounds kept."""
        return self.with_settings(**{n: {"scale": s} for n, s in scales.items()})

    def with_sign(self, **signs: Sign) -> ParameterSpace:
        """A copy with the named parameters' sign (``"any"``, ``"positive"``, ``"negative"``) changed."""
        return self.with_settings(**{n: {"sign": s} for n, s in signs.items()})

    def with_settings(self, **settings: Mapping[str, Any]) -> ParameterSpace:
        """A copy with per-parameter settings changed in one call: ``{name: {bounds, scale, sign, fixed, unit,
        description}}`` (see :meth:`Parameter.with_settings`); unnamed parameters and settings are kept."""
        unknown = set(settings) - set(self.names)
        if unknown:
            raise ConfigurationError(
                f"cannot set unknown parameter(s) {sorted(unknown)}; valid names are {list(self.names)}"
            )
        for n, st in settings.items():
            if not isinstance(st, Mapping):
                raise ConfigurationError(
                    f"parameter {n!r}: settings must be a mapping such as dict(bounds=(1, 2), scale='log'), got {st!r}"
                )
        return ParameterSpace(p.with_settings(**settings[p.name]) if p.name in settings else p for p in self.parameters)

    # -- views ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.parameters)

    def __iter__(self):
        return iter(self.parameters)

    def __getitem__(self, name: str) -> Parameter:
        try:
            return self.parameters[self._index[name]]
        except KeyError:
            raise KeyError(f"no parameter {name!r}; valid names are {list(self.names)}") from None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    @property
    def free(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if not p.is_fixed)

    @property
    def free_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.free)

    @property
    def dim(self) -> int:
        return len(self.free)

    @property
    def lower(self) -> np.ndarray:
        """Lower bounds of the free parameters."""
        return np.array([p.lower for p in self.free])

    @property
    def upper(self) -> np.ndarray:
        return np.array([p.upper for p in self.free])

    # -- maps -----------------------------------------------------------------------------
    def from_unit(self, u: np.ndarray) -> np.ndarray:
        """``(n, dim)`` unit-cube points -> ``(n, dim)`` free parameter values."""
        u = self._as_2d(u, self.dim, "unit-cube points")
        return np.column_stack([p.from_unit(u[:, i]) for i, p in enumerate(self.free)]) if self.dim else u

    def to_unit(self, x: np.ndarray) -> np.ndarray:
        """``(n, dim)`` free parameter values -> unit cube."""
        x = self._as_2d(x, self.dim, "free parameter values")
        return np.column_stack([p.to_unit(x[:, i]) for i, p in enumerate(self.free)]) if self.dim else x

    def to_full(self, x_free: np.ndarray) -> np.ndarray:
        """``(n, dim)`` free values -> ``(n, len(self))`` full values with fixed parameters inserted."""
        x_free = self._as_2d(x_free, self.dim, "free parameter values")
        full = np.empty((x_free.shape[0], len(self)))
        j = 0
        for i, p in enumerate(self.parameters):
            if p.is_fixed:
                full[:, i] = p.fixed
            else:
                full[:, i] = x_free[:, j]
                j += 1
        return full

    def full_from_unit(self, u: np.ndarray) -> np.ndarray:
        return self.to_full(self.from_unit(u))

    def free_from_full(self, full: np.ndarray) -> np.ndarray:
        full = self._as_2d(full, len(self), "full parameter values")
        idx = [i for i, p in enumerate(self.parameters) if not p.is_fixed]
        return full[:, idx]

    def as_dict(self, full_row: Sequence[float]) -> dict[str, float]:
        """One full parameter vector -> ``{name: value}``."""
        if len(full_row) != len(self):
            raise ConfigurationError(f"expected {len(self)} values for {list(self.names)}, got {len(full_row)}")
        return {n: float(v) for n, v in zip(self.names, full_row, strict=True)}

    def from_dict(self, values: Mapping[str, float]) -> np.ndarray:
        """``{name: value}`` for every free parameter -> a ``(dim,)`` free vector."""
        missing = [n for n in self.free_names if n not in values]
        extra = [n for n in values if n not in self.names]
        if missing or extra:
            raise ConfigurationError(
                f"parameter values must name each free parameter once; missing {missing}, unknown {extra}; "
                f"free parameters are {list(self.free_names)}"
            )
        return np.array([float(values[n]) for n in self.free_names])

    def contains(self, x_free: np.ndarray, atol: float = 1e-12) -> np.ndarray:
        x = self._as_2d(x_free, self.dim, "free parameter values")
        return np.all((x >= self.lower - atol) & (x <= self.upper + atol), axis=1)

    @staticmethod
    def _as_2d(a: np.ndarray, d: int, what: str) -> np.ndarray:
        a = np.asarray(a, dtype=float)
        if a.ndim == 1:
            a = a[None, :]
        if a.ndim != 2 or a.shape[1] != d:
            raise ConfigurationError(f"{what} must have shape (n, {d}), got {a.shape}")
        return a


# -- results at the edge of the box ---------------------------------------------------------------------
#: how near a bound a result is flagged as at that bound: a share of the parameter's searched range (in its
#: own scale: the logarithm's range for a log-scaled parameter)
BOUND_TOLERANCE = 0.01


def bound_side(
    value: float, lower: float, upper: float, scale: str = "linear", *, tol: float = BOUND_TOLERANCE
) -> str | None:
    """``"lower"`` or ``"upper"`` when ``value`` lies within ``tol`` of the range ``[lower, upper]`` of that
    bound (measured in the parameter's scale, as the optimisers' unit cube is), else ``None``. A value at a bound
    means the optimum may lie outside the box: its interval, too, is cut there (lmfit flags the same)."""
    v, lo, hi = float(value), float(lower), float(upper)
    if not (math.isfinite(v) and math.isfinite(lo) and math.isfinite(hi)) or not lo < hi:
        return None
    if scale == "log" and (lo > 0 or hi < 0) and v != 0 and (v > 0) == (lo > 0):
        v, lo, hi = math.log(abs(v)), math.log(abs(lo)), math.log(abs(hi))
    u = (v - lo) / (hi - lo)
    if u <= tol:
        return "lower"
    if u >= 1.0 - tol:
        return "upper"
    return None


def bounds_report(
    parameters: Iterable[Parameter | Mapping[str, Any]], values: Mapping[str, float], *, tol: float = BOUND_TOLERANCE
) -> dict[str, dict[str, Any]]:
    """Per free parameter named in ``values``: ``{"lower", "upper", "at_bound"}`` (``at_bound``: ``"lower"``,
    ``"upper"`` or ``None``, :func:`bound_side`). ``parameters``: :class:`Parameter` objects, or the stored
    form of a run's space (mappings with ``name``, ``lower``, ``upper``, ``scale``, ``fixed``)."""
    out: dict[str, dict[str, Any]] = {}
    for p in parameters:
        d: Mapping[str, Any] = (
            p
            if isinstance(p, Mapping)
            else {"name": p.name, "lower": p.lower, "upper": p.upper, "scale": p.scale, "fixed": p.fixed}
        )
        name = str(d["name"])
        if d.get("fixed") is not None or name not in values or values[name] is None:
            continue
        lo, hi = float(d["lower"]), float(d["upper"])
        side = bound_side(values[name], lo, hi, str(d.get("scale") or "linear"), tol=tol)
        out[name] = {"lower": lo, "upper": hi, "at_bound": side}
    return out


def bound_warnings(report: Mapping[str, Mapping[str, Any]], values: Mapping[str, float] | None = None) -> list[str]:
    """One line per parameter of a :func:`bounds_report` that ends at a bound, with the advice to widen the box."""
    lines = []
    for name, r in report.items():
        side = r.get("at_bound")
        if side is None:
            continue
        got = "" if values is None or values.get(name) is None else f" ({float(values[name]):.6g})"
        lines.append(
            f"parameter {name!r} ends at its {side} bound {r[side]:g}{got}, within {100 * BOUND_TOLERANCE:g} % of "
            f"its range [{r['lower']:g}, {r['upper']:g}]: the optimum may lie outside the box and its interval is "
            f"cut by the bound; widen the box (`[parameters.{name}] bounds = [...]`) and run again, unless the "
            "bound is physical"
        )
    return lines
