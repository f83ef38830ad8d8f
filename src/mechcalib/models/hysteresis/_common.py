"""Helpers shared by the hysteretic structure models: force histories and curve building."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...core.data import Curve, read_table
from ...core.model import Model, Response, SimulationFailure, check_condition
from ...errors import ConfigurationError
from .integrate import OK, integrate_batch, system_rows

SINE, TABLE = 0, 1


def force_history(force: Any) -> tuple[np.ndarray, np.ndarray]:
    """A tabulated force history ``(t, F)`` from a condition value.

    Accepted: a CSV path (first column time [s], second column force [N], header row; see
    :func:`mechcalib.core.data.read_table`), a pair ``(t, F)`` of sequences, a ``(K, 2)`` array or a mapping with
    keys ``"t"`` and ``"force"``. ``t`` must increase strictly.
    """
    if isinstance(force, (str, Path)):
        table, _ = read_table(force)
        cols = list(table)
        if len(cols) < 2:
            raise ConfigurationError(f"force file {str(force)!r}: need two columns (time, force), got {cols}")
        t, f = table[cols[0]], table[cols[1]]
    elif isinstance(force, Mapping):
        if "t" not in force or "force" not in force:
            raise ConfigurationError(f"a force mapping needs keys 't' and 'force', got {sorted(force)}")
        t, f = force["t"], force["force"]
    else:
        arr = np.asarray(force, dtype=float)
        if arr.ndim == 2 and arr.shape[1] == 2 and arr.shape[0] != 2:
            t, f = arr[:, 0], arr[:, 1]
        elif arr.ndim == 2 and arr.shape[0] == 2:
            t, f = arr[0], arr[1]
        else:
            raise ConfigurationError(
                f"the force condition must be a CSV path, a pair (t, F), a (K, 2) array or {{'t', 'force'}}, "
                f"got an array of shape {arr.shape}"
            )
    t = np.ascontiguousarray(t, dtype=float)
    f = np.ascontiguousarray(f, dtype=float)
    if t.ndim != 1 or t.shape != f.shape or t.size < 2:
        raise ConfigurationError(
            f"force history: t and F must be 1-D of equal length >= 2, got {t.shape} and {f.shape}"
        )
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(f))):
        raise ConfigurationError("force history: t and F must be finite; remove NaN/inf rows")
    if np.any(np.diff(t) <= 0):
        i = int(np.flatnonzero(np.diff(t) <= 0)[0])
        raise ConfigurationError(
            f"force history: time must increase strictly, got t[{i}]={t[i]!r}, t[{i + 1}]={t[i + 1]!r}; sort the rows"
        )
    return t, f


def loading(cond: Mapping[str, Any], default_t_end: float) -> tuple[int, float, float, np.ndarray, np.ndarray, float]:
    """``(mode, amplitude, omega, t_table, F_table, t_end)`` for the integrator from the conditions."""
    if cond["force"] is None:
        t_end = default_t_end if cond["t_end"] is None else float(cond["t_end"])
        dummy = np.zeros(2)
        return SINE, float(cond["amplitude"]), float(cond["omega"]), dummy, dummy, t_end
    ft, fv = force_history(cond["force"])
    t_end = float(ft[-1]) if cond["t_end"] is None else float(cond["t_end"])
    return TABLE, 0.0, 0.0, ft, fv, t_end


def output_grid(t_end: float, fs: float) -> tuple[int, float]:
    if not (np.isfinite(fs) and fs > 0):
        raise ConfigurationError(f"the sampling rate fs must be positive, got {fs!r}")
    if not (np.isfinite(t_end) and t_end > 0):
        raise ConfigurationError(f"the duration t_end must be positive, got {t_end!r}")
    n_out = round(t_end * fs) + 1
    if n_out < 2:
        raise ConfigurationError(f"t_end * fs must give at least two samples, got t_end={t_end!r}, fs={fs!r}")
    return n_out, 1.0 / fs


def time_curve(t: np.ndarray, y: np.ndarray, y_name: str, y_unit: str) -> Curve:
    return Curve(t, y, t=t, x_name="time", y_name=y_name, x_unit="s", y_unit=y_unit)


def check_substeps(substeps: int, what: str = "substeps") -> int:
    if not isinstance(substeps, (int, np.integer)) or isinstance(substeps, bool) or substeps < 1:
        raise ConfigurationError(f"{what} must be a positive integer, got {substeps!r}")
    return int(substeps)


def run_batch(
    laws: np.ndarray,
    A: np.ndarray,
    Minv_K: np.ndarray,
    Minv_C: np.ndarray,
    Minv_p: np.ndarray,
    Minv_Tt: np.ndarray,
    T: np.ndarray,
    cond: Mapping[str, Any],
    default_t_end: float,
    substeps: int,
    locate_events: bool,
    samples_per_step: int = 1,
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The output times and :func:`.integrate.integrate_batch`'s arrays for a batch under the conditions
    ``cond`` (force, ``t_end``, ``fs``); the matrices as documented there."""
    mode, amp, om, ft, fv, t_end = loading(cond, default_t_end)
    n_out, dt = output_grid(t_end, float(cond["fs"]))
    S = system_rows(Minv_K, Minv_C, Minv_p, Minv_Tt)
    res = integrate_batch(
        laws, A, S, T, mode, amp, om, ft, fv, dt, n_out, substeps, locate_events, samples_per_step=samples_per_step
    )
    return np.arange(n_out) * dt, res


