"""Objective 2 of Kibriya et al. (2023): the neural smoother (kernels, smoothing, reproducibility) and SmoothedOverlapRSS."""

from __future__ import annotations

import pickle
import typing
from itertools import pairwise

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.core.data import Curve, Experiment
from mechcalib.errors import ConfigurationError, DataError
from mechcalib.objectives import OBJECTIVES, OverlapRSS, make_objective
from mechcalib.objectives.smoothing import (
    NeuralSmoother,
    SmoothedOverlapRSS,
    adam_update,
    backward,
    discretise,
    fit_numpy,
    fit_reference,
    forward,
    init_params,
    layer_sizes,
    mae_grad,
    n_params,
    torch_available,
    unpack,
)

needs_torch = pytest.mark.skipif(not torch_available(), reason="PyTorch is not installed (extra mechcalib[deep])")


# -- kernels ----------------------------------------------------------------------------------------
def test_layer_sizes_and_parameter_count():
    s = layer_sizes(5, 20)
    assert s == (1, 20, 20, 20, 20, 20, 2)
    assert n_params(s) == (1 * 20 + 20) + 4 * (20 * 20 + 20) + (20 * 2 + 2) == 1762


def test_init_is_glorot_uniform_with_zero_biases():
    s = layer_sizes(2, 3)
    th = init_params(s, np.random.default_rng(0))
    assert th.shape == (n_params(s),)
    layers = unpack(th[None, :], s)
    for (W, b), (a, c) in zip(layers, pairwise(s), strict=True):
        assert W.shape == (1, a, c) and b.shape == (1, 1, c)
        assert np.all(np.abs(W) <= np.sqrt(6.0 / (a + c)))
        assert np.all(b == 0)
    assert np.array_equal(th, init_params(s, np.random.default_rng(0)))


def test_mae_grad_hand_computed():
    out = np.array([[[1.0, 2.0], [3.0, 4.0]]])
    Y = np.array([[[0.0, 2.0], [5.0, 1.0]]])
    loss, g = mae_grad(out, Y, np.ones((1, 1, 2)))
    assert loss[0] == pytest.approx((1 + 0 + 2 + 3) / 4)
    assert np.allclose(g[0], [[0.25, 0.0], [-0.25, 0.25]])
    loss, g = mae_grad(out, Y, np.array([[[1.0, 0.0]]]))  # second output masked
    assert loss[0] == pytest.approx((1 + 2) / 2)
    assert np.allclose(g[0], [[0.5, 0.0], [-0.5, 0.0]])


def test_backward_matches_finite_differences():
    s_ = layer_sizes(2, 4)
    rng = np.random.default_rng(3)
    theta = rng.normal(0, 0.7, (2, n_params(s_)))
    s = np.linspace(-1, 1, 9)
    Y = rng.normal(size=(2, 9, 2))
    mask = np.array([[[1.0, 0.0]], [[1.0, 1.0]]])
    grad = np.zeros_like(theta)
    acts, out = forward(unpack(theta, s_), s)
    _, dout = mae_grad(out, Y, mask)
    backward(unpack(theta, s_), unpack(grad, s_), s, acts, dout)
    h = 1e-6
    for b in range(2):
        for j in range(theta.shape[1]):
            tp, tm = theta.copy(), theta.copy()
            tp[b, j] += h
            tm[b, j] -= h
            fp = mae_grad(forward(unpack(tp, s_), s)[1], Y, mask)[0][b]
            fm = mae_grad(forward(unpack(tm, s_), s)[1], Y, mask)[0][b]
            assert grad[b, j] == pytest.approx((fp - fm) / (2 * h), abs=1e-7)
    # network 0 trains on its first output only: the second output's weights get no gradient
    W_out, b_out = unpack(grad, s_)[-1]
    assert np.all(W_out[0, :, 1] == 0) and b_out[0, 0, 1] == 0
    assert np.any(W_out[1, :, 1] != 0)


def test_adam_first_two_steps_hand_computed():
    theta, g = np.array([1.0, -2.0]), np.array([0.5, -4.0])
    m, v = np.zeros(2), np.zeros(2)
    adam_update(theta, g, m, v, 1, lr=0.1)
    # step 1: m = 0.1 g, v = 0.001 g^2, so m_hat = g, v_hat = g^2 and the move is lr * g / (|g| + eps)
    assert np.allclose(m, 0.1 * g) and np.allclose(v, 0.001 * g * g)
    assert np.allclose(theta, [1.0 - 0.1, -2.0 + 0.1], atol=1e-9)
    g2 = np.array([1.0, 2.0])
    adam_update(theta, g2, m, v, 2, lr=0.1)
    m2 = 0.9 * 0.1 * g + 0.1 * g2
    v2 = 0.999 * 0.001 * g * g + 0.001 * g2 * g2
    step = 0.1 / (1 - 0.9**2) * m2 / (np.sqrt(v2) / np.sqrt(1 - 0.999**2) + 1e-8)
    assert np.allclose(theta, np.array([0.9, -1.9]) - step, rtol=1e-12)


