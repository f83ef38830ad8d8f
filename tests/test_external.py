from __future__ import annotations

import math
import pickle
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import mechcalib as mc
from mechcalib import ConfigurationError, Curve
from mechcalib.config import ConfigFileError, RunConfig, load_config
from mechcalib.errors import InfrastructureError
from mechcalib.models import SimulationFailure
from mechcalib.models.external import (
    CsvOutput,
    ExternalModel,
    ExternalSetupError,
    fill_template,
    format_number,
    placeholders,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "external_arch"
sys.path.insert(0, str(EXAMPLE))
import arch_sim  # noqa: E402

TRUTH = {"kn": 4e9, "ks": 1.6e9, "phi": 30.5}


def arch_space(**fixed):
    space = mc.ParameterSpace(
        [
            mc.Parameter("kn", 1e8, 1e10, scale="log"),
            mc.Parameter("ks", 1e8, 1e10, scale="log"),
            mc.Parameter("phi", 25.0, 45.0),
        ]
    )
    return space.with_fixed(**fixed) if fixed else space


def arch_model(tmp_path, **kw) -> ExternalModel:
    opts = dict(
        templates={"params.txt": EXAMPLE / "params.template"},
        files=[EXAMPLE / "arch_sim.py"],
        outputs={"force": CsvOutput("result.csv", "displacement", "force")},
        conditions={"w_max": 4.0},
        workdir_root=tmp_path / "work",
        timeout=60,
        name="arch",
    )
    opts.update(kw)
    return ExternalModel(arch_space(), ["{python}", "arch_sim.py", "params.txt", "result.csv"], **opts)


def expected_force(w, kn, ks, phi):
    return np.array([arch_sim.force(x, kn, ks, phi) for x in w])


def script_model(tmp_path, code: str, **kw) -> ExternalModel:
    """A model whose program is a small inline Python script (for failure modes)."""
    src = tmp_path / "prog.py"
    src.write_text(code)
    opts = dict(files=[src], outputs={"y": CsvOutput("out.csv", "x", "y")}, workdir_root=tmp_path / "work")
    opts.update(kw)
    return ExternalModel(mc.ParameterSpace([mc.Parameter("a", 0.0, 1.0)]), ["{python}", "prog.py", "{{ a }}"], **opts)


# -- numbers only -----------------------------------------------------------------------------------------
def test_format_number_writes_plain_floats_and_refuses_the_rest():
    assert format_number(4e9, "kn") == "4000000000.0"
    assert format_number(np.float64(1e-5), "x") == "1e-05"  # not "np.float64(1e-05)"
    assert format_number(3, "x") == "3.0"
    assert float(format_number(0.1 + 0.2, "x")) == 0.1 + 0.2  # exact round trip
    for bad in ("1; rm -rf ~", "2", True, None, math.nan, math.inf, -math.inf, [1.0]):
        with pytest.raises(ConfigurationError, match="finite number"):
            format_number(bad, "kn")


def test_fill_template_replaces_placeholders_and_refuses_unknown_names():
    text = "kn = {{kn}}\nks={{ ks }} again {{kn}}\n"
    assert placeholders(text) == ["kn", "ks", "kn"]
    assert fill_template(text, {"kn": 4e9, "ks": 2.5}) == "kn = 4000000000.0\nks=2.5 again 4000000000.0\n"
    with pytest.raises(ConfigurationError, match=r"'\{\{ rm -rf ~ \}\}' names no parameter"):
        fill_template("x = {{ rm -rf ~ }}", {"kn": 1.0})
    with pytest.raises(ConfigurationError, match="finite number"):
        fill_template("x = {{kn}}", {"kn": "1; rm -rf ~"})


def test_template_with_a_placeholder_outside_the_space_is_refused(tmp_path):
    for body, bad in (("kn = {{kn}}\nx = {{ kn2 }}\n", "kn2"), ("cmd = {{ $(rm -rf ~) }}\n", "$(rm -rf ~)")):
        t = tmp_path / "bad.template"
        t.write_text(body)
        with pytest.raises(ExternalSetupError) as ei:
            arch_model(tmp_path, templates={"params.txt": t})
        assert ei.value.parts == ("templates", "params.txt")
        assert "{{" + bad + "}}" in ei.value.found and "['kn', 'ks', 'phi', 'w_max']" in ei.value.expected


def test_command_must_be_an_argument_list_with_number_placeholders_only(tmp_path):
    with pytest.raises(ExternalSetupError, match="shell string is not accepted"):
        ExternalModel(arch_space(), "python arch_sim.py; rm -rf ~", outputs={"f": CsvOutput("r.csv", "x", "y")})
    with pytest.raises(ExternalSetupError) as ei:
        ExternalModel(arch_space(), ["{python}", "sim.py", "{{ home }}"], outputs={"f": CsvOutput("r.csv", "x", "y")})
    assert ei.value.parts == ("command", 2)
    with pytest.raises(ExternalSetupError, match=r"\{python\}"):
        ExternalModel(arch_space(), ["{pyhton}", "sim.py"], outputs={"f": CsvOutput("r.csv", "x", "y")})
    # placeholders in arguments become numbers
    m2 = ExternalModel(
        arch_space(), ["{python}", "-c", "pass", "--kn={{kn}}"], outputs={"f": CsvOutput("r.csv", "x", "y")}
    )
    assert m2.arguments({"kn": 4e9, "ks": 1.0, "phi": 2.0}) == [sys.executable, "-c", "pass", "--kn=4000000000.0"]


def test_file_names_must_stay_inside_the_working_directory(tmp_path):
    for name in ("../escape.txt", "/etc/passwd"):
        with pytest.raises(ExternalSetupError, match="relative to the working directory"):
            arch_model(tmp_path, templates={name: EXAMPLE / "params.template"})
        with pytest.raises(ExternalSetupError, match="relative to the working directory"):
            arch_model(tmp_path, outputs={"force": CsvOutput(name, "displacement", "force")})


def test_string_parameter_value_is_a_failure_not_text_in_a_file(tmp_path):
    m = arch_model(tmp_path, keep="all")
    res = m.run_one({"kn": "1; rm -rf ~", "ks": 1e9, "phi": 30.0})
    assert isinstance(res, SimulationFailure) and "finite number" in res.message
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())  # nothing was written


