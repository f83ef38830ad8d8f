"""TBPSO (Kibriya et al. (2023) eqs. 11-15): one step computed by hand on three particles in 2-D, the class's
threading of state (trust updated after the personal bests), trust growth and its cap, settings,
presets and convergence."""

from __future__ import annotations

import numpy as np
import pytest

from mechcalib.errors import ConfigurationError
from mechcalib.optimizers import get_optimizer
from mechcalib.optimizers.pso import PSO
from mechcalib.optimizers.tbpso import (
    TBPSO,
    position_differences,
    relative_distances,
    tbpso_velocity,
    trust_component,
    update_trust,
)


class FixedRandom:
    """Stands in for the generator: ``random(shape)`` returns the given arrays in order."""

    def __init__(self, *arrays):
        self.arrays = [np.asarray(a, dtype=float) for a in arrays]

    def random(self, shape):
        a = self.arrays.pop(0)
        assert a.shape == tuple(shape)
        return a.copy()


# The hand example. Current positions x_k:
#   x1 = (0.1, 0.2), x2 = (0.4, 0.6), x3 = (0.7, 0.2)
# Distances: d12 = |(0.3, 0.4)| = 0.5, d13 = |(0.6, 0)| = 0.6, d23 = |(0.3, -0.4)| = 0.5.
X = np.array([[0.1, 0.2], [0.4, 0.6], [0.7, 0.2]])
# eq. 11, row sums 1.1, 1.0, 1.1:
D_REL = np.array([[0.0, 5 / 11, 6 / 11], [0.5, 0.0, 0.5], [6 / 11, 5 / 11, 0.0]])

# Losses. Before this step the personal bests were fP = (3, 3.5, 1); now f(x) = (4, 2, 1.5):
#   particle 1 does not improve (4 > 3), particle 2 does (2 < 3.5: p2 = x2), particle 3 does not (1.5 > 1).
# After the update (the bests eq. 12 uses) fP = (3, 2, 1): competence order 3 > 2 > 1.
FP_BEFORE = np.array([3.0, 3.5, 1.0])
F_NOW = np.array([4.0, 2.0, 1.5])
FP_AFTER = np.array([3.0, 2.0, 1.0])
C_PREV = np.array([[0.0, 2.0, 3.0], [7.0, 0.0, -1.0], [5.0, 4.0, 0.0]])
# eq. 12, pair by pair (i trusts j):
#   C11, C22, C33: fP_i <= fP_i                                  -> 0
#   C12: fP1 = 3 > fP2 = 2 and f(x2) = 2 <= fP2 = 2 (improved)   -> C12 + 1 = 3
#   C13: fP1 = 3 > fP3 = 1 and f(x3) = 1.5 > fP3 = 1             -> C13 - 1 = 2
#   C21: fP2 = 2 <= fP1 = 3                                      -> 0  (was 7)
#   C23: fP2 = 2 > fP3 = 1 and f(x3) > fP3                       -> C23 - 1 = -2
#   C31, C32: fP3 = 1 <= fP1, fP2                                -> 0  (were 5, 4)
C_NEW = np.array([[0.0, 3.0, 2.0], [0.0, 0.0, -2.0], [0.0, 0.0, 0.0]])
# Had eq. 12 used the bests before the update (3, 3.5, 1), particle 1 (3) would not trust particle 2
# (3.5) and C12 would be 0: the class test below pins the "after" order.

# eq. 13 "toward" (x_j - x_i) and eq. 14, T_i = sum_j d_rel_ij C_ij dX_ij:
#   T1 = (5/11) 3 (0.3, 0.4) + (6/11) 2 (0.6, 0) = (4.5/11 + 7.2/11, 6/11) = (11.7/11, 6/11)
#   T2 = 0.5 (-2) (x3 - x2) = -(0.3, -0.4) = (-0.3, 0.4)
#   T3 = 0 (trusts nobody)
T_TOWARD = np.array([[11.7 / 11, 6 / 11], [-0.3, 0.4], [0.0, 0.0]])
# eq. 13 as printed ("away", x_i - x_j) flips every difference and so T.
T_AWAY = -T_TOWARD

