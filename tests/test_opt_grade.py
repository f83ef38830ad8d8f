"""GRADE (Mareš et al. (2016)): kernels by hand, sizes, coefficient conventions, quality, validation."""

from __future__ import annotations

import numpy as np
import pytest

from mechcalib.errors import ConfigurationError
from mechcalib.optimizers import get_optimizer, make_optimizer
from mechcalib.optimizers.grade import GRADE, cross, mutate, tournament_select


# -- kernels ------------------------------------------------------------------------------------------
def test_mutate_moves_towards_the_random_point():
    P = np.array([[0.2, 0.8], [0.5, 0.5]])
    R = np.array([[0.6, 0.0], [0.1, 0.9]])
    O = mutate(P, R, np.array([0.5, 1.5]))
    # 0.2 + 0.5*(0.6-0.2) = 0.4, 0.8 + 0.5*(0.0-0.8) = 0.4; 0.5 + 1.5*(0.1-0.5) = -0.1, 0.5 + 1.5*0.4 = 1.1
    np.testing.assert_allclose(O, [[0.4, 0.4], [-0.1, 1.1]])


@pytest.mark.parametrize(
    "limit_on, expected",
    [
        # published: CR = 2 * u = 0.5 -> [0.2, 0.4] + 0.5 * ([0.2, 0.4] - [0.5, 0.3]) = [0.05, 0.45]
        ("cross", [0.05, 0.45]),
        # C++ source: CR = 1 * u = 0.25 -> [0.2, 0.4] + 0.25 * [-0.3, 0.1] = [0.125, 0.425]
        ("mutate", [0.125, 0.425]),
    ],
)
def test_cross_child_for_both_conventions(limit_on, expected):
    u = 0.25  # the fixed random number behind CR
    _, cr_max = GRADE(limit_on=limit_on)._coefficient_limits()
    Xa, Xb = np.array([[0.2, 0.4]]), np.array([[0.5, 0.3]])
    # a is better (loss 1 < 2); the order of the pair must not matter
    np.testing.assert_allclose(cross(Xa, [1.0], Xb, [2.0], [u * cr_max]), [expected])
    np.testing.assert_allclose(cross(Xb, [2.0], Xa, [1.0], [u * cr_max]), [expected])


def test_cross_tie_and_failed_parents():
    Xa, Xb = np.array([[0.2, 0.4]]), np.array([[0.5, 0.3]])
    # tie: b counts as the better parent -> 0.5 + 1.0*(0.5-0.2) = 0.8, 0.3 + 1.0*(0.3-0.4) = 0.2
    np.testing.assert_allclose(cross(Xa, [1.0], Xb, [1.0], [1.0]), [[0.8, 0.2]])
    # a failed (+inf) parent is the worse one; two failed parents still give finite children
    np.testing.assert_allclose(cross(Xa, [np.inf], Xb, [3.0], [1.0]), [[0.8, 0.2]])
    assert np.all(np.isfinite(cross(Xa, [np.inf], Xb, [np.inf], [1.0])))


def test_tournament_select_by_hand():
    f = np.array([5.0, 2.0, 9.0, 1.0])
    # removal 1: n=4, i1=floor(.6*4)=2, i2=floor(.9*3)=2 -> 3; f[2]=9 > f[3]=1 so 2 dies, 3 fills the hole
    # removal 2: n=3, alive=[0,1,3]; i1=floor(.1*3)=0, i2=floor(.5*2)=1 -> 2 (member 3); 5 > 1 so 0 dies
    keep = tournament_select(f, 2, np.array([0.6, 0.1]), np.array([0.9, 0.5]))
    np.testing.assert_array_equal(keep, [3, 1])


def test_tournament_keeps_the_better_of_a_pair():
    for u1, u2 in [(0.0, 0.0), (0.99, 0.99), (0.4, 0.7)]:
        assert tournament_select(np.array([3.0, 1.0]), 1, [u1], [u2]).tolist() == [1]
        assert tournament_select(np.array([1.0, 3.0]), 1, [u1], [u2]).tolist() == [0]
        assert tournament_select(np.array([np.inf, 1.0]), 1, [u1], [u2]).tolist() == [1]


def test_tournament_always_keeps_the_best():
    rng = np.random.default_rng(0)
    for _ in range(50):
        f = rng.random(40)
        keep = tournament_select(f, 20, rng.random(20), rng.random(20))
        assert len(set(keep.tolist())) == 20
        assert f[keep].min() == f.min()


