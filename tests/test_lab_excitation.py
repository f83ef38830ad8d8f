"""Measured excitations driving the hysteretic models: each interpolation against the exact periodic steady
state of a linear SDOF under a multisine, the step rule and its convergence check, ground acceleration,
a force at a named node of the frame, and configs whose record paths resolve from their own folder."""

from __future__ import annotations

import gc
import pickle
import warnings

import numpy as np
import pytest

from mechcalib.config import load_config
from mechcalib.errors import ConfigurationError
from mechcalib.models.hysteresis import FrameMDOF, HystereticSDOF
from mechcalib.models.hysteresis.steps import StepWarning, choose_steps
from mechcalib.records import bandwidth

P, FS, N_PER = 4.0, 100.0, 10
FREQS = np.arange(1, 41) / P  # 0.25 ... 10 Hz
PHASES = np.random.default_rng(0).uniform(0, 2 * np.pi, FREQS.size)
# an elastic SDOF: the bilinear law with an unreachable yield force is a spring k1 = 2 a1 + a2
M, K, C = 1.0, (2 * np.pi * 2.0) ** 2, 2 * 0.1 * (2 * np.pi * 2.0)  # f_n ~ 2 Hz, 10 % damping
A1, A2 = 0.5, 1.0
THETA = np.array([[A1, A2, 1e9, M, C, K]])
K_TOT = K + 2 * A1 + A2


def record() -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(int(N_PER * P * FS)) / FS
    return t, np.cos(2 * np.pi * FREQS[:, None] * t + PHASES[:, None]).sum(0)


def steady_state(t: np.ndarray) -> np.ndarray:
    """The periodic steady-state displacement from the frequency response 1 / (K - M w^2 + i C w)."""
    w = 2 * np.pi * FREQS
    U = np.exp(1j * PHASES) / (K_TOT - M * w**2 + 1j * C * w)
    return np.real(U[:, None] * np.exp(1j * w[:, None] * t)).sum(0)


def rel_rms(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((a - b) ** 2) / np.mean(b**2)))


@pytest.fixture(scope="module")
def sdof():
    return HystereticSDOF("bilinear_kinematic", m=M, c=C, k=K)


def test_each_interpolation_against_the_exact_steady_state(sdof):
    t, F = record()
    err = {}
    for method in ("linear", "cubic", "bandlimited"):
        cond = {"force": {"t": t, "force": F, "interpolation": method, "period": P}, "fs": FS}
        res = sdof.integrate(THETA, cond)
        after = res["t"] >= 24.0  # the transient from rest decays as exp(-1.26 t): below 1e-13 by then
        err[method] = rel_rms(res["u"][0][after], steady_state(res["t"][after]))
    assert err["bandlimited"] < 1e-6, err
    assert err["bandlimited"] < err["cubic"] < 1e-4 < err["linear"] < 1e-2, err


def test_step_rule_and_default_interpolation(sdof):
    t, F = record()
    # f_max = the record's band (10 Hz, read as 10.5 Hz through the Hann window): h <= 1 / (40 f_max) = 2.4 ms,
    # so 5 steps per 10 ms sample, or one step per two 1 ms samples
    band = bandwidth(t, F)
    assert 10.0 <= band <= 10.75
    assert sdof.plan({"force": (t, F), "fs": FS}).steps == choose_steps(1 / FS, band, 4) == (5, 1)
    assert sdof.plan({"force": (t, F), "fs": 1000.0}).steps == (1, 2)
    assert sdof.plan({"fs": FS}).steps == (1, 4)  # the paper's sine keeps its documented default
    assert choose_steps(0.01, 0.0, 4) == (1, 4)
    assert sdof.plan({"force": {"t": t, "force": F, "period": P}}).load.exc.interpolation == "bandlimited"
    assert sdof.plan({"force": (t, F)}).load.exc.interpolation == "cubic"
    fixed = HystereticSDOF("bilinear_kinematic", m=M, c=C, k=K, substeps=3)
    assert fixed.plan({"force": (t, F), "fs": FS}).steps == (3, 1)


