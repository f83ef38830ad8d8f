"""The 3D sphere/clump DEM against mechanics written out by hand: a sphere falling on a plate (rebound with the
restitution coefficient, rest at the Hertzian overlap carrying its weight), a two-sphere collision conserving
momentum, the mass properties and torque-free rotation of a dual-sphere clump, a settled column whose walls
carry its weight (Janssen: friction on the cylinder takes part of it), the neighbour list, and a batch equal
to its members run one by one. Small particle counts and a softened modulus keep the file fast."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechcalib.errors import ConfigurationError
from mechcalib.models.granular import dem
from mechcalib.models.granular.contact import effective_moduli

SAND = dem.Material(1.229e9, 0.3, 2000.0)
ACRYLIC = dem.Material(5.6e9, 0.4, 1200.0)
STEEL = dem.Material(2.6e11, 0.3, 8000.0)
G = 9.81
R, A = 1.0e-3, 0.405e-3


def table(it_pp, it_wall=None, e_scale=1.0):
    it_wall = it_wall or it_pp
    return dem.interaction_table(
        [
            dem.interaction_row(SAND, SAND, it_pp, e_scale),
            dem.interaction_row(SAND, ACRYLIC, it_wall, e_scale),
            dem.interaction_row(SAND, STEEL, it_wall, e_scale),
        ]
    )


def ident(n):
    q = np.zeros((n, 4))
    q[:, 0] = 1.0
    return q


# ---------------------------------------------------------------------------------------------------------
def test_sphere_rebounds_from_the_plate_with_the_restitution_coefficient():
    it = dem.Interaction(e=0.5, mu=0.5, mu_r=0.0)
    p = dem.Particles.clumps(1, R, 0.0, 2000.0)
    for safety, tol in ((0.2, 0.01), (0.02, 1e-3)):  # converges to e as the step shrinks
        dt = dem.time_step(R, SAND, [ACRYLIC], 0.0, safety=safety)
        res = dem.run(
            p,
            np.array([[0, 0, R + 1e-6]]),
            ident(1),
            table(it),
            dt,
            dem.Phases(t_end=2e-4, n_samples=2),
            vel=np.array([[0.0, 0.0, -0.2]]),
            gravity=0.0,
        )
        assert res.vel[0][0, 2] / 0.2 == pytest.approx(0.5, abs=tol)


def test_sphere_falls_and_rests_on_the_plate_carrying_its_weight():
    it = dem.Interaction(e=0.5, mu=0.5, mu_r=0.0)
    p = dem.Particles.clumps(1, R, 0.0, 2000.0)
    dt = dem.time_step(R, SAND, [ACRYLIC], 0.0)
    res = dem.run(p, np.array([[0, 0, 3e-3]]), ident(1), table(it), dt, dem.Phases(t_end=0.12, n_samples=1201))
    s = res.samples[0]
    vz, z = s[:, dem.S_VZ0], s[:, dem.S_Z0]
    assert vz.min() == pytest.approx(-math.sqrt(2 * G * 2e-3), rel=5e-3)  # free fall from 2 mm above contact
    assert np.sum(np.diff(np.sign(vz[vz != 0])) > 0) >= 3  # it bounces
    # at rest: the Hertzian overlap of the weight, k1 delta^1.5 = m g, and the plate carries the weight
    k1 = 4 / 3 * effective_moduli(SAND.E, SAND.nu, ACRYLIC.E, ACRYLIC.nu)[0] * math.sqrt(R)
    w = p.mass[0] * G
    assert R - z[-1] == pytest.approx((w / k1) ** (2 / 3), rel=1e-3)
    assert s[-1, dem.S_FBOTTOM] == pytest.approx(w, rel=1e-6)
    assert res.status[0] == dem.OK


def test_two_sphere_collision_conserves_momentum():
    it = dem.Interaction(e=0.25, mu=0.5, mu_r=0.23, lambda_p=0.575, f0=-0.002, dgamma=1.64)
    p = dem.Particles.clumps(2, R, 0.0, 2000.0)
    pos = np.array([[0.0, 0.0, 0.0], [2.5e-3, 0.6e-3, 0.2e-3]])
    vel = np.array([[0.3, 0.0, 0.0], [-0.1, 0.0, 0.05]])
    spin = np.array([[0.0, 0.0, 2e-10], [0.0, 0.0, 0.0]])
    dt = dem.time_step(R, SAND, [], 0.575)
    res = dem.run(
        p,
        pos,
        ident(2),
        table(it),
        dt,
        dem.Phases(t_end=1.5e-2, n_samples=3),
        gravity=0.0,
        vel=vel,
        angmom=spin,
        z_bottom=-1.0,
    )
    m = p.mass[0]
    v1 = res.vel[0]
    np.testing.assert_allclose(m * v1.sum(0), m * vel.sum(0), rtol=1e-12, atol=1e-20)
    l0 = np.cross(pos, m * vel).sum(0) + spin.sum(0)
    l1 = np.cross(res.pos[0], m * v1).sum(0) + res.angmom[0].sum(0)
    np.testing.assert_allclose(l1, l0, rtol=1e-9, atol=1e-22)
    assert not np.allclose(v1, vel)  # they did collide
    ke0 = 0.5 * m * (vel**2).sum()
    assert 0.5 * m * (v1**2).sum() < ke0  # and lost energy (damping, plasticity, adhesion)


def test_head_on_restitution_between_spheres():
    it = dem.Interaction(e=0.4, mu=0.0, mu_r=0.0)
    p = dem.Particles.clumps(2, R, 0.0, 2000.0)
    vel = np.array([[0.2, 0.0, 0.0], [-0.2, 0.0, 0.0]])
    res = dem.run(
        p,
        np.array([[0, 0, 0], [2.1e-3, 0, 0]]),
        ident(2),
        table(it),
        dem.time_step(R, SAND, [], 0.0),
        dem.Phases(t_end=2e-3, n_samples=3),
        gravity=0.0,
        vel=vel,
        z_bottom=-1.0,
    )
    v = res.vel[0]
    assert (v[1, 0] - v[0, 0]) / 0.4 == pytest.approx(0.4, abs=0.01)  # 0.395: time-discretisation error at safety 0.2


def test_clump_mass_properties():
    rho = 2000.0
    m, ia, ip = dem.clump_mass_properties(R, 0.0, rho)  # one sphere
    assert m == pytest.approx(4 / 3 * math.pi * R**3 * rho)
    assert ia == pytest.approx(0.4 * m * R**2) and ip == pytest.approx(0.4 * m * R**2)
    m2, ia2, ip2 = dem.clump_mass_properties(R, 1.5 * R, rho)  # two disjoint spheres: parallel axes
    assert m2 == pytest.approx(2 * m) and ia2 == pytest.approx(2 * ia)
    assert ip2 == pytest.approx(2 * (0.4 * m * R**2 + m * (1.5 * R) ** 2))
    # the paper's clump: lens volume pi (4r + d)(2r - d)^2 / 12 removed, d = 0.81 mm
    mc, iac, ipc = dem.clump_mass_properties(R, A, rho)
    d = 2 * A
    vol = 2 * 4 / 3 * math.pi * R**3 - math.pi * (4 * R + d) * (2 * R - d) ** 2 / 12
    assert mc == pytest.approx(vol * rho) and mc == pytest.approx(13.19e-6, rel=1e-3)
    # Monte Carlo check of the moments of inertia
    rng = np.random.default_rng(0)
    x = rng.uniform([-(A + R), -R, -R], [A + R, R, R], size=(400_000, 3))
    inside = (np.linalg.norm(x - [A, 0, 0], axis=1) < R) | (np.linalg.norm(x + [A, 0, 0], axis=1) < R)
    box = (2 * (A + R)) * (2 * R) ** 2
    mm = rho * box * inside.mean()
    y = x[inside]
    assert mm == pytest.approx(mc, rel=5e-3)
    assert mm * np.mean(y[:, 1] ** 2 + y[:, 2] ** 2) == pytest.approx(iac, rel=1e-2)
    assert mm * np.mean(y[:, 0] ** 2 + y[:, 2] ** 2) == pytest.approx(ipc, rel=1e-2)
    assert ipc > iac
    with pytest.raises(ConfigurationError, match="must be > 0"):
        dem.clump_mass_properties(-1.0, 0.0, rho)


def test_torque_free_clump_rotation_keeps_momentum_and_energy():
    p = dem.Particles.clumps(1, R, A, 2000.0)
    L = np.array([[3e-11, 1e-11, 2e-11]])  # not along a principal axis: the clump tumbles
    dt = 1e-5
    res = dem.run(
        p,
        np.zeros((1, 3)),
        ident(1),
        table(dem.Interaction(e=0.5, mu=0.5, mu_r=0.0)),
        dt,
        dem.Phases(t_end=0.05, n_samples=51),
        gravity=0.0,
        angmom=L,
        z_bottom=-1.0,
    )
    np.testing.assert_allclose(res.angmom[0], L, rtol=1e-14)
    ke = res.samples[0][:, dem.S_KE]
    assert np.ptp(ke) / ke[0] < 2e-3
    assert abs(np.linalg.norm(res.quat[0]) - 1) < 1e-12 and not np.allclose(res.quat[0], [1, 0, 0, 0])


def test_neighbour_list_is_sorted_complete_and_keeps_history():
    rng = np.random.default_rng(3)
    n = 300
    sx = rng.uniform(0, 0.01, size=(n, 3))
    rad = np.full(n, 5e-4)
    sb = np.arange(n, dtype=np.int64) // 2  # pairs of spheres form one body
    start, nbr = np.zeros(n + 1, np.int64), np.zeros(20 * n, np.int64)
    m = dem.build_neighbours(sx, rad, sb, 1e-4, start, nbr)
    d = np.linalg.norm(sx[:, None] - sx[None], axis=2)
    ref = {(i, j) for i in range(n) for j in range(i + 1, n) if d[i, j] < 1.1e-3 and sb[i] != sb[j]}
    got = {(i, int(nbr[k])) for i in range(n) for k in range(start[i], start[i + 1])}
    assert got == ref and m == len(ref)
    for i in range(n):
        row = nbr[start[i] : start[i + 1]]
        assert np.all(np.diff(row) > 0)
    # history follows its pair into a rebuilt list; new pairs start empty
    hist = np.zeros((20 * n, dem.N_HIST))
    hist[:m, 0] = np.arange(m) + 1.0
    sx2 = sx + rng.normal(scale=2e-5, size=sx.shape)
    start2, nbr2, hist2 = np.zeros(n + 1, np.int64), np.zeros(20 * n, np.int64), np.full((20 * n, dem.N_HIST), 9.0)
    m2 = dem.build_neighbours(sx2, rad, sb, 1e-4, start2, nbr2)
    dem.transfer_history(start, nbr, hist, start2, nbr2, hist2)
    old = {(i, int(nbr[k])): hist[k, 0] for i in range(n) for k in range(start[i], start[i + 1])}
    for i in range(n):
        for k in range(start2[i], start2[i + 1]):
            assert hist2[k, 0] == old.get((i, int(nbr2[k])), 0.0)
    assert m2 > 0
    assert dem.build_neighbours(sx, rad, sb, 1e-4, start, np.zeros(3, np.int64)) == -1  # overflow reported


def lattice_column(n, rc, seed=0):
    rng = np.random.default_rng(seed)
    sp = 2 * (R + A) * 1.05
    pts = []
    z = R + A + 1e-4
    while len(pts) < n:
        for x in np.arange(-rc, rc, sp):
            for y in np.arange(-rc, rc, sp):
                if math.hypot(x, y) < rc - (R + A) - 1e-4 and len(pts) < n:
                    pts.append((x, y, z))
        z += sp
    q = rng.normal(size=(n, 4))
    return np.array(pts) + rng.normal(scale=2e-5, size=(n, 3)), q / np.linalg.norm(q, axis=1)[:, None]


@pytest.mark.parametrize("walls", ["frictionless", "table2"])
def test_settled_column_walls_carry_the_weight(walls):
    es = 0.01  # softened contacts keep the test fast
    n, rc = 60, 4.5e-3
    pos, q = lattice_column(n, rc)
    it_pp = dem.Interaction(e=0.25, mu=0.52, mu_r=0.23, lambda_p=0.575, f0=-0.002, dgamma=1.64)
    if walls == "frictionless":
        it_pp = dem.Interaction(e=0.25, mu=0.52, mu_r=0.23, lambda_p=0.575)
        it_w = dem.Interaction(e=0.3, mu=0.0, mu_r=0.0, lambda_p=0.575)
    else:
        it_w = dem.Interaction(e=0.3, mu=0.347, mu_r=0.22, lambda_p=0.575, f0=-0.002, dgamma=1.64)
    p = dem.Particles.clumps(n, R, A, 2000.0)
    tab = table(it_pp, it_w, es)
    dt = dem.time_step(R, SAND, [ACRYLIC], 0.575, E_scale=es)
    ph = dem.Phases(settle_tmax=0.25, settle_tmin=0.08, settle_ke=1e-13, settle_damping=0.3, t_end=0.01, n_samples=3)
    res = dem.run(p, pos, q, tab, dt, ph, r_cyl=rc)
    s = res.samples[0][-1]
    w = p.mass.sum() * G
    assert s[dem.S_FBOTTOM] + s[dem.S_FCYL] == pytest.approx(w, rel=0.02)  # vertical balance
    assert res.pos[0][:, 2].max() < 0.06 and np.all(np.hypot(res.pos[0][:, 0], res.pos[0][:, 1]) < rc)
    if walls == "frictionless":
        assert s[dem.S_FBOTTOM] == pytest.approx(w, rel=0.02)
        assert abs(s[dem.S_FCYL]) < 0.02 * w
    else:  # Janssen: wall friction carries part of the weight of a column taller than wide
        assert s[dem.S_FCYL] > 0.1 * w and s[dem.S_FBOTTOM] < 0.9 * w


def test_batch_equals_one_by_one():
    es = 0.01
    n, rc = 20, 3.5e-3
    pos, q = lattice_column(n, rc, seed=1)
    p = dem.Particles.clumps(n, R, A, 2000.0)
    tabs = np.stack(
        [
            table(dem.Interaction(e=0.25, mu=mu, mu_r=0.23, lambda_p=lam, f0=-0.002, dgamma=1.64), None, es)
            for mu, lam in ((0.52, 0.575), (0.45, 0.7))
        ]
    )
    dts = np.array([dem.time_step(R, SAND, [STEEL], lam, E_scale=es) for lam in (0.575, 0.7)])
    ph = dem.Phases(
        settle_tmax=0.02,
        settle_tmin=0.02,
        settle_ke=0.0,
        preload=0.0,
        piston=True,
        v_load=0.05,
        t_load=2e-3,
        v_unload=0.02,
        t_end=3e-3,
        n_samples=7,
    )
    both = dem.run(p, pos, q, tabs, dts, ph, r_cyl=rc)
    for i in range(2):
        one = dem.run(p, pos, q, tabs[i], dts[i], ph, r_cyl=rc)
        np.testing.assert_array_equal(both.samples[i], one.samples[0])
        np.testing.assert_array_equal(both.pos[i], one.pos[0])
    assert not np.array_equal(both.samples[0], both.samples[1])


def test_results_do_not_depend_on_the_verlet_skin():
    """The Verlet list only spares distance tests: a rebuild at every step (skin 0) and larger skins give the same
    bits, since the pairs in contact, their history and the order of their sums are the same."""
    es = 0.01
    n, rc = 20, 3.5e-3
    pos, q = lattice_column(n, rc, seed=2)
    p = dem.Particles.clumps(n, R, A, 2000.0)
    tab = table(dem.Interaction(e=0.25, mu=0.52, mu_r=0.23, lambda_p=0.575, f0=-0.002, dgamma=1.64), None, es)
    dt = dem.time_step(R, SAND, [STEEL], 0.575, E_scale=es)
    ph = dem.Phases(
        settle_tmax=0.02, settle_tmin=0.02, settle_damping=0.3, piston=True, v_load=0.05, t_load=2e-3, t_end=3e-3
    )
    runs = [dem.run(p, pos, q, tab, dt, ph, r_cyl=rc, skin=k * R) for k in (0.0, 0.05, 0.2)]
    rebuilds = [int(r.info[0, dem.F_REBUILDS]) for r in runs]
    assert rebuilds[0] >= int(runs[0].info[0, dem.F_STEPS]) - 1 and rebuilds[0] > rebuilds[1] > rebuilds[2] >= 1
    for r in runs[1:]:
        for k in ("samples", "pos", "quat", "vel", "angmom"):
            np.testing.assert_array_equal(getattr(r, k), getattr(runs[0], k))


def test_contact_force_is_the_law_of_contact_py():
    """The DEM's contact (shared square roots, constant damper ratio) against the pure functions."""
    from mechcalib.models.granular import contact as C

    it = dem.Interaction(e=0.25, mu=0.52, mu_r=0.23, lambda_p=0.575, f0=-0.002, dgamma=1.64)
    row = dem.interaction_row(SAND, ACRYLIC, it)
    estar, gstar = effective_moduli(SAND.E, SAND.nu, ACRYLIC.E, ACRYLIC.nu)
    rs, ms, rr, ir, dt = 0.5e-3, 6.6e-6, 1e-3, 2e-11, 1e-6
    hist = np.zeros((1, dem.N_HIST))
    hist[0] = [3e-6, 1e-3, -2e-3, 5e-4, 1e-6, 0.0, -2e-7]
    n = np.array([0.1, -0.2, 1.0]) / math.sqrt(1.05)
    v, w = (0.01, 0.003, -0.02), (3.0, -1.0, 0.5)
    delta = 4e-6
    h0 = hist[0].copy()
    fx, fy, fz, mx, my, mz, fn = dem.contact_force(hist, 0, delta, *n, *v, *w, rs, ms, rr, ir, row, dt)
    k1 = C.hertz_k1(estar, rs)
    k2 = C.k2_from_plasticity(k1, 0.575)
    fh, dp, nc, _ = C.eepa_normal(delta, h0[0], k1, k2, -1.0, -0.002, C.jkr_pull_off(1.64, rs), 1.5, 3.0)
    beta = C.damping_beta(0.25)
    vn = float(np.dot(v, n))
    fn_ref = fh + C.normal_damping(delta, k1, 1.5, ms, beta) * vn
    vt = np.array(v) - vn * n
    kt = C.tangential_stiffness(gstar, rs, delta, 2 / 3)
    ct = -2 * math.sqrt(5 / 6) * beta * math.sqrt(kt * ms)
    t = C.tangential_force(*h0[1:4], *n, *vt, kt, ct, dt, 0.52 * nc)
    kr = C.rolling_stiffness(C.normal_tangent_stiffness(delta, k1, 1.5), 0.23, rr)
    m = C.rolling_torque(*h0[4:7], *n, *w, kr, C.rolling_damping(kr, ir, 0.3), 0.23 * rr * nc, dt)
    assert fn == pytest.approx(fn_ref, rel=1e-12)
    np.testing.assert_allclose([fx, fy, fz], -fn_ref * n + np.array(t[3:6]), rtol=1e-12)
    np.testing.assert_allclose([mx, my, mz], m[3:6], rtol=1e-12)
    np.testing.assert_allclose(hist[0], [dp, *t[:3], *m[:3]], rtol=1e-12)


