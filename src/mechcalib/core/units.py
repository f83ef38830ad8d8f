"""Units through pint: one mechanism for measured records and experiments.

A unit is a string as a table header or a lab writes it (``force [kN]``, ``time [hr]``, ``strain [µε]``, a
``units`` map entry): pint's registry reads it (:func:`registry`: ``hr``, ``day``, ``µε`` and ``microstrain``,
``‰``, ``kip/in``, ``N/mm^2``...), with a few spellings labs use added (``kips``, ``lb_f``, ``m/s2``, ``-``). Two
spellings mean something else on an acceleration channel, where they convert as labs mean them: ``g``
(pint's gram) is standard gravity, ``gal`` (pint's gallon) is the galileo, 1 cm/s^2 (and ``mg``, ``mgal``
likewise). An entry of a ``units`` map may carry a factor: ``"2.5 kN"`` reads a column of 1 as 2.5 kN (a
sensor's calibration).

An empty unit means "the model's unit" and converts by 1, as do equal spellings (even unknown ones); anything
else that does not convert is a :class:`UnitError` (a :class:`~mechcalib.errors.DataError`) naming the column,
the unit found and the exact ``units`` line that makes it read (:attr:`UnitError.fix`).
"""

from __future__ import annotations

import difflib
import functools
import math
import re
from typing import Any

import numpy as np

from ..errors import DataError

#: spellings read before pint sees them (whole units): older mechcalib tables and lab exports
ALIASES = {
    "n": "N",
    "kn": "kN",
    "hz": "Hz",
    "'": "ft",
    "lb_f": "lbf",
    "msec": "ms",
    "-": "dimensionless",
    "1": "dimensionless",
}
#: pint definitions added to its default registry
DEFINITIONS = ("kips = kip", "permil = permille")
#: on an acceleration channel: spelling -> what labs mean by it
ACCELERATION = {"g": "g_0", "G": "g_0", "mg": "(0.001 * g_0)", "gal": "Gal", "mgal": "mGal", "mGal": "mGal"}
#: a unit of each named quantity (:func:`quantity`)
_QUANTITIES = {
    "m": "length",
    "s": "time",
    "Hz": "frequency",
    "m/s": "velocity",
    "m/s^2": "acceleration",
    "N": "force",
    "kg": "mass",
    "N/m": "stiffness",
    "N*s/m": "damping",
    "J": "energy",
    "Pa": "stress",
    "dimensionless": "dimensionless",
}


#: where a ``units`` line goes, when the caller does not say
PLACE = "to the table that names the file (the experiment, or the record's condition table)"


class UnitError(DataError):
    """A unit that does not convert: ``column`` (with its file), the unit ``found``, the unit it was to
    convert to (``target``), and ``suggestion``, a unit that makes it read, for the fix ``units = {...}``.
    A message that ends with :data:`PLACE` names, through :meth:`at`, where its fix goes instead."""

    def __init__(self, message: str, *, column: str = "", found: str = "", target: str = "", suggestion: str = ""):
        super().__init__(message)
        self.message = message
        self.column, self.found, self.target, self.suggestion = column, found, target, suggestion

    def __reduce__(self) -> Any:
        kw = {"column": self.column, "found": self.found, "target": self.target, "suggestion": self.suggestion}
        return (_unit_error, (self.message, kw))

    @property
    def fix(self) -> str:
        """The TOML line that reads the column in the suggested unit: ``units = {"force" = "kip"}``."""
        return units_line(self.column, self.suggestion)

    def at(self, place: str) -> str:
        """The message with its fix placed at ``place`` (``under [[experiments]] number 1``)."""
        return self.message.replace(PLACE, place)


def _unit_error(message: str, kw: dict[str, str]) -> UnitError:
    return UnitError(message, **kw)


def units_line(column: str, unit: str) -> str:
    """``units = {"<column>" = "<unit>"}``, the configuration line that states a column's unit."""
    return f"units = {{{_toml_str(column)} = {_toml_str(unit)}}}"


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@functools.cache
def registry() -> Any:
    """The pint ``UnitRegistry`` with :data:`DEFINITIONS` added (built once, on first use)."""
    import pint

    ureg: Any = pint.UnitRegistry(autoconvert_offset_to_baseunit=False)
    for d in DEFINITIONS:
        ureg.define(d)
    return ureg


