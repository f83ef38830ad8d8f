"""A 3D discrete element method for spheres and rigid clumps of spheres (seed 001 section 3.2.2: dual-sphere
particles) in a cylinder closed by a bottom plate and a piston, with the EEPA law of :mod:`.contact`.

Bodies (``nb``) are rigid: centre of mass ``pos``, orientation quaternion ``quat`` (body to world, scalar
first), velocity ``vel`` and angular momentum ``angmom`` (world frame), mass and principal moments of inertia
along the body axes. Spheres (``ns``) belong to a body (``sphere_body``) at a fixed offset in its frame
(``sphere_local``) with a radius. Spheres of one body never touch each other.

Neighbours: a Verlet list of sphere pairs within ``r_i + r_j + skin``, built with linked cells of edge
``2 r_max + skin`` and rebuilt when a sphere has moved more than ``skin / 2`` since the last build. The
list is kept sorted by ``(i, j)`` so that the contact history (plastic overlap, tangential spring, rolling
torque) is carried over from the old list to the new one by a merge. A separated pair forgets its history.

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

from ...errors import ConfigurationError
from .contact import (
    SQRT_5_6,
    damping_beta,
    eepa_normal,
    effective_moduli,
    rayleigh_time_step,
    rolling_damping,
    rolling_stiffness,
    rolling_torque,
    tangential_force,
)

ROLL_DAMPING = 0.3  # eta_r of the rolling damper (Ai et al. 2011)
# fields of a row of the interaction table
(I_ESTAR, I_GSTAR, I_BETA, I_MU, I_MUR, I_LAM, I_F0, I_FMINC, I_KADH, I_N, I_CHI, I_ZETA, I_K1C,
 I_LAMROOT, I_KTC, I_CTR) = range(16)
N_IFIELDS = 16
# walls
W_CYL, W_BOTTOM, W_PISTON = 0, 1, 2
# history columns: plastic overlap, tangential spring (3), rolling torque (3)
H_DP, H_FT, H_MR = 0, 1, 4
N_HIST = 7
# phase settings (the ``phase`` array of run_one)
(P_SETTLE_TMAX, P_SETTLE_TMIN, P_SETTLE_KE, P_PRELOAD, P_PC_VMAX, P_PC_TMAX, P_PC_TOL, P_PC_HOLD, P_PC_TAU,
 P_PISTON, P_PISTON_Z, P_V_LOAD, P_T_LOAD, P_V_UNLOAD, P_T_END, P_SETTLE_DAMP) = range(16)
N_PHASE = 16
# sample columns
(S_TIME, S_DISP, S_FPISTON, S_FBOTTOM, S_FCYL, S_KE, S_Z0, S_VZ0, S_ZPISTON) = range(9)
N_SAMPLE_COLS = 9
# info fields
(F_STATUS, F_STEPS, F_SETTLE_T, F_PC_T, F_PC_FORCE, F_Z_REF, F_REBUILDS, F_MAX_OVERLAP, F_KE_END,
 F_SETTLE_KE) = range(10)
N_INFO = 10
# status codes
OK, NOT_SETTLED, PRELOAD_NOT_STEADY, DIVERGED, LIST_OVERFLOW = 0, 1, 2, 3, 4


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
        return cls(np.full(n, m), np.tile([ia, ip, ip], (n, 1)).astype(float), body, local,
                   np.full(body.size, float(radius)))

    def subset(self, bodies: np.ndarray) -> Particles:
        """The particles of the listed ``bodies`` (renumbered in that order)."""
        bodies = np.asarray(bodies, dtype=np.int64)
        remap = -np.ones(self.n_bodies, dtype=np.int64)
        remap[bodies] = np.arange(bodies.size)
        keep = remap[self.sphere_body] >= 0
        order = np.argsort(remap[self.sphere_body[keep]], kind="stable")
        idx = np.flatnonzero(keep)[order]
        return Particles(self.mass[bodies].copy(), self.inertia[bodies].copy(), remap[self.sphere_body[idx]],
                         self.sphere_local[idx].copy(), self.sphere_radius[idx].copy())


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


def time_step(radius: float, particle: Material, walls: list[Material | None], lambda_p: float, *,
              safety: float = 0.2, E_scale: float = 1.0) -> float:
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
# Kernels
# ---------------------------------------------------------------------------------------------------------
@nb.njit(cache=True)
def _rotation(quat, R):
    """Rotation matrices ``R`` ``(nb, 9)`` (row-major, body to world) of unit quaternions ``(nb, 4)``."""
    for b in range(quat.shape[0]):
        w, x, y, z = quat[b, 0], quat[b, 1], quat[b, 2], quat[b, 3]
        R[b, 0] = 1 - 2 * (y * y + z * z)
        R[b, 1] = 2 * (x * y - w * z)
        R[b, 2] = 2 * (x * z + w * y)
        R[b, 3] = 2 * (x * y + w * z)
        R[b, 4] = 1 - 2 * (x * x + z * z)
        R[b, 5] = 2 * (y * z - w * x)
        R[b, 6] = 2 * (x * z - w * y)
        R[b, 7] = 2 * (y * z + w * x)
        R[b, 8] = 1 - 2 * (x * x + y * y)


@nb.njit(cache=True)
def _omega(R, inertia, angmom, omega):
    """``w = R I^-1 R^T L`` per body."""
    for b in range(R.shape[0]):
        lx, ly, lz = angmom[b, 0], angmom[b, 1], angmom[b, 2]
        # body-frame components R^T L, divided by the principal moments
        a0 = (R[b, 0] * lx + R[b, 3] * ly + R[b, 6] * lz) / inertia[b, 0]
        a1 = (R[b, 1] * lx + R[b, 4] * ly + R[b, 7] * lz) / inertia[b, 1]
        a2 = (R[b, 2] * lx + R[b, 5] * ly + R[b, 8] * lz) / inertia[b, 2]
        omega[b, 0] = R[b, 0] * a0 + R[b, 1] * a1 + R[b, 2] * a2
        omega[b, 1] = R[b, 3] * a0 + R[b, 4] * a1 + R[b, 5] * a2
        omega[b, 2] = R[b, 6] * a0 + R[b, 7] * a1 + R[b, 8] * a2


@nb.njit(cache=True)
def _spheres(pos, R, sb, sloc, sx, srel):
    """World positions ``sx`` of the spheres and their offsets ``srel`` from their body's centre."""
    for s in range(sb.size):
        b = sb[s]
        lx, ly, lz = sloc[s, 0], sloc[s, 1], sloc[s, 2]
        rx = R[b, 0] * lx + R[b, 1] * ly + R[b, 2] * lz
        ry = R[b, 3] * lx + R[b, 4] * ly + R[b, 5] * lz
        rz = R[b, 6] * lx + R[b, 7] * ly + R[b, 8] * lz
        srel[s, 0], srel[s, 1], srel[s, 2] = rx, ry, rz
        sx[s, 0], sx[s, 1], sx[s, 2] = pos[b, 0] + rx, pos[b, 1] + ry, pos[b, 2] + rz


