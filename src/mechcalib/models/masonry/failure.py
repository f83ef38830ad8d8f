"""Failure mode of a DEM state: which joints open (rotational hinges) and slide (the deformed-shape plot is
:func:`mechcalib.reporting.plot_deformed`).

For every joint the two end points of the face are followed on both blocks between a reference state
(the self-weight equilibrium) and a later state (the peak or the end of loading):

* ``opening`` at each end [m]: the change of the gap between the material point of block ``a`` and the
  face of block ``b`` (positive: the joint opens there);
* ``slip`` [m]: the change of the tangential offset, measured at the end that stays closer (the pivot);
* a *rotational hinge* when one end opens by more than the opening threshold while the other does not:
  the hinge sits at the closed end (``"intrados"``/``"extrados"`` for an arch); ``"separated"`` when both
  ends open;
* *sliding* when ``|slip|`` exceeds the slip threshold.

Thresholds: ``max(open_tol, rel_tol * largest opening)`` and ``max(slip_tol, rel_tol * largest slip)`` over
the joints of the state. The absolute parts (0.1 mm, 0.5 mm) are far above elastic joint deformations (a
3 kN thrust on a 4 GPa/m, 160 x 200 mm joint compresses it by 0.02 mm); the relative part (25 %) keeps the
joints that form the mechanism and drops the small openings of their neighbours, which elastic joints share
in a spread hinge. The raw openings and slips are kept in :class:`JointState` for any other criterion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .geometry import Assembly


@dataclass(frozen=True)
class JointState:
    """Opening at each end [m], slip [m], hinge position (tag of the closed end, or ``""`` / ``"separated"``)
    and whether the joint slides."""

    name: str
    opening: tuple[float, float]
    slip: float
    hinge: str
    sliding: bool

    @property
    def label(self) -> str:
        parts = []
        if self.hinge:
            parts.append("separated" if self.hinge == "separated" else f"hinge at {self.hinge}")
        if self.sliding:
            parts.append(f"sliding {self.slip * 1e3:+.2f} mm")
        return ", ".join(parts)


@dataclass(frozen=True)
class FailureMode:
    """Joint states of one simulation, with the counts the experiment is compared on."""

    joints: tuple[JointState, ...]

    @property
    def hinges(self) -> list[str]:
        return [f"{j.name} ({j.hinge})" for j in self.joints if j.hinge and j.hinge != "separated"]

    @property
    def sliding(self) -> list[str]:
        return [j.name for j in self.joints if j.sliding]

    @property
    def n_hinges(self) -> int:
        return len(self.hinges)

    @property
    def n_sliding(self) -> int:
        return len(self.sliding)

    def summary(self) -> str:
        h = ", ".join(self.hinges) or "none"
        s = ", ".join(self.sliding) or "none"
        return f"{self.n_hinges} rotational hinge(s): {h}; {self.n_sliding} sliding joint(s): {s}"


def _world(pos: np.ndarray, cent: np.ndarray, b: int, p: np.ndarray) -> np.ndarray:
    """World position of the point ``p`` (assembled coordinates) of block ``b`` in state ``pos``."""
    c, s = math.cos(pos[b, 2]), math.sin(pos[b, 2])
    r = p - cent[b]
    return pos[b, :2] + np.array([c * r[0] - s * r[1], s * r[0] + c * r[1]])


def joint_kinematics(assembly: Assembly, centroids: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``(n_joints, 2, 2)``: for each joint and end, ``(gap, tangential offset)`` [m] of block ``a``'s end
    point relative to block ``b``'s face in state ``pos`` (``(nb, 3)``)."""
    out = np.zeros((len(assembly.joints), 2, 2))
    for j, jt in enumerate(assembly.joints):
        p0, p1 = np.asarray(jt.p0, float), np.asarray(jt.p1, float)
        t0 = (p1 - p0) / np.hypot(*(p1 - p0))
        n0 = np.array([-t0[1], t0[0]])
        if n0 @ (centroids[jt.b] - p0) > 0:
            n0 = -n0
        c, s = math.cos(pos[jt.b, 2]), math.sin(pos[jt.b, 2])
        R = np.array([[c, -s], [s, c]])
        q0 = _world(pos, centroids, jt.b, p0)
        t, n = R @ t0, R @ n0
        for e, p in enumerate((p0, p1)):
            x = _world(pos, centroids, jt.a, p)
            out[j, e] = ((x - q0) @ n, (x - q0) @ t)
    return out


def failure_mode(
    assembly: Assembly,
    centroids: np.ndarray,
    pos_ref: np.ndarray,
    pos: np.ndarray,
    open_tol: float = 1e-4,
    slip_tol: float = 5e-4,
    rel_tol: float = 0.25,
) -> FailureMode:
    """Classify every joint between states ``pos_ref`` and ``pos`` (``(nb, 3)``); see the module docstring."""
    k0 = joint_kinematics(assembly, centroids, pos_ref)
    k1 = joint_kinematics(assembly, centroids, pos)
    op_all = k1[:, :, 0] - k0[:, :, 0]
    pivots = np.argmin(op_all, axis=1)
    rows = np.arange(len(assembly.joints))
    slips = k1[rows, pivots, 1] - k0[rows, pivots, 1]
    o_thr = max(open_tol, rel_tol * float(op_all.max(initial=0.0)))
    s_thr = max(slip_tol, rel_tol * float(np.abs(slips).max(initial=0.0)))
    states = []
    for j, jt in enumerate(assembly.joints):
        op = op_all[j]
        pivot = int(pivots[j])
        slip = float(slips[j])
        opened = op > o_thr
        if opened.all():
            hinge = "separated"
        elif opened.any():
            hinge = jt.tags[pivot]
        else:
            hinge = ""
        states.append(JointState(jt.name, (float(op[0]), float(op[1])), slip, hinge, abs(slip) > s_thr))
    return FailureMode(tuple(states))


def block_polygons(
    assembly: Assembly,
    centroids: np.ndarray,
    pos: np.ndarray,
    scale: float = 1.0,
    pos_ref: np.ndarray | None = None,
    sub_blocks: bool = False,
) -> list[list[np.ndarray]]:
    """The pieces (or clumped sub-blocks) of every block in state ``pos``, displacements from ``pos_ref``
    (default: the assembled state) amplified by ``scale``."""
    nb = len(assembly.blocks)
    ref = np.column_stack([centroids, np.zeros(nb)]) if pos_ref is None else pos_ref
    amp = ref + scale * (pos - ref)
    out = []
    for b, blk in enumerate(assembly.blocks):
        polys = list(blk.sub_blocks) + list(blk.pieces[1:]) if sub_blocks and blk.sub_blocks else list(blk.pieces)
        out.append([np.array([_world(amp, centroids, b, p) for p in poly]) for poly in polys])
    return out


def joint_end_points(pos: np.ndarray, centroids: np.ndarray, joint) -> list[np.ndarray]:
    """World positions [m] of the two end points of ``joint``'s face, on its block ``a``, in state ``pos``."""
    return [_world(pos, centroids, joint.a, np.asarray(p, float)) for p in (joint.p0, joint.p1)]
