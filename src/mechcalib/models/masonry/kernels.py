"""The numba kernels of the 2D rigid-block DEM (:mod:`.dem`: the formulation, the Python front end): the
sub-contact forces, the central-difference step and one run through the self-weight and loading phases, with
the named tuples that bundle their arguments."""

from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

# status codes of a run
OK, NOT_EQUILIBRATED, DIVERGED = 0, 1, 2
# columns of the sample array
S_TIME, S_DISP, S_FORCE, S_KE, S_TRACK = 0, 1, 2, 3, 4
# global damping forms (module dem)
LOCAL, COMBINED = 0, 1
N_INFO = 8


class Blocks(NamedTuple):
    """``mass`` [kg], ``inertia`` [kg m^2] about the centroid, ``free`` (1 free, 0 fixed) ``(nb,)``; ``centroid``
    ``(nb, 2)`` [m] in the assembled configuration (as in :class:`DemSystem`)."""

    mass: np.ndarray
    inertia: np.ndarray
    free: np.ndarray
    centroid: np.ndarray


class Contacts(NamedTuple):
    """The ``nc`` sub-contacts (as in :class:`DemSystem`): blocks ``ca``, ``cb`` ``(nc,)``; ``node`` ``(nc, 2)``
    [m] relative to ``ca``, ``face0`` ``(nc, 2)`` [m] relative to ``cb``, unit ``tangent`` and ``normal``
    ``(nc, 2)``, ``face_len`` [m] and tributary ``area`` [m^2] ``(nc,)``; ``visc`` ``(nc,)`` [sqrt(kg) m]: the normal dashpot of a
    damping ratio of 1 is ``visc * sqrt(kn)`` (:func:`~.dem.build_system`); ``node_b`` ``(nc, 2)`` [m]: the node
    relative to ``cb`` in the assembled configuration; ``joint_start`` ``(nj + 1,)`` (unsigned: the compiler
    then leaves out the checks for negative indices): the sub-contacts ``joint_start[j]`` to
    ``joint_start[j + 1] - 1`` form joint ``j`` (the same two blocks, which differ, and the same ``face0``,
    ``tangent``, ``normal`` and ``face_len``; :func:`~.dem.kernel_contacts`)."""

    ca: np.ndarray
    cb: np.ndarray
    node: np.ndarray
    face0: np.ndarray
    tangent: np.ndarray
    normal: np.ndarray
    face_len: np.ndarray
    area: np.ndarray
    visc: np.ndarray
    node_b: np.ndarray
    joint_start: np.ndarray


class Controls(NamedTuple):
    """Settings common to a batch: local damping ``alpha``, gravity ``gx``, ``gy`` [m/s^2], ``rounding`` (of a
    face's ends, relative to its length), self-weight equilibration ``eq_max`` steps, ``eq_tol`` (unbalanced
    force ratio), ``eq_check`` (steps between checks); ``form`` of the global damping (:data:`LOCAL` or
    :data:`COMBINED`); ``xi``: damping ratio of the viscous dashpots at the sub-contacts (0: none); ``small``: 1 for
    small displacements (every contact keeps its assembled normal, tangent and lever arms; its gap and slip
    follow the blocks' motion linearised in the rotations), 0 for large ones."""

    alpha: float
    gx: float
    gy: float
    rounding: float
    eq_max: int
    eq_tol: float
    eq_check: int
    form: int
    xi: float
    small: int


class Loading(NamedTuple):
    """The loading phase: plate on block ``load_block`` (-1: none) at ``load_point`` ``(2,)`` [m] from its
    centroid along the unit ``load_dir`` ``(2,)``, driven at ``velocity`` [m/s] for ``duration`` [s];
    ``vel0`` ``(nb, 3)`` velocities imposed at its start; tracked points ``track_point`` ``(ntr, 2)`` [m] on
    blocks ``track_block`` ``(ntr,)``; ``ramp`` [s]: the plate's velocity rises linearly from 0 to ``velocity`` over
    this time (0: a step); ``plate_mass`` [kg] (0: the plate follows the actuator kinematically; else it is a
    mass driven through the actuator spring ``k_act`` [N/m])."""

    load_block: int
    load_point: np.ndarray
    load_dir: np.ndarray
    velocity: float
    duration: float
    vel0: np.ndarray
    track_block: np.ndarray
    track_point: np.ndarray
    ramp: float
    plate_mass: float
    k_act: float


