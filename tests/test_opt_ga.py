"""GA (Kibriya et al. (2023) section 3.1, ``geneticalgorithm`` rules): kernels by hand, batch bookkeeping, quality."""

from __future__ import annotations

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.errors import ConfigurationError
from mechcalib.optimizers import GA, get_optimizer
from mechcalib.optimizers.ga import (
    between_parents_bounds,
    random_reset,
    roulette_select,
    selection_probabilities,
    uniform_crossover,
)


def _sphere(U):
    return np.sum((U - 0.3) ** 2, axis=1)


# -- selection ---------------------------------------------------------------------------------------
def test_selection_probabilities_four_members_by_hand():
    # w = max(f) - f + 1 = [3, 5, 4, 1], sum 13
    p = selection_probabilities(np.array([3.0, 1.0, 2.0, 5.0]))
    np.testing.assert_allclose(p, [3 / 13, 5 / 13, 4 / 13, 1 / 13])


def test_selection_probabilities_negative_losses_shifted():
    # shifted by |min| = 1: [0, 1, 2, 3]; w = [4, 3, 2, 1] / 10
    np.testing.assert_allclose(selection_probabilities(np.array([-1.0, 0.0, 1.0, 2.0])), [0.4, 0.3, 0.2, 0.1])


def test_selection_probabilities_inf_gets_zero_and_all_inf_is_uniform():
    # finite [3, 1, 5]: w = [3, 5, 1] / 9; the failed member gets 0
    np.testing.assert_allclose(selection_probabilities(np.array([3.0, 1.0, np.inf, 5.0])), [3 / 9, 5 / 9, 0, 1 / 9])
    np.testing.assert_allclose(selection_probabilities(np.full(4, np.inf)), [0.25] * 4)


def test_roulette_select_by_hand():
    p = np.array([0.25, 0.0, 0.5, 0.25])  # cumulative [0.25, 0.25, 0.75, 1.0]
    u = np.array([0.0, 0.2499, 0.25, 0.74, 0.75, 0.999])
    np.testing.assert_array_equal(roulette_select(p, u), [0, 0, 2, 2, 3, 3])
    # a total rounded below 1 never selects a trailing zero-probability member
    np.testing.assert_array_equal(roulette_select(np.array([0.3, 0.3, 0.3999999, 0.0]), np.array([0.99999995])), [2])


# -- crossover and mutation -------------------------------------------------------------------------
def test_uniform_crossover_complementary_by_hand():
    p1 = np.array([[0.1, 0.2, 0.3, 0.4]])
    p2 = np.array([[0.9, 0.8, 0.7, 0.6]])
    c1, c2 = uniform_crossover(p1, p2, np.array([[True, False, True, False]]))
    np.testing.assert_array_equal(c1, [[0.9, 0.2, 0.7, 0.4]])
    np.testing.assert_array_equal(c2, [[0.1, 0.8, 0.3, 0.6]])


def test_uniform_crossover_genes_come_from_either_parent():
    rng = np.random.default_rng(0)
    p1, p2 = rng.random((50, 6)), rng.random((50, 6))
    swap = rng.random((50, 6)) < 0.5
    c1, c2 = uniform_crossover(p1, p2, swap)
    np.testing.assert_array_equal(np.minimum(c1, c2), np.minimum(p1, p2))
    np.testing.assert_array_equal(np.maximum(c1, c2), np.maximum(p1, p2))
    assert np.array_equal(c1 == p2, swap | (p1 == p2))


def test_random_reset_by_hand():
    x = np.array([[0.1, 0.2, 0.3]])
    out = random_reset(x, np.array([[False, True, False]]), 0.0, 1.0, np.array([[0.9, 0.25, 0.5]]))
    np.testing.assert_allclose(out, [[0.1, 0.25, 0.3]])


