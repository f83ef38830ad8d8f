from __future__ import annotations

import math

import numpy as np
import pytest

import mechcalib as mc
from mechcalib import ConfigurationError, Curve, Experiment
from mechcalib.models import SimulationFailure, get_model
from mechcalib.models.analytic import Linear


class Flaky(Linear):
    """Fails for a > 0.8 (as a failure marker) and raises for a < 0.15 (as an exception)."""

    def simulate(self, theta, conditions=None):
        theta = self.check_theta(theta)
        if np.any(theta[:, 0] < 0.15):
            raise RuntimeError("solver crashed")
        out = super().simulate(theta, conditions)
        return [SimulationFailure("diverged") if t[0] > 0.8 else r for t, r in zip(theta, out, strict=True)]


def test_problem_losses_match_objective_by_hand():
    m = Linear()
    exp = mc.experiment_from_model(m)  # a=0.2, b=5 on x=0..99
    prob = mc.Problem(m, exp, mc.F1())
    b = prob.evaluate(np.array([[0.2, 5.0], [0.2, 6.0], [0.3, 5.0]]))
    assert b.status == ["ok"] * 3
    assert b.losses[0] == 0.0
    assert b.losses[1] == pytest.approx(100.0)  # 100 points off by 1
    assert b.losses[2] == pytest.approx(sum((0.1 * x) ** 2 for x in range(100)))


def test_failures_are_recorded_per_set_and_penalised():
    m = Flaky()
    prob = mc.Problem(m, mc.experiment_from_model(Linear()), mc.F1())
    b = prob.evaluate(np.array([[0.2, 5.0], [0.9, 5.0], [0.12, 5.0], [0.3, 5.0]]))
    assert b.status == ["ok", "failed", "failed", "ok"]
    assert "diverged" in b.errors[1] and "solver crashed" in b.errors[2]
    assert math.isinf(b.losses[1]) and math.isinf(b.losses[2]) and np.isnan(b.raw_losses[1])
    assert b.losses[0] == 0.0 and b.n_failed == 2
    prob2 = mc.Problem(m, mc.experiment_from_model(Linear()), mc.F1(), failure_loss=1e9)
    assert prob2.evaluate(np.array([[0.9, 5.0]])).losses[0] == 1e9


def test_calibration_survives_failures():
    prob = mc.Problem(Flaky(), mc.experiment_from_model(Linear()), mc.F1())
    from mechcalib.optimizers import RandomSearch

    res = mc.calibrate(prob, RandomSearch(seed=0), max_evals=100)
    assert res.n_failed > 0 and math.isfinite(res.best_loss)
    assert res.n_evals == 100


def test_several_experiments_with_conditions_and_weights():
    m = Linear()
    e1 = mc.experiment_from_model(m, conditions={"n_points": 10}, name="short")
    e2 = Experiment(dict(e1.channels), conditions={"n_points": 10}, name="twice", weight=2.0)
    prob = mc.Problem(m, [e1, e2], mc.F1())
    b = prob.evaluate(np.array([[0.2, 6.0]]))
    assert b.losses[0] == pytest.approx(10.0 + 2 * 10.0)


def test_problem_validation():
    m = Linear()
    exp = Experiment({"z": Curve([0, 1], [0, 1])})
    with pytest.raises(ConfigurationError, match=r"channel\(s\) \['z'\].*its channels are \['y'\]"):
        mc.Problem(m, exp, mc.F1())
    with pytest.raises(ConfigurationError, match="no condition 'T'"):
        m.simulate(np.array([[0.2, 5.0]]), {"T": 20.0})
    with pytest.raises(ConfigurationError, match=r"shape \(n, 2\) ordered as \['a', 'b'\]"):
        m.simulate(np.zeros((1, 3)))
    with pytest.raises(ConfigurationError, match="valid names"):
        get_model("arch3d")


def test_fixed_parameters_in_a_problem():
    m = Linear()
    space = m.space.with_fixed(b=5.0)
    prob = mc.Problem(m, mc.experiment_from_model(m), mc.F1(), space=space)
    assert prob.space.dim == 1
    assert prob.evaluate(np.array([[0.2]])).losses[0] == 0.0


def test_duffing_diverging_set_fails():
    m = get_model("duffing")
    # negative cubic stiffness well outside the bounds lets the response escape to infinity
    (bad,) = m.simulate(np.array([[0.0, 0.1, -50.0]]), {"F0": 5.0})
    assert isinstance(bad, SimulationFailure)


def test_duffing_linear_case_matches_analytic_solution():
    # k3 = 0: m x'' + c x' + k x = F0 sin(w t), x(0)=v(0)=0; compare with scipy's closed form via lsim
    from scipy import signal

    m = get_model("duffing")
    c, k = 0.3, 2.0
    (r,) = m.simulate(np.array([[c, k, 0.0]]))
    t = r["displacement"].x
    _, y, _ = signal.lsim(([1.0], [1.0, c, k]), np.sin(1.2 * t), t)
    assert np.max(np.abs(r["displacement"].y - y)) < 1e-3 * np.max(np.abs(y))


