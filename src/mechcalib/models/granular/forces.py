"""Contact forces of the granular DEM (:mod:`.dem`): the EEPA law of :mod:`.contact` at one contact, and the
pair and wall contacts of a whole packing."""

from __future__ import annotations

import math

import numba as nb

from .contact import (
    SQRT_5_6,
    _pow,
    rolling_damping,
    rolling_stiffness,
    rolling_torque,
    tangential_force,
)
from .fields import (
    C_A0,
    C_A0K2,
    C_IROLL,
    C_K1,
    C_K2,
    C_LAM,
    C_MSTAR,
    C_RMIN,
    C_RSTAR,
    C_SR,
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
def contact_constants(rstar, row):
    """``(sqrt(R*), k1, k2, f_min, 1 - k1/k2, a0, a0/k2)`` with ``a0 = max(f0 - f_min, 0)`` of a contact of
    effective radius ``rstar`` with the interaction ``row``: fixed for a pair, so computed once per neighbour-list
    build (:func:`.neighbours.pair_constants`), each as :func:`.contact.eepa_normal` computes it."""
    sr = math.sqrt(rstar)
    k1 = row[I_K1C] * sr
    k2 = k1 / (1.0 - row[I_LAM])
    fmin = row[I_FMINC] * rstar
    f0 = row[I_F0]
    a0 = f0 - fmin if f0 > fmin else 0.0
    return sr, k1, k2, fmin, 1.0 - k1 / k2, a0, a0 / k2


@nb.njit(cache=True, inline="always", error_model="numpy")
def _eepa15(delta, sd, dp, k1, k2, lam, a0, a0k2, kadh, f0, chi, chi_n, lam_root):
    """:func:`.contact.eepa_normal` for ``n = 3/2`` with ``sd = sqrt(delta)`` and the pair's constants of
    :func:`contact_constants` (``lam = 1 - k1/k2``, ``a0``, ``a0/k2``) and ``chi_n = chi / 1.5`` given, the same
    operations in the same order otherwise; ``lam_root >= 0``. Returns ``(f_hys, dp_new, n_c)``."""
    dn = delta * sd
    dpn = dp * math.sqrt(dp)
    fl = k1 * dn
    fu = k2 * (dn - dpn)
    adhesive = False
    if fu >= fl:  # virgin loading
        dpn = lam * dn
        dp_new = lam_root * delta
        f = fl
    else:
        dp_new = dp
        f = fu
    if kadh >= 0.0:
        a = kadh * _pow(delta, chi)
        if f < -a:
            f = -a
        nc = abs(f + a)
    else:
        dmin_n = dpn - a0k2
        if dmin_n > 0.0:
            if f < 0.0:
                kad = a0 / _pow(dmin_n, chi_n)
                a = kad * _pow(delta, chi)
                if f < -a:
                    f = -a
                    adhesive = True
            nc = 0.0 if adhesive else f + a0
        else:
            nc = f + k2 * dpn
    return f0 + f, dp_new, nc


@nb.njit(cache=True, inline="always", error_model="numpy")
def law_row(itab, t):
    """The fields of row ``t`` of the interaction table that :func:`_law` reads, as a tuple of scalars:
    ``(kadh, f0, chi, chi / n, lambda_p^(1/n), beta, k_t / sqrt(R* delta), c_t / c_n, mu, mu_r)``."""
    return (
        itab[t, I_KADH],
        itab[t, I_F0],
        itab[t, I_CHI],
        itab[t, I_CHI] / 1.5,
        itab[t, I_LAMROOT],
        itab[t, I_BETA],
        itab[t, I_KTC],
        itab[t, I_CTR],
        itab[t, I_MU],
        itab[t, I_MUR],
    )


@nb.njit(cache=True, inline="always", error_model="numpy")
def _history(hist, k):
    return (hist[k, 0], hist[k, 1], hist[k, 2], hist[k, 3], hist[k, 4], hist[k, 5], hist[k, 6])


@nb.njit(cache=True, inline="always", error_model="numpy")
def _store(hist, k, h):
    hist[k, 0], hist[k, 1], hist[k, 2], hist[k, 3], hist[k, 4], hist[k, 5], hist[k, 6] = h


@nb.njit(cache=True, inline="always", error_model="numpy")
def contact_force(hist, k, delta, nx, ny, nz, vx, vy, vz, wx, wy, wz, rstar, mstar, rroll, iroll, row, dt):
    """Force on body i and rolling torque on it at one contact (module docstring).

    ``(nx, ny, nz)``: unit normal from i towards j; ``(vx, vy, vz)``: velocity of i relative to j at the
    contact point; ``(wx, wy, wz)``: ``w_i - w_j``; ``rstar``, ``mstar``, ``rroll``, ``iroll``: effective
    radius, mass, rolling radius and moment of inertia about the contact; ``row``: interaction row;
    ``hist[k]``: the contact's history (updated).
    Returns ``(fx, fy, fz, mx, my, mz, fn)`` with ``fn`` the normal force (compression positive).
    """
    sr, k1, k2, _, lam, a0, a0k2 = contact_constants(rstar, row)
    law = (row[I_KADH], row[I_F0], row[I_CHI], row[I_CHI] / 1.5, row[I_LAMROOT], row[I_BETA], row[I_KTC], row[I_CTR])
    fx, fy, fz, mx, my, mz, fn, h = _law(
        _history(hist, k), delta, nx, ny, nz, vx, vy, vz, wx, wy, wz, sr, k1, k2, lam, a0, a0k2, mstar, rroll,
        iroll, law + (row[I_MU], row[I_MUR]), dt,
    )  # fmt: skip
    _store(hist, k, h)
    return fx, fy, fz, mx, my, mz, fn


@nb.njit(cache=True, inline="always", error_model="numpy")
def _law(h, delta, nx, ny, nz, vx, vy, vz, wx, wy, wz, sr, k1, k2, lam, a0, a0k2, mstar, rroll, iroll, law, dt):
    """:func:`contact_force` on scalars: the history ``h`` (``N_HIST`` values) in and out, the constants of
    :func:`contact_constants` and the row fields of :func:`law_row` given. The force loops pass no array to it,
    so that the compiled loop neither counts references nor spills its registers around such calls."""
    kadh, f0, chi, chi_n, lamroot, beta, ktc, ctr, mu, mur = law
    # the law of contact.py with n = 3/2, sharing the square roots of R* and delta:
    # k1 = 4/3 E* sqrt(R*), K_n = 3/2 k1 sqrt(delta) (eq. 21), k_t = 8 zeta G* sqrt(R* delta) (eq. 25), and the
    # tangential damper 2 sqrt(5/6) |beta| sqrt(k_t m*) = c_n sqrt(k_t / K_n) with a constant ratio
    sd = math.sqrt(delta)
    fh, dp, nc = _eepa15(delta, sd, h[H_DP], k1, k2, lam, a0, a0k2, kadh, f0, chi, chi_n, lamroot)
    kn = 1.5 * k1 * sd
    cn = -2.0 * SQRT_5_6 * beta * math.sqrt(kn * mstar)  # eq. 18
    vn = vx * nx + vy * ny + vz * nz  # approach rate d(delta)/dt
    fn = fh + cn * vn
    tvx, tvy, tvz = vx - vn * nx, vy - vn * ny, vz - vn * nz
    kt = ktc * sr * sd
    sx, sy, sz, tx, ty, tz, _ = tangential_force(
        h[H_FT], h[H_FT + 1], h[H_FT + 2], nx, ny, nz, tvx, tvy, tvz, kt, cn * ctr, dt, mu * nc
    )
    mx, my, mz = 0.0, 0.0, 0.0
    rx, ry, rz = h[H_MR], h[H_MR + 1], h[H_MR + 2]
    if mur > 0.0:
        kr = rolling_stiffness(kn, mur, rroll)
        rx, ry, rz, mx, my, mz, _ = rolling_torque(
            rx, ry, rz, nx, ny, nz, wx, wy, wz, kr, rolling_damping(kr, iroll, ROLL_DAMPING), mur * rroll * nc, dt
        )
    return -fn * nx + tx, -fn * ny + ty, -fn * nz + tz, mx, my, mz, fn, (dp, sx, sy, sz, rx, ry, rz)


@nb.njit(cache=True, inline="always", error_model="numpy")
def _clear(hist, k):
    """Forget the history of a separated contact."""
    for c in range(N_HIST):
        if hist[k, c] != 0.0:
            for q in range(N_HIST):
                hist[k, q] = 0.0
            return


@nb.njit(cache=True, error_model="numpy")
def compute_forces(bodies, state, omega, spheres, nlist, walls, itab, settings, piston, dt, loads):
    """Gravity, pair and wall contact forces and torques on the bodies and the forces on the walls, into the
    :class:`~.fields.Loads` ``loads`` (overwritten). Returns the largest overlap relative to the sphere radius.

    ``bodies``, ``state``, ``spheres``, ``nlist`` (its history updated), ``walls`` (the
    :class:`~.fields.WallContacts`, history updated), ``settings``: the named tuples of :mod:`.fields`;
    ``omega`` ``(nb, 3)`` [rad/s]; ``itab`` ``(n_types, N_IFIELDS)`` the interaction table; ``piston``
    ``(z [m], v [m/s], present)``; ``dt`` [s]. The constants of the contacts (``nlist.const``, ``walls.const``)
    come from :func:`.neighbours.pair_constants` and :func:`.neighbours.wall_constants` with the same table.
    """
    pos, vel = state.pos, state.vel
    mass, sb, srad = bodies.mass, bodies.sphere_body, bodies.sphere_radius
    sx, srel = spheres.x, spheres.rel
    start, nbr, hist, cst = nlist.start, nlist.nbr, nlist.hist, nlist.const
    whist, wact, wcst = walls.hist, walls.active, walls.const
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
    law = law_row(itab, 0)
    nt = itab.shape[0]  # a wall without its row in the table is never touched (dem.run's tables have them all)
    wlaw = (
        law_row(itab, min(wtype[W_CYL], nt - 1)),
        law_row(itab, min(wtype[W_BOTTOM], nt - 1)),
        law_row(itab, min(wtype[2], nt - 1)),
    )
    ns = sb.size
    for i in range(ns):
        bi = sb[i]
        ri = srad[i]
        xi, yi, zi = sx[i, 0], sx[i, 1], sx[i, 2]
        # body i's state, and its force and torque summed here in the order of the list (no partner shares body i)
        pix, piy, piz = pos[bi, 0], pos[bi, 1], pos[bi, 2]
        vix, viy, viz = vel[bi, 0], vel[bi, 1], vel[bi, 2]
        wix, wiy, wiz = omega[bi, 0], omega[bi, 1], omega[bi, 2]
        fix, fiy, fiz = F[bi, 0], F[bi, 1], F[bi, 2]
        tix, tiy, tiz = T[bi, 0], T[bi, 1], T[bi, 2]
        for k in range(start[i], start[i + 1]):
            j = nbr[k]
            ex, ey, ez = sx[j, 0] - xi, sx[j, 1] - yi, sx[j, 2] - zi
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
            cx, cy, cz = xi + h * nx, yi + h * ny, zi + h * nz
            aix, aiy, aiz = cx - pix, cy - piy, cz - piz
            ajx, ajy, ajz = cx - pos[bj, 0], cy - pos[bj, 1], cz - pos[bj, 2]
            wjx, wjy, wjz = omega[bj, 0], omega[bj, 1], omega[bj, 2]
            vx = (vix + wiy * aiz - wiz * aiy) - (vel[bj, 0] + wjy * ajz - wjz * ajy)
            vy = (viy + wiz * aix - wix * aiz) - (vel[bj, 1] + wjz * ajx - wjx * ajz)
            vz = (viz + wix * aiy - wiy * aix) - (vel[bj, 2] + wjx * ajy - wjy * ajx)
            fx, fy, fz, mx, my, mz, _, hk = _law(
                _history(hist, k), delta, nx, ny, nz, vx, vy, vz, wix - wjx, wiy - wjy, wiz - wjz,
                cst[k, C_SR], cst[k, C_K1], cst[k, C_K2], cst[k, C_LAM], cst[k, C_A0], cst[k, C_A0K2],
                cst[k, C_MSTAR], 2.0 * cst[k, C_RSTAR], cst[k, C_IROLL], law, dt,
            )  # fmt: skip
            _store(hist, k, hk)
            fix += fx
            fiy += fy
            fiz += fz
            F[bj, 0] -= fx
            F[bj, 1] -= fy
            F[bj, 2] -= fz
            tix += aiy * fz - aiz * fy + mx
            tiy += aiz * fx - aix * fz + my
            tiz += aix * fy - aiy * fx + mz
            T[bj, 0] -= ajy * fz - ajz * fy + mx
            T[bj, 1] -= ajz * fx - ajx * fz + my
            T[bj, 2] -= ajx * fy - ajy * fx + mz
            ov = _max_ratio(ov, delta, cst[k, C_RMIN])
        F[bi, 0], F[bi, 1], F[bi, 2] = fix, fiy, fiz
        T[bi, 0], T[bi, 1], T[bi, 2] = tix, tiy, tiz
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
                if wact[kk]:  # a separated contact forgets its history
                    for c in range(N_HIST):
                        whist[kk, c] = 0.0
                    wact[kk] = 0
                continue
            wact[kk] = 1
            h = r - 0.5 * delta
            ax, ay, az = srel[s, 0] + h * nx, srel[s, 1] + h * ny, srel[s, 2] + h * nz
            vx = vel[b, 0] + omega[b, 1] * az - omega[b, 2] * ay
            vy = vel[b, 1] + omega[b, 2] * ax - omega[b, 0] * az
            vz = vel[b, 2] + omega[b, 0] * ay - omega[b, 1] * ax - wv
            fx, fy, fz, mx, my, mz, _, hk = _law(
                _history(whist, kk), delta, nx, ny, nz, vx, vy, vz, omega[b, 0], omega[b, 1], omega[b, 2],
                wcst[kk, C_SR], wcst[kk, C_K1], wcst[kk, C_K2], wcst[kk, C_LAM], wcst[kk, C_A0], wcst[kk, C_A0K2],
                mass[b], r, wcst[kk, C_IROLL], wlaw[w], dt,
            )  # fmt: skip
            _store(whist, kk, hk)
            F[b, 0] += fx
            F[b, 1] += fy
            F[b, 2] += fz
            T[b, 0] += ay * fz - az * fy + mx
            T[b, 1] += az * fx - ax * fz + my
            T[b, 2] += ax * fy - ay * fx + mz
            wallf[w, 0] -= fx
            wallf[w, 1] -= fy
            wallf[w, 2] -= fz
            ov = _max_ratio(ov, delta, r)
    return ov


@nb.njit(cache=True, inline="always", error_model="numpy")
def _max_ratio(ov, delta, r):
    """``max(ov, delta / r)`` for ``ov >= 0``, ``r > 0``, dividing only where the quotient may exceed ``ov`` (the
    margin, far above the rounding of the product, keeps the result that of the division)."""
    if delta >= ov * r * (1.0 - 1e-12):
        return max(ov, delta / r)
    return ov
