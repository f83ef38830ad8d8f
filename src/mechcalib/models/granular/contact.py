"""The Edinburgh elasto-plastic adhesion (EEPA) contact law, Hu et al. (2024) section 3.1 (eqs. 16-26), as pure
numba functions of scalars.

Sign convention: the overlap ``delta`` [m] is positive in contact and a normal force is positive when it
pushes the two bodies apart (compression); tensile (adhesive) forces are negative. ``n`` is the stiffness
(slope) exponent (1.5: Hertzian, 1: linear), ``chi`` the tensile exponent of the adhesive branch.

Normal hysteretic spring (eq. 17 written with Morrissey's adhesive branch ``-k_adh delta^chi``; the seed
prints ``delta^n`` there and garbles the branch conditions; Thakur et al. 2014 give the complete law)::

    f_hys = f0 + k1 delta^n                      if k2 (delta^n - dp^n) >= k1 delta^n     (virgin loading)
          = f0 + k2 (delta^n - dp^n)             if k1 delta^n > k2 (delta^n - dp^n) > -k_adh delta^chi
          = f0 - k_adh delta^chi                 if -k_adh delta^chi >= k2 (delta^n - dp^n)   (adhesive)

with ``k1 = 4/3 E* sqrt(R*)`` (eq. 19), ``lambda_p = 1 - k1/k2`` (eq. 20) and the plastic overlap ``dp``
updated on the virgin branch only: there ``k2 (delta^n - dp^n) = k1 delta^n``, i.e.
``dp = lambda_p^(1/n) delta_max`` where ``delta_max`` is the largest overlap reached. Unloading and reloading
below ``delta_max`` follow the stiffer ``k2`` line; it reaches zero force (relative to ``f0``) at ``dp``.

Adhesive stiffness: given directly (``kadh >= 0``), or derived per contact from the JKR pull-off force
``f_min = -3/2 pi dgamma R*`` of the surface energy ``dgamma`` (``kadh < 0``), the relation of the EDEM
implementation of the law: the unloading line reaches ``f_min`` at
``delta_min^n = dp^n - (f0 - f_min) / k2`` and ``k_adh = (f0 - f_min) / delta_min^chi``, so every contact that
has been pressed hard enough pulls off at exactly ``f_min``. A contact whose line never reaches ``f_min``
(``delta_min^n <= 0``: little plastic overlap yet) has no adhesive branch; it follows the ``k2`` line down
to ``delta -> 0`` and pulls off at ``f0 - k2 dp^n`` (between ``f0`` and ``f_min``).

Damping (eqs. 18, 21, 22): ``f_nd = 2 sqrt(5/6) |beta| sqrt(K_n m*) d(delta)/dt`` with the tangent stiffness
``K_n = n k1 delta^(n-1)`` (``2 E* sqrt(R* delta)`` for n = 3/2, eq. 21) and
``beta = ln e / sqrt(ln^2 e + pi^2)``; for the linear law (n = 1) the factor ``sqrt(5/6)`` is dropped, which
makes the restitution coefficient of a linear spring-dashpot exactly ``e``.

Tangential (eqs. 23-26): an incremental spring ``f_ts <- f_ts - k_t dt v_t`` with
``k_t = 8 zeta G* sqrt(R* delta)`` (eq. 25, ``zeta = 2/3``), the damper
``f_td = -2 sqrt(5/6) |beta| sqrt(k_t m*) v_t`` and the Coulomb limit ``|F_T| <= mu N_c``. Eq. 26 measures
``N_c = |f_hys + k_adh delta^chi - f0|``, the height of the force above the adhesive branch; that is what
:func:`eepa_normal` returns with a given ``k_adh``. With ``k_adh`` derived from ``dgamma`` the term
``k_adh delta^chi`` grows without bound as ``delta_min -> 0``, so there ``N_c`` is measured from the contact's
pull-off force instead (``N_c = f_hys - f_pull``): the two agree on the adhesive branch (``N_c = 0``) and at
its corner, and differ elsewhere by at most ``k_adh delta^chi - (f0 - f_min)``. While sliding, the stored
spring is set to the capped total force (the damper is dropped).

Rolling friction: an elastic-plastic spring-dashpot torque (Ai et al. 2011, type C), ``M_r <- M_r - k_r dt w_r``
with the relative rolling velocity ``w_r`` (the tangential part of ``w_i - w_j``), ``k_r = 2.25 K_n mu_r^2 R_r^2``,
the cap ``|M_r| <= mu_r R_r N_c`` and, below the cap, the damper ``-eta_r 2 sqrt(I_r k_r) w_r`` (``eta_r`` = 0.3,
Ai et al.'s value; without it the rolling springs of a settled packing ring for ever). At full mobilisation this is the constant torque ``mu_r R_r N`` of
EDEM's standard rolling friction; below it the spring keeps a body at rest without the chatter of a
torque that flips with the sign of ``w``.
"""

