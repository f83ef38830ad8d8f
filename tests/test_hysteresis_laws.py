"""The hysteretic laws of Ding et al. (2021) (eqs. 1-23) against hand-checked behaviour.

Loops are driven by prescribed displacement paths (:func:`hysteresis_loop`), so every number below follows
from the equations alone.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mechcalib.errors import ConfigurationError
from mechcalib.models.hysteresis import laws as L
from mechcalib.models.hysteresis.integrate import hermite_crossing
from mechcalib.models.hysteresis.laws import LAWS, hysteresis_loop


def path(*points: float, per_unit: int = 200) -> np.ndarray:
    """A piecewise-linear displacement path through ``points`` with ``per_unit`` samples per unit length."""
    out = [np.array([points[0]], dtype=float)]
    for p0, p1 in itertools.pairwise(points):
        k = max(2, round(abs(p1 - p0) * per_unit))
        out.append(np.linspace(p0, p1, k + 1)[1:])
    return np.concatenate(out)


def at(u_path: np.ndarray, r: np.ndarray, u: float, after: int = 0) -> float:
    """``r`` at the first path sample (index >= ``after``) equal to ``u``."""
    idx = np.flatnonzero(np.isclose(u_path, u, atol=1e-12))
    idx = idx[idx >= after]
    assert idx.size, f"path never reaches {u}"
    return float(r[idx[0]])


def loop_area(u: np.ndarray, r: np.ndarray) -> float:
    """``closed integral r du`` by the trapezoid rule."""
    return float(np.sum(0.5 * (r[1:] + r[:-1]) * np.diff(u)))


# --------------------------------------------------------------------------------------------
# Bilinear, kinematic hardening (eqs. 2-5), a = [1, 2, 1]: k1 = 2 a1 + a2 = 4, k2 = 2, F0 = 1
# --------------------------------------------------------------------------------------------
def test_kinematic_rate_is_eq4():
    a = np.array([1.0, 2.0, 1.0, 0, 0, 0])
    law = L.BILINEAR_KINEMATIC
    assert L.rate(law, a, 0.0, 0.0, 1.0, 0.0) == pytest.approx(4.0)  # elastic, k1
    assert L.rate(law, a, 2.0, 0.5, 1.0, 0.0) == pytest.approx(2.0)  # on the surface: sgn(0) = 1 -> k2
    assert L.rate(law, a, 2.0, 0.5, -1.0, 0.0) == pytest.approx(-4.0)  # unloading is elastic
    assert L.rate(law, a, 0.0, 0.0, 0.0, 0.0) == 0.0


def test_kinematic_branches():
    u = path(0.0, 3.0, -3.0)
    r, _ = hysteresis_loop("bilinear_kinematic", [1.0, 2.0, 1.0], u)
    assert at(u, r, 0.25) == pytest.approx(1.0, abs=1e-12)  # elastic slope k1 = 4
    assert at(u, r, 0.5) == pytest.approx(2.0, abs=1e-12)  # yield force F0 k1/(k1-k2) = 2
    assert at(u, r, 3.0) == pytest.approx(7.0, abs=1e-12)  # hardening line r = 2 u + 1
    i3 = int(np.argmax(u))
    assert at(u, r, 2.0, after=i3) == pytest.approx(3.0, abs=1e-12)  # unloads elastically over 2 F0 / (k1-k2)
    assert at(u, r, 0.0, after=i3) == pytest.approx(-1.0, abs=1e-12)  # then on r = 2 u - 1
    assert r[-1] == pytest.approx(-7.0, abs=1e-12)


def test_kinematic_loop_area():
    # steady cycle +-3: area 4 F0 (Y - F0/(k1-k2)) = 4 * 1 * (3 - 0.5) = 10
    u = path(0.0, 3.0, -3.0, 3.0, -3.0, 3.0)
    r, eps = hysteresis_loop("bilinear_kinematic", [1.0, 2.0, 1.0], u)
    peaks = np.flatnonzero(np.isclose(u, 3.0))
    cyc = slice(peaks[1], peaks[2] + 1)
    assert loop_area(u[cyc], r[cyc]) == pytest.approx(10.0, rel=1e-12)
    assert eps[peaks[2]] - eps[peaks[1]] == pytest.approx(10.0, rel=1e-12)  # eq. 14 over a closed cycle


# --------------------------------------------------------------------------------------------
# Bilinear, equal yielding force (eqs. 6-8), a = [3, 1, 1]: k1 = 4, k2 = 2, Fy = 1
# --------------------------------------------------------------------------------------------
def test_equal_yield_branches():
    u = path(0.0, 3.0, -3.0)
    r, _ = hysteresis_loop("bilinear_equal", [3.0, 1.0, 1.0], u)
    assert at(u, r, 0.25) == pytest.approx(1.0, abs=1e-12)  # yields at Fy = 1 with slope k1 = 4
    assert at(u, r, 3.0) == pytest.approx(6.5, abs=1e-12)  # then slope k2 = 2
    i3 = int(np.argmax(u))
    # unloading is elastic until r = -Fy: from 6.5 over 7.5 / 4 = 1.875, i.e. to u = 1.125
    assert at(u, r, 1.125, after=i3) == pytest.approx(-1.0, abs=1e-12)
    assert r[-1] == pytest.approx(-1.0 + 2.0 * (-3.0 - 1.125), abs=1e-12)


def test_equal_yield_rate_is_eq8():
    a = np.array([3.0, 1.0, 1.0, 0, 0, 0])
    law = L.BILINEAR_EQUAL
    assert L.rate(law, a, 0.5, 0.0, 1.0, 0.0) == pytest.approx(4.0)
    assert L.rate(law, a, 1.0, 0.0, 1.0, 0.0) == pytest.approx(2.0)
    assert L.rate(law, a, 1.5, 0.0, -1.0, 0.0) == pytest.approx(-4.0)


def test_equal_yield_negative_post_yield_slope_slides():
    # a1 < a2 gives k2 < 0; the literal eq. 8 chatters on r = Fy, whose limit is r' = 0
    u = path(0.0, 2.0, per_unit=300)
    r, _ = hysteresis_loop("bilinear_equal", [1.0, 2.0, 1.0], u)
    assert at(u, r, 0.2) == pytest.approx(0.6, abs=1e-12)  # k1 = a1 + a2 = 3
    assert np.max(np.abs(r[u > 0.34] - 1.0)) < 1e-12


# --------------------------------------------------------------------------------------------
# Bouc-Wen (eqs. 9-11), a = [2, 1, 0.5, 2]
# --------------------------------------------------------------------------------------------
def test_boucwen_rate_is_eq11():
    a = np.array([2.0, 1.0, 0.5, 2.0, 0, 0])
    # r' = a1 u' - (a2 r |r|^(n-1) |u'| + a3 |r|^n u')
    assert L.rate(L.BOUC_WEN, a, 0.5, 0.0, 1.0, 0.0) == pytest.approx(2.0 - (0.25 + 0.125))
    assert L.rate(L.BOUC_WEN, a, 0.5, 0.0, -1.0, 0.0) == pytest.approx(-2.0 - (0.25 - 0.125))
    assert L.rate(L.BOUC_WEN, a, -0.5, 0.0, 2.0, 0.0) == pytest.approx(4.0 - (-0.5 + 0.25))


def test_boucwen_initial_slope_and_bound():
    u = path(0.0, 10.0, per_unit=400)
    r, _ = hysteresis_loop("boucwen", [2.0, 1.0, 0.5, 2.0], u)
    bound = (2.0 / 1.5) ** 0.5  # (A / (beta + gamma))^(1/n)
    assert r[1] / u[1] == pytest.approx(2.0, rel=1e-3)  # initial stiffness a1
    assert np.all(np.diff(r) >= 0)
    assert r[-1] == pytest.approx(bound, rel=1e-9)  # saturates at the bound
    assert r.max() <= bound * (1 + 1e-12)
    # closed form of the monotonic branch for n = 2: r = rb tanh(a1 u / rb), rb^2 = a1 / (a2 + a3)
    exact = bound * np.tanh(2.0 * u / bound)
    assert np.max(np.abs(r - exact)) < 1e-9


def test_boucwen_bound_holds_for_random_parameters():
    spec = LAWS["boucwen"]
    rng = np.random.default_rng(3)
    lo, hi = np.array(spec.bounds).T
    a = lo + (hi - lo) * rng.random((20, 4))
    u = path(0.0, 4.0, -4.0, 4.0, -4.0, per_unit=100)
    r, _ = hysteresis_loop("boucwen", a, u)
    bound = (a[:, 0] / (a[:, 1] + a[:, 2])) ** (1.0 / a[:, 3])
    assert np.all(np.max(np.abs(r), axis=1) <= bound * (1 + 1e-9))
    assert np.all(np.max(np.abs(r), axis=1) > 0.9 * bound)


# --------------------------------------------------------------------------------------------
# Dissipation, degradation and pinching
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", sorted(LAWS))
def test_cycles_dissipate_energy(key):
    spec = LAWS[key]
    u = path(0.0, 2.0, -2.0, 2.0, -2.0, 2.0)
    r, eps = hysteresis_loop(key, spec.paper, u)
    start = np.flatnonzero(np.isclose(u, 2.0))[1]
    area = loop_area(u[start:], r[start:])
    # traversed clockwise: positive dissipation (pinched loops are thin, hence the small threshold)
    assert area > 1e-3 * np.ptp(r) * np.ptp(u)
    assert eps[-1] > eps[start]
    # eq. 14: eps is the running integral of r du
    assert np.allclose(eps, np.concatenate([[0.0], np.cumsum(0.5 * (r[1:] + r[:-1]) * np.diff(u))]), rtol=0, atol=1e-3)


def test_degradation_grows_with_dissipated_energy():
    a = np.array(LAWS["degradation"].paper)
    u = path(0.0, *([3.0, -3.0] * 6))
    r, eps = hysteresis_loop("degradation", a, u)
    peaks = np.array([r[np.isclose(u, 3.0)][i] for i in range(6)])
    assert np.all(np.diff(peaks) < 0)  # strength falls cycle after cycle (nu, eta grow with eps)
    ends = eps[np.isclose(u, 3.0)]
    assert np.all(np.diff(ends) > 0)
    # the tangent at r = 0 is A(t) / eta(t) = (1 - dA eps) / (1 + deta eps) (eqs. 12, 15, 17)
    for e in (0.0, 5.0, 20.0):
        assert L.tangent(L.DEGRADATION, np.r_[a], 0.0, 0.0, 1.0, e, 0) == pytest.approx((1 - 0.02 * e) / (1 + 0.02 * e))
    # and the same loops without degradation keep their peak
    r0, _ = hysteresis_loop("degradation", [2.0, 1.0, 2.0, 0.0, 0.0, 0.0], u)
    assert np.ptp(np.array([r0[np.isclose(u, 3.0)][i] for i in range(1, 6)])) < 1e-9


def test_degradation_without_deltas_is_boucwen():
    u = path(0.0, 2.0, -1.5, 1.0)
    rd, _ = hysteresis_loop("degradation", [2.0, 1.0, 2.0, 0.0, 0.0, 0.0], u)
    rb, _ = hysteresis_loop("boucwen", [1.0, 2.0, 1.0, 2.0], u)  # A0 = 1
    assert np.max(np.abs(rd - rb)) < 1e-14


def test_pinching():
    a = np.array(LAWS["pinching"].paper)
    # without slip (ds = 0) eqs. 19-21 are Bouc-Wen with A, beta, gamma, n
    u = path(0.0, 1.0, -1.0, 1.0)
    rp, _ = hysteresis_loop("pinching", [10.0, 5.0, 5.0, 2.0, 0.0, 2.0], u)
    rb, _ = hysteresis_loop("boucwen", [10.0, 5.0, 5.0, 2.0], u)
    assert np.max(np.abs(rp - rb)) < 1e-14
    # slope at r = 0: A / (1 + sqrt(2/pi) (ds/sigma) eps A), smaller as eps grows (eqs. 20, 22)
    for e in (0.0, 1.0, 3.0):
        expected = 10.0 / (1.0 + math.sqrt(2 / math.pi) * 2.0 * e * 10.0)
        assert L.tangent(L.PINCHING, a, 0.0, 0.0, 1.0, e, 0) == pytest.approx(expected)
    # away from r = 0 the slip vanishes (exp(-r^2 / 2 sigma^2)): the slope is psi / (1 + h psi)
    r, e = 0.3, 2.0
    psi = 10.0 - 0.09 * (5.0 + 5.0)
    h = math.sqrt(2 / math.pi) * 2.0 * e * math.exp(-2.0 * 0.09)
    assert L.tangent(L.PINCHING, a, r, 0.0, 1.0, e, 0) == pytest.approx(psi / (1 + h * psi))
    # the cyclic loop is pinched: later crossings of r = 0 are flatter than the first
    uc = path(0.0, *([1.0, -1.0] * 4), per_unit=2000)
    r, _ = hysteresis_loop("pinching", a, uc)
    du = np.diff(uc)
    slope = np.diff(r) / du
    cross = np.flatnonzero((np.sign(r[1:]) != np.sign(r[:-1])) & (np.abs(du) > 0))
    assert slope[cross[0]] == pytest.approx(10.0, rel=0.01)
    assert slope[cross[-1]] < 0.2 * slope[cross[0]]


# --------------------------------------------------------------------------------------------
# Kernels and helpers
# --------------------------------------------------------------------------------------------
def test_batch_equals_one_by_one():
    u = path(0.0, 2.0, -2.0, 1.0)
    for key, spec in LAWS.items():
        a = np.array(spec.paper) * np.array([[1.0], [1.2], [0.8]])
        rb, eb = hysteresis_loop(key, a, u)
        for i in range(3):
            ri, ei = hysteresis_loop(key, a[i], u)
            assert np.array_equal(rb[i], ri) and np.array_equal(eb[i], ei)


def test_hermite_crossing():
    # linear function 1 - 2 theta: root 0.5
    assert hermite_crossing(1.0, -2.0, -1.0, -2.0) == pytest.approx(0.5, abs=1e-15)
    # cubic through phi(0)=1, phi'(0)=0, phi(1)=-1, phi'(1)=0: 1 - 6t^2 + 4t^3 -> root 0.5
    assert hermite_crossing(1.0, 0.0, -1.0, 0.0) == pytest.approx(0.5, abs=1e-15)
    # 1 - 3t^2 + 2t^3 + (t^3 - t^2) * (-2) ... a quadratic (1 - t)(1 - 3t)... checked numerically
    th = hermite_crossing(0.2, -1.0, -0.5, -0.2)
    t2, t3 = th * th, th**3
    val = (2 * t3 - 3 * t2 + 1) * 0.2 + (t3 - 2 * t2 + th) * -1.0 + (3 * t2 - 2 * t3) * -0.5 + (t3 - t2) * -0.2
    assert abs(val) < 1e-12
    assert hermite_crossing(-0.1, 1.0, -1.0, 1.0) == 0.0


def test_law_specs_and_errors():
    assert LAWS["boucwen"].paper == (2.0, 1.0, 0.5, 2.0)
    assert LAWS["bilinear_kinematic"].paper == (1.0, 2.0, 1.0)
    assert LAWS["bilinear_equal"].paper == (3.0, 1.0, 1.0)
    assert LAWS["degradation"].paper == (2.0, 1.0, 2.0, 0.02, 0.02, 0.02)
    assert LAWS["pinching"].paper == (10.0, 5.0, 5.0, 2.0, 2.0, 2.0)
    for spec in LAWS.values():
        if spec.opensees_named:  # stated unit-scale boxes around the reference values
            assert all(lo <= v <= hi for (lo, hi), v in zip(spec.bounds, spec.paper, strict=True)), spec.key
        else:  # the paper's box: 0.5x-2x its values
            assert spec.bounds == tuple((0.5 * v, 2.0 * v) for v in spec.paper)
        assert spec.padded(spec.paper).shape == (1, L.MAX_PARAMS)
    with pytest.raises(ConfigurationError, match="valid laws"):
        hysteresis_loop("bouc", [1, 2, 3, 4], [0.0, 1.0])