def test_convergence_check_fires_on_a_coarse_setting():
    t, F = record()
    cond = {"force": {"t": t, "force": F, "period": P}, "fs": FS}
    coarse = HystereticSDOF("bilinear_kinematic", m=M, c=C, k=K, samples_per_step=4)  # one step per 40 ms
    with pytest.warns(StepWarning, match=r"differs from the one with twice as many steps by .* substeps = "):
        msg = coarse.check_steps(THETA, cond)
    assert "above the tolerance" in msg
    with pytest.warns(StepWarning, match="one RK4 step per 4 samples"):
        coarse.simulate(THETA, cond)  # the first simulation of a record checks too
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        coarse.simulate(THETA, cond)  # once per record
        ok = HystereticSDOF("bilinear_kinematic", m=M, c=C, k=K).check_steps(THETA, cond)
    assert "converged" in ok
    # the records checked are kept per live object: not in its pickle, gone with it, never a new object's
    from mechcalib.models.hysteresis import _common

    assert coarse in _common._CHECKED
    assert pickle.loads(pickle.dumps(coarse)) not in _common._CHECKED
    n = len(_common._CHECKED)
    del coarse
    gc.collect()
    assert len(_common._CHECKED) == n - 1


def test_sampling_too_slow_for_the_model_warns():
    stiff = HystereticSDOF("bilinear_kinematic", m=M, c=C, k=(2 * np.pi * 80.0) ** 2)  # f_n = 80 Hz
    t, F = record()
    with pytest.warns(StepWarning, match=r"sampled at 100 Hz, below twice the model's highest natural"):
        stiff.validate_conditions({"force": (t, F), "fs": 1000.0})


def test_ground_acceleration_is_the_force_minus_m_ag(sdof):
    t, F = record()
    ag = F / 10.0
    by_force = sdof.integrate(THETA, {"force": {"t": t, "force": -M * ag, "period": P}, "fs": FS})
    by_ground = sdof.integrate(THETA, {"ground_acceleration": {"t": t, "values": ag, "period": P}, "fs": FS})
    np.testing.assert_allclose(by_ground["u"], by_force["u"], rtol=0, atol=1e-12 * np.abs(by_force["u"]).max())
    np.testing.assert_allclose(by_ground["a"], by_force["a"] + ag[None, : by_force["a"].shape[1]], atol=1e-9)


def test_frame_force_at_a_named_node():
    f = FrameMDOF()
    t = np.arange(0, 1.0, 1 / 200.0)
    F = 1000.0 * np.sin(2 * np.pi * 4 * t)
    theta = f.full_vector()[None]
    at5 = f.integrate(theta, {"force": {"t": t, "force": F}, "t_end": 0.5})
    at7 = f.integrate(theta, {"force": {"t": t, "force": F, "node": 7}, "t_end": 0.5})
    top, first = 3, 0
    assert np.abs(at5["u"][0, :, top]).max() > np.abs(at7["u"][0, :, top]).max()  # node 5 is the roof
    assert not np.allclose(at5["u"][0, :, first], at7["u"][0, :, first])


CONFIG = """\
[model]
name = "sdof_bilinear_kinematic"
[parameters.a1]
lower = 0.25
upper = 1.0
[[experiments]]
kind = "synthetic"
channels = ["displacement"]
[experiments.conditions]
fs = 100.0
[experiments.conditions.force]
path = "data/shaker.csv"
column = "F"
units = {F = "kN"}
interpolation = "cubic"
preprocess = [{op = "trim", end = 2.0}]
[budget]
max_evals = 2
[optimizer]
name = "random"
"""


def test_config_record_paths_resolve_from_the_config_folder(tmp_path, monkeypatch):
    t, F = record()
    folder = tmp_path / "study"
    (folder / "data").mkdir(parents=True)
    np.savetxt(folder / "data" / "shaker.csv", np.c_[t, F / 1e3], delimiter=",", header="t,F", comments="")
    (folder / "run.toml").write_text(CONFIG)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # `check` and `run` started from another folder read the same file
    cfg = load_config(folder / "run.toml")
    force = cfg.experiments[0].conditions["force"]
    assert force["path"] == str((folder / "data" / "shaker.csv").resolve())
    assert force["interpolation"] == "cubic"  # the choice travels with the run's configuration
    (folder / "implicit.toml").write_text(
        CONFIG.replace('interpolation = "cubic"', "period = 4.0").replace('[{op = "trim", end = 2.0}]', "[]")
    )
    implicit = load_config(folder / "implicit.toml").experiments[0].conditions["force"]
    assert implicit["interpolation"] == "bandlimited"  # the default rule's pick, stated in the stored config
    problem = cfg.build_problem()
    batch = problem.evaluate(problem.space.from_unit(np.full((1, problem.space.dim), 0.5)))
    assert batch.status == ["ok"] and np.isfinite(batch.losses[0]), batch.errors
    exc = problem.model.plan(problem.experiments[0].conditions).load.exc
    assert exc.values.max() == pytest.approx(F[t <= 2.0].max() * 1.0, rel=1e-6)  # kN -> N, trimmed