def normalise(unit: str) -> str:
    """The spelling pint reads: spaces trimmed, ``m/s2`` as ``m/s^2``, ``N.s/m`` as ``N*s/m``, ``²``/``³``
    as powers, an alias of :data:`ALIASES` replaced."""
    u = unit.strip()
    if u in ALIASES:
        return ALIASES[u]
    u = u.replace("²", "^2").replace("³", "^3").replace("·", "*")
    u = re.sub(r"(?<=[A-Za-z])([23])(?![\d.])", r"^\1", u) if re.search(r"/\s*[A-Za-z]+[23]$", u) else u
    if "." in u and not any(ch.isdigit() for ch in u):
        u = u.replace(".", "*")
    return ALIASES.get(u, u)


def _parse(unit: str, *, acceleration: bool = False) -> Any | None:
    """``unit`` as a pint quantity (a factor times a unit), ``None`` when pint does not know it."""
    import pint

    u = normalise(unit)
    if acceleration and u in ACCELERATION:
        u = ACCELERATION[u]
    try:
        q = registry().parse_expression(u)
    except (pint.errors.PintError, AttributeError, TypeError, ValueError, SyntaxError, KeyError, AssertionError):
        return None
    if not isinstance(q, registry().Quantity):
        q = registry().Quantity(float(q), "dimensionless")
    return q


def is_unit(unit: str) -> bool:
    """Whether ``unit`` is a unit pint reads (with the spellings of :data:`ALIASES` and :data:`DEFINITIONS`)."""
    return bool(unit.strip()) and not re.fullmatch(r"[\d.eE+-]+", unit.strip()) and _parse(unit) is not None


def quantity(unit: str) -> str | None:
    """The quantity (``"length"``, ``"force"``...) of a known unit, ``None`` for an unknown one (or one of a
    quantity not named in the table)."""
    q = _parse(unit)
    if q is None:
        return None
    return next((name for u, name in _QUANTITIES.items() if _dims(u) == q.dimensionality), None)


def _dims(unit: str) -> Any:
    q = _parse(unit)
    return None if q is None else q.dimensionality


def _is_acceleration(q: Any) -> bool:
    return q is not None and str(q.dimensionality) == "[length] / [time] ** 2"


@functools.lru_cache(maxsize=512)
def _factor(a: str, b: str) -> float | str:
    """The factor ``a -> b``, or why there is none (``"unknown:a"``, ``"unknown:b"``, ``"dims"``, ``"offset"``)."""
    qb = _parse(b)
    if qb is None:
        return "unknown:b"
    qa = _parse(a, acceleration=_is_acceleration(qb))
    if qa is None:
        return "unknown:a"
    if qa.dimensionality != qb.dimensionality:
        return "dims"
    if not (qa.unit_items() and qb.unit_items()) and not (qa.dimensionless and qb.dimensionless):
        return "dims"
    import pint

    try:
        f = float((qa / qb).to("dimensionless").magnitude)
    except pint.errors.OffsetUnitCalculusError:
        return "offset"
    rad_a, rad_b = "rad" in normalise(a), "rad" in normalise(b)
    if str(qa.dimensionality) == "1 / [time]" and rad_a != rad_b:  # pint takes rad as 1: w = 2 pi f
        f = f / (2.0 * math.pi) if rad_a else f * 2.0 * math.pi
    return f