@nb.njit(cache=True)
def build_neighbours(sx, srad, sb, skin, start, nbr):
    """Verlet list of sphere pairs ``i < j`` of different bodies closer than ``r_i + r_j + skin``, by linked
    cells. Writes ``start`` ``(ns + 1,)`` and ``nbr`` (CSR, each row sorted); returns the number of pairs, or
    -1 if ``nbr`` is too short."""
    ns = sb.size
    if ns == 0:
        start[0] = 0
        return 0
    rmax = srad.max()
    cell = 2.0 * rmax + skin
    lo = np.empty(3)
    hi = np.empty(3)
    for d in range(3):
        lo[d] = sx[:, d].min()
        hi[d] = sx[:, d].max()
    nc = np.empty(3, dtype=np.int64)
    for d in range(3):
        nc[d] = max(1, int((hi[d] - lo[d]) / cell) + 1)
    ncell = nc[0] * nc[1] * nc[2]
    cid = np.empty((ns, 3), dtype=np.int64)
    head = np.zeros(ncell + 1, dtype=np.int64)
    for s in range(ns):
        for d in range(3):
            c = int((sx[s, d] - lo[d]) / cell)
            cid[s, d] = min(max(c, 0), nc[d] - 1)
        head[(cid[s, 0] * nc[1] + cid[s, 1]) * nc[2] + cid[s, 2] + 1] += 1
    for c in range(ncell):
        head[c + 1] += head[c]
    fill = head[:-1].copy()
    order = np.empty(ns, dtype=np.int64)
    for s in range(ns):
        c = (cid[s, 0] * nc[1] + cid[s, 1]) * nc[2] + cid[s, 2]
        order[fill[c]] = s
        fill[c] += 1
    buf = np.empty(256, dtype=np.int64)
    ptr = 0
    cap = nbr.size
    for i in range(ns):
        start[i] = ptr
        m = 0
        xi, yi, zi, ri, bi = sx[i, 0], sx[i, 1], sx[i, 2], srad[i], sb[i]
        for dx in range(-1, 2):
            cx = cid[i, 0] + dx
            if cx < 0 or cx >= nc[0]:
                continue
            for dy in range(-1, 2):
                cy = cid[i, 1] + dy
                if cy < 0 or cy >= nc[1]:
                    continue
                for dz in range(-1, 2):
                    cz = cid[i, 2] + dz
                    if cz < 0 or cz >= nc[2]:
                        continue
                    c = (cx * nc[1] + cy) * nc[2] + cz
                    for q in range(head[c], head[c + 1]):
                        j = order[q]
                        if j <= i or sb[j] == bi:
                            continue
                        ex, ey, ez = sx[j, 0] - xi, sx[j, 1] - yi, sx[j, 2] - zi
                        rc = ri + srad[j] + skin
                        if ex * ex + ey * ey + ez * ez < rc * rc and m < buf.size:
                            buf[m] = j
                            m += 1
        # insertion sort of the (few) neighbours of i
        for a in range(1, m):
            v = buf[a]
            b = a - 1
            while b >= 0 and buf[b] > v:
                buf[b + 1] = buf[b]
                b -= 1
            buf[b + 1] = v
        if ptr + m > cap:
            return -1
        for a in range(m):
            nbr[ptr + a] = buf[a]
        ptr += m
    start[ns] = ptr
    return ptr


