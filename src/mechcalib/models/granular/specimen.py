"""Poured and settled specimens of dual-sphere clumps in the triaxial cylinder, generated once per
(specification, seed) and cached on disk, so that every parameter set of a study starts from the same packing.

Generation (:func:`generate`):

1. ``n_insert`` clumps (by default enough to fill the cylinder to ``1.3 x`` the fill height at a solid
   fraction of 0.6) are placed on a loose lattice above the bottom, with random orientations and a small
   random jitter (seeded).
2. They are poured: settling under gravity with the fill contact properties at a softened modulus
   (``pour_E_scale`` = 0.01, ten times the time step) and Cundall's local damping 0.3, until the kinetic
   energy per body falls below ``1e-4 m g r`` or ``pour_tmax`` is reached.
3. Bodies whose highest sphere reaches above the fill height are removed (the fill is trimmed to the height).
4. The rest relaxes in two stages, at a tenth of the modulus of the simulations and then at it (``E_scale``,
   1 by default), with local damping 0.7, each for at least ``relax_tmin`` and until the kinetic energy
   criterion holds or ``relax_tmax`` passes. Going from the pouring modulus to the final one in one jump
   releases the elastic energy of overlaps a hundred times too large for the stiffer contacts at once.
5. Pre-compression (section 3.2.2) with the contact properties of the default parameter set: the piston,
   resting on the highest sphere, is driven by a force servo until its force holds at ``preload`` (1.82 N);
   the packing and the piston height ``piston_z`` are cached. A simulation then starts from them and only
   re-establishes the preload with its own parameters (a short servo phase), instead of pushing the loose,
   ragged top of the fill down by a millimetre or more every time.

The pour uses the contact properties of the default parameter set, but elastic (``lambda_p = 0``), with the
sliding friction ``pour_friction`` (0.4; 1.0 for ``paper``) for every contact, no rolling friction and no adhesion
(``cohesive_fill = False``); the relaxation (step 4) keeps these contacts. Elastic, because a simulation
restarts from the cached overlaps with an empty contact history, i.e. on the virgin branch ``k1 delta^n``:
the forces the packing settled with, not the larger ones that overlaps left on the stiffer ``k2`` line
would produce (with plastic contacts in the preparation, that jump locked 21 N of wall friction into a
``fast`` specimen of 0.73 N weight before the test began). Friction, rolling friction, plasticity and
adhesion act from the pre-compression on.

The pour friction sets the density of the fill, and the density sets the force level of the test more than
anything else. ``fast`` specimens, default parameters, peak piston force at 2 mm:

| pour | solid fraction | mass | peak force |
|---|---|---|---|
| frictionless | 0.647 | 74.9 g | 2048 N |
| friction 0.2 | 0.564 | 64.9 g | 1181 N |
| friction 0.3 | 0.546 | 62.8 g | 846 N |
| friction 0.4 (default) | 0.527 | 60.7 g | 581 N |

The paper's smaller clumps pack denser in the same cylinder at the same pour friction (``paper``, seed 0):

| pour | solid fraction | clumps | mass | peak force |
|---|---|---|---|---|
| friction 0.4 | 0.560 | 4885 | 64.4 g | 1152 N |
| friction 0.55 | 0.547 | 4762 | 62.8 g | 932 N |
| friction 0.8 | 0.534 | 4646 | 61.3 g | 677 N (of the 99-sample sequence) |
| friction 1.0 (``paper``) | 0.524 | 4554 | 60.1 g | 535 N (529 N of the 99-sample sequence) |

So each preset takes the pour friction that puts its fill at the same density, a solid fraction of about
0.525, where the default parameters peak inside the paper's 405-678 N (``fast`` 577 N, ``paper`` 535 N;
peaks of the 2000 Hz record unless said).
| Table 2 frictions (0.52/0.347, rolling 0.23/0.22) | 0.473 | 54.1 g | 176 N |

The paper gives neither the density nor the mass of its DEM specimen (8238 particles; the experiment held
80 g, a solid fraction of 0.69 at its particle density of 2 g/cm^3, which our clumps do not reach), only the
peak forces of its verification cases, 405-678 N. The default 0.4 puts the default parameters inside that
range. A cohesive pour (``f0`` = -2 mN is about 15 clump weights) is looser still (solid fraction about 0.25
in a 12 mm tube).

Velocities are zeroed and the contact history is not kept: each simulation rebuilds it from the cached
positions (every touching pair starts on its virgin loading branch).

Cache: ``<cache_dir>/<name>-seed<seed>-<hash>.npz`` where the hash covers the specification, the seed, the
pour and pre-compression interaction tables, the preload, ``E_scale`` and :data:`VERSION`; ``cache_dir``
defaults to ``$MECHCALIB_CACHE_DIR/granular`` or ``~/.cache/mechcalib/granular``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import ConfigurationError, MechcalibError
from . import dem

VERSION = 7
G = 9.81
POUR_DAMPING, RELAX_DAMPING = 0.3, 0.7  # Cundall's local damping of the two settling stages


class SpecimenError(MechcalibError, RuntimeError):
    """A specimen could not be generated (the DEM failed, or too few particles reach the fill height)."""


@dataclass(frozen=True)
class SpecimenSpec:
    """Geometry of a specimen (lengths in mm).

    ``diameter``: inner diameter of the cylinder; ``height``: fill height; ``radius``: sphere radius;
    ``half_spacing``: offset of the two spheres from the clump centre (0: single spheres); ``density``
    [kg/m^3]; ``n_insert``: clumps poured (``None``: estimated, see the module docstring);
    ``cohesive_fill``: pour with the adhesion of the default parameters; ``pour_friction``: sliding friction
    of every contact while pouring (without rolling friction), ``None`` for the default parameters'.
    """

    name: str
    diameter: float = 35.0
    height: float = 60.0
    radius: float = 1.0
    half_spacing: float = 0.405
    density: float = 2000.0
    n_insert: int | None = None
    cohesive_fill: bool = False
    pour_friction: float | None = 0.4
    pour_E_scale: float = 0.01
    pour_tmax: float = 1.0
    relax_tmin: float = 0.01
    relax_tmax: float = 0.04
    description: str = ""

    def __post_init__(self) -> None:
        for k in ("diameter", "height", "radius", "density", "pour_E_scale", "pour_tmax"):
            v = getattr(self, k)
            if not (math.isfinite(v) and v > 0):
                raise ConfigurationError(f"specimen {self.name!r}: {k} must be finite and > 0, got {v!r}")
        if not 0 <= self.half_spacing < self.radius:
            raise ConfigurationError(
                f"specimen {self.name!r}: half_spacing must lie in [0, radius) (overlapping spheres), got "
                f"{self.half_spacing!r} with radius {self.radius!r}"
            )
        if self.diameter < 4 * (self.radius + self.half_spacing):
            raise ConfigurationError(f"specimen {self.name!r}: the cylinder is too narrow for the particles")

    @property
    def particle_volume(self) -> float:
        """Volume of one particle [mm^3]."""
        m, _, _ = dem.clump_mass_properties(self.radius, self.half_spacing, 1.0)
        return m

    def estimated_count(self, fraction: float = 0.6) -> int:
        """Particles that fill the cylinder to the height at a solid ``fraction``."""
        v = math.pi * (self.diameter / 2) ** 2 * self.height
        return math.ceil(fraction * v / self.particle_volume)


SPECIMENS: dict[str, SpecimenSpec] = {
    "paper": SpecimenSpec(
        "paper",
        pour_friction=1.0,
        description="Hu et al. (2024) section 3.2: dual spheres of radius 1 mm, 0.81 mm apart, 35 mm cylinder filled to "
        "60 mm; poured with friction 1.0 to the fast specimen's density (solid fraction about 0.525)",
    ),
    "fast": SpecimenSpec(
        "fast",
        radius=1.5,
        half_spacing=0.6075,
        description="the paper's clump scaled by 1.5 (radius 1.5 mm, 1.215 mm apart) in the same cylinder and "
        "fill: about 3.4 times fewer particles and a 1.5 times larger time step",
    ),
    "tiny": SpecimenSpec(
        "tiny",
        diameter=12.0,
        height=12.0,
        description="the paper's clump in a 12 mm cylinder filled to 12 mm: about a hundred particles, for tests",
    ),
}


@dataclass(frozen=True)
class Specimen:
    """A settled packing: its ``spec``, ``seed``, :class:`~.dem.Particles`, positions ``pos`` ``(nb, 3)`` [m]
    and orientations ``quat`` ``(nb, 4)``, the pre-compressed piston height ``piston_z`` [m] (NaN without
    pre-compression) and ``info`` (counts, mass, height, solid fraction, timings)."""

    spec: SpecimenSpec
    seed: int
    particles: dem.Particles
    pos: np.ndarray
    quat: np.ndarray
    piston_z: float = math.nan
    info: dict = field(default_factory=dict)
    path: Path | None = None

    @property
    def n_particles(self) -> int:
        return self.particles.n_bodies

    @property
    def mass(self) -> float:
        """Total mass [kg]."""
        return float(self.particles.mass.sum())

    @property
    def top(self) -> float:
        """Height of the highest sphere top [m]."""
        return top_height(self.particles, self.pos, self.quat)


def default_cache_dir() -> Path:
    root = os.environ.get("MECHCALIB_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "mechcalib"
    return base / "granular"


def sphere_positions(particles: dem.Particles, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """World positions ``(ns, 3)`` of the spheres."""
    w, x, y, z = (quat[:, i] for i in range(4))
    R = np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )
    b = particles.sphere_body
    return pos[b] + np.einsum("sij,sj->si", R[b], particles.sphere_local)


def top_height(particles: dem.Particles, pos: np.ndarray, quat: np.ndarray) -> float:
    sx = sphere_positions(particles, pos, quat)
    return float(np.max(sx[:, 2] + particles.sphere_radius))


def _lattice(spec: SpecimenSpec, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` clump centres on a loose square lattice filling the cylinder layer by layer, random
    orientations; lengths in m."""
    r, a = spec.radius * 1e-3, spec.half_spacing * 1e-3
    rc = spec.diameter * 5e-4
    sp = 2 * (r + a) * 1.08
    ring = rc - (r + a) - 0.02 * r
    g = np.arange(-ring, ring + 1e-12, sp)
    gx, gy = np.meshgrid(g, g)
    keep = np.hypot(gx, gy) <= ring
    layer = np.column_stack([gx[keep], gy[keep]])
    if layer.shape[0] == 0:
        raise ConfigurationError(f"specimen {spec.name!r}: no particle fits across the cylinder")
    n_layers = math.ceil(n / layer.shape[0])
    pts = []
    for k in range(n_layers):
        z = (r + a) * 1.05 + k * sp
        shift = (0.25 * sp) * (k % 2)  # stagger alternate layers
        xy = layer + shift
        ok = np.hypot(xy[:, 0], xy[:, 1]) <= ring
        pts.append(np.column_stack([xy[ok], np.full(ok.sum(), z)]))
    p = np.concatenate(pts)[:n]
    if p.shape[0] < n:
        p = np.concatenate([p, np.concatenate(pts)[: n - p.shape[0]] + [0, 0, n_layers * sp]])
    p = p + rng.uniform(-0.02 * r, 0.02 * r, size=p.shape)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    return p, q