def test_recovery_of_known_parameters_from_synthetic_data():
    """Ground truth: calibrate the Duffing model on its own noise-free response."""
    from mechcalib.optimizers import LatinHypercube

    m = get_model("duffing")
    prob = mc.Problem(m, mc.experiment_from_model(m), mc.F1(channels=("displacement",)))
    res = mc.calibrate(prob, LatinHypercube(batch_size=50, seed=0), max_evals=200)
    # then polish the best point locally with scipy to confirm the global minimum is the truth
    from scipy.optimize import minimize

    loss = lambda x: prob.evaluate(np.clip(x, prob.space.lower, prob.space.upper)).losses[0]  # noqa: E731
    opt = minimize(loss, res.best_x, method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-12, "maxiter": 2000})
    assert np.allclose(opt.x, [0.2, 1.0, 0.5], rtol=1e-3)


def test_objective_with_values_many_scores_the_batch_at_once():
    """An objective offering ``values_many`` gets the live responses of a batch in one call, and an
    exception it returns for one response fails that set alone."""
    from mechcalib.objectives import OverlapRSS

    model = get_model("duffing")
    exp = mc.experiment_from_model(model, seed=0)

    class Batched(OverlapRSS):
        calls: list = []

        def values_many(self, sims, experiment):
            type(self).calls.append(len(sims))
            out = [self(s, experiment) for s in sims]
            out[1] = ValueError("cannot score this one")
            return out

    plain = mc.Problem(model, exp, OverlapRSS())
    batched = mc.Problem(model, exp, Batched())
    X = np.random.default_rng(1).uniform(0.2, 0.8, size=(4, plain.space.dim))
    a, b = plain.evaluate(plain.space.from_unit(X)), batched.evaluate(batched.space.from_unit(X))
    assert Batched.calls == [4]
    assert np.isnan(b.raw_losses[1]) and b.status[1] == "failed" and "cannot score this one" in b.errors[1]
    keep = [0, 2, 3]
    assert np.all(np.isfinite(a.losses))
    np.testing.assert_array_equal(b.losses[keep], a.losses[keep])


# -- failure_loss against the objective's lower bound (issue 31, item 3) --------------------------------------
def test_builtin_objectives_declare_a_lower_bound_of_zero():
    from mechcalib.objectives.smoothing import SmoothedOverlapRSS

    for cls in (mc.OverlapRSS, mc.F1, mc.F2, mc.L2, SmoothedOverlapRSS):
        assert cls.lower_bound == 0.0, cls
    assert mc.Objective.lower_bound == -math.inf  # an objective that declares none


def test_a_subclass_changing_the_misfit_loses_its_parents_bound_unless_it_declares_one():
    class Shifted(mc.F1):
        def channel_misfit(self, sim, exp):
            return super().channel_misfit(sim, exp) - 10.0

    class Scaled(mc.F1):
        lower_bound = 0.0

        def channel_misfit(self, sim, exp):
            return 2.0 * super().channel_misfit(sim, exp)

    assert Shifted.lower_bound == -math.inf and Scaled.lower_bound == 0.0
    m = Linear()
    mc.Problem(m, mc.experiment_from_model(m), Shifted(), failure_loss=-5.0)  # no bound declared: accepted


@pytest.mark.parametrize("bad", [-1.0, -1, -1e-12])
def test_problem_refuses_a_failure_loss_below_the_objectives_minimum(bad):
    """Audit case: failure_loss = -1.0 with a non-negative objective was accepted, so that a failed
    simulation beat every real result."""
    m = Linear()
    exp = mc.experiment_from_model(m)
    with pytest.raises(ConfigurationError) as ei:
        mc.Problem(m, exp, mc.F1(), failure_loss=bad)
    text = str(ei.value)
    assert "failure_loss must not be below the lowest loss objective 'f1' can give (0.0)" in text
    assert f"got {bad!r}" in text and "inf (the default)" in text
    # zero (a tie with a perfect fit) and positive penalties stay accepted
    assert mc.Problem(m, exp, mc.F1(), failure_loss=0.0).failure_loss == 0.0
    assert mc.Problem(m, [exp, exp], mc.OverlapRSS(), failure_loss=1e6).loss_lower_bound == 0.0


def test_calibrate_refuses_a_failure_loss_set_below_the_minimum_after_construction():
    m = Linear()
    prob = mc.Problem(m, mc.experiment_from_model(m), mc.F2())
    prob.failure_loss = -1.0
    from mechcalib.optimizers import RandomSearch

    with pytest.raises(ConfigurationError, match=r"failure_loss must not be below .*'f2'.*got -1\.0"):
        mc.calibrate(prob, RandomSearch(seed=0), max_evals=4)