from __future__ import annotations

import math

import numba as nb

SQRT_5_6 = math.sqrt(5.0 / 6.0)
# branches of eq. 17 reported by :func:`eepa_normal`
LOADING, UNLOADING, ADHESIVE = 1, 2, 3


@nb.njit(cache=True, inline="always", error_model="numpy")
def _pow(x, p):
    """``x**p`` for ``x >= 0`` with the exponents of the law evaluated without ``pow``."""
    if p == 1.5:
        return x * math.sqrt(x)
    if p == 1.0:
        return x
    if p == 3.0:
        return x * x * x
    if p == 2.0:
        return x * x
    if p == 0.5:
        return math.sqrt(x)
    return x**p


# ---------------------------------------------------------------------------------------------------------
# Material and contact constants
# ---------------------------------------------------------------------------------------------------------
@nb.njit(cache=True)
def effective_moduli(E1, nu1, E2, nu2):
    """Equivalent Young's and shear moduli ``(E*, G*)`` [Pa] of two materials (Hertz-Mindlin):
    ``1/E* = (1 - nu1^2)/E1 + (1 - nu2^2)/E2``, ``1/G* = (2 - nu1)/G1 + (2 - nu2)/G2``, ``G = E / (2 (1 + nu))``.
    A rigid partner has ``E2 = inf``."""
    inv_e = (1.0 - nu1 * nu1) / E1 + (1.0 - nu2 * nu2) / E2
    inv_g = 2.0 * (2.0 - nu1) * (1.0 + nu1) / E1 + 2.0 * (2.0 - nu2) * (1.0 + nu2) / E2
    return 1.0 / inv_e, 1.0 / inv_g


@nb.njit(cache=True)
def hertz_k1(Estar, Rstar):
    """Initial loading stiffness ``k1 = 4/3 E* sqrt(R*)`` [N/m^1.5] (eq. 19)."""
    return 4.0 / 3.0 * Estar * math.sqrt(Rstar)


@nb.njit(cache=True)
def k2_from_plasticity(k1, lambda_p):
    """Unloading/reloading stiffness from the plasticity ratio, ``k2 = k1 / (1 - lambda_p)`` (eq. 20)."""
    return k1 / (1.0 - lambda_p)


@nb.njit(cache=True)
def damping_beta(e):
    """``beta = ln e / sqrt(ln^2 e + pi^2)`` (eq. 22); ``-1`` for ``e <= 0``, ``0`` for ``e >= 1``."""
    if e <= 0.0:
        return -1.0
    if e >= 1.0:
        return 0.0
    le = math.log(e)
    return le / math.sqrt(le * le + math.pi * math.pi)


@nb.njit(cache=True)
def jkr_pull_off(dgamma, Rstar):
    """JKR pull-off force ``f_min = -3/2 pi dgamma R*`` [N] of the surface energy ``dgamma`` [J/m^2]."""
    return -1.5 * math.pi * dgamma * Rstar


@nb.njit(cache=True)
def rayleigh_time_step(radius, density, G, nu):
    """Rayleigh time step ``pi r sqrt(rho / G) / (0.1631 nu + 0.8766)`` [s] of a sphere of ``radius`` [m]."""
    return math.pi * radius * math.sqrt(density / G) / (0.1631 * nu + 0.8766)