def _targets(B=4, N=50, seed=0):
    x = np.linspace(-1, 1, N)
    rng = np.random.default_rng(seed)
    Y = np.zeros((B, N, 2))
    for b in range(B):
        Y[b, :, 0] = np.sin((2 + b) * x) + 0.1 * rng.standard_normal(N)
        Y[b, :, 1] = x**2 - 0.3 * b + 0.05 * rng.standard_normal(N)
    mask = np.ones((B, 1, 2))
    mask[::2, 0, 1] = 0.0  # even networks: abscissa mode (second output masked)
    return x, Y, mask


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fit_numpy_trains_each_network_on_its_own_curve(dtype):
    s_ = layer_sizes(5, 20)
    x, Y, mask = _targets()
    th0 = init_params(s_, np.random.default_rng(0))
    out, loss = fit_numpy(x, Y, mask, th0, s_, 400, 0.01, dtype=dtype)
    assert out.shape == Y.shape and out.dtype == np.float64
    assert np.all(loss < 0.12) and np.all(loss > 0.01)  # fits the curve, not the noise exactly
    err = np.abs(out - Y)[:, :, 0].mean(axis=1)
    assert np.all(err < 0.12)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_stacked_training_equals_one_at_a_time(dtype):
    """A whole batch trained in one stacked fit gives each curve what training it alone gives."""
    s_ = layer_sizes(5, 20)
    x, Y, mask = _targets(B=5, N=80, seed=3)
    th0 = init_params(s_, np.random.default_rng(4))
    out, loss = fit_numpy(x, Y, mask, th0, s_, 400, 0.01, dtype=dtype)
    for b in (0, 3):
        alone, la = fit_numpy(x, Y[b : b + 1], mask[b : b + 1], th0, s_, 400, 0.01, dtype=dtype)
        np.testing.assert_allclose(alone[0], out[b], rtol=0, atol=1e-9)
        assert la[0] == pytest.approx(loss[b], abs=1e-9)


def test_fast_trainer_is_the_reference_computation():
    """fit_numpy (transposed, stacked, preallocated) against the readable reference trainer, in float64.
    They agree to round-off while round-off is not yet amplified by the sign of the absolute error."""
    s_ = layer_sizes(5, 20)
    x, Y, mask = _targets(B=3)
    th0 = init_params(s_, np.random.default_rng(1))
    ref, lr_ = fit_reference(x, Y, mask, th0, s_, 40, 0.01)
    new, ln = fit_numpy(x, Y, mask, th0, s_, 40, 0.01)
    assert np.max(np.abs(ref - new)) < 1e-10
    assert np.allclose(lr_, ln, rtol=0, atol=1e-12)
    assert np.max(np.abs(ref - fit_reference(x, Y, mask, th0, s_, 0, 0.01)[0])) > 0.05  # it did train
    with pytest.raises(ConfigurationError, match="float16"):
        fit_numpy(x, Y, mask, th0, s_, 1, 0.01, dtype="float16")


# -- smoothing --------------------------------------------------------------------------------------
def _noisy_arch_like(seed=0):
    """A force-displacement shape (rise, plateau, softening) with white noise and a 0.4 mm oscillation."""
    x = np.linspace(0.0, 12.0, 241)
    clean = np.where(x < 2.0, 3.0 * np.sin(np.pi / 4.0 * x), 3.0 - 0.1 * (x - 2.0))
    rng = np.random.default_rng(seed)
    noisy = clean + 0.1 * rng.standard_normal(x.size) + 0.15 * np.sin(2 * np.pi * x / 0.4)
    return x, clean, noisy


