"""Imposed-displacement tests of a hysteretic law: the quasi-static cyclic test of a connection, damper or
column (displacement history in, force out).

The model drives one law of :mod:`.laws` (or the Coulomb-friction baseline) along a displacement history with
the batched kernel :func:`.laws.drive` (one compiled loop per parameter set, parallel over the batch, RK4 in
``u`` with exactly located bilinear yield points) and returns the force. The specimen is unloaded at the
first sample: the law is driven along ``u - u[0]``.

The history is a condition: ``displacement`` (a measured record: an array, a pair ``(t, u)``, a mapping with
``"t"`` and ``"u"``, or a CSV path read by :func:`mechcalib.core.data.read_table` with ``column`` and
``time_column``), or, when it is ``None``, the generated ``protocol`` (:func:`cyclic_protocol`: groups of
triangular cycles of increasing amplitude, the shape of the standard quasi-static protocols).

Parameters: the law's (``a1..`` for Ding et al. (2021)'s laws, OpenSees' names for ``"boucwen_opensees"`` and
``"bwbn"``, ``Fc`` for ``"coulomb"``), then ``k`` (a linear spring in parallel) with ``parallel=True`` and a
force offset ``F0`` with ``offset=True``. Default bounds are those of :class:`.laws.LawSpec` (a starting
point at the toy scale of the reference values); a measured specimen needs its own
(``space.with_bounds(...)``, ``[parameters.NAME] bounds = [lo, hi]``).

Channels: ``force`` (force against time; a record without a time is sampled at the condition ``fs``, the
generated protocol at ``period / points_per_cycle``), ``loop`` (force against
displacement, time as progress) and ``energy_per_cycle`` (``oint F du`` of each complete cycle against the
cycle number; cycles end at upward crossings of ``cycle_level`` after the path has gone below it by
``cycle_band`` times its largest excursion, so measurement noise does not split a cycle).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...core.data import Curve, read_table
from ...core.model import Channel, Model, Response, SimulationFailure, check_condition
from ...core.parameters import Parameter, ParameterSpace
from ...errors import ConfigurationError
from .laws import LAWS, drive, law_spec

COULOMB = "coulomb"
DEFAULT_PROTOCOL: dict[str, Any] = {
    "amplitudes": (0.25, 0.5, 1.0, 1.5, 2.0),
    "cycles": 2,
    "points_per_cycle": 40,
    "period": 1.0,
}


def cyclic_protocol(
    amplitudes: Sequence[float] = DEFAULT_PROTOCOL["amplitudes"],
    cycles: int = 2,
    points_per_cycle: int = 40,
    period: float = 1.0,
) -> np.ndarray:
    """A standard cyclic displacement protocol: ``cycles`` triangular cycles ``0 -> +A -> 0 -> -A -> 0`` at
    each amplitude ``A`` in turn (increasing, as in quasi-static test protocols), ``points_per_cycle`` samples
    per cycle (a multiple of 4, so that peaks and zeros are samples). Returns ``(K,)`` displacements from 0;
    the samples are ``period / points_per_cycle`` apart in time (the laws are rate-independent: the time only
    labels the samples)."""
    if not (isinstance(period, (int, float)) and np.isfinite(period) and period > 0):
        raise ConfigurationError(f"protocol period must be a positive number of seconds, got {period!r}")
    amps = np.asarray(amplitudes, dtype=float)
    if amps.ndim != 1 or amps.size == 0 or not np.all(np.isfinite(amps)) or np.any(amps <= 0):
        raise ConfigurationError(
            f"protocol amplitudes must be a non-empty list of positive numbers, got {amplitudes!r}"
        )
    if not isinstance(cycles, (int, np.integer)) or cycles < 1:
        raise ConfigurationError(f"protocol cycles must be a positive integer, got {cycles!r}")
    if not isinstance(points_per_cycle, (int, np.integer)) or points_per_cycle < 4 or points_per_cycle % 4:
        raise ConfigurationError(f"protocol points_per_cycle must be a multiple of 4, >= 4, got {points_per_cycle!r}")
    q = points_per_cycle // 4
    unit = np.concatenate(
        [np.linspace(0, 1, q + 1)[:-1], np.linspace(1, -1, 2 * q + 1)[:-1], np.linspace(-1, 0, q + 1)[:-1]]
    )
    path = np.concatenate([a * unit for a in amps for _ in range(cycles)])
    return np.append(path, 0.0)


def displacement_record(
    value: Any, *, column: str | None = None, time_column: str | None = None
) -> tuple[np.ndarray | None, np.ndarray, str]:
    """``(t or None, u, where)`` from a ``displacement`` condition (see the module docstring); ``where`` names
    the source in messages. Refuses NaN, non-increasing time, mismatched lengths and unknown columns."""
    t: Any = None
    if isinstance(value, (str, Path)):
        where = f"displacement file {str(value)!r}"
        table, _ = read_table(value)
        cols = list(table)
        ucol = column if column is not None else (cols[1] if len(cols) > 1 and time_column is None else cols[0])
        if time_column is None and column is None and len(cols) > 1:
            time_column = cols[0]
        for c, what in ((ucol, "column"), (time_column, "time_column")):
            if c is not None and c not in table:
                raise ConfigurationError(f"{where}: {what} {c!r} does not exist; the columns are {cols}")
        u = table[ucol]
        t = table[time_column] if time_column is not None else None
        where += f", column {ucol!r}"
    elif isinstance(value, Mapping):
        where = "displacement mapping"
        if "u" not in value:
            raise ConfigurationError(
                f"a displacement mapping needs the key 'u' (and optionally 't'), got {sorted(value)}"
            )
        u, t = value["u"], value.get("t")
    else:
        where = "displacement array"
        arr = np.asarray(value, dtype=float)
        if arr.ndim == 2 and arr.shape[0] == 2 and arr.shape[1] != 2:
            t, u = arr[0], arr[1]
        elif arr.ndim == 2 and arr.shape[1] == 2:
            t, u = arr[:, 0], arr[:, 1]
        else:
            u = arr
    u = np.ascontiguousarray(u, dtype=float)
    if u.ndim != 1 or u.size < 2:
        raise ConfigurationError(f"{where}: the displacement must be 1-D with at least 2 samples, got shape {u.shape}")
    bad = np.flatnonzero(~np.isfinite(u))
    if bad.size:
        raise ConfigurationError(
            f"{where}: the displacement must be finite, got {float(u[bad[0]])!r} at sample {int(bad[0])} "
            f"({bad.size} non-finite sample(s)); remove or interpolate those rows"
        )
    if t is not None:
        t = np.ascontiguousarray(t, dtype=float)
        if t.shape != u.shape:
            raise ConfigurationError(
                f"{where}: time and displacement must have the same length, got {t.shape[0] if t.ndim else t.shape} "
                f"and {u.shape[0]}; give one time per displacement sample"
            )
        if not np.all(np.isfinite(t)):
            raise ConfigurationError(f"{where}: the time must be finite; remove the NaN/inf rows")
        d = np.diff(t)
        if np.any(d <= 0):
            i = int(np.flatnonzero(d <= 0)[0])
            raise ConfigurationError(
                f"{where}: time must increase strictly, got t[{i}]={t[i]!r}, t[{i + 1}]={t[i + 1]!r}; sort the rows "
                "or drop the repeated samples"
            )
    return t, u, where


def cycle_ends(u: np.ndarray, level: float = 0.0, band: float = 0.05) -> np.ndarray:
    """Indices where complete cycles end: upward crossings of ``level`` (the first sample at or above it)
    after the path has gone below ``level - band * max|u - level|``. Cycle ``j`` runs from the previous end
    (the first sample for ``j = 0``) to ``ends[j]``."""
    dev = u - level
    thr = band * float(np.max(np.abs(dev)))
    ends = []
    armed = False
    for k in range(1, u.size):
        if dev[k] < -thr:
            armed = True
        elif armed and dev[k] >= 0.0 and dev[k - 1] < 0.0:
            ends.append(k)
            armed = False
    return np.asarray(ends, dtype=np.int64)


def motion_sign(u: np.ndarray) -> np.ndarray:
    """``sgn(u')`` at each sample from central differences, a sample without motion keeping the last sign
    (positive before the first motion): the direction a Coulomb friction force opposes."""
    d = np.empty_like(u)
    d[1:-1] = u[2:] - u[:-2]
    d[0], d[-1] = u[1] - u[0], u[-1] - u[-2]
    s = np.sign(d)
    idx = np.where(s != 0, np.arange(s.size), 0)
    np.maximum.accumulate(idx, out=idx)
    out = s[idx]
    out[out == 0] = 1.0
    return out


class DisplacementProtocol(Model):
    """A hysteretic law (or the Coulomb baseline) under an imposed displacement history.

    Args:
        law: a key of :data:`.laws.LAWS` or ``"coulomb"`` (``F = Fc sgn(u')``).
        substeps: RK4 steps per segment of the path (the laws are rate-independent).
        parallel: add a linear spring ``k`` in parallel (parameter ``k``, default box ``[0, 1]``).
        offset: add a constant force offset ``F0`` (default box ``[-1, 1]``), e.g. a load cell's zero error.
        force_unit, displacement_unit: units written on the channels (the laws are unit-agnostic: parameters
            carry the units of the data they are fitted to).
    """

    name = "hysteresis_protocol"
    # a measured history given as a file path: a config resolves it against the config file's folder
    file_conditions = ("displacement",)
    description = "a hysteretic law under an imposed displacement history (cyclic or measured)"

    def __init__(
        self,
        law: str = "boucwen",
        *,
        substeps: int = 4,
        parallel: bool = False,
        offset: bool = False,
        force_unit: str = "N",
        displacement_unit: str = "m",
    ) -> None:
        if law != COULOMB and law not in LAWS:
            law_spec(law)  # the error lists the valid laws
            raise AssertionError  # pragma: no cover
        self.law = None if law == COULOMB else LAWS[law]
        if not isinstance(substeps, (int, np.integer)) or isinstance(substeps, bool) or substeps < 1:
            raise ConfigurationError(f"substeps must be a positive integer, got {substeps!r}")
        self.law_key, self.substeps = law, int(substeps)
        self.parallel, self.offset = bool(parallel), bool(offset)
        self.force_unit, self.displacement_unit = force_unit, displacement_unit
        if self.law is None:
            params = [Parameter("Fc", 0.05, 4.0, unit=force_unit, description="Coulomb friction force")]
            values = {"Fc": 1.0}
        else:
            spec = self.law
            params = [
                Parameter(
                    n,
                    lo,
                    hi,
                    unit=u,
                    description=f"{d} ({spec.equations})",
                    fixed=v if n in spec.fixed_by_default else None,
                )
                for n, (lo, hi), u, d, v in zip(
                    spec.names, spec.bounds, spec.units, spec.meanings, spec.paper, strict=True
                )
            ]
            values = dict(zip(spec.names, spec.paper, strict=True))
        if self.parallel:
            params.append(
                Parameter("k", 0.0, 1.0, unit=f"{force_unit}/{displacement_unit}", description="parallel spring")
            )
            values["k"] = 0.0
        if self.offset:
            params.append(Parameter("F0", -1.0, 1.0, unit=force_unit, description="force offset"))
            values["F0"] = 0.0
        self.space = ParameterSpace(params)
        self.presets = {"default": values}
        fu, du = force_unit, displacement_unit
        self.channels = (
            Channel("force", "time", "force", "s", fu, "force against time"),
            Channel("loop", "displacement", "force", du, fu, "force-displacement loop, time as progress"),
            Channel("energy_per_cycle", "cycle", "dissipated energy", "-", f"{fu}*{du}", "oint F du per cycle"),
        )
        self.default_conditions = {
            "displacement": None,
            "column": None,
            "time_column": None,
            "protocol": dict(DEFAULT_PROTOCOL),
            "fs": 1.0,
            "cycle_level": 0.0,
            "cycle_band": 0.05,
        }

    # ---------------------------------------------------------------------------------------
    def validate_conditions(self, conditions: Mapping[str, Any] | None = None, *, n_sets: int = 1) -> dict[str, Any]:
        cond = super().validate_conditions(conditions, n_sets=n_sets)
        check_condition(self.name, "cycle_level", cond["cycle_level"])
        check_condition(self.name, "fs", cond["fs"], low=0.0, low_open=True)
        check_condition(self.name, "cycle_band", cond["cycle_band"], low=0.0, high=1.0, high_open=True)
        for key in ("column", "time_column"):
            if cond[key] is not None and not isinstance(cond[key], str):
                raise ConfigurationError(
                    f"model {self.name!r}: condition {key!r} must be a column name, got {cond[key]!r}"
                )
        _, u = self.history(cond)
        self.check_memory(
            8.0 * u.size * 3 * max(n_sets, 1),
            f"a batch of {n_sets} set(s) of {u.size} samples",
            "decimate the record or simulate fewer parameter sets per batch",
        )
        return cond

    def history(self, cond: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """``(t, u)`` of the conditions: the record's or the protocol's; a record without a time is sampled at
        ``fs``."""
        t: np.ndarray | None
        if cond["displacement"] is not None:
            t, u, _ = displacement_record(cond["displacement"], column=cond["column"], time_column=cond["time_column"])
        else:
            proto = cond["protocol"]
            if not isinstance(proto, Mapping):
                raise ConfigurationError(
                    f"model {self.name!r}: condition 'protocol' must be a table (amplitudes, cycles, points_per_cycle), "
                    f"got {proto!r}"
                )
            unknown = set(proto) - set(DEFAULT_PROTOCOL)
            if unknown:
                raise ConfigurationError(
                    f"protocol: unknown key(s) {sorted(unknown)}; keys are {sorted(DEFAULT_PROTOCOL)}"
                )
            p = {**DEFAULT_PROTOCOL, **proto}
            u = cyclic_protocol(**p)
            t = np.arange(u.size) * (float(p["period"]) / int(p["points_per_cycle"]))
        if t is None:
            t = np.arange(u.size) / float(cond["fs"])
        return t, u

    def forces(self, theta: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(F, ok)``: the force ``(n, K)`` of each parameter set along ``u`` and which sets are valid."""
        theta = self.check_theta(theta)
        ok = np.all(np.isfinite(theta), axis=1)
        th = np.where(ok[:, None], theta, 0.0)
        rel = np.ascontiguousarray(u - u[0])
        j = 1 if self.law is None else len(self.law.paper)
        if self.law is None:
            F = th[:, :1] * motion_sign(u)[None, :]
        else:
            F, _ = drive(self.law.law_id, self.law.padded(th[:, :j]), rel, self.substeps)
        if self.parallel:
            F = F + th[:, j : j + 1] * rel[None, :]
            j += 1
        if self.offset:
            F = F + th[:, j : j + 1]
        return F, ok

    def simulate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None
    ) -> list[Response | SimulationFailure]:
        cond = self.validate_conditions(conditions, n_sets=np.atleast_2d(theta).shape[0])
        t, u = self.history(cond)
        F, ok = self.forces(theta, u)
        ends = cycle_ends(u, float(cond["cycle_level"]), float(cond["cycle_band"]))
        dW = 0.5 * (F[:, 1:] + F[:, :-1]) * np.diff(u)[None, :]
        W = np.concatenate([np.zeros((F.shape[0], 1)), np.cumsum(dW, axis=1)], axis=1)
        starts = np.concatenate([[0], ends[:-1]])
        E = W[:, ends] - W[:, starts]
        fu, du = self.force_unit, self.displacement_unit
        out: list[Response | SimulationFailure] = []
        for i in range(F.shape[0]):
            if not ok[i]:
                out.append(SimulationFailure("parameters must be finite"))
            elif not np.all(np.isfinite(F[i])) or np.max(np.abs(F[i])) > 1e100:
                out.append(SimulationFailure("the force diverged (non-finite or > 1e100)"))
            else:
                resp = {
                    "force": Curve(t, F[i], t=t, x_name="time", y_name="force", x_unit="s", y_unit=fu),
                    "loop": Curve(u, F[i], t=t, x_name="displacement", y_name="force", x_unit=du, y_unit=fu),
                }
                if ends.size >= 2:
                    cyc = np.arange(1, ends.size + 1, dtype=float)
                    resp["energy_per_cycle"] = Curve(
                        cyc, E[i], x_name="cycle", y_name="dissipated energy", x_unit="-", y_unit=f"{fu}*{du}"
                    )
                out.append(resp)
        return out
