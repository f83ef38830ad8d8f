"""Parameter uncertainty (mechcalib.uncertainty): the Laplace covariance against the textbook formula, the
emcee posterior against the analytic linear-Gaussian one, the least identifiable direction named, a killed
chain resumed exactly, and bad input refused with the rule, the value and the fix."""

from __future__ import annotations

import subprocess
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import mechcalib as mc
from engine_helpers import kill_after, python_command
from mechcalib.core.data import Curve, Experiment
from mechcalib.core.model import Channel, Model
from mechcalib.core.parameters import Parameter, ParameterSpace
from mechcalib.core.problem import Problem
from mechcalib.errors import ConfigurationError
from mechcalib.models.analytic import Linear
from mechcalib.objectives.curves import L2
from mechcalib.optimizers import make_optimizer
from mechcalib.storage import MemoryStore, RunStore
from mechcalib.uncertainty import UncertaintyWarning, uncertainty
from mechcalib.uncertainty.sampler import EnsembleSampler

N = 30


def _noisy_linear(seed: int = 0, sigma: float = 0.5, model: Model | None = None) -> tuple[Problem, np.ndarray]:
    model = model or Linear()
    x = np.arange(N, dtype=float)
    y = 0.2 * x + 5.0 + np.random.default_rng(seed).normal(0.0, sigma, N)
    exp = Experiment({"y": Curve(x, y, x_name="x", y_name="y")}, conditions={"n_points": N}, name="lin")
    return Problem(model, exp, L2()), y


def _fitted(prob: Problem, seed: int = 0):
    return mc.calibrate(prob, make_optimizer("lsq-trf", seed=seed), max_evals=60)


def test_linear_covariance_is_the_textbook_one():
    prob, y = _noisy_linear()
    u = mc.uncertainty(_fitted(prob), problem=prob)  # the package is callable
    X = np.column_stack([np.arange(N), np.ones(N)])
    theta, rss, *_ = np.linalg.lstsq(X, y, rcond=None)
    cov = rss[0] / (N - 2) * np.linalg.inv(X.T @ X)  # s^2 (J^T J)^-1
    sd = np.sqrt(np.diag(cov))
    np.testing.assert_allclose([u.best["a"], u.best["b"]], theta, rtol=1e-7)
    np.testing.assert_allclose(u.local.std, sd, rtol=1e-5)
    np.testing.assert_allclose(u.local.correlation[0, 1], cov[0, 1] / (sd[0] * sd[1]), rtol=1e-5)
    p = u.parameters()["a"]
    assert p["method"] == "laplace" and p["lower"] == pytest.approx(theta[0] - 1.959964 * sd[0], rel=1e-5)
    assert u.converged and u.local.noise_estimated


@pytest.mark.filterwarnings("ignore:the chain is")  # 800 steps are about 27 tau, enough for this check
def test_emcee_reproduces_the_linear_gaussian_posterior():
    prob, y = _noisy_linear(seed=1)
    sigma = 0.5
    u = uncertainty(_fitted(prob), problem=prob, posterior=True, noise=sigma, walkers=8, steps=800, seed=4)
    X = np.column_stack([np.arange(N), np.ones(N)])
    mean = np.linalg.lstsq(X, y, rcond=None)[0]
    sd = np.sqrt(np.diag(sigma**2 * np.linalg.inv(X.T @ X)))  # the box is wide: the prior is flat here
    post = u.posterior
    assert post is not None and post.steps == 800 and 0.3 < post.acceptance < 0.9
    err = np.abs(post.mean - mean) / (sd / np.sqrt(post.ess))  # the mean's sampling error
    assert np.all(err < 4), err
    np.testing.assert_allclose(post.std, sd, rtol=0.15)
    np.testing.assert_allclose(u.local.std, sd, rtol=1e-5)  # the given noise, not an estimate
    assert u.parameters()["b"]["method"] == "posterior"


def test_the_preconditioned_move_samples_a_correlated_gaussian():
    mu, cov = np.array([0.4, 0.6]), np.array([[0.0025, 0.0036], [0.0036, 0.0064]])  # correlation 0.9
    P = np.linalg.inv(cov)
    s = EnsembleSampler(walkers=8, move="gauss", x0=mu.tolist(), init_cov=cov.tolist(), steps=3000, seed=2).setup(2)
    batches = 0
    while not s.converged:
        U = s.ask()
        s.tell(U, 0.5 * np.einsum("ij,jk,ik->i", U - mu, P, U - mu))
        batches += 1
    c = s.chain[200:].reshape(-1, 2)
    assert batches <= 3001  # every walker moves in one batch per step
    np.testing.assert_allclose(c.mean(axis=0), mu, atol=0.01)
    np.testing.assert_allclose(np.cov(c.T), cov, rtol=0.1, atol=2e-4)


def test_one_seed_gives_one_chain():
    s = [EnsembleSampler(walkers=6, x0=[0.5, 0.5, 0.5], steps=30, seed=9).setup(3) for _ in range(2)]
    for opt in s:
        while not opt.converged:
            U = opt.ask()
            opt.tell(U, 0.5 * np.sum(((U - 0.4) / 0.1) ** 2, axis=1))
    assert np.array_equal(s[0].chain, s[1].chain) and s[0].chain.shape == (30, 6, 3)