def test_second_child_reset_between_parents_by_hand():
    p1 = np.array([[0.2, 0.5, 0.4]])
    p2 = np.array([[0.6, 0.5, 0.1]])
    lo, hi = between_parents_bounds(p1, p2)
    np.testing.assert_allclose(lo, [[0.2, 0.0, 0.1]])  # equal genes -> whole range
    np.testing.assert_allclose(hi, [[0.6, 1.0, 0.4]])
    out = random_reset(np.zeros((1, 3)), np.ones((1, 3), bool), lo, hi, np.array([[0.5, 0.25, 1 / 3]]))
    np.testing.assert_allclose(out, [[0.4, 0.25, 0.2]])


# -- sizes, presets, bookkeeping --------------------------------------------------------------------
def test_library_size_rules():
    g = GA.kibriya2023()
    assert (g.pop_size, g.n_elite, g.n_parents, g.n_offspring) == (10, 1, 4, 6)
    assert GA(pop_size=11).n_parents == 3 and GA(pop_size=11).n_offspring == 8
    assert GA(pop_size=20).n_elite == 1 and GA(pop_size=200).n_elite == 2
    assert GA.kibriya2023(pop_size=20).settings()["pop_size"] == 20
    assert GA.kibriya2023(seed=1).settings() == GA(seed=1).settings()


@pytest.mark.parametrize(
    "kw",
    [
        dict(parents_portion=0.0),
        dict(pop_size=4, parents_portion=0.9),
        dict(mating_probability=0.0),
        dict(mutation="gauss"),
        dict(pop_size=2),
    ],
)
def test_bad_settings_are_rejected(kw):
    with pytest.raises(ConfigurationError):
        GA(**kw)


def test_batches_parents_kept_with_known_losses_and_elitism():
    opt = GA(seed=3).setup(3)
    sizes, best_in_pop = [], []
    for _ in range(15):
        assert opt.next_batch_size == (10 if opt.n_tells == 0 else 6)
        U = opt.ask()
        sizes.append(len(U))
        if opt.n_tells > 0:
            parents, parent_f = opt._parents.copy(), opt._parent_f.copy()
        opt.tell(U, _sphere(U))
        if opt.n_tells > 1:
            # the new population is the parents (losses kept, not re-evaluated) plus the told offspring
            np.testing.assert_array_equal(opt._pop[:4], parents)
            np.testing.assert_array_equal(opt._fit[:4], parent_f)
            np.testing.assert_array_equal(opt._fit[:4], _sphere(parents))
            np.testing.assert_array_equal(opt._pop[4:], U)
        best_in_pop.append(opt._fit.min())
    assert sizes == [10] + [6] * 14
    assert opt.n_evals == 10 + 6 * 14
    assert np.all(np.diff(best_in_pop) <= 0)  # the elite survives
    assert best_in_pop[-1] == opt.best_f


def test_offspring_pairs_are_complementary_without_mutation():
    opt = GA(seed=1, mutation_probability=0.0).setup(4)
    U = opt.ask()
    opt.tell(U, _sphere(U))
    kids = opt.ask()
    c1, c2 = kids[0::2], kids[1::2]
    # each pair's genes are a permutation of two parents' genes, which are population members
    pop = opt._parents
    for a, b in zip(c1, c2, strict=True):
        pair_sum = a + b
        assert any(np.allclose(pair_sum, p + q) for p in pop for q in pop)


def test_all_failed_generation_keeps_going():
    opt = GA(seed=0).setup(2)
    for _ in range(4):
        U = opt.ask()
        opt.tell(U, np.full(len(U), np.inf))
    U = opt.ask()
    assert U.shape == (6, 2) and np.all(np.isfinite(U))


# -- quality --------------------------------------------------------------------------------------
def test_ga_beats_random_search_on_3d_sphere():
    """Median best loss over 7 seeds at 1000 evaluations: GA at most a quarter of random search's."""
    budget, seeds = 1000, range(7)
    ga = [mc.minimize(_sphere, [0] * 3, [1] * 3, GA.kibriya2023(seed=s), max_evals=budget).best_loss for s in seeds]
    rs = [
        mc.minimize(_sphere, [0] * 3, [1] * 3, get_optimizer("random")(seed=s), max_evals=budget).best_loss
        for s in seeds
    ]
    assert np.median(ga) < 0.25 * np.median(rs)
    assert np.median(ga) < 1e-3
