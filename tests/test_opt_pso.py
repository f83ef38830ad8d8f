"""PSO (Kibriya et al. (2023) eqs. 1-10): kernels against hand-computed values, the class's threading of state,
settings validation, presets and convergence."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechcalib.errors import ConfigurationError
from mechcalib.optimizers import get_optimizer, make_optimizer
from mechcalib.optimizers.pso import (
    PSO,
    clamp_velocity,
    constriction_factor,
    global_best_index,
    inertia_weight,
    move,
    pso_velocity,
    update_personal_best,
)


class FixedRandom:
    """Stands in for the generator: ``random(shape)`` returns the given arrays in order."""

    def __init__(self, *arrays):
        self.arrays = [np.asarray(a, dtype=float) for a in arrays]

    def random(self, shape):
        a = self.arrays.pop(0)
        assert a.shape == tuple(shape)
        return a.copy()


# -- eq. 8 -------------------------------------------------------------------------------------------
def test_constriction_factor_values():
    # phi = 4: sqrt(16 - 16) = 0, K = 2 / |2 - 4| = 1
    assert constriction_factor(4.0) == 1.0
    # phi = 4.1: sqrt(16.81 - 16.4) = sqrt(0.41) = 0.6403124; K = 2 / (2.1 + 0.6403124) = 0.7298438
    assert constriction_factor(4.1) == pytest.approx(0.7298437881, abs=1e-10)
    assert constriction_factor(4.1) == pytest.approx(2 / (2.1 + math.sqrt(0.41)), rel=1e-14)


@pytest.mark.parametrize("phi", [3.9, 0.0, float("nan")])
def test_constriction_factor_rejects_phi_below_4(phi):
    with pytest.raises(ConfigurationError, match=r"phi") as e:
        constriction_factor(phi)
    assert repr(phi) in str(e.value)


# -- eqs. 6, 7 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "schedule, kw, expected",
    [
        ("linear", {}, (0.8, 0.6, 0.4)),  # 0.8 - 0.4 k / k_max
        ("nonlinear", {"exponent": 2.0}, (0.8, 0.5, 0.4)),  # 0.4 + 0.4 (1 - k/k_max)^2: 0.4 + 0.4 * 0.25
        ("nonlinear", {"exponent": 1.2}, (0.8, 0.4 + 0.4 * 0.5**1.2, 0.4)),  # middle 0.574110
        ("constant", {"w_const": 0.9}, (0.9, 0.9, 0.9)),
        ("none", {}, (1.0, 1.0, 1.0)),
    ],
)
def test_inertia_schedules_at_start_middle_end(schedule, kw, expected):
    got = [inertia_weight(k, 50, schedule, w_max=0.8, w_min=0.4, **kw) for k in (0, 25, 50)]
    assert got == pytest.approx(list(expected), abs=1e-12)


def test_inertia_after_k_max_stays_at_w_min():
    assert inertia_weight(80, 50, "linear") == pytest.approx(0.4)
    assert inertia_weight(80, 50, "nonlinear", exponent=2.0) == pytest.approx(0.4)
    assert PSO(max_iter=10, inertia="linear").weight(5) == pytest.approx(0.6)


# -- eqs. 1, 4, 9, 10: the velocity kernel and the class, with fixed R ----------------------------------
# Two particles in 2-D. Particle 1 at (0.2, 0.4) with best (0.3, 0.5); particle 2 at (0.8, 0.5) is the
# global best g = (0.8, 0.5) (its own best). With phi1 = phi2 = 2:
#   particle 1: phi1 R1 (p - x) = 2 (0.5, 0.1) * (0.1, 0.1)  = (0.1, 0.02)
#               phi2 R2 (g - x) = 2 (0.25, 0.5) * (0.6, 0.1) = (0.3, 0.1)      -> attraction A1 = (0.4, 0.12)
#   particle 2: p - x = g - x = 0                                              -> A2 = (0, 0)
# With phi1 = phi2 = 2.05 the attraction is 2.05/2 times larger: A1 = (0.41, 0.123).
X0 = np.array([[0.2, 0.4], [0.8, 0.5]])
V0 = np.array([[0.1, -0.2], [-0.1, 0.0]])
P_BEFORE = np.array([[0.3, 0.5], [0.0, 0.0]])  # particle 2's best is replaced by its current position
FP_BEFORE = np.array([0.5, 1.0])
F_NOW = np.array([0.9, 0.1])  # particle 1 does not improve (0.9 > 0.5), particle 2 does (0.1 < 1.0)
P_AFTER = np.array([[0.3, 0.5], [0.8, 0.5]])
R1 = np.array([[0.5, 0.1], [0.3, 0.9]])
R2 = np.array([[0.25, 0.5], [0.7, 0.2]])
K41 = 0.7298437881283576

VARIANTS = {
    # name: (settings, w used at k = 25 of k_max = 50, K, expected new velocities)
    # eq. 1: V + A
    "eq1 original": (dict(inertia="none"), 1.0, 1.0, [[0.5, -0.08], [-0.1, 0.0]]),
    # eq. 4, w = 0.9: 0.9 V + A = (0.09 + 0.4, -0.18 + 0.12)
    "eq4 constant": (dict(inertia="constant", w_const=0.9), 0.9, 1.0, [[0.49, -0.06], [-0.09, 0.0]]),
    # eq. 6 at k = k_max / 2: w = 0.6; 0.6 V + A = (0.06 + 0.4, -0.12 + 0.12)
    "eq6 linear": (dict(inertia="linear"), 0.6, 1.0, [[0.46, 0.0], [-0.06, 0.0]]),
    # eq. 7 (decreasing form), n = 2, k = k_max / 2: w = 0.5; 0.5 V + A = (0.05 + 0.4, -0.1 + 0.12)
    "eq7 nonlinear": (dict(inertia="nonlinear", w_exponent=2.0), 0.5, 1.0, [[0.45, 0.02], [-0.05, 0.0]]),
    # eq. 9, phi = 4.1: K (V + A) = K (0.51, -0.077) = (0.3722203, -0.0561980), K (-0.1, 0)
    "eq9 constriction": (
        dict(inertia="none", constriction=True, phi1=2.05, phi2=2.05),
        1.0,
        K41,
        [[0.51 * K41, -0.077 * K41], [-0.1 * K41, 0.0]],
    ),
    # eq. 10, phi = 4.1, w = 0.6: K (0.6 V + A) = K (0.47, 0.003) = (0.3430266, 0.0021895), K (-0.06, 0)
    "eq10 inertia+constriction": (
        dict(inertia="linear", constriction=True, phi1=2.05, phi2=2.05),
        0.6,
        K41,
        [[0.47 * K41, 0.003 * K41], [-0.06 * K41, 0.0]],
    ),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_velocity_kernel_each_variant(name):
    settings, w, K, expected = VARIANTS[name]
    phi = settings.get("phi1", 2.0)
    V = pso_velocity(V0, X0, P_AFTER, P_AFTER[1], R1, R2, phi, phi, w, K)
    np.testing.assert_allclose(V, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_class_step_each_variant(name):
    """The class threads bests, w(k), K, eq. 2 and the walls through the kernels."""
    settings, _, K, expected = VARIANTS[name]
    opt = PSO(max_iter=50, v_max=None, seed=0, **settings).setup(2)
    assert opt.K == pytest.approx(K, abs=1e-12)
    opt._X, opt._V, opt._P, opt._fP, opt._k = X0.copy(), V0.copy(), P_BEFORE.copy(), FP_BEFORE.copy(), 25
    opt.rng = FixedRandom(R1, R2)
    U = opt.ask()
    np.testing.assert_array_equal(U, X0)
    opt.tell(U, F_NOW)
    np.testing.assert_allclose(opt._P, P_AFTER)
    np.testing.assert_allclose(opt._fP, [0.5, 0.1])
    assert opt._g == 1
    assert opt._k == 26
    np.testing.assert_allclose(opt._V, expected, atol=1e-12)
    np.testing.assert_allclose(opt.ask(), X0 + np.array(expected), atol=1e-12)  # eq. 2, inside the cube


def test_class_step_clamps_velocity_and_clips_at_the_wall():
    # As the eq. 1 case, but particle 2 starts at x = 0.05 in dimension 1, so g = (0.05, 0.5), and
    # v_max = 0.1. Particle 1: V = (0.1, -0.2) + 2 (0.5, 0.1) (0.1, 0.1) + 2 (0.25, 0.5) (-0.15, 0.1)
    # = (0.1, -0.2) + (0.1, 0.02) + (-0.075, 0.1) = (0.125, -0.08) -> clamped to (0.1, -0.08);
    # x -> (0.3, 0.32).
    # Particle 2: V = (-0.1, 0); x + v = (-0.05, 0.5) leaves the cube -> x = (0, 0.5), v = (0, 0).
    X = X0.copy()
    X[1, 0] = 0.05
    opt = PSO(inertia="none", v_max=0.1, seed=0).setup(2)
    opt._X, opt._V, opt._P, opt._fP = X, V0.copy(), P_BEFORE.copy(), FP_BEFORE.copy()
    opt.rng = FixedRandom(R1, R2)
    U = opt.ask()
    opt.tell(U, F_NOW)
    np.testing.assert_allclose(opt._V, [[0.1, -0.08], [0.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(opt._X, [[0.3, 0.32], [0.0, 0.5]], atol=1e-12)


# -- the other kernels -------------------------------------------------------------------------------------
def test_clamp_velocity():
    V = np.array([[0.7, -0.2], [-0.9, 0.5]])
    np.testing.assert_array_equal(clamp_velocity(V, 0.5), [[0.5, -0.2], [-0.5, 0.5]])
    assert clamp_velocity(V, None) is V


def test_move_clip_and_reflect():
    X = np.array([[0.9, 0.1, 0.5]])
    V = np.array([[0.3, -0.3, 0.2]])
    Xc, Vc = move(X, V, "clip")
    np.testing.assert_allclose(Xc, [[1.0, 0.0, 0.7]])
    np.testing.assert_allclose(Vc, [[0.0, 0.0, 0.2]])  # absorbing: the velocity into the wall is dropped
    Xr, Vr = move(X, V, "reflect")
    np.testing.assert_allclose(Xr, [[0.8, 0.2, 0.7]])  # 1.2 -> 0.8, -0.2 -> 0.2
    np.testing.assert_allclose(Vr, [[-0.3, 0.3, 0.2]])


def test_personal_and_global_best_update_eq3():
    P = np.array([[0.1, 0.1], [0.2, 0.2], [0.3, 0.3]])
    fP = np.array([1.0, 2.0, np.inf])
    X = np.array([[0.5, 0.5], [0.6, 0.6], [0.7, 0.7]])
    f = np.array([1.0, 0.5, np.inf])  # equal: no move; better: move; failed (+inf): no move
    P2, fP2, imp = update_personal_best(P, fP, X, f)
    np.testing.assert_array_equal(imp, [False, True, False])
    np.testing.assert_array_equal(P2, [[0.1, 0.1], [0.6, 0.6], [0.3, 0.3]])
    np.testing.assert_array_equal(fP2, [1.0, 0.5, np.inf])
    assert global_best_index(fP2) == 1
    assert global_best_index(np.array([0.3, 0.2, 0.2])) == 1  # ties: lowest index
    assert global_best_index(np.full(3, np.inf)) == 0


def test_initial_velocities():
    opt = PSO(seed=1).setup(3)
    np.testing.assert_array_equal(opt._V, np.zeros((10, 3)))
    np.testing.assert_array_equal(opt._P, opt._X)
    opt = PSO(init_velocity=0.2, seed=1).setup(3)
    assert np.abs(opt._V).max() <= 0.2 and np.abs(opt._V).min() > 0.0


def test_reflect_boundary_keeps_points_inside():
    opt = PSO(boundary="reflect", inertia="none", v_max=None, seed=3).setup(4)
    for _ in range(30):
        U = opt.ask()
        assert U.min() >= 0.0 and U.max() <= 1.0
        opt.tell(U, np.sum((U - 0.9) ** 2, axis=1))


# -- settings ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw, names",
    [
        (dict(swarm_size=0), ("swarm_size", "0")),
        (dict(swarm_size=2.5), ("swarm_size", "2.5")),
        (dict(phi1=-1.0), ("phi1", "-1.0")),
        (dict(inertia="cubic"), ("inertia", "cubic")),
        (dict(max_iter=0), ("max_iter", "0")),
        (dict(v_max=0.0), ("v_max", "0.0")),
        (dict(v_max=1.5), ("v_max", "1.5")),
        (dict(init_velocity=-0.1), ("init_velocity", "-0.1")),
        (dict(boundary="wrap"), ("boundary", "wrap")),
        (dict(w_exponent=0.0), ("w_exponent", "0.0")),
        (dict(constriction="yes"), ("constriction", "yes")),
        (dict(phi1=1.5, phi2=2.0, constriction=True), ("phi1 + phi2", "3.5", "constriction")),
    ],
)
def test_bad_settings_name_setting_and_value(kw, names):
    with pytest.raises(ConfigurationError) as e:
        PSO(**kw)
    for n in names:
        assert n in str(e.value)


def test_phi_below_4_without_constriction_is_allowed():
    assert PSO(phi1=1.0, phi2=1.0).K == 1.0


def test_presets_and_registry():
    p = PSO.kibriya2023(seed=0)
    s = p.settings()
    assert (s["swarm_size"], s["phi1"], s["phi2"], s["inertia"], s["w_max"], s["w_min"], s["max_iter"]) == (
        10,
        2.0,
        2.0,
        "linear",
        0.8,
        0.4,
        50,
    )
    assert p.K == 1.0
    assert PSO.kibriya2023(max_iter=80).max_iter == 80  # overrides pass through
    assert PSO.original().inertia == "none" and not PSO.original().constriction
    assert PSO.constricted().K == pytest.approx(K41)
    assert get_optimizer("pso") is PSO
    assert make_optimizer("pso", "kibriya2023", seed=1).max_iter == 50
    assert PSO(seed=2).copy(swarm_size=4).settings() == {**PSO(seed=2).settings(), "swarm_size": 4}


# -- behaviour --------------------------------------------------------------------------------------------
def _sphere_best(opt, dim, budget, centre):
    opt.setup(dim)
    best, n = np.inf, 0
    while n < budget:
        U = opt.ask()
        f = np.sum((U - centre) ** 2, axis=1)
        opt.tell(U, f)
        n += len(U)
        best = min(best, f.min())
    return best, n


@pytest.mark.parametrize("seed", range(5))
def test_paper_preset_converges_on_3d_sphere(seed):
    """Paper preset (10 particles, 50-iteration schedule): 1e-6 within 600 evaluations (60 batches).
    Seeds 0-19 need 370-570 evaluations."""
    best, n = _sphere_best(PSO.kibriya2023(seed=seed), 3, 600, np.array([0.3, 0.6, 0.45]))
    assert n == 600
    assert best <= 1e-6


@pytest.mark.parametrize(
    "make",
    [PSO.original, PSO.constricted, lambda seed: PSO(inertia="nonlinear", seed=seed)],
)
def test_other_variants_make_progress(make):
    best, _ = _sphere_best(make(seed=0), 3, 500, np.array([0.3, 0.6, 0.45]))
    assert best < 1e-3
