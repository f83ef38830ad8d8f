"""Batched time integration of structures with hysteretic components (Ding et al. (2021), eqs. 24-26).

The state of one parameter set is ``X = [u (n), u' (n), r (m), eps (m)]`` and its rate

    ``u'' = M^-1 (p F(t) - C u' - K u - T^T r)``        (eq. 26)
    ``r_c' = f_c(r_c, y_c, y_c', a_c)``, ``y = T u``     (eqs. 24-25, laws in :mod:`.laws`)
    ``eps_c' = r_c y_c'``                                (eq. 14)

with one load pattern ``p`` scaled by the force history ``F(t)``.

Integration: classical RK4 on a fixed grid (``substeps`` steps per output sample), with the
non-smooth parts of the laws frozen inside a step and their switching *located*: the motion direction
``s_c = sgn(y_c')`` of every component and the branch ``p_c`` of a bilinear law (elastic/yielding) stay
constant within a step, so the right-hand side is smooth there and RK4 keeps its order. After each trial
step the switching functions (``s_c y_c'`` for a reversal, eq. 4/8's yield function for yielding) are
checked; where one changed sign the crossing is found on the cubic Hermite interpolant of that function
(values and rates at both ends of the step, bisection to 2^-60), the step is redone up to the crossing, the
switch is applied (reversal: ``s_c`` flips and a bilinear law turns elastic; yielding: ``p_c = 1`` and ``r_c``
is put on the yield surface) and the rest of the step is integrated. Several events per step are handled
one after another (at most ``MAX_EVENTS_PER_STEP``; beyond that the step is accepted as it is).
``locate_events=False`` integrates the literal right-hand side of eq. 1 instead (sign functions evaluated
at every stage), which is only first-order accurate across a switch; it is kept for comparisons.

The force is ``amplitude * sin(omega t)`` (``force_mode = 0``), linear interpolation in a table
(``force_mode = 1``) or cubic Hermite interpolation in a table of values and slopes (``force_mode = 2``, how
a measured record arrives, :mod:`mechcalib.records`; both held at the end values outside the table). It does not depend on the parameters, so its
values at the grid's stage times (every half step) are computed once per batch; only the steps cut at a
located switch evaluate it elsewhere.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from .._twins import twin_kernels
from .laws import (
    is_bilinear,
    on_yield_surface,
    rate_row,
    tangent_row,
    yield_function,
    yield_function_rate,
)

MAX_EVENTS_PER_STEP = 16
OK, DIVERGED = 0, 1
_HUGE = 1e100


class ForceHistory(NamedTuple):
    """The force history ``F(t)`` of a batch (one for all sets), scaling the load pattern ``p``.

    ``mode`` 0: ``amp sin(omega t)`` (``amp`` [N], ``omega`` [rad/s]); mode 1: the table ``t`` ``(k,)`` [s],
    ``values`` ``(k,)`` [N] interpolated linearly and held at its end values outside it (mode 0 ignores it);
    mode 2: the table with its ``slopes`` ``(k,)`` [N/s], interpolated by cubic Hermite polynomials (error
    ``~ (omega dt)^4 / 384``), held outside it. Modes 0 and 1 ignore ``slopes``.
    """

    mode: int
    amp: float
    omega: float
    t: np.ndarray
    values: np.ndarray
    slopes: np.ndarray


class System(NamedTuple):
    """The structure of a batch as the kernels read it: ``laws`` ``(m,)`` the law id of each component,
    ``A`` ``(N, m, MAX_PARAMS)`` the effective law parameters per set and component (SI units), ``S``
    ``(N, n, 2n + 1 + m)`` the system rows ``[M^-1 K | M^-1 C | M^-1 p | M^-1 T^T]`` (:func:`system_rows`),
    ``T`` ``(m, n)`` the component kinematics ``y = T u``."""

    laws: np.ndarray
    A: np.ndarray
    S: np.ndarray
    T: np.ndarray


class Grid(NamedTuple):
    """The time grid and scheme of a batch: ``n_out`` samples every ``dt_out`` [s] (the first at ``t = 0``),
    ``substeps`` RK4 steps per output interval, ``per_step`` output samples per RK4 step (one degree of
    freedom and one component only, with ``substeps = 1``: the samples inside a step are interpolated),
    ``literal``: integrate eq. 1 literally instead of freezing and locating the switches."""

    dt_out: float
    n_out: int
    substeps: int
    per_step: int
    literal: bool


class Records(NamedTuple):
    """The output records of one set (or, with a leading ``(N,)`` axis, of a batch) at the ``n_out`` samples:
    displacements ``u`` [m], velocities ``v`` [m/s], accelerations ``acc`` [m/s^2] of the ``n`` degrees of
    freedom ``(n_out, n)``; restoring forces ``r`` [N] and dissipated energies ``eps`` (eq. 14) [J] of the
    ``m`` components ``(n_out, m)``. Units as the system's (SI in the models)."""

    u: np.ndarray
    v: np.ndarray
    acc: np.ndarray
    r: np.ndarray
    eps: np.ndarray


