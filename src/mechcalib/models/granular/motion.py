"""Rigid-body motion of the granular DEM (:mod:`.dem`): rotation matrices, angular velocities, sphere positions,
the semi-implicit Euler step and the kinetic energy."""

from __future__ import annotations

import math

import numba as nb


@nb.njit(cache=True, error_model="numpy")
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


@nb.njit(cache=True, error_model="numpy")
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


@nb.njit(cache=True, error_model="numpy")
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


@nb.njit(cache=True, error_model="numpy")
def integrate(state, bodies, loads, omega, R, dt, alpha):
    """Semi-implicit Euler step of translation and rotation of the :class:`~.fields.BodyState` ``state`` (in
    place) under the :class:`~.fields.Loads` ``loads`` (:mod:`.dem` docstring); ``omega`` ``(nb, 3)`` [rad/s]
    is refreshed from the rotation matrices ``R`` ``(nb, 9)``. ``alpha > 0`` adds Cundall's local damping
    ``-alpha |F| sign(v)`` per component (settling only)."""
    pos, vel, quat, angmom = state.pos, state.vel, state.quat, state.angmom
    mass, inertia = bodies.mass, bodies.inertia
    F, T = loads.F, loads.T
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


@nb.njit(cache=True, error_model="numpy")
def kinetic_energy(vel, omega, angmom, mass):
    e = 0.0
    for b in range(mass.size):
        e += 0.5 * mass[b] * (vel[b, 0] ** 2 + vel[b, 1] ** 2 + vel[b, 2] ** 2)
        e += 0.5 * (omega[b, 0] * angmom[b, 0] + omega[b, 1] * angmom[b, 1] + omega[b, 2] * angmom[b, 2])
    return e


@nb.njit(cache=True, error_model="numpy")
def _finite(pos):
    for b in range(pos.shape[0]):
        if not (math.isfinite(pos[b, 0]) and math.isfinite(pos[b, 1]) and math.isfinite(pos[b, 2])):
            return False
    return True