def test_config_rejects_shell_text_as_a_fixed_value_and_unknown_placeholders(tmp_path):
    d = _arch_config_dict(tmp_path)
    d["parameters"]["kn"] = {"fixed": "1; rm -rf ~"}
    with pytest.raises(ConfigFileError) as ei:
        RunConfig.from_dict(d, base_dir=EXAMPLE)
    (issue,) = ei.value.issues
    assert issue.key == "parameters.kn.fixed" and issue.expected == "a number" and "rm -rf" in issue.found
    d = _arch_config_dict(tmp_path)
    t = tmp_path / "evil.template"
    t.write_text("kn = {{ kn }}\n{{ __import__('os').system('rm -rf ~') }}\n")
    d["model"]["external"]["templates"] = {"params.txt": str(t)}
    with pytest.raises(ConfigFileError) as ei:
        RunConfig.from_dict(d, base_dir=EXAMPLE)
    (issue,) = ei.value.issues
    assert issue.key == 'model.external.templates."params.txt"' and "placeholders naming parameters" in issue.expected


# -- runs -------------------------------------------------------------------------------------------------
def test_run_matches_the_closed_form_and_cleans_up(tmp_path):
    m = arch_model(tmp_path)
    theta = np.array([[4e9, 1.6e9, 30.5], [2e9, 3e9, 35.0]])
    out = m.simulate(theta)
    w = np.linspace(0.0, 4.0, arch_sim.N_STEPS)
    for row, resp in zip(theta, out, strict=True):
        c = resp["force"]
        assert c.x_unit == "mm" and c.y_unit == "kN" and c.x_name == "displacement"
        np.testing.assert_allclose(c.x, w, rtol=0, atol=1e-15)
        np.testing.assert_allclose(c.y, expected_force(w, *row), rtol=1e-15)
    assert list((tmp_path / "work").iterdir()) == []  # keep="failed": successful runs leave nothing


def test_kept_workdir_holds_filled_template_logs_and_record(tmp_path):
    m = arch_model(tmp_path, keep="all")
    (resp,) = m.simulate(np.array([[4e9, 1.6e9, 30.5]]), {"w_max": 2.0})
    assert resp["force"].x[-1] == 2.0  # the condition reached the program through the template
    (wd,) = (tmp_path / "work").iterdir()
    assert wd.name.startswith("arch-")
    params = (wd / "params.txt").read_text()
    assert "kn = 4000000000.0 " in params and "phi = 30.5 " in params and "w_max = 2.0 " in params
    assert "{{" not in params
    assert "arch: done" in (wd / "stdout.log").read_text()
    assert (wd / "stderr.log").read_text() == ""
    assert '"kn": 4000000000.0' in (wd / "parameters.json").read_text()