@nb.njit(cache=True, inline="always")
def _hermite(th, g0, d0, g1, d1):
    t2 = th * th
    t3 = t2 * th
    return (2.0 * t3 - 3.0 * t2 + 1.0) * g0 + (t3 - 2.0 * t2 + th) * d0 + (3.0 * t2 - 2.0 * t3) * g1 + (t3 - t2) * d1


@nb.njit(cache=True, inline="always")
def force_at(t: float, force: ForceHistory) -> float:
    """``F(t)`` of a :class:`ForceHistory`: ``amp sin(omega t)`` (mode 0) or its table interpolated (mode 1)."""
    if force.mode == 0:
        return force.amp * math.sin(force.omega * t)
    ft = force.t
    fv = force.values
    if t <= ft[0]:
        return fv[0]
    if t >= ft[ft.size - 1]:
        return fv[fv.size - 1]
    j = np.searchsorted(ft, t, side="right")
    L = ft[j] - ft[j - 1]
    w = (t - ft[j - 1]) / L
    if force.mode == 2:
        return _hermite(w, fv[j - 1], force.slopes[j - 1] * L, fv[j], force.slopes[j] * L)
    return fv[j - 1] + w * (fv[j] - fv[j - 1])


@nb.njit(cache=True)
def force_grid(force: ForceHistory, h: float, n_steps: int):
    """``F`` at the RK4 stage times of the fixed grid, ``t = j h / 2`` for ``j = 0 ... 2 n_steps``."""
    out = np.empty(2 * n_steps + 1)
    for j in range(out.size):
        out[j] = force_at(0.5 * h * j, force)
    return out


@nb.njit(cache=True, inline="always")
def _rhs(F, X, D, one, s, p, literal):
    """``D = X'`` at force ``F`` (see the module docstring) for the set ``one = (n, m, laws, a, S, T)``;
    ``s``, ``p`` are the frozen directions and branches; ``S = [M^-1 K | M^-1 C | M^-1 p | M^-1 T^T]``
    row-wise, ``(n, 2n + 1 + m)``."""
    n, m, laws, a, S, T = one
    for i in range(n):
        acc = S[i, 2 * n] * F
        for j in range(n):
            acc -= S[i, j] * X[j] + S[i, n + j] * X[n + j]
        for c in range(m):
            acc -= S[i, 2 * n + 1 + c] * X[2 * n + c]
        D[i] = X[n + i]
        D[n + i] = acc
    for c in range(m):
        y = 0.0
        yd = 0.0
        for j in range(n):
            y += T[c, j] * X[j]
            yd += T[c, j] * X[n + j]
        r = X[2 * n + c]
        e = X[2 * n + m + c]
        if literal:
            rd = rate_row(laws[c], a, c, r, y, yd, e)
        else:
            rd = tangent_row(laws[c], a, c, r, y, s[c], e, p[c]) * yd
        D[2 * n + c] = rd
        D[2 * n + m + c] = r * yd


