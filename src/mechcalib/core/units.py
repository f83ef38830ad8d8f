"""Unit conversion by known factors: one mechanism for measured records and experiments.

A unit is a string as a table header writes it (``force [kN]``, ``acc [g]``, a ``units`` map entry). Units
of one quantity convert by a factor to its SI unit (:data:`FACTORS`): ``mm -> m`` is ``1e-3``,
``g -> m/s^2`` is ``9.80665``, ``kip/in -> N/m`` is ``175126.8...``. Spellings are normalised first (``m/s2``,
``m/s**2``, ``m/s²`` and ``m s^-2`` are ``m/s^2``; case is kept, since ``mm`` and ``Mm``, ``g`` (gravity)
and ``G`` differ only in it). An empty unit means "the model's unit" and converts by 1; a unit that is not in
the table converts only to itself, anything else is a :class:`~mechcalib.errors.DataError` naming both units
and the fix (a ``units`` map, or a scale factor in the configuration).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import DataError

_G0 = 9.80665  # standard gravity [m/s^2]
_IN = 0.0254
_FT = 0.3048
_LBF = 4.4482216152605
_KIP = 1e3 * _LBF

#: quantity -> {unit: factor to the quantity's SI unit}; the first entry is the SI unit
FACTORS: dict[str, dict[str, float]] = {
    "length": {"m": 1.0, "mm": 1e-3, "cm": 1e-2, "um": 1e-6, "km": 1e3, "in": _IN, "ft": _FT},
    "time": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0, "h": 3600.0},
    "frequency": {"Hz": 1.0, "kHz": 1e3, "rad/s": 1.0 / (2.0 * math.pi)},
    "velocity": {"m/s": 1.0, "mm/s": 1e-3, "cm/s": 1e-2, "in/s": _IN, "ft/s": _FT},
    "acceleration": {
        "m/s^2": 1.0,
        "mm/s^2": 1e-3,
        "cm/s^2": 1e-2,
        "gal": 1e-2,
        "in/s^2": _IN,
        "ft/s^2": _FT,
        "g": _G0,
    },
    "force": {"N": 1.0, "kN": 1e3, "MN": 1e6, "mN": 1e-3, "lbf": _LBF, "kip": _KIP, "kgf": _G0},
    "mass": {"kg": 1.0, "t": 1e3, "lb": 0.45359237},
    "stiffness": {
        "N/m": 1.0,
        "N/mm": 1e3,
        "kN/m": 1e3,
        "kN/mm": 1e6,
        "MN/m": 1e6,
        "lbf/in": _LBF / _IN,
        "kip/in": _KIP / _IN,
    },
    "damping": {"N*s/m": 1.0, "kN*s/m": 1e3, "N*s/mm": 1e3, "lbf*s/in": _LBF / _IN},
    "energy": {"J": 1.0, "kJ": 1e3, "N*m": 1.0, "kN*m": 1e3, "N*mm": 1e-3, "kN*mm": 1.0, "lbf*in": _LBF * _IN},
    "stress": {"Pa": 1.0, "kPa": 1e3, "MPa": 1e6, "GPa": 1e9, "psi": _LBF / _IN**2, "ksi": _KIP / _IN**2},
    "dimensionless": {"1": 1.0, "-": 1.0, "%": 1e-2},
}

_ALIASES = {
    "sec": "s",
    "second": "s",
    "seconds": "s",
    "msec": "ms",
    "µs": "us",
    "µm": "um",
    "inch": "in",
    "inches": "in",
    "'": "ft",
    "kips": "kip",
    "lb_f": "lbf",
    "newton": "N",
    "n": "N",
    "kn": "kN",
    "hz": "Hz",
}

_INDEX: dict[str, tuple[str, float]] = {u: (q, f) for q, table in FACTORS.items() for u, f in table.items()}


def normalise(unit: str) -> str:
    """The table's spelling of ``unit``: spaces and ``**``/``²`` written as ``^2``, ``m s^-2`` as ``m/s^2``,
    ``N.s/m`` as ``N*s/m``; an alias (``sec``, ``inch``, ``kips``) replaced."""
    u = unit.strip()
    u = u.replace("²", "^2").replace("**", "^").replace("·", "*")
    for neg, pos in (("s^-2", "/s^2"), ("s^-1", "/s"), ("s-2", "/s^2"), ("s-1", "/s")):
        if u.endswith(" " + neg):
            u = u[: -len(neg) - 1] + pos
    u = u.replace(" ", "")
    if u.endswith("/s2"):
        u = u[:-1] + "^2"
    if "." in u and not any(ch.isdigit() for ch in u):
        u = u.replace(".", "*")
    return _ALIASES.get(u, u)


def quantity(unit: str) -> str | None:
    """The quantity (``"length"``, ``"force"``...) of a known unit, ``None`` for an unknown one."""
    hit = _INDEX.get(normalise(unit))
    return hit[0] if hit else None


def factor(from_unit: str, to_unit: str, *, what: str = "a value") -> float:
    """The factor that converts a value in ``from_unit`` to ``to_unit`` (``value_to = factor * value_from``).

    An empty unit on either side converts by 1 (a column without a unit is read in the model's units). Equal
    spellings convert by 1 even when unknown. Raises :class:`DataError` for an unknown unit or two units of
    different quantities, naming ``what`` (a file and column) and the fix.
    """
    a, b = normalise(from_unit or ""), normalise(to_unit or "")
    if not a or not b or a == b:
        return 1.0
    ha, hb = _INDEX.get(a), _INDEX.get(b)
    known = ", ".join(f"{q}: {' '.join(t)}" for q, t in FACTORS.items())
    if ha is None or hb is None:
        bad = from_unit if ha is None else to_unit
        raise DataError(
            f"{what}: cannot convert {from_unit!r} to {to_unit!r}: the unit {bad!r} is not known (known units: "
            f"{known}); give the column's unit in the `units` map, or scale it yourself and declare {to_unit!r}"
        )
    if ha[0] != hb[0]:
        raise DataError(
            f"{what}: cannot convert {from_unit!r} ({ha[0]}) to {to_unit!r} ({hb[0]}): they measure different "
            "quantities; check that the column is the one meant, and its unit"
        )
    return ha[1] / hb[1]


def suffix_unit(column: str) -> str:
    """The unit a column name ends with after its last underscore (``displacement_in`` -> ``in``,
    ``force_kN`` -> ``kN``), ``""`` when that suffix is not a known unit."""
    _, sep, tail = column.rpartition("_")
    if not sep:
        return ""
    return normalise(tail) if normalise(tail) in _INDEX else ""


def curve_to_units(curve: Any, x_unit: str, y_unit: str, *, what: str) -> Any:
    """A :class:`~mechcalib.core.data.Curve` in the units ``x_unit``, ``y_unit`` (a model channel's): its
    abscissa and ordinate scaled by :func:`factor` and relabelled; a side without a unit is taken as given.
    The progress coordinate ``t`` is time: it converts to seconds when it is the abscissa."""
    from dataclasses import replace

    fx = factor(curve.x_unit, x_unit, what=f"{what}, x")
    fy = factor(curve.y_unit, y_unit, what=f"{what}, y")
    if fx == 1.0 and fy == 1.0:
        return curve
    t = curve.t
    if t is not None and fx != 1.0 and np.array_equal(t, curve.x):
        t = t * fx
    return replace(
        curve,
        x=curve.x * fx,
        y=curve.y * fy,
        t=t,
        x_unit=x_unit if curve.x_unit else curve.x_unit,
        y_unit=y_unit if curve.y_unit else curve.y_unit,
    )
