"""Rigid-block limit analysis of a block assembly, independent of the DEM.

Blocks are rigid, joints carry no tension, and (optionally) Coulomb friction; the collapse load factor
``lambda`` multiplies the load of :class:`~.geometry.LoadPoint` (1 N along its direction) on top of self-weight.

Two methods:

* :func:`static_collapse` (lower bound, Livesley's linear programme): at every joint two compressive edge
  forces ``N0, N1 >= 0`` (so the thrust stays within the joint: the line of thrust lies inside the arch)
  and a shear force ``T`` with ``|T| <= mu (N0 + N1)``; equilibrium of every free block; maximise
  ``lambda``. The dual variables of the equilibrium rows are the virtual velocities of the collapse
  mechanism. With associated friction this is the exact rigid-plastic collapse load; with ``mu`` large it
  is the classical hinge-only (Heyman) collapse load.
* :func:`hinge_mechanisms` (upper bound, for an arch: a chain of blocks between two fixed abutments):
  every four-hinge mechanism, hinges at joint ends, is enumerated; the instantaneous centres give the
  virtual velocities, virtual work gives ``lambda``; mechanisms whose relative rotations would close
  rather than open a hinged joint are discarded. The smallest admissible ``lambda`` is the collapse load.

Both bound the same number for a hinge-only failure, so each checks the other.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from ...errors import ConfigurationError
from .geometry import Assembly

G = 9.81


@dataclass(frozen=True)
class JointMotion:
    """Relative motion of a joint in a collapse mechanism (virtual rates, normalised so the load point moves
    1 along the load): ``opening`` at each end (positive: opens), ``sliding`` (tangential, at the joint's
    middle), and its classification ``"hinge@<end>"``, ``"sliding"``, ``"hinge@<end>+sliding"`` or ``""``."""

    name: str
    opening: tuple[float, float]
    sliding: float
    state: str


@dataclass(frozen=True)
class LimitResult:
    """Collapse load ``load`` [N] (on top of self-weight), the method, the joints' motions in the mechanism
    and the block velocities ``(nb, 3)`` (``u, v, omega``)."""

    load: float
    method: str
    joints: tuple[JointMotion, ...]
    velocities: np.ndarray

    @property
    def hinges(self) -> list[str]:
        return [f"{j.name}:{j.state.split('@')[1].split('+')[0]}" for j in self.joints if j.state.startswith("hinge")]

    @property
    def sliding(self) -> list[str]:
        return [j.name for j in self.joints if "sliding" in j.state]


def _joint_frames(assembly: Assembly, centroids: np.ndarray):
    out = []
    for jt in assembly.joints:
        p0, p1 = np.asarray(jt.p0, float), np.asarray(jt.p1, float)
        t = (p1 - p0) / np.hypot(*(p1 - p0))
        n = np.array([-t[1], t[0]])
        if n @ (centroids[jt.b] - p0) > 0:
            n = -n
        out.append((p0, p1, t, n))
    return out


def _cross(r: np.ndarray, f: np.ndarray) -> float:
    return float(r[0] * f[1] - r[1] * f[0])


def classify_joints(assembly: Assembly, vel: np.ndarray, rel_tol: float = 1e-6) -> tuple[JointMotion, ...]:
    """Joint openings and slips from block velocities ``(nb, 3)`` (``u, v, omega`` about each centroid)."""
    cents = np.array([b.mass_properties(assembly.width)[1] for b in assembly.blocks])
    scale = max(1e-300, float(np.max(np.abs(vel[:, :2]))) + float(np.max(np.abs(vel[:, 2]))) * 0.1)
    out = []
    for jt, (p0, p1, t, n) in zip(assembly.joints, _joint_frames(assembly, cents), strict=True):

        def rel(p, jt=jt):
            va = vel[jt.a, :2] + vel[jt.a, 2] * np.array([-(p - cents[jt.a])[1], (p - cents[jt.a])[0]])
            vb = vel[jt.b, :2] + vel[jt.b, 2] * np.array([-(p - cents[jt.b])[1], (p - cents[jt.b])[0]])
            return va - vb

        o0, o1 = float(rel(p0) @ n), float(rel(p1) @ n)
        sl = float(rel(0.5 * (p0 + p1)) @ t)
        tol = rel_tol * scale
        opens = [o > tol for o in (o0, o1)]
        hinge = ""
        if opens[0] != opens[1]:
            hinge = f"hinge@{jt.tags[0] if opens[1] else jt.tags[1]}"
        elif opens[0] and opens[1]:
            hinge = "separation"
        slid = abs(sl) > tol and abs(sl) > 1e-3 * max(abs(o0), abs(o1), tol)
        state = "+".join(s for s in (hinge, "sliding" if slid else "") if s)
        out.append(JointMotion(jt.name, (o0, o1), sl, state))
    return tuple(out)


def static_collapse(assembly: Assembly, mu: float = 1e3, g: float = G) -> LimitResult:
    """Lower-bound (static) collapse load by linear programming; see the module docstring.

    Args:
        assembly: blocks, joints and the load point (its direction; 1 N reference load).
        mu: friction coefficient ``tan(phi)``; the default 1e3 leaves only hinges.
        g: gravity [m/s^2], acting along -y.
    """
    if assembly.load is None:
        raise ConfigurationError("limit analysis needs an assembly with a load point")
    nb = len(assembly.blocks)
    props = [b.mass_properties(assembly.width) for b in assembly.blocks]
    cents = np.array([p[1] for p in props])
    free = [i for i, b in enumerate(assembly.blocks) if not b.fixed]
    row = {b: 3 * k for k, b in enumerate(free)}
    nj = len(assembly.joints)
    nv = 3 * nj + 1  # (N0, N1, T) per joint, lambda last
    A = np.zeros((3 * len(free), nv))
    rhs = np.zeros(3 * len(free))
    for j, (jt, (p0, p1, t, n)) in enumerate(zip(assembly.joints, _joint_frames(assembly, cents), strict=True)):
        pm = 0.5 * (p0 + p1)
        for blk, sgn in ((jt.a, 1.0), (jt.b, -1.0)):
            if blk not in row:
                continue
            r = row[blk]
            for col, (f, p) in enumerate(((n, p0), (n, p1), (t, pm))):
                A[r, 3 * j + col] += sgn * f[0]
                A[r + 1, 3 * j + col] += sgn * f[1]
                A[r + 2, 3 * j + col] += sgn * _cross(p - cents[blk], f)
    for b in free:
        rhs[row[b] + 1] = props[b][0] * g  # sum of forces + weight = 0  ->  A x = -W = +m g on the y row
    lb = assembly.load.block
    if lb not in row:
        raise ConfigurationError("the load acts on a fixed block")
    d = np.asarray(assembly.load.direction, float)
    d = d / np.hypot(*d)
    r = row[lb]
    A[r, -1], A[r + 1, -1] = d
    A[r + 2, -1] = _cross(np.asarray(assembly.load.point, float) - cents[lb], d)
    # friction rows: T - mu (N0 + N1) <= 0, -T - mu (N0 + N1) <= 0
    Aub = np.zeros((2 * nj, nv))
    for j in range(nj):
        Aub[2 * j, [3 * j, 3 * j + 1, 3 * j + 2]] = (-mu, -mu, 1.0)
        Aub[2 * j + 1, [3 * j, 3 * j + 1, 3 * j + 2]] = (-mu, -mu, -1.0)
    bounds = [(0, None), (0, None), (None, None)] * nj + [(None, None)]
    c = np.zeros(nv)
    c[-1] = -1.0
    res = linprog(c, A_ub=Aub, b_ub=np.zeros(2 * nj), A_eq=A, b_eq=rhs, bounds=bounds, method="highs")
    if res.status == 3:
        raise ConfigurationError("the limit analysis is unbounded: the assembly does not collapse under this load")
    if res.status != 0:
        raise ConfigurationError(f"the limit analysis found no equilibrium: {res.message}")
    y = np.asarray(res.eqlin.marginals)
    vel = np.zeros((nb, 3))
    for b in free:
        vel[b] = y[row[b] : row[b] + 3]
    # normalise: the load point moves +1 along the load
    rp = np.asarray(assembly.load.point, float) - cents[lb]
    vp = vel[lb, :2] + vel[lb, 2] * np.array([-rp[1], rp[0]])
    s = float(vp @ d)
    if s != 0:
        vel /= s
    return LimitResult(float(res.x[-1]), "static (LP)", classify_joints(assembly, vel), vel)


def hinge_mechanisms(assembly: Assembly, g: float = G) -> LimitResult:
    """Upper-bound (kinematic) collapse load: the least load factor over all admissible four-hinge
    mechanisms of an arch (blocks ``0`` and ``nb - 1`` fixed, joint ``j`` between blocks ``j`` and ``j + 1``)."""
    blocks = assembly.blocks
    nb = len(blocks)
    joints = assembly.joints
    if not (
        blocks[0].fixed
        and blocks[-1].fixed
        and all(not b.fixed for b in blocks[1:-1])
        and len(joints) == nb - 1
        and all(j.a == i and j.b == i + 1 for i, j in enumerate(joints))
    ):
        raise ConfigurationError("hinge_mechanisms needs an arch: a chain of free blocks between two fixed ends")
    if assembly.load is None:
        raise ConfigurationError("limit analysis needs an assembly with a load point")
    props = [b.mass_properties(assembly.width) for b in blocks]
    cents = np.array([p[1] for p in props])
    W = np.array([p[0] * g for p in props])
    frames = _joint_frames(assembly, cents)
    ends = [(f[0], f[1]) for f in frames]
    lb, xp = assembly.load.block, np.asarray(assembly.load.point, float)
    d = np.asarray(assembly.load.direction, float)
    d = d / np.hypot(*d)
    best = (math.inf, None)

    def line_x(p, q, r, s):
        """Intersection of lines pq and rs, or None when parallel."""
        d1, d2 = q - p, s - r
        den = d1[0] * d2[1] - d1[1] * d2[0]
        if abs(den) < 1e-14 * (np.hypot(*d1) * np.hypot(*d2)):
            return None
        tt = ((r - p)[0] * d2[1] - (r - p)[1] * d2[0]) / den
        return p + tt * d1

    for jj in itertools.combinations(range(nb - 1), 4):
        for ee in itertools.product((0, 1), repeat=4):
            H = [ends[j][e] for j, e in zip(jj, ee, strict=True)]
            O2 = line_x(H[0], H[1], H[3], H[2])
            if O2 is None:
                continue
            # rotation rates of the three moving segments, omega1 = 1
            w = [0.0, 1.0, 0.0, 0.0, 0.0]  # fixed left, S1, S2, S3, fixed right
            b_o2 = H[1] - O2
            if b_o2 @ b_o2 < 1e-20:
                continue
            w[2] = float((H[1] - H[0]) @ b_o2 / (b_o2 @ b_o2))
            c_d = H[2] - H[3]
            w[3] = w[2] * float((H[2] - O2) @ c_d / (c_d @ c_d))
            centres = [None, H[0], O2, H[3], None]
            seg = np.zeros(nb, dtype=int)
            for k, j in enumerate(jj):
                seg[j + 1 :] = k + 1
            seg[-1] = 4

            def v_at(b, p, seg=seg, w=w, centres=centres):
                s = seg[b]
                if s in (0, 4):
                    return np.zeros(2)
                r = p - centres[s]
                return w[s] * np.array([-r[1], r[0]])

            pl = float(d @ v_at(lb, xp))
            if abs(pl) < 1e-12:
                continue
            sign = 1.0 if pl > 0 else -1.0
            pw = -sum(W[b] * v_at(b, cents[b])[1] for b in range(1, nb - 1))
            lam = -pw / pl
            ok = True
            for j, e in zip(jj, ee, strict=True):
                p0, p1, _, n = frames[j]
                hp, other = (p0, p1) if e == 0 else (p1, p0)
                rel = v_at(j, other) - v_at(j + 1, other) - (v_at(j, hp) - v_at(j + 1, hp))
                if sign * float(rel @ n) <= 0:
                    ok = False
                    break
            if ok and 0 < lam < best[0]:
                best = (lam, (jj, ee, [sign * x for x in w], centres, seg))
    if best[1] is None:
        raise ConfigurationError("no admissible four-hinge mechanism found")
    lam, (jj, ee, w, centres, seg) = best
    vel = np.zeros((nb, 3))
    for b in range(1, nb - 1):
        s = seg[b]
        if s in (0, 4):
            continue
        r = cents[b] - centres[s]
        vel[b] = (-w[s] * r[1], w[s] * r[0], w[s])
    rp = xp - cents[lb]
    s = float((vel[lb, :2] + vel[lb, 2] * np.array([-rp[1], rp[0]])) @ d)
    vel /= s
    return LimitResult(float(lam), "kinematic (4 hinges)", classify_joints(assembly, vel), vel)