class Outputs(NamedTuple):
    """The outputs of one set (with a leading ``(n,)`` axis, of a batch), as in :class:`BatchResult`:
    ``samples`` ``(n_samples, 4 + 2 ntr)``, ``pos_eq``, ``pos_peak``, ``pos_end`` ``(nb, 3)``, ``fn``, ``fs``,
    ``slip`` ``(nc,)`` and ``info`` ``(N_INFO,)`` (status, equilibration steps and ratio, loading steps and step, the
    sub-contact state changes during loading (open/closed, stick/slip) and the largest plate force of any step)."""

    samples: np.ndarray
    pos_eq: np.ndarray
    pos_peak: np.ndarray
    pos_end: np.ndarray
    fn: np.ndarray
    fs: np.ndarray
    slip: np.ndarray
    info: np.ndarray


# The kernels called at every step allocate nothing and run without reference counting (numba's ``_nrt``
# option): with it every call increments and decrements the count of each array it is given (23 for
# contact_forces) atomically.
@nb.njit(cache=True, _nrt=False)
def contact_forces(pos, vel, F, fn, fs, slip, contacts, kna, ksa, mu, rounding, dt, rot, cn, state, small, centroid):
    """Add the forces of the :class:`Contacts` at state ``pos``/``vel`` (``(nb, 3)``) to ``F`` (``(nb, 3)``);
    update the stored normal ``fn``, shear ``fs`` and accumulated plastic slip ``slip`` (``(nc,)``). ``kna``,
    ``ksa``: sub-contact stiffnesses [N/m] (``(nc,)``); ``mu = tan(phi)``; ``rot`` ``(nb, 2)``: receives each
    block's ``cos``, ``sin`` of its rotation; ``cn`` ``(nc,)``: normal dashpots [N s/m] (the shear one is
    ``cn sqrt(ks / kn)``; it acts while the contact sticks); ``state`` ``(nc,)`` receives 0 (open), 1 (stick) or
    2 (slip); ``small``: see :class:`Controls`; ``centroid`` ``(nb, 2)``: the assembled centroids (small
    displacements).

    The loop runs joint by joint (``contacts.joint_start``): what the sub-contacts of a joint share (the face's
    rotated start, tangent and normal, the two blocks' positions and velocities) is computed once, and the two
    blocks' forces are summed in registers, in the same order as one sub-contact after the other (the same
    floats)."""
    ca, cb, node, face0, tangent, normal, face_len = (
        contacts.ca,
        contacts.cb,
        contacts.node,
        contacts.face0,
        contacts.tangent,
        contacts.normal,
        contacts.face_len,
    )
    node_b, start = contacts.node_b, contacts.joint_start
    for b in range(pos.shape[0]):
        rot[b, 0] = math.cos(pos[b, 2])
        rot[b, 1] = math.sin(pos[b, 2])
    for j in range(start.size - 1):
        k0 = start[j]
        a, b = ca[k0], cb[k0]
        caa, saa = rot[a, 0], rot[a, 1]
        cbb, sbb = rot[b, 0], rot[b, 1]
        pax, pay, paz = pos[a, 0], pos[a, 1], pos[a, 2]
        pbx, pby, pbz = pos[b, 0], pos[b, 1], pos[b, 2]
        vax, vay, vaz = vel[a, 0], vel[a, 1], vel[a, 2]
        vbx, vby, vbz = vel[b, 0], vel[b, 1], vel[b, 2]
        f0x, f0y = face0[k0, 0], face0[k0, 1]
        if small:
            # the assembled geometry: the node's displacement relative to the material point of b beneath it
            # (both linear in the rotations, with the assembled lever arms) on the assembled normal and tangent
            tx, ty, nx, ny = tangent[k0, 0], tangent[k0, 1], normal[k0, 0], normal[k0, 1]
            qx, qy = 0.0, 0.0
            uax, uay = pax - centroid[a, 0], pay - centroid[a, 1]
            ubx, uby = pbx - centroid[b, 0], pby - centroid[b, 1]
        else:
            qx = pbx + cbb * f0x - sbb * f0y
            qy = pby + sbb * f0x + cbb * f0y
            tx = cbb * tangent[k0, 0] - sbb * tangent[k0, 1]
            ty = sbb * tangent[k0, 0] + cbb * tangent[k0, 1]
            nx = cbb * normal[k0, 0] - sbb * normal[k0, 1]
            ny = sbb * normal[k0, 0] + cbb * normal[k0, 1]
            uax, uay, ubx, uby = 0.0, 0.0, 0.0, 0.0
        L = face_len[k0]
        lo, hi = -rounding * L, (1.0 + rounding) * L
        Fax, Fay, Faz = F[a, 0], F[a, 1], F[a, 2]
        Fbx, Fby, Fbz = F[b, 0], F[b, 1], F[b, 2]
        for k in range(k0, start[j + 1]):
            if small:
                rax, ray = node[k, 0], node[k, 1]
                r0x, r0y = node_b[k, 0], node_b[k, 1]
                ux = (uax - paz * ray) - (ubx - pbz * r0y)
                uy = (uay + paz * rax) - (uby + pbz * r0x)
                dx, dy = r0x - f0x + ux, r0y - f0y + uy
                px, py = pbx + r0x, pby + r0y  # so that the lever arm on b below is the assembled one
            else:
                rax = caa * node[k, 0] - saa * node[k, 1]
                ray = saa * node[k, 0] + caa * node[k, 1]
                px, py = pax + rax, pay + ray
                dx, dy = px - qx, py - qy
            gap = dx * nx + dy * ny
            sp = dx * tx + dy * ty
            if gap >= 0.0 or sp < lo or sp > hi:
                fn[k] = 0.0
                fs[k] = 0.0
                state[k] = 0
                continue
            n_force = -kna[k] * gap
            rbx, rby = px - pbx, py - pby
            vrx = (vax - vaz * ray) - (vbx - vbz * rby)
            vry = (vay + vaz * rax) - (vby + vbz * rbx)
            vs = vrx * tx + vry * ty
            s_force = fs[k] - ksa[k] * (vs * dt)
            cap = mu * n_force
            st = 1
            if s_force > cap:
                slip[k] += abs(s_force - cap) / ksa[k]
                s_force = cap
                st = 2
            elif s_force < -cap:
                slip[k] += abs(s_force + cap) / ksa[k]
                s_force = -cap
                st = 2
            state[k] = st
            fn[k] = n_force
            fs[k] = s_force
            n_tot, s_tot = n_force, s_force
            if cn[k] > 0.0:  # dashpots: no tension, and they leave the friction limit to the elastic normal force
                n_tot = max(0.0, n_force - cn[k] * (vrx * nx + vry * ny))
                if st == 1:
                    s_tot = s_force - cn[k] * math.sqrt(ksa[k] / kna[k]) * vs
            fx = n_tot * nx + s_tot * tx
            fy = n_tot * ny + s_tot * ty
            Fax += fx
            Fay += fy
            Faz += rax * fy - ray * fx
            Fbx -= fx
            Fby -= fy
            Fbz -= rbx * fy - rby * fx
        F[a, 0], F[a, 1], F[a, 2] = Fax, Fay, Faz
        F[b, 0], F[b, 1], F[b, 2] = Fbx, Fby, Fbz


