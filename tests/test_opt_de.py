"""DE/rand/1/bin (Storn & Price 1997): kernels by hand, batch bookkeeping, quality."""

from __future__ import annotations

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.errors import ConfigurationError
from mechcalib.optimizers import DE
from mechcalib.optimizers.de import binomial_crossover, bounce_back, draw_donors, greedy_selection, rand1_mutation


def _sphere(U):
    return np.sum((U - 0.3) ** 2, axis=1)


def test_rand1_mutation_by_hand():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    r = np.array([[1, 2, 3], [3, 0, 2], [0, 1, 3], [2, 1, 0]])
    V = rand1_mutation(X, r, 0.5)
    # v0 = x1 + 0.5 (x2 - x3) = [1, 0] + 0.5 [-0.5, 0.5]
    np.testing.assert_allclose(V[0], [0.75, 0.25])
    # v1 = x3 + 0.5 (x0 - x2) = [0.5, 0.5] + 0.5 [0, -1]
    np.testing.assert_allclose(V[1], [0.5, 0.0])
    # per-vector F (dither)
    V = rand1_mutation(X, r, np.array([1.0, 0.0, 0.5, 2.0]))
    np.testing.assert_allclose(V[0], [0.5, 0.5])
    np.testing.assert_allclose(V[1], X[3])
    np.testing.assert_allclose(V[3], [0.0 + 2.0 * 1.0, 1.0 + 2.0 * 0.0])


def test_binomial_crossover_with_j_rand_by_hand():
    X = np.zeros((1, 4))
    V = np.ones((1, 4))
    u = np.array([[0.95, 0.1, 0.95, 0.95]])
    np.testing.assert_array_equal(binomial_crossover(X, V, u, np.array([3]), 0.9), [[0, 1, 0, 1]])
    # CR = 0: only j_rand comes from the mutant; CR = 1: everything does
    np.testing.assert_array_equal(binomial_crossover(X, V, u, np.array([2]), 0.0), [[0, 0, 1, 0]])
    np.testing.assert_array_equal(binomial_crossover(X, V, u, np.array([0]), 1.0), [[1, 1, 1, 1]])


def test_bounce_back_by_hand():
    V = np.array([[-0.2, 1.4, 0.5]])
    base = np.array([[0.4, 0.6, 0.3]])
    u = np.array([[0.5, 0.25, 0.9]])
    # below 0: uniform in [0, base]; above 1: uniform in [base, 1]; inside: unchanged
    np.testing.assert_allclose(bounce_back(V, base, u), [[0.2, 0.7, 0.5]])


def test_draw_donors_distinct_and_not_the_target():
    rng = np.random.default_rng(0)
    seen = np.zeros((6, 6), int)
    for _ in range(200):
        r = draw_donors(rng, 6)
        assert r.shape == (6, 3)
        for i, row in enumerate(r):
            assert len(set(row)) == 3 and i not in row
            seen[i, row] += 1
    off = ~np.eye(6, dtype=bool)
    assert np.all(seen[off] > 0) and np.all(seen[~off] == 0)


def test_greedy_selection_by_hand():
    X = np.array([[0.1], [0.2], [0.3], [0.4]])
    U = np.array([[0.9], [0.8], [0.7], [0.6]])
    Xn, fn = greedy_selection(X, np.array([1.0, 2.0, np.inf, 1.0]), U, np.array([1.0, 3.0, np.inf, 0.5]))
    np.testing.assert_array_equal(Xn[:, 0], [0.9, 0.2, 0.7, 0.6])  # ties and inf <= inf replace
    np.testing.assert_array_equal(fn, [1.0, 2.0, np.inf, 0.5])


def test_batch_sizes_and_selection_in_the_class():
    opt = DE(seed=0).setup(3)
    assert opt.next_batch_size == 30  # 10 * dim
    X0 = opt.ask()
    f0 = _sphere(X0)
    opt.tell(X0, f0)
    T = opt.ask()
    assert T.shape == (30, 3) and T.min() >= 0 and T.max() <= 1
    # j_rand: every trial takes at least one coordinate from its (continuous) mutant, so differs from its target
    assert np.all(np.any(T != X0, axis=1))
    fT = _sphere(T)
    opt.tell(T, fT)
    np.testing.assert_array_equal(opt._f, np.minimum(f0, fT))
    assert DE(pop_size=7, seed=0).setup(5).next_batch_size == 7


def test_dither_draws_f_in_range_and_settings_round_trip():
    opt = DE(dither=(0.5, 1.0), seed=2)
    assert opt.copy().settings() == opt.settings()
    opt.setup(2)
    for _ in range(5):
        U = opt.ask()
        opt.tell(U, _sphere(U))
    assert np.all(np.isfinite(opt._X))


@pytest.mark.parametrize(
    "kw", [dict(pop_size=3), dict(F=0.0), dict(CR=1.5), dict(dither=(1.0, 0.5)), dict(dither="wide")]
)
def test_bad_settings_are_rejected(kw):
    with pytest.raises(ConfigurationError):
        DE(**kw)


def test_de_reaches_1e6_on_3d_sphere_within_1500_evaluations():
    """Default settings (NP = 30, F = 0.5, CR = 0.9); measured 720-1110 evaluations over seeds 0-9."""
    term = mc.Termination(max_evals=1500, target=1e-6)
    for s in range(5):
        res = mc.minimize(_sphere, [0] * 3, [1] * 3, DE(seed=s), term)
        assert res.best_loss <= 1e-6, (s, res.best_loss)
        assert res.stop_reason == "target"
