"""The confined triaxial compression of wet sand of Hu et al. (2024) section 3.2, on the DEM of :mod:`.dem` with the
EEPA law of :mod:`.contact`.

Test (section 3.2.2): dual-sphere clumps poured into an acrylic cylinder of 35 mm inner diameter to a height
of 60 mm and pre-compressed by a steel piston until its force holds at 1.82 N (:mod:`.specimen`, generated
once per seed and cached). Each simulation starts from that packing and piston height, re-establishes the
1.82 N with its own parameters (force servo), and the piston then moves down at 50 mm/s for 0.04 s and up
at 20 mm/s until 0.06 s (setup 1 of Fig. 7). Piston force and displacement are sampled at 2000 Hz (121 samples) and resampled linearly in time to
the 99-sample sequence of PartsNet (Table 1).

Parameters (model order; the first three are searched, the others fixed at Table 2 unless freed with
``free=``): ``lambda_p`` (contact plasticity ratio, all contacts), ``f_ss`` (sand-sand static friction),
``f_sa`` (sand-acrylic static friction), ``dgamma`` [J/m^2] (surface energy, 1.64), ``f0`` [N] (constant
pull-off force, -0.002), ``e_ss``, ``e_sa`` (restitution, 0.25 and 0.3), ``mur_ss``, ``mur_sa`` (rolling
friction, 0.23 and 0.22). Fixed constants of Table 2: Young's moduli 1.229 GPa (sand), 5.6 GPa (acrylic),
260 GPa (steel), Poisson's ratios 0.3, 0.4, 0.3, densities 2000, 1200, 8000 kg/m^3; sand-steel friction 0.5,
restitution 0.3, no rolling friction; tangential stiffness multiplier 2/3, tensile exponent 3, n = 1.5. The
EEPA plasticity and adhesion act on the wall contacts as well (the same ``lambda_p``, ``f0``, ``dgamma``).
The bottom plate is acrylic (the cylinder's base).

Presets: ``"default"``, the calibrated set of section 3.3, ``[lambda_p, f_ss, f_sa] = [0.575, 0.520, 0.347]``,
with the Table 2 values; ``"case1"`` ... ``"case9"``, the true parameters of the verification cases of Table 3.

Specimens (constructor ``specimen``, see :data:`.specimen.SPECIMENS`): ``"paper"`` (the paper's clump, radius
1 mm, filled to 60 mm at the ``fast`` specimen's density: 4554 clumps, 60.1 g for seed 0), ``"fast"`` (default: the clump scaled by 1.5, 1364
clumps, 60.7 g, with a 1.5 times larger time step), ``"tiny"`` (a 12 mm cylinder for tests), or a
:class:`~.specimen.SpecimenSpec`. :meth:`EEPATriaxial.specimen_info` reports the particle count and mass. The
fill density sets the force level: see :mod:`.specimen` and ``docs/granular.md``.

Conditions: ``v_load`` [mm/s] 50, ``t_load`` [s] 0.04, ``v_unload`` [mm/s] 20, ``t_end`` [s] 0.06 (Fig. 7 setup
2 is 5, 0.4, 2, 0.6), ``fs`` [Hz] 2000, ``n_out`` 99, ``preload`` [N] 1.82, ``pc_vmax`` [mm/s] 20 (piston
speed of the pre-compression servo at a full force error), ``pc_tmax`` [s] 0.1, ``pc_tol`` 0.05, ``pc_hold``
[s] 0.002, ``E_scale`` 1 (multiplies every Young's modulus; a softer material takes a larger time step),
``dt_safety`` 0.35 (see :func:`.dem.time_step`; on the ``fast`` specimen the default curve moves by at most
2.6 N, 0.4 % of its peak, between 0.1, 0.2 and 0.35).

Channels (99 samples): ``force_displacement``, piston force [N] against piston displacement [mm] from the
pre-compressed state (progress ``t`` = time [s]); ``force_time``, piston force against time [s].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...core.data import Curve
from ...core.model import Channel, Model, Response, SimulationFailure, check_condition
from ...core.parameters import Parameter, ParameterSpace
from ...errors import ConfigurationError
from . import dem
from .specimen import SPECIMENS, Specimen, SpecimenSpec, generate

SAND = dem.Material(1.229e9, 0.3, 2000.0)
ACRYLIC = dem.Material(5.6e9, 0.4, 1200.0)
STEEL = dem.Material(2.6e11, 0.3, 8000.0)
SAND_STEEL = {"mu": 0.5, "e": 0.3, "mu_r": 0.0}
ZETA, CHI, N_EXP = 2.0 / 3.0, 3.0, 1.5
PRELOAD = 1.82  # N, section 3.2.2
# Verlet skin of the simulations [sphere radii]: the results do not depend on it (the pairs in contact and the order
# of their sums are the same), the speed does: in the load program a tenth of the radius lists fewer idle pairs than
# dem.run's 0.2 at the cost of a few dozen more rebuilds (profile in benchmarks/results/granular.md)
SKIN = 0.1

CALIBRATED = {"lambda_p": 0.575, "f_ss": 0.520, "f_sa": 0.347}
TABLE2 = {"dgamma": 1.64, "f0": -0.002, "e_ss": 0.25, "e_sa": 0.3, "mur_ss": 0.23, "mur_sa": 0.22}
TABLE3 = [  # true lambda_p, f_ss, f_sa of the nine verification cases
    (0.660, 0.471, 0.501),
    (0.730, 0.544, 0.385),
    (0.658, 0.515, 0.405),
    (0.614, 0.463, 0.378),
    (0.647, 0.542, 0.416),
    (0.592, 0.523, 0.396),
    (0.585, 0.483, 0.397),
    (0.675, 0.491, 0.325),
    (0.680, 0.509, 0.457),
]
EXTRA_NAMES = tuple(TABLE2)
_PARAMS = (
    ("lambda_p", 0.50, 0.80, "", "contact plasticity ratio 1 - k1/k2 (eq. 20)"),
    ("f_ss", 0.40, 0.60, "", "sand-sand static friction coefficient"),
    ("f_sa", 0.30, 0.60, "", "sand-acrylic static friction coefficient"),
    ("dgamma", 0.5, 3.0, "J/m^2", "surface energy (JKR pull-off -3/2 pi dgamma R*)"),
    ("f0", -0.005, 0.0, "N", "constant pull-off force"),
    ("e_ss", 0.1, 0.5, "", "sand-sand coefficient of restitution (eq. 22)"),
    ("e_sa", 0.1, 0.5, "", "sand-acrylic coefficient of restitution (eq. 22)"),
    ("mur_ss", 0.0, 0.4, "", "sand-sand rolling friction coefficient"),
    ("mur_sa", 0.0, 0.4, "", "sand-acrylic rolling friction coefficient"),
)
NAMES = tuple(p[0] for p in _PARAMS)


def interaction_tables(theta: np.ndarray, E_scale: float = 1.0, *, cohesive: bool = True) -> np.ndarray:
    """Interaction tables ``(n, 3, N_IFIELDS)`` (sand-sand, sand-acrylic, sand-steel) of full parameter rows
    ``theta`` ``(n, 9)`` in model order; ``cohesive=False`` drops ``f0`` and ``dgamma``."""
    theta = np.atleast_2d(np.asarray(theta, dtype=float))
    out = np.empty((theta.shape[0], 3, dem.N_IFIELDS))
    for i, row in enumerate(theta):
        p = dict(zip(NAMES, map(float, row), strict=True))
        f0, dg = (p["f0"], p["dgamma"]) if cohesive else (0.0, 0.0)
        common = {"lambda_p": p["lambda_p"], "f0": f0, "dgamma": dg, "n": N_EXP, "chi": CHI, "zeta": ZETA}
        out[i, 0] = dem.interaction_row(
            SAND, SAND, dem.Interaction(e=p["e_ss"], mu=p["f_ss"], mu_r=p["mur_ss"], **common), E_scale
        )
        out[i, 1] = dem.interaction_row(
            SAND, ACRYLIC, dem.Interaction(e=p["e_sa"], mu=p["f_sa"], mu_r=p["mur_sa"], **common), E_scale
        )
        out[i, 2] = dem.interaction_row(SAND, STEEL, dem.Interaction(**SAND_STEEL, **common), E_scale)
    return out


def loading_phases(c: Mapping[str, Any], piston_z: float, t_end: float, n_samples: int) -> dem.Phases:
    """The pre-compression and the piston's displacement programme of the conditions ``c`` (mm and mm/s in,
    SI out), run to ``t_end`` and sampled at ``n_samples`` instants."""
    return dem.Phases(
        preload=float(c["preload"]),
        pc_vmax=float(c["pc_vmax"]) * 1e-3,
        pc_tmax=float(c["pc_tmax"]),
        pc_tol=float(c["pc_tol"]),
        pc_hold=float(c["pc_hold"]),
        piston=True,
        piston_z=piston_z,
        v_load=float(c["v_load"]) * 1e-3,
        t_load=float(c["t_load"]),
        v_unload=float(c["v_unload"]) * 1e-3,
        t_end=t_end,
        n_samples=n_samples,
    )


@dataclass(frozen=True)
class TriaxialRun:
    """One simulation: the ``response`` channels (99 samples), the 2000 Hz record (``time`` [s],
    ``displacement`` [mm], ``force`` [N], ``bottom_force`` [N], ``wall_force`` [N]: vertical force on the
    cylinder), the peak force [N], the pre-compression (duration [s], final filtered force [N], steady or not),
    the time step [s], the number of steps and the DEM status."""

    response: dict[str, Curve]
    time: np.ndarray
    displacement: np.ndarray
    force: np.ndarray
    bottom_force: np.ndarray
    wall_force: np.ndarray
    peak_force: float
    preload_time: float
    preload_force: float
    preload_steady: bool
    dt: float
    steps: int
    status: int


class EEPATriaxial(Model):
    """Hu et al.'s (2024) confined triaxial test of wet sand on the EEPA DEM (module docstring).

    Args:
        specimen: ``"paper"``, ``"fast"``, ``"tiny"`` or a :class:`~.specimen.SpecimenSpec`.
        seed: seed of the poured specimen (one packing per seed, cached and reused by every parameter set).
        cache_dir: folder of the specimen cache (default ``$MECHCALIB_CACHE_DIR/granular`` or
            ``~/.cache/mechcalib/granular``).
        free: which of ``dgamma, f0, e_ss, e_sa, mur_ss, mur_sa`` are searched besides ``lambda_p, f_ss, f_sa``.
    """

    name = "eepa_triaxial"
    description = (
        "confined triaxial test of wet sand, 3D DEM of dual-sphere clumps with the EEPA law (Hu et al. (2024))"
    )

    def __init__(
        self,
        *,
        specimen: str | SpecimenSpec = "fast",
        seed: int = 0,
        cache_dir: str | Path | None = None,
        free: Sequence[str] = (),
    ) -> None:
        if isinstance(specimen, str):
            if specimen not in SPECIMENS:
                raise ConfigurationError(
                    f"specimen must be one of {sorted(SPECIMENS)} or a SpecimenSpec, got {specimen!r}"
                )
            specimen = SPECIMENS[specimen]
        if not isinstance(specimen, SpecimenSpec):
            raise ConfigurationError(f"specimen must be a name or a SpecimenSpec, got {specimen!r}")
        free = tuple(free)
        bad = [f for f in free if f not in EXTRA_NAMES]
        if bad:
            raise ConfigurationError(
                f"free may name {list(EXTRA_NAMES)}, got {bad}; lambda_p, f_ss, f_sa are always searched"
            )
        self.spec = specimen
        self.seed = int(seed)
        self.cache_dir = cache_dir
        self.free = free
        self._specimens: dict[float, Specimen] = {}
        self.space = ParameterSpace(
            Parameter(nm, lo, hi, unit=u, description=d, fixed=None if (nm in CALIBRATED or nm in free) else TABLE2[nm])
            for nm, lo, hi, u, d in _PARAMS
        )
        self.channels = (
            Channel(
                "force_displacement",
                "piston displacement",
                "piston force",
                "mm",
                "N",
                "load-displacement sequence of the piston (t = time in s)",
            ),
            Channel("force_time", "time", "piston force", "s", "N", "piston force history"),
        )
        self.presets = {"default": {**CALIBRATED, **TABLE2}}
        for k, (lam, fss, fsa) in enumerate(TABLE3, start=1):
            self.presets[f"case{k}"] = {"lambda_p": lam, "f_ss": fss, "f_sa": fsa, **TABLE2}
        self.default_conditions = {
            "v_load": 50.0,
            "t_load": 0.04,
            "v_unload": 20.0,
            "t_end": 0.06,
            "fs": 2000.0,
            "n_out": 99,
            "preload": PRELOAD,
            "pc_vmax": 20.0,
            "pc_tmax": 0.1,
            "pc_tol": 0.05,
            "pc_hold": 0.002,
            "E_scale": 1.0,
            "dt_safety": 0.35,
        }

    # ----------------------------------------------------------------------------------------
    def _pour_table(self, E_scale: float) -> np.ndarray:
        """Contacts of the pour and the relaxation: elastic (lambda_p = 0), so that a simulation restarting
        from the cached overlaps on the virgin branch finds the forces the packing settled with."""
        mu = self.spec.pour_friction
        v = (
            self.full_vector()
            if mu is None
            else self.full_vector({"f_ss": mu, "f_sa": mu, "mur_ss": 0.0, "mur_sa": 0.0})
        )
        tab = interaction_tables(v[None], E_scale, cohesive=self.spec.cohesive_fill)[0]
        if mu is not None:
            tab[:, dem.I_MU], tab[:, dem.I_MUR] = mu, 0.0
        tab[:, dem.I_LAM], tab[:, dem.I_LAMROOT] = 0.0, 0.0
        return tab

    def _preload_table(self, E_scale: float) -> np.ndarray:
        return interaction_tables(self.full_vector()[None], E_scale)[0]

    def _fill_dt(self, E_scale: float) -> float:
        return dem.time_step(self.spec.radius * 1e-3, SAND, [ACRYLIC, STEEL], CALIBRATED["lambda_p"], E_scale=E_scale)

    def specimen(self, E_scale: float = 1.0) -> Specimen:
        """The settled specimen (generated on first use, then read from the cache)."""
        E_scale = float(E_scale)
        if E_scale not in self._specimens:
            self._specimens[E_scale] = generate(
                self.spec,
                self.seed,
                self._pour_table,
                self._fill_dt,
                E_scale=E_scale,
                preload=PRELOAD,
                preload_table=self._preload_table,
                pc_vmax=0.05,
                cache_dir=self.cache_dir,
            )
        return self._specimens[E_scale]

    def prepare_shared(self, conditions: Mapping[str, Any] | None = None) -> None:
        """Make (or read) the specimen the given conditions use, before simulations start elsewhere: the
        workers of a process pool then read it from the cache instead of each pouring it."""
        self.specimen(float(self.validate_conditions(conditions)["E_scale"]))

    def __getstate__(self) -> dict[str, Any]:
        # The specimens are a cache of the disk cache: a pickled model (sent to a worker, fingerprinted by a
        # run store) is the same whether or not they were loaded.
        return {k: v for k, v in self.__dict__.items() if k != "_specimens"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._specimens = {}

    def specimen_info(self, E_scale: float = 1.0) -> dict[str, Any]:
        """Particle count, mass [g], height [mm], solid fraction and generation figures of the specimen."""
        s = self.specimen(E_scale)
        return {"specimen": self.spec.name, "seed": self.seed, **s.info}

    def validate_conditions(self, conditions: Mapping[str, Any] | None = None, *, n_sets: int = 1) -> dict[str, Any]:
        c = super().validate_conditions(conditions, n_sets=n_sets)
        for k in ("v_load", "t_load", "t_end", "fs", "E_scale", "pc_vmax", "pc_tmax", "pc_tol", "pc_hold"):
            check_condition(self.name, k, c[k], low=0.0, low_open=True)
        check_condition(self.name, "dt_safety", c["dt_safety"], low=0.0, low_open=True, high=1.0)
        for k in ("v_unload", "preload"):
            check_condition(self.name, k, c[k], low=0.0)
        if not float(c["t_load"]) <= float(c["t_end"]):
            raise ConfigurationError(f"t_load must not exceed t_end, got {c['t_load']!r} > {c['t_end']!r}")
        check_condition(self.name, "n_out", c["n_out"], low=2, integer=True)
        # the sampled record (nine columns) and the resampled curves, per set
        n_rec = round(float(c["t_end"]) * float(c["fs"])) + 1
        self.check_memory(
            8.0 * (12 * n_rec + 4 * int(c["n_out"])) * max(n_sets, 1),
            f"a batch of {n_sets} set(s) of {n_rec} samples ({c['t_end']!r} s at {c['fs']!r} Hz)",
            "lower fs or t_end, or simulate fewer parameter sets per batch",
        )
        return c

    def run(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None
    ) -> list[TriaxialRun | SimulationFailure]:
        """Simulate ``theta`` ``(n, 9)`` in one batched DEM call; full results per set."""
        theta = self.check_theta(theta)
        c = self.validate_conditions(conditions, n_sets=theta.shape[0])
        es = float(c["E_scale"])
        lam = theta[:, 0]
        ok = (
            np.all(np.isfinite(theta), axis=1)
            & (lam >= 0)
            & (lam < 1)
            & np.all(theta[:, 1:3] >= 0, axis=1)
            & (theta[:, 3] >= 0)
            & np.all((theta[:, 5:7] >= 0) & (theta[:, 5:7] <= 1), axis=1)
            & np.all(theta[:, 7:9] >= 0, axis=1)
        )
        out: list[TriaxialRun | SimulationFailure] = [
            SimulationFailure(
                f"invalid parameters {theta[i].tolist()!r} (need 0 <= lambda_p < 1, frictions, "
                "dgamma >= 0, 0 <= e <= 1)"
            )
            for i in range(theta.shape[0])
        ]
        idx = np.flatnonzero(ok)
        if idx.size == 0:
            return out
        spec = self.specimen(es)
        tabs = interaction_tables(theta[idx], es)
        r = self.spec.radius * 1e-3
        dts = np.array(
            [
                dem.time_step(r, SAND, [ACRYLIC, STEEL], float(theta[i, 0]), safety=float(c["dt_safety"]), E_scale=es)
                for i in idx
            ]
        )
        t_end, fs = float(c["t_end"]), float(c["fs"])
        n_rec = round(t_end * fs) + 1
        ph = loading_phases(c, spec.piston_z, t_end, n_rec)
        res = dem.run(
            spec.particles, spec.pos, spec.quat, tabs, dts, ph, r_cyl=self.spec.diameter * 5e-4, skin=SKIN * r
        )
        n_out = int(c["n_out"])
        t_out = np.linspace(0.0, t_end, n_out)
        for k, i in enumerate(idx):
            st = int(res.info[k, dem.F_STATUS])
            if st in (dem.DIVERGED, dem.LIST_OVERFLOW):
                why = "diverged (non-finite positions)" if st == dem.DIVERGED else "overflowed its neighbour list"
                out[i] = SimulationFailure(f"the DEM {why}")
                continue
            s = res.samples[k]
            if not np.all(np.isfinite(s[:, : dem.S_FCYL + 1])):
                out[i] = SimulationFailure("the DEM record is incomplete (non-finite samples)")
                continue
            t, u, f = s[:, dem.S_TIME], s[:, dem.S_DISP] * 1e3, s[:, dem.S_FPISTON]
            uo, fo = np.interp(t_out, t, u), np.interp(t_out, t, f)
            resp = {
                "force_displacement": Curve(
                    uo, fo, t=t_out, x_name="piston displacement", y_name="piston force", x_unit="mm", y_unit="N"
                ),
                "force_time": Curve(t_out, fo, t=t_out, x_name="time", y_name="piston force", x_unit="s", y_unit="N"),
            }
            out[i] = TriaxialRun(
                resp,
                t,
                u,
                f,
                s[:, dem.S_FBOTTOM],
                s[:, dem.S_FCYL],
                float(f.max()),
                float(res.info[k, dem.F_PC_T]),
                float(res.info[k, dem.F_PC_FORCE]),
                st != dem.PRELOAD_NOT_STEADY,
                float(dts[k]),
                int(res.info[k, dem.F_STEPS]),
                st,
            )
        return out

    def simulate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None
    ) -> list[Response | SimulationFailure]:
        return [r if isinstance(r, SimulationFailure) else r.response for r in self.run(theta, conditions)]
