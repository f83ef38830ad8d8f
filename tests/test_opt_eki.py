"""Ensemble Kalman inversion (``eki``): the ensemble-space update against the textbook gain, recovery of known
parameters, the refusals, failed simulations, and a bit-identical resume after SIGKILL."""

from __future__ import annotations

import subprocess
import time
import warnings

import numpy as np
import pytest

import mechcalib as mc
from engine_helpers import count_lines, faulty_problem, kill_after, linear_problem, python_command
from mechcalib.config import ConfigFileError, load_config
from mechcalib.core.data import Curve
from mechcalib.errors import ConfigurationError, SettingError
from mechcalib.models import Channel, Model, get_model
from mechcalib.optimizers import get_optimizer
from mechcalib.optimizers.eki import EKI, kalman_moves, misfit_step
from mechcalib.storage import RunStore


def test_the_ensemble_space_update_is_the_kalman_gain():
    """The moves computed through the J x J form equal ``-C_zr (C_rr + lambda I)^-1 (r_j + U eta_j)`` formed
    with the m x m matrix (small m, where that matrix can be formed)."""
    rng = np.random.default_rng(0)
    n, d, m, lam = 8, 3, 12, 0.3
    Z, R, eta = rng.normal(size=(n, d)), rng.normal(size=(n, m)), rng.normal(size=(n, n))
    got = kalman_moves(Z, R, lam, eta)
    Za, Ra = Z - Z.mean(0), R - R.mean(0)
    Czr, Crr = Za.T @ Ra / (n - 1), Ra.T @ Ra / (n - 1)
    _, S, Ut = np.linalg.svd(Ra / np.sqrt(n - 1), full_matrices=False)
    k = int(np.sum(S > S[0] * 1e-12))
    xi = np.sqrt(lam) * eta[:, :k] @ Ut[:k]  # the perturbation in residual space
    want = -(Czr @ np.linalg.solve(Crr + lam * np.eye(m), (R + xi).T)).T
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_the_misfit_controller_step():
    """Iglesias and Yang (2021): h = min(max(M / (2 mean Phi), sqrt(M / (2 var Phi))), 1 - t)."""
    sq = np.array([2.0, 4.0, 6.0])  # Phi = sq / (2 gamma), gamma = 1: mean 2, var 2/3
    assert misfit_step(sq, 1, 1.0, 0.0) == pytest.approx(np.sqrt(1 / (4 / 3)))  # the variance term wins
    far = np.array([20.0, 40.0, 60.0])  # mean 20, var 200/3: the mean term wins
    assert misfit_step(far, 30, 1.0, 0.0) == pytest.approx(30 / 40)
    assert misfit_step(sq, 10, 1.0, 0.5) == pytest.approx(0.5)  # capped at 1 - t


def test_recovers_a_line_exactly_from_noise_free_data():
    """y = a x + b is linear in (a, b) (the probit transform aside): the ensemble collapses on the truth."""
    prob = linear_problem()
    res = mc.calibrate(prob, EKI(seed=3), max_evals=2000)
    assert res.stop_reason == "converged"
    assert res.best_params["a"] == pytest.approx(0.2, rel=1e-4)
    assert res.best_params["b"] == pytest.approx(5.0, rel=1e-4)
    rule = next(c for c in res.choices if c["choice"] == "converged")
    assert rule["rule"] in ("collapsed", "time", "stalled") and rule["at_eval"] == res.n_evals


def test_recovers_the_duffing_oscillator_under_noise_in_rounds():
    """5 % noise on the Duffing displacement: the optimum of least squares, in a handful of rounds of one
    ensemble each, stopped by the controller's time."""
    model = get_model("duffing")
    exp = mc.experiment_from_model(model, noise=0.05, seed=0, name="d")
    prob = mc.Problem(model, mc.Experiment({"displacement": exp["displacement"]}, name="d"), mc.L2())
    opt = EKI(seed=0)
    res = mc.calibrate(prob, opt, max_evals=600)
    lsq = mc.calibrate(prob, get_optimizer("lsq-trf")(seed=0), max_evals=400)
    assert res.stop_reason == "converged" and res.n_batches <= 15
    assert res.best_loss <= lsq.best_loss * 1.01
    truth = {"c": 0.2, "k": 1.0, "k3": 0.5}
    assert all(abs(res.best_params[k] - v) / v < 0.03 for k, v in truth.items()), res.best_params
    assert res.n_evals == res.n_batches * 20  # one batch per round: the whole ensemble (d = 3: 20 members)
    assert np.all((opt.ensemble > 0) & (opt.ensemble < 1))
    spread = next(c for c in res.choices if c["choice"] == "spread")  # offered as a spread, not an interval
    assert "not an interval" in spread["reason"] and np.allclose(spread["std"], opt.ensemble.std(axis=0, ddof=1))