@nb.njit(cache=True, inline="always")
def _rk4(X, D0, h, Fm, Fe, Xout, Dout, ws, one, s, p, literal):
    """One classical RK4 step of size ``h`` from ``X`` with ``D0 = X'`` at its start, ``Fm``/``Fe`` the force
    at its middle and end; the result in ``Xout`` and its rate in ``Dout`` (the next step's first stage).
    ``ws = (K2, K3, K4, Xt)``: workspace; ``one``: the set's system (:func:`_rhs`)."""
    K2, K3, K4, Xt = ws
    q = X.size
    for k in range(q):
        Xt[k] = X[k] + 0.5 * h * D0[k]
    _rhs(Fm, Xt, K2, one, s, p, literal)
    for k in range(q):
        Xt[k] = X[k] + 0.5 * h * K2[k]
    _rhs(Fm, Xt, K3, one, s, p, literal)
    for k in range(q):
        Xt[k] = X[k] + h * K3[k]
    _rhs(Fe, Xt, K4, one, s, p, literal)
    for k in range(q):
        Xout[k] = X[k] + h / 6.0 * (D0[k] + 2.0 * K2[k] + 2.0 * K3[k] + K4[k])
    _rhs(Fe, Xout, Dout, one, s, p, literal)


@nb.njit(cache=True)
def hermite_crossing(g0: float, d0: float, g1: float, d1: float) -> float:
    """Fraction ``theta`` in ``[0, 1]`` of a step where a switching function leaves ``phi > 0``.

    ``phi`` is the cubic Hermite interpolant of values ``g0 > 0``, ``g1 <= 0`` and rates ``d0``, ``d1``
    (already multiplied by the step size). Bisection; returns the upper end of the final bracket, so that
    the switch is applied on or just past the crossing. ``g0 <= 0`` returns 0.
    """
    if g0 <= 0.0:
        return 0.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _hermite(mid, g0, d0, g1, d1) > 0.0:
            lo = mid
        else:
            hi = mid
    return hi


@nb.njit(cache=True, inline="always")
def _component_kinematics(X, D, c, n, T):
    y = 0.0
    yd = 0.0
    ydd = 0.0
    for j in range(n):
        y += T[c, j] * X[j]
        yd += T[c, j] * X[n + j]
        ydd += T[c, j] * D[n + j]
    return y, yd, ydd


@nb.njit(cache=True, inline="always")
def _first_event(X, D, X1, D1, hs, one, s, p):
    """The earliest switch inside a trial step ``X -> X1`` of size ``hs`` of the set ``one`` (:func:`_rhs`):
    ``(theta, component, kind)`` with kind 0 a reversal, 1 yielding; component ``-1`` when none."""
    n, m, laws, a, _, T = one
    theta = 2.0
    which = -1
    kind = 0
    for c in range(m):
        y0, yd0, ydd0 = _component_kinematics(X, D, c, n, T)
        y1, yd1, ydd1 = _component_kinematics(X1, D1, c, n, T)
        sc = s[c]
        if sc * yd1 < 0.0:  # reversal of the component's motion
            th = hermite_crossing(sc * yd0, sc * ydd0 * hs, sc * yd1, sc * ydd1 * hs)
            if th < theta:
                theta, which, kind = th, c, 0
        law = laws[c]
        if p[c] == 0 and is_bilinear(law):
            g1 = yield_function(law, a, c, X1[2 * n + c], y1, sc)
            if g1 >= 0.0:  # yielding (phi = -g leaves phi > 0)
                g0 = yield_function(law, a, c, X[2 * n + c], y0, sc)
                gd0 = yield_function_rate(law, a, c, D[2 * n + c], yd0, sc)
                gd1 = yield_function_rate(law, a, c, D1[2 * n + c], yd1, sc)
                th = hermite_crossing(-g0, -gd0 * hs, -g1, -gd1 * hs)
                if th < theta:
                    theta, which, kind = th, c, 1
    return theta, which, kind


