"""The 2D rigid-block DEM kernels against closed-form mechanics: friction on an inclined plane, a block
resting on a block, a rocking block (two-block hinge), energy decay under local damping, the stable time
step, and geometry helpers."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from mechcalib.errors import ConfigurationError
from mechcalib.models.masonry import dem
from mechcalib.models.masonry.failure import failure_mode
from mechcalib.models.masonry.geometry import (
    Assembly,
    Block,
    LoadPoint,
    contact_layout,
    find_joints,
    polygon_mass_properties,
    rotate,
)
from mechcalib.models.masonry.limit import static_collapse

G = 9.81
RHO = 2000.0


def rect(x0, y0, x1, y1):
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=float)


def two_blocks(base, top, *, angle=0.0, load=None, tracked=None, width=0.1):
    blocks = (
        Block((rotate(base, angle),), (RHO,), fixed=True, name="base"),
        Block((rotate(top, angle),), (RHO,), name="top"),
    )
    return Assembly(
        blocks, tuple(find_joints(blocks)), width, load, tracked or {"top": (1, rotate(top, angle).mean(0))}
    )


# ---------------------------------------------------------------------------------------------------------
def test_polygon_mass_properties_of_a_rectangle():
    a, c, j = polygon_mass_properties(rect(1.0, 2.0, 1.4, 2.1))
    assert a == pytest.approx(0.04)
    np.testing.assert_allclose(c, [1.2, 2.05])
    assert j == pytest.approx(0.04 * (0.4**2 + 0.1**2) / 12)


def test_contact_layouts():
    s, w = contact_layout("uniform", 15)
    assert s.size == 15 and s[0] == 0 and s[-1] == 1 and w.sum() == pytest.approx(1)
    assert w[0] == pytest.approx(1 / 28) and w[1] == pytest.approx(1 / 14)
    s, w = contact_layout("pulatsu")  # 8 sub-blocks, radial-8 faces: 17 nodes every 1/16, trapezoid
    np.testing.assert_allclose(s, np.arange(17) / 16)
    np.testing.assert_allclose(w, np.r_[1 / 32, np.full(15, 1 / 16), 1 / 32])
    assert contact_layout("surface", length=0.16, mesh_size=0.012)[0].size == 15
    assert contact_layout("surface", length=0.16, mesh_size=0.035)[0].size == 6
    s, w = contact_layout("midpoint", 4)
    np.testing.assert_allclose(s, [0.125, 0.375, 0.625, 0.875])
    with pytest.raises(ConfigurationError, match="valid layouts"):
        contact_layout("random")


def test_find_joints_locates_the_shared_face():
    (jt,) = find_joints((Block((rect(0, 0, 1, 0.2),), (RHO,)), Block((rect(0.3, 0.2, 0.5, 0.4),), (RHO,))))
    assert {tuple(np.round(jt.p0, 12)), tuple(np.round(jt.p1, 12))} == {(0.3, 0.2), (0.5, 0.2)}


# ---------------------------------------------------------------------------------------------------------
def test_block_on_block_carries_its_weight():
    asm = two_blocks(rect(-0.3, -0.2, 0.3, 0.0), rect(-0.1, 0.0, 0.1, 0.15))
    sysm = dem.build_system(asm, "uniform", 5)
    r = dem.run_batch(sysm, [1e9], [4e8], [30.0], duration=0.01, n_samples=3)
    W = sysm.mass[1] * G
    assert r.status[0] == dem.OK
    assert r.fn[0].sum() == pytest.approx(W, rel=1e-4)  # static equilibrium: contact force = weight
    assert abs(r.fs[0].sum()) < 1e-4 * W
    # uniform pressure: each node carries its tributary share, penetration W / (kn * area)
    np.testing.assert_allclose(r.fn[0] / sysm.area, W / (0.2 * 0.1), rtol=1e-3)
    assert r.pos_eq[0, 1, 1] - sysm.centroid[1, 1] == pytest.approx(-W / (1e9 * 0.2 * 0.1), rel=1e-3)


@pytest.mark.parametrize(("dphi", "slides"), [(-0.1, False), (0.1, True)])
def test_block_on_inclined_plane_slides_exactly_past_the_friction_angle(dphi, slides):
    phi = 30.0
    angle = math.radians(phi + dphi)
    asm = two_blocks(rect(-0.5, -0.2, 0.5, 0.0), rect(-0.1, 0.0, 0.1, 0.1), angle=angle)
    sysm = dem.build_system(asm, "uniform", 5)
    r = dem.run_batch(sysm, [1e9], [4e8], [phi], duration=1.0, n_samples=11, eq_max_steps=0)
    d = r.samples[0, :, dem.S_TRACK : dem.S_TRACK + 2]
    along = d @ np.array([math.cos(angle), math.sin(angle)])  # up-slope component
    late = along[-1] - along[2]  # after the first 0.2 s of settling
    if slides:
        # local damping slows the slide; the block still accelerates, at between (1 - 0.8) and 1 times
        # a0 = g (sin a - tan phi cos a)
        a0 = G * (math.sin(angle) - math.tan(math.radians(phi)) * math.cos(angle))
        assert 0.5 * 0.2 * a0 * 0.96 < -late < 0.5 * a0 * 0.96
    else:
        assert abs(late) < 1e-8


def _pushed_block(velocity):
    asm = two_blocks(
        rect(-0.5, -0.2, 0.5, 0.0),
        rect(-0.1, 0.0, 0.1, 0.05),
        load=LoadPoint(1, np.array([-0.1, 0.025]), np.array([1.0, 0.0])),
    )
    sysm = dem.build_system(asm, "uniform", 5, load_area=0.005 * 0.1)
    r = dem.run_batch(sysm, [1e9], [4e8], [25.0], velocity=velocity, duration=2e-3 / velocity, n_samples=201)
    return r, sysm.mass[1] * G


def test_pushed_block_slides_at_the_coulomb_force():
    r, W = _pushed_block(1e-4)
    mu = math.tan(math.radians(25.0))
    # every sub-contact sits on the Coulomb limit while the block slides
    assert -r.fs[0].sum() / r.fn[0].sum() == pytest.approx(mu, rel=1e-9)
    assert r.fn[0].sum() == pytest.approx(W, rel=1e-4)
    F = r.samples[0, 100:, dem.S_FORCE]
    assert np.mean(F) == pytest.approx(mu * W, rel=0.01)
    # local damping opposes the velocity with alpha |F|: around a steady slide it does not damp the
    # oscillation but resists the motion, so the plate pushes harder the faster (the larger the chatter)
    r10, _ = _pushed_block(1e-3)
    assert np.mean(r10.samples[0, 100:, dem.S_FORCE]) / (mu * W) - 1 > 3 * (np.mean(F) / (mu * W) - 1)


def test_two_block_hinge_rocks_about_the_far_corner():
    """A tall block on a fixed base, pushed horizontally at its top corner: it rocks about the far bottom
    corner, and the plate force follows the rigid rocking curve
    F = W (b/2 cos t - h/2 sin t) / (h cos t + b sin t), whose start W b / (2 h) is also the limit load."""
    b, h = 0.2, 0.6
    top = rect(-b / 2, 0.0, b / 2, h)
    asm = two_blocks(
        rect(-0.4, -0.2, 0.4, 0.0),
        top,
        load=LoadPoint(1, np.array([-b / 2, h]), np.array([1.0, 0.0])),
        tracked={"left": (1, np.array([-b / 2, 0.0])), "right": (1, np.array([b / 2, 0.0]))},
    )
    (jt,) = asm.joints
    jt = dataclasses.replace(jt, tags=("left", "right") if jt.p0[0] < jt.p1[0] else ("right", "left"))
    asm = dataclasses.replace(asm, joints=(jt,))
    sysm = dem.build_system(asm, "edges", load_area=0.0)
    W = sysm.mass[1] * G
    r = dem.run_batch(sysm, [1e10], [4e9], [60.0], velocity=1e-4, duration=50.0, n_samples=201, kp=1e7)
    s = r.samples[0]
    F = s[:, dem.S_FORCE]
    d = s[:, dem.S_TRACK : dem.S_TRACK + 4]
    th = -np.arctan2(d[:, 3] - d[:, 1], b + d[:, 2] - d[:, 0])  # clockwise rotation of the block
    rigid = W * (b / 2 * np.cos(th) - h / 2 * np.sin(th)) / (h * np.cos(th) + b * np.sin(th))
    assert th[-1] > 0.007
    assert F[5:25].mean() == pytest.approx(W * b / (2 * h), rel=0.015)
    for w in (slice(20, 60), slice(100, 140), slice(160, 201)):  # windows average out the contact chatter
        assert F[w].mean() == pytest.approx(rigid[w].mean(), rel=0.01)
    assert rigid[-1] < 0.98 * rigid[0]  # the windows see the geometric softening (2.8 %)
    mode = failure_mode(asm, sysm.centroid, r.pos_eq[0], r.pos_end[0])
    assert mode.joints[0].hinge == "right"
    assert mode.joints[0].opening[list(jt.tags).index("left")] == pytest.approx(b * th[-1], rel=0.02)
    # the independent limit analysis gives the same rocking load
    assert static_collapse(asm).load == pytest.approx(W * b / (2 * h), rel=1e-9)


@pytest.mark.parametrize("alpha", [0.0, 0.8])
def test_local_damping_energy_decay(alpha):
    """A block between two fixed blocks, launched upward without gravity: one contact is always
    compressed, so it is a linear oscillator. Local damping makes the update stiffer by (1 + alpha) while
    moving away from equilibrium and softer by (1 - alpha) while returning, so the kinetic energy at each
    pass through equilibrium is (1 - alpha) / (1 + alpha) times the previous one (1/9 for 0.8)."""
    blocks = (
        Block((rect(-0.2, -0.1, 0.2, 0.0),), (RHO,), fixed=True),
        Block((rect(-0.05, 0.0, 0.05, 0.1),), (1000.0,)),
        Block((rect(-0.2, 0.1, 0.2, 0.2),), (RHO,), fixed=True),
    )
    asm = Assembly(blocks, tuple(find_joints(blocks)), 0.1)
    sysm = dem.build_system(asm, "uniform", 3)
    v0 = np.zeros((3, 3))
    v0[1, 1] = 0.01
    k = 1e6 * 0.1 * 0.1
    period = 2 * math.pi * math.sqrt(sysm.mass[1] / k)
    r = dem.run_batch(
        sysm,
        [1e6],
        [4e5],
        [30.0],
        gravity=(0.0, 0.0),
        duration=3.2 * period,
        n_samples=6001,
        eq_max_steps=0,
        vel0=v0,
        dt=period / 6000,
        alpha=alpha,
    )
    ke = r.samples[0, :, dem.S_KE]
    peaks = [ke[0]] + [
        ke[i] for i in range(1, ke.size - 1) if ke[i] >= ke[i - 1] and ke[i] > ke[i + 1] and ke[i] > 1e-12 * ke[0]
    ]
    ratios = np.array(peaks[1:4]) / np.array(peaks[:3])
    np.testing.assert_allclose(ratios, (1 - alpha) / (1 + alpha), rtol=0.02)


def test_stable_time_step_rule():
    asm = two_blocks(rect(-0.3, -0.2, 0.3, 0.0), rect(-0.1, 0.0, 0.1, 0.1))
    sysm = dem.build_system(asm, "edges")
    m = sysm.mass[1]
    # vertical translation: both edge contacts, k = kn * area, omega^2 = k / m; rocking is stiffer
    K = dem.stiffness_matrix(sysm, 1e9, 4e8)
    assert K[4, 4] == pytest.approx(1e9 * 0.2 * 0.1)
    lam = np.linalg.eigvalsh(K[3:, 3:] / np.sqrt(np.outer([m, m, sysm.inertia[1]], [m, m, sysm.inertia[1]])))[-1]
    assert dem.stable_dt(sysm, 1e9, 4e8, factor=0.5) == pytest.approx(0.5 * 2 / math.sqrt(lam))
    with pytest.raises(ConfigurationError, match="time-step factor"):
        dem.stable_dt(sysm, 1e9, 4e8, factor=1.5)


@pytest.mark.parametrize("contacts", ["uniform", "pulatsu", "surface"])
def test_kernel_contacts_group_the_sub_contacts_by_joint(contacts):
    from mechcalib.models.masonry.arch import MasonryArch

    sysm = MasonryArch(contacts=contacts).system
    start = dem.kernel_contacts(sysm).joint_start.astype(np.int64)
    # one run of consecutive sub-contacts per joint of the assembly, in order
    expect = np.concatenate([[0], np.flatnonzero(np.diff(sysm.joint)) + 1, [sysm.n_contacts]])
    assert np.array_equal(start, expect)
    for a, b in zip(start[:-1], start[1:], strict=True):
        assert np.unique(sysm.ca[a:b]).size == 1 and np.unique(sysm.cb[a:b]).size == 1


def test_kernel_contacts_refuse_a_sub_contact_joining_a_block_to_itself():
    asm = two_blocks(rect(-0.3, -0.2, 0.3, 0.0), rect(-0.1, 0.0, 0.1, 0.1))
    sysm = dem.build_system(asm, "uniform", 5)
    bad = dataclasses.replace(sysm, cb=sysm.ca.copy())
    with pytest.raises(ConfigurationError, match="joins a block to itself"):
        dem.kernel_contacts(bad)
