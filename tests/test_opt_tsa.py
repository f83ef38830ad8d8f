"""Tree-seed algorithm (Kiran 2015): kernels by hand, variable batches, quality."""

from __future__ import annotations

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.errors import ConfigurationError
from mechcalib.optimizers import TSA
from mechcalib.optimizers.tsa import draw_other_trees, replace_by_best_seed, seed_counts, tsa_seeds


def _sphere(U):
    return np.sum((U - 0.3) ** 2, axis=1)


def test_seed_equations_both_branches_by_hand():
    T = np.array([[0.2, 0.4], [0.6, 0.8], [0.5, 0.1]])
    best = T[2]
    S = tsa_seeds(T, best, np.array([0]), np.array([1]), np.array([[0.5, -0.5]]), np.array([[True, False]]))
    # dim 0 (eq. 3, best tree): 0.2 + 0.5 (0.5 - 0.6) = 0.15
    # dim 1 (eq. 4, own tree):  0.4 - 0.5 (0.4 - 0.8) = 0.6
    np.testing.assert_allclose(S, [[0.15, 0.6]])
    # several seeds of different trees at once
    S = tsa_seeds(
        T,
        best,
        np.array([1, 2]),
        np.array([0, 0]),
        np.array([[1.0, 1.0], [-1.0, 0.25]]),
        np.array([[False, True], [True, False]]),
    )
    # tree 1: [0.6 + (0.6 - 0.2), 0.8 + (0.1 - 0.4)]; tree 2: [0.5 - (0.5 - 0.2), 0.1 + 0.25 (0.1 - 0.4)]
    np.testing.assert_allclose(S, [[1.0, 0.5], [0.2, 0.025]])


def test_seed_counts_by_hand():
    # 10 trees: low = ceil(1.0) = 1, high = ceil(2.5) = 3 -> floor(1 + 2u) + 1
    np.testing.assert_array_equal(seed_counts(np.array([0.0, 0.49, 0.5, 0.999]), 1, 3), [2, 2, 3, 3])
    np.testing.assert_array_equal(seed_counts(np.array([0.0, 0.999]), 1, 1), [1, 1])
    assert TSA(n_trees=10).seed_range == (1, 3)
    assert TSA(n_trees=30).seed_range == (3, 8)
    assert TSA(n_trees=4).seed_range == (1, 1)


def test_draw_other_trees_by_hand_and_never_self():
    np.testing.assert_array_equal(draw_other_trees(np.array([0, 0, 2]), np.array([0.0, 0.99, 0.5]), 3), [1, 2, 1])
    rng = np.random.default_rng(0)
    owner = rng.integers(0, 5, 2000)
    r = draw_other_trees(owner, rng.random(2000), 5)
    assert np.all(r != owner) and np.all((r >= 0) & (r < 5))
    assert len(np.unique(r[owner == 0])) == 4


def test_replace_by_best_seed_by_hand():
    T = np.array([[0.1, 0.1], [0.9, 0.9]])
    fT = np.array([1.0, 2.0])
    S = np.array([[0.2, 0.2], [0.3, 0.3], [0.4, 0.4], [0.5, 0.5]])
    owner = np.array([0, 0, 1, 1])
    Tn, fn = replace_by_best_seed(T, fT, S, np.array([1.5, 0.5, np.inf, 2.0]), owner)
    np.testing.assert_array_equal(Tn, [[0.3, 0.3], [0.9, 0.9]])  # tree 1: 2.0 is not strictly better
    np.testing.assert_array_equal(fn, [0.5, 2.0])
    Tn, _ = replace_by_best_seed(T, fT, S, np.array([0.5, 0.5, 1.0, 1.0]), owner)
    np.testing.assert_array_equal(Tn, [[0.2, 0.2], [0.4, 0.4]])  # ties go to the first seed
    np.testing.assert_array_equal(T, [[0.1, 0.1], [0.9, 0.9]])  # inputs untouched


def test_next_batch_size_prepares_the_batch_and_stream_is_unchanged():
    a = TSA(seed=4).setup(3)
    b = TSA(seed=4).setup(3)
    for it in range(8):
        n = a.next_batch_size
        assert n == a.next_batch_size  # idempotent
        if it == 0:
            assert n == 10
        else:
            assert 20 <= n <= 30  # 10 trees x 2..3 seeds
        Ua, Ub = a.ask(), b.ask()  # b never asks for the size first
        assert Ua.shape == (n, 3)
        np.testing.assert_array_equal(Ua, Ub)
        a.tell(Ua, _sphere(Ua))
        b.tell(Ub, _sphere(Ub))


def test_stand_update_in_the_class():
    opt = TSA(seed=0).setup(2)
    U = opt.ask()
    opt.tell(U, _sphere(U))
    T0, f0 = opt._T.copy(), opt._fT.copy()
    S = opt.ask()
    owner = opt._owner.copy()
    fS = _sphere(S)
    opt.tell(S, fS)
    for i in range(10):
        best_seed = fS[owner == i].min()
        assert opt._fT[i] == min(f0[i], best_seed)
    assert np.all(opt._fT <= f0) and not np.array_equal(opt._T, T0)


@pytest.mark.parametrize(
    "kw",
    [
        dict(n_trees=1),
        dict(search_tendency=1.5),
        dict(seed_min_fraction=0.3, seed_max_fraction=0.2),
        dict(seed_max_fraction=0.0),
    ],
)
def test_bad_settings_are_rejected(kw):
    with pytest.raises(ConfigurationError):
        TSA(**kw)


def test_tsa_reaches_1e8_on_3d_sphere_within_1500_evaluations():
    """Defaults (10 trees, ST = 0.1); measured 688-1006 evaluations to 1e-8 over seeds 0-9."""
    term = mc.Termination(max_evals=1500, target=1e-8)
    for s in range(5):
        res = mc.minimize(_sphere, [0] * 3, [1] * 3, TSA(seed=s), term)
        assert res.best_loss <= 1e-8, (s, res.best_loss)