@nb.njit(cache=True)
def _integrate_one(laws, a, S, T, Fg, force, h, grid, rec):
    """One parameter set (see :func:`integrate_batch`); fills its :class:`Records` ``rec``, returns
    ``(status, located events)``. ``Fg``: the force at the grid's stage times (:func:`force_grid`) of the
    :class:`ForceHistory` ``force``; ``h``: the step; ``grid``: the :class:`Grid`."""
    _, n_out, substeps, _, literal = grid
    n = S.shape[0]
    m = T.shape[0]
    q = 2 * n + 2 * m
    X = np.zeros(q)
    D = np.empty(q)
    X1 = np.empty(q)
    D1 = np.empty(q)
    K2 = np.empty(q)
    K3 = np.empty(q)
    K4 = np.empty(q)
    Xt = np.empty(q)
    ws = (K2, K3, K4, Xt)
    one = (n, m, laws, a, S, T)
    s = np.ones(m)
    p = np.zeros(m, dtype=np.int64)
    t = 0.0
    _rhs(Fg[0], X, D, one, s, p, literal)
    for c in range(m):  # starting from rest, the first motion follows the initial acceleration
        _, _, ydd = _component_kinematics(X, D, c, n, T)
        s[c] = -1.0 if ydd < 0.0 else 1.0
    n_events = 0
    for k in range(n_out):
        if k > 0:
            for sub in range(substeps):
                step = (k - 1) * substeps + sub
                t_end = (step + 1) * h
                F_end = Fg[2 * step + 2]
                nev = 0
                while True:
                    hs = t_end - t
                    # a step from the grid point takes its stage forces from the grid
                    F_mid = Fg[2 * step + 1] if nev == 0 else force_at(t + 0.5 * hs, force)
                    _rk4(X, D, hs, F_mid, F_end, X1, D1, ws, one, s, p, literal)
                    which = -1
                    if not literal and nev < MAX_EVENTS_PER_STEP:
                        theta, which, kind = _first_event(X, D, X1, D1, hs, one, s, p)
                    if which < 0:
                        for j in range(q):
                            X[j] = X1[j]
                            D[j] = D1[j]
                        t = t_end
                        break
                    he = theta * hs
                    if he > 0.0:
                        te = t + he if theta < 1.0 else t_end
                        Fm = force_at(t + 0.5 * he, force)
                        Fe = F_end if theta >= 1.0 else force_at(te, force)
                        _rk4(X, D, he, Fm, Fe, X1, D1, ws, one, s, p, literal)
                        for j in range(q):
                            X[j] = X1[j]
                        t = te
                    c = which
                    if kind == 0:
                        s[c] = -s[c]
                        p[c] = 0
                    else:
                        p[c] = 1
                        yc, _, _ = _component_kinematics(X, D, c, n, T)
                        X[2 * n + c] = on_yield_surface(laws[c], a, c, yc, s[c])
                    Ft = F_end if t >= t_end else force_at(t, force)
                    _rhs(Ft, X, D, one, s, p, literal)
                    nev += 1
                    n_events += 1
                    if t >= t_end:
                        break
            for j in range(q):
                if not abs(X[j]) < _HUGE:
                    return DIVERGED, n_events
        for j in range(n):
            rec.u[k, j] = X[j]
            rec.v[k, j] = X[n + j]
            rec.acc[k, j] = D[n + j]
        for c in range(m):
            rec.r[k, c] = X[2 * n + c]
            rec.eps[k, c] = X[2 * n + m + c]
    return OK, n_events


@nb.njit(cache=True)
def _outputs(N, n_out, n, m):
    """A batch's output :class:`Records` (NaN-filled, leading axis ``N``), status and event counts."""
    rec = Records(
        np.full((N, n_out, n), np.nan),
        np.full((N, n_out, n), np.nan),
        np.full((N, n_out, n), np.nan),
        np.full((N, n_out, m), np.nan),
        np.full((N, n_out, m), np.nan),
    )
    return rec, np.zeros(N, dtype=np.int64), np.zeros(N, dtype=np.int64)


@nb.njit(cache=True)
def _prepare(N, n_out, n, m, force, h, substeps):
    """Output records and the force grid of a batch."""
    return _outputs(N, n_out, n, m), force_grid(force, h, (n_out - 1) * substeps)


