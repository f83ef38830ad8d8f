"""Layouts of the granular DEM kernels' arrays (:mod:`.dem`): the columns of the interaction table, the contact
history, the phase settings, the samples and the run info, and the named tuples that bundle the kernels'
arguments (numba passes a named tuple of arrays and scalars to a compiled function as one argument).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

ROLL_DAMPING = 0.3  # eta_r of the rolling damper (Ai et al. 2011)
# fields of a row of the interaction table
(
    I_ESTAR,
    I_GSTAR,
    I_BETA,
    I_MU,
    I_MUR,
    I_LAM,
    I_F0,
    I_FMINC,
    I_KADH,
    I_N,
    I_CHI,
    I_ZETA,
    I_K1C,
    I_LAMROOT,
    I_KTC,
    I_CTR,
) = range(16)
N_IFIELDS = 16
# walls
W_CYL, W_BOTTOM, W_PISTON = 0, 1, 2
# history columns: plastic overlap, tangential spring (3), rolling torque (3)
H_DP, H_FT, H_MR = 0, 1, 4
N_HIST = 7
# constants of a contact, fixed by its two spheres (or sphere and wall) and its interaction row, computed when the
# contact list is built: R*, m*, the moment of inertia of the rolling damper, sqrt(R*), k1, k2, the JKR pull-off
# force f_min, the smaller radius, and of the EEPA law (contact.eepa_normal) 1 - k1/k2, f0 - f_min (or 0) and
# (f0 - f_min) / k2
C_RSTAR, C_MSTAR, C_IROLL, C_SR, C_K1, C_K2, C_FMIN, C_RMIN, C_LAM, C_A0, C_A0K2 = range(11)
N_CONST = 11
# phase settings (the ``phase`` array of run_one)
(
    P_SETTLE_TMAX,
    P_SETTLE_TMIN,
    P_SETTLE_KE,
    P_PRELOAD,
    P_PC_VMAX,
    P_PC_TMAX,
    P_PC_TOL,
    P_PC_HOLD,
    P_PC_TAU,
    P_PISTON,
    P_PISTON_Z,
    P_V_LOAD,
    P_T_LOAD,
    P_V_UNLOAD,
    P_T_END,
    P_SETTLE_DAMP,
) = range(16)
N_PHASE = 16
# sample columns
(S_TIME, S_DISP, S_FPISTON, S_FBOTTOM, S_FCYL, S_KE, S_Z0, S_VZ0, S_ZPISTON) = range(9)
N_SAMPLE_COLS = 9
# info fields
(F_STATUS, F_STEPS, F_SETTLE_T, F_PC_T, F_PC_FORCE, F_Z_REF, F_REBUILDS, F_MAX_OVERLAP, F_KE_END, F_SETTLE_KE) = range(
    10
)
N_INFO = 10
# status codes
OK, NOT_SETTLED, PRELOAD_NOT_STEADY, DIVERGED, LIST_OVERFLOW = 0, 1, 2, 3, 4


class Bodies(NamedTuple):
    """The rigid bodies of a :class:`~.dem.Particles` (SI units): ``mass`` ``(nb,)`` [kg], ``inertia`` ``(nb, 3)``
    principal moments along the body axes [kg m^2]; per sphere ``sphere_body`` ``(ns,)`` (int64),
    ``sphere_local`` ``(ns, 3)`` offset in its body's frame [m], ``sphere_radius`` ``(ns,)`` [m]."""

    mass: np.ndarray
    inertia: np.ndarray
    sphere_body: np.ndarray
    sphere_local: np.ndarray
    sphere_radius: np.ndarray


class BodyState(NamedTuple):
    """The state of the ``nb`` bodies, world frame: centres ``pos`` ``(nb, 3)`` [m], unit quaternions ``quat``
    ``(nb, 4)`` (body to world, scalar first), velocities ``vel`` ``(nb, 3)`` [m/s], angular momenta
    ``angmom`` ``(nb, 3)`` [kg m^2/s]."""

    pos: np.ndarray
    quat: np.ndarray
    vel: np.ndarray
    angmom: np.ndarray


class Settings(NamedTuple):
    """The container and the run, common to a batch: ``wall_types`` ``(3,)`` (int64, rows of the interaction
    table of the cylinder, the bottom and the piston), cylinder radius ``r_cyl`` [m] (0: none), ``z_bottom`` [m],
    gravity ``gz`` [m/s^2] (along z), Verlet ``skin`` [m], ``list_factor`` (neighbour-list capacity per sphere),
    ``phase`` ``(N_PHASE,)`` (columns ``P_*``, :meth:`.dem.Phases.array`)."""

    wall_types: np.ndarray
    r_cyl: float
    z_bottom: float
    gz: float
    skin: float
    list_factor: float
    phase: np.ndarray


class Outputs(NamedTuple):
    """The outputs of one run (with a leading ``(n,)`` axis, of a batch): ``samples`` ``(n_samples,
    N_SAMPLE_COLS)`` (columns ``S_*``), the final state ``pos``, ``quat``, ``vel``, ``angmom`` as in
    :class:`BodyState`, ``info`` ``(N_INFO,)`` (fields ``F_*``)."""

    samples: np.ndarray
    pos: np.ndarray
    quat: np.ndarray
    vel: np.ndarray
    angmom: np.ndarray
    info: np.ndarray


class NeighbourList(NamedTuple):
    """A Verlet list in CSR form: the partners of sphere ``i`` are ``nbr[start[i]:start[i + 1]]`` (sorted);
    ``start`` ``(ns + 1,)``, ``nbr`` ``(cap,)`` (int64), ``hist`` ``(cap, N_HIST)`` the pairs' contact history
    (columns ``H_*``: plastic overlap [m], tangential spring [N], rolling torque [N m]), ``const``
    ``(cap, N_CONST)`` the pairs' constants (columns ``C_*``, :func:`.neighbours.pair_constants`)."""

    start: np.ndarray
    nbr: np.ndarray
    hist: np.ndarray
    const: np.ndarray


class WallContacts(NamedTuple):
    """The contacts of sphere ``s`` with wall ``w`` (rows ``3 s + w``): ``hist`` ``(3 ns, N_HIST)`` their history as
    in :class:`NeighbourList`, ``active`` ``(3 ns,)`` (int8) 1 where the history may be non-zero (touched since it
    was last cleared), ``const`` ``(3 ns, N_CONST)`` their constants (:func:`.neighbours.wall_constants`)."""

    hist: np.ndarray
    active: np.ndarray
    const: np.ndarray


class Spheres(NamedTuple):
    """World positions ``x`` ``(ns, 3)`` [m] of the spheres and their offsets ``rel`` ``(ns, 3)`` [m] from their
    body's centre."""

    x: np.ndarray
    rel: np.ndarray


class Loads(NamedTuple):
    """Forces ``F`` [N] and torques ``T`` [N m] on the bodies ``(nb, 3)`` (world frame) and the forces on the
    walls ``wallf`` ``(3, 3)`` [N] (rows ``W_*``: cylinder, bottom, piston)."""

    F: np.ndarray
    T: np.ndarray
    wallf: np.ndarray