class LazyResponse(Mapping[str, Curve]):
    """A response whose curves are built (and validated) on first access: an identification reads one or
    a few of a model's channels, and building the others cost about as much as a fifth of a simulation."""

    def __init__(self, make: Mapping[str, Callable[[], Curve]]) -> None:
        self._make = dict(make)
        self._built: dict[str, Curve] = {}

    def __getitem__(self, name: str) -> Curve:
        if name not in self._built:
            self._built[name] = self._make[name]()  # KeyError for an unknown channel, as a dict
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._make)

    def __len__(self) -> int:
        return len(self._make)


class BatchedModel(Model):
    """A model whose ``integrate(theta, conditions)`` returns a batch's raw arrays (with ``status`` and ``a``);
    :meth:`simulate` turns them into one response per set with :meth:`response_at`, or a failure.

    Conditions (validated by :meth:`validate_conditions`): ``amplitude`` and ``omega`` of the sine force or a
    tabulated ``force``, ``t_end`` (``None``: :attr:`default_t_end` for the sine, the table's end for a table)
    and the sampling rate ``fs``."""

    #: what a rejected input (status -1) violated
    invalid_input: str = "parameters must be finite"
    #: duration [s] of a sine-loaded record when the condition ``t_end`` is ``None``
    default_t_end: float = 20.0

    def floats_per_sample(self) -> int:
        """Floats the integrator stores per output sample and parameter set (the memory estimate)."""
        raise NotImplementedError

    def validate_conditions(self, conditions: Mapping[str, Any] | None = None, *, n_sets: int = 1) -> dict[str, Any]:
        cond = super().validate_conditions(conditions, n_sets=n_sets)
        if cond["force"] is None:
            check_condition(self.name, "amplitude", cond["amplitude"])
            check_condition(self.name, "omega", cond["omega"])
        if cond["t_end"] is not None:
            check_condition(self.name, "t_end", cond["t_end"], low=0.0, low_open=True)
        check_condition(self.name, "fs", cond["fs"], low=0.0, low_open=True)
        t_end = loading(cond, self.default_t_end)[5]  # parses and checks a tabulated force
        n_out, _ = output_grid(t_end, float(cond["fs"]))
        self.check_memory(
            8.0 * n_out * self.floats_per_sample() * max(n_sets, 1),
            f"a batch of {n_sets} set(s) of {n_out} samples ({t_end:g} s at {float(cond['fs']):g} Hz)",
            "lower fs or t_end, or simulate fewer parameter sets per batch",
        )
        return cond

    def integrate(self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def response_at(self, res: Mapping[str, np.ndarray], i: int) -> Response:
        """The channels of set ``i`` of the raw arrays ``res``."""
        raise NotImplementedError

    def simulate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None
    ) -> list[Response | SimulationFailure]:
        res = self.integrate(theta, conditions)
        out: list[Response | SimulationFailure] = []
        for i, st in enumerate(res["status"]):
            if st == -1:
                out.append(SimulationFailure(self.invalid_input))
            elif st != OK or not np.all(np.isfinite(res["a"][i])):
                out.append(SimulationFailure("the response diverged (non-finite or > 1e100 state)"))
            else:
                out.append(self.response_at(res, i))
        return out