@nb.njit(cache=True)
def transfer_history(start_o, nbr_o, hist_o, start_n, nbr_n, hist_n):
    """Copy the history of pairs present in both lists (rows sorted by ``j``) and zero the new ones."""
    ns = start_n.size - 1
    for i in range(ns):
        a, a_end = start_o[i], start_o[i + 1]
        for k in range(start_n[i], start_n[i + 1]):
            j = nbr_n[k]
            while a < a_end and nbr_o[a] < j:
                a += 1
            if a < a_end and nbr_o[a] == j:
                for c in range(N_HIST):
                    hist_n[k, c] = hist_o[a, c]
            else:
                for c in range(N_HIST):
                    hist_n[k, c] = 0.0


@nb.njit(cache=True)
def contact_force(hist, k, delta, nx, ny, nz, vx, vy, vz, wx, wy, wz, rstar, mstar, rroll, iroll, row, dt):
    """Force on body i and rolling torque on it at one contact (module docstring).

    ``(nx, ny, nz)``: unit normal from i towards j; ``(vx, vy, vz)``: velocity of i relative to j at the
    contact point; ``(wx, wy, wz)``: ``w_i - w_j``; ``rstar``, ``mstar``, ``rroll``, ``iroll``: effective
    radius, mass, rolling radius and moment of inertia about the contact; ``row``: interaction row;
    ``hist[k]``: the contact's history (updated).
    Returns ``(fx, fy, fz, mx, my, mz, fn)`` with ``fn`` the normal force (compression positive).
    """
    # the law of contact.py with n = 3/2, sharing the square roots of R* and delta:
    # k1 = 4/3 E* sqrt(R*), K_n = 3/2 k1 sqrt(delta) (eq. 21), k_t = 8 zeta G* sqrt(R* delta) (eq. 25), and the
    # tangential damper 2 sqrt(5/6) |beta| sqrt(k_t m*) = c_n sqrt(k_t / K_n) with a constant ratio
    sr = math.sqrt(rstar)
    sd = math.sqrt(delta)
    k1 = row[I_K1C] * sr
    k2 = k1 / (1.0 - row[I_LAM])
    f0 = row[I_F0]
    fh, dp, nc, _ = eepa_normal(delta, hist[k, H_DP], k1, k2, row[I_KADH], f0, row[I_FMINC] * rstar, 1.5,
                                row[I_CHI], row[I_LAMROOT])
    hist[k, H_DP] = dp
    kn = 1.5 * k1 * sd
    cn = -2.0 * SQRT_5_6 * row[I_BETA] * math.sqrt(kn * mstar)  # eq. 18
    vn = vx * nx + vy * ny + vz * nz  # approach rate d(delta)/dt
    fn = fh + cn * vn
    tvx, tvy, tvz = vx - vn * nx, vy - vn * ny, vz - vn * nz
    kt = row[I_KTC] * sr * sd
    sx, sy, sz, tx, ty, tz, _ = tangential_force(hist[k, H_FT], hist[k, H_FT + 1], hist[k, H_FT + 2], nx, ny, nz,
                                                 tvx, tvy, tvz, kt, cn * row[I_CTR], dt, row[I_MU] * nc)
    hist[k, H_FT], hist[k, H_FT + 1], hist[k, H_FT + 2] = sx, sy, sz
    mx, my, mz = 0.0, 0.0, 0.0
    mur = row[I_MUR]
    if mur > 0.0:
        kr = rolling_stiffness(kn, mur, rroll)
        sx, sy, sz, mx, my, mz, _ = rolling_torque(hist[k, H_MR], hist[k, H_MR + 1], hist[k, H_MR + 2], nx, ny, nz,
                                                   wx, wy, wz, kr, rolling_damping(kr, iroll, ROLL_DAMPING),
                                                   mur * rroll * nc, dt)
        hist[k, H_MR], hist[k, H_MR + 1], hist[k, H_MR + 2] = sx, sy, sz
    return -fn * nx + tx, -fn * ny + ty, -fn * nz + tz, mx, my, mz, fn