def test_an_ensemble_smaller_than_the_parameters_plus_one_is_refused():
    prob = linear_problem()
    with pytest.raises(
        SettingError, match=r"ensemble_size must be at least the number of free parameters \+ 1 = 3"
    ) as e:
        mc.calibrate(prob, EKI(ensemble_size=2), max_evals=100)
    assert "set ensemble_size >= 3" in str(e.value) and "got 2" in str(e.value)
    with pytest.raises(SettingError, match="ensemble_size"):
        EKI(ensemble_size=3).setup(3)  # direct ask/tell: refused at setup
    EKI(ensemble_size=4).setup(3)  # d + 1 is enough


def test_a_budget_smaller_than_one_round_is_refused():
    with pytest.raises(ConfigurationError, match=r"max_evals=15; raise max_evals to at least 20") as e:
        mc.calibrate(linear_problem(), EKI(), max_evals=15)
    assert "ensemble_size" in str(e.value)


def test_a_config_names_the_ensemble_setting(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(
        'seed = 1\n[model]\nname = "duffing"\n[[experiments]]\nkind = "synthetic"\n'
        '[optimizer]\nname = "eki"\nsettings = { ensemble_size = 3 }\n[budget]\nmax_evals = 100\n'
    )
    with pytest.raises(ConfigFileError) as e:
        load_config(path)
    assert "optimizer.settings.ensemble_size" in str(e.value) and "free parameters + 1 = 4" in str(e.value)


def test_failed_simulations_are_dropped_and_redrawn():
    """FaultyLine fails (an exception or a NaN curve) for a < 0.2; eki drops those members from the update,
    redraws them from the successful ones, and still finds a = b = 0.5."""
    prob = faulty_problem(hang_s=0.0)
    res = mc.calibrate(prob, EKI(seed=1), max_evals=600)
    assert res.n_failed > 0
    assert res.best_params["a"] == pytest.approx(0.5, abs=1e-3)
    assert res.best_params["b"] == pytest.approx(0.5, abs=1e-3)


def test_told_losses_only_it_warns_and_keeps_the_budget():
    prob = mc.FunctionProblem.from_bounds(lambda X: np.sum(X**2, axis=1), [-1, -2], [1, 2])
    with pytest.warns(UserWarning, match="needs residual vectors"):
        res = mc.calibrate(prob, EKI(seed=0), max_evals=200)
    assert res.n_evals == 200 and np.isfinite(res.best_loss)  # it runs, within the budget; it is not the tool


# -- SIGKILL --------------------------------------------------------------------------------------------
#: where SlowLine counts its simulations and how long each takes: module globals, not attributes, so that the
#: problem's fingerprint (a hash of its pickle) is the same with and without them
SLOW = {"counter": "", "delay": 0.0}


class SlowLine(Model):
    """``y = a x + b + 0.1 sin(7 a x)`` that sleeps ``SLOW["delay"]`` per set and appends one line per simulated
    set to the file ``SLOW["counter"]``."""

    name = "slow_line"

    def __init__(self) -> None:
        self.space = mc.ParameterSpace([mc.Parameter("a", 0.0, 1.0), mc.Parameter("b", 0.0, 1.0)])
        self.channels = (Channel("y", "x", "y"),)
        self.presets = {"default": {"a": 0.3, "b": 0.6}}
        self.default_conditions = {"n_points": 50}

    def simulate(self, theta, conditions=None):
        theta = self.check_theta(theta)
        time.sleep(SLOW["delay"] * theta.shape[0])
        if SLOW["counter"]:
            with open(SLOW["counter"], "a") as fh:
                fh.write("sim\n" * theta.shape[0])
        x = np.linspace(0.0, 1.0, 50)
        return [{"y": Curve(x, a * x + b + 0.1 * np.sin(7 * a * x), x_name="x", y_name="y")} for a, b in theta]


def slow_problem() -> mc.Problem:
    exp = mc.experiment_from_model(SlowLine(), noise=0.02, seed=4, name="line")
    return mc.Problem(SlowLine(), exp, mc.L2())


def child(db: str, counter: str, total: int) -> None:
    prob = slow_problem()
    SLOW.update(counter=counter, delay=0.01)
    with warnings.catch_warnings(), RunStore(db) as store:
        warnings.simplefilter("ignore")
        mc.calibrate(prob, EKI(seed=7), max_evals=total, store=store, run_name="e", cache=False)


def test_sigkilled_run_resumes_bit_identically(tmp_path):
    db, counter = str(tmp_path / "eki.db"), str(tmp_path / "sims.txt")
    total, kill_at = 200, 70
    proc = subprocess.Popen(python_command(f"h.child({db!r}, {counter!r}, {total})", module="test_opt_eki"))
    kill_after(proc, db, "e", kill_at, timeout_s=120)
    ref = mc.calibrate(slow_problem(), EKI(seed=7), max_evals=total)
    with RunStore(db) as store:
        stored = store.n_evaluations("e")
        assert store.run("e").status == "interrupted" and kill_at <= stored < ref.n_evals
        assert store.checkpoints("e")  # the resume starts from the ensemble's checkpoint (its RNG included)
        sims_at_kill = count_lines(counter)
        prob = slow_problem()  # its synthetic data are simulated before the count starts
        SLOW["counter"] = counter
        try:
            res = mc.calibrate(prob, EKI(), max_evals=total, store=store, run_name="e", cache=False)
        finally:
            SLOW["counter"] = ""
    assert res.history.losses == ref.history.losses and np.array_equal(res.history.U, ref.history.U)
    assert (res.best_loss, res.n_evals, res.n_batches, res.stop_reason) == (
        ref.best_loss,
        ref.n_evals,
        ref.n_batches,
        ref.stop_reason,
    )
    assert res.choices == ref.choices
    assert count_lines(counter) - sims_at_kill == res.n_evals - stored == res.n_simulated


def test_a_given_noise_runs_the_plain_controller():
    """With ``noise`` set (the residuals' standard deviation, here about the fit's), the controller's time is
    the plain sum of its steps, and it stops the run at 1 near the least-squares optimum."""
    prob = slow_problem()
    lsq = mc.calibrate(prob, get_optimizer("lsq-trf")(seed=0), max_evals=300)
    res = mc.calibrate(prob, EKI(seed=2, noise=0.003), max_evals=1000)
    rule = next(c for c in res.choices if c["choice"] == "converged")
    assert rule["rule"] == "time" and res.n_batches <= 10
    assert res.best_loss <= 1.01 * lsq.best_loss


def test_members_that_fit_exactly_do_not_break_the_step():
    assert misfit_step(np.zeros(5), 10, 1e-300, 0.25) == 0.75
    opt = EKI(seed=0).setup(2)
    U = opt.ask()
    opt.tell(U, np.zeros(len(U)), residuals=np.zeros((len(U), 7)))  # a perfect fit everywhere
    assert np.all(np.isfinite(opt.ask()))


def test_a_run_gives_the_ensemble_spread_in_the_parameters_units(tmp_path):
    # the final ensemble is recorded in the unit cube; result.json and show give it per parameter in its own
    # units (a log-scale bound maps through the exponential), as a spread, not an interval
    import json

    from typer.testing import CliRunner

    from mechcalib.cli import app

    cfg = tmp_path / "run.toml"
    cfg.write_text(
        'seed = 3\n[model]\nname = "duffing"\npreset = "default"\n[parameters.k]\nbounds = [0.2, 5.0]\n'
        'scale = "log"\n[[experiments]]\nkind = "synthetic"\nnoise = 0.02\nseed = 1\nchannels = ["displacement"]\n'
        '[objective]\nname = "l2"\n[optimizer]\nname = "eki"\nsettings = { ensemble_size = 16 }\n'
        "[budget]\nmax_evals = 400\n"
    )
    out = tmp_path / "r"
    runner = CliRunner()
    assert runner.invoke(app, ["run", str(cfg), "--out", str(out), "--quiet"]).exit_code == 0
    spread = json.loads((out / "result.json").read_text())["ensemble_spread"]
    choices = json.loads((out / "result.json").read_text())["choices"]
    choice = next(c for c in choices if c["choice"] == "spread")
    space = load_config(cfg).build_problem().space
    X = space.from_unit(np.array(choice["members"]))
    assert list(spread["parameters"]) == list(space.free_names)
    for j, name in enumerate(space.free_names):
        s = spread["parameters"][name]
        assert s["min"] == pytest.approx(X[:, j].min()) and s["max"] == pytest.approx(X[:, j].max())
        assert s["mean"] == pytest.approx(X[:, j].mean()) and s["std"] == pytest.approx(X[:, j].std(ddof=1))
    truth = get_model("duffing").preset("default")
    assert spread["parameters"]["k"]["mean"] == pytest.approx(truth["k"], rel=0.02)  # in k's units, not the cube's
    assert "not an interval" in spread["note"] and "16 members" in spread["note"]
    shown = runner.invoke(app, ["show", str(out)])
    assert shown.exit_code == 0 and "ensemble: c " in shown.output and "not an interval" in shown.output
