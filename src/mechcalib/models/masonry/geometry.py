"""Block assemblies for the 2D rigid-block DEM: polygons, joints, contact layouts, the segmental arch.

Units are SI throughout (m, kg). An :class:`Assembly` is a set of rigid :class:`Block` s (each a clump of
convex polygons glued together, possibly of different densities) and the :class:`Joint` s between them
(a straight face shared by two blocks, discretised into sub-contacts by a :func:`contact_layout`).

Contact layouts along a joint (position ``s`` in [0, 1] from the joint's first end, tributary weight ``w``,
``sum(w) = 1``; a sub-contact's stiffness is ``k * w * length * width``):

* ``"edges"``: two contacts at the joint ends, ``w = 1/2`` each (3DEC's coarse default).
* ``"uniform"``: ``n`` contacts evenly spaced from end to end, trapezoid weights (interior ``1/(n-1)``,
  ends half of that): the nodes of a face mesh with their tributary lengths, rocking about the edges.
* ``"midpoint"``: ``n`` contacts at the centres of ``n`` equal segments, ``w = 1/n``: no contact at the
  edges, so rocking happens ``length/(2n)`` inside them.
* ``"pulatsu"``: Kibriya et al. (2023) section 2.4.1, each stone made of 8 sub-blocks through the radial thickness, each
  sub-block face triangulated "radial-8" (corners, edge midpoints and centroid). Projected onto the
  radial coordinate a sub-block face has nodes at its two ends and its middle with area fractions 1/4,
  1/2, 1/4 (corner and edge-midpoint nodes carry 1/12 of the face each, the centroid 1/3); over 8
  sub-blocks this is 17 nodes every ``length/16`` with trapezoid weights.
* ``"surface"``: Kibriya et al. (2023) section 2.4.1, the face meshed at size ``h``: ``ceil(length/h)`` equal segments,
  nodes at their ends, trapezoid weights (``h = 12 mm`` on a 160 mm joint gives 15 nodes; ``h = 10 mm``
  gives the 17 nodes of ``"pulatsu"``). The 3D unstructured mesh of the paper is irregular across the
  out-of-plane width; in 2D only the radial node positions and their tributary lengths remain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ...errors import ConfigurationError

GRANITE_DENSITY = 2650.0  # kg/m^3, sound granite (Vasconcelos' stones are 2.6-2.7 t/m^3)
WOOD_DENSITY = 500.0  # kg/m^3, softwood interface glued to the loaded voussoir
LAYOUTS = ("uniform", "edges", "midpoint", "pulatsu", "surface")


# --------------------------------------------------------------------------------------------
# Polygons
# --------------------------------------------------------------------------------------------
def polygon_area(v: np.ndarray) -> float:
    """Signed area of polygon ``v`` (``(k, 2)``; positive when counter-clockwise)."""
    x, y = v[:, 0], v[:, 1]
    return 0.5 * float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))


def polygon_mass_properties(v: np.ndarray) -> tuple[float, np.ndarray, float]:
    """``(area, centroid (2,), polar second moment about the centroid)`` of a simple polygon ``(k, 2)``."""
    x, y = v[:, 0], v[:, 1]
    xn, yn = np.roll(x, -1), np.roll(y, -1)
    cr = x * yn - xn * y
    a = 0.5 * cr.sum()
    cx = ((x + xn) * cr).sum() / (6 * a)
    cy = ((y + yn) * cr).sum() / (6 * a)
    ixx = ((y * y + y * yn + yn * yn) * cr).sum() / 12.0
    iyy = ((x * x + x * xn + xn * xn) * cr).sum() / 12.0
    j_origin = ixx + iyy
    j_c = j_origin - a * (cx * cx + cy * cy)
    s = 1.0 if a > 0 else -1.0
    return abs(a), np.array([cx, cy]), s * j_c


def ccw(v: np.ndarray) -> np.ndarray:
    """``v`` ordered counter-clockwise."""
    v = np.asarray(v, dtype=float)
    return v if polygon_area(v) > 0 else v[::-1].copy()


def is_convex(v: np.ndarray, tol: float = 1e-12) -> bool:
    """Whether the counter-clockwise polygon ``v`` is convex."""
    d1 = np.roll(v, -1, axis=0) - v
    d2 = np.roll(d1, -1, axis=0)
    cross = d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0]
    return bool(np.all(cross >= -tol * np.max(np.abs(v)) ** 2))


def rotate(v: np.ndarray, angle: float, about: Sequence[float] = (0.0, 0.0)) -> np.ndarray:
    """Points ``v`` (``(k, 2)``) rotated counter-clockwise by ``angle`` [rad] about ``about``."""
    c, s = math.cos(angle), math.sin(angle)
    p = np.asarray(v, float) - np.asarray(about, float)
    return np.column_stack([c * p[:, 0] - s * p[:, 1], s * p[:, 0] + c * p[:, 1]]) + np.asarray(about, float)


# --------------------------------------------------------------------------------------------
# Assembly description
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Block:
    """A rigid block: one or more convex polygons glued together (a clump).

    Args:
        pieces: polygons ``(k, 2)`` [m], counter-clockwise, each convex.
        densities: one density [kg/m^3] per piece.
        fixed: a support block, fixed in all degrees of freedom.
        name: label for reports.
        sub_blocks: optional finer polygons (clumped sub-blocks) drawn in plots; no mechanical role.
    """

    pieces: tuple[np.ndarray, ...]
    densities: tuple[float, ...]
    fixed: bool = False
    name: str = "block"
    sub_blocks: tuple[np.ndarray, ...] = ()

    def __post_init__(self) -> None:
        if len(self.pieces) != len(self.densities) or not self.pieces:
            raise ConfigurationError(
                f"block {self.name!r}: give one density per piece, got {len(self.pieces)} pieces and "
                f"{len(self.densities)} densities"
            )
        pieces = tuple(ccw(p) for p in self.pieces)
        for p in pieces:
            if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] < 3 or not is_convex(p):
                raise ConfigurationError(f"block {self.name!r}: every piece must be a convex polygon of >= 3 points")
        object.__setattr__(self, "pieces", pieces)

    def mass_properties(self, width: float) -> tuple[float, np.ndarray, float]:
        """``(mass [kg], centroid [m] (2,), moment of inertia about the centroid [kg m^2])``."""
        props = [(polygon_mass_properties(p), rho) for p, rho in zip(self.pieces, self.densities, strict=True)]
        m = sum(a * rho * width for (a, _, _), rho in props)
        c = sum(a * rho * width * cc for (a, cc, _), rho in props) / m
        inertia = sum(rho * width * (j + a * float(np.sum((cc - c) ** 2))) for (a, cc, j), rho in props)
        return float(m), np.asarray(c), float(inertia)

    @property
    def outline(self) -> np.ndarray:
        """The first piece (the stone itself), for plots."""
        return self.pieces[0]


@dataclass(frozen=True)
class Joint:
    """A dry joint between blocks ``a`` and ``b``: the straight face from ``p0`` to ``p1`` [m].

    Sub-contacts are nodes fixed to block ``a`` that press on the face of block ``b`` (node-to-face, as a
    vertex against an edge in UDEC). ``tags`` name the ends for reports (``("intrados", "extrados")``).
    """

    a: int
    b: int
    p0: np.ndarray
    p1: np.ndarray
    name: str = "joint"
    tags: tuple[str, str] = ("end0", "end1")

    @property
    def length(self) -> float:
        return float(np.hypot(*(np.asarray(self.p1) - np.asarray(self.p0))))


@dataclass(frozen=True)
class LoadPoint:
    """A displacement-controlled load: a rigid plate pressing (one-sided) on ``point`` [m] of ``block``
    along the unit ``direction``; through a roller, so the force stays along ``direction``."""

    block: int
    point: np.ndarray
    direction: np.ndarray = field(default_factory=lambda: np.array([0.0, -1.0]))


@dataclass(frozen=True)
class Assembly:
    """Blocks, joints, out-of-plane width [m], optional load point and tracked points
    ``{name: (block, point)}`` whose displacements are recorded."""

    blocks: tuple[Block, ...]
    joints: tuple[Joint, ...]
    width: float
    load: LoadPoint | None = None
    tracked: dict[str, tuple[int, np.ndarray]] = field(default_factory=dict)
    info: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        nb = len(self.blocks)
        for j in self.joints:
            if not (0 <= j.a < nb and 0 <= j.b < nb) or j.a == j.b:
                raise ConfigurationError(
                    f"joint {j.name!r} joins blocks {j.a} and {j.b}; valid indices are 0..{nb - 1}"
                )
        if not self.width > 0:
            raise ConfigurationError(f"the out-of-plane width must be > 0 m, got {self.width!r}")


# --------------------------------------------------------------------------------------------
# Contact layouts
# --------------------------------------------------------------------------------------------
def _trapezoid(n_seg: int) -> tuple[np.ndarray, np.ndarray]:
    s = np.linspace(0.0, 1.0, n_seg + 1)
    w = np.full(n_seg + 1, 1.0 / n_seg)
    w[[0, -1]] *= 0.5
    return s, w


def contact_layout(
    kind: str = "uniform", n: int = 15, *, length: float = 0.16, mesh_size: float = 0.012, n_sub: int = 8
) -> tuple[np.ndarray, np.ndarray]:
    """Sub-contact positions ``s`` (fractions of the joint length, ``(m,)``) and tributary weights ``w``
    (``(m,)``, summing to 1) along one joint; see the module docstring for the kinds.

    Args:
        kind: one of :data:`LAYOUTS`.
        n: number of contacts for ``"uniform"`` (>= 2) and ``"midpoint"`` (>= 1).
        length: the joint length [m] (``"surface"`` only).
        mesh_size: the face mesh size ``h`` [m] (``"surface"`` only).
        n_sub: sub-blocks through the thickness (``"pulatsu"`` only; 8 in the paper).
    """
    if kind == "edges":
        return np.array([0.0, 1.0]), np.array([0.5, 0.5])
    if kind == "uniform":
        if n < 2:
            raise ConfigurationError(f"a 'uniform' layout needs n >= 2 contacts (both edges), got n={n!r}")
        return _trapezoid(n - 1)
    if kind == "midpoint":
        if n < 1:
            raise ConfigurationError(f"a 'midpoint' layout needs n >= 1 contacts, got n={n!r}")
        return (np.arange(n) + 0.5) / n, np.full(n, 1.0 / n)
    if kind == "pulatsu":
        if n_sub < 1:
            raise ConfigurationError(f"'pulatsu' needs n_sub >= 1 sub-blocks, got {n_sub!r}")
        return _trapezoid(2 * n_sub)
    if kind == "surface":
        if not (mesh_size > 0 and length > 0):
            raise ConfigurationError(f"'surface' needs mesh_size > 0 and length > 0, got {mesh_size!r}, {length!r}")
        return _trapezoid(max(1, math.ceil(length / mesh_size - 1e-9)))
    raise ConfigurationError(f"unknown contact layout {kind!r}; valid layouts are {list(LAYOUTS)}")


# --------------------------------------------------------------------------------------------
# Generic joint detection
# --------------------------------------------------------------------------------------------
def find_joints(blocks: Sequence[Block], tol: float = 1e-6) -> list[Joint]:
    """Joints of an assembly: every pair of anti-parallel, collinear, overlapping edges of two blocks'
    pieces (within ``tol`` [m]). The block with the lower index carries the nodes."""
    joints: list[Joint] = []
    for ia in range(len(blocks)):
        for ib in range(ia + 1, len(blocks)):
            for pa in blocks[ia].pieces:
                for pb in blocks[ib].pieces:
                    for k in range(len(pa)):
                        a0, a1 = pa[k], pa[(k + 1) % len(pa)]
                        ta = (a1 - a0) / np.hypot(*(a1 - a0))
                        for m in range(len(pb)):
                            b0, b1 = pb[m], pb[(m + 1) % len(pb)]
                            tb = (b1 - b0) / np.hypot(*(b1 - b0))
                            if ta @ tb > -1 + 1e-9:
                                continue
                            nrm = np.array([-ta[1], ta[0]])
                            if abs((b0 - a0) @ nrm) > tol or abs((b1 - a0) @ nrm) > tol:
                                continue
                            s = sorted([(b0 - a0) @ ta, (b1 - a0) @ ta])
                            lo, hi = max(0.0, s[0]), min(float((a1 - a0) @ ta), s[1])
                            if hi - lo > tol:
                                joints.append(Joint(ia, ib, a0 + lo * ta, a0 + hi * ta, name=f"{ia}-{ib}"))
    return joints


# --------------------------------------------------------------------------------------------
# The segmental arch
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArchGeometry:
    """A segmental circular arch of ``n_blocks`` equal voussoirs between two fixed abutments.

    All lengths in metres. The intrados radius and the half-opening follow from ``span`` and ``rise``:
    ``R = (span^2/4 + rise^2) / (2 rise)``, ``sin(beta) = span / (2 R)``. The origin is the middle of the
    span at the springing level; the intrados circle's centre lies at ``(0, rise - R)``.
    """

    span: float = 1.2
    rise: float = 0.4
    thickness: float = 0.16
    width: float = 0.2
    n_blocks: int = 13
    density: float = GRANITE_DENSITY
    abutment_depth: float = 0.12
    abutment_margin: float = 0.08

    def __post_init__(self) -> None:
        for k in ("span", "rise", "thickness", "width", "density", "abutment_depth", "abutment_margin"):
            if not getattr(self, k) > 0:
                raise ConfigurationError(f"arch {k} must be > 0, got {getattr(self, k)!r}")
        if self.rise > self.span / 2:
            raise ConfigurationError(
                f"a segmental arch needs rise <= span/2, got rise={self.rise!r}, span={self.span!r}"
            )
        if self.n_blocks < 3:
            raise ConfigurationError(f"an arch needs n_blocks >= 3, got {self.n_blocks!r}")

    @property
    def radius(self) -> float:
        return (self.span**2 / 4 + self.rise**2) / (2 * self.rise)

    @property
    def half_opening(self) -> float:
        """Half the opening angle [rad] (67.38 deg for the Birhane arch)."""
        return math.asin(self.span / (2 * self.radius))

    @property
    def centre(self) -> np.ndarray:
        return np.array([0.0, self.rise - self.radius])

    def joint_angles(self) -> np.ndarray:
        """Angles from the vertical [rad] of the ``n_blocks + 1`` radial joints, left to right."""
        b = self.half_opening
        return np.linspace(-b, b, self.n_blocks + 1)

    def radial_point(self, angle: float, r: float) -> np.ndarray:
        return self.centre + r * np.array([math.sin(angle), math.cos(angle)])

    def voussoir(self, i: int) -> np.ndarray:
        """Voussoir ``i`` (0-based from the left) as a quadrilateral with flat (sawn) faces."""
        a = self.joint_angles()
        r0, r1 = self.radius, self.radius + self.thickness
        return ccw(
            np.array(
                [
                    self.radial_point(a[i], r0),
                    self.radial_point(a[i + 1], r0),
                    self.radial_point(a[i + 1], r1),
                    self.radial_point(a[i], r1),
                ]
            )
        )

    def sub_blocks(self, i: int, n_sub: int) -> tuple[np.ndarray, ...]:
        """Voussoir ``i`` cut into ``n_sub`` rings through the thickness (Pulatsu's clumped sub-blocks)."""
        a = self.joint_angles()
        rs = self.radius + self.thickness * np.arange(n_sub + 1) / n_sub
        return tuple(
            ccw(
                np.array(
                    [
                        self.radial_point(a[i], rs[k]),
                        self.radial_point(a[i + 1], rs[k]),
                        self.radial_point(a[i + 1], rs[k + 1]),
                        self.radial_point(a[i], rs[k + 1]),
                    ]
                )
            )
            for k in range(n_sub)
        )

    def abutment(self, side: str) -> np.ndarray:
        """A fixed abutment block whose inclined face is the springing joint."""
        b = self.half_opening if side == "right" else -self.half_opening
        pi = self.radial_point(b, self.radius)
        pe = self.radial_point(b, self.radius + self.thickness)
        sgn = 1.0 if side == "right" else -1.0
        x_out = pe[0] + sgn * self.abutment_margin
        y_bot = -self.abutment_depth
        return ccw(np.array([pi, [pi[0], y_bot], [x_out, y_bot], [x_out, pe[1]], pe]))

    def extrados_y(self, i: int, x: float) -> float:
        """Height of voussoir ``i``'s flat extrados face at abscissa ``x``."""
        a = self.joint_angles()
        p, q = (
            self.radial_point(a[i], self.radius + self.thickness),
            self.radial_point(a[i + 1], self.radius + self.thickness),
        )
        return float(p[1] + (q[1] - p[1]) * (x - p[0]) / (q[0] - p[0]))

    def block_under(self, x: float) -> int:
        """The voussoir whose extrados spans abscissa ``x``."""
        a = self.joint_angles()
        xs = [self.radial_point(t, self.radius + self.thickness)[0] for t in a]
        for i in range(self.n_blocks):
            if xs[i] <= x <= xs[i + 1]:
                return i
        raise ConfigurationError(
            f"no voussoir extrados spans x = {x!r} m; the extrados runs from {xs[0]:.4g} to {xs[-1]:.4g} m"
        )


def birhane_arch(
    geometry: ArchGeometry | None = None,
    *,
    load_fraction: float = 0.25,
    wood_width: float = 0.110,
    wood_height: float = 0.050,
    wood_density: float = WOOD_DENSITY,
    n_sub: int = 8,
) -> Assembly:
    """The Birhane arch of Kibriya et al. (2023) section 2.1 (or any :class:`ArchGeometry`) with its loading.

    Blocks: 0 = left abutment (fixed), 1..n = voussoirs, n + 1 = right abutment (fixed). The wooden
    interface (``wood_width`` horizontal x ``wood_height`` at its left, lower side, as deep as the arch) is
    glued on the extrados of the voussoir under the load (the fifth for the default arch), centred on that
    voussoir's extrados and topped horizontally; it is part of that block's clump. The load acts
    vertically downwards at abscissa ``load_fraction * span`` from the left springing (the quarter span) on
    the top of the wood, through the steel bearing's roller (no moment, no horizontal force).

    Tracked points: ``"plate"`` (the loaded point), ``"abutment_left"`` / ``"abutment_right"`` (the centroids
    of the voussoirs next to each abutment, "the middle of the block at the abutment").
    """
    g = geometry or ArchGeometry()
    n = g.n_blocks
    x_load = -g.span / 2 + load_fraction * g.span
    iv = g.block_under(x_load)
    a = g.joint_angles()
    pe0 = g.radial_point(a[iv], g.radius + g.thickness)
    pe1 = g.radial_point(a[iv + 1], g.radius + g.thickness)
    xm = 0.5 * (pe0[0] + pe1[0])
    x0, x1 = xm - wood_width / 2, xm + wood_width / 2
    if not (pe0[0] - 1e-9 <= min(x0, x_load) and max(x1, x_load) <= pe1[0] + 1e-9):
        raise ConfigurationError(
            f"the wooden interface ({wood_width!r} m wide) and the load at x = {x_load:.4g} m must lie on the "
            f"extrados of voussoir {iv + 1}, which spans x = {pe0[0]:.4g}..{pe1[0]:.4g} m"
        )
    y0, y1 = g.extrados_y(iv, x0), g.extrados_y(iv, x1)
    y_top = min(y0, y1) + wood_height
    wood = ccw(np.array([[x0, y0], [x1, y1], [x1, y_top], [x0, y_top]]))

    blocks = [Block((g.abutment("left"),), (g.density,), fixed=True, name="abutment_left")]
    for i in range(n):
        pieces: tuple[np.ndarray, ...] = (g.voussoir(i),)
        dens: tuple[float, ...] = (g.density,)
        if i == iv:
            pieces, dens = pieces + (wood,), dens + (wood_density,)
        name = "keystone" if (n % 2 == 1 and i == n // 2) else f"voussoir_{i + 1}"
        blocks.append(Block(pieces, dens, name=name, sub_blocks=g.sub_blocks(i, n_sub)))
    blocks.append(Block((g.abutment("right"),), (g.density,), fixed=True, name="abutment_right"))

    joints = []
    for j in range(n + 1):
        pi = g.radial_point(a[j], g.radius)
        pe = g.radial_point(a[j], g.radius + g.thickness)
        name = "springing_left" if j == 0 else "springing_right" if j == n else f"joint_{j}_{j + 1}"
        joints.append(Joint(j, j + 1, pi, pe, name=name, tags=("intrados", "extrados")))

    load_pt = np.array([x_load, y_top])
    tracked = {
        "plate": (iv + 1, load_pt),
        "abutment_left": (1, blocks[1].mass_properties(g.width)[1]),
        "abutment_right": (n, blocks[n].mass_properties(g.width)[1]),
    }
    info = {
        "load_block": float(iv + 1),
        "x_load": x_load,
        "y_load": float(y_top),
        "radius": g.radius,
        "half_opening_deg": math.degrees(g.half_opening),
    }
    return Assembly(tuple(blocks), tuple(joints), g.width, LoadPoint(iv + 1, load_pt), tracked, info)
