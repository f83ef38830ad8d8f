"""A 3D discrete element method for spheres and rigid clumps of spheres (Hu et al. (2024) section 3.2.2: dual-sphere
particles) in a cylinder closed by a bottom plate and a piston, with the EEPA law of :mod:`.contact`.

Bodies (``nb``) are rigid: centre of mass ``pos``, orientation quaternion ``quat`` (body to world, scalar
first), velocity ``vel`` and angular momentum ``angmom`` (world frame), mass and principal moments of inertia
along the body axes. Spheres (``ns``) belong to a body (``sphere_body``) at a fixed offset in its frame
(``sphere_local``) with a radius. Spheres of one body never touch each other.

Neighbours: a Verlet list of sphere pairs within ``r_i + r_j + skin``, built with linked cells of edge
``2 r_max + skin`` and rebuilt when a sphere has moved more than ``skin / 2`` since the last build. The
list is kept sorted by ``(i, j)`` so that the contact history (plastic overlap, tangential spring, rolling
torque) is carried over from the old list to the new one by a merge. A separated pair forgets its history.
The results do not depend on the skin (the pairs in contact and the order of their sums are the same); the
constants of each pair (``R*``, ``m*``, ``k1``, ``k2``, ...) are computed once per build, with the arithmetic of
the step (:func:`.neighbours.pair_constants`).

Walls: the inner surface of a vertical cylinder of radius ``r_cyl`` about the z axis, the bottom plate
``z = z_bottom`` and the piston (a plane facing down at ``z_piston``, moving at ``v_piston``), each with its
own interaction type (row of the interaction table, :func:`interaction_table`). Wall contacts use the
particle's radius as ``R*`` and its body's mass as ``m*``, and keep one history per sphere and wall.

Contact (:func:`contact_force`): EEPA normal force with damping, tangential spring with the Coulomb limit
and rolling resistance of :mod:`.contact`, for the overlap ``delta = r_i + r_j - |x_j - x_i|``; the
contact point lies in the middle of the overlap.

Motion: semi-implicit Euler (symplectic), ``v += F/m dt``, ``x += v dt``; ``L += T dt`` and the orientation
turned by the rotation vector ``w dt`` with ``w = R I^-1 R^T L`` (exact for spheres; for clumps it keeps
``L`` exact in torque-free motion, the kinetic energy to second order in ``w dt``). Gravity acts on every
body.

Time step: ``dt = safety * dt_R * sqrt(k1 / k2)`` (:func:`time_step`), with the Rayleigh time step ``dt_R``
of the smallest sphere and the stiffest partner, and ``sqrt(k1/k2) = sqrt(1 - lambda_p)`` because the
unloading branch of the EEPA law is ``k2/k1`` times stiffer than the Hertzian loading branch the Rayleigh
estimate stands for. The default ``safety`` = 0.2 (the 20 % of the Rayleigh step common in EDEM practice);
tests show energy conservation and a stable rebound at it.

Sequence of :func:`run_one` (every phase optional): settling under gravity until the kinetic energy per body
falls below a threshold; pre-compression with a force-controlled piston until its (filtered) force holds at
``preload`` within a tolerance for ``pc_hold`` seconds; then a displacement program of the piston (down at
``v_load`` until ``t_load``, up at ``v_unload`` until ``t_end``) or, without piston, plain time stepping,
sampled at ``n_samples`` instants uniformly over ``[0, t_end]``.

The code is split by concern: :mod:`.fields` (array layouts and the named tuples the kernels take),
:mod:`.neighbours` (Verlet list), :mod:`.forces` (contacts), :mod:`.motion` (time step of the bodies),
:mod:`.driver` (the phases, one run and a batch); this module holds the Python front end and re-exports the
kernels under their former names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import ConfigurationError
from .contact import damping_beta, effective_moduli, rayleigh_time_step
from .driver import run_batch, run_one
from .fields import (
    DIVERGED,
    F_KE_END,
    F_MAX_OVERLAP,
    F_PC_FORCE,
    F_PC_T,
    F_REBUILDS,
    F_SETTLE_KE,
    F_SETTLE_T,
    F_STATUS,
    F_STEPS,
    F_Z_REF,
    H_DP,
    H_FT,
    H_MR,
    I_BETA,
    I_CHI,
    I_CTR,
    I_ESTAR,
    I_F0,
    I_FMINC,
    I_GSTAR,
    I_K1C,
    I_KADH,
    I_KTC,
    I_LAM,
    I_LAMROOT,
    I_MU,
    I_MUR,
    I_N,
    I_ZETA,
    LIST_OVERFLOW,
    N_CONST,
    N_HIST,
    N_IFIELDS,
    N_INFO,
    N_PHASE,
    N_SAMPLE_COLS,
    NOT_SETTLED,
    OK,
    P_PC_HOLD,
    P_PC_TAU,
    P_PC_TMAX,
    P_PC_TOL,
    P_PC_VMAX,
    P_PISTON,
    P_PISTON_Z,
    P_PRELOAD,
    P_SETTLE_DAMP,
    P_SETTLE_KE,
    P_SETTLE_TMAX,
    P_SETTLE_TMIN,
    P_T_END,
    P_T_LOAD,
    P_V_LOAD,
    P_V_UNLOAD,
    PRELOAD_NOT_STEADY,
    ROLL_DAMPING,
    S_DISP,
    S_FBOTTOM,
    S_FCYL,
    S_FPISTON,
    S_KE,
    S_TIME,
    S_VZ0,
    S_Z0,
    S_ZPISTON,
    W_BOTTOM,
    W_CYL,
    W_PISTON,
    Bodies,
    BodyState,
    Loads,
    NeighbourList,
    Outputs,
    Settings,
    Spheres,
    WallContacts,
)
from .forces import compute_forces, contact_force
from .motion import integrate, kinetic_energy
from .neighbours import build_neighbours, transfer_history

__all__ = [
    "clump_mass_properties",
    "Particles",
    "Material",
    "Interaction",
    "interaction_row",
    "interaction_table",
    "time_step",
    "Phases",
    "DEMResult",
    "run",
    "build_neighbours",
    "transfer_history",
    "contact_force",
    "compute_forces",
    "integrate",
    "kinetic_energy",
    "run_one",
    "run_batch",
    "ROLL_DAMPING",
    "I_ESTAR",
    "I_GSTAR",
    "I_BETA",
    "I_MU",
    "I_MUR",
    "I_LAM",
    "I_F0",
    "I_FMINC",
    "I_KADH",
    "I_N",
    "I_CHI",
    "I_ZETA",
    "I_K1C",
    "I_LAMROOT",
    "I_KTC",
    "I_CTR",
    "N_IFIELDS",
    "W_CYL",
    "W_BOTTOM",
    "W_PISTON",
    "H_DP",
    "H_FT",
    "H_MR",
    "N_HIST",
    "N_CONST",
    "P_SETTLE_TMAX",
    "P_SETTLE_TMIN",
    "P_SETTLE_KE",
    "P_PRELOAD",
    "P_PC_VMAX",
    "P_PC_TMAX",
    "P_PC_TOL",
    "P_PC_HOLD",
    "P_PC_TAU",
    "P_PISTON",
    "P_PISTON_Z",
    "P_V_LOAD",
    "P_T_LOAD",
    "P_V_UNLOAD",
    "P_T_END",
    "P_SETTLE_DAMP",
    "N_PHASE",
    "S_TIME",
    "S_DISP",
    "S_FPISTON",
    "S_FBOTTOM",
    "S_FCYL",
    "S_KE",
    "S_Z0",
    "S_VZ0",
    "S_ZPISTON",
    "N_SAMPLE_COLS",
    "F_STATUS",
    "F_STEPS",
    "F_SETTLE_T",
    "F_PC_T",
    "F_PC_FORCE",
    "F_Z_REF",
    "F_REBUILDS",
    "F_MAX_OVERLAP",
    "F_KE_END",
    "F_SETTLE_KE",
    "N_INFO",
    "OK",
    "NOT_SETTLED",
    "PRELOAD_NOT_STEADY",
    "DIVERGED",
    "LIST_OVERFLOW",
    "Bodies",
    "BodyState",
    "Loads",
    "NeighbourList",
    "Outputs",
    "Settings",
    "Spheres",
    "WallContacts",
]


# ---------------------------------------------------------------------------------------------------------
# Particles
# ---------------------------------------------------------------------------------------------------------
def clump_mass_properties(radius: float, half_spacing: float, density: float) -> tuple[float, float, float]:
    """Mass [kg] and principal moments of inertia ``(I_axis, I_perp)`` [kg m^2] of the union of two spheres of
    ``radius`` with centres at ``+-half_spacing`` on the body x axis (``half_spacing = 0``: one sphere).

    The union is a solid of revolution with ``rho(x)^2 = r^2 - (|x| - a)^2``: a polynomial on each half, so a
    5-point Gauss-Legendre rule integrates volume and moments exactly.
    """
    r, a = float(radius), abs(float(half_spacing))
    if r <= 0 or density <= 0:
        raise ConfigurationError(f"radius and density must be > 0, got {radius!r} and {density!r}")
    lo, hi = max(0.0, a - r), a + r
    xg, wg = np.polynomial.legendre.leggauss(5)
    x = 0.5 * (hi - lo) * xg + 0.5 * (hi + lo)
    w = 0.5 * (hi - lo) * wg
    rho2 = np.clip(r * r - (x - a) ** 2, 0.0, None)
    vol = 2 * np.sum(w * np.pi * rho2)
    i_axis = 2 * np.sum(w * 0.5 * np.pi * rho2**2) * density
    i_perp = 2 * np.sum(w * np.pi * rho2 * (0.25 * rho2 + x * x)) * density
    return float(vol * density), float(i_axis), float(i_perp)


@dataclass(frozen=True)
class Particles:
    """Rigid bodies made of spheres (SI units).

    ``mass`` ``(nb,)``, ``inertia`` ``(nb, 3)`` principal moments along the body axes; ``sphere_body``
    ``(ns,)``, ``sphere_local`` ``(ns, 3)`` offsets in the body frame, ``sphere_radius`` ``(ns,)``.
    """

    mass: np.ndarray
    inertia: np.ndarray
    sphere_body: np.ndarray
    sphere_local: np.ndarray
    sphere_radius: np.ndarray

    @property
    def n_bodies(self) -> int:
        return int(self.mass.size)

    @property
    def n_spheres(self) -> int:
        return int(self.sphere_body.size)

    @classmethod
    def clumps(cls, n: int, radius: float, half_spacing: float, density: float) -> Particles:
        """``n`` dual-sphere clumps (``half_spacing = 0``: ``n`` single spheres)."""
        m, ia, ip = clump_mass_properties(radius, half_spacing, density)
        if half_spacing == 0:
            local = np.zeros((n, 3))
            body = np.arange(n, dtype=np.int64)
        else:
            local = np.tile(np.array([[-half_spacing, 0, 0], [half_spacing, 0, 0]], float), (n, 1))
            body = np.repeat(np.arange(n, dtype=np.int64), 2)
        return cls(
            np.full(n, m), np.tile([ia, ip, ip], (n, 1)).astype(float), body, local, np.full(body.size, float(radius))
        )

    def subset(self, bodies: np.ndarray) -> Particles:
        """The particles of the listed ``bodies`` (renumbered in that order)."""
        bodies = np.asarray(bodies, dtype=np.int64)
        remap = -np.ones(self.n_bodies, dtype=np.int64)
        remap[bodies] = np.arange(bodies.size)
        keep = remap[self.sphere_body] >= 0
        order = np.argsort(remap[self.sphere_body[keep]], kind="stable")
        idx = np.flatnonzero(keep)[order]
        return Particles(
            self.mass[bodies].copy(),
            self.inertia[bodies].copy(),
            remap[self.sphere_body[idx]],
            self.sphere_local[idx].copy(),
            self.sphere_radius[idx].copy(),
        )


# ---------------------------------------------------------------------------------------------------------
# Materials and interactions
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Material:
    """Young's modulus [Pa], Poisson's ratio and density [kg/m^3]."""

    E: float
    nu: float
    density: float

    @property
    def G(self) -> float:
        return self.E / (2.0 * (1.0 + self.nu))


@dataclass(frozen=True)
class Interaction:
    """Contact properties of a pair of materials: restitution ``e``, static friction ``mu``, rolling friction
    ``mu_r``; the EEPA settings ``lambda_p``, ``f0`` [N], ``dgamma`` [J/m^2] (or ``kadh`` [N/m^chi] given
    directly when >= 0), exponents ``n`` and ``chi``, tangential stiffness multiplier ``zeta``."""

    e: float
    mu: float
    mu_r: float
    lambda_p: float = 0.0
    f0: float = 0.0
    dgamma: float = 0.0
    kadh: float = -1.0
    n: float = 1.5
    chi: float = 3.0
    zeta: float = 2.0 / 3.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.lambda_p < 1.0:
            raise ConfigurationError(f"lambda_p must lie in [0, 1) (k2 = k1 / (1 - lambda_p)), got {self.lambda_p!r}")
        if not 0.0 <= self.e <= 1.0 or self.mu < 0 or self.mu_r < 0 or self.dgamma < 0:
            raise ConfigurationError(
                f"need 0 <= e <= 1 and mu, mu_r, dgamma >= 0, got e={self.e!r}, mu={self.mu!r}, "
                f"mu_r={self.mu_r!r}, dgamma={self.dgamma!r}"
            )
        if self.n <= 0 or self.chi <= 0 or self.zeta <= 0:
            raise ConfigurationError(f"n, chi and zeta must be > 0, got {self.n!r}, {self.chi!r}, {self.zeta!r}")


def interaction_row(m1: Material, m2: Material | None, it: Interaction, E_scale: float = 1.0) -> np.ndarray:
    """One row of the interaction table for particles of ``m1`` against ``m2`` (``None``: rigid).
    ``E_scale`` multiplies every Young's modulus (softer contacts, a larger time step). The DEM uses the
    Hertzian law (``n = 1.5``, ``k1`` from eq. 19); the linear law lives in :mod:`.contact` only."""
    if it.n != 1.5:
        raise ConfigurationError(f"the DEM uses the Hertzian EEPA law with n = 1.5, got n={it.n!r}")
    e2 = math.inf if m2 is None else m2.E * E_scale
    nu2 = 0.0 if m2 is None else m2.nu
    estar, gstar = effective_moduli(m1.E * E_scale, m1.nu, e2, nu2)
    row = np.zeros(N_IFIELDS)
    row[I_ESTAR], row[I_GSTAR] = estar, gstar
    row[I_BETA] = damping_beta(it.e)
    row[I_MU], row[I_MUR], row[I_LAM], row[I_F0] = it.mu, it.mu_r, it.lambda_p, it.f0
    row[I_FMINC] = -1.5 * math.pi * it.dgamma  # f_min = I_FMINC * R*
    row[I_KADH], row[I_N], row[I_CHI], row[I_ZETA] = it.kadh, it.n, it.chi, it.zeta
    row[I_K1C] = 4.0 / 3.0 * estar  # k1 = I_K1C sqrt(R*) (eq. 19)
    row[I_LAMROOT] = it.lambda_p ** (1.0 / it.n)
    row[I_KTC] = 8.0 * it.zeta * gstar  # k_t = I_KTC sqrt(R* delta) (eq. 25)
    row[I_CTR] = math.sqrt(4.0 * it.zeta * gstar / estar)  # c_t / c_n = sqrt(k_t / K_n)
    return row


def interaction_table(rows: list[np.ndarray]) -> np.ndarray:
    return np.ascontiguousarray(np.array(rows, dtype=float).reshape(-1, N_IFIELDS))


def time_step(
    radius: float,
    particle: Material,
    walls: list[Material | None],
    lambda_p: float,
    *,
    safety: float = 0.2,
    E_scale: float = 1.0,
) -> float:
    """``safety * dt_R * sqrt(1 - lambda_p)`` (module docstring): the Rayleigh step of the particle material
    (scaled modulus), reduced by ``sqrt(E_p / E*_max)`` relative to the stiffest particle-wall pair."""
    if not 0 < safety <= 1:
        raise ConfigurationError(f"the time-step safety factor must lie in (0, 1], got {safety!r}")
    g = particle.G * E_scale
    dt = rayleigh_time_step(radius, particle.density, g, particle.nu)
    e_pp = effective_moduli(particle.E * E_scale, particle.nu, particle.E * E_scale, particle.nu)[0]
    e_max = e_pp
    for w in walls:
        e2 = math.inf if w is None else w.E * E_scale
        e_max = max(e_max, effective_moduli(particle.E * E_scale, particle.nu, e2, 0.0 if w is None else w.nu)[0])
    return float(safety * dt * math.sqrt(1.0 - lambda_p) * math.sqrt(e_pp / e_max))


# ---------------------------------------------------------------------------------------------------------
# Phases and the batched front end
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Phases:
    """Settings of the phases of :func:`run_one` (SI units; a phase with a zero duration or force is skipped).

    ``settle_tmax``, ``settle_tmin`` [s], ``settle_ke`` [J per body], ``settle_damping`` (Cundall's local damping
    coefficient, this phase only): settling under gravity. ``preload`` [N],
    ``pc_vmax`` [m/s] (piston speed at the largest force error), ``pc_tmax`` [s], ``pc_tol`` (relative),
    ``pc_hold`` [s], ``pc_tau`` [s] (filter of the piston force): pre-compression. ``piston``: whether the
    piston is present (from the pre-compression on), ``piston_z`` [m] its start (NaN: on the highest sphere).
    ``v_load``, ``t_load``, ``v_unload``, ``t_end``: the displacement program [m/s, s]; ``n_samples`` samples.
    """

    settle_tmax: float = 0.0
    settle_tmin: float = 0.0
    settle_ke: float = 0.0
    settle_damping: float = 0.0
    preload: float = 0.0
    pc_vmax: float = 0.01
    pc_tmax: float = 0.1
    pc_tol: float = 0.05
    pc_hold: float = 2e-3
    pc_tau: float = 2e-4
    piston: bool = False
    piston_z: float = math.nan
    v_load: float = 0.0
    t_load: float = 0.0
    v_unload: float = 0.0
    t_end: float = 0.0
    n_samples: int = 2

    def array(self) -> np.ndarray:
        a = np.zeros(N_PHASE)
        a[P_SETTLE_TMAX], a[P_SETTLE_TMIN], a[P_SETTLE_KE] = self.settle_tmax, self.settle_tmin, self.settle_ke
        a[P_SETTLE_DAMP] = self.settle_damping
        a[P_PRELOAD], a[P_PC_VMAX], a[P_PC_TMAX] = self.preload, self.pc_vmax, self.pc_tmax
        a[P_PC_TOL], a[P_PC_HOLD], a[P_PC_TAU] = self.pc_tol, self.pc_hold, self.pc_tau
        a[P_PISTON], a[P_PISTON_Z] = float(self.piston), self.piston_z
        a[P_V_LOAD], a[P_T_LOAD], a[P_V_UNLOAD], a[P_T_END] = self.v_load, self.t_load, self.v_unload, self.t_end
        return a


@dataclass(frozen=True)
class DEMResult:
    """Outputs of :func:`run` for ``n`` interaction tables.

    ``samples`` ``(n, n_samples, N_SAMPLE_COLS)`` (columns ``S_*``: time [s], piston displacement from its
    reference [m], interval-mean forces on the piston, the bottom and the cylinder (vertical) [N], kinetic
    energy [J], z and vz of body 0, piston z); ``pos``, ``quat``, ``vel``, ``angmom``: final states
    ``(n, nb, 3|4)``; ``info`` ``(n, N_INFO)`` (fields ``F_*``).
    """

    samples: np.ndarray
    pos: np.ndarray
    quat: np.ndarray
    vel: np.ndarray
    angmom: np.ndarray
    info: np.ndarray

    @property
    def status(self) -> np.ndarray:
        return self.info[:, F_STATUS].astype(int)


def run(
    particles: Particles,
    pos: np.ndarray,
    quat: np.ndarray,
    itabs: np.ndarray,
    dt: float | np.ndarray,
    phases: Phases,
    *,
    wall_types: tuple[int, int, int] = (1, 1, 2),
    r_cyl: float = 0.0,
    z_bottom: float = 0.0,
    gravity: float = -9.81,
    skin: float | None = None,
    vel: np.ndarray | None = None,
    angmom: np.ndarray | None = None,
    list_factor: float = 16.0,
) -> DEMResult:
    """Simulate ``n`` copies of one packing, each with its interaction table ``itabs[i]`` ``(n_types, N_IFIELDS)``
    (row 0: particle-particle; ``wall_types`` name the rows of the cylinder, bottom and piston) and time step
    ``dt[i]``, in parallel over the copies. ``r_cyl = 0``: no cylinder. ``skin`` defaults to 0.2 r_max."""
    itabs = np.ascontiguousarray(np.asarray(itabs, dtype=float))
    if itabs.ndim == 2:
        itabs = itabs[None]
    n = itabs.shape[0]
    dt_arr = np.ascontiguousarray(np.broadcast_to(np.asarray(dt, float), (n,)))
    if not np.all(np.isfinite(dt_arr) & (dt_arr > 0)):
        raise ConfigurationError(f"the time step must be finite and > 0, got {dt!r}")
    nb_ = particles.n_bodies
    pos = np.ascontiguousarray(pos, dtype=float).reshape(nb_, 3)
    quat = np.ascontiguousarray(quat, dtype=float).reshape(nb_, 4)
    vel = np.zeros((nb_, 3)) if vel is None else np.ascontiguousarray(vel, dtype=float).reshape(nb_, 3)
    angmom = np.zeros((nb_, 3)) if angmom is None else np.ascontiguousarray(angmom, dtype=float).reshape(nb_, 3)
    if skin is None:
        skin = 0.2 * float(particles.sphere_radius.max())
    ns_out = max(2, int(phases.n_samples))
    samples = np.full((n, ns_out, N_SAMPLE_COLS), np.nan)
    pos_out = np.zeros((n, nb_, 3))
    quat_out = np.zeros((n, nb_, 4))
    vel_out = np.zeros((n, nb_, 3))
    angmom_out = np.zeros((n, nb_, 3))
    info = np.zeros((n, N_INFO))
    bodies = Bodies(
        np.ascontiguousarray(particles.mass, float),
        np.ascontiguousarray(particles.inertia, float),
        np.ascontiguousarray(particles.sphere_body, np.int64),
        np.ascontiguousarray(particles.sphere_local, float),
        np.ascontiguousarray(particles.sphere_radius, float),
    )
    settings = Settings(
        np.array(wall_types, dtype=np.int64),
        float(r_cyl),
        float(z_bottom),
        float(gravity),
        float(skin),
        float(list_factor),
        phases.array(),
    )
    out = Outputs(samples, pos_out, quat_out, vel_out, angmom_out, info)
    run_batch(bodies, BodyState(pos, quat, vel, angmom), itabs, dt_arr, settings, out)
    return DEMResult(samples, pos_out, quat_out, vel_out, angmom_out, info)