@nb.njit(cache=True)
def _clear(hist, k):
    """Forget the history of a separated contact."""
    for c in range(N_HIST):
        if hist[k, c] != 0.0:
            for q in range(N_HIST):
                hist[k, q] = 0.0
            return


@nb.njit(cache=True)
def compute_forces(pos, vel, omega, mass, iroll, sb, srad, sx, srel, start, nbr, hist, whist, itab, wtype,
                   r_cyl, z_bottom, z_piston, v_piston, piston_on, gz, dt, F, T, wallf):
    """Gravity, pair and wall contact forces and torques on the bodies (``F``, ``T`` ``(nb, 3)``, overwritten)
    and the forces on the walls (``wallf`` ``(3, 3)``: cylinder, bottom, piston; overwritten). Returns the
    largest overlap relative to the sphere radius."""
    nb_ = pos.shape[0]
    for b in range(nb_):
        F[b, 0] = 0.0
        F[b, 1] = 0.0
        F[b, 2] = mass[b] * gz
        T[b, 0] = 0.0
        T[b, 1] = 0.0
        T[b, 2] = 0.0
    for w in range(3):
        for d in range(3):
            wallf[w, d] = 0.0
    ov = 0.0
    row = itab[0]
    ns = sb.size
    for i in range(ns):
        bi = sb[i]
        ri = srad[i]
        for k in range(start[i], start[i + 1]):
            j = nbr[k]
            ex, ey, ez = sx[j, 0] - sx[i, 0], sx[j, 1] - sx[i, 1], sx[j, 2] - sx[i, 2]
            rj = srad[j]
            d2 = ex * ex + ey * ey + ez * ez
            rs = ri + rj
            if d2 >= rs * rs:
                _clear(hist, k)
                continue
            dist = math.sqrt(d2)
            delta = rs - dist
            nx, ny, nz = ex / dist, ey / dist, ez / dist
            bj = sb[j]
            # contact point (middle of the overlap) relative to the two centres of mass
            h = ri - 0.5 * delta
            cx, cy, cz = sx[i, 0] + h * nx, sx[i, 1] + h * ny, sx[i, 2] + h * nz
            aix, aiy, aiz = cx - pos[bi, 0], cy - pos[bi, 1], cz - pos[bi, 2]
            ajx, ajy, ajz = cx - pos[bj, 0], cy - pos[bj, 1], cz - pos[bj, 2]
            vx = (vel[bi, 0] + omega[bi, 1] * aiz - omega[bi, 2] * aiy) - (vel[bj, 0] + omega[bj, 1] * ajz - omega[bj, 2] * ajy)
            vy = (vel[bi, 1] + omega[bi, 2] * aix - omega[bi, 0] * aiz) - (vel[bj, 1] + omega[bj, 2] * ajx - omega[bj, 0] * ajz)
            vz = (vel[bi, 2] + omega[bi, 0] * aiy - omega[bi, 1] * aix) - (vel[bj, 2] + omega[bj, 0] * ajy - omega[bj, 1] * ajx)
            rstar = ri * rj / rs
            mstar = mass[bi] * mass[bj] / (mass[bi] + mass[bj])
            ir = iroll[bi] * iroll[bj] / (iroll[bi] + iroll[bj])
            fx, fy, fz, mx, my, mz, _ = contact_force(
                hist, k, delta, nx, ny, nz, vx, vy, vz, omega[bi, 0] - omega[bj, 0], omega[bi, 1] - omega[bj, 1],
                omega[bi, 2] - omega[bj, 2], rstar, mstar, 2.0 * rstar, ir, row, dt)
            F[bi, 0] += fx
            F[bi, 1] += fy
            F[bi, 2] += fz
            F[bj, 0] -= fx
            F[bj, 1] -= fy
            F[bj, 2] -= fz
            T[bi, 0] += aiy * fz - aiz * fy + mx
            T[bi, 1] += aiz * fx - aix * fz + my
            T[bi, 2] += aix * fy - aiy * fx + mz
            T[bj, 0] -= ajy * fz - ajz * fy + mx
            T[bj, 1] -= ajz * fx - ajx * fz + my
            T[bj, 2] -= ajx * fy - ajy * fx + mz
            ov = max(ov, delta / min(ri, rj))
    # walls
    for s in range(ns):
        b = sb[s]
        r = srad[s]
        x, y, z = sx[s, 0], sx[s, 1], sx[s, 2]
        for w in range(3):
            kk = 3 * s + w
            delta = 0.0
            nx, ny, nz, wv = 0.0, 0.0, 0.0, 0.0
            if w == W_CYL:
                if r_cyl <= 0.0:
                    continue
                rho = math.sqrt(x * x + y * y)
                delta = rho + r - r_cyl
                if delta > 0.0:
                    nx, ny = x / rho, y / rho
            elif w == W_BOTTOM:
                delta = r - (z - z_bottom)
                nz = -1.0
            else:
                if not piston_on:
                    continue
                delta = r - (z_piston - z)
                nz = 1.0
                wv = v_piston
            if delta <= 0.0:
                _clear(whist, kk)
                continue
            h = r - 0.5 * delta
            ax, ay, az = srel[s, 0] + h * nx, srel[s, 1] + h * ny, srel[s, 2] + h * nz
            vx = vel[b, 0] + omega[b, 1] * az - omega[b, 2] * ay
            vy = vel[b, 1] + omega[b, 2] * ax - omega[b, 0] * az
            vz = vel[b, 2] + omega[b, 0] * ay - omega[b, 1] * ax - wv
            fx, fy, fz, mx, my, mz, _ = contact_force(whist, kk, delta, nx, ny, nz, vx, vy, vz, omega[b, 0], omega[b, 1],
                                                      omega[b, 2], r, mass[b], r, iroll[b], itab[wtype[w]], dt)
            F[b, 0] += fx
            F[b, 1] += fy
            F[b, 2] += fz
            T[b, 0] += ay * fz - az * fy + mx
            T[b, 1] += az * fx - ax * fz + my
            T[b, 2] += ax * fy - ay * fx + mz
            wallf[w, 0] -= fx
            wallf[w, 1] -= fy
            wallf[w, 2] -= fz
            ov = max(ov, delta / r)
    return ov


