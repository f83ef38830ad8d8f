"""Bird mating optimiser (Askarzadeh 2014): the brood equations by hand, groups, schedule, batches, quality."""

from __future__ import annotations

import numpy as np
import pytest

from mechcalib.errors import ConfigurationError
from mechcalib.optimizers import BMO, get_optimizer
from mechcalib.optimizers.bmo import (
    bmo_weight,
    group_sizes,
    logistic_map,
    mating_broods,
    parthenogenetic_broods,
    reset_one_coordinate,
)


def test_mating_broods_by_hand():
    X = np.array([[0.2, 0.4], [0.5, 0.5]])
    # bird 0, monogamous-like with one mate; bird 1 with two mates
    mates = np.array([[[0.6, 0.0], [0.2, 0.4]], [[1.0, 0.0], [0.0, 1.0]]])
    r = np.array([[[0.5, 0.25], [0.0, 0.0]], [[0.2, 0.4], [0.6, 0.8]]])
    B = mating_broods(X, mates, r, w=2.0)
    # bird 0: 0.2 + 2 (0.5 * 0.4) = 0.6; 0.4 + 2 (0.25 * -0.4) = 0.2 (second mate is itself: no move)
    # bird 1: 0.5 + 2 (0.2 * 0.5 + 0.6 * -0.5) = 0.1; 0.5 + 2 (0.4 * -0.5 + 0.8 * 0.5) = 0.9
    np.testing.assert_allclose(B, [[0.6, 0.2], [0.1, 0.9]])


def test_mutation_and_parthenogenesis_by_hand():
    B = np.array([[0.2, 0.4], [0.5, 0.5]])
    out = reset_one_coordinate(B, np.array([True, False]), np.array([1, 0]), np.array([0.7, 0.9]))
    np.testing.assert_allclose(out, [[0.2, 0.7], [0.5, 0.5]])  # x_b(c) = 0 - 0.7 (0 - 1)
    P = parthenogenetic_broods(
        np.array([[0.5, 0.8]]), np.array([[True, False]]), np.array([[0.9, 0.1]]), np.array([[0.4, 0.3]]), mu=0.1
    )
    np.testing.assert_allclose(P, [[0.5 + 0.1 * 0.5 * 0.5, 0.8]])


def test_weight_groups_and_chaos():
    assert bmo_weight(0, 100, 2.5, 0.25) == 2.5
    assert bmo_weight(50, 100, 2.5, 0.25) == pytest.approx(1.375)
    assert bmo_weight(100, 100, 2.5, 0.25) == pytest.approx(0.25)
    assert bmo_weight(7, None, 2.5, 0.25) == 2.5
    assert group_sizes(50, (0.05, 0.05, 0.5, 0.3, 0.1)) == (2, 2, 26, 15, 5)
    assert group_sizes(100, (0.05, 0.05, 0.5, 0.3, 0.1)) == (5, 5, 50, 30, 10)
    np.testing.assert_allclose(logistic_map(np.array([0.1, 0.5])), [0.36, 1.0])


def test_batches_groups_and_greedy_replacement():
    opt = BMO(n_birds=20, seed=3).setup(2)
    sizes = opt.sizes
    assert sizes == (1, 1, 10, 6, 2)
    X0 = opt.ask()
    assert X0.shape == (20, 2)
    f0 = np.sum((X0 - 0.3) ** 2, axis=1)
    opt.tell(X0, f0)
    np.testing.assert_allclose(opt._f, np.sort(f0))  # ranked best first
    assert opt.next_batch_size == 2  # the new promiscuous birds
    P = opt.ask()
    fP = np.sum((P - 0.3) ** 2, axis=1)
    opt.tell(P, fP)
    np.testing.assert_array_equal(opt._X[-2:], P)  # they replace the two worst birds
    before_X, before_f = opt._X.copy(), opt._f.copy()
    assert opt.next_batch_size == 20
    B = opt.ask()
    fB = np.sum((B - 0.3) ** 2, axis=1)
    opt.tell(B, fB)
    kept = np.minimum(before_f, fB)
    np.testing.assert_allclose(np.sort(opt._f), np.sort(kept))
    for x, fx in zip(opt._X, opt._f, strict=True):  # every bird is its old self or its brood
        i = np.flatnonzero(np.isclose(kept, fx))[0]
        assert np.array_equal(x, B[i]) or np.array_equal(x, before_X[i])


def test_schedule_from_the_budget():
    opt = BMO(n_birds=50)
    opt.set_budget(25_000)
    opt.setup(6)
    assert opt._generations() == (25_000 - 50) // 55
    assert BMO(max_generations=10)._generations() == 10


def test_registered_and_settings_checked():
    assert get_optimizer("bmo") is BMO
    with pytest.raises(ConfigurationError):
        BMO(n_birds=5)
    with pytest.raises(ConfigurationError):
        BMO(shares=(0.1, 0.1, 0.5, 0.3, 0.1))
    with pytest.raises(ConfigurationError):
        BMO(shares=(0.0, 0.0, 0.6, 0.3, 0.1))  # no female
    with pytest.raises(ConfigurationError):
        BMO(mcf=1.5)
    assert BMO(mu=0.05).copy(seed=2).mu == 0.05


def test_reaches_the_sphere_minimum():
    opt = BMO(seed=0)
    opt.set_budget(4000)
    opt.setup(3)
    while opt.n_evals < 4000:
        U = opt.ask()
        opt.tell(U, np.sum((U - 0.3) ** 2, axis=1))
    assert opt.best_f < 1e-6
