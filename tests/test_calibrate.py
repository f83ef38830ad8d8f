from __future__ import annotations

import numpy as np
import pytest

import mechcalib as mc
from mechcalib import ConfigurationError, Termination
from mechcalib.optimizers import LatinHypercube, RandomSearch, make_optimizer


def sphere(X):
    return np.sum(X**2, axis=1)


def test_termination_rules():
    with pytest.raises(ConfigurationError, match="at least one rule"):
        Termination()
    with pytest.raises(ConfigurationError, match="max_evals must be a positive integer"):
        Termination(max_evals=0)
    prob = mc.FunctionProblem.from_bounds(sphere, [-1, -1], [1, 1])
    r = mc.calibrate(prob, RandomSearch(batch_size=7, seed=0), Termination(max_iters=3))
    assert (r.n_evals, r.n_batches, r.stop_reason) == (21, 3, "max_iters")
    r = mc.calibrate(prob, RandomSearch(seed=0), Termination(target=0.05, max_evals=10_000))
    assert r.stop_reason == "target" and r.best_loss <= 0.05
    r = mc.calibrate(prob, RandomSearch(seed=0), Termination(patience=3, max_evals=10_000))
    assert r.stop_reason == "patience"
    best = r.history.best_per_batch
    assert all(best[-1] == b for b in best[-4:])  # no improvement over the last 3 batches
    with pytest.raises(ConfigurationError, match="either termination or max_evals"):
        mc.calibrate(prob, RandomSearch(), Termination(max_iters=1), max_evals=3)


def test_budget_cut_points_are_recorded_but_not_told():
    prob = mc.FunctionProblem.from_bounds(sphere, [-1], [1])
    r = mc.calibrate(prob, RandomSearch(batch_size=10, seed=0), max_evals=25)
    assert r.n_evals == 25 and r.history.told == [True] * 20 + [False] * 5


def test_history_and_best_per_batch_are_consistent():
    prob = mc.FunctionProblem.from_bounds(sphere, [-5, -5], [5, 5])
    r = mc.calibrate(prob, LatinHypercube(seed=2), max_evals=60)
    losses = np.array(r.history.losses)
    assert np.allclose(sphere(np.array(r.history.X)), losses)
    assert r.history.best_per_batch == [losses[: (b + 1) * 10].min() for b in range(6)]
    assert r.history.evals_to_reach(r.best_loss) == int(np.argmin(losses)) + 1
    assert r.best_loss == losses.min()


def test_alternatives_are_distinct_and_sorted():
    # two equal minima at x = +-1
    prob = mc.FunctionProblem.from_bounds(lambda X: (X[:, 0] ** 2 - 1) ** 2, [-2], [2])
    r = mc.calibrate(
        prob, RandomSearch(batch_size=50, seed=0), max_evals=500, n_alternatives=5, alternative_distance=0.05
    )
    vals = [v for _, v in r.alternatives]
    assert vals == sorted(vals) and len(vals) == 5
    xs = [p["x0"] for p, _ in r.alternatives]
    assert min(xs) < 0 < max(xs)  # both basins are reported
    assert all(abs(a - b) >= 0.05 * 4 for i, a in enumerate(xs) for b in xs[:i])


def test_same_seed_same_result():
    prob = mc.FunctionProblem.from_bounds(sphere, [-5] * 3, [5] * 3)
    a = mc.calibrate(prob, RandomSearch(seed=11), max_evals=50)
    b = mc.calibrate(prob, RandomSearch(seed=11), max_evals=50)
    assert a.best_loss == b.best_loss and np.array_equal(a.history.X, b.history.X)


def test_callback_can_stop():
    prob = mc.FunctionProblem.from_bounds(sphere, [-1], [1])
    r = mc.calibrate(prob, RandomSearch(seed=0), max_evals=1000, callback=lambda b, opt, h: b >= 2)
    assert r.stop_reason == "callback" and r.n_batches == 2


def test_make_optimizer_by_name():
    assert isinstance(make_optimizer("lhs", batch_size=4), LatinHypercube)
    with pytest.raises(ConfigurationError, match="batch_size must be an integer >= 1, got 0"):
        make_optimizer("random", batch_size=0)
    with pytest.raises(ConfigurationError, match="no preset"):
        make_optimizer("random", preset="kibriya2023")


def test_log_scale_search_samples_decades_uniformly():
    space = mc.ParameterSpace([mc.Parameter("B2", 8e-7, 8e-3, scale="log")])
    prob = mc.FunctionProblem(lambda X: np.zeros(len(X)), space)
    r = mc.calibrate(prob, RandomSearch(batch_size=100, seed=0), max_evals=4000)
    decades = np.floor(np.log10(np.array(r.history.X)[:, 0] / 8e-7))
    counts = np.bincount(decades.astype(int), minlength=4)
    assert counts.min() > 800  # ~1000 per decade