def _rms_to_clean(curve: Curve, x, clean) -> float:
    return float(np.sqrt(np.mean((curve.y - np.interp(curve.x, x, clean)) ** 2)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_smoothing_a_noisy_curve_approaches_the_clean_one(dtype):
    """Over three noise draws the smoothed curve is on average less than half as far from the clean curve
    as the noisy one (each draw: 0.13-0.6 of it, depending on round-off that the training amplifies)."""
    draws = [_noisy_arch_like(seed) for seed in range(3)]
    raws = [Curve(x, noisy, t=x, x_name="u", y_name="F", x_unit="mm", y_unit="kN") for x, _, noisy in draws]
    ratios = []
    for (x, clean, noisy), sm in zip(draws, NeuralSmoother(dtype=dtype).smooth_many(raws), strict=True):
        assert len(sm) == 200 and np.allclose(sm.x, np.linspace(0, 12, 200))
        assert np.allclose(sm.t, sm.x) and (sm.x_name, sm.y_unit) == ("u", "kN")
        before = float(np.sqrt(np.mean((noisy - clean) ** 2)))  # about 0.14
        ratios.append(_rms_to_clean(sm, x, clean) / before)
        assert abs(np.max(sm.y) - 3.0) < 0.15  # the peak survives
    assert max(ratios) < 0.7 and np.mean(ratios) < 0.5


def test_progress_mode_smooths_both_coordinates():
    t = np.linspace(0.0, 1.0, 241)
    xc, yc = np.sin(3 * t), np.cos(2 * t)  # x reverses: not a function y(x)
    rng = np.random.default_rng(1)
    raw = Curve(xc + 0.05 * rng.standard_normal(t.size), yc + 0.05 * rng.standard_normal(t.size), t=t)
    mode, *_ = discretise(raw, 200)
    assert mode == "progress"
    sm = NeuralSmoother().smooth(raw)
    assert np.allclose(sm.t, np.linspace(0, 1, 200))
    for got, clean, noisy in ((sm.x, np.sin(3 * sm.t), raw.x), (sm.y, np.cos(2 * sm.t), raw.y)):
        err_raw = np.sqrt(np.mean((noisy - np.interp(t, sm.t, clean)) ** 2))
        assert np.sqrt(np.mean((got - clean) ** 2)) < 0.5 * err_raw


def test_discretise_rules():
    x = np.array([0.0, 1.0, 1.0, 3.0])
    mode, xs, ys, ts = discretise(Curve(x, 2 * x, t=np.arange(4.0)), 5)
    assert mode == "abscissa" and np.allclose(xs, np.linspace(0, 3, 5)) and np.allclose(ys, 2 * xs) and ts is not None
    xd = x[::-1]  # decreasing abscissa: kept in its order
    mode, xs, ys, _ = discretise(Curve(xd, 2 * xd), 4)
    assert mode == "abscissa" and xs[0] == 3.0 and np.allclose(ys, 2 * xs)
    with pytest.raises(DataError, match="monotonic"):
        discretise(Curve(np.array([0.0, 2.0, 1.0]), np.zeros(3)), 5, mode="abscissa")
    mode, *_ = discretise(Curve(np.array([0.0, 2.0, 1.0]), np.zeros(3)), 5)
    assert mode == "progress"  # no t: the row index is the progress


def test_seeded_reproducibility_and_batch_invariance():
    x, _, noisy = _noisy_arch_like()
    a, b = Curve(x, noisy), Curve(x, noisy[::-1].copy())
    kw = {"steps": 300}
    s1 = NeuralSmoother(seed=7, **kw).smooth(a)
    s2 = NeuralSmoother(seed=7, **kw).smooth(a)
    assert np.array_equal(s1.y, s2.y)
    s3 = NeuralSmoother(seed=8, **kw).smooth(a)
    assert not np.allclose(s1.y, s3.y, atol=1e-6)
    both = NeuralSmoother(seed=7, **kw).smooth_many([b, a])
    assert np.array_equal(both[1].y, s1.y)  # the same curve gives the same result whatever it is smoothed with
    chunked = NeuralSmoother(seed=7, batch=1, **kw).smooth_many([b, a])  # one network per stacked fit
    assert all(np.array_equal(u.y, v.y) for u, v in zip(chunked, both, strict=True))


def test_settings_are_validated():
    for kw in (
        {"steps": -1},
        {"n_points": 1},
        {"width": 0},
        {"learning_rate": 0.0},
        {"mode": "x"},
        {"backend": "jax"},
        {"seed": None},
        {"n_layers": 2.5},
        {"dtype": "float16"},
        {"batch": 0},
    ):
        with pytest.raises(ConfigurationError):
            NeuralSmoother(**kw)
    with pytest.raises(ConfigurationError):
        SmoothedOverlapRSS(smooth_steps=0.5)


@needs_torch
def test_torch_backend_matches_numpy_before_chaos_sets_in():
    x, clean, noisy = _noisy_arch_like()
    c = Curve(x, noisy, t=x)
    a = NeuralSmoother(steps=60, backend="numpy", dtype="float64").smooth(c)
    b = NeuralSmoother(steps=60, backend="torch", dtype="float64").smooth(c)
    assert np.max(np.abs(a.y - b.y)) < 1e-9  # same network, initial weights and Adam
    full = NeuralSmoother(steps=400, backend="torch").smooth(c)
    assert _rms_to_clean(full, x, clean) < 0.5 * float(np.sqrt(np.mean((noisy - clean) ** 2)))


def test_torch_backend_without_torch_names_the_extra(monkeypatch):
    if torch_available():
        pytest.skip("PyTorch is installed; the missing-extra message cannot be exercised")
    with pytest.raises(mc.MissingExtraError, match="deep"):
        NeuralSmoother(backend="torch")


# -- objective 2 ------------------------------------------------------------------------------------
def _experiment_and_sim():
    x, _, noisy = _noisy_arch_like(0)
    t = x
    h = 0.25 * x - 0.02 * np.sin(5 * x)  # non-monotonic horizontal displacement
    exp = Experiment({"vertical": Curve(x, noisy, t=t), "horizontal": Curve(h, noisy, t=t)}, name="noisy")
    _, _, noisy2 = _noisy_arch_like(1)
    sim = {"vertical": Curve(x, 0.9 * noisy2, t=t), "horizontal": Curve(h * 1.1, 0.9 * noisy2, t=t)}
    return exp, sim


def test_objective_two_is_objective_one_on_the_smoothed_curves():
    exp, sim = _experiment_and_sim()
    obj = SmoothedOverlapRSS(smooth_steps=150)
    sm = NeuralSmoother(steps=150)
    exp_s = sm.smooth_experiment(exp)
    sim_s = dict(zip(sim, sm.smooth_many(list(sim.values())), strict=True))
    expected = OverlapRSS()(sim_s, exp_s)
    assert obj(sim, exp) == pytest.approx(expected, rel=1e-12)
    assert obj.breakdown(sim, exp) == pytest.approx(OverlapRSS().breakdown(sim_s, exp_s), rel=1e-12)
    assert obj(sim, exp) < OverlapRSS()(sim, exp)  # the noise no longer counts
    # one channel alone
    assert obj.channel_misfit(sim["vertical"], exp["vertical"]) == pytest.approx(
        OverlapRSS().channel_misfit(sm.smooth(sim["vertical"]), exp_s["vertical"]), rel=1e-12
    )


def test_objective_two_caches_the_experiment_and_keeps_its_identity(monkeypatch):
    exp, sim = _experiment_and_sim()
    obj = SmoothedOverlapRSS(smooth_steps=50, smooth_seed=123)
    before = pickle.dumps(obj)
    calls = []
    real = NeuralSmoother.fit

    def counting(self, Y, mask):
        calls.append(Y.shape[0])
        return real(self, Y, mask)

    monkeypatch.setattr(NeuralSmoother, "fit", counting)
    v1 = obj(sim, exp)
    v2 = obj(sim, exp)
    assert v1 == v2
    assert calls == [2, 2, 2]  # experiment (both channels) once, then the simulation each call
    assert pickle.dumps(obj) == before  # a run's fingerprint does not change with use


def test_objective_two_is_registered():
    assert OBJECTIVES["smoothed_overlap_rss"] is SmoothedOverlapRSS
    o = make_objective("smoothed_overlap_rss", smooth_steps=10, n_points=100)
    assert isinstance(o, SmoothedOverlapRSS) and o.n_points == 100 and o.smooth_steps == 10
    hints = typing.get_type_hints(SmoothedOverlapRSS)  # what the config validator reads
    assert "smooth_backend" in hints and "smooth_mode" in hints


def test_values_many_scores_a_batch_as_one_by_one():
    exp, sim = _experiment_and_sim()
    obj = SmoothedOverlapRSS(smooth_steps=120)
    other = {k: Curve(c.x, 1.05 * c.y + 0.1, t=c.t) for k, c in sim.items()}
    bad = {"vertical": sim["vertical"]}
    vals = obj.values_many([sim, bad, other], exp)
    assert vals[0] == obj(sim, exp) and vals[2] == obj(other, exp)  # bit for bit
    assert vals[0] != vals[2]
    assert isinstance(vals[1], DataError) and "horizontal" in str(vals[1])  # fails alone
    w = SmoothedOverlapRSS(smooth_steps=120, weights={"horizontal": 0.5})
    parts = w.breakdown(sim, exp)
    assert w.values_many([sim], exp)[0] == pytest.approx(parts["vertical"] + 0.5 * parts["horizontal"], rel=1e-12)
    assert obj.values_many([], exp) == []


def test_objective_two_reports_a_missing_channel():
    exp, sim = _experiment_and_sim()
    with pytest.raises(DataError, match="horizontal"):
        SmoothedOverlapRSS(smooth_steps=5)({"vertical": sim["vertical"]}, exp)
