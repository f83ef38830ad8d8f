"""Designs of experiments, sensitivity analysis and the section 7 networks (mechcalib.surrogates)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import check_grad
from scipy.stats import qmc, spearmanr

from mechcalib.surrogates import (
    PCA,
    CVSettings,
    fit_mlp,
    lhs_md,
    md_discrepancy,
    mlp,
    mrp_error,
    pe_ratio,
    spearman,
)
from mechcalib.surrogates.sensitivity import sobol


# -- design of experiments ----------------------------------------------------------------------------
def test_lhs_md_is_latin_reproducible_and_lowers_md():
    U = lhs_md(40, 3, iterations=800, seed=5)
    assert U.shape == (40, 3)
    for j in range(3):  # one point per stratum in every column
        np.testing.assert_array_equal(np.sort(np.floor(U[:, j] * 40)), np.arange(40))
    np.testing.assert_array_equal(U, lhs_md(40, 3, iterations=800, seed=5))
    start = qmc.LatinHypercube(3, rng=np.random.default_rng(5)).random(40)  # the unoptimised start
    assert md_discrepancy(U) < 0.8 * md_discrepancy(start)
    assert md_discrepancy(U) == pytest.approx(float(qmc.discrepancy(U, method="MD")))


# -- sensitivity ----------------------------------------------------------------------------------------
def test_spearman_matches_scipy_and_monotone_maps():
    rng = np.random.default_rng(0)
    P = rng.random((50, 3))
    Y = np.column_stack([np.exp(5 * P[:, 0]), -(P[:, 1] ** 3), P[:, 0] + rng.normal(0, 0.3, 50), np.ones(50)])
    rho = spearman(P, Y)
    assert rho.shape == (3, 4)
    assert rho[0, 0] == pytest.approx(1.0) and rho[1, 1] == pytest.approx(-1.0)
    assert rho[0, 2] == pytest.approx(spearmanr(P[:, 0], Y[:, 2]).statistic, abs=1e-12)
    assert np.all(np.isnan(rho[:, 3]))  # constant response component: undefined


def test_pca_variance_and_reconstruction():
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(30, 3)) @ rng.normal(size=(3, 20)) + 0.001 * rng.normal(size=(30, 20))
    pca = PCA().fit(Y)
    assert pca.explained.sum() == pytest.approx(1.0)
    assert np.all(np.diff(pca.explained) <= 1e-15) and pca.explained[:3].sum() > 0.999
    S = pca.transform(Y)
    np.testing.assert_allclose(pca.inverse_transform(S), Y, atol=1e-10)
    C = np.cov(S[:, :3].T)
    np.testing.assert_allclose(C - np.diag(np.diag(C)), 0.0, atol=1e-10)  # scores uncorrelated
    np.testing.assert_allclose(np.diag(C), pca.variance[:3], rtol=1e-10)


def test_sobol_indices_of_a_linear_function():
    pytest.importorskip("SALib", reason="Sobol' indices need the optional extra mechcalib[sensitivity]")
    res = sobol(lambda X: X[:, 0] + 2.0 * X[:, 1], 3, n=1024, seed=1)
    # var(x1) : var(2 x2) = 1 : 4, x3 inert
    np.testing.assert_allclose(res["S1"][:, 0], [0.2, 0.8, 0.0], atol=0.05)
    np.testing.assert_allclose(res["ST"][:, 0], [0.2, 0.8, 0.0], atol=0.05)


def test_sobol_confidence_intervals_are_reproducible_for_every_seed_zero_included():
    pytest.importorskip("SALib", reason="Sobol' indices need the optional extra mechcalib[sensitivity]")

    def f(X):
        return X[:, 0] + 2.0 * X[:, 1] ** 2

    for seed in (0, 3):
        a = sobol(f, 3, n=256, seed=seed)
        np.random.seed(12345)  # noqa: NPY002 (the global state must not matter)
        np.random.random(7)  # noqa: NPY002
        b = sobol(f, 3, n=256, seed=seed)
        for k in ("S1", "ST", "S1_conf", "ST_conf"):
            assert np.array_equal(a[k], b[k]), (seed, k)


# -- networks -------------------------------------------------------------------------------------------
def test_mrp_error_eq10_and_pe_ratio_eq11_by_hand():
    # |1-2| + |3-3| + |5-2| = 4, over 3 samples and range 10 - 0
    assert mrp_error(np.array([1.0, 3.0, 5.0]), np.array([2.0, 3.0, 2.0]), 0.0, 10.0) == pytest.approx(4 / 30)
    e = np.array([4.0, 4.0, 2.0, 2.0, 1.0])  # J = 2, k = 4: (2 + 2 + 1) / (4 + 4)
    assert pe_ratio(e, 2) == pytest.approx(5 / 8)
    assert np.isnan(pe_ratio(e[:4], 2))


def test_sigmoid_and_analytic_gradient():
    assert mlp.sigmoid(0.0) == 0.5 and mlp.sigmoid(1000.0) == 1.0 and mlp.sigmoid(-1000.0) == 0.0
    rng = np.random.default_rng(2)
    X1 = mlp._with_bias(rng.random((15, 3)))
    Y = rng.random((2, 15))
    M = (rng.random((2, 15)) > 0.3).astype(float)
    W1, w2 = mlp.init_weights(rng, 2, 4, 3)
    th = np.concatenate([W1.ravel(), w2.ravel()])

    def f(t):
        return mlp.loss_and_grad(X1, Y, M, *mlp._unpack(t, 2, 4, 3))[0].sum()

    def g(t):
        _, a, b = mlp.loss_and_grad(X1, Y, M, *mlp._unpack(t, 2, 4, 3))
        return np.concatenate([a.ravel(), b.ravel()])

    assert check_grad(f, g, th) < 1e-6


def test_cg_batch_solves_independent_quadratics():
    # B = 3 quadratics 0.5 x'A_b x - c_b'x with different conditioning; each run is its own CG
    rng = np.random.default_rng(7)
    A = []
    for cond in (1.0, 30.0, 1000.0):
        Q, _ = np.linalg.qr(rng.normal(size=(5, 5)))
        A.append(Q @ np.diag(np.geomspace(1.0, cond, 5)) @ Q.T)
    A = np.array(A)
    c = rng.normal(size=(3, 5))

    def fg(idx, T):
        AT = np.einsum("bij,bj->bi", A[idx], T)
        return 0.5 * np.einsum("bi,bi->b", T, AT) - np.einsum("bi,bi->b", c[idx], T), AT - c[idx]

    seen = []

    def on_iteration(k, T, active):
        seen.append(int(active.sum()))
        return active

    T = mlp.cg_batch(fg, np.zeros((3, 5)), on_iteration, 200)
    np.testing.assert_allclose(T, np.linalg.solve(A, c[..., None])[..., 0], rtol=1e-6, atol=1e-8)
    assert seen[0] == 3 and len(seen) == 201


def test_per_network_trainers_beat_the_shared_step_scipy_trainer():
    rng = np.random.default_rng(8)
    X = rng.random((60, 2))
    # four outputs of different shapes: one shared step length and direction cannot suit them all
    Y = np.column_stack(
        [
            np.sin(3 * X[:, 0]) + X[:, 1],
            50.0 * X[:, 0] ** 2 * X[:, 1],
            np.exp(4 * X[:, 1]) * X[:, 0],
            X[:, 0] - X[:, 1] ** 3,
        ]
    )
    X1 = mlp._with_bias(X)
    Ys = ((Y - Y.min(0)) / np.ptp(Y, axis=0)).T
    errs = {}
    for trainer in ("compiled", "numpy", "scipy"):
        W1, w2, _ = mlp.train_batch(
            X1, Ys, np.ones_like(Ys), 4, K=300, J=50, rng=np.random.default_rng(0), trainer=trainer
        )
        errs[trainer] = np.abs(mlp.forward(X1, W1, w2)[0] - Ys).mean(axis=1)
    assert errs["compiled"].mean() < 0.006 and errs["numpy"].mean() < 0.006
    assert errs["compiled"].mean() < 0.5 * errs["scipy"].mean() and errs["numpy"].mean() < 0.5 * errs["scipy"].mean()


def test_compiled_trainer_follows_the_numpy_reference_step_by_step():
    # same algorithm, same start: identical iterates up to rounding (masks differ per network)
    rng = np.random.default_rng(9)
    X1 = mlp._with_bias(rng.random((50, 3)))
    Ys = rng.random((3, 50))
    M = rng.random((3, 50)) > 0.25
    out = {}
    for trainer in ("compiled", "numpy"):
        out[trainer] = mlp.train_batch(
            X1, Ys, M, 3, K=8, J=2, r_pe_max=2.0, rng=np.random.default_rng(1), trainer=trainer
        )
    np.testing.assert_allclose(out["compiled"][0], out["numpy"][0], rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(out["compiled"][1], out["numpy"][1], rtol=1e-9, atol=1e-11)
    np.testing.assert_array_equal(out["compiled"][2], [8, 8, 8])


def test_product_inputs_give_the_loss_and_gradient_of_the_expanded_samples():
    # Forward Complex structure: rows (a_i, b_k); the split exponentials must equal the plain network
    rng = np.random.default_rng(10)
    Xa, Xb = rng.random((7, 3)), rng.random((5, 2))
    Y = rng.random((7, 5))
    h = 4
    th = rng.normal(size=(3 + 2 + 1) * h + h + 1)
    G = np.empty_like(th)
    L, err = mlp._net_eval(
        th,
        h,
        np.ascontiguousarray(Xa.T),
        np.ascontiguousarray(Xb.T),
        Y,
        np.empty((h, 7)),
        np.empty((h, 5)),
        np.empty((h, 5)),
        np.empty((h, 7)),
        np.empty((h, 5)),
        np.empty(7),
        G,
    )
    X1 = mlp._with_bias(np.column_stack([np.repeat(Xa, 5, axis=0), np.tile(Xb, (7, 1))]))
    W1, w2 = mlp._split(th[None], 6, h)
    L0, g1, g2 = mlp.loss_and_grad(X1, Y.reshape(1, -1), np.ones((1, 35)), W1, w2)
    assert L == pytest.approx(L0[0], rel=1e-12)
    np.testing.assert_allclose(G, mlp._pack(g1, g2)[0], rtol=1e-10, atol=1e-13)
    O, _ = mlp.forward(X1, W1, w2)
    assert err == pytest.approx(np.abs(O[0] - Y.ravel()).mean(), rel=1e-12)


def test_product_fit_predicts_a_separable_surface_and_folds_keep_rows_together():
    rng = np.random.default_rng(11)
    A = rng.random((40, 2))
    t = np.linspace(0.0, 1.0, 12)[:, None]
    Y = 1.0 / (1.0 + np.exp(-(4.0 * A[:, :1] - 2.0 * A[:, 1:] + 3.0 * t.T - 1.5)))  # (40, 12): one neuron
    net = mlp.fit_mlp_product(A, t, Y, CVSettings(V=4, J=20, K=600, W=1, h_max=3), seed=0)
    X = np.column_stack([np.repeat(A, 12, axis=0), np.tile(t, (40, 1))])
    assert net.error(X, Y.ravel()) < 0.01
    assert net.train_error == pytest.approx(net.error(X, Y.ravel()), rel=1e-9)
    At = rng.random((10, 2))
    Yt = 1.0 / (1.0 + np.exp(-(4.0 * At[:, :1] - 2.0 * At[:, 1:] + 3.0 * t.T - 1.5)))
    assert net.error(np.column_stack([np.repeat(At, 12, axis=0), np.tile(t, (10, 1))]), Yt.ravel()) < 0.015


def test_cv_search_does_not_depend_on_how_rounds_batch_the_sizes():
    rng = np.random.default_rng(12)
    X = rng.random((40, 2))
    Y = np.column_stack([X[:, 0] * X[:, 1], np.sin(2 * X[:, 0])])
    s1 = CVSettings(V=3, J=10, K=200, W=2, h_max=5)
    nets = mlp.fit_mlps(X, Y, s1, seed=3)
    single = mlp.fit_mlps(X, Y[:, 0], s1, seed=3)  # the first output alone: other rounds, same networks
    assert single[0].cv_errors == nets[0].cv_errors
    np.testing.assert_array_equal(single[0].W1, nets[0].W1)
    assert len(nets[0].cv_errors) != len(nets[1].cv_errors) or nets[0].cv_errors != nets[1].cv_errors


def test_training_stops_by_pe_ratio_before_K():
    rng = np.random.default_rng(3)
    X = rng.random((40, 2))
    y = X[:, 0] + X[:, 1]
    net = mlp.train_single(X, y, 2, CVSettings(V=2, J=10, K=3000), seed=0)
    assert 20 <= net.iterations < 3000
    assert net.train_error < 0.01


def test_cross_validation_picks_a_small_network_for_a_one_neuron_function():
    rng = np.random.default_rng(4)
    X = rng.random((80, 3))
    y = 0.5 + 2.0 / (1.0 + np.exp(-(3.0 * X[:, 0] - 2.0 * X[:, 1] + X[:, 2] - 1.0)))
    net = fit_mlp(X, y, CVSettings(V=5, J=25, K=800, W=2, h_max=6), seed=1)
    assert net.h <= 2
    assert min(net.cv_errors, key=net.cv_errors.get) == net.h
    assert net.cv_errors[net.h] < 0.01 and net.train_error < 0.01
    Xt = rng.random((30, 3))
    yt = 0.5 + 2.0 / (1.0 + np.exp(-(3.0 * Xt[:, 0] - 2.0 * Xt[:, 1] + Xt[:, 2] - 1.0)))
    assert net.error(Xt, yt) < 0.02


def test_cv_settings_presets_and_validation():
    s = CVSettings.mares2016()
    assert (s.V, s.J, s.K, s.r_pe_max, s.h_min, s.r_cve_max, s.W) == (10, 100, 5000, 0.999, 1, 0.99, 3)
    with pytest.raises(ValueError, match="V must be >= 2"):
        CVSettings(V=1)