# eq. 15 with phi1, phi2, phi3 = 1, 1, 2, K = 1, w = 0.6 (linear 0.8 -> 0.4 at k = k_max / 2):
V = np.array([[0.1, -0.1], [0.0, 0.2], [-0.05, 0.0]])
P = np.array([[0.2, 0.3], [0.4, 0.6], [0.6, 0.3]])  # p2 = x2 (just improved); g = p3 = (0.6, 0.3)
P_BEFORE = np.array([[0.2, 0.3], [0.9, 0.9], [0.6, 0.3]])
R1 = np.array([[0.5, 0.25], [1.0, 0.5], [0.2, 0.4]])
R2 = np.array([[0.5, 0.5], [0.25, 0.75], [0.6, 0.1]])
R3 = np.array([[0.5, 1.0], [0.5, 0.25], [0.3, 0.9]])
# particle 1: w V = (0.06, -0.06); R1 (p1 - x1) = (0.5, 0.25)(0.1, 0.1) = (0.05, 0.025);
#             R2 (g - x1) = (0.5, 0.5)(0.5, 0.1) = (0.25, 0.05); 2 R3 T1 = (11.7/11, 12/11)
#             toward: (0.36 + 11.7/11, 0.015 + 12/11) = (15.66/11, 12.165/11) = (1.423636.., 1.105909..)
#             away:   (0.36 - 11.7/11, 0.015 - 12/11) = (-7.74/11, -11.835/11) = (-0.703636.., -1.075909..)
# particle 2: w V = (0, 0.12); R1 (p2 - x2) = 0; R2 (g - x2) = (0.25, 0.75)(0.2, -0.3) = (0.05, -0.225);
#             2 R3 T2: toward (1, 0.5)(-0.3, 0.4) = (-0.3, 0.2) -> (-0.25, 0.095)
#                      away (0.3, -0.2)                         -> (0.35, -0.305)
# particle 3: w V = (-0.03, 0); R1 (p3 - x3) = (0.2, 0.4)(-0.1, 0.1) = (-0.02, 0.04);
#             R2 (g - x3) = (0.6, 0.1)(-0.1, 0.1) = (-0.06, 0.01); T3 = 0 -> (-0.11, 0.05)
V_TOWARD = np.array([[15.66 / 11, 12.165 / 11], [-0.25, 0.095], [-0.11, 0.05]])
V_AWAY = np.array([[-7.74 / 11, -11.835 / 11], [0.35, -0.305], [-0.11, 0.05]])


def test_relative_distances_eq11():
    np.testing.assert_allclose(relative_distances(X), D_REL, atol=1e-14)


def test_relative_distances_guard_zero_sums():
    same = np.full((3, 2), 0.4)
    np.testing.assert_array_equal(relative_distances(same), np.zeros((3, 3)))
    two_same = np.array([[0.1, 0.1], [0.1, 0.1], [0.4, 0.5]])
    D = relative_distances(two_same)
    assert np.all(np.isfinite(D))
    np.testing.assert_allclose(D[0], [0.0, 0.0, 1.0])
    np.testing.assert_allclose(D[2], [0.5, 0.5, 0.0])


def test_trust_update_eq12_every_branch():
    np.testing.assert_array_equal(update_trust(C_PREV, FP_AFTER, F_NOW), C_NEW)


def test_trust_update_with_failed_evaluations():
    # fP = (inf, 1, inf): the failed particles trust particle 2, which did not improve (2 > 1) -> -1;
    # two +inf bests compare as equal -> 0. No NaN.
    C = update_trust(np.zeros((3, 3)), np.array([np.inf, 1.0, np.inf]), np.array([np.inf, 2.0, np.inf]))
    np.testing.assert_array_equal(C, [[0, -1, 0], [0, 0, 0], [0, -1, 0]])


def test_trust_limit_clips():
    np.testing.assert_array_equal(update_trust(C_PREV, FP_AFTER, F_NOW, limit=1.0), [[0, 1, 1], [0, 0, -1], [0, 0, 0]])


def test_position_differences_eq13_both_directions():
    dX = position_differences(X, "toward")
    assert dX.shape == (3, 3, 2)
    np.testing.assert_allclose(dX[0, 1], [0.3, 0.4])  # x2 - x1
    np.testing.assert_allclose(dX[1, 2], [0.3, -0.4])  # x3 - x2
    np.testing.assert_allclose(position_differences(X, "away")[0, 1], [-0.3, -0.4])  # x1 - x2 (printed)
    np.testing.assert_array_equal(position_differences(X, "away"), -dX)
    with pytest.raises(ConfigurationError, match="trust_direction"):
        position_differences(X, "sideways")