class Tradeoff(Model):
    """``y = a1 x^2 + a2 a3^0.8 x + 1e-3 a2 x^3``: the data see ``ln a2 + 0.8 ln a3`` and, barely, ``a2``."""

    name = "tradeoff"

    def __init__(self, n: int = 40) -> None:
        ps = [Parameter("a1", 0.5, 2.0), Parameter("a2", 0.1, 10.0, scale="log"), Parameter("a3", 0.1, 10.0, "log")]
        self.space = ParameterSpace(ps)
        self.channels = (Channel("y", "x", "y"),)
        self.presets = {"default": {"a1": 1.0, "a2": 1.0, "a3": 1.0}}
        self.n = n

    def simulate(self, theta, conditions=None):
        theta = self.check_theta(theta)
        x = np.linspace(0.0, 1.0, self.n)
        a1, a2, a3 = theta[:, :1], theta[:, 1:2], theta[:, 2:3]
        Y = a1 * x**2 + a2 * a3**0.8 * x + 1e-3 * a2 * x**3
        return [{"y": Curve(x, Y[i], x_name="x", y_name="y")} for i in range(len(Y))]


def _tradeoff_problem(**kw) -> Problem:
    model = Tradeoff(**kw)
    return Problem(model, mc.experiment_from_model(model, name="t"), L2())


def test_the_unidentifiable_direction_is_named():
    prob = _tradeoff_problem()
    res = mc.calibrate(prob, make_optimizer("lsq-trf", seed=0, n_starts=1, restart=False), max_evals=200)
    with pytest.warns(UncertaintyWarning, match="'a2' is practically unidentifiable"):
        u = uncertainty(res, problem=prob, noise=0.01)
    assert "a2 and a3 trade off: a3 - 0.8·a2 (relative changes) is determined only to" in u.local.weakest
    assert u.local.strongest.startswith("a2 + 0.8·a3")
    assert u.local.condition > 1e6 and "a2" in u.local.unidentifiable and "a1" not in u.local.unidentifiable
    assert any("practically unidentifiable" in w for w in u.warnings)


# -- kill -9 during a chain, then resume -------------------------------------------------------------------
class SlowLinear(Linear):
    """The linear model taking 15 ms per batch, so that a chain can be killed mid-way."""

    def simulate(self, theta, conditions=None):
        time.sleep(0.015)
        return super().simulate(theta, conditions)


def _chain(store, steps=60):
    prob, _ = _noisy_linear(seed=2, model=SlowLinear())
    res = mc.calibrate(prob, make_optimizer("lsq-trf", seed=0), max_evals=40, store=store, run_name="fit")
    return uncertainty(res, problem=prob, store=store, posterior=True, walkers=8, steps=steps, seed=3, noise=0.5)


def child_chain(db: str) -> None:
    """The chain killed by :func:`test_sigkilled_chain_resumes_exactly` (executed in a child process)."""
    with RunStore(db) as store:
        _chain(store)


def test_sigkilled_chain_resumes_exactly(tmp_path):
    db = str(tmp_path / "chain.db")
    child = subprocess.Popen(python_command(f"h.child_chain({db!r})", module="test_uncertainty"))
    kill_after(child, db, "fit.posterior", 150)
    ref = _chain(MemoryStore())
    with RunStore(db) as store:
        stored = store.n_evaluations("fit.posterior")
        got = _chain(store)
        total = store.n_evaluations("fit.posterior")
    assert 150 <= stored < total
    assert np.array_equal(got.posterior.chain, ref.posterior.chain)
    assert np.array_equal(got.posterior.log_prob, ref.posterior.log_prob)
    assert got.posterior.n_simulated == total - stored and got.n_simulated == total - stored  # nothing twice


# -- bad input ------------------------------------------------------------------------------------------------
def test_a_noise_level_not_above_zero_is_refused():
    prob, _ = _noisy_linear()
    res = _fitted(prob)
    for bad in (0.0, -1.0, {"y": 0.0}):
        with pytest.raises(ConfigurationError, match=r"noise level must be a finite number > 0.*got (0\.0|-1\.0)"):
            uncertainty(res, problem=prob, noise=bad)
    with pytest.raises(ConfigurationError, match="channel 'y' has none"):
        uncertainty(res, problem=prob, noise={"z": 1.0})


def test_more_parameters_than_residuals_is_refused():
    prob = _tradeoff_problem(n=3)
    res = mc.calibrate(prob, make_optimizer("lhs", seed=0), max_evals=5)
    with pytest.raises(ConfigurationError, match="more residuals than free parameters, got 3 residuals for 3"):
        uncertainty(res, problem=prob)


def test_a_run_not_converged_is_refused_or_forced():
    prob, _ = _noisy_linear()
    res = mc.calibrate(prob, make_optimizer("lhs", seed=0), max_evals=3)
    with pytest.raises(ConfigurationError, match="has not converged.*evaluation budget.*force=True"):
        uncertainty(res, problem=prob, polish_budget=3)
    with pytest.warns(UncertaintyWarning, match="has not converged"):
        u = uncertainty(res, problem=prob, polish_budget=3, force=True)
    assert not u.converged and np.all(np.isfinite(u.local.std))