# -- sizes and the ask/tell mapping -----------------------------------------------------------------------
def test_population_and_pool_sizes_dim4():
    opt = GRADE(pool_rate=25, seed=0).setup(4)
    assert opt.population_size == 100 and opt.pool_size == 200
    for _ in range(4):
        assert opt.next_batch_size == 100
        U = opt.ask()
        assert U.shape == (100, 4)
        opt.tell(U, np.sum(U**2, axis=1))
        assert opt._X.shape == (100, 4) and opt._f.shape == (100,)
    assert opt.n_evals == 400 and opt._generation == 3


def test_parents_best_is_never_lost_and_matches_best_f():
    opt = GRADE(seed=3).setup(3)
    prev = np.inf
    for _ in range(15):
        U = opt.ask()
        opt.tell(U, np.sum((U - 0.3) ** 2, axis=1))
        assert opt._f.min() <= prev
        assert opt._f.min() == opt.best_f
        prev = opt._f.min()


@pytest.mark.parametrize("limit_on, cr_max", [("cross", 2.0), ("mutate", 1.0)])
def test_crossover_coefficients_follow_the_convention(limit_on, cr_max):
    """Two parents 0.5 (better) and 0.45: every child is 0.5 + CR*0.05, so CR = (child - 0.5)/0.05."""
    crs = []
    for seed in range(100):
        opt = GRADE(pool_rate=2, radioactivity=0.0, limit_on=limit_on, seed=seed).setup(1)
        U = opt.ask()
        opt.tell(U, U[:, 0])
        opt._X, opt._f = np.array([[0.5], [0.45]]), np.array([0.0, 1.0])
        crs.extend(((opt.ask()[:, 0] - 0.5) / 0.05).tolist())
    crs = np.array(crs)
    assert crs.min() >= 0.0 and crs.max() <= cr_max + 1e-9
    assert crs.max() > 0.95 * cr_max  # 200 uniform draws reach the top of the range


def test_radioactivity_one_gives_only_mutants_inside_the_cube():
    opt = GRADE(pool_rate=5, radioactivity=1.0, limit_on="cross", seed=1).setup(3)
    U = opt.ask()
    opt.tell(U, np.sum(U**2, axis=1))
    children = opt.ask()
    assert children.shape == (15, 3)
    # published convention: MR in [0, 1], so a mutant is on the segment parent -> random point
    assert np.all((children >= 0) & (children <= 1))


# -- quality --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("limit_on", ["cross", "mutate"])
@pytest.mark.parametrize("seed", range(5))
def test_reaches_1e6_on_3d_sphere_within_8000_evaluations(limit_on, seed):
    """Paper settings (pool_rate 25: 75 points per generation). Measured over seeds 0-19: at most
    5700 evaluations ("cross") and 3300 ("mutate") to reach 1e-6."""
    opt = GRADE.mares2016(seed=seed, limit_on=limit_on).setup(3)
    while opt.n_evals < 8000 and opt.best_f > 1e-6:
        U = opt.ask()
        opt.tell(U, np.sum((U - 0.3) ** 2, axis=1))
    assert opt.best_f <= 1e-6
    np.testing.assert_allclose(opt.best_x, 0.3, atol=2e-3)


# -- settings, presets, validation ------------------------------------------------------------------------
def test_presets_and_registry():
    p = GRADE.mares2016(seed=1)
    assert p.settings() == dict(pool_rate=25, radioactivity=0.05, cross_limit=2.0, limit_on="cross", seed=1)
    assert GRADE.mares2016(pool_rate=10).pool_rate == 10
    assert GRADE.tight_budget().pool_rate == 5
    assert get_optimizer("grade") is GRADE
    assert make_optimizer("grade", "mares2016", seed=2).settings()["seed"] == 2
    assert GRADE().settings() == dict(pool_rate=25, radioactivity=0.05, cross_limit=2.0, limit_on="cross", seed=None)


@pytest.mark.parametrize(
    "kw, words",
    [
        (dict(pool_rate=1), "pool_rate must be an integer >= 2"),
        (dict(pool_rate=2.5), "pool_rate"),
        (dict(pool_rate=True), "pool_rate"),
        (dict(radioactivity=-0.1), "radioactivity must lie in [0.0, 1.0]"),
        (dict(radioactivity=1.5), "radioactivity"),
        (dict(cross_limit=0.0), "cross_limit must lie in (0.0, inf)"),
        (dict(cross_limit=float("inf")), "cross_limit"),
        (dict(cross_limit=float("nan")), "cross_limit"),
        (dict(cross_limit="two"), "cross_limit must be a number"),
        (dict(limit_on="both"), "limit_on must be one of ['cross', 'mutate']"),
    ],
)
def test_bad_settings_say_rule_and_value(kw, words):
    with pytest.raises(ConfigurationError) as e:
        GRADE(**kw)
    assert words in str(e.value)
    assert "got" in str(e.value)


def test_population_size_needs_setup():
    with pytest.raises(ConfigurationError, match="setup"):
        GRADE().population_size