def test_nonzero_exit_is_a_failure_that_names_the_log(tmp_path):
    m = arch_model(tmp_path)
    out = m.simulate(np.array([[4e9, 1.6e9, 30.5], [4e9, 1.6e9, 95.0]]))
    assert not isinstance(out[0], SimulationFailure)
    f = out[1]
    assert isinstance(f, SimulationFailure) and "exited with status 2" in f.message and "non-physical" in f.message
    log = Path(f.message.split("see '")[1].split("'")[0])
    assert log.name == "stderr.log" and "non-physical input" in log.read_text()  # kept: it failed


def test_keep_none_deletes_failed_workdirs_and_says_so(tmp_path):
    m = arch_model(tmp_path, keep="none")
    (f,) = m.simulate(np.array([[4e9, 1.6e9, 95.0]]))
    assert isinstance(f, SimulationFailure) and "working directory deleted" in f.message
    assert list((tmp_path / "work").iterdir()) == []


def test_timeout_kills_the_program(tmp_path):
    m = script_model(tmp_path, "import time\ntime.sleep(30)\n", timeout=0.5)
    t0 = time.perf_counter()
    (f,) = m.simulate(np.array([[0.5]]))
    assert time.perf_counter() - t0 < 10
    assert isinstance(f, SimulationFailure) and "timed out after 0.5 s" in f.message and "stdout.log" in f.message


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("pass\n", "was not written"),
        ("open('out.csv', 'w').write('x,y\\n1,oops\\n2,3\\n')\n", "'oops' is not a number"),
        ("open('out.csv', 'w').write('x,z\\n1,2\\n2,3\\n')\n", "needs column 'y'"),
        ("open('out.csv', 'w').write('x,y\\n1,nan\\n2,3\\n')\n", "must be finite"),
    ],
)
def test_missing_or_garbled_output_is_a_failure(tmp_path, code, needle):
    m = script_model(tmp_path, code)
    (f,) = m.simulate(np.array([[0.5]]))
    assert isinstance(f, SimulationFailure) and needle in f.message and "stdout.log" in f.message


def test_missing_program_is_an_infrastructure_error(tmp_path):
    m = ExternalModel(
        mc.ParameterSpace([mc.Parameter("a", 0.0, 1.0)]),
        [str(tmp_path / "no-such-program")],
        outputs={"y": CsvOutput("out.csv", "x", "y")},
        workdir_root=tmp_path / "work",
    )
    with pytest.raises(InfrastructureError, match="cannot start .*no-such-program.*No such file"):
        m.simulate(np.array([[0.5]]))
    assert list((tmp_path / "work").iterdir()) == []  # nothing kept of a run that never started


def test_parser_callable_and_spec(tmp_path):
    code = "import sys\nopen('out.txt', 'w').write(sys.argv[1])\n"

    def parse(wd):
        a = float((wd / "out.txt").read_text())
        return {"line": Curve([0.0, 1.0], [0.0, a])}

    m = script_model(tmp_path, code, outputs=None, parser=parse, channels=["line"])
    (r,) = m.simulate(np.array([[0.25]]))
    np.testing.assert_array_equal(r["line"].y, [0.0, 0.25])

    def bad(wd):
        raise KeyError("no such block")

    m = script_model(tmp_path, code, outputs=None, parser=bad, channels=["line"])
    (f,) = m.simulate(np.array([[0.25]]))
    assert isinstance(f, SimulationFailure) and "KeyError" in f.message and "no such block" in f.message

    pfile = tmp_path / "myparse.py"
    pfile.write_text(
        "from mechcalib import Curve\n"
        "def parse(wd):\n    return {'line': Curve([0.0, 1.0], [1.0, float((wd / 'out.txt').read_text())])}\n"
    )
    m = script_model(tmp_path, code, outputs=None, parser=f"{pfile}:parse", channels=["line"])
    m2 = pickle.loads(pickle.dumps(m))  # a spec re-imports in the receiving process
    assert m2._parser is None
    (r,) = m2.simulate(np.array([[0.75]]))
    np.testing.assert_array_equal(r["line"].y, [1.0, 0.75])
    with pytest.raises(ExternalSetupError, match="channel names the parser returns"):
        script_model(tmp_path, code, outputs=None, parser=parse)