# The per-set status is stored by plain assignments in the loop body and the output tuple is built after the
# loop: under ``prange`` a tuple-target store (``status[i], events[i] = f()``), or one made inside an inlined
# helper that unpacks the output tuple, is silently lost (numba 0.6x), while the record arrays survive.
def _batch(system, force, grid):
    """The general kernel over a batch (:func:`integrate_batch`), compiled threaded and serial."""
    laws, A, S, T = system
    dt_out, n_out, substeps, _, _ = grid
    h = dt_out / substeps
    out, Fg = _prepare(A.shape[0], n_out, S.shape[1], T.shape[0], force, h, substeps)
    (U, V, Acc, R, Eps), status, events = out  # arrays, not the tuple: parfors cannot pass this one in
    for i in nb.prange(A.shape[0]):
        st, ne = _integrate_one(laws, A[i], S[i], T, Fg, force, h, grid, Records(U[i], V[i], Acc[i], R[i], Eps[i]))
        status[i] = st
        events[i] = ne
    return U, V, Acc, R, Eps, status, events


_batch_parallel, _batch_serial = twin_kernels(_batch)


# --------------------------------------------------------------------------------------------
# One degree of freedom, one component: the same scheme on a scalar state
# --------------------------------------------------------------------------------------------
# The general kernel keeps the state in small arrays and loops over n and m; for the SDOF systems that the
# identifications evaluate tens of thousands of times the state fits in registers. The algorithm (frozen
# direction and branch, Hermite-located switches, the order of the updates) is the general kernel's, step
# for step; tests/test_hysteresis_models.py checks the two agree to round-off.
@nb.njit(cache=True, inline="always")
def _rhs1(F, y4, osc, s, p, literal):
    """``(u', v', r', eps')`` at the state ``y4 = (u, v, r, eps)`` of ``u'' = b F - k u - c u' - g r``,
    ``y = tt u``, for the oscillator ``osc = (law, a, k, c, b, g, tt)`` (scalar :func:`_rhs`)."""
    u, v, r, e = y4
    law, a, k, c, b, g, tt = osc
    y = tt * u
    yd = tt * v
    if literal:
        rd = rate_row(law, a, 0, r, y, yd, e)
    else:
        rd = tangent_row(law, a, 0, r, y, s, e, p) * yd
    return v, b * F - (k * u + c * v) - g * r, rd, r * yd


@nb.njit(cache=True, inline="always")
def _rk4_1(y4, d4, h, Fm, Fe, osc, s, p, literal):
    """Scalar :func:`_rk4` from the state ``y4 = (u, v, r, eps)`` and its rate ``d4``: the state after a step
    of ``h`` and its rate."""
    u, v, r, e = y4
    du, dv, dr, de = d4
    hh = 0.5 * h
    u2, v2, r2, e2 = _rhs1(Fm, (u + hh * du, v + hh * dv, r + hh * dr, e + hh * de), osc, s, p, literal)
    u3, v3, r3, e3 = _rhs1(Fm, (u + hh * u2, v + hh * v2, r + hh * r2, e + hh * e2), osc, s, p, literal)
    u4, v4, r4, e4 = _rhs1(Fe, (u + h * u3, v + h * v3, r + h * r3, e + h * e3), osc, s, p, literal)
    w = h / 6.0
    u1 = u + w * (du + 2.0 * u2 + 2.0 * u3 + u4)
    v1 = v + w * (dv + 2.0 * v2 + 2.0 * v3 + v4)
    r1 = r + w * (dr + 2.0 * r2 + 2.0 * r3 + r4)
    e1 = e + w * (de + 2.0 * e2 + 2.0 * e3 + e4)
    du1, dv1, dr1, de1 = _rhs1(Fe, (u1, v1, r1, e1), osc, s, p, literal)
    return u1, v1, r1, e1, du1, dv1, dr1, de1