@pytest.mark.parametrize("direction, T", [("toward", T_TOWARD), ("away", T_AWAY)])
def test_trust_component_eq14(direction, T):
    got = trust_component(D_REL, C_NEW, position_differences(X, direction))
    np.testing.assert_allclose(got, T, atol=1e-14)


@pytest.mark.parametrize("T, expected", [(T_TOWARD, V_TOWARD), (T_AWAY, V_AWAY)])
def test_velocity_eq15(T, expected):
    got = tbpso_velocity(V, X, P, P[2], T, R1, R2, R3, 1.0, 1.0, 2.0, w=0.6, K=1.0)
    np.testing.assert_allclose(got, expected, atol=1e-14)
    # K multiplies every term
    got_half = tbpso_velocity(V, X, P, P[2], T, R1, R2, R3, 1.0, 1.0, 2.0, w=0.6, K=0.5)
    np.testing.assert_allclose(got_half, 0.5 * expected, atol=1e-14)


@pytest.mark.parametrize(
    "direction, V_new, X_new",
    [
        # toward: V1 = (1.42, 1.11) is clamped to (0.5, 0.5) -> x1 = (0.6, 0.7); x2 = (0.15, 0.695);
        # x3 = (0.59, 0.25)
        ("toward", [[0.5, 0.5], [-0.25, 0.095], [-0.11, 0.05]], [[0.6, 0.7], [0.15, 0.695], [0.59, 0.25]]),
        # away: V1 = (-0.70, -1.08) -> (-0.5, -0.5) -> x1 + v1 = (-0.4, -0.3) leaves the cube: x1 = (0, 0),
        # v1 = (0, 0); x2 = (0.75, 0.295)
        ("away", [[0.0, 0.0], [0.35, -0.305], [-0.11, 0.05]], [[0.0, 0.0], [0.75, 0.295], [0.59, 0.25]]),
    ],
)
def test_class_step_by_hand(direction, V_new, X_new):
    """One TBPSO step through ask/tell: bests updated first, then eq. 12 (with C_PREV), 11, 13, 14, 15,
    the velocity clamp (0.5) and the walls."""
    opt = TBPSO.kibriya2023(max_iter=50, v_max=0.5, trust_direction=direction, seed=0).setup(2)
    assert opt.K == 1.0  # eq. 8 at phi = 1 + 1 + 2 = 4
    opt._X, opt._V, opt._P, opt._fP, opt._C, opt._k = (
        X.copy(),
        V.copy(),
        P_BEFORE.copy(),
        FP_BEFORE.copy(),
        C_PREV.copy(),
        25,
    )
    opt.rng = FixedRandom(R1, R2, R3)
    U = opt.ask()
    opt.tell(U, F_NOW)
    np.testing.assert_allclose(opt._P, P)
    np.testing.assert_allclose(opt._fP, FP_AFTER)
    np.testing.assert_array_equal(opt._C, C_NEW)  # C12 = 3: trust uses the bests after the update
    assert opt._g == 2
    np.testing.assert_allclose(opt._V, V_new, atol=1e-12)
    np.testing.assert_allclose(opt.ask(), X_new, atol=1e-12)


def test_first_step_trust_ranks_by_first_losses():
    """After the first batch p_0 = x_0: everyone just 'improved', so i trusts every better j with +1."""
    opt = TBPSO(seed=0, swarm_size=4).setup(2)
    U = opt.ask()
    f = np.array([3.0, 1.0, 2.0, 4.0])
    opt.tell(U, f)
    better = (f[:, None] > f[None, :]).astype(float)
    np.testing.assert_array_equal(opt._C, better)


def test_tbpso_shares_the_swarm_machinery_with_pso():
    from mechcalib.optimizers.pso import SwarmOptimizer

    assert issubclass(TBPSO, SwarmOptimizer) and issubclass(PSO, SwarmOptimizer)
    assert not issubclass(TBPSO, PSO)
    # only the velocity (eq. 15) and the trust state differ; bests, move and walls are shared
    assert TBPSO._tell is PSO._tell and TBPSO._ask is PSO._ask
    assert TBPSO._velocity is not PSO._velocity


def test_tbpso_settings_do_not_depend_on_attribute_order():
    # the constriction check reads phi3; it runs after every weight is set, whatever the order
    with pytest.raises(ConfigurationError, match="phi1 \\+ phi2 \\+ phi3"):
        TBPSO(phi1=0.5, phi2=0.5, phi3=0.5, constriction=True)
    opt = TBPSO(phi1=1.0, phi2=1.0, phi3=2.0, constriction=True)
    assert opt.K == pytest.approx(1.0) and opt.copy().settings() == opt.settings()