# ---------------------------------------------------------------------------------------------------------
# Normal direction
# ---------------------------------------------------------------------------------------------------------
@nb.njit(cache=True, inline="always", error_model="numpy")
def eepa_normal(delta, dp, k1, k2, kadh, f0, fmin, n, chi, lam_root=-1.0):
    """Hysteretic spring force of eq. 17 at overlap ``delta > 0`` with the plastic overlap ``dp`` [m].

    Args:
        k1, k2: loading and unloading/reloading stiffness [N/m^n] (``k2 >= k1``).
        kadh: adhesive stiffness [N/m^chi], or a negative value to derive it per contact from ``fmin``.
        f0: constant pull-off force [N] (negative: attractive); fmin: JKR pull-off force [N] (derived mode).
        n, chi: stiffness and tensile exponents.
        lam_root: ``lambda_p^(1/n)`` if known (saves a power per call), else negative.

    Returns:
        ``(f_hys, dp_new, n_c, branch)``: the force [N]; the updated plastic overlap (changed on the virgin
        branch only, ``lambda_p^(1/n) delta``); the normal force measure of the Coulomb and rolling limits
        [N] (module docstring; ``>= 0``); the branch (:data:`LOADING`, :data:`UNLOADING`, :data:`ADHESIVE`).
    """
    dn = _pow(delta, n)
    dpn = _pow(dp, n)
    fl = k1 * dn
    fu = k2 * (dn - dpn)
    if fu >= fl:  # delta >= delta_max: virgin loading
        lam = 1.0 - k1 / k2
        dpn = lam * dn
        if lam_root < 0.0:
            lam_root = lam ** (1.0 / n) if lam > 0.0 else 0.0
        dp_new = lam_root * delta
        f = fl
        branch = LOADING
    else:
        dp_new = dp
        f = fu
        branch = UNLOADING
    if kadh >= 0.0:
        a = kadh * _pow(delta, chi)
        if f < -a:
            f = -a
            branch = ADHESIVE
        nc = abs(f + a)  # eq. 26
    else:
        a0 = f0 - fmin if f0 > fmin else 0.0
        dmin_n = dpn - a0 / k2
        if dmin_n > 0.0:
            if f < 0.0:  # only a tensile k2 force can fall below the adhesive branch
                kad = a0 / _pow(dmin_n, chi / n)
                a = kad * _pow(delta, chi)
                if f < -a:
                    f = -a
                    branch = ADHESIVE
            nc = 0.0 if branch == ADHESIVE else f + a0
        else:
            nc = f + k2 * dpn
    return f0 + f, dp_new, nc, branch


@nb.njit(cache=True)
def derived_kadh(dp, k2, f0, fmin, n, chi):
    """The adhesive stiffness ``(f0 - f_min) / delta_min^chi`` of a contact with plastic overlap ``dp``
    (module docstring); ``inf`` when its unloading line does not reach ``f_min``."""
    a0 = max(f0 - fmin, 0.0)
    dmin_n = _pow(dp, n) - a0 / k2
    if dmin_n <= 0.0:
        return math.inf
    return a0 / _pow(dmin_n, chi / n)


@nb.njit(cache=True)
def pull_off_force(dp, k2, kadh, f0, fmin, n, chi):
    """The largest tensile force [N] (most negative ``f_hys``) on the unloading path of a contact with plastic
    overlap ``dp``: where the ``k2`` line meets the adhesive branch (found by bisection with a given
    ``kadh``), ``f_min`` or ``f0 - k2 dp^n`` with a derived one."""
    dpn = _pow(dp, n)
    if kadh < 0.0:
        a0 = max(f0 - fmin, 0.0)
        if dpn - a0 / k2 > 0.0:
            return f0 - a0
        return f0 - k2 * dpn
    if kadh == 0.0 or dp == 0.0:
        return f0
    lo, hi = 0.0, dp  # g(x) = k2 (x^n - dp^n) + kadh x^chi changes sign in (0, dp)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if k2 * (_pow(mid, n) - dpn) + kadh * _pow(mid, chi) < 0.0:
            lo = mid
        else:
            hi = mid
    return f0 - kadh * _pow(0.5 * (lo + hi), chi)


@nb.njit(cache=True)
def normal_damping(delta, k1, n, mstar, beta):
    """Normal damping coefficient ``c`` [N s/m] of eq. 18 (force ``c d(delta)/dt``): ``2 sqrt(5/6) |beta|
    sqrt(K_n m*)`` with ``K_n = n k1 delta^(n-1)`` (eq. 21); ``2 |beta| sqrt(k1 m*)`` for the linear law."""
    if n == 1.0:
        return -2.0 * beta * math.sqrt(k1 * mstar)
    kn = n * k1 * _pow(delta, n - 1.0)
    return -2.0 * SQRT_5_6 * beta * math.sqrt(kn * mstar)


@nb.njit(cache=True)
def normal_tangent_stiffness(delta, k1, n):
    """``K_n = n k1 delta^(n-1)`` [N/m] (eq. 21 for n = 3/2)."""
    if n == 1.0:
        return k1
    return n * k1 * _pow(delta, n - 1.0)


# ---------------------------------------------------------------------------------------------------------
# Tangential direction and rolling
# ---------------------------------------------------------------------------------------------------------
@nb.njit(cache=True)
def tangential_stiffness(Gstar, Rstar, delta, zeta):
    """``k_t = 8 zeta G* sqrt(R* delta)`` [N/m] (eq. 25)."""
    return 8.0 * zeta * Gstar * math.sqrt(Rstar * delta)