@nb.njit(cache=True, inline="always")
def _emit_inside(i, ti, ta, L, end0, end1, F, osc, rec):
    """Sample ``i`` at ``ti`` inside a piece ``[ta, ta + L]`` of a step into the :class:`Records` ``rec``:
    ``u`` (and ``u'``) on the quintic Hermite interpolant of ``u, u', u''`` at both ends, ``r`` and ``eps`` on
    cubic ones, ``u''`` from the equation of motion at the interpolated state (``F`` the force at ``ti``).
    ``end0``, ``end1``: ``(u, u', r, eps, u'', r', eps')`` at the two ends; ``osc``: the oscillator
    (:func:`_rhs1`)."""
    _, _, k, c, b, g, _ = osc
    u0, v0, r0, e0, a0, dr0, de0 = end0
    u1, v1, r1, e1, a1, dr1, de1 = end1
    x = (ti - ta) / L
    x2 = x * x
    x3 = x2 * x
    x4 = x3 * x
    x5 = x4 * x
    LL = L * L
    u = (
        (1.0 - 10.0 * x3 + 15.0 * x4 - 6.0 * x5) * u0
        + (x - 6.0 * x3 + 8.0 * x4 - 3.0 * x5) * L * v0
        + 0.5 * (x2 - 3.0 * x3 + 3.0 * x4 - x5) * LL * a0
        + 0.5 * (x3 - 2.0 * x4 + x5) * LL * a1
        + (-4.0 * x3 + 7.0 * x4 - 3.0 * x5) * L * v1
        + (10.0 * x3 - 15.0 * x4 + 6.0 * x5) * u1
    )
    v = (
        (-30.0 * x2 + 60.0 * x3 - 30.0 * x4) * (u0 - u1) / L
        + (1.0 - 18.0 * x2 + 32.0 * x3 - 15.0 * x4) * v0
        + 0.5 * (2.0 * x - 9.0 * x2 + 12.0 * x3 - 5.0 * x4) * L * a0
        + 0.5 * (3.0 * x2 - 8.0 * x3 + 5.0 * x4) * L * a1
        + (-12.0 * x2 + 28.0 * x3 - 15.0 * x4) * v1
    )
    r = _hermite(x, r0, dr0 * L, r1, dr1 * L)
    rec.u[i, 0] = u
    rec.v[i, 0] = v
    rec.r[i, 0] = r
    rec.eps[i, 0] = _hermite(x, e0, de0 * L, e1, de1 * L)
    rec.acc[i, 0] = b * F - (k * u + c * v) - g * r


