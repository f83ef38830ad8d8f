"""The EEPA contact law (Hu et al. (2024) eqs. 16-26) against values written out by hand: the branches of eq. 17 and
the plastic overlap along a prescribed overlap history, the pull-off force, the energy dissipated per cycle,
the linear law's energy balance and restitution, the Coulomb limit and the rolling resistance."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mechcalib.models.granular import contact as C

K1, LAM = 1.0e6, 0.5
K2 = K1 / (1 - LAM)  # 2e6
KADH, F0 = 1.0e9, -1.0e-3
N, CHI = 1.5, 3.0


def drive(deltas, *, k1=K1, k2=K2, kadh=KADH, f0=F0, fmin=0.0, n=N, chi=CHI):
    """Force, plastic overlap and branch along a prescribed overlap history (one contact, no damping)."""
    dp, out = 0.0, []
    for d in deltas:
        f, dp, nc, br = C.eepa_normal(d, dp, k1, k2, kadh, f0, fmin, n, chi)
        out.append((f, dp, nc, br))
    return np.array(out)


def test_branches_and_plastic_overlap_by_hand():
    # loading to 0.1 mm, unloading to 0.08 and 0.03 mm, reloading to 0.09 mm, loading on to 0.12 mm
    r = drive([1.0e-4, 0.8e-4, 0.3e-4, 0.9e-4, 1.2e-4])
    dp1 = LAM ** (1 / N) * 1.0e-4  # dp = lambda_p^(1/n) delta_max
    # 1: virgin loading, f0 + k1 delta^1.5 = -0.001 + 1e6 * 1e-6
    assert r[0, 0] == pytest.approx(-0.001 + 1.0)
    assert r[0, 1] == pytest.approx(dp1) and r[0, 1] == pytest.approx(0.629960525e-4)
    assert r[0, 3] == C.LOADING
    # 2: unloading, f0 + k2 (delta^1.5 - dp^1.5); dp^1.5 = lambda_p * delta_max^1.5 = 5e-7
    assert r[1, 0] == pytest.approx(-0.001 + 2.0e6 * (0.8e-4**1.5 - 5.0e-7))
    assert r[1, 0] == pytest.approx(-0.001 + 0.431083506, rel=1e-8)
    assert r[1, 1] == r[0, 1] and r[1, 3] == C.UNLOADING
    # 3: the k2 line (2e6 (1.643e-7 - 5e-7) = -0.671) lies below the adhesive branch -k_adh delta^3 = -2.7e-5
    assert 2.0e6 * (0.3e-4**1.5 - 5.0e-7) < -1e9 * 2.7e-14
    assert r[2, 0] == pytest.approx(-0.001 - 2.7e-5)
    assert r[2, 3] == C.ADHESIVE and r[2, 2] == 0.0  # eq. 26: no friction on the adhesive branch
    # 4: reloading below delta_max follows the k2 line with the same dp
    assert r[3, 0] == pytest.approx(-0.001 + 2.0e6 * (0.9e-4**1.5 - 5.0e-7))
    assert r[3, 1] == r[0, 1] and r[3, 3] == C.UNLOADING
    # 5: past delta_max the virgin branch again, dp follows the new maximum
    assert r[4, 0] == pytest.approx(-0.001 + 1.0e6 * 1.2e-4**1.5)
    assert r[4, 1] == pytest.approx(LAM ** (1 / N) * 1.2e-4) and r[4, 3] == C.LOADING
    # eq. 26 measure on the k2 branch: |f_hys + k_adh delta^chi - f0|
    assert r[1, 2] == pytest.approx(0.431083506 + 1e9 * 0.8e-4**3, rel=1e-8)


def test_elastic_when_lambda_p_is_zero():
    r = drive([1e-4, 0.5e-4, 0.0001e-4], k2=K1, kadh=0.0, f0=0.0)
    np.testing.assert_allclose(r[:, 0], K1 * np.array([1e-4, 0.5e-4, 0.0001e-4]) ** 1.5)
    assert np.all(r[:, 1] == 0.0)


def test_pull_off_force_given_kadh():
    dmax = 1.0e-4
    down = np.linspace(dmax, 1e-9, 20001)
    r = drive(np.r_[np.linspace(0, dmax, 50)[1:], down])
    dp = r[-1, 1]
    fpo = C.pull_off_force(dp, K2, KADH, F0, 0.0, N, CHI)
    assert r[:, 0].min() == pytest.approx(fpo, rel=2e-3)
    # at the pull-off point the k2 line and the adhesive branch agree: k2 (x^n - dp^n) = -k_adh x^chi
    x = ((F0 - fpo) / KADH) ** (1 / CHI)
    assert K2 * (x**N - dp**N) == pytest.approx(-KADH * x**CHI, rel=1e-6)
    assert fpo < F0


def test_pull_off_force_derived_from_surface_energy():
    # sand-sand of Table 2: R* = 0.5 mm, dgamma = 1.64 J/m^2 -> f_min = -3/2 pi 1.64 5e-4 = -3.864 mN
    fmin = C.jkr_pull_off(1.64, 0.5e-3)
    assert fmin == pytest.approx(-1.5 * math.pi * 1.64 * 0.5e-3) and fmin == pytest.approx(-3.8642e-3, rel=1e-4)
    estar, _ = C.effective_moduli(1.229e9, 0.3, 1.229e9, 0.3)
    k1 = C.hertz_k1(estar, 0.5e-3)
    assert k1 == pytest.approx(4 / 3 * 1.229e9 / (2 * 0.91) * math.sqrt(0.5e-3))
    k2 = k1 / (1 - 0.575)
    f0 = -0.002
    for dmax, expected in ((2.0e-5, fmin), (1.0e-7, None)):  # a hard-pressed and a light contact
        r = drive(
            np.r_[np.linspace(0, dmax, 20)[1:], np.linspace(dmax, dmax * 1e-4, 40001)],
            k1=k1,
            k2=k2,
            kadh=-1.0,
            f0=f0,
            fmin=fmin,
        )
        dp = r[-1, 1]
        fpo = C.pull_off_force(dp, k2, -1.0, f0, fmin, N, CHI)
        if expected is None:
            expected = f0 - k2 * dp**1.5  # line never reaches f_min: pulls off between f0 and f_min
            assert fmin < expected < f0
            assert math.isinf(C.derived_kadh(dp, k2, f0, fmin, N, CHI))
        assert fpo == pytest.approx(expected)
        assert r[:, 0].min() == pytest.approx(expected, rel=2e-3)
        assert r[:, 0].min() >= expected - 1e-12
        assert r[:, 2].min() >= 0.0  # friction measure never negative


def loop_energy(lam, dmax=1e-4, k1=K1, m=4000):
    """Work done on the spring over one cycle 0 -> dmax -> 0 (trapezoid rule), no adhesion."""
    up = np.linspace(0, dmax, m)
    d = np.r_[up, up[::-1][1:]]
    f = drive(d[1:], k2=k1 / (1 - lam), kadh=0.0, f0=0.0)[:, 0]
    f = np.r_[0.0, f]
    return float(np.sum(0.5 * (f[1:] + f[:-1]) * np.diff(d)))


def test_energy_dissipated_per_cycle_by_hand_and_rising_with_lambda_p():
    dmax = 1e-4
    ws = []
    for lam in (0.0, 0.2, 0.5, 0.8):
        k2 = K1 / (1 - lam)
        dp = lam ** (1 / N) * dmax
        # loading work - unloading work of the k2 line from dmax down to dp
        w_load = K1 * dmax ** (N + 1) / (N + 1)
        w_unload = k2 * ((dmax ** (N + 1) - dp ** (N + 1)) / (N + 1) - dp**N * (dmax - dp))
        w = loop_energy(lam, dmax)
        assert w == pytest.approx(w_load - w_unload, rel=1e-4, abs=1e-14)
        ws.append(w)
    assert ws[0] == pytest.approx(0.0, abs=1e-14)
    assert all(b > a for a, b in itertools.pairwise(ws))
    # lambda_p = 0.5 by hand: 1e6 * 1e-10 / 2.5 - 2e6 * ((1e-10 - 3.150e-11) / 2.5 - 5e-7 * (1e-4 - 0.630e-4))
    assert ws[2] == pytest.approx(4.0e-5 - 2e6 * (2.740e-11 - 1.850e-11), rel=1e-3)


def collide(n, e, *, k=2.0e5, m=1.0e-3, v0=0.2, steps_per_period=2000):
    """Head-on collision of a particle (mass m) with a rigid wall under the law with lambda_p = 0 and no
    adhesion; returns the rebound speed ratio."""
    beta = C.damping_beta(e) if e < 1 else 0.0
    x, v = 0.0, v0  # overlap and its rate
    period = 2 * math.pi * math.sqrt(m / k) if n == 1.0 else 3.2 * (m**2 / (k**2 * v0)) ** 0.2
    dt = period / steps_per_period
    for _ in range(100 * steps_per_period):
        if x <= 0.0 and v < 0.0:
            break
        f = 0.0
        if x > 0.0:
            f, _, _, _ = C.eepa_normal(x, 0.0, k, k, 0.0, 0.0, 0.0, n, CHI)
            f += C.normal_damping(x, k, n, m, beta) * v
        v -= f / m * dt
        x += v * dt
    return -v / v0


def test_linear_law_conserves_energy_and_matches_restitution():
    assert collide(1.0, 1.0) == pytest.approx(1.0, abs=2e-3)
    for e in (0.25, 0.5, 0.8):
        assert collide(1.0, e) == pytest.approx(e, abs=5e-3)
    # eq. 22
    assert C.damping_beta(0.25) == pytest.approx(math.log(0.25) / math.sqrt(math.log(0.25) ** 2 + math.pi**2))


def test_hertz_law_restitution_matches_the_target():
    assert collide(1.5, 1.0) == pytest.approx(1.0, abs=2e-3)
    for e in (0.25, 0.5, 0.8):
        assert collide(1.5, e) == pytest.approx(e, abs=5e-3)  # the sqrt(5/6) factor of eq. 18 makes it exact


def test_damping_coefficient_eq18():
    k1, m, beta, d = 2.0e7, 6.6e-6, C.damping_beta(0.25), 2e-5
    kn = 1.5 * k1 * math.sqrt(d)  # = 2 E* sqrt(R* delta) with k1 = 4/3 E* sqrt(R*)
    assert C.normal_damping(d, k1, 1.5, m, beta) == pytest.approx(-2 * math.sqrt(5 / 6) * beta * math.sqrt(kn * m))
    estar, rstar = 6.75e8, 5e-4
    assert C.normal_tangent_stiffness(d, C.hertz_k1(estar, rstar), 1.5) == pytest.approx(
        2 * estar * math.sqrt(rstar * d)
    )


def test_tangential_spring_caps_at_the_coulomb_limit():
    kt, dt, v, flim = 1.0e4, 1e-6, 0.01, 0.03  # 1e-4 N per step
    n = (0.0, 0.0, 1.0)
    s = (0.0, 0.0, 0.0)
    hist = []
    for i in range(1200):
        vel = (v, 0.0, 0.0) if i < 400 else (-v, 0.0, 0.0)
        sx, sy, sz, tx, _ty, _tz, slide = C.tangential_force(*s, *n, *vel, kt, 0.0, dt, flim)
        s = (sx, sy, sz)
        hist.append((tx, slide))
    f = np.array([h[0] for h in hist])
    slid = np.array([h[1] for h in hist])
    np.testing.assert_allclose(f[:300], -kt * v * dt * np.arange(1, 301), rtol=1e-9)  # elastic: -kt s
    assert np.all(np.abs(f) <= flim * (1 + 1e-12))
    assert f[350] == pytest.approx(-flim) and slid[350] and not slid[100]
    # reversal: elastic again from the limit, by 2 * flim before sliding the other way
    np.testing.assert_allclose(f[400:450], -flim + kt * v * dt * np.arange(1, 51), rtol=1e-9)
    assert not slid[450] and f[1199] == pytest.approx(flim) and slid[1199]


def test_tangential_force_is_turned_into_the_new_tangent_plane():
    # a stored force along x with the normal turned from z to (sin a, 0, cos a): magnitude kept, normal part 0
    a = 0.1
    sx, sy, sz, *_ = C.tangential_force(0.02, 0.0, 0.0, math.sin(a), 0.0, math.cos(a), 0, 0, 0, 1e4, 0, 1e-6, 1.0)
    assert math.hypot(sx, sy, sz) == pytest.approx(0.02)
    assert sx * math.sin(a) + sz * math.cos(a) == pytest.approx(0.0, abs=1e-15)


def test_rolling_resistance_torque():
    kr, dt, mlim = 2.0e-3, 1e-5, 1e-6
    n = (0.0, 0.0, 1.0)
    m = (0.0, 0.0, 0.0)
    out = []
    for _ in range(400):
        sx, sy, sz, _tx, ty, _tz, at_cap = C.rolling_torque(*m, *n, 0.0, 0.2, 0.0, kr, 0.0, mlim, dt)  # rolling about y
        m = (sx, sy, sz)
        out.append((ty, at_cap))
    my = np.array([o[0] for o in out])
    np.testing.assert_allclose(my[:240], -kr * 0.2 * dt * np.arange(1, 241), rtol=1e-9)  # spring: 4e-9 N m per step
    assert not out[240][1] and my[-1] == pytest.approx(-mlim) and out[-1][1]  # capped at mu_r R_r N, opposing w
    # the damper adds -c_r w_r below the cap and is off at the cap
    cr = C.rolling_damping(kr, 1e-8, 0.3)
    assert cr == pytest.approx(0.6 * math.sqrt(1e-8 * kr))
    assert C.rolling_torque(0, 0, 0, *n, 0.0, 0.2, 0.0, kr, cr, mlim, dt)[4] == pytest.approx(-kr * 0.2 * dt - cr * 0.2)
    assert C.rolling_torque(0, -mlim, 0, *n, 0.0, 0.2, 0.0, kr, cr, mlim, dt)[4] == pytest.approx(-mlim)
    # twisting (rotation about the normal) meets no resistance
    assert C.rolling_torque(0.0, 0.0, 0.0, *n, 0.0, 0.0, 5.0, kr, cr, mlim, dt)[:6] == (0.0,) * 6
    assert C.rolling_stiffness(1e5, 0.23, 1e-3) == pytest.approx(2.25 * 1e5 * 0.23**2 * 1e-6)


def test_moduli_and_time_step():
    e, g = C.effective_moduli(1.229e9, 0.3, 1.229e9, 0.3)
    assert e == pytest.approx(1.229e9 / (2 * (1 - 0.09)))
    G = 1.229e9 / 2.6
    assert g == pytest.approx(G / (2 * 1.7))
    e_rigid, _ = C.effective_moduli(1.229e9, 0.3, math.inf, 0.3)
    assert e_rigid == pytest.approx(1.229e9 / 0.91)
    dt = C.rayleigh_time_step(1e-3, 2000.0, G, 0.3)
    assert dt == pytest.approx(math.pi * 1e-3 * math.sqrt(2000 / G) / (0.1631 * 0.3 + 0.8766))
    assert dt == pytest.approx(6.98e-6, rel=1e-2)