def _key(spec: SpecimenSpec, seed: int, tables: list[np.ndarray], E_scale: float, preload: float) -> str:
    h = hashlib.sha256()
    h.update(
        json.dumps(
            {
                "spec": dataclasses.asdict(spec),
                "seed": int(seed),
                "E_scale": float(E_scale),
                "preload": float(preload),
                "version": VERSION,
            },
            sort_keys=True,
        ).encode()
    )
    for t in tables:
        h.update(np.ascontiguousarray(t, dtype=float).tobytes())
    return h.hexdigest()[:16]


def generate(
    spec: SpecimenSpec,
    seed: int,
    pour_table: Callable[[float], np.ndarray],
    time_step: Callable[[float], float],
    *,
    E_scale: float = 1.0,
    preload: float = 0.0,
    preload_table: Callable[[float], np.ndarray] | None = None,
    pc_vmax: float = 0.05,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
) -> Specimen:
    """The settled specimen of ``spec`` and ``seed``: loaded from the cache, or generated and cached.

    Args:
        pour_table: ``E_scale -> interaction table`` of the pour and the relaxation (rows: particle-particle,
            cylinder and bottom, piston; see :func:`.dem.interaction_table`).
        time_step: ``E_scale -> time step`` [s] for those contacts.
        E_scale: the modulus scale of the simulations that will use the specimen (the final relaxation runs at it).
        preload: pre-compression force [N] (0: none) with the contacts of ``preload_table`` (default
            ``pour_table``) and the servo speed ``pc_vmax`` [m/s] at a full force error.
    """
    preload_table = preload_table or pour_table
    tables = [pour_table(1.0)] + ([preload_table(1.0), np.array([pc_vmax])] if preload > 0 else [])
    key = _key(spec, seed, tables, E_scale, preload)
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / f"{spec.name}-seed{int(seed)}-{key}.npz"
    r, a = spec.radius * 1e-3, spec.half_spacing * 1e-3
    if use_cache and path.exists():
        d = np.load(path, allow_pickle=False)
        n = int(d["pos"].shape[0])
        particles = dem.Particles.clumps(n, r, a, spec.density)
        return Specimen(
            spec, int(seed), particles, d["pos"], d["quat"], float(d["piston_z"]), json.loads(str(d["info"])), path
        )
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    n = int(spec.n_insert) if spec.n_insert else math.ceil(1.3 * spec.estimated_count(0.6))
    pos, quat = _lattice(spec, n, rng)
    particles = dem.Particles.clumps(n, r, a, spec.density)
    rc = spec.diameter * 5e-4
    m1 = float(particles.mass[0])
    ke = 1e-4 * m1 * G * r
    fall = math.sqrt(2 * max(pos[:, 2].max(), r) / G)
    dt_pour = time_step(spec.pour_E_scale)
    res = dem.run(
        particles,
        pos,
        quat,
        pour_table(spec.pour_E_scale),
        dt_pour,
        dem.Phases(
            settle_tmax=max(spec.pour_tmax, 2 * fall),
            settle_tmin=1.2 * fall + 0.05,
            settle_ke=ke,
            settle_damping=POUR_DAMPING,
        ),
        r_cyl=rc,
    )
    if res.status[0] in (dem.DIVERGED, dem.LIST_OVERFLOW):
        raise SpecimenError(f"pouring specimen {spec.name!r} failed (DEM status {int(res.status[0])})")
    info = {
        "n_inserted": n,
        "pour_time": float(res.info[0, dem.F_SETTLE_T]),
        "pour_ke_per_body": float(res.info[0, dem.F_SETTLE_KE]),
        "pour_settled": bool(res.status[0] == dem.OK),
        "pour_steps": int(res.info[0, dem.F_STEPS]),
    }
    pos, quat = res.pos[0], res.quat[0]
    poured_top = top_height(particles, pos, quat)
    info["poured_height_mm"] = poured_top * 1e3
    H = spec.height * 1e-3
    if poured_top < H:
        raise SpecimenError(
            f"specimen {spec.name!r}: {n} poured particles reach {poured_top * 1e3:.1f} mm, below the fill height "
            f"{spec.height} mm; give a larger n_insert"
        )
    sx = sphere_positions(particles, pos, quat)
    body_top = np.full(n, -np.inf)
    np.maximum.at(body_top, particles.sphere_body, sx[:, 2] + particles.sphere_radius)
    keep = np.flatnonzero(body_top <= H)
    particles = particles.subset(keep)
    pos, quat = pos[keep], quat[keep]
    relax_t, relax_steps = 0.0, 0
    for es in (0.1 * E_scale, E_scale):  # two stages: the modulus x10 each, less energy released at once
        res = dem.run(
            particles,
            pos,
            quat,
            pour_table(es),
            time_step(es),
            dem.Phases(
                settle_tmax=spec.relax_tmax, settle_tmin=spec.relax_tmin, settle_ke=ke, settle_damping=RELAX_DAMPING
            ),
            r_cyl=rc,
        )
        if res.status[0] in (dem.DIVERGED, dem.LIST_OVERFLOW):
            raise SpecimenError(f"relaxing specimen {spec.name!r} failed (DEM status {int(res.status[0])})")
        pos, quat = res.pos[0], res.quat[0]
        relax_t += float(res.info[0, dem.F_SETTLE_T])
        relax_steps += int(res.info[0, dem.F_STEPS])
    relax_ke, relax_ok = float(res.info[0, dem.F_SETTLE_KE]), bool(res.status[0] == dem.OK)
    top = fill_top = top_height(particles, pos, quat)
    piston_z = math.nan
    if preload > 0:
        res = dem.run(
            particles,
            pos,
            quat,
            preload_table(E_scale),
            time_step(E_scale),
            dem.Phases(preload=preload, pc_vmax=pc_vmax, pc_tmax=0.3, piston=True),
            r_cyl=rc,
        )
        if res.status[0] in (dem.DIVERGED, dem.LIST_OVERFLOW):
            raise SpecimenError(f"pre-compressing specimen {spec.name!r} failed (DEM status {int(res.status[0])})")
        pos, quat = res.pos[0], res.quat[0]
        piston_z = float(res.info[0, dem.F_Z_REF])
        info.update(
            {
                "preload_N": float(preload),
                "preload_time": float(res.info[0, dem.F_PC_T]),
                "preload_force": float(res.info[0, dem.F_PC_FORCE]),
                "preload_steady": bool(res.status[0] == dem.OK),
                "preload_travel_mm": (top - piston_z) * 1e3,
                "preload_steps": int(res.info[0, dem.F_STEPS]),
            }
        )
        top = piston_z
    vol_cyl = math.pi * rc**2 * top
    info.update(
        {
            "n_particles": particles.n_bodies,
            "mass_g": float(particles.mass.sum() * 1e3),
            "height_mm": top * 1e3,
            "fill_height_mm": fill_top * 1e3,
            "solid_fraction": float(particles.mass.sum() / spec.density / vol_cyl),
            "relax_time": relax_t,
            "relax_ke_per_body": relax_ke,
            "relax_settled": relax_ok,
            "relax_steps": relax_steps,
            "E_scale": float(E_scale),
            "generation_seconds": time.perf_counter() - t0,
            "version": VERSION,
        }
    )
    spec_out = Specimen(spec, int(seed), particles, pos, quat, piston_z, info, path if use_cache else None)
    if use_cache:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(tmp, pos=pos, quat=quat, piston_z=piston_z, info=json.dumps(info))
        os.replace(tmp, path)
    return spec_out