def factor(from_unit: str, to_unit: str, *, what: str = "a value", column: str = "") -> float:
    """The factor that converts a value in ``from_unit`` to ``to_unit`` (``value_to = factor * value_from``).

    An empty unit on either side converts by 1 (a column without a unit is read in the model's units). Equal
    spellings convert by 1 even when unknown. ``g`` and ``gal`` mean standard gravity and the galileo when
    ``to_unit`` is an acceleration. Raises :class:`UnitError` for a unit pint does not know or two units of
    different quantities, naming ``what`` (a file and column) and the ``units`` line that fixes it.
    """
    a, b = (from_unit or "").strip(), (to_unit or "").strip()
    if not a or not b or a == b or normalise(a) == normalise(b):
        return 1.0
    f = _factor(a, b)
    if isinstance(f, float):
        return f
    col = column or "<column>"
    if f == "unknown:b":
        raise UnitError(
            f"{what}: cannot convert {a!r} to {b!r}: the target unit {b!r} is not a unit pint knows; correct the "
            "model's or channel's unit",
            column=col,
            found=b,
            target=b,
        )
    if f == "unknown:a":
        hint = suggest(a, b)
        raise UnitError(
            f"{what}: the unit {a!r} is not known (pint reads units such as mm, in, kN, kip, lbf, hr, day, µε, "
            f"microstrain, ‰, kip/in, N/mm^2, g, gal); if the column is in {hint}, add the line "
            f"{units_line(col, hint)} {PLACE}",
            column=col,
            found=a,
            target=b,
            suggestion=hint,
        )
    if f == "offset":
        raise UnitError(
            f"{what}: cannot convert {a!r} to {b!r} by a factor (a temperature scale with an offset); give the column "
            f"in {b!r} and add the line {units_line(col, b)} {PLACE}",
            column=col,
            found=a,
            target=b,
            suggestion=b,
        )
    qa, qb = quantity(a) or str(_dims(a)), quantity(b) or str(_dims(b))
    raise UnitError(
        f"{what}: cannot convert {a!r} ({qa}) to {b!r} ({qb}): they measure different quantities; check that the "
        f"column is the one meant, and its unit (if it is in {b!r}, add the line {units_line(col, b)} {PLACE})",
        column=col,
        found=a,
        target=b,
        suggestion=b,
    )


_PREFIXES = ("kilo", "mega", "giga", "milli", "micro", "centi")


@functools.cache
def _spellings() -> tuple[str, ...]:
    """The registry's unit names, and its longer names with the common prefixes (``millimeter``)."""
    names = sorted(n for n in registry()._units if len(n) > 1 or n in ("m", "s", "N", "g", "h"))
    return tuple(names) + tuple(p + n for p in _PREFIXES for n in names if len(n) > 3 and n.isalpha())


def suggest(unit: str, target: str) -> str:
    """A known unit close to ``unit`` (a misspelling, prefixed or not) that converts to ``target``; else
    ``target`` itself."""
    qb = _parse(target)
    for cand in difflib.get_close_matches(normalise(unit), _spellings(), n=8, cutoff=0.6):
        qa = _parse(cand, acceleration=_is_acceleration(qb))
        if qb is not None and qa is not None and qa.dimensionality == qb.dimensionality:
            return cand
    return target


def suffix_unit(column: str) -> str:
    """The unit a column name ends with after its last underscore (``displacement_in`` -> ``in``,
    ``force_kN`` -> ``kN``), ``""`` when that suffix is not a unit."""
    _, sep, tail = column.rpartition("_")
    if not sep or not tail:
        return ""
    return tail if is_unit(tail) else ""


def header_unit(text: str) -> str | None:
    """The unit in a header's parentheses when pint reads it (``Force (kN)`` -> ``kN``), else ``None``."""
    return text if is_unit(text) else None


def curve_to_units(curve: Any, x_unit: str, y_unit: str, *, what: str) -> Any:
    """A :class:`~mechcalib.core.data.Curve` in the units ``x_unit``, ``y_unit`` (a model channel's): its
    abscissa and ordinate scaled by :func:`factor` and relabelled; a side without a unit is taken as given.
    The progress coordinate ``t`` is time: it converts to seconds when it is the abscissa. A unit error names
    the curve's column (``x_name``, ``y_name``)."""
    from dataclasses import replace

    fx = factor(curve.x_unit, x_unit, what=f"{what}, x (column {curve.x_name!r})", column=curve.x_name)
    fy = factor(curve.y_unit, y_unit, what=f"{what}, y (column {curve.y_name!r})", column=curve.y_name)
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
