"""Residual vectors of the curve objectives and of problems: each objective's loss is the documented function
of its residuals, with channel weights, experiment weights and resampling applied alike."""

from __future__ import annotations

import numpy as np
import pytest

from engine_helpers import MaxAbs
from mechcalib.core.data import Curve, Experiment
from mechcalib.core.problem import Problem, experiment_from_model
from mechcalib.errors import ConfigurationError
from mechcalib.models.analytic import Linear
from mechcalib.models.oscillator import Duffing
from mechcalib.objectives.curves import F1, F2, L2, OverlapRSS, sim_at_data


def _curves(rng, n=80, monotonic=True):
    x = np.sort(rng.uniform(0.0, 10.0, n)) if monotonic else np.cumsum(rng.normal(0.0, 1.0, n))
    t = np.linspace(0.0, 1.0, n)
    exp = {
        "a": Curve(x, np.sin(x) + rng.normal(0, 0.1, n), t=None if monotonic else t),
        "b": Curve(x, x**2 / 10 + rng.normal(0, 0.1, n), t=None if monotonic else t),
    }
    sim = {k: Curve(c.x * (1 + 0.01 * rng.normal()), c.y + rng.normal(0, 0.2, n), t=c.t) for k, c in exp.items()}
    if monotonic:  # F1/F2/L2 need the simulation to cover the measured range
        sim = {
            k: Curve(np.linspace(-1, 11, 150), np.interp(np.linspace(-1, 11, 150), c.x, c.y)) for k, c in sim.items()
        }
    return Experiment(exp, name="e"), sim


@pytest.mark.parametrize("cls", [F1, L2])
@pytest.mark.parametrize("seed", range(4))
def test_sum_of_squares_objectives_are_the_sum_of_their_squared_residuals(cls, seed):
    rng = np.random.default_rng(seed)
    exp, sim = _curves(rng)
    w = {"a": 1.0 + rng.random(), "b": rng.random()}
    for obj in (cls(), cls(weights=w), cls(channels=("b",))):
        r = obj.residuals(sim, exp)
        assert obj.has_residuals and obj.residual_loss == "sum_squares"
        assert r.shape == (obj.n_residuals(exp),)
        assert np.sum(r**2) == pytest.approx(obj(sim, exp), rel=1e-12)


@pytest.mark.parametrize(
    "pairing,monotonic", [("auto", True), ("abscissa", True), ("progress", False), ("auto", False)]
)
@pytest.mark.parametrize("seed", range(3))
def test_overlap_rss_is_the_root_of_each_channel_sum_of_squares(pairing, monotonic, seed):
    rng = np.random.default_rng(seed)
    exp, sim = _curves(rng, monotonic=monotonic)
    w = {"a": 2.5, "b": 0.4}
    obj = OverlapRSS(n_points=50, pairing=pairing, weights=w)
    r = obj.residuals(sim, exp)
    k = obj.channel_residual_count(exp["a"])
    assert k == (50 if monotonic else 100) and r.shape == (2 * k,)
    ra, rb = r[:k] / np.sqrt(w["a"]), r[k:] / np.sqrt(w["b"])
    # each channel's misfit is the root of its unweighted sum of squares; the loss their weighted sum
    assert np.sqrt(np.sum(ra**2)) == pytest.approx(obj.channel_misfit(sim["a"], exp["a"]), rel=1e-12)
    assert w["a"] * np.sqrt(np.sum(ra**2)) + w["b"] * np.sqrt(np.sum(rb**2)) == pytest.approx(obj(sim, exp), rel=1e-12)
    single = OverlapRSS(n_points=50, pairing=pairing, channels=("a",))
    assert np.sqrt(np.sum(single.residuals(sim, exp) ** 2)) == pytest.approx(single(sim, exp), rel=1e-12)


def test_objectives_without_residuals_say_so():
    assert not MaxAbs.has_residuals
    exp, sim = _curves(np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="no residual vector"):
        MaxAbs().residuals(sim, exp)

    class Changed(L2):  # a new misfit without new residuals: the inherited ones would belong to another loss
        def channel_misfit(self, sim, exp):
            return 2.0 * super().channel_misfit(sim, exp)

    assert not Changed.has_residuals


@pytest.mark.parametrize("seed", range(4))
def test_f2_is_the_sum_of_its_squared_residuals(seed):
    rng = np.random.default_rng(seed)
    exp, sim = _curves(rng)
    w = {"a": 1.0 + rng.random(), "b": rng.random()}
    for obj in (F2(), F2(weights=w), F2(channels=("a",))):
        r = obj.residuals(sim, exp)
        assert obj.has_residuals and obj.residual_loss == "sum_squares"
        assert r.shape == (obj.n_residuals(exp),)
        assert np.sum(r**2) == pytest.approx(obj(sim, exp), rel=1e-12)
    # each residual is the signed root of the difference sim - data
    e = sim_at_data(sim["a"], exp["a"]) - exp["a"].y
    np.testing.assert_allclose(F2(channels=("a",)).residuals(sim, exp), np.sign(e) * np.sqrt(np.abs(e)), rtol=1e-15)