@nb.njit(cache=True)
def integrate(pos, vel, quat, angmom, mass, F, T, omega, R, inertia, dt, alpha):
    """Semi-implicit Euler step of translation and rotation (module docstring); ``omega`` is refreshed.
    ``alpha > 0`` adds Cundall's local damping ``-alpha |F| sign(v)`` per component (settling only)."""
    nb_ = pos.shape[0]
    for b in range(nb_):
        for d in range(3):
            f = F[b, d]
            t = T[b, d]
            if alpha > 0.0:
                v = vel[b, d]
                if v > 0.0:
                    f -= alpha * abs(f)
                elif v < 0.0:
                    f += alpha * abs(f)
                w = omega[b, d]
                if w > 0.0:
                    t -= alpha * abs(t)
                elif w < 0.0:
                    t += alpha * abs(t)
            vel[b, d] += f / mass[b] * dt
            pos[b, d] += vel[b, d] * dt
            angmom[b, d] += t * dt
    _omega(R, inertia, angmom, omega)
    for b in range(nb_):
        wx, wy, wz = omega[b, 0], omega[b, 1], omega[b, 2]
        wn = math.sqrt(wx * wx + wy * wy + wz * wz)
        if wn == 0.0:
            continue
        half = 0.5 * wn * dt
        c = math.cos(half)
        s = math.sin(half) / wn
        qw, qx, qy, qz = c, s * wx, s * wy, s * wz  # rotation by w dt, applied in the world frame
        w0, x0, y0, z0 = quat[b, 0], quat[b, 1], quat[b, 2], quat[b, 3]
        w1 = qw * w0 - qx * x0 - qy * y0 - qz * z0
        x1 = qw * x0 + qx * w0 + qy * z0 - qz * y0
        y1 = qw * y0 - qx * z0 + qy * w0 + qz * x0
        z1 = qw * z0 + qx * y0 - qy * x0 + qz * w0
        nq = math.sqrt(w1 * w1 + x1 * x1 + y1 * y1 + z1 * z1)
        quat[b, 0], quat[b, 1], quat[b, 2], quat[b, 3] = w1 / nq, x1 / nq, y1 / nq, z1 / nq


