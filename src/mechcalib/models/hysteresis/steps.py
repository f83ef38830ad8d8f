"""Step control for measured excitations: the rule that picks the RK4 step, and the convergence check.

Rule (:func:`choose_steps`): the step ``h`` resolves the fastest motion expected with ``POINTS_PER_CYCLE``
(40) steps per period, ``h <= 1 / (40 f_max)``, where ``f_max`` is the larger of the excitation's bandwidth
(:func:`mechcalib.records.bandwidth`: all but 1e-6 of its energy below it) and the model's highest natural
frequency in its initial (elastic) state at its default preset. With the output interval ``dt`` (``1/fs``):
``dt <= h_max`` gives one step per ``min(floor(h_max / dt), the law's default)`` samples, otherwise
``ceil(dt / h_max)`` steps per sample. The sine of the papers keeps the models' documented defaults.

Check (:func:`compare`): the response at the chosen steps against the response with at least twice as many;
the measured difference is the largest, over the time-history channels, of ``RMS(difference) / RMS(response)``.
Above ``STEP_TOLERANCE`` (1e-3) a :class:`StepWarning` names it and the setting to change (``substeps``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

POINTS_PER_CYCLE = 40
STEP_TOLERANCE = 1e-3


class StepWarning(UserWarning):
    """The integration of a measured excitation is not converged at the chosen step, or its record is sampled
    too slowly for the model's dynamics."""


def choose_steps(dt_out: float, f_max: float, max_samples_per_step: int) -> tuple[int, int]:
    """``(substeps, samples_per_step)`` for an output interval ``dt_out`` [s] and the highest frequency
    ``f_max`` [Hz] to resolve (module docstring); ``max_samples_per_step`` caps the steps spanning samples."""
    if not (math.isfinite(f_max) and f_max > 0):
        return 1, max(1, int(max_samples_per_step))
    h_max = 1.0 / (POINTS_PER_CYCLE * f_max)
    if dt_out <= h_max:
        return 1, max(1, min(int(max_samples_per_step), int(h_max / dt_out + 1e-9)))
    return int(math.ceil(dt_out / h_max - 1e-9)), 1


def finer(steps: tuple[int, int]) -> tuple[int, int]:
    """Settings with at least twice as many steps: half the samples per step, or twice the substeps."""
    sub, per = steps
    return (1, per // 2) if per > 1 else (2 * sub, 1)


@dataclass(frozen=True)
class StepCheck:
    """The outcome of a convergence check: ``difference`` (relative to the response RMS) of ``channel``
    between ``steps`` and ``finer_steps`` (``(substeps, samples_per_step)``), against ``tolerance``."""

    difference: float
    channel: str
    steps: tuple[int, int]
    finer_steps: tuple[int, int]
    tolerance: float = STEP_TOLERANCE

    @property
    def ok(self) -> bool:
        return bool(self.difference <= self.tolerance)

    def message(self, model: str) -> str:
        sub, per = self.steps
        at = f"{sub} RK4 step(s) per sample" if per == 1 else f"one RK4 step per {per} samples"
        head = (
            f"{model}: the response at {at} differs from the one with twice as many steps by "
            f"{self.difference:.3g} of its RMS ({self.channel})"
        )
        if self.ok:
            return f"{head}: converged (tolerance {self.tolerance:g})"
        s2, p2 = self.finer_steps
        return (
            f"{head}, above the tolerance {self.tolerance:g}: the integration error is part of the response; set "
            f"the model option substeps = {max(2 * s2, 2)} (or more) and check again"
        )


def compare(ref: dict[str, np.ndarray], fine: dict[str, np.ndarray], keys: tuple[str, ...]) -> tuple[float, str]:
    """The largest ``RMS(fine - ref) / RMS(fine)`` over the arrays ``keys`` of two integrations (set 0)."""
    worst, which = 0.0, keys[0]
    for k in keys:
        a = np.asarray(ref[k][0], float)
        b = np.asarray(fine[k][0], float)
        scale = float(np.sqrt(np.mean(b * b)))
        if scale == 0.0 or not np.all(np.isfinite(a)) or not np.all(np.isfinite(b)):
            continue
        d = float(np.sqrt(np.mean((a - b) ** 2))) / scale
        if d > worst:
            worst, which = d, k
    return worst, which


def initial_stiffness(law: str, a: np.ndarray) -> float:
    """The elastic tangent ``dr/du`` of a law at rest (Ding et al. (2021) parameters ``a``)."""
    if law == "bilinear_kinematic":
        return float(2.0 * a[0] + a[1])
    if law == "bilinear_equal":
        return float(a[0] + a[1])
    if law == "degradation":
        return 1.0  # A0 = 1 (eqs. 12, 15)
    if law in ("boucwen_opensees", "bwbn"):
        # OpenSees' names (alpha, ko, n, gamma, beta, Ao, ...): r = alpha ko u + (1 - alpha) ko z, dz/du = Ao at
        # rest (BWBN's pinching only lowers it, so this bounds the frequency from above)
        alpha, ko, ao = float(a[0]), float(a[1]), float(a[5])
        return alpha * ko + (1.0 - alpha) * ko * ao
    return float(a[0])  # Bouc-Wen (eq. 11) and pinching (eq. 19): A