@nb.njit(cache=True)
def _integrate_sdof(law, a, S, tt, force, grid, Fg, rec):
    """:func:`_integrate_one` for ``n = m = 1`` (``S`` the ``(1, 4)`` system row, ``tt = T[0, 0]``).

    Steps of ``h = dt_out * per_step / substeps`` (``per_step`` output samples per step, or ``substeps``
    steps per sample); samples that fall inside a step (``per_step > 1``) are read off the piece of the
    step they fall in (:func:`_emit_inside`), so they stay on the right side of a located switch.
    ``grid``: the :class:`Grid`.
    """
    dt_out, n_out, substeps, per_step, literal = grid
    k, c, b, g = S[0, 0], S[0, 1], S[0, 2], S[0, 3]
    osc = (law, a, k, c, b, g, tt)
    h = dt_out * per_step / substeps
    n_steps = ((n_out - 1) * substeps + per_step - 1) // per_step
    u = v = r = e = 0.0
    s = 1.0
    p = 0
    t = 0.0
    du, dv, dr, de = _rhs1(Fg[0], (u, v, r, e), osc, s, p, literal)
    s = -1.0 if tt * dv < 0.0 else 1.0
    rec.u[0, 0], rec.v[0, 0], rec.acc[0, 0], rec.r[0, 0], rec.eps[0, 0] = u, v, dv, r, e
    nxt = 1  # the next sample to write
    bil = is_bilinear(law)
    n_events = 0
    for step in range(n_steps):
        t_end = (step + 1) * h
        F_end = Fg[2 * step + 2]
        last = ((step + 1) * per_step) // substeps  # samples up to this one lie in steps 0 ... step
        nev = 0
        while True:
            hs = t_end - t
            F_mid = Fg[2 * step + 1] if nev == 0 else force_at(t + 0.5 * hs, force)
            u1, v1, r1, e1, du1, dv1, dr1, de1 = _rk4_1(
                (u, v, r, e), (du, dv, dr, de), hs, F_mid, F_end, osc, s, p, literal
            )
            theta = 2.0
            kind = -1
            if not literal and nev < MAX_EVENTS_PER_STEP:
                if s * tt * v1 < 0.0:  # reversal
                    theta = hermite_crossing(s * tt * v, s * tt * dv * hs, s * tt * v1, s * tt * dv1 * hs)
                    kind = 0
                if p == 0 and bil:
                    g1 = yield_function(law, a, 0, r1, tt * u1, s)
                    if g1 >= 0.0:  # yielding
                        g0 = yield_function(law, a, 0, r, tt * u, s)
                        gd0 = yield_function_rate(law, a, 0, dr, tt * v, s)
                        gd1 = yield_function_rate(law, a, 0, dr1, tt * v1, s)
                        th = hermite_crossing(-g0, -gd0 * hs, -g1, -gd1 * hs)
                        if th < theta:
                            theta, kind = th, 1
            te = t_end
            if kind >= 0:
                he = theta * hs
                if he <= 0.0:
                    te = t
                else:
                    te = t + he if theta < 1.0 else t_end
                    Fm = force_at(t + 0.5 * he, force)
                    Fe = F_end if theta >= 1.0 else force_at(te, force)
                    u1, v1, r1, e1, du1, dv1, dr1, de1 = _rk4_1(
                        (u, v, r, e), (du, dv, dr, de), he, Fm, Fe, osc, s, p, literal
                    )
            # samples strictly inside the step that this piece covers
            while nxt < last and nxt < n_out and te > t and nxt * dt_out <= te:
                ti = nxt * dt_out
                _emit_inside(
                    nxt,
                    ti,
                    t,
                    te - t,
                    (u, v, r, e, dv, dr, de),
                    (u1, v1, r1, e1, dv1, dr1, de1),
                    force_at(ti, force),
                    osc,
                    rec,
                )
                nxt += 1
            if kind < 0:
                u, v, r, e, du, dv, dr, de = u1, v1, r1, e1, du1, dv1, dr1, de1
                t = t_end
                break
            if te > t:
                u, v, r, e = u1, v1, r1, e1
                t = te
            if kind == 0:
                s = -s
                p = 0
            else:
                p = 1
                r = on_yield_surface(law, a, 0, tt * u, s)
            Ft = F_end if t >= t_end else force_at(t, force)
            du, dv, dr, de = _rhs1(Ft, (u, v, r, e), osc, s, p, literal)
            nev += 1
            n_events += 1
            if t >= t_end:
                break
        if not (abs(u) < _HUGE and abs(v) < _HUGE and abs(r) < _HUGE and abs(e) < _HUGE):
            return DIVERGED, n_events
        if nxt == last and nxt < n_out and (last * substeps) == (step + 1) * per_step:  # a sample at the step's end
            rec.u[nxt, 0], rec.v[nxt, 0], rec.acc[nxt, 0], rec.r[nxt, 0], rec.eps[nxt, 0] = u, v, dv, r, e
            nxt += 1
    return OK, n_events


@nb.njit(cache=True)
def _prepare_sdof(N, n_out, force, dt_out, substeps, per_step):
    h = dt_out * per_step / substeps
    n_steps = ((n_out - 1) * substeps + per_step - 1) // per_step
    return _outputs(N, n_out, 1, 1), force_grid(force, h, n_steps)


def _sdof(system, force, grid):
    """The scalar kernel over a batch (:func:`integrate_batch`), compiled threaded and serial."""
    laws, A, S, T = system
    dt_out, n_out, substeps, per_step, literal = grid
    out, Fg = _prepare_sdof(A.shape[0], n_out, force, dt_out, substeps, per_step)
    (U, V, Acc, R, Eps), status, events = out  # arrays, not the tuple: parfors cannot pass this one in
    for i in nb.prange(A.shape[0]):
        st, ne = _integrate_sdof(
            laws[0],
            A[i],
            S[i],
            T[0, 0],
            force,
            grid,
            Fg,
            Records(U[i], V[i], Acc[i], R[i], Eps[i]),
        )
        status[i] = st
        events[i] = ne
    return U, V, Acc, R, Eps, status, events


