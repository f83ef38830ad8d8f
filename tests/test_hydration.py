"""The affinity hydration model (Mareš et al. (2016), eqs. 5-9)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mechcalib.errors import ConfigurationError
from mechcalib.models import get_model
from mechcalib.models.hydration import (
    EA_DEFAULT,
    Hydration,
    arrhenius_factor,
    integrate_alpha,
    log_time_grid,
)


@pytest.fixture(scope="module")
def model() -> Hydration:
    return Hydration()


def test_registry_and_space(model):
    m = get_model("hydration")
    assert isinstance(m, Hydration)
    assert m.space.free_names == ("B1", "B2", "eta", "alpha_inf")
    # Table 1: p1 = (B1 - 0.1)/0.9, p2 = (log10 B2 + 6)/3, p3 = (eta - 2)/10, p4 = (alpha_inf - 0.7)/0.3
    x = np.array([[0.55, 10**-4.0, 4.0, 0.94]])
    np.testing.assert_allclose(m.space.to_unit(x), [[0.5, 2 / 3, 0.2, 0.8]], atol=1e-12)
    free = Hydration(fit=("Q_pot", "t0")).space.free_names
    assert free == ("B1", "B2", "eta", "alpha_inf", "Q_pot", "t0")
    with pytest.raises(ConfigurationError, match="fit may name"):
        Hydration(fit=("B3",))


def test_regression_value_of_converged_solver(model):
    # README of the COST TU1404 data: alpha(40 000 s) = 0.325552 at 25 °C, heat 162.776 J/g (Q_pot = 500)
    theta = model.full_vector(preset="cost_tu1404")[None, :]
    t = np.array([40000.0 / 3600.0])
    a = model.channel_array(theta, "alpha", t)[0, 0]
    assert abs(a - 0.325552) < 2e-6
    assert abs(model.channel_array(theta, "heat", t)[0, 0] - 162.776) < 1e-3


def test_against_solve_ivp_on_the_grid(model):
    rng = np.random.default_rng(3)
    X = model.space.full_from_unit(rng.random((4, 4)))
    t = model.grid()
    A = model.alpha(X)
    for i in range(4):
        b1, b2, eta, ai = X[i, :4]

        def rhs(s, a, b1=b1, b2=b2, eta=eta, ai=ai):
            return b1 * (b2 / ai + a) * (ai - a) * np.exp(-eta * a / ai)

        sol = solve_ivp(rhs, (0.0, t[-1]), [0.0], t_eval=t, rtol=1e-10, atol=1e-13, method="DOP853")
        assert np.max(np.abs(sol.y[0] - A[i])) < 1e-6


def test_grid_is_log_uniform_with_1161_steps(model):
    t = model.grid()
    assert t.size == 1161
    np.testing.assert_allclose(np.diff(np.log(t)), np.log(1e6) / 1160, rtol=1e-10)
    assert t[0] == pytest.approx(0.1) and t[-1] == pytest.approx(1e5)  # the grid docs/hydration.md decides
    with pytest.raises(ConfigurationError, match="t_min < t_max"):
        log_time_grid(1.0, 0.5)


def test_arrhenius_default_ea_reproduces_factor_1651():
    assert EA_DEFAULT == 38300.0
    assert arrhenius_factor(35.0, EA_DEFAULT) == pytest.approx(1.651, abs=1e-3)
    assert arrhenius_factor(25.0, 123456.0) == pytest.approx(1.0)
    assert arrhenius_factor(20.0, 0.0) == 1.0


def test_temperature_scales_time(model):
    # isothermal at 35 °C: alpha(t) equals alpha at 25 °C after factor * t (section 4)
    theta = model.full_vector()[None, :]
    t = np.array([1.0, 5.0, 20.0, 100.0])
    f = float(arrhenius_factor(35.0, EA_DEFAULT))
    hot = model.channel_array(theta, "alpha", t, {"T": 35.0})
    ref = model.channel_array(theta, "alpha", f * t)
    np.testing.assert_allclose(hot, ref, atol=2e-6)


def test_time_origin_shift(model):
    th0 = model.full_vector()
    th2 = model.full_vector({"t0": 2.0})
    t = np.array([0.5, 1.9, 2.5, 10.0, 100.0])
    a2 = model.channel_array(th2[None], "alpha", t)[0]
    assert a2[0] == 0.0 and a2[1] == 0.0
    np.testing.assert_allclose(a2[2:], model.channel_array(th0[None], "alpha", t[2:] - 2.0)[0], atol=1e-6)
    assert model.channel_array(th2[None], "heat_rate", t)[0, 1] == 0.0


def test_channels_heat_and_rate_consistent(model):
    theta = model.full_vector({"Q_pot": 450.0})[None, :]
    (r,) = model.simulate(theta)
    assert set(r) == {"alpha", "heat", "heat_rate"}
    np.testing.assert_allclose(r["heat"].y, 450.0 * r["alpha"].y)
    t, q = r["heat"].x, r["heat"].y
    dq = np.gradient(q, t)
    mid = slice(300, 1100)
    np.testing.assert_allclose(r["heat_rate"].y[mid], dq[mid], rtol=2e-2, atol=1e-3 * r["heat_rate"].y.max())
    # alpha rises monotonically and never passes alpha_inf
    assert np.all(np.diff(r["alpha"].y) >= -1e-15) and r["alpha"].y.max() <= theta[0, 3] + 1e-12


def test_integrator_converges_with_dalpha(model):
    theta = model.full_vector(preset="cost_tu1404")[None, :]
    kp = model.kernel_params(theta, 25.0)
    t = np.array([11.0, 50.0])
    errs = [abs(integrate_alpha(kp, t, d)[0, 0] - integrate_alpha(kp, t, 1e-5)[0, 0]) for d in (2e-2, 2e-3)]
    assert errs[1] < errs[0] and errs[1] < 2e-6


@pytest.mark.benchmark
def test_speed_10000_simulations(model):
    """10 000 curves in seconds: on the measured span (0.1-1000 h) under 5 s; on the default 0.1-1e5 h grid,
    whose plateau costs the explicit integrator about 3.5 times as many substeps, under 20 s."""
    rng = np.random.default_rng(1)
    X = model.space.full_from_unit(rng.random((10000, 4)))
    model.alpha(X[:100])
    t0 = time.perf_counter()
    model.alpha(X, conditions={"t_max": 1000.0})
    assert time.perf_counter() - t0 < 5.0
    t0 = time.perf_counter()
    model.alpha(X)
    assert time.perf_counter() - t0 < 20.0
    assert math.isfinite(float(model.alpha(X[:1])[0, -1]))


def test_example_config_builds_a_problem_that_scores_the_measured_heat():
    from pathlib import Path

    from mechcalib.config import load_config

    cfg = load_config(Path(__file__).resolve().parents[1] / "examples" / "hydration_cost20.toml")
    problem = cfg.build_problem()
    assert problem.space.free_names == ("B1", "B2", "eta", "alpha_inf", "t0")
    assert problem.experiments[0].conditions == {"T": 20.0}
    good = problem.space.from_dict({"B1": 1.0, "B2": 1e-3, "eta": 3.7, "alpha_inf": 0.74, "t0": -2.5})
    bad = problem.space.from_dict({"B1": 0.1, "B2": 1e-6, "eta": 12.0, "alpha_inf": 0.7, "t0": 6.0})
    losses = problem.evaluate(np.vstack([good, bad])).losses
    assert np.all(np.isfinite(losses)) and losses[0] < 0.1 * losses[1]