@pytest.mark.parametrize("monotonic", [True, False])
def test_smoothed_overlap_rss_is_objective_1_of_the_smoothed_curves(monotonic):
    from mechcalib.objectives.smoothing import SmoothedOverlapRSS

    rng = np.random.default_rng(5)
    exp, sim = _curves(rng, n=60, monotonic=monotonic)
    w = {"a": 2.0, "b": 0.5}
    obj = SmoothedOverlapRSS(n_points=40, smooth_steps=30, smooth_points=50, weights=w)
    assert obj.has_residuals and obj.residual_loss == "root_per_channel"
    r = obj.residuals(sim, exp)
    assert r.shape == (obj.n_residuals(exp),)
    k = obj.channel_residual_count(exp["a"])
    parts = obj.breakdown(sim, exp)
    # each channel's misfit is the root of its unweighted sum of squares; the loss their weighted sum
    for ch, rc in (("a", r[:k]), ("b", r[k:])):
        assert np.sqrt(np.sum((rc / np.sqrt(w[ch])) ** 2)) == pytest.approx(parts[ch], rel=1e-9)
        # one channel smoothed alone agrees with the stacked fit (float32 networks: to rounding)
        np.testing.assert_allclose(rc / np.sqrt(w[ch]), obj.channel_residuals(sim[ch], exp[ch]), rtol=1e-4, atol=1e-6)
    loss = sum(np.sqrt(w[ch]) * np.linalg.norm(rc) for ch, rc in (("a", r[:k]), ("b", r[k:])))
    assert loss == pytest.approx(obj(sim, exp), rel=1e-9)


def test_problem_residuals_concatenate_weighted_experiments_and_mark_failures():
    model = Linear()
    e1 = experiment_from_model(model, {"a": 0.3, "b": 2.0}, name="one")
    base = experiment_from_model(model, {"a": 0.5, "b": 1.0}, conditions={"n_points": 30})
    e2 = Experiment(dict(base.channels), conditions={"n_points": 30}, name="two", weight=3.0)
    prob = Problem(model, [e1, e2], L2())
    assert prob.has_residuals and prob.n_residuals == 130
    X = np.array([[0.2, 5.0], [0.7, 0.5], [np.nan, 1.0]])
    R, batch = prob.evaluate_residuals(X)
    assert R.shape == (3, 130)
    np.testing.assert_allclose(np.sum(R[:2] ** 2, axis=1), prob.evaluate(X[:2]).raw_losses, rtol=1e-12)
    # the second experiment's block is scaled by sqrt(3); its residual is simulated minus measured
    x2 = np.arange(30.0)
    np.testing.assert_allclose(R[0, 100:], np.sqrt(3.0) * ((0.2 * x2 + 5.0) - (0.5 * x2 + 1.0)), rtol=1e-12)
    assert np.all(np.isnan(R[2])) and batch.status[2] == "failed" and "non-finite" in batch.errors[2]
    np.testing.assert_array_equal(prob.residuals(X[:2]), R[:2])


def test_duffing_residuals_reproduce_the_loss_and_vanish_at_the_truth():
    model = Duffing()
    exp = experiment_from_model(model, name="d")
    prob = Problem(model, exp, L2(weights={"displacement": 2.0}, channels=("displacement",)))
    X = np.array([[0.2, 1.0, 0.5], [0.3, 1.2, 0.1]])
    R = prob.residuals(X)
    assert np.max(np.abs(R[0])) == 0.0
    assert np.sum(R[1] ** 2) == pytest.approx(prob.evaluate(X[1:]).raw_losses[0], rel=1e-12)


def test_experiments_with_one_name_are_refused_for_residuals():
    model = Linear()
    e = experiment_from_model(model)
    prob = Problem(model, [e, e], L2())
    with pytest.raises(ConfigurationError, match="distinct names"):
        prob.residuals(np.array([[0.2, 5.0]]))


def test_least_squares_stores_only_the_measured_channels_of_each_response(tmp_path):
    import mechcalib as mc
    from mechcalib.optimizers import LeastSquaresTRF
    from mechcalib.storage import RunStore

    model = Duffing()
    sim = experiment_from_model(model, name="d")
    full = Experiment({"displacement": sim["displacement"]}, name="d")  # restoring_force is not measured
    prob = Problem(model, full, L2())
    with RunStore(tmp_path / "s.db") as store:
        res = mc.calibrate(prob, LeastSquaresTRF(seed=0), max_evals=12, store=store, run_name="r")
        recs = store.evaluations("r", responses=True)
    assert res.n_evals == 12 and all(r.status == "ok" for r in recs)
    # the residuals need the measured curves only: the rest of the model's output is not kept
    assert all(set(r.response["d"]) == set(full.channels) for r in recs)
    assert np.sum(prob.residuals(recs[0].x[None, :]) ** 2) == pytest.approx(recs[0].raw_loss, rel=1e-12)