def test_force_loop_normal_law_is_eepa_normal_bit_for_bit():
    """The force loop's EEPA normal law (n = 3/2, the pair's constants computed once per list build) gives the bits of
    contact.eepa_normal on every branch: virgin loading, the k2 line, the adhesive branch with k_adh derived from
    dgamma or given."""
    from mechcalib.models.granular import contact as C
    from mechcalib.models.granular.forces import _eepa15, contact_constants, law_row

    rng = np.random.default_rng(5)
    branches = set()
    for kadh in (-1.0, 2e9):
        it = dem.Interaction(e=0.25, mu=0.52, mu_r=0.23, lambda_p=0.575, f0=-0.002, dgamma=1.64, kadh=kadh)
        row = dem.interaction_row(SAND, SAND, it)
        law = law_row(row[None], 0)
        for _ in range(400):
            rstar = rng.uniform(0.3e-3, 1e-3)
            sr, k1, k2, fmin, lam, a0, a0k2 = contact_constants(rstar, row)
            delta = rng.uniform(1e-9, 2e-6)
            dp = rng.choice([0.0, rng.uniform(0.0, 1.5 * delta)])
            ref = C.eepa_normal(delta, dp, k1, k2, kadh, -0.002, fmin, 1.5, 3.0, row[dem.I_LAMROOT])
            got = _eepa15(delta, math.sqrt(delta), dp, k1, k2, lam, a0, a0k2, kadh, law[1], law[2], law[3], law[4])
            assert got == ref[:3]
            branches.add(ref[3])
    assert branches == {C.LOADING, C.UNLOADING, C.ADHESIVE}


def test_time_step_rule():
    dt = dem.time_step(R, SAND, [ACRYLIC, STEEL], 0.575)
    dtr = math.pi * R * math.sqrt(SAND.density / SAND.G) / (0.1631 * 0.3 + 0.8766)
    e_pp = SAND.E / (2 * 0.91)
    e_ps = effective_moduli(SAND.E, 0.3, STEEL.E, 0.3)[0]
    assert dt == pytest.approx(0.2 * dtr * math.sqrt(1 - 0.575) * math.sqrt(e_pp / e_ps))
    assert dem.time_step(R, SAND, [], 0.0, E_scale=0.01) == pytest.approx(10 * dem.time_step(R, SAND, [], 0.0))
    with pytest.raises(ConfigurationError, match="safety"):
        dem.time_step(R, SAND, [], 0.0, safety=1.5)
    with pytest.raises(ConfigurationError, match="n = 1.5"):
        dem.interaction_row(SAND, SAND, dem.Interaction(e=0.5, mu=0.5, mu_r=0.0, n=1.0))