@nb.njit(cache=True)
def _point(pos, blk, p):
    c, s = math.cos(pos[blk, 2]), math.sin(pos[blk, 2])
    rx = c * p[0] - s * p[1]
    ry = s * p[0] + c * p[1]
    return pos[blk, 0] + rx, pos[blk, 1] + ry, rx, ry


@nb.njit(cache=True, _nrt=False)
def integrate(pos, vel, F, mass, inertia, free, alpha, dt, form=LOCAL):
    """Central-difference update (in place) with Cundall's local damping ``-alpha |F| sign(v)`` per DOF, or
    (``form`` :data:`COMBINED`) half of it from the sign of the velocity and half from the sign of the force,
    ``-alpha |F| (sign(v) + sign(F)) / 2`` (Itasca's combined damping, which also reacts to changes of the
    force's sign; it damps an accelerating DOF as local damping does and a decelerating one not at all)."""
    for b in range(mass.size):
        if free[b] == 0:
            continue
        for d in range(3):
            f = F[b, d]
            v = vel[b, d]
            a = alpha * abs(f)
            if form == COMBINED:
                a *= 0.5
                f -= a * (1.0 if f > 0.0 else (-1.0 if f < 0.0 else 0.0))
            if v > 0.0:
                f -= a
            elif v < 0.0:
                f += a
            m = inertia[b] if d == 2 else mass[b]
            vel[b, d] = v + f / m * dt
            pos[b, d] += vel[b, d] * dt


@nb.njit(cache=True, _nrt=False)
def _gravity(F, mass, free, gx, gy):
    for b in range(mass.size):
        F[b, 0] = mass[b] * gx * free[b]
        F[b, 1] = mass[b] * gy * free[b]
        F[b, 2] = 0.0