_sdof_parallel, _sdof_serial = twin_kernels(_sdof)


def system_rows(Minv_K: np.ndarray, Minv_C: np.ndarray, Minv_p: np.ndarray, Minv_Tt: np.ndarray) -> np.ndarray:
    """Pack ``M^-1 K``, ``M^-1 C`` ``(N, n, n)``, ``M^-1 p`` ``(N, n)`` and ``M^-1 T^T`` ``(N, n, m)`` into the
    ``(N, n, 2n + 1 + m)`` rows the kernels read."""
    return np.ascontiguousarray(np.concatenate([Minv_K, Minv_C, Minv_p[:, :, None], Minv_Tt], axis=2), dtype=float)


def integrate_batch(system: System, force: ForceHistory, grid: Grid, *, general: bool = False):
    """Integrate ``N`` parameter sets of eq. 26 from rest (``u = u' = r = eps = 0``).

    Args:
        system: the batch's laws, law parameters, system rows and kinematics (:class:`System`).
        force: the force history (:class:`ForceHistory`).
        grid: the output grid and scheme (:class:`Grid`).
        general: use the array kernel even for one degree of freedom and one component (by default those
            run on the scalar kernel, the same scheme about 2-3x cheaper).

    Returns:
        ``U, V, Acc`` ``(N, n_out, n)``; ``R, Eps`` ``(N, n_out, m)``; ``status`` ``(N,)`` (0 ok,
        1 diverged: the rest of that set's record is NaN); ``events`` ``(N,)`` located switches.

    Sets run in parallel (numba ``prange``); a single set runs serially, which avoids the thread pool's
    start-up cost. Both paths call the same per-set kernel, so a set's result does not depend on its batch.
    The three bundles go to the kernels as they come (one compiled signature each): build them with
    :func:`batch_system`, :func:`batch_force` and :func:`batch_grid`, which fix their dtypes.
    """
    n, m = system.S.shape[1], system.T.shape[0]
    sdof = not general and n == 1 and m == 1
    if grid.per_step != 1 and (not sdof or grid.per_step < 1 or grid.substeps != 1):
        raise ValueError(
            f"samples_per_step={grid.per_step!r} needs one degree of freedom, one component, substeps=1 "
            f"and the scalar kernel (got n={n}, m={m}, substeps={grid.substeps}, general={general})"
        )
    if sdof:
        kernel = _sdof_parallel if system.A.shape[0] > 1 else _sdof_serial
    else:
        kernel = _batch_parallel if system.A.shape[0] > 1 else _batch_serial
    return kernel(system, force, grid)


def batch_system(laws: np.ndarray, A: np.ndarray, S: np.ndarray, T: np.ndarray) -> System:
    """A :class:`System` with the dtypes and layouts the kernels are compiled for."""
    return System(
        np.ascontiguousarray(laws, dtype=np.int64),
        np.ascontiguousarray(A, dtype=float),
        np.ascontiguousarray(S, dtype=float),
        np.ascontiguousarray(T, dtype=float),
    )


def batch_force(
    mode: int, amp: float, omega: float, t: np.ndarray, values: np.ndarray, slopes: np.ndarray | None = None
) -> ForceHistory:
    """A :class:`ForceHistory` with the dtypes the kernels are compiled for (``slopes`` only for mode 2)."""
    return ForceHistory(
        int(mode),
        float(amp),
        float(omega),
        np.ascontiguousarray(t, dtype=float),
        np.ascontiguousarray(values, dtype=float),
        np.ascontiguousarray(np.zeros(2) if slopes is None else slopes, dtype=float),
    )


def batch_grid(
    dt_out: float, n_out: int, substeps: int, *, samples_per_step: int = 1, locate_events: bool = True
) -> Grid:
    """A :class:`Grid` with the types the kernels are compiled for."""
    return Grid(float(dt_out), int(n_out), int(substeps), int(samples_per_step), not locate_events)