@nb.njit(cache=True, inline="always", error_model="numpy")
def to_tangent_plane(fx, fy, fz, nx, ny, nz):
    """``(fx, fy, fz)`` with its component along the unit normal ``n`` removed and rescaled to its former
    length: a stored spring carried into the tangent plane after the contact normal turned."""
    fn = fx * nx + fy * ny + fz * nz
    if fn != 0.0:
        m0 = fx * fx + fy * fy + fz * fz
        fx -= fn * nx
        fy -= fn * ny
        fz -= fn * nz
        m1 = fx * fx + fy * fy + fz * fz
        if m1 > 0.0:
            s = math.sqrt(m0 / m1)
            fx *= s
            fy *= s
            fz *= s
    return fx, fy, fz


@nb.njit(cache=True, inline="always", error_model="numpy")
def tangential_force(fx, fy, fz, nx, ny, nz, vx, vy, vz, kt, ct, dt, flim):
    """One step of the tangential force (eqs. 23-26).

    ``(fx, fy, fz)``: stored spring force (on body i) of the previous step; ``(nx, ny, nz)``: unit contact
    normal; ``(vx, vy, vz)``: tangential relative velocity of i with respect to j at the contact point [m/s];
    ``kt`` [N/m], ``ct`` [N s/m], ``dt`` [s], ``flim = mu N_c`` [N].

    The stored force is first turned into the current tangent plane (its magnitude kept), then incremented,
    ``f_ts <- f_ts - kt v_t dt`` (eq. 24), and the damper ``-ct v_t`` added; if the total exceeds ``flim`` it
    is scaled back to it and becomes the stored spring force (sliding).

    Returns ``(sx, sy, sz, tx, ty, tz, sliding)``: the new stored spring force and the total tangential force.
    """
    # the normal turned: rotate the spring into the new tangent plane, keeping its length
    fx, fy, fz = to_tangent_plane(fx, fy, fz, nx, ny, nz)
    fx -= kt * vx * dt
    fy -= kt * vy * dt
    fz -= kt * vz * dt
    tx = fx - ct * vx
    ty = fy - ct * vy
    tz = fz - ct * vz
    mag2 = tx * tx + ty * ty + tz * tz
    if mag2 > flim * flim:
        s = flim / math.sqrt(mag2)
        tx *= s
        ty *= s
        tz *= s
        return tx, ty, tz, tx, ty, tz, True
    return fx, fy, fz, tx, ty, tz, False


@nb.njit(cache=True, inline="always", error_model="numpy")
def rolling_stiffness(kn, mu_r, r_roll):
    """``k_r = 2.25 K_n mu_r^2 R_r^2`` [N m/rad] (Ai et al. 2011)."""
    return 2.25 * kn * mu_r * mu_r * r_roll * r_roll


@nb.njit(cache=True, inline="always", error_model="numpy")
def rolling_damping(kr, i_r, eta_r):
    """Rolling damper ``C_r = eta_r 2 sqrt(I_r k_r)`` [N m s] (Ai et al. 2011) with the equivalent moment of
    inertia ``I_r`` [kg m^2] of the two bodies about the contact point."""
    return 2.0 * eta_r * math.sqrt(i_r * kr)


@nb.njit(cache=True, inline="always", error_model="numpy")
def rolling_torque(mx, my, mz, nx, ny, nz, wx, wy, wz, kr, cr, mlim, dt):
    """One step of the rolling-resistance torque (on body i; body j gets its negative).

    ``(mx, my, mz)``: the spring torque of the previous step; ``(wx, wy, wz)``: ``w_i - w_j`` [rad/s];
    ``kr`` [N m/rad], ``cr`` [N m s] (:func:`rolling_damping`), ``mlim = mu_r R_r N_c`` [N m]. The spring
    torque is kept in the tangent plane (twisting is free), incremented by ``-kr w_r dt`` and capped at
    ``mlim``; below the cap the damper ``-cr w_r`` is added (off at full mobilisation, as in Ai et al.).
    Returns ``(sx, sy, sz, tx, ty, tz, rolling)``: the new spring torque, the total torque and whether the
    spring is at the cap.
    """
    mx, my, mz = to_tangent_plane(mx, my, mz, nx, ny, nz)
    wn = wx * nx + wy * ny + wz * nz
    rx, ry, rz = wx - wn * nx, wy - wn * ny, wz - wn * nz
    mx -= kr * rx * dt
    my -= kr * ry * dt
    mz -= kr * rz * dt
    mag2 = mx * mx + my * my + mz * mz
    if mag2 > mlim * mlim:
        s = mlim / math.sqrt(mag2)
        mx *= s
        my *= s
        mz *= s
        return mx, my, mz, mx, my, mz, True
    return mx, my, mz, mx - cr * rx, my - cr * ry, mz - cr * rz, False
