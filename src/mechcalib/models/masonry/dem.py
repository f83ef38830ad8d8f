"""A 2D rigid-block discrete element method (the UDEC/3DEC formulation), batched over parameter sets.

Bodies are rigid clumps of convex polygons with three degrees of freedom (centroid ``x, y`` and rotation
``theta``); support blocks are fixed. Joints are discretised into sub-contacts: a node fixed to block
``a`` pressing on the (current, moving) face of block ``b``. For a sub-contact with tributary area
``A = w * L * W`` (weight ``w``, joint length ``L``, out-of-plane width ``W``):

* normal force from the current geometry (large displacements): the node's penetration ``d`` into the face
  line of ``b``, ``Fn = kn * A * d`` for ``d > 0``, else 0 (no tension);
* shear force incrementally: ``Fs <- Fs - ks * A * (v_rel . t) * dt`` with ``v_rel`` the velocity of the node
  relative to the material point of ``b`` beneath it and ``t`` the face's current tangent; then the
  Coulomb limit ``|Fs| <= tan(phi) * Fn`` (no cohesion); an open contact carries nothing and forgets its
  shear force;
* a node whose projection lies beyond the face ends by more than ``rounding * L`` is out of contact.

Motion: explicit central differences, ``v(t + dt/2) = v(t - dt/2) + dt * (F + Fd) / m``,
``x(t + dt) = x(t) + dt * v(t + dt/2)``, for each degree of freedom with its mass or moment of inertia, and
Cundall's local damping ``Fd = -alpha * |F| * sign(v)`` (alpha = 0.8 in Kibriya et al. (2023) section 2.3).

Stable time step (:func:`stable_dt`): ``dt = f * 2 / omega_max``, where ``omega_max^2`` is the largest
eigenvalue of ``M^(-1/2) K M^(-1/2)`` with every sub-contact closed and sticking (the stiffest state the
structure can reach; opening or sliding contacts only soften it). Central differences are stable for
``omega dt < 2``; local damping makes the update ``(1 + alpha)`` times stiffer while a degree of freedom moves
away from equilibrium (the damping force then adds to the restoring force), so the limit becomes
``f < 1 / sqrt(1 + alpha)`` = 0.745 for alpha = 0.8 (a run at ``f = 0.9`` does go unstable). ``f = 0.5`` by
default keeps a margin of 1.5 for the geometric changes of large displacements. In the loading phase the
step is shortened so that a whole number of steps separates two samples.
Real masses are used: no mass or density scaling. For a rate-independent joint law, scaling all masses
by ``c^2`` is the same as loading ``c`` times slower, at the same number of steps, so mass scaling would buy
nothing here that a lower velocity does not.

Sequence: self-weight equilibration from the assembled geometry (loading plate off) until the largest
unbalanced force of a free block is below ``eq_tol`` times the mean block weight (moments: divided by the
largest block's radius of gyration), then velocities are zeroed,
the equilibrated state becomes the reference, and the plate (one-sided spring ``kp`` along a fixed
direction, through a roller) is driven at constant velocity for ``duration`` seconds.

The numba kernels and the named tuples bundling their arguments live in :mod:`.kernels`; this module packs
an assembly into arrays and runs batches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...errors import ConfigurationError
from .geometry import Assembly, contact_layout
from .kernels import (
    COMBINED,
    DIVERGED,
    LOCAL,
    N_INFO,
    NOT_EQUILIBRATED,
    OK,
    S_DISP,
    S_FORCE,
    S_KE,
    S_TIME,
    S_TRACK,
    Blocks,
    Contacts,
    Controls,
    Loading,
    Outputs,
    _run_batch,
    contact_forces,
    integrate,
    run_one,
)

__all__ = [
    "COMBINED",
    "DAMPING_FORMS",
    "DIVERGED",
    "LOCAL",
    "NOT_EQUILIBRATED",
    "OK",
    "S_DISP",
    "S_FORCE",
    "S_KE",
    "S_TIME",
    "S_TRACK",
    "BatchResult",
    "BatchSettings",
    "Blocks",
    "Contacts",
    "Controls",
    "DemSystem",
    "Loading",
    "Outputs",
    "build_system",
    "contact_forces",
    "integrate",
    "kernel_contacts",
    "run_batch",
    "run_one",
    "stable_dt",
    "stiffness_matrix",
]

DAMPING_FORMS = {"local": LOCAL, "combined": COMBINED}


@dataclass(frozen=True)
class DemSystem:
    """Packed arrays of an :class:`Assembly` with a contact layout (SI units; positions relative to each
    block's centroid in the assembled configuration, where every rotation is 0).

    Blocks (``nb``): ``mass``, ``inertia``, ``free`` (1 = free, 0 = fixed), ``centroid`` ``(nb, 2)``.
    Sub-contacts (``nc``): ``ca``, ``cb`` (blocks), ``node`` ``(nc, 2)`` (node relative to ``ca``),
    ``face0`` ``(nc, 2)`` (face start relative to ``cb``), ``tangent``, ``normal`` ``(nc, 2)`` (unit, the normal
    pointing out of ``cb``), ``face_len``, ``area`` (tributary area), ``joint`` (joint index), ``s`` (position
    along the joint in [0, 1]), ``visc``: a joint of area ``A`` between blocks of reduced mass ``m`` (the free
    block's mass against a support) gets the critical normal dashpot ``2 sqrt(kn A m)``, shared out by area:
    ``visc = 2 sqrt(m) area / sqrt(A)`` (times ``xi sqrt(kn)`` in the kernel).
    """

    assembly: Assembly
    mass: np.ndarray
    inertia: np.ndarray
    free: np.ndarray
    centroid: np.ndarray
    ca: np.ndarray
    cb: np.ndarray
    node: np.ndarray
    face0: np.ndarray
    tangent: np.ndarray
    normal: np.ndarray
    face_len: np.ndarray
    area: np.ndarray
    joint: np.ndarray
    s: np.ndarray
    visc: np.ndarray
    load_block: int
    load_point: np.ndarray
    load_dir: np.ndarray
    load_area: float
    track_block: np.ndarray
    track_point: np.ndarray
    track_names: tuple[str, ...]

    @property
    def n_blocks(self) -> int:
        return int(self.mass.size)

    @property
    def n_contacts(self) -> int:
        return int(self.ca.size)


def build_system(
    assembly: Assembly,
    layout: str = "uniform",
    n: int = 15,
    *,
    mesh_size: float = 0.012,
    n_sub: int = 8,
    load_area: float = 0.0,
) -> DemSystem:
    """Pack ``assembly`` for the kernels, discretising every joint with :func:`~.geometry.contact_layout`.

    ``load_area`` [m^2] is the bearing area of the loading plate; its spring is ``kn * load_area`` (the plate
    seated on its bearing is a joint of the same normal stiffness), or, when 0, the plate is rigid
    (``kp`` must then be given to :func:`run_batch`).
    """
    W = assembly.width
    props = [b.mass_properties(W) for b in assembly.blocks]
    mass = np.array([p[0] for p in props])
    cent = np.array([p[1] for p in props])
    inertia = np.array([p[2] for p in props])
    free = np.array([0 if b.fixed else 1 for b in assembly.blocks], dtype=np.int64)
    ca, cb, node, face0, tan, nrm, flen, area, jid, ss, visc = ([] for _ in range(11))
    for j, jt in enumerate(assembly.joints):
        p0, p1 = np.asarray(jt.p0, float), np.asarray(jt.p1, float)
        L = float(np.hypot(*(p1 - p0)))
        t = (p1 - p0) / L
        nv = np.array([-t[1], t[0]])
        if nv @ (cent[jt.b] - p0) > 0:
            nv = -nv  # out of block b
        s, w = contact_layout(layout, n, length=L, mesh_size=mesh_size, n_sub=n_sub)
        ma, mb = (mass[i] if free[i] else math.inf for i in (jt.a, jt.b))
        mred = ma if mb == math.inf else (mb if ma == math.inf else ma * mb / (ma + mb))
        aj = float(np.sum(w)) * L * W
        for sk, wk in zip(s, w, strict=True):
            x = p0 + sk * (p1 - p0)
            ca.append(jt.a)
            cb.append(jt.b)
            node.append(x - cent[jt.a])
            face0.append(p0 - cent[jt.b])
            tan.append(t)
            nrm.append(nv)
            flen.append(L)
            area.append(wk * L * W)
            jid.append(j)
            ss.append(sk)
            visc.append(2.0 * math.sqrt(mred) * wk * L * W / math.sqrt(aj) if math.isfinite(mred) else 0.0)
    if assembly.load is not None:
        lb = int(assembly.load.block)
        lp = np.asarray(assembly.load.point, float) - cent[lb]
        ld = np.asarray(assembly.load.direction, float)
        ld = ld / np.hypot(*ld)
    else:
        lb, lp, ld = -1, np.zeros(2), np.array([0.0, -1.0])
    names = tuple(assembly.tracked)
    tb = np.array([assembly.tracked[k][0] for k in names], dtype=np.int64)
    tp = np.array([np.asarray(assembly.tracked[k][1], float) - cent[assembly.tracked[k][0]] for k in names]).reshape(
        -1, 2
    )
    arr = lambda v, dt=float: np.ascontiguousarray(np.array(v, dtype=dt))
    return DemSystem(
        assembly,
        mass,
        inertia,
        free,
        cent,
        arr(ca, np.int64),
        arr(cb, np.int64),
        arr(node).reshape(-1, 2),
        arr(face0).reshape(-1, 2),
        arr(tan).reshape(-1, 2),
        arr(nrm).reshape(-1, 2),
        arr(flen),
        arr(area),
        arr(jid, np.int64),
        arr(ss),
        arr(visc),
        lb,
        lp,
        ld,
        float(load_area),
        tb,
        np.ascontiguousarray(tp),
        names,
    )


def kernel_contacts(system: DemSystem) -> Contacts:
    """The sub-contacts of ``system`` packed for the kernels, with their joints: runs of consecutive
    sub-contacts between the same two blocks on the same face (every joint of :func:`build_system`)."""
    per_contact = np.column_stack(
        [system.ca, system.cb, system.face0, system.tangent, system.normal, system.face_len]
    ).astype(float)
    new = np.flatnonzero(np.any(per_contact[1:] != per_contact[:-1], axis=1)) + 1
    start = np.concatenate([[0], new, [system.n_contacts]]).astype(np.uint64)
    if np.any(system.ca == system.cb):
        raise ConfigurationError("a sub-contact joins a block to itself; check the assembly's joints")
    return Contacts(
        system.ca,
        system.cb,
        system.node,
        system.face0,
        system.tangent,
        system.normal,
        system.face_len,
        system.area,
        system.visc,
        np.ascontiguousarray(system.node + system.centroid[system.ca] - system.centroid[system.cb]),
        start if system.n_contacts else np.zeros(1, np.uint64),
    )


# --------------------------------------------------------------------------------------------
# Time step
# --------------------------------------------------------------------------------------------
def stiffness_matrix(system: DemSystem, kn: float, ks: float, kp: float = 0.0) -> np.ndarray:
    """Global stiffness ``(3 nb, 3 nb)`` [N/m, N, N m] with every sub-contact closed and sticking, plus the
    plate spring ``kp`` [N/m] on the loaded point; DOF order ``(x, y, theta)`` per block."""
    nb_ = system.n_blocks
    K = np.zeros((3 * nb_, 3 * nb_))
    rel = system.centroid[system.ca] + system.node  # node positions
    rA = rel - system.centroid[system.ca]
    rB = rel - system.centroid[system.cb]
    for e, k in ((system.normal, kn), (system.tangent, ks)):
        g = np.zeros((system.n_contacts, 3 * nb_))
        idx = np.arange(system.n_contacts)
        for c in range(2):
            np.add.at(g, (idx, 3 * system.ca + c), e[:, c])
            np.add.at(g, (idx, 3 * system.cb + c), -e[:, c])
        np.add.at(g, (idx, 3 * system.ca + 2), rA[:, 0] * e[:, 1] - rA[:, 1] * e[:, 0])
        np.add.at(g, (idx, 3 * system.cb + 2), -(rB[:, 0] * e[:, 1] - rB[:, 1] * e[:, 0]))
        K += (g.T * (k * system.area)) @ g
    if system.load_block >= 0 and kp > 0:
        d, r = system.load_dir, system.load_point
        g = np.zeros(3 * nb_)
        g[3 * system.load_block : 3 * system.load_block + 3] = (d[0], d[1], r[0] * d[1] - r[1] * d[0])
        K += kp * np.outer(g, g)
    return K


def stable_dt(system: DemSystem, kn: float, ks: float, kp: float = 0.0, factor: float = 0.5) -> float:
    """``factor * 2 / omega_max`` (module docstring); ``omega_max`` from the free degrees of freedom."""
    if not 0 < factor < 1:
        raise ConfigurationError(f"the time-step factor must lie in (0, 1), got {factor!r}")
    K = stiffness_matrix(system, kn, ks, kp)
    m = np.repeat(system.mass, 3)
    m[2::3] = system.inertia
    keep = np.repeat(system.free.astype(bool), 3)
    s = 1.0 / np.sqrt(m[keep])
    D = K[np.ix_(keep, keep)] * s[:, None] * s[None, :]
    lam = float(np.linalg.eigvalsh(D)[-1]) if D.size else 0.0
    if not lam > 0:
        raise ConfigurationError("the assembly has no stiffness on its free blocks; check its joints")
    return factor * 2.0 / math.sqrt(lam)


@dataclass(frozen=True)
class BatchResult:
    """Outputs of :func:`run_batch` for ``n`` parameter sets.

    ``samples`` ``(n, n_samples, 4 + 2 n_tracked)``: time [s], plate displacement [m], plate force [N],
    kinetic energy [J], then ``(dx, dy)`` [m] of each tracked point from the equilibrated state.
    ``pos_eq``, ``pos_peak``, ``pos_end`` ``(n, nb, 3)``: block ``(x, y, theta)`` after self-weight, at the
    peak plate force, at the end. ``fn``, ``fs``, ``slip`` ``(n, nc)``: final sub-contact forces [N] and
    plastic slip accumulated during loading [m]. ``status``, ``eq_steps``, ``eq_ratio`` (final
    unbalanced-force ratio of the self-weight phase), ``load_steps``, ``dt`` (the loading-phase step) ``(n,)``;
    ``n_open`` and ``n_slip`` ``(n,)``: how often a sub-contact opened or closed, and changed between sticking
    and slipping, from one loading step to the next; ``step_peak`` ``(n,)``: the largest plate force [N] of
    any step (the samples may miss it).
    """

    samples: np.ndarray
    pos_eq: np.ndarray
    pos_peak: np.ndarray
    pos_end: np.ndarray
    fn: np.ndarray
    fs: np.ndarray
    slip: np.ndarray
    status: np.ndarray
    eq_steps: np.ndarray
    eq_ratio: np.ndarray
    load_steps: np.ndarray
    dt: np.ndarray
    n_open: np.ndarray
    n_slip: np.ndarray
    step_peak: np.ndarray


@dataclass(frozen=True, kw_only=True)
class BatchSettings:
    """How :func:`run_batch` loads and integrates the arch (every field has the default it had as a keyword).

    Args:
        velocity: plate velocity [m/s] along the load direction; ``duration`` [s] of the loading phase.
        n_samples: samples uniformly in time over the loading phase (the first at its start).
        alpha: local damping coefficient.
        gravity: acceleration vector [m/s^2].
        kp: plate spring [N/m] per set; default ``kn * load_area``.
        dt: time step [s] per set; default :func:`stable_dt` with ``dt_factor``.
        rounding: sub-contacts stay active ``rounding * L`` beyond a face's ends.
        eq_max_steps, eq_tol, eq_check: self-weight equilibration (0 steps: none).
        vel0: ``(nb, 3)`` velocities imposed at the start of the loading phase (tests).
        damping_form: ``"local"`` or ``"combined"`` (:func:`~.kernels.integrate`); ``viscous``: damping ratio
            of dashpots at the sub-contacts (``DemSystem.visc``; 0: none).
        ramp: [s] the plate's velocity rises linearly to ``velocity`` over this time (the plate lags the
            constant-velocity path by ``velocity * ramp / 2``: lengthen ``duration`` by ``ramp / 2``).
        plate_mass: [kg] 0: a kinematic plate; else a mass driven through an actuator spring ``k_act`` [N/m]
            (default the plate spring).
        mass_scale: every block's mass and inertia times this factor, gravity divided by it (the weights stay;
            the step grows by its square root unless ``dt`` is given).
        small_displacements: contacts keep their assembled geometry (:class:`~.kernels.Controls`).
    """

    velocity: float = 0.0
    duration: float = 0.0
    n_samples: int = 101
    alpha: float = 0.8
    gravity: tuple[float, float] = (0.0, -9.81)
    kp: float | np.ndarray | None = None
    dt: float | np.ndarray | None = None
    dt_factor: float = 0.5
    rounding: float = 0.02
    eq_max_steps: int = 200_000
    eq_tol: float = 1e-5
    eq_check: int = 10
    vel0: np.ndarray | None = None
    damping_form: str = "local"
    viscous: float = 0.0
    ramp: float = 0.0
    plate_mass: float = 0.0
    k_act: float | None = None
    mass_scale: float = 1.0
    small_displacements: bool = False


def run_batch(
    system: DemSystem,
    kn: np.ndarray,
    ks: np.ndarray,
    phi_deg: np.ndarray,
    settings: BatchSettings | None = None,
    **changes: Any,
) -> BatchResult:
    """Simulate ``n`` parameter sets: ``kn``, ``ks`` [Pa/m] and ``phi_deg`` [deg], each ``(n,)``, under
    ``settings`` (:class:`BatchSettings`; default its defaults) with ``changes`` (its fields by keyword:
    ``run_batch(system, kn, ks, phi, duration=0.01)``) over them."""
    st = replace(settings or BatchSettings(), **changes)
    velocity, duration, n_samples, alpha, gravity = st.velocity, st.duration, st.n_samples, st.alpha, st.gravity
    kp, dt, dt_factor, rounding, vel0 = st.kp, st.dt, st.dt_factor, st.rounding, st.vel0
    eq_max_steps, eq_tol, eq_check, damping_form = st.eq_max_steps, st.eq_tol, st.eq_check, st.damping_form
    viscous, ramp, plate_mass, k_act, mass_scale = st.viscous, st.ramp, st.plate_mass, st.k_act, st.mass_scale
    small_displacements = st.small_displacements
    if damping_form not in DAMPING_FORMS:
        raise ConfigurationError(f"damping_form must be one of {list(DAMPING_FORMS)}, got {damping_form!r}")
    for name, val in (("viscous", viscous), ("ramp", ramp), ("plate_mass", plate_mass)):
        if not (math.isfinite(val) and val >= 0):
            raise ConfigurationError(f"{name} must be finite and >= 0, got {val!r}")
    if not (math.isfinite(mass_scale) and mass_scale > 0):
        raise ConfigurationError(f"mass_scale must be finite and > 0, got {mass_scale!r}")
    kn = np.atleast_1d(np.asarray(kn, float))
    n = kn.size
    ks = np.broadcast_to(np.asarray(ks, float), (n,)).copy()
    mu = np.tan(np.radians(np.broadcast_to(np.asarray(phi_deg, float), (n,))))
    for name, v in (("kn", kn), ("ks", ks)):
        if not np.all(np.isfinite(v) & (v > 0)):
            raise ConfigurationError(f"{name} must be finite and > 0 Pa/m, got {v.tolist()!r}")
    if kp is None:
        kp_arr = kn * system.load_area
    else:
        kp_arr = np.broadcast_to(np.asarray(kp, float), (n,)).copy()
    if system.load_block >= 0 and duration > 0 and np.any(kp_arr <= 0):
        raise ConfigurationError(
            "the loading plate needs a spring kp > 0: give kp or build the system with load_area > 0"
        )
    fmax = 1.0 / math.sqrt(1.0 + alpha)
    if dt is None and not 0 < dt_factor < fmax:
        raise ConfigurationError(
            f"dt_factor must lie in (0, {fmax:.3f}) with local damping {alpha!r}, got {dt_factor!r}; "
            "local damping stiffens the update by (1 + alpha)"
        )
    if dt is None:
        ka = kp_arr if k_act is None else np.full(n, float(k_act))
        dt_arr = np.array(
            [
                stable_dt(system, kn[i], ks[i], kp_arr[i] if plate_mass <= 0 else kp_arr[i] + ka[i], dt_factor)
                for i in range(n)
            ]
        ) * math.sqrt(mass_scale)
    else:
        dt_arr = np.broadcast_to(np.asarray(dt, float), (n,)).copy()
    nb_, nc, ntr = system.n_blocks, system.n_contacts, system.track_block.size
    v0 = np.zeros((nb_, 3)) if vel0 is None else np.ascontiguousarray(vel0, dtype=float)
    samples = np.zeros((n, n_samples, S_TRACK + 2 * ntr))
    pos_eq, pos_peak, pos_end = (np.zeros((n, nb_, 3)) for _ in range(3))
    fn, fs, slip = (np.zeros((n, nc)) for _ in range(3))
    info = np.zeros((n, N_INFO))
    if n > 1 and plate_mass > 0 and k_act is None and np.ptp(kp_arr) > 0:
        raise ConfigurationError("a massive plate in a batch of different kp needs one k_act")
    k_a = float(kp_arr[0] if k_act is None else k_act)
    _run_batch(
        Blocks(system.mass * mass_scale, system.inertia * mass_scale, system.free, system.centroid),
        kernel_contacts(system),
        kn,
        ks,
        mu,
        kp_arr,
        dt_arr,
        Controls(
            float(alpha),
            float(gravity[0]) / mass_scale,
            float(gravity[1]) / mass_scale,
            float(rounding),
            int(eq_max_steps),
            float(eq_tol),
            int(eq_check),
            DAMPING_FORMS[damping_form],
            float(viscous),
            int(bool(small_displacements)),
        ),
        Loading(
            int(system.load_block),
            np.ascontiguousarray(system.load_point, float),
            np.ascontiguousarray(system.load_dir, float),
            float(velocity),
            float(duration),
            v0,
            system.track_block,
            system.track_point,
            float(ramp),
            float(plate_mass),
            k_a,
        ),
        Outputs(samples, pos_eq, pos_peak, pos_end, fn, fs, slip, info),
    )
    return BatchResult(
        samples,
        pos_eq,
        pos_peak,
        pos_end,
        fn,
        fs,
        slip,
        info[:, 0].astype(int),
        info[:, 1].astype(int),
        info[:, 2],
        info[:, 3].astype(int),
        info[:, 4],
        info[:, 5].astype(int),
        info[:, 6].astype(int),
        info[:, 7],
    )
