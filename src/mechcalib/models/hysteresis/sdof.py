"""Single-degree-of-freedom systems with one hysteretic component (Ding et al. (2021), "SDOF system with hysteresis").

``m u'' + c u' + k u + r = F(t)``, ``r' = f(r, u, u', a)`` (eq. 26 with ``T = [1]``), from rest. The paper's
test case: ``m = 1 kg``, ``k = 1 N/m``, ``c = 0.2 N s/m``, ``F(t) = 5 sin(t) N`` over 0-20 s, the
acceleration sampled at 1000 Hz; its parameter values are each model's ``"default"`` preset.

Parameters: the law's effective parameters ``a1...`` (bounds 0.5x to 2x the paper's values), then ``m``,
``c``, ``k`` (fixed by default at the constructor's values; ``free=("c", "k")`` searches them within 0.5x to
2x of those values, a guess announced by a ``DerivedBoundsWarning``: set the box you mean with
``space.with_bounds``).

Conditions: ``amplitude`` [N] and ``omega`` [rad/s] of the sine force, or a measured ``force`` [N] or
``ground_acceleration`` [m/s^2] (a file path or table, or arrays: :func:`mechcalib.records.excitation`,
docs/lab_records.md), which replaces the sine; ``t_end`` [s] (``None``: 20 s for the sine, the record's last
time for a record) and the sampling rate ``fs`` [Hz]. Under a ground acceleration ``m u'' + ... = -m a_g``:
the displacement is relative to the ground and the ``acceleration`` channel absolute.

Channels (all sampled at ``fs`` from ``t = 0``): ``displacement``, ``velocity``, ``acceleration`` and
``restoring_force_history`` against time; ``restoring_force`` is the hysteresis loop, ``r`` against ``u``
with time as its progress coordinate ``t``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ...core.data import Curve
from ...core.model import Channel, Response
from ...core.parameters import Parameter, ParameterSpace, derived_bounds
from ...errors import ConfigurationError
from . import _common
from . import steps as _steps
from .laws import LAWS, law_spec

#: RK4 steps per output sample (``substeps``) or output samples per RK4 step (``samples_per_step``, the
#: samples inside a step interpolated). Defaults: one step per 4 samples (per 2 for the pinching law, whose
#: Gaussian term is the sharpest); at the paper's 1 kHz sampling the largest error of u, u', u'' and r is
#: then below 1e-5 of its RMS for every law (docs/hysteresis.md, tests/test_hysteresis_models.py), at about
#: 40 % of the cost of one step per sample.
DEFAULT_SUBSTEPS = 1
DEFAULT_SAMPLES_PER_STEP = 4
SAMPLES_PER_STEP_BY_LAW = {"pinching": 2}

STRUCTURAL = ("m", "c", "k")
_STRUCT_META = {
    "m": ("kg", "mass"),
    "c": ("N*s/m", "viscous damping"),
    "k": ("N/m", "linear stiffness in parallel with the hysteretic component"),
}


class HystereticSDOF(_common.BatchedModel):
    """SDOF oscillator with a linear spring, a dashpot and one hysteretic component.

    Args:
        law: hysteretic law key (``"boucwen"``, ``"bilinear_kinematic"``, ``"bilinear_equal"``,
            ``"degradation"``, ``"pinching"``); the registered subclasses fix it.
        m, c, k: structural constants [kg, N s/m, N/m] (the paper's 1, 0.2, 1).
        free: structural constants to search as parameters (within 0.5x-2x of their values, with a warning).
        substeps: RK4 steps per output sample (``None``: automatic; under the sine 1, under a measured
            record the rule of :mod:`.steps`, from the record's bandwidth and the natural frequency).
        samples_per_step: output samples per RK4 step when ``substeps = 1`` (``None``: 4, 2 for pinching;
            1 with ``locate_events=False``; under a record at most this many, by the rule).
        locate_events: locate the laws' switches inside steps (see :mod:`.integrate`); ``False`` integrates
            the literal eq. 1 (first order across switches; for comparisons only).
    """

    name = "sdof"
    description = "SDOF with a hysteretic component (Ding et al. (2021))"
    law_key: ClassVar[str | None] = None
    invalid_input = "parameters must be finite and the mass positive"

    def __init__(
        self,
        law: str | None = None,
        *,
        m: float = 1.0,
        c: float = 0.2,
        k: float = 1.0,
        free: Sequence[str] = (),
        substeps: int | None = None,
        samples_per_step: int | None = None,
        locate_events: bool = True,
    ) -> None:
        key = law if law is not None else self.law_key
        if key is None:
            raise ConfigurationError(f"HystereticSDOF needs a law; valid laws are {sorted(LAWS)}")
        if self.law_key is not None and law is not None and law != self.law_key:
            raise ConfigurationError(f"model {self.name!r} uses the law {self.law_key!r}, got law={law!r}")
        self.law = law_spec(key)
        self.auto_steps = substeps is None and samples_per_step is None
        if substeps is None:
            substeps = DEFAULT_SUBSTEPS
        self.substeps = _common.check_substeps(substeps)
        self.locate_events = bool(locate_events)
        if samples_per_step is None:
            fine = self.substeps > 1 or not self.locate_events
            samples_per_step = 1 if fine else SAMPLES_PER_STEP_BY_LAW.get(key, DEFAULT_SAMPLES_PER_STEP)
        self.samples_per_step = _common.check_substeps(samples_per_step, "samples_per_step")
        if self.samples_per_step > 1 and self.substeps > 1:
            raise ConfigurationError(
                f"give substeps (steps per sample) or samples_per_step (samples per step), not both > 1; got "
                f"substeps={substeps!r}, samples_per_step={samples_per_step!r}"
            )
        bad = [f for f in free if f not in STRUCTURAL]
        if bad:
            raise ConfigurationError(f"free may name {list(STRUCTURAL)}, got {bad}")
        values = {"m": float(m), "c": float(c), "k": float(k)}
        if values["m"] <= 0 or values["c"] < 0 or values["k"] < 0:
            raise ConfigurationError(f"m must be > 0 and c, k >= 0, got m={m!r}, c={c!r}, k={k!r}")
        params = [
            Parameter(nm, lo, hi, unit=u, description=f"{d} ({self.law.equations})")
            for nm, (lo, hi), u, d in zip(
                self.law.names, self.law.bounds, self.law.units, self.law.meanings, strict=True
            )
        ]
        for nm in STRUCTURAL:
            v = values[nm]
            if nm in free:  # a box guessed from the given value: said so, with how to set another
                lo, hi = derived_bounds(f"model {self.name!r}", nm, v)
            else:
                lo, hi = (0.5 * v, 2.0 * v) if v > 0 else (0.0, 1.0)
            unit, desc = _STRUCT_META[nm]
            params.append(Parameter(nm, lo, hi, unit=unit, fixed=None if nm in free else v, description=desc))
        self.space = ParameterSpace(params)
        self.channels = (
            Channel("displacement", "time", "displacement", "s", "m"),
            Channel("velocity", "time", "velocity", "s", "m/s"),
            Channel("acceleration", "time", "acceleration", "s", "m/s^2", "the measured channel of Ding et al. (2021)"),
            Channel("restoring_force_history", "time", "restoring force", "s", "N", "hysteretic force r(t)"),
            Channel("restoring_force", "displacement", "restoring force", "m", "N", "hysteresis loop r(u), t = time"),
        )
        self.presets = {"default": {**dict(zip(self.law.names, self.law.paper, strict=True)), **values}}
        self.default_conditions = {
            "amplitude": 5.0,
            "omega": 1.0,
            "force": None,
            "ground_acceleration": None,
            "t_end": None,
            "fs": 1000.0,
        }

    # ---------------------------------------------------------------------------------------
    def natural_frequencies(self) -> np.ndarray:
        pre = self.presets["default"]
        a = np.array([pre[n] for n in self.law.names])
        k0 = pre["k"] + _steps.initial_stiffness(self.law.key, a)
        return np.array([np.sqrt(max(k0, 0.0) / pre["m"]) / (2.0 * np.pi)])

    def explicit_steps(self) -> tuple[int, int] | None:
        return None if self.auto_steps else (self.substeps, self.samples_per_step)

    def sine_steps(self) -> tuple[int, int]:
        return (self.substeps, self.samples_per_step)

    def max_samples_per_step(self) -> int:
        return self.samples_per_step

    # ---------------------------------------------------------------------------------------
    def integrate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None, *, steps: tuple[int, int] | None = None
    ) -> dict[str, np.ndarray]:
        """Raw arrays of a batch: ``t`` ``(n_out,)``; ``u, v, a, r, eps`` ``(n, n_out)``; ``status``,
        ``events`` ``(n,)`` (see :func:`.integrate.integrate_batch`). ``steps``: ``(substeps,
        samples_per_step)`` instead of the model's choice. Under a ``ground_acceleration`` ``u`` and ``v`` are
        relative to the ground and ``a`` is absolute."""
        theta = self.check_theta(theta)
        na = len(self.law.paper)
        m, c, k = theta[:, na], theta[:, na + 1], theta[:, na + 2]
        ok = (m > 0) & np.all(np.isfinite(theta), axis=1)
        ms = np.where(ok, m, 1.0)
        N = theta.shape[0]
        A = self.law.padded(np.where(ok[:, None], theta[:, :na], 0.0))[:, None, :]
        one = np.ones((N, 1, 1))
        plan = self.plan(conditions, n_sets=N, steps=steps)
        pattern = -np.ones((N, 1)) if plan.load.ground else (1.0 / ms)[:, None]
        t, (U, V, Acc, R, E, status, events) = _common.run_batch(
            np.array([self.law.law_id], dtype=np.int64),
            A,
            (k / ms)[:, None, None] * one,
            (c / ms)[:, None, None] * one,
            pattern,
            (1.0 / ms)[:, None, None] * one,
            np.ones((1, 1)),
            plan,
            self.locate_events,
        )
        status = np.where(ok, status, -1)
        return {
            "t": t,
            "u": U[:, :, 0],
            "v": V[:, :, 0],
            "a": Acc[:, :, 0],
            "r": R[:, :, 0],
            "eps": E[:, :, 0],
            "status": status,
            "events": events,
        }

    def floats_per_sample(self) -> int:
        return 5  # u, v, a, r, eps

    def response_at(self, res: Mapping[str, np.ndarray], i: int) -> Response:
        t, u, v, a, r = res["t"], res["u"][i], res["v"][i], res["a"][i], res["r"][i]
        return _common.LazyResponse(
            {
                "displacement": lambda: _common.time_curve(t, u, "displacement", "m"),
                "velocity": lambda: _common.time_curve(t, v, "velocity", "m/s"),
                "acceleration": lambda: _common.time_curve(t, a, "acceleration", "m/s^2"),
                "restoring_force_history": lambda: _common.time_curve(t, r, "restoring force", "N"),
                "restoring_force": lambda: Curve(
                    u, r, t=t, x_name="displacement", y_name="restoring force", x_unit="m", y_unit="N"
                ),
            }
        )


class SDOFBilinearKinematic(HystereticSDOF):
    """The paper's SDOF with the bilinear kinematic-hardening law (eqs. 2-5); default ``a = [1, 2, 1]``."""

    name = "sdof_bilinear_kinematic"
    description = "SDOF with a bilinear kinematic-hardening component (Ding et al. (2021) eqs. 2-5)"
    law_key = "bilinear_kinematic"


class SDOFBilinearEqual(HystereticSDOF):
    """The paper's SDOF with the bilinear equal-yielding-force law (eqs. 6-8); default ``a = [3, 1, 1]``."""

    name = "sdof_bilinear_equal"
    description = "SDOF with a bilinear equal-yielding-force component (Ding et al. (2021) eqs. 6-8)"
    law_key = "bilinear_equal"


class SDOFBoucWen(HystereticSDOF):
    """The paper's SDOF with the Bouc-Wen law (eqs. 9-11); default ``a = [2, 1, 0.5, 2]``."""

    name = "sdof_boucwen"
    description = "SDOF with a Bouc-Wen component (Ding et al. (2021) eqs. 9-11)"
    law_key = "boucwen"


class SDOFDegradation(HystereticSDOF):
    """The paper's SDOF with the Baber-Wen degrading law (eqs. 12-18); default
    ``a = [2, 1, 2, 0.02, 0.02, 0.02]`` (Table 4; the text prints 0.2 for the deltas)."""

    name = "sdof_degradation"
    description = "SDOF with a Baber-Wen degrading component (Ding et al. (2021) eqs. 12-18)"
    law_key = "degradation"


class SDOFPinching(HystereticSDOF):
    """The paper's SDOF with the Baber-Noori pinching law (eqs. 19-23); default ``a = [10, 5, 5, 2, 2, 2]``."""

    name = "sdof_pinching"
    description = "SDOF with a Baber-Noori pinching component (Ding et al. (2021) eqs. 19-23)"
    law_key = "pinching"