def test_parallel_runs_use_distinct_workdirs(tmp_path):
    m = arch_model(tmp_path, keep="all", max_workers=4)
    phis = np.linspace(26.0, 44.0, 8)
    theta = np.column_stack([np.full(8, 4e9), np.full(8, 1.6e9), phis])
    results: dict[int, list] = {}

    def batch(k):  # two batches at once from two threads, four programs each at a time
        results[k] = m.simulate(theta[k::2])

    threads = [threading.Thread(target=batch, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w = np.linspace(0.0, 4.0, arch_sim.N_STEPS)
    for k in (0, 1):
        for row, resp in zip(theta[k::2], results[k], strict=True):
            np.testing.assert_allclose(resp["force"].y, expected_force(w, *row), rtol=1e-15)
    dirs = list((tmp_path / "work").iterdir())
    assert len(dirs) == 8 and len({d.name for d in dirs}) == 8
    assert sorted(float(d.joinpath("params.txt").read_text().split("phi = ")[1].split()[0]) for d in dirs) == list(phis)


def test_problem_penalises_failed_runs_and_model_pickles(tmp_path):
    m = pickle.loads(pickle.dumps(arch_model(tmp_path)))
    exp = mc.Experiment.from_csv(EXAMPLE / "measured.csv", {"force": ("displacement", "force")})
    prob = mc.Problem(m, exp, mc.OverlapRSS(), failure_loss=1e6)
    b = prob.evaluate(np.array([[4e9, 1.6e9, 30.5], [4e9, 1.6e9, 95.0], [1e9, 1e9, 40.0]]))
    assert b.status == ["ok", "failed", "ok"]
    assert b.losses[1] == 1e6 and b.losses[0] < 0.1 < b.losses[2]


# -- the example config -----------------------------------------------------------------------------------
def _arch_config_dict(tmp_path) -> dict:
    import tomllib

    d = tomllib.loads((EXAMPLE / "arch.toml").read_text())
    d["model"]["external"]["workdir_root"] = str(tmp_path / "work")
    d["evaluator"] = {"kind": "serial"}
    return d


def test_example_config_builds_and_calibrates_a_few_steps(tmp_path):
    cfg = load_config(EXAMPLE / "arch.toml")
    assert isinstance(cfg.build_model(), ExternalModel)
    assert cfg.build_model().workdir_root == str(EXAMPLE / "work")
    cfg = RunConfig.from_dict(_arch_config_dict(tmp_path), base_dir=EXAMPLE)
    prob = cfg.build_problem()
    assert prob.space.names == ("kn", "ks", "phi") and prob.space["kn"].scale == "log"
    b = prob.evaluate(np.array([[4e9, 1.6e9, 30.5]]))
    assert b.losses[0] < 0.1  # the truth of the synthetic measurement
    opt = mc.optimizers.make_optimizer("random", batch_size=4, seed=cfg.seed)
    res = mc.calibrate(prob, opt, max_evals=8)
    assert res.n_evals == 8 and res.n_failed == 0 and math.isfinite(res.best_loss)
    assert list((tmp_path / "work").iterdir()) == []
    shutil.rmtree(tmp_path / "work")


def test_one_spec_is_shared_by_the_config_and_the_model(tmp_path):
    """``[model.external]`` has exactly the fields of ExternalSpec; the model built from a spec and the one
    built from keywords are the same model (same settings, same pickled state)."""
    import dataclasses
    import pickle

    from mechcalib.config.build import external_spec
    from mechcalib.config.schema import ExternalSection
    from mechcalib.models.external import ExternalSpec

    assert set(ExternalSection.model_fields) == {f.name for f in dataclasses.fields(ExternalSpec)}
    keywords = dict(
        templates={"params.txt": EXAMPLE / "params.template"},
        files=[EXAMPLE / "arch_sim.py"],
        outputs={"force": CsvOutput("result.csv", "displacement", "force")},
        conditions={"w_max": 4.0},
        workdir_root=tmp_path / "work",
        timeout=60,
        name="arch",
    )
    command = ["{python}", "arch_sim.py", "params.txt", "result.csv"]
    by_keywords = ExternalModel(arch_space(), command, **keywords)
    by_spec = ExternalModel(arch_space(), ExternalSpec(command=command, **keywords))
    assert pickle.dumps(by_spec) == pickle.dumps(by_keywords)
    with pytest.raises(ConfigurationError, match=r"give the settings \['timeout'\] in the ExternalSpec"):
        ExternalModel(arch_space(), ExternalSpec(command=command, **keywords), timeout=5)
    section = ExternalSection.model_validate(
        {"command": command, "outputs": {"force": {"file": "result.csv", "x": "displacement", "y": "force"}}}
    )
    spec = external_spec(section)
    assert spec.outputs == {"force": CsvOutput("result.csv", "displacement", "force")} and spec.presets is None