class Unused(Linear):
    """The linear model with a parameter ``c`` it does not use."""

    def __init__(self) -> None:
        super().__init__()
        self.space = ParameterSpace([*Linear().space, Parameter("c", 0.0, 1.0)])
        self.presets = {"default": {"a": 0.2, "b": 5.0, "c": 0.5}}


def test_a_singular_jacobian_names_the_parameter():
    prob, _ = _noisy_linear(model=Unused())
    res = mc.calibrate(prob, make_optimizer("lhs", seed=0), max_evals=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ConfigurationError, match="singular.*'c' \\(a zero column.*fix one of them"):
            uncertainty(res, problem=prob, force=False)
    with pytest.warns(UncertaintyWarning, match="singular"):
        u = uncertainty(res, problem=prob, force=True)
    p = u.parameters()["c"]
    assert p["lower"] == 0.0 and p["upper"] == 1.0 and p["std"] is None


# -- the command line -----------------------------------------------------------------------------------------
def test_the_command_writes_intervals_samples_and_plots(tmp_path):
    import json

    from typer.testing import CliRunner

    from mechcalib.cli import app

    examples = Path(__file__).parents[1] / "examples"
    out = tmp_path / "lin"
    runner = CliRunner()
    assert (
        runner.invoke(app, ["run", str(examples / "linear.toml"), "--out", str(out), "-q", "--budget", "100"]).exit_code
        == 0
    )
    args = ["uncertainty", str(out), "--posterior", "--walkers", "8", "--steps", "150", "--seed", "2", "--json"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    p = data["parameters"]["a"]
    assert data["method"] == "posterior" and p["lower"] < p["best"] < p["upper"] and p["std"] > 0
    again = runner.invoke(app, args)  # resumed from the store: the same chain, nothing simulated
    assert json.loads(again.stdout)["parameters"] == data["parameters"]
    assert json.loads((out / "uncertainty.json").read_text())["posterior"]["n_simulated"] == 0
    show = json.loads(runner.invoke(app, ["show", str(out), "--json"]).stdout)
    assert show["uncertainty"]["parameters"]["a"]["upper"] == p["upper"]
    assert json.loads((out / "result.json").read_text())["uncertainty"]["parameters"]["b"]["method"] == "posterior"
    samples = np.loadtxt(out / "samples.csv", delimiter=",", skiprows=1)
    assert samples.shape[1] == 2 and np.load(out / "samples.npz")["chain_unit"].shape == (150, 8, 2)
    assert runner.invoke(app, ["report", str(out)]).exit_code == 0
    assert (out / "corner.png").is_file() and (out / "band_linear.png").is_file()
    bad = runner.invoke(app, ["uncertainty", str(out), "--noise", "0"])
    assert bad.exit_code != 0 and "noise level must be a finite number > 0" in bad.output
    # a resume keeps the intervals in result.json, and marks them stale once the run's best has moved
    assert runner.invoke(app, ["resume", str(out), "-q"]).exit_code == 0
    kept = json.loads((out / "result.json").read_text())["uncertainty"]
    assert kept["stale"] is False and kept["parameters"]["a"]["upper"] == p["upper"]
    unc = json.loads((out / "uncertainty.json").read_text())
    assert (
        unc["source"]["best_index"] == json.loads(runner.invoke(app, ["show", str(out), "--json"]).stdout)["best_index"]
    )
    unc["source"]["best_index"] += 1  # as if computed before the run found its present best
    (out / "uncertainty.json").write_text(json.dumps(unc))
    assert runner.invoke(app, ["resume", str(out), "-q"]).exit_code == 0
    moved = json.loads((out / "result.json").read_text())["uncertainty"]
    assert moved["stale"] is True and "run `mechcalib uncertainty`" in moved["note"]
    assert "stale: computed at evaluation" in runner.invoke(app, ["show", str(out)]).output


def test_the_profile_of_a_linear_model_gives_the_local_interval():
    prob, _ = _noisy_linear(seed=3)
    u = uncertainty(_fitted(prob), problem=prob, noise=0.5, profile=["a"])
    p = u.profiles["a"]
    sd = u.local.std[0]
    assert abs(p.lower - u.local.lower[0]) < 0.1 * sd and abs(p.upper - u.local.upper[0]) < 0.1 * sd
    assert u.to_json()["profiles"]["a"]["upper"] == p.upper


def test_the_library_refuses_a_folder_and_names_the_run_folder_function(tmp_path):
    """The uncertainty library knows nothing of run folders: a path is refused, naming the function that
    analyses one (mechcalib.runs.folder_uncertainty, what `mechcalib uncertainty DIR` runs)."""
    with pytest.raises(mc.ConfigurationError, match="folder_uncertainty"):
        uncertainty(tmp_path)
    with pytest.raises(mc.ConfigurationError, match="profile takes one or two"):
        uncertainty(tmp_path, profile=["a", "b", "c"])  # the options are checked first, as before