# -- trust growth ----------------------------------------------------------------------------------------
def _run_sphere(opt, dim, budget, centre):
    opt.setup(dim)
    best, n, cmax = np.inf, 0, 0.0
    while n < budget:
        U = opt.ask()
        f = np.sum((U - centre) ** 2, axis=1)
        opt.tell(U, f)
        n += len(U)
        best = min(best, f.min())
        cmax = max(cmax, np.abs(opt._C).max())
    return best, cmax


def test_printed_trust_grows_with_the_steps_and_the_limit_bounds_it():
    centre = np.array([0.3, 0.6, 0.45])
    _, cmax = _run_sphere(TBPSO.kibriya2023(seed=0), 3, 1000, centre)  # 99 trust updates
    assert cmax >= 50
    _, cmax = _run_sphere(TBPSO.kibriya2023(seed=0, trust_limit=1.0), 3, 1000, centre)
    assert cmax == 1.0


# -- settings and presets ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw, names",
    [
        (dict(swarm_size=0), ("swarm_size", "0")),
        (dict(phi3=-2.0), ("phi3", "-2.0")),
        (dict(trust_direction="sideways"), ("trust_direction", "sideways")),
        (dict(trust_limit=0.0), ("trust_limit", "0.0")),
        (dict(phi1=1.0, phi2=1.0, phi3=1.0, constriction=True), ("phi1 + phi2 + phi3", "3.0", "constriction")),
    ],
)
def test_bad_settings_name_setting_and_value(kw, names):
    with pytest.raises(ConfigurationError) as e:
        TBPSO(**kw)
    for n in names:
        assert n in str(e.value)


def test_presets_and_defaults():
    p = TBPSO.kibriya2023(seed=0)
    s = p.settings()
    assert (s["swarm_size"], s["phi1"], s["phi2"], s["phi3"], s["inertia"], s["w_max"], s["w_min"]) == (
        10,
        1.0,
        1.0,
        2.0,
        "linear",
        0.8,
        0.4,
    )
    # eq. 13 as printed ("away"): the better direction on benchmarks/optimizers.py; "toward" stays available
    assert (s["max_iter"], s["constriction"], s["trust_direction"], s["trust_limit"]) == (20, True, "away", None)
    assert p.K == 1.0
    toward = TBPSO.kibriya2023(trust_direction="toward", seed=0)
    assert toward.trust_direction == "toward"
    assert {k: v for k, v in toward.settings().items() if k != "trust_direction"} == {
        k: v for k, v in s.items() if k != "trust_direction"
    }
    d = TBPSO()
    assert (d.phi1, d.phi2, d.phi3, d.trust_limit, d.trust_direction) == (1.0, 1.0, 2.0, 1.0, "toward")
    assert get_optimizer("tbpso") is TBPSO
    assert TBPSO(seed=1).copy().settings() == TBPSO(seed=1).settings()
    # constriction with phi = 4.1 from the three weights
    assert TBPSO(phi1=1.0, phi2=1.1, phi3=2.0, constriction=True).K == pytest.approx(0.7298437881, abs=1e-9)


# -- behaviour ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("direction, budget", [("toward", 400), ("away", 700)])
def test_capped_trust_converges_on_3d_sphere(direction, budget, seed):
    """Paper weights with trust_limit=1: 1e-6 within the budget (seeds 0-19 need 180-350 evaluations
    with "toward", 210-660 with "away")."""
    opt = TBPSO.kibriya2023(seed=seed, trust_limit=1.0, trust_direction=direction)
    best, _ = _run_sphere(opt, 3, budget, np.array([0.3, 0.6, 0.45]))
    assert best <= 1e-6


@pytest.mark.parametrize("direction", ["toward", "away"])
def test_paper_preset_within_its_budget(direction):
    """The printed rule at the paper's budget (20 iterations, 210 evaluations): every one of 10 seeds
    is below 1e-2 on the 3-D sphere (measured: 2.0e-6 to 4.4e-3 "toward", 8.5e-7 to 3.8e-3 "away")."""
    centre = np.array([0.3, 0.6, 0.45])
    bests = [_run_sphere(TBPSO.kibriya2023(seed=s, trust_direction=direction), 3, 210, centre)[0] for s in range(10)]
    assert max(bests) < 1e-2
