"""Helpers shared by the hysteretic structure models: force histories and curve building."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...data import Curve, read_table
from ...errors import ConfigurationError

SINE, TABLE = 0, 1


def force_history(force: Any) -> tuple[np.ndarray, np.ndarray]:
    """A tabulated force history ``(t, F)`` from a condition value.

    Accepted: a CSV path (first column time [s], second column force [N], header row; see
    :func:`mechcalib.data.read_table`), a pair ``(t, F)`` of sequences, a ``(K, 2)`` array or a mapping with
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


def check_substeps(substeps: int) -> int:
    if not isinstance(substeps, (int, np.integer)) or isinstance(substeps, bool) or substeps < 1:
        raise ConfigurationError(f"substeps must be a positive integer, got {substeps!r}")
    return int(substeps)
