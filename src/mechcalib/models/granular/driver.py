"""The time-stepping driver of the granular DEM (:mod:`.dem`): one run through its phases (settling,
pre-compression, displacement program) and a batch of runs in parallel, one per interaction table."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

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
    LIST_OVERFLOW,
    N_CONST,
    N_HIST,
    N_INFO,
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
    BodyState,
    Loads,
    NeighbourList,
    Outputs,
    Spheres,
    WallContacts,
)
from .forces import compute_forces
from .motion import _finite, _omega, _rotation, _spheres, integrate, kinetic_energy
from .neighbours import build_neighbours, pair_constants, transfer_history, wall_constants


@nb.njit(cache=True, error_model="numpy")
def run_one(bodies, state0, itab, dt, settings, out):
    """One simulation of the :class:`~.fields.Bodies` from the :class:`~.fields.BodyState` ``state0`` with the
    interaction table ``itab`` ``(n_types, N_IFIELDS)`` and time step ``dt`` [s] through the phases of
    ``settings.phase`` (:mod:`.dem` docstring); results go into the :class:`~.fields.Outputs` ``out``."""
    mass, inertia, sb, sloc, srad = bodies
    skin, list_factor, phase = settings.skin, settings.list_factor, settings.phase
    samples, pos_out, quat_out, vel_out, angmom_out, info = out
    nb_ = mass.size
    ns = sb.size
    pos = state0.pos.copy()
    quat = state0.quat.copy()
    vel = state0.vel.copy()
    angmom = state0.angmom.copy()
    state = BodyState(pos, quat, vel, angmom)
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
    nlist_a = NeighbourList(start_a, nbr_a, hist_a, np.zeros((cap, N_CONST)))
    nlist_b = NeighbourList(start_b, nbr_b, hist_b, np.zeros((cap, N_CONST)))
    walls = WallContacts(np.zeros((3 * ns, N_HIST)), np.zeros(3 * ns, dtype=np.int8), np.zeros((3 * ns, N_CONST)))
    spheres = Spheres(sx, srel)
    loads = Loads(F, T, wallf)
    # moment of inertia of each body about a contact point on its (largest) sphere, for the rolling damper
    iroll = np.empty(nb_)
    for b in range(nb_):
        iroll[b] = (inertia[b, 0] + inertia[b, 1] + inertia[b, 2]) / 3.0
    rb = np.zeros(nb_)
    for s in range(ns):
        rb[sb[s]] = max(rb[sb[s]], srad[s])
    for b in range(nb_):
        iroll[b] += mass[b] * rb[b] * rb[b]
    wall_constants(srad, sb, mass, iroll, itab, settings.wall_types, walls.const)
    for c in range(N_INFO):
        info[c] = 0.0
    status = OK
    rebuilds = 0
    max_ov = 0.0
    steps = 0
    _rotation(quat, R)
    _omega(R, inertia, angmom, omega)
    _spheres(pos, R, sb, sloc, sx, srel)
    if build_neighbours(sx, srad, sb, skin, nlist_a.start, nlist_a.nbr) < 0:
        info[F_STATUS] = LIST_OVERFLOW
        return
    pair_constants(nlist_a.start, nlist_a.nbr, srad, sb, mass, iroll, itab[0], nlist_a.const)
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
                if build_neighbours(sx, srad, sb, skin, nlist_b.start, nlist_b.nbr) < 0:
                    status = LIST_OVERFLOW
                    break
                transfer_history(nlist_a.start, nlist_a.nbr, nlist_a.hist, nlist_b.start, nlist_b.nbr, nlist_b.hist)
                pair_constants(nlist_b.start, nlist_b.nbr, srad, sb, mass, iroll, itab[0], nlist_b.const)
                nlist_a, nlist_b = nlist_b, nlist_a
                sx_build[:, :] = sx
                rebuilds += 1
            ov = compute_forces(
                bodies,
                state,
                omega,
                spheres,
                nlist_a,
                walls,
                itab,
                settings,
                (z_piston, v_piston, piston_on),
                dts,
                loads,
            )
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
            integrate(state, bodies, loads, omega, R, dts, phase[P_SETTLE_DAMP] if stage == 0 else 0.0)
            _rotation(quat, R)
            _spheres(pos, R, sb, sloc, sx, srel)
            z_piston += v_piston * dts
            t += dts
            it += 1
            steps += 1
            if it % check_every == 0 and not _finite(pos):
                status = DIVERGED
                break
        if status in (DIVERGED, LIST_OVERFLOW):
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


@nb.njit(parallel=True, cache=True, error_model="numpy")
def run_batch(bodies, state0, itabs, dt, settings, out):
    """:func:`run_one` for each interaction table ``itabs[i]`` and time step ``dt[i]``, in parallel; ``out``: the
    :class:`~.fields.Outputs` of the batch (leading axis ``n``)."""
    samples, pos_out, quat_out, vel_out, angmom_out, info = out  # arrays: parfors cannot pass this tuple in
    for i in nb.prange(itabs.shape[0]):
        run_one(
            bodies,
            state0,
            itabs[i],
            dt[i],
            settings,
            Outputs(samples[i], pos_out[i], quat_out[i], vel_out[i], angmom_out[i], info[i]),
        )