def test_file_experiment_units_convert_to_the_model_units(tmp_path):
    """Experiments and records share one unit mechanism: a header unit converts to the model channel's."""
    (tmp_path / "m.csv").write_text("time [ms],disp [mm]\n0,1.0\n10,2.0\n20,3.0\n")
    text = """\
[model]
name = "sdof_boucwen"
[[experiments]]
path = "m.csv"
[experiments.channels.displacement]
x = "time"
y = "disp"
[budget]
max_evals = 2
"""
    (tmp_path / "run.toml").write_text(text)
    (exp,) = load_config(tmp_path / "run.toml").build_experiments()
    c = exp["displacement"]
    np.testing.assert_allclose(c.x, [0.0, 0.01, 0.02])
    np.testing.assert_allclose(c.y, [1e-3, 2e-3, 3e-3])
    assert (c.x_unit, c.y_unit) == ("s", "m")
    (tmp_path / "m.csv").write_text("time [s],disp [bananas]\n0,1.0\n1,2.0\n")
    with pytest.raises(ConfigurationError, match=r"experiments\[0\]\.channels\.displacement.*'bananas' is not known"):
        load_config(tmp_path / "run.toml")


def test_models_command_shows_one_model_in_full_and_the_overview_fits_80_columns():
    from typer.testing import CliRunner

    from mechcalib.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["models", "sdof_boucwen"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    for word in ("a1", "[N] a measured force", "ground_acceleration", "t_end", "fs", "substeps", "samples_per_step"):
        assert word in r.output, word
    r = runner.invoke(app, ["models"], env={"COLUMNS": "80"})
    assert r.exit_code == 0 and "mdof_frame" in r.output and "…" not in r.output
    assert max(len(line) for line in r.output.splitlines()) <= 80
    r = runner.invoke(app, ["models", "no_such_model"])
    assert r.exit_code != 0 and "sdof_boucwen" in r.output


@pytest.mark.filterwarnings("ignore::mechcalib.models.hysteresis.steps.StepWarning")  # printed by check instead
def test_check_reports_the_step_convergence(tmp_path):
    from typer.testing import CliRunner

    from mechcalib.cli import app

    t, F = record()
    np.savetxt(tmp_path / "shaker.csv", np.c_[t, F], delimiter=",", header="t,F", comments="")
    base = CONFIG.replace("data/shaker.csv", "shaker.csv").replace('units = {F = "kN"}\n', "")
    (tmp_path / "ok.toml").write_text(base)
    options = "options = {k = 158.0, c = 2.5, samples_per_step = 4}  # f_n = 2 Hz, one step per 40 ms\n"
    coarse = base.replace("[parameters.a1]", options + "[parameters.a1]")
    (tmp_path / "coarse.toml").write_text(coarse)
    runner = CliRunner()
    r = runner.invoke(app, ["check", str(tmp_path / "ok.toml")])
    assert r.exit_code == 0 and "converged" in r.output and "warning" not in r.output, r.output
    r = runner.invoke(app, ["check", str(tmp_path / "coarse.toml")])
    assert r.exit_code == 0 and "warning:" in r.output and "substeps" in r.output, r.output


@pytest.mark.parametrize("law", ["boucwen_opensees", "bwbn"])
def test_step_rule_reads_the_opensees_laws_stiffness_at_rest(law):
    from mechcalib.models.hysteresis.sdof import HystereticSDOF

    model = HystereticSDOF(law)
    pre = model.presets["default"]
    alpha, ko, ao = pre["alpha"], pre["ko"], pre["Ao"]
    k0 = pre["k"] + alpha * ko + (1 - alpha) * ko * ao
    assert np.max(model.natural_frequencies()) == pytest.approx(np.sqrt(k0 / pre["m"]) / (2 * np.pi), rel=1e-12)
