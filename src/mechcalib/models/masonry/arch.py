"""The dry-joint stone masonry arch of Kibriya et al. (2023) (Birhane's quasi-static test, sections 2.1-2.4), on the
2D rigid-block DEM of :mod:`.dem`.

Parameters (Kibriya et al. (2023) section 4 bounds): ``kn`` and ``ks`` [Pa/m], normal and shear joint stiffness per unit
area, searched on a log scale within [1e8, 1e10]; ``phi`` [deg], the joint friction angle, in [25, 45].
The ``"default"`` preset is Pulatsu's calibration case (kn = 4 GPa/m, ks = 1.6 GPa/m, phi = 30.5 deg);
``"pso_obj1"`` is the best set of Kibriya et al. (2023) Table 1 (kn = 3.13, ks = 3.66 GPa/m, phi = 30.31 deg).

Geometry (constructor options, lengths in mm): a segmental arch of ``span`` 1200, ``rise`` 400,
``thickness`` 160, ``width`` 200 and ``n_blocks`` 13 (intrados radius 650 mm, half-opening 67.38 deg,
10.366 deg per voussoir) between two fixed abutments; granite ``density`` 2650 kg/m^3. The joints carry
sub-contacts laid out by ``contacts`` (``"uniform"`` with ``n_contacts`` = 15 by default, the paper's 15 contact
points per joint; ``"pulatsu"`` for the 8-sub-block geometry, ``"surface"`` with ``mesh_size`` [mm] for the
surface-meshed geometry, ``"edges"``, ``"midpoint"``; see :mod:`.geometry`). A 110 x 50 mm wooden interface
is glued to the fifth voussoir; the steel bearing's roller loads its top vertically at the quarter span
(``load_fraction`` 0.25 of the span from the left springing). The bearing seats on the wood through a
spring ``kn * 110 mm * 200 mm`` (the plate interface is a joint of the same normal stiffness).
``displacements`` ``"large"`` (default, as the paper) or ``"small"`` (contacts keep their assembled geometry;
Kibriya et al. (2023) Fig. 4: no softening branch).

Conditions: ``velocity`` [mm/s] of the loading plate (10, the calibration velocity of Kibriya et al. (2023) section
2.4.2), ``max_displacement`` [mm] (12), ``n_samples`` (241: every 0.05 mm), ``damping`` (local damping,
0.8), ``dt_factor`` (0.5 of the stable step), ``eq_tol`` (1e-5, self-weight equilibrium ratio),
``rounding`` (0.02: sub-contacts stay active 2 % of the joint length past a face's end), ``mass_scale``
(0.01: every block's inertia is scaled by 1/100 while its weight stays; see below).

Inertia: with real masses the model is rate-sensitive far beyond Kibriya et al.'s (2023) 3DEC model (at
10 mm/s a 3.9 kN peak against 3.0 kN quasi-static; at 1.6 mm the 50 mm/s force is 2.3 times the 1 mm/s one).
``benchmarks/arch_studies.py rate`` (``benchmarks/results/arch.rate.md``) traces this to the blocks' inertia,
which local damping amplifies (an accelerating degree of freedom keeps only ``1 - 0.8`` of its unbalanced
force): damping forms, a plate mass, a velocity ramp, finer steps and the output filter leave it; only less
inertia removes it. ``mass_scale`` 0.01 makes 10 mm/s quasi-static (the peak within 15 % of the measured
2.71 kN for the uniform and Pulatsu layouts, a 50-to-1 mm/s ratio at 1.6 mm of 1.1). It is density scaling for
the dynamics only, and for this rate-independent joint law exactly the real-mass model loaded 10 times slower;
a run costs the steps of a real-mass run at 1 mm/s. ``mass_scale`` 1 is the real-mass model.

Channels (forces in kN, displacements in mm from the self-weight equilibrium, progress ``t`` = plate
displacement in mm):

* ``vertical``: plate force against the vertical displacement of the loading plate;
* ``horizontal``: plate force against the horizontal displacement (positive to the right) of the middle
  of the voussoir next to the ``abutment`` (``"right"`` by default: the one that rotates about the
  abutment hinge and moves; the left one barely moves when the left quarter span slides).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ...core.data import Curve
from ...core.model import Channel, Model, Response, SimulationFailure, check_condition
from ...core.parameters import Parameter, ParameterSpace
from ...errors import ConfigurationError
from . import dem
from .failure import FailureMode, failure_mode
from .geometry import GRANITE_DENSITY, LAYOUTS, ArchGeometry, birhane_arch

PULATSU = {"kn": 4.0e9, "ks": 1.6e9, "phi": 30.5}
MEASURED_PEAK_KN = 2.71  # Kibriya et al. (2023) section 2.2


@dataclass(frozen=True)
class ArchRun:
    """One simulation: the channels, the peak, the failure modes at the peak and at the end, and the raw
    DEM output (``raw``, a :class:`~.dem.BatchResult` row view via ``index``)."""

    response: dict[str, Curve]
    peak_force: float  # kN
    peak_displacement: float  # mm
    mode_peak: FailureMode
    mode_end: FailureMode
    status: int
    eq_steps: int
    load_steps: int
    dt: float
    raw: dem.BatchResult
    index: int

    @property
    def pos_eq(self) -> np.ndarray:
        return self.raw.pos_eq[self.index]

    @property
    def pos_peak(self) -> np.ndarray:
        return self.raw.pos_peak[self.index]

    @property
    def pos_end(self) -> np.ndarray:
        return self.raw.pos_end[self.index]


class MasonryArch(Model):
    """Kibriya et al.'s (2023) stone masonry arch on the 2D rigid-block DEM (module docstring)."""

    name = "masonry_arch"
    description = (
        "dry-joint stone masonry arch under a quarter-span load (2D rigid-block DEM, numba; Kibriya et al. (2023))"
    )

    def __init__(
        self,
        *,
        contacts: str = "uniform",
        n_contacts: int = 15,
        mesh_size: float = 12.0,
        n_sub: int = 8,
        span: float = 1200.0,
        rise: float = 400.0,
        thickness: float = 160.0,
        width: float = 200.0,
        n_blocks: int = 13,
        density: float = GRANITE_DENSITY,
        load_fraction: float = 0.25,
        abutment: str = "right",
        displacements: str = "large",
    ) -> None:
        if contacts not in LAYOUTS:
            raise ConfigurationError(f"contacts must be one of {list(LAYOUTS)}, got {contacts!r}")
        if displacements not in ("large", "small"):
            raise ConfigurationError(
                f"displacements must be 'large' (the paper's choice) or 'small', got {displacements!r}"
            )
        self.displacements = displacements
        if abutment not in ("left", "right"):
            raise ConfigurationError(f"abutment must be 'left' or 'right', got {abutment!r}")
        self.contacts, self.n_contacts, self.mesh_size, self.n_sub = (
            contacts,
            int(n_contacts),
            float(mesh_size),
            int(n_sub),
        )
        self.abutment = abutment
        self.geometry = ArchGeometry(
            span / 1e3, rise / 1e3, thickness / 1e3, width / 1e3, int(n_blocks), float(density)
        )
        self.assembly = birhane_arch(self.geometry, load_fraction=load_fraction, n_sub=self.n_sub)
        self.system = dem.build_system(
            self.assembly,
            contacts,
            self.n_contacts,
            mesh_size=self.mesh_size / 1e3,
            n_sub=self.n_sub,
            load_area=0.110 * self.geometry.width,
        )
        self.space = ParameterSpace(
            [
                Parameter(
                    "kn", 1e8, 1e10, scale="log", unit="Pa/m", description="joint normal stiffness per unit area"
                ),
                Parameter("ks", 1e8, 1e10, scale="log", unit="Pa/m", description="joint shear stiffness per unit area"),
                Parameter("phi", 25.0, 45.0, unit="deg", description="joint friction angle"),
            ]
        )
        self.channels = (
            Channel(
                "vertical",
                "plate displacement",
                "force",
                "mm",
                "kN",
                "loading-plate force against the plate's vertical displacement",
            ),
            Channel(
                "horizontal",
                f"horizontal displacement ({abutment} abutment block)",
                "force",
                "mm",
                "kN",
                f"loading-plate force against the horizontal displacement of the voussoir at the {abutment} abutment",
            ),
        )
        self.presets = {"default": dict(PULATSU), "pso_obj1": {"kn": 3.13e9, "ks": 3.66e9, "phi": 30.31}}
        self.default_conditions = {
            "velocity": 10.0,
            "max_displacement": 12.0,
            "n_samples": 241,
            "damping": 0.8,
            "dt_factor": 0.5,
            "eq_tol": 1e-5,
            "rounding": 0.02,
            "mass_scale": 0.01,
        }

    @cached_property
    def centroids(self) -> np.ndarray:
        return self.system.centroid

    # ----------------------------------------------------------------------------------------
    def validate_conditions(self, conditions: Mapping[str, Any] | None = None, *, n_sets: int = 1) -> dict[str, Any]:
        c = super().validate_conditions(conditions, n_sets=n_sets)
        check_condition(self.name, "velocity", c["velocity"], low=0.0, low_open=True, fix="mm/s of the loading plate")
        check_condition(self.name, "max_displacement", c["max_displacement"], low=0.0, low_open=True)
        check_condition(self.name, "n_samples", c["n_samples"], low=2, integer=True)
        check_condition(self.name, "damping", c["damping"])
        alpha, f = float(c["damping"]), float(c["dt_factor"])
        if not 0 <= alpha < 1:
            raise ConfigurationError(f"damping must lie in [0, 1), got {alpha!r}")
        check_condition(self.name, "dt_factor", c["dt_factor"])
        fmax = 1.0 / math.sqrt(1.0 + alpha)
        if not 0 < f < fmax:
            raise ConfigurationError(
                f"dt_factor must lie in (0, {fmax:.3f}) with local damping {alpha!r} (the damped update can be "
                f"(1 + damping) times stiffer than the undamped one), got {f!r}"
            )
        check_condition(self.name, "eq_tol", c["eq_tol"], low=0.0, low_open=True)
        check_condition(self.name, "rounding", c["rounding"], low=0.0)
        check_condition(self.name, "mass_scale", c["mass_scale"], low=0.0, low_open=True, fix="1 for real masses")
        # the sampled columns (time, plate, force, energy, two per tracked point) and the two curves
        cols = dem.S_TRACK + 2 * len(self.system.track_names) + 4
        ns = int(c["n_samples"])
        self.check_memory(
            8.0 * ns * cols * max(n_sets, 1),
            f"a batch of {n_sets} set(s) of {ns} samples",
            "lower n_samples or simulate fewer parameter sets per batch",
        )
        return c

    def batch_settings(self, c: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of :func:`.dem.run_batch` for the validated conditions ``c`` (mm, mm/s in; SI
        out)."""
        v = float(c["velocity"])
        return dict(
            velocity=v / 1e3,
            duration=float(c["max_displacement"]) / v,
            n_samples=int(c["n_samples"]),
            alpha=float(c["damping"]),
            dt_factor=float(c["dt_factor"]),
            eq_tol=float(c["eq_tol"]),
            rounding=float(c["rounding"]),
            mass_scale=float(c["mass_scale"]),
            small_displacements=self.displacements == "small",
        )

    def run(self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None) -> list[ArchRun | SimulationFailure]:
        """Simulate ``theta`` ``(n, 3)`` (``kn, ks, phi``) in one batched call; full results per set."""
        theta = self.check_theta(theta)
        c = self.validate_conditions(conditions, n_sets=theta.shape[0])
        ok = (
            np.all(np.isfinite(theta), axis=1)
            & np.all(theta[:, :2] > 0, axis=1)
            & (theta[:, 2] > 0)
            & (theta[:, 2] < 90)
        )
        out: list[ArchRun | SimulationFailure] = [
            SimulationFailure(f"invalid parameters {theta[i].tolist()!r}") for i in range(theta.shape[0])
        ]
        idx = np.flatnonzero(ok)
        if idx.size == 0:
            return out
        res = dem.run_batch(
            self.system,
            theta[idx, 0],
            theta[idx, 1],
            theta[idx, 2],
            **self.batch_settings(c),
        )
        names = self.system.track_names
        col = dem.S_TRACK + 2 * names.index(f"abutment_{self.abutment}")
        for k, i in enumerate(idx):
            if res.status[k] == dem.DIVERGED:
                out[i] = SimulationFailure("the DEM diverged (non-finite block positions)")
                continue
            if res.status[k] == dem.NOT_EQUILIBRATED:
                out[i] = SimulationFailure(
                    f"the arch found no self-weight equilibrium (unbalanced-force ratio {res.eq_ratio[k]:.3g} > "
                    f"{float(c['eq_tol']):g} after {res.eq_steps[k]} steps)"
                )
                continue
            s = res.samples[k]
            u = s[:, dem.S_DISP] * 1e3
            F = s[:, dem.S_FORCE] / 1e3
            h = s[:, col] * 1e3
            resp = {
                "vertical": Curve(u, F, t=u, x_name="plate displacement", y_name="force", x_unit="mm", y_unit="kN"),
                "horizontal": Curve(
                    h,
                    F,
                    t=u,
                    x_name=f"horizontal displacement ({self.abutment} abutment block)",
                    y_name="force",
                    x_unit="mm",
                    y_unit="kN",
                ),
            }
            j = int(np.argmax(F))
            out[i] = ArchRun(
                resp,
                float(F[j]),
                float(u[j]),
                failure_mode(self.assembly, self.centroids, res.pos_eq[k], res.pos_peak[k]),
                failure_mode(self.assembly, self.centroids, res.pos_eq[k], res.pos_end[k]),
                int(res.status[k]),
                int(res.eq_steps[k]),
                int(res.load_steps[k]),
                float(res.dt[k]),
                res,
                k,
            )
        return out

    def simulate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None
    ) -> list[Response | SimulationFailure]:
        return [r if isinstance(r, SimulationFailure) else r.response for r in self.run(theta, conditions)]
