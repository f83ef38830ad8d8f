"""The effective sample size of correlated residuals (mechcalib.uncertainty.likelihood.effective_sample_size)
against the AR(1) theory, and the ``effective_samples`` option of the uncertainty engine reaching the local
intervals, the profile likelihood, uncertainty.json and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.signal import lfilter

import mechcalib as mc
from mechcalib.core.data import Curve, Experiment
from mechcalib.core.problem import Problem
from mechcalib.models.analytic import Linear
from mechcalib.objectives.curves import L2
from mechcalib.optimizers import make_optimizer
from mechcalib.storage import MemoryStore
from mechcalib.uncertainty import uncertainty
from mechcalib.uncertainty.likelihood import Block, correlation_inflation, effective_sample_size


def _ar1(rho: float, n: int, seed: int) -> np.ndarray:
    """Stationary AR(1) noise of unit variance and lag-one correlation ``rho``."""
    w = np.random.default_rng(seed).normal(size=n)
    w[0] /= np.sqrt(1.0 - rho**2)  # the first sample from the stationary distribution
    return lfilter([np.sqrt(1.0 - rho**2)], [1.0, -rho], w)


def test_white_noise_keeps_its_sample_size():
    n = 4000
    sizes = [effective_sample_size(np.random.default_rng(s).normal(size=n)) for s in range(10)]
    assert all(x <= n for x in sizes)  # tau is kept >= 1: the remedy never narrows an interval
    assert np.median(sizes) > 0.93 * n


@pytest.mark.parametrize("rho", [0.5, 0.9])
def test_ar1_noise_gives_the_theoretical_effective_size(rho):
    n = 8000
    expected = n * (1 - rho) / (1 + rho)  # n / (1 + 2 sum rho^k)
    sizes = [effective_sample_size(_ar1(rho, n, s)) for s in range(10)]
    assert np.median(sizes) == pytest.approx(expected, rel=0.12)
    assert effective_sample_size(_ar1(rho, n, 0)) < 0.5 * n  # far from the independent count


def test_inflation_is_per_channel():
    r = np.concatenate([np.random.default_rng(1).normal(size=3000), _ar1(0.9, 3000, 2)])
    f = correlation_inflation(r, [Block("white", 0, 3000), Block("ar1", 3000, 6000)])
    assert f[0] < 1.1 and 12 < f[1] < 28  # theory: 1 and 19


def _correlated_linear(n: int = 600, rho: float = 0.9) -> tuple[Problem, MemoryStore, object]:
    x = np.arange(n, dtype=float)
    y = 0.2 * x + 5.0 + 0.5 * _ar1(rho, n, 7)
    exp = Experiment({"y": Curve(x, y, x_name="x", y_name="y")}, conditions={"n_points": n}, name="lin")
    prob = Problem(Linear(), exp, L2())
    store = MemoryStore()
    res = mc.calibrate(prob, make_optimizer("lsq-trf", seed=0), max_evals=60, store=store, run_name="fit")
    return prob, store, res


def test_the_option_widens_the_intervals_by_the_square_root_of_the_inflation():
    prob, store, res = _correlated_linear()
    plain = uncertainty(res, problem=prob, store=store)
    eff = uncertainty(res, problem=prob, store=store, effective_samples=True)
    assert eff.n_simulated == 0  # the same polish and Jacobian, read back from the store
    n_eff = eff.local.effective_samples["y"]
    assert plain.local.effective_samples is None and "effective_samples" not in plain.to_json()["local"]
    assert 600 / 28 < n_eff < 600 / 10
    np.testing.assert_allclose(eff.local.std, plain.local.std * np.sqrt(600 / n_eff), rtol=1e-9)
    assert eff.local.noise == plain.local.noise  # the noise level is the same; its weight is not
    assert eff.to_json()["local"]["effective_samples"] == {"y": n_eff}
    # the profile likelihood is scaled the same way: it gives the widened local interval
    prof = uncertainty(res, problem=prob, store=store, effective_samples=True, profile=["a"]).profiles["a"]
    sd = eff.local.std[0]
    assert abs(prof.lower - eff.local.lower[0]) < 0.1 * sd and abs(prof.upper - eff.local.upper[0]) < 0.1 * sd


def test_a_given_noise_level_is_scaled_too():
    prob, store, res = _correlated_linear()
    plain = uncertainty(res, problem=prob, store=store, noise=0.5)
    eff = uncertainty(res, problem=prob, store=store, noise=0.5, effective_samples=True)
    ratio = eff.local.std / plain.local.std
    np.testing.assert_allclose(ratio, np.sqrt(600 / eff.local.effective_samples["y"]), rtol=1e-9)


def test_the_command_takes_effective_samples(tmp_path):
    from typer.testing import CliRunner

    from mechcalib.cli import app

    examples = Path(__file__).parents[1] / "examples"
    out = tmp_path / "lin"
    runner = CliRunner()
    ran = runner.invoke(app, ["run", str(examples / "linear.toml"), "--out", str(out), "-q", "--budget", "100"])
    assert ran.exit_code == 0, ran.output
    r = runner.invoke(app, ["uncertainty", str(out), "--effective-samples"])
    assert r.exit_code == 0, r.output
    assert "effective sample size per channel" in r.output
    sizes = json.loads((out / "uncertainty.json").read_text())["local"]["effective_samples"]
    assert set(sizes) == {"y"} and 0 < sizes["y"] <= 100


@pytest.mark.filterwarnings("ignore::UserWarning")  # a 150-step chain is short; its spread is what is checked
def test_the_posterior_uses_the_scaled_likelihood_in_runs_of_its_own():
    prob, store, res = _correlated_linear()
    kw = {"posterior": True, "walkers": 8, "steps": 150, "seed": 1}
    plain = uncertainty(res, problem=prob, store=store, **kw)
    eff = uncertainty(res, problem=prob, store=store, effective_samples=True, **kw)  # same store: no clash
    widen = np.sqrt(600 / eff.local.effective_samples["y"])
    assert plain.posterior is not None and eff.posterior is not None
    np.testing.assert_allclose(eff.posterior.std / plain.posterior.std, widen, rtol=0.35)
    assert {"fit.posterior", "fit.neff.posterior"} <= {r.name for r in store.runs()}
