"""Contact forces of the granular DEM (:mod:`.dem`): the EEPA law of :mod:`.contact` at one contact, and the
pair and wall contacts of a whole packing."""

from __future__ import annotations

import math

import numba as nb

from .contact import (
    SQRT_5_6,
    eepa_normal,
    rolling_damping,
    rolling_stiffness,
    rolling_torque,
    tangential_force,
)
from .fields import (
    H_DP,
    H_FT,
    H_MR,
    I_BETA,
    I_CHI,
    I_CTR,
    I_F0,
    I_FMINC,
    I_K1C,
    I_KADH,
    I_KTC,
    I_LAM,
    I_LAMROOT,
    I_MU,
    I_MUR,
    N_HIST,
    ROLL_DAMPING,
    W_BOTTOM,
    W_CYL,
)


@nb.njit(cache=True, inline="always", error_model="numpy")
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
    fh, dp, nc, _ = eepa_normal(
        delta, hist[k, H_DP], k1, k2, row[I_KADH], f0, row[I_FMINC] * rstar, 1.5, row[I_CHI], row[I_LAMROOT]
    )
    hist[k, H_DP] = dp
    kn = 1.5 * k1 * sd
    cn = -2.0 * SQRT_5_6 * row[I_BETA] * math.sqrt(kn * mstar)  # eq. 18
    vn = vx * nx + vy * ny + vz * nz  # approach rate d(delta)/dt
    fn = fh + cn * vn
    tvx, tvy, tvz = vx - vn * nx, vy - vn * ny, vz - vn * nz
    kt = row[I_KTC] * sr * sd
    sx, sy, sz, tx, ty, tz, _ = tangential_force(
        hist[k, H_FT],
        hist[k, H_FT + 1],
        hist[k, H_FT + 2],
        nx,
        ny,
        nz,
        tvx,
        tvy,
        tvz,
        kt,
        cn * row[I_CTR],
        dt,
        row[I_MU] * nc,
    )
    hist[k, H_FT], hist[k, H_FT + 1], hist[k, H_FT + 2] = sx, sy, sz
    mx, my, mz = 0.0, 0.0, 0.0
    mur = row[I_MUR]
    if mur > 0.0:
        kr = rolling_stiffness(kn, mur, rroll)
        sx, sy, sz, mx, my, mz, _ = rolling_torque(
            hist[k, H_MR],
            hist[k, H_MR + 1],
            hist[k, H_MR + 2],
            nx,
            ny,
            nz,
            wx,
            wy,
            wz,
            kr,
            rolling_damping(kr, iroll, ROLL_DAMPING),
            mur * rroll * nc,
            dt,
        )
        hist[k, H_MR], hist[k, H_MR + 1], hist[k, H_MR + 2] = sx, sy, sz
    return -fn * nx + tx, -fn * ny + ty, -fn * nz + tz, mx, my, mz, fn


@nb.njit(cache=True, inline="always", error_model="numpy")
def _clear(hist, k):
    """Forget the history of a separated contact."""
    for c in range(N_HIST):
        if hist[k, c] != 0.0:
            for q in range(N_HIST):
                hist[k, q] = 0.0
            return


@nb.njit(cache=True, error_model="numpy")
def compute_forces(bodies, iroll, state, omega, spheres, nlist, whist, itab, settings, piston, dt, loads):
    """Gravity, pair and wall contact forces and torques on the bodies and the forces on the walls, into the
    :class:`~.fields.Loads` ``loads`` (overwritten). Returns the largest overlap relative to the sphere radius.

    ``bodies``, ``state``, ``spheres``, ``nlist`` (its history updated), ``settings``: the named tuples of
    :mod:`.fields`; ``iroll`` ``(nb,)`` [kg m^2] moments of inertia about a contact point (rolling damper),
    ``omega`` ``(nb, 3)`` [rad/s]; ``whist`` ``(3 ns, N_HIST)`` the wall contacts' history (updated); ``itab``
    ``(n_types, N_IFIELDS)`` the interaction table; ``piston`` ``(z [m], v [m/s], present)``; ``dt`` [s].
    """
    pos, vel = state.pos, state.vel
    mass, sb, srad = bodies.mass, bodies.sphere_body, bodies.sphere_radius
    sx, srel = spheres.x, spheres.rel
    start, nbr, hist = nlist.start, nlist.nbr, nlist.hist
    wtype, r_cyl, z_bottom, gz = settings.wall_types, settings.r_cyl, settings.z_bottom, settings.gz
    z_piston, v_piston, piston_on = piston
    F, T, wallf = loads.F, loads.T, loads.wallf
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
            vx = (vel[bi, 0] + omega[bi, 1] * aiz - omega[bi, 2] * aiy) - (
                vel[bj, 0] + omega[bj, 1] * ajz - omega[bj, 2] * ajy
            )
            vy = (vel[bi, 1] + omega[bi, 2] * aix - omega[bi, 0] * aiz) - (
                vel[bj, 1] + omega[bj, 2] * ajx - omega[bj, 0] * ajz
            )
            vz = (vel[bi, 2] + omega[bi, 0] * aiy - omega[bi, 1] * aix) - (
                vel[bj, 2] + omega[bj, 0] * ajy - omega[bj, 1] * ajx
            )
            rstar = ri * rj / rs
            mstar = mass[bi] * mass[bj] / (mass[bi] + mass[bj])
            ir = iroll[bi] * iroll[bj] / (iroll[bi] + iroll[bj])
            fx, fy, fz, mx, my, mz, _ = contact_force(
                hist,
                k,
                delta,
                nx,
                ny,
                nz,
                vx,
                vy,
                vz,
                omega[bi, 0] - omega[bj, 0],
                omega[bi, 1] - omega[bj, 1],
                omega[bi, 2] - omega[bj, 2],
                rstar,
                mstar,
                2.0 * rstar,
                ir,
                row,
                dt,
            )
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
            fx, fy, fz, mx, my, mz, _ = contact_force(
                whist,
                kk,
                delta,
                nx,
                ny,
                nz,
                vx,
                vy,
                vz,
                omega[b, 0],
                omega[b, 1],
                omega[b, 2],
                r,
                mass[b],
                r,
                iroll[b],
                itab[wtype[w]],
                dt,
            )
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