@nb.njit(cache=True)
def kinetic_energy(vel, omega, angmom, mass):
    e = 0.0
    for b in range(mass.size):
        e += 0.5 * mass[b] * (vel[b, 0] ** 2 + vel[b, 1] ** 2 + vel[b, 2] ** 2)
        e += 0.5 * (omega[b, 0] * angmom[b, 0] + omega[b, 1] * angmom[b, 1] + omega[b, 2] * angmom[b, 2])
    return e


@nb.njit(cache=True)
def _finite(pos):
    for b in range(pos.shape[0]):
        if not (math.isfinite(pos[b, 0]) and math.isfinite(pos[b, 1]) and math.isfinite(pos[b, 2])):
            return False
    return True


@nb.njit(cache=True)
def run_one(mass, inertia, sb, sloc, srad, pos0, quat0, vel0, angmom0, itab, wtype, r_cyl, z_bottom, gz, dt,
            skin, list_factor, phase, samples, pos_out, quat_out, vel_out, angmom_out, info):
    """One simulation through the phases of ``phase`` (module docstring); results go into ``samples``
    ``(n_samples, N_SAMPLE_COLS)``, ``pos_out``/``quat_out`` (final state) and ``info`` ``(N_INFO,)``."""
    nb_ = mass.size
    ns = sb.size
    pos = pos0.copy()
    quat = quat0.copy()
    vel = vel0.copy()
    angmom = angmom0.copy()
    R = np.empty((nb_, 9))
    omega = np.zeros((nb_, 3))
    sx = np.empty((ns, 3))
    srel = np.empty((ns, 3))
    sx_build = np.empty((ns, 3))
    F = np.zeros((nb_, 3))
    T = np.zeros((nb_, 3))
    wallf = np.zeros((3, 3))
    cap = max(64, int(list_factor * ns))
    start_a = np.zeros(ns + 1, dtype=np.int64)
    start_b = np.zeros(ns + 1, dtype=np.int64)
    nbr_a = np.zeros(cap, dtype=np.int64)
    nbr_b = np.zeros(cap, dtype=np.int64)
    hist_a = np.zeros((cap, N_HIST))
    hist_b = np.zeros((cap, N_HIST))
    whist = np.zeros((3 * ns, N_HIST))
    # moment of inertia of each body about a contact point on its (largest) sphere, for the rolling damper
    iroll = np.empty(nb_)
    for b in range(nb_):
        iroll[b] = (inertia[b, 0] + inertia[b, 1] + inertia[b, 2]) / 3.0
    rb = np.zeros(nb_)
    for s in range(ns):
        rb[sb[s]] = max(rb[sb[s]], srad[s])
    for b in range(nb_):
        iroll[b] += mass[b] * rb[b] * rb[b]
    for c in range(N_INFO):
        info[c] = 0.0
    status = OK
    rebuilds = 0
    max_ov = 0.0
    steps = 0
    _rotation(quat, R)
    _omega(R, inertia, angmom, omega)
    _spheres(pos, R, sb, sloc, sx, srel)
    if build_neighbours(sx, srad, sb, skin, start_a, nbr_a) < 0:
        info[F_STATUS] = LIST_OVERFLOW
        return
    sx_build[:, :] = sx
    half_skin2 = (0.5 * skin) ** 2
    z_piston = 0.0
    v_piston = 0.0
    piston_on = False
    ke = 0.0
    # ---------------------------------------------------------------- phases: 0 settle, 1 preload, 2 program
    settle_tmax, settle_tmin, settle_ke = phase[P_SETTLE_TMAX], phase[P_SETTLE_TMIN], phase[P_SETTLE_KE]
    preload = phase[P_PRELOAD]
    t_end = phase[P_T_END]
    n_samples = samples.shape[0]
    for stage in range(3):
        if stage == 0 and settle_tmax <= 0.0:
            continue
        if stage == 1 and preload <= 0.0:
            continue
        if stage == 2 and t_end <= 0.0:
            continue
        if stage >= 1 and phase[P_PISTON] > 0.0 and not piston_on:
            piston_on = True
            z_piston = phase[P_PISTON_Z]
            if not math.isfinite(z_piston):  # rest the piston on the highest sphere
                z_piston = -1e300
                for s in range(ns):
                    z_piston = max(z_piston, sx[s, 2] + srad[s])
        t = 0.0
        check_every = max(1, int(1e-3 / dt))  # about every millisecond
        # stage state
        f_filt = 0.0
        hold = 0.0
        done = False
        ref_z = z_piston
        js = 0
        acc = np.zeros(3)
        nacc = 0
        sample_dt = t_end / (n_samples - 1) if n_samples > 1 else t_end
        n_steps_program = 0
        per = 1
        if stage == 2:
            per = max(1, int(math.ceil(sample_dt / dt - 1e-9)))  # noqa: RUF046 (an int in numba too)
            n_steps_program = per * (n_samples - 1) if n_samples > 1 else int(math.ceil(t_end / dt))  # noqa: RUF046
        dts = dt if stage != 2 else (sample_dt / per if n_samples > 1 else t_end / max(n_steps_program, 1))
        it = 0
        while True:
            # piston kinematics of this step
            if stage == 1 and piston_on:
                err = (preload - f_filt) / preload
                err = min(1.0, max(-1.0, err))
                v_piston = -phase[P_PC_VMAX] * err
            elif stage == 2 and piston_on:
                if t < phase[P_T_LOAD]:
                    v_piston = -phase[P_V_LOAD]
                else:
                    v_piston = phase[P_V_UNLOAD]
            else:
                v_piston = 0.0
            # neighbour list
            need = False
            for s in range(ns):
                ex = sx[s, 0] - sx_build[s, 0]
                ey = sx[s, 1] - sx_build[s, 1]
                ez = sx[s, 2] - sx_build[s, 2]
                if ex * ex + ey * ey + ez * ez > half_skin2:
                    need = True
                    break
            if need:
                if build_neighbours(sx, srad, sb, skin, start_b, nbr_b) < 0:
                    status = LIST_OVERFLOW
                    break
                transfer_history(start_a, nbr_a, hist_a, start_b, nbr_b, hist_b)
                start_a, start_b = start_b, start_a
                nbr_a, nbr_b = nbr_b, nbr_a
                hist_a, hist_b = hist_b, hist_a
                sx_build[:, :] = sx
                rebuilds += 1
            ov = compute_forces(pos, vel, omega, mass, iroll, sb, srad, sx, srel, start_a, nbr_a, hist_a, whist, itab, wtype,
                                r_cyl, z_bottom, z_piston, v_piston, piston_on, gz, dts, F, T, wallf)
            max_ov = max(max_ov, ov)
            fp = wallf[W_PISTON, 2]
            # stage bookkeeping on the state at time t
            if stage == 0:
                if it % check_every == 0:
                    ke = kinetic_energy(vel, omega, angmom, mass)
                    if (t >= settle_tmin and ke <= settle_ke * nb_) or t >= settle_tmax:
                        if ke > settle_ke * nb_:
                            status = NOT_SETTLED
                        info[F_SETTLE_T] = t
                        info[F_SETTLE_KE] = ke / nb_
                        done = True
            elif stage == 1:
                f_filt += (fp - f_filt) * min(1.0, dts / phase[P_PC_TAU])
                if abs(f_filt - preload) <= phase[P_PC_TOL] * preload:
                    hold += dts
                else:
                    hold = 0.0
                if hold >= phase[P_PC_HOLD] or t >= phase[P_PC_TMAX]:
                    if hold < phase[P_PC_HOLD]:
                        status = PRELOAD_NOT_STEADY
                    info[F_PC_T] = t
                    info[F_PC_FORCE] = f_filt
                    done = True
            else:
                # interval means of the wall forces, each sample closing the interval that ends at it
                acc[0] += fp
                acc[1] += -wallf[W_BOTTOM, 2]
                acc[2] += -wallf[W_CYL, 2]
                nacc += 1
                if it % per == 0 and js < n_samples:
                    samples[js, S_TIME] = it * dts
                    u = ref_z - z_piston
                    samples[js, S_DISP] = u
                    samples[js, S_FPISTON] = acc[0] / nacc
                    samples[js, S_FBOTTOM] = acc[1] / nacc
                    samples[js, S_FCYL] = acc[2] / nacc
                    samples[js, S_KE] = kinetic_energy(vel, omega, angmom, mass)
                    samples[js, S_Z0] = pos[0, 2]
                    samples[js, S_VZ0] = vel[0, 2]
                    samples[js, S_ZPISTON] = z_piston
                    js += 1
                    acc[0] = 0.0
                    acc[1] = 0.0
                    acc[2] = 0.0
                    nacc = 0
                if it >= n_steps_program:
                    done = True
            if done:
                break
            # advance
            integrate(pos, vel, quat, angmom, mass, F, T, omega, R, inertia, dts,
                      phase[P_SETTLE_DAMP] if stage == 0 else 0.0)
            _rotation(quat, R)
            _spheres(pos, R, sb, sloc, sx, srel)
            z_piston += v_piston * dts
            t += dts
            it += 1
            steps += 1
            if it % check_every == 0 and not _finite(pos):
                status = DIVERGED
                break
        if status == DIVERGED or status == LIST_OVERFLOW:
            break
        if stage == 1:
            info[F_Z_REF] = z_piston
        for j in range(js, n_samples):
            if stage == 2:
                for c in range(samples.shape[1]):
                    samples[j, c] = np.nan
    pos_out[:, :] = pos
    quat_out[:, :] = quat
    vel_out[:, :] = vel
    angmom_out[:, :] = angmom
    info[F_STATUS] = status
    info[F_STEPS] = steps
    info[F_REBUILDS] = rebuilds
    info[F_MAX_OVERLAP] = max_ov
    info[F_KE_END] = kinetic_energy(vel, omega, angmom, mass)