@nb.njit(cache=True)
def _kinetic(vel, mass, inertia, free):
    e = 0.0
    for b in range(mass.size):
        if free[b]:
            e += 0.5 * (mass[b] * (vel[b, 0] ** 2 + vel[b, 1] ** 2) + inertia[b] * vel[b, 2] ** 2)
    return e


@nb.njit(cache=True)
def run_one(blocks, contacts, kn, ks, mu, kp, dt, controls, loading, out):
    """Simulate one parameter set (joint stiffnesses ``kn``, ``ks`` [Pa/m], ``mu = tan(phi)``, plate spring
    ``kp`` [N/m], time step ``dt`` [s]); results go into the :class:`Outputs` ``out`` (see :func:`run_batch`)."""
    mass, inertia, free, centroid = blocks
    ca, area = contacts.ca, contacts.area
    alpha, gx, gy, rounding, eq_max, eq_tol, eq_check, form, xi, small = controls
    load_block, load_point, load_dir, velocity, duration = (
        loading.load_block,
        loading.load_point,
        loading.load_dir,
        loading.velocity,
        loading.duration,
    )
    vel0, track_block, track_point = loading.vel0, loading.track_block, loading.track_point
    ramp, plate_mass, k_act = loading.ramp, loading.plate_mass, loading.k_act
    samples, pos_eq, pos_peak, pos_end, fn_end, fs_end, slip_end, info = out
    nb_, nc = mass.size, ca.size
    pos = np.zeros((nb_, 3))
    pos[:, 0] = centroid[:, 0]
    pos[:, 1] = centroid[:, 1]
    vel = np.zeros((nb_, 3))
    F = np.zeros((nb_, 3))
    fn = np.zeros(nc)
    fs = np.zeros(nc)
    slip = np.zeros(nc)
    rot = np.zeros((nb_, 2))
    kna = kn * area
    ksa = ks * area
    cn = xi * math.sqrt(kn) * contacts.visc
    state = np.zeros(nc, dtype=np.int64)
    prev = np.zeros(nc, dtype=np.int64)
    status = OK
    # reference forces for the equilibrium ratio
    wsum, nfree, asum = 0.0, 0, 0.0
    for b in range(nb_):
        if free[b]:
            wsum += mass[b] * math.sqrt(gx * gx + gy * gy)
            nfree += 1
            asum += mass[b]
    wref = wsum / max(nfree, 1)
    lref = math.sqrt(max(1e-30, inertia.max() / max(mass.max(), 1e-30)))
    # ---- phase 1: self-weight equilibrium
    ratio = 0.0
    eq_steps = 0
    if eq_max > 0 and wref > 0.0:
        ratio = 1e300
        for it in range(eq_max):
            _gravity(F, mass, free, gx, gy)
            contact_forces(
                pos, vel, F, fn, fs, slip, contacts, kna, ksa, mu, rounding, dt, rot, cn, state, small, centroid
            )
            eq_steps = it + 1
            if it % eq_check == 0:
                ratio = 0.0
                for b in range(nb_):
                    if free[b]:
                        r = max(math.sqrt(F[b, 0] ** 2 + F[b, 1] ** 2), abs(F[b, 2]) / lref) / wref
                        ratio = max(ratio, r)
                if ratio < eq_tol:
                    break
            integrate(pos, vel, F, mass, inertia, free, alpha, dt, form)
            if not math.isfinite(pos[0, 0] + pos[nb_ - 1, 1]):
                break
        if ratio >= eq_tol:
            status = NOT_EQUILIBRATED
    for b in range(nb_):
        for d in range(3):
            vel[b, d] = vel0[b, d]
            pos_eq[b, d] = pos[b, d]
            pos_peak[b, d] = pos[b, d]
    for k in range(nc):
        slip[k] = 0.0
        prev[k] = state[k]
    # ---- phase 2: displacement-controlled loading
    ntr = track_block.size
    tr0 = np.zeros((ntr, 2))
    for j in range(ntr):
        x, y, _, _ = _point(pos, track_block[j], track_point[j])
        tr0[j, 0], tr0[j, 1] = x, y
    p0x, p0y = 0.0, 0.0
    if load_block >= 0:
        p0x, p0y, _, _ = _point(pos, load_block, load_point)
    # a whole number of steps between samples, so that every sample falls on its nominal time
    n_samples = samples.shape[0]
    if duration > 0 and n_samples > 1:
        per = max(1, math.ceil(duration / (dt * (n_samples - 1)) - 1e-9))
        n_steps = per * (n_samples - 1)
    else:
        per = 1
        n_steps = max(1, math.ceil(duration / dt - 1e-9)) if duration > 0 else 0
    dtl = duration / n_steps if n_steps > 0 else dt
    js = 0
    peak = -1.0
    n_open, n_slip = 0, 0
    z, vz = 0.0, 0.0  # the plate's displacement and velocity when it has a mass
    for it in range(n_steps + 1):
        t = it * dtl
        # the actuator's displacement: a velocity ramp over ``ramp`` seconds, then constant velocity
        ua = velocity * t * t / (2.0 * ramp) if t < ramp else velocity * (t - 0.5 * ramp)
        u = ua if plate_mass <= 0.0 else z
        _gravity(F, mass, free, gx, gy)
        contact_forces(
            pos, vel, F, fn, fs, slip, contacts, kna, ksa, mu, rounding, dtl, rot, cn, state, small, centroid
        )
        for k in range(nc):  # without branches
            opened = (state[k] == 0) != (prev[k] == 0)
            n_open += opened
            n_slip += (not opened) and state[k] + prev[k] == 3
            prev[k] = state[k]
        fp = 0.0
        if load_block >= 0:
            # the plate's point on the load block, with the cos and sin of its rotation from contact_forces
            rx = rot[load_block, 0] * load_point[0] - rot[load_block, 1] * load_point[1]
            ry = rot[load_block, 1] * load_point[0] + rot[load_block, 0] * load_point[1]
            x, y = pos[load_block, 0] + rx, pos[load_block, 1] + ry
            pen = (p0x + load_dir[0] * u - x) * load_dir[0] + (p0y + load_dir[1] * u - y) * load_dir[1]
            if pen > 0.0:
                fp = kp * pen
                fx, fy = fp * load_dir[0], fp * load_dir[1]
                F[load_block, 0] += fx
                F[load_block, 1] += fy
                F[load_block, 2] += rx * fy - ry * fx
        if fp > peak:
            peak = fp
            for b in range(nb_):
                for d in range(3):
                    pos_peak[b, d] = pos[b, d]
        if js < n_samples and it % per == 0:
            samples[js, S_TIME] = t
            samples[js, S_DISP] = u
            samples[js, S_FORCE] = fp
            samples[js, S_KE] = _kinetic(vel, mass, inertia, free)
            for j in range(ntr):
                x, y, _, _ = _point(pos, track_block[j], track_point[j])
                samples[js, S_TRACK + 2 * j] = x - tr0[j, 0]
                samples[js, S_TRACK + 2 * j + 1] = y - tr0[j, 1]
            js += 1
        if it == n_steps:
            break
        integrate(pos, vel, F, mass, inertia, free, alpha, dtl, form)
        if plate_mass > 0.0:  # the plate: actuator spring, the arch's reaction, the same damping as a block
            fz = k_act * (ua - z) - fp
            if vz > 0.0:
                fz -= alpha * abs(fz)
            elif vz < 0.0:
                fz += alpha * abs(fz)
            vz += fz / plate_mass * dtl
            z += vz * dtl
        bad = False
        for b in range(nb_):
            if not (math.isfinite(pos[b, 0]) and math.isfinite(pos[b, 1]) and math.isfinite(pos[b, 2])):
                bad = True
        if bad:
            status = DIVERGED
            break
    for j in range(js, n_samples):
        for c in range(samples.shape[1]):
            samples[j, c] = np.nan
    for b in range(nb_):
        for d in range(3):
            pos_end[b, d] = pos[b, d]
    for k in range(nc):
        fn_end[k] = fn[k]
        fs_end[k] = fs[k]
        slip_end[k] = slip[k]
    info[0] = status
    info[1] = eq_steps
    info[2] = ratio
    info[3] = n_steps
    info[4] = dtl
    info[5] = n_open
    info[6] = n_slip
    info[7] = peak


@nb.njit(parallel=True, cache=True)
def _run_batch(blocks, contacts, kn, ks, mu, kp, dt, controls, loading, out):
    """:func:`run_one` for each set ``i`` of the ``(n,)`` parameters, in parallel; ``out``: the batch's
    :class:`Outputs`."""
    samples, pos_eq, pos_peak, pos_end, fn, fs, slip, info = out  # arrays: parfors cannot pass this tuple in
    for i in nb.prange(kn.size):
        run_one(
            blocks,
            contacts,
            kn[i],
            ks[i],
            mu[i],
            kp[i],
            dt[i],
            controls,
            loading,
            Outputs(samples[i], pos_eq[i], pos_peak[i], pos_end[i], fn[i], fs[i], slip[i], info[i]),
        )