@nb.njit(parallel=True, cache=True)
def _run_batch(mass, inertia, sb, sloc, srad, pos0, quat0, vel0, angmom0, itab, wtype, r_cyl, z_bottom, gz, dt,
               skin, list_factor, phase, samples, pos_out, quat_out, vel_out, angmom_out, info):
    for i in nb.prange(itab.shape[0]):
        run_one(mass, inertia, sb, sloc, srad, pos0, quat0, vel0, angmom0, itab[i], wtype, r_cyl, z_bottom, gz, dt[i],
                skin, list_factor, phase, samples[i], pos_out[i], quat_out[i], vel_out[i], angmom_out[i], info[i])


# ---------------------------------------------------------------------------------------------------------
# Python front end
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
class Result:
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


def run(particles: Particles, pos: np.ndarray, quat: np.ndarray, itabs: np.ndarray, dt: float | np.ndarray,
        phases: Phases, *, wall_types: tuple[int, int, int] = (1, 1, 2), r_cyl: float = 0.0,
        z_bottom: float = 0.0, gravity: float = -9.81, skin: float | None = None, vel: np.ndarray | None = None,
        angmom: np.ndarray | None = None, list_factor: float = 16.0) -> Result:
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
    _run_batch(np.ascontiguousarray(particles.mass, float), np.ascontiguousarray(particles.inertia, float),
               np.ascontiguousarray(particles.sphere_body, np.int64), np.ascontiguousarray(particles.sphere_local, float),
               np.ascontiguousarray(particles.sphere_radius, float), pos, quat, vel, angmom, itabs,
               np.array(wall_types, dtype=np.int64), float(r_cyl), float(z_bottom), float(gravity), dt_arr,
               float(skin), float(list_factor), phases.array(), samples, pos_out, quat_out, vel_out, angmom_out, info)
    return Result(samples, pos_out, quat_out, vel_out, angmom_out, info)
