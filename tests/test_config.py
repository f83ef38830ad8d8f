from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import mechcalib as mc
from mechcalib import ConfigurationError
from mechcalib.config import ConfigFileError, ConfigIssue, RunConfig, load_config

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

BASE = """\
seed = 1
[model]
name = "linear"
[[experiments]]
kind = "synthetic"
[optimizer]
name = "random"
[budget]
max_evals = 20
"""

CSV = "# a comment line\nx [mm],y [kN],other\n0,1.0,5\n1,3.0,5\n2,5.0,5\n3,7.0,5\n"


def write(tmp_path: Path, text: str, name: str = "run.toml", **files: str) -> Path:
    for fname, body in files.items():
        p = tmp_path / fname.replace("__", "/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def issues_of(tmp_path: Path, text: str, **files: str) -> list[ConfigIssue]:
    with pytest.raises(ConfigFileError) as ei:
        load_config(write(tmp_path, text, **files))
    err = ei.value
    assert isinstance(err, ConfigurationError) and isinstance(err, ValueError)
    for i in err.issues:  # every issue is in the message, key path first
        assert f"`{i.key}`: expected {i.expected}; got {i.found}" in str(err)
    return err.issues


def one_issue(tmp_path: Path, text: str, **files: str) -> ConfigIssue:
    found = issues_of(tmp_path, text, **files)
    assert len(found) == 1, found
    return found[0]


# -- examples -----------------------------------------------------------------------------------------------
RUN_CONFIGS = sorted(p for p in EXAMPLES.rglob("*.toml") if p.name != "pyproject.toml")  # not a package's metadata


@pytest.mark.parametrize("path", RUN_CONFIGS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_builds_problem_optimizer_and_termination(path, monkeypatch):
    if path.parent.name == "plugin_model":  # a third-party model package: its source is importable once installed
        monkeypatch.syspath_prepend(str(path.parent / "src"))
    cfg = load_config(path)
    problem = cfg.build_problem()
    opt = cfg.build_optimizer()
    term = cfg.build_termination()
    assert problem.space.dim >= 1 and term.max_evals is not None
    opt.setup(problem.space.dim)
    assert opt.ask().shape[1] == problem.space.dim
    assert json.loads(json.dumps(cfg.to_dict(), allow_nan=False)) == cfg.to_dict()


def test_duffing_example_is_tbpso_on_a_synthetic_experiment():
    cfg = load_config(EXAMPLES / "duffing.toml")
    problem = cfg.build_problem()
    (exp,) = problem.experiments
    assert cfg.optimizer.name == "tbpso" and cfg.build_optimizer().name == "tbpso"
    assert exp.name == "synthetic_duffing" and set(exp.channel_names) == {"displacement", "restoring_force"}
    assert problem.space["c"].scale == "log" and problem.space["k"].lower == 0.2  # untouched default kept
    # the synthetic truth scores far better than a wrong stiffness
    b = problem.evaluate(np.array([[0.2, 1.0, 0.5], [0.2, 2.0, 0.5]]))
    assert b.losses[0] < 0.2 * b.losses[1]


# -- building -------------------------------------------------------------------------------------------------
def test_minimal_config_defaults(tmp_path):
    cfg = load_config(write(tmp_path, BASE, name="minimal.toml"))
    assert cfg.name == "minimal" and cfg.seed == 1 and cfg.failure_loss == math.inf
    assert cfg.objective.name == "overlap_rss" and cfg.evaluator.kind == "serial"
    assert cfg.output.directory == str((tmp_path / "runs").resolve())
    prob = cfg.build_problem()
    assert prob.failure_loss == math.inf and prob.keep_responses is False
    assert prob.experiments[0].name == "synthetic0"
    assert cfg.build_termination() == mc.Termination(max_evals=20)
    assert cfg.calibrate_options() == {"n_alternatives": 5, "alternative_distance": 0.02, "asynchronous": False}
    res = mc.calibrate(prob, cfg.build_optimizer(), cfg.build_termination(), **cfg.calibrate_options())
    assert res.n_evals == 20


def test_parameter_overrides_keep_unnamed_defaults(tmp_path):
    text = BASE + '[parameters.b]\nlower = 1.0\nunit = "kN"\n[parameters.a]\nfixed = 0.2\n'
    space = load_config(write(tmp_path, text)).build_space()
    assert space.names == ("a", "b") and space.free_names == ("b",)
    assert space["a"].fixed == 0.2 and space["a"].lower == 0.1  # bounds kept from the model
    assert (space["b"].lower, space["b"].upper, space["b"].unit) == (1.0, 10.0, "kN")


def test_csv_experiment_with_mapping_units_scales_weights_and_conditions(tmp_path):
    text = BASE.replace('kind = "synthetic"', 'path = "data/m.csv"\nweight = 0.5\nconditions = { n_points = 4 }') + (
        '[experiments.channels.y]\nx = "x"\ny = "y"\ny_scale = 1000.0\ny_unit = "N"\nweight = 2.0\n'
    )
    cfg = load_config(write(tmp_path, text, **{"data__m.csv": CSV}))
    prob = cfg.build_problem()
    (exp,) = prob.experiments
    c = exp["y"]
    assert exp.name == "m" and exp.weight == 0.5 and exp.conditions == {"n_points": 4}
    np.testing.assert_array_equal(c.y, [1000.0, 3000.0, 5000.0, 7000.0])
    assert (c.x_unit, c.y_unit, c.x_name, c.y_name) == ("mm", "N", "x", "y")
    assert prob.objective.weights == {"y": 2.0}
    # a = 2000, b = 1000 reproduces the scaled data on x = 0..3
    assert prob.evaluate(np.array([[2000.0, 1000.0]])).status == ["ok"]


def test_short_channel_form_and_relative_paths_against_config_folder(tmp_path, monkeypatch):
    text = BASE.replace('kind = "synthetic"', 'path = "data/m.csv"\nchannels = { y = ["x", "y"] }')
    (tmp_path / "project").mkdir()
    path = write(tmp_path / "project", text, **{"data__m.csv": CSV})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cfg = load_config(path)
    assert cfg.experiments[0].path == str((tmp_path / "project" / "data" / "m.csv").resolve())
    assert cfg.output.directory == str((tmp_path / "project" / "runs").resolve())
    np.testing.assert_array_equal(cfg.build_experiments()[0]["y"].y, [1.0, 3.0, 5.0, 7.0])


def test_json_experiment(tmp_path):
    exp = mc.Experiment({"y": mc.Curve([0.0, 1.0, 2.0], [5.0, 5.2, 5.4])}, conditions={"n_points": 3}, name="j")
    exp.to_json(tmp_path / "e.json")
    text = BASE.replace('kind = "synthetic"', 'path = "e.json"\nchannels = { y = { weight = 3.0 } }')
    prob = load_config(write(tmp_path, text)).build_problem()
    assert prob.experiments[0].name == "j" and prob.experiments[0].conditions == {"n_points": 3}
    assert prob.objective.weights == {"y": 3.0}
    assert prob.evaluate(np.array([[0.2, 5.0]])).losses[0] == pytest.approx(0.0, abs=1e-12)


def test_synthetic_experiment_values_noise_and_channel_subset(tmp_path):
    text = BASE.replace(
        'kind = "synthetic"',
        'kind = "synthetic"\nvalues = { a = 0.5 }\nnoise = 0.1\nseed = 3\n'
        'conditions = { n_points = 10 }\nchannels = ["y"]\nweights = { y = 4.0 }\nname = "syn"',
    )
    cfg = load_config(write(tmp_path, text))
    (e1,) = cfg.build_experiments()
    (e2,) = cfg.build_experiments()
    np.testing.assert_array_equal(e1["y"].y, e2["y"].y)  # seeded noise
    clean = 0.5 * np.arange(10.0) + 5.0
    assert 0 < np.max(np.abs(e1["y"].y - clean)) < 1.0
    assert cfg.build_objective().weights == {"y": 4.0}


def test_to_dict_round_trip_rebuilds_the_same_run(tmp_path, monkeypatch):
    text = BASE.replace('kind = "synthetic"', 'path = "m.csv"\nchannels = { y = ["x", "y"] }') + (
        '[optimizer.settings]\nbatch_size = 4\n[evaluator]\nkind = "pool"\nworkers = 2\ntimeout = 60\n'
    )
    cfg = load_config(write(tmp_path, text, **{"m.csv": CSV}))
    d = json.loads(json.dumps(cfg.to_dict(), allow_nan=False))
    assert d["failure_loss"] == "inf" and d["evaluator"] == {
        "kind": "pool",
        "workers": 2,
        "scheduler": None,
        "timeout": 60.0,
    }
    monkeypatch.chdir(tmp_path.parent)  # absolute paths: the folder does not matter any more
    again = RunConfig.from_dict(d)
    assert again.to_dict() == d == cfg.to_dict() and again.source is None
    a, b = cfg.build_optimizer().setup(2), again.build_optimizer().setup(2)
    np.testing.assert_array_equal(a.ask(), b.ask())  # same seed, same settings
    np.testing.assert_array_equal(again.build_experiments()[0]["y"].y, cfg.build_experiments()[0]["y"].y)


def test_optimizer_preset_settings_and_seed(tmp_path):
    text = BASE.replace('name = "random"', 'name = "tbpso"\npreset = "kibriya2023"\nsettings = { swarm_size = 6 }')
    opt = load_config(write(tmp_path, text)).build_optimizer()
    s = opt.settings()
    assert s["swarm_size"] == 6 and s["phi3"] == 2.0 and s["seed"] == 1 and s["max_iter"] == 20
    # the old name selects the same settings (and warns, once per process)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = load_config(write(tmp_path, text.replace('"kibriya2023"', '"paper_000"'))).build_optimizer()
    assert old.settings() == s


# -- errors ---------------------------------------------------------------------------------------------------
def _sub(old: str, new: str) -> str:
    assert old in BASE
    return BASE.replace(old, new)


ERRORS = [
    # (config text, key path, in `expected`, in `found`)
    (_sub('name = "linear"', 'name = "lineer"'), "model.name", "'duffing'", "'lineer'"),
    (_sub('name = "linear"', 'name = "linear"\npreset = "paper"'), "model.preset", "['default']", "'paper'"),
    (_sub('name = "random"', 'name = "pso2"'), "optimizer.name", "'tbpso'", "'pso2'"),
    (_sub('name = "random"', 'name = "pso"\npreset = "hu2024"'), "optimizer.preset", "'kibriya2023'", "'hu2024'"),
    (
        _sub('name = "random"', 'name = "random"\npreset = "kibriya2023"'),
        "optimizer.preset",
        "has none",
        "'kibriya2023'",
    ),
    (
        _sub('name = "random"', 'name = "tbpso"\nsettings = { swarm_sise = 5 }'),
        "optimizer.settings.swarm_sise",
        "'swarm_size'",
        "unknown key 'swarm_sise'",
    ),
    (
        _sub('name = "random"', 'name = "tbpso"\nsettings = { swarm_size = "ten" }'),
        "optimizer.settings.swarm_size",
        "an integer",
        "'ten' (a string)",
    ),
    (
        _sub('name = "random"', 'name = "tbpso"\nsettings = { swarm_size = -3 }'),
        "optimizer.settings.swarm_size",
        "an integer >= 1",
        "-3",
    ),
    (
        _sub('name = "random"', 'name = "tbpso"\nsettings = { phi1 = "1.0" }'),
        "optimizer.settings.phi1",
        "a number",
        "'1.0' (a string)",
    ),
    (
        _sub('name = "random"', 'name = "random"\nsettings = { seed = 4 }'),
        "optimizer.settings.seed",
        "top-level key",
        "4 (an integer)",
    ),
    (BASE + '[objective]\nname = "rss"\n', "objective.name", "'overlap_rss'", "'rss'"),
    (BASE + "[objective]\noptions = { n_point = 5 }\n", "objective.options.n_point", "'n_points'", "unknown key"),
    (BASE + "[objective]\noptions = { n_points = 1 }\n", "objective.options.n_points", ">= 2", "1"),
    (BASE + '[objective]\noptions = { pairing = "time" }\n', "objective.options.pairing", "'progress'", "'time'"),
    (BASE + "[parameters.b]\nlower = 20.0\n", "parameters.b", "lower < upper", "lower=20.0, upper=10.0"),
    (BASE + '[parameters.a]\nlower = 0.0\nscale = "log"\n', "parameters.a.scale", "positive bounds", "lower=0.0"),
    (BASE + "[parameters.zz]\nlower = 1.0\n", "parameters.zz", "['a', 'b']", "unknown parameter 'zz'"),
    (BASE + '[parameters.a]\nfixed = "1; rm -rf ~"\n', "parameters.a.fixed", "a number", "'1; rm -rf ~' (a string)"),
    (BASE + "[parameters.a]\nupper = nan\n", "parameters.a.upper", "a finite number", "nan"),
    (BASE + '[parameters.a]\nscale = "log10"\n', "parameters.a.scale", "'linear' or 'log'", "'log10'"),
    (
        BASE + "[parameters.a]\nfixed = 0.2\n[parameters.b]\nfixed = 5.0\n",
        "parameters",
        "at least one free",
        "every parameter fixed",
    ),
    (_sub('kind = "synthetic"', 'path = "missing.csv"'), "experiments[0].path", "an existing data file", "not found"),
    (_sub("seed = 1", 'seed = "one"'), "seed", "an integer", "'one' (a string)"),
    (_sub("seed = 1", "seed = -1"), "seed", ">= 0", "-1"),
    (_sub("max_evals = 20", "max_evals = -5"), "budget.max_evals", "a value >= 1", "-5 (an integer)"),
    (_sub("max_evals = 20", "max_evals = 2.5"), "budget.max_evals", "an integer", "2.5 (a float)"),
    (_sub("max_evals = 20", "min_delta = 0.1"), "budget", "at least one of max_evals", "none of them"),
    (
        _sub('kind = "synthetic"', 'kind = "synthetic"\nnoice = 0.1'),
        "experiments[0].noice",
        "'noise'",
        "unknown key 'noice'",
    ),
    (_sub('kind = "synthetic"', 'kind = "simulated"'), "experiments[0]", "'file', 'synthetic'", "'simulated'"),
    (
        _sub('kind = "synthetic"', 'kind = "synthetic"\nvalues = { zz = 1.0 }'),
        "experiments[0].values.zz",
        "['a', 'b']",
        "unknown parameter 'zz'",
    ),
    (_sub('kind = "synthetic"', 'kind = "synthetic"\nnoise = -0.1'), "experiments[0].noise", ">= 0", "-0.1"),
    (
        _sub('kind = "synthetic"', 'kind = "synthetic"\nconditions = { temperature = 20 }'),
        "experiments[0].conditions.temperature",
        "['n_points']",
        "unknown condition 'temperature'",
    ),
    (
        _sub('kind = "synthetic"', 'kind = "synthetic"\nchannels = ["force"]'),
        "experiments[0].channels.force",
        "['y']",
        "channel 'force'",
    ),
    (
        _sub('kind = "synthetic"', 'kind = "synthetic"\npreset = "other"'),
        "experiments[0].preset",
        "['default']",
        "'other'",
    ),
    (
        BASE + '[[experiments]]\nkind = "synthetic"\nname = "synthetic0"\n',
        "experiments[1].name",
        "no other experiment",
        "'synthetic0'",
    ),
    (
        BASE + '[evaluator]\nkind = "pool"\nscheduler = "tcp://x:8786"\n',
        "evaluator.scheduler",
        'kind = "dask"',
        "kind = 'pool'",
    ),
    (BASE + "[evaluator]\nworkers = 4\n", "evaluator.workers", '"pool" or "dask"', "kind = 'serial'"),
    (BASE + '[evaluator]\nkind = "lsf"\n', "evaluator.kind", "'dask', 'slurm' or 'pbs'", "'lsf'"),
    (BASE + '[evaluator]\nkind = "slurm"\n', "evaluator.cores", "with kind = 'slurm'", "nothing"),
    (BASE + '[evaluator]\nkind = "dask"\ntimeout = 0\n', "evaluator.timeout", "a value > 0", "0 (an integer)"),
    (_sub("seed = 1", "failure_loss = nan"), "failure_loss", "a number or inf", "nan"),
    (BASE + "[output]\nalternative_distance = 2.0\n", "output.alternative_distance", "<= 1", "2.0"),
    (
        _sub('name = "linear"', 'name = "linear"\noptions = { order = 2 }'),
        "model.options",
        "keyword arguments",
        "order",
    ),
    ("version = 2\n" + BASE, "version", "one of 1", "2 (an integer)"),
    (_sub('name = "linear"', 'external = { command = ["x"] }\nname = "linear"'), "model", "either `name`", "both"),
    (
        _sub('name = "linear"', 'external = { command = "python sim.py" }'),
        "model.external.command",
        "a shell string is not accepted",
        "'python sim.py'",
    ),
]


@pytest.mark.parametrize(
    ("text", "key", "expected", "found"), ERRORS, ids=[e[1] + f"-{i}" for i, e in enumerate(ERRORS)]
)
def test_error_names_key_expected_and_found(tmp_path, text, key, expected, found):
    issue = one_issue(tmp_path, text)
    assert issue.key == key
    assert expected in issue.expected
    assert found in issue.found


def test_unknown_top_level_key_and_missing_section(tmp_path):
    # a misspelt [optimizer] is an unknown key (the section itself is optional: absent, the method is auto)
    text = _sub('[optimizer]\nname = "random"', '[optimiser]\nname = "random"')
    found = {i.key: i for i in issues_of(tmp_path, text)}
    assert set(found) == {"optimiser"}
    assert "'optimizer'" in found["optimiser"].expected and found["optimiser"].found == "unknown key 'optimiser'"
    text = _sub("[budget]\nmax_evals = 20", "")
    found = {i.key: i for i in issues_of(tmp_path, text)}
    assert set(found) == {"budget"}
    assert found["budget"].expected.startswith("a value") and found["budget"].found == "nothing"


def test_config_without_optimizer_section_builds_auto(tmp_path):
    text = _sub('[optimizer]\nname = "random"', "")
    assert load_config(write(tmp_path, text)).build_optimizer().name == "auto"


def test_missing_column_and_missing_mapping_key(tmp_path):
    text = _sub('kind = "synthetic"', 'path = "m.csv"\n[experiments.channels.y]\nx = "x"\ny = "force"')
    issue = one_issue(tmp_path, text, **{"m.csv": CSV})
    assert issue.key == "experiments[0].channels.y.y"
    assert "['x', 'y', 'other']" in issue.expected and issue.found == "'force' (a string)"
    text = _sub('kind = "synthetic"', 'path = "m.csv"\n[experiments.channels.y]\ny = "y"')
    issue = one_issue(tmp_path, text, **{"m.csv": CSV})
    assert issue.key == "experiments[0].channels.y.x" and issue.found == "nothing"
    text = _sub('kind = "synthetic"', 'path = "m.csv"\nchannels = { y = ["x"] }')
    issue = one_issue(tmp_path, text, **{"m.csv": CSV})
    assert issue.key == "experiments[0].channels.y" and "[x column, y column]" in issue.expected


def test_negative_progress_scale_is_reported(tmp_path):
    csv = "x,y,t\n0,1,0\n1,2,1\n2,3,2\n"
    text = _sub(
        'kind = "synthetic"', 'path = "m.csv"\n[experiments.channels.y]\nx = "x"\ny = "y"\nt = "t"\nt_scale = -1.0'
    )
    issue = one_issue(tmp_path, text, **{"m.csv": csv})
    assert issue.key == "experiments[0].channels.y.t_scale" and "non-decreasing" in issue.found


def test_bad_data_file_and_json_mapping(tmp_path):
    text = _sub('kind = "synthetic"', 'path = "m.csv"')
    issue = one_issue(tmp_path, text, **{"m.csv": "x,y\n1,2\n2,abc\n"})
    assert issue.key == "experiments[0].path" and "'abc' is not a number" in issue.found
    mc.Experiment({"y": mc.Curve([0.0, 1.0], [1.0, 2.0])}).to_json(tmp_path / "e.json")
    text = _sub('kind = "synthetic"', 'path = "e.json"\nchannels = { y = ["x", "y"] }')
    found = issues_of(tmp_path, text)
    assert {i.key for i in found} == {"experiments[0].channels.y.x", "experiments[0].channels.y.y"}
    assert "JSON" in found[0].expected


def test_conflicting_channel_weights(tmp_path):
    text = BASE.replace('kind = "synthetic"', 'kind = "synthetic"\nweights = { y = 1.0 }') + (
        '[[experiments]]\nkind = "synthetic"\nname = "second"\nweights = { y = 2.0 }\n'
    )
    issue = one_issue(tmp_path, text)
    assert issue.key == "experiments[1].weights.y" and "1.0" in issue.expected and "2.0" in issue.found


def test_several_issues_are_reported_together(tmp_path):
    text = BASE.replace('name = "linear"', 'name = "linear"\npreset = "x"').replace("max_evals = 20", "max_evals = 0")
    text += '[parameters.zz]\nlower = 1.0\n[objective]\nname = "nope"\n'
    keys = {i.key for i in issues_of(tmp_path, text)}
    assert keys == {"budget.max_evals"}  # schema errors come first, alone
    text = text.replace("max_evals = 0", "max_evals = 5")
    keys = {i.key for i in issues_of(tmp_path, text)}
    assert keys == {"model.preset", "parameters.zz", "objective.name"}


def test_syntax_error_and_missing_file(tmp_path):
    issue = one_issue(tmp_path, BASE + "[budget\n")
    assert issue.key == "(syntax)" and "line" in issue.found
    with pytest.raises(ConfigFileError, match="not found"):
        load_config(tmp_path / "nope.toml")


def test_external_parameters_need_bounds(tmp_path):
    text = (
        '[model.external]\ncommand = ["{python}", "sim.py"]\noutputs = { f = { file = "r.csv", x = "x", y = "y" } }\n'
        "[parameters.kn]\nlower = 1.0\n[parameters.phi]\nfixed = 30.0\n"
        '[[experiments]]\nkind = "synthetic"\n[optimizer]\nname = "random"\n[budget]\nmax_evals = 5\n'
    )
    issue = one_issue(tmp_path, text)
    assert issue.key == "parameters.kn.upper" and "no default bounds" in issue.expected and issue.found == "nothing"


def test_external_errors_carry_key_paths(tmp_path):
    (tmp_path / "t.txt").write_text("a = {{ kn }}\n")
    head = (
        '[parameters.kn]\nlower = 1.0\nupper = 2.0\n[[experiments]]\nkind = "synthetic"\n'
        '[optimizer]\nname = "random"\n[budget]\nmax_evals = 5\n'
    )
    cases = [
        (
            'command = ["{python}", "sim.py"]\ntemplates = { "p.txt" = "missing.template" }\n'
            'outputs = { f = { file = "r.csv", x = "x", y = "y" } }',
            'model.external.templates."p.txt"',
            "not found",
        ),
        ('command = ["{python}", "sim.py"]', "model.external.outputs", "neither"),
        (
            'command = ["{python}", "{{ kn }}", "{{ ks }}"]\noutputs = { f = { file = "r.csv", x = "x", y = "y" } }',
            "model.external.command[2]",
            "{{ks}}",
        ),
        (
            'command = ["{python}"]\noutputs = { f = { file = "../r.csv", x = "x", y = "y" } }',
            "model.external.outputs.f.file",
            "'../r.csv'",
        ),
        (
            'command = ["{python}"]\nparser = "nowhere.py:parse"\nchannels = ["f"]',
            "model.external.parser",
            "does not exist",
        ),
        ('command = ["{python}"]\nparser = "parse"\nchannels = ["f"]', "model.external.parser", "'parse'"),
        (
            'command = ["{python}"]\noutputs = { f = { file = "r.csv", x = "x", y = "y" } }\nkeep = "some"',
            "model.external.keep",
            "'some'",
        ),
        (
            'command = ["{python}"]\noutputs = { f = { file = "r.csv", x = "x", y = "y" } }\nconditions = { kn = 1.0 }',
            "model.external.conditions.kn",
            "'kn'",
        ),
    ]
    for body, key, found in cases:
        issue = one_issue(tmp_path, "[model.external]\n" + body + "\n" + head)
        assert issue.key == key, (body, issue)
        assert found in issue.found, (body, issue)


# -- user models: a "package.module:Class" target, and an entry point ----------------------------------------
USER_MODEL = """
import numpy as np

from mechcalib.core.data import Curve
from mechcalib.core.model import Channel, Model
from mechcalib.core.parameters import Parameter, ParameterSpace
from mechcalib.errors import SettingError


class Ramp(Model):
    name = "ramp"

    def __init__(self, *, scale=1.0):
        if not scale > 0:
            raise SettingError(self.name, "scale", "a number > 0", scale)
        self.scale = scale
        self.space = ParameterSpace([Parameter("a", 0.0, 2.0), Parameter("b", -1.0, 1.0)])
        self.channels = (Channel("y", "x", "y"),)
        self.presets = {"default": {"a": 0.5, "b": 0.2}}
        self.default_conditions = {"n": 20}

    def simulate(self, theta, conditions=None):
        theta = self.check_theta(theta)
        x = np.linspace(0.0, 1.0, int(self.conditions(conditions)["n"]))
        y = self.scale * theta[:, :1] * x + theta[:, 1:2]
        return [{"y": Curve(x, y[i])} for i in range(theta.shape[0])]


class NotAModel:
    pass
"""

USER_RUN = """\
seed = 2
{model}
[[experiments]]
kind = "synthetic"
values = {{ a = 1.2 }}
[objective]
name = "f1"
[optimizer]
name = "de"
settings = {{ pop_size = 6 }}
[budget]
max_evals = 18
[output]
plots = false
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch) -> str:
    """``user_ramp.py`` in a folder on ``sys.path``, as a user's own module would be."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "user_ramp.py").write_text(USER_MODEL)
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.delitem(sys.modules, "user_ramp", raising=False)
    return "user_ramp"


def _cli_run(config: Path, out: Path) -> dict:
    from typer.testing import CliRunner

    from mechcalib.cli import app
    from mechcalib.runs import RESULT_FILE

    r = CliRunner().invoke(app, ["run", str(config), "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    return json.loads((out / RESULT_FILE).read_text())


def test_user_model_by_target_is_calibrated_by_mechcalib_run(tmp_path, user_module):
    model = f'[model]\nname = "{user_module}:Ramp"\noptions = {{ scale = 2.0 }}'
    cfg_path = write(tmp_path, USER_RUN.format(model=model), name="ramp.toml")
    cfg = load_config(cfg_path)
    m = cfg.build_model()
    assert type(m).__name__ == "Ramp" and m.scale == 2.0
    # the short top-level form names the same class
    short = load_config(write(tmp_path, USER_RUN.format(model=f'model = "{user_module}:Ramp"'), name="short.toml"))
    assert short.model.name == f"{user_module}:Ramp" and type(short.build_model()) is type(m)
    res = _cli_run(cfg_path, tmp_path / "out")
    assert res["status"] == "finished" and res["n_evaluations"] == 18 and set(res["best"]) == {"a", "b"}
    assert res["model"] == f"{user_module}:Ramp"
    assert RunConfig.from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()


def test_user_targets_report_their_errors_on_the_key(tmp_path, user_module):
    cases = [
        ('name = "no_such_user_module:Ramp"', "model.name", "an importable model class", "no module named"),
        (f'name = "{user_module}:Rmap"', "model.name", "an importable model class", "has no attribute 'Rmap'"),
        (f'name = "{user_module}:NotAModel"', "model.name", "an importable model class", "must be a subclass of"),
        (
            f'name = "{user_module}:Ramp"\noptions = {{ scale = -1.0 }}',
            "model.options.scale",
            "a number > 0",
            "-1.0 (a float)",
        ),
        (f'name = "{user_module}:Ramp"\noptions = {{ slope = 1.0 }}', "model.options", "keyword arguments", "slope"),
    ]
    for body, key, expected, found in cases:
        issue = one_issue(tmp_path, USER_RUN.format(model="[model]\n" + body))
        assert issue.key == key and expected in issue.expected and found in issue.found, (body, issue)


def test_optimizer_and_objective_by_target_and_short_form(tmp_path):
    # top-level keys come before the first table in TOML
    text = 'optimizer = "mechcalib.optimizers.pso:PSO"\nobjective = "mechcalib.objectives.curves:F2"\n'
    text += BASE.replace('[optimizer]\nname = "random"\n', "")
    cfg = load_config(write(tmp_path, text))
    assert cfg.build_optimizer().name == "pso" and isinstance(cfg.build_objective(), mc.F2)
    issue = one_issue(tmp_path, BASE.replace('name = "random"', 'name = "mechcalib.models.analytic:Linear"'))
    assert issue.key == "optimizer.name" and "must be a subclass of mechcalib.optimizers._base.Optimizer" in issue.found


def test_setting_errors_land_on_their_key(tmp_path):
    # SettingError fields, not the message text, place the issue
    issue = one_issue(tmp_path, _sub('name = "random"', 'name = "abc"\nsettings = { group_size = 7 }'))
    assert issue.key == "optimizer.settings.group_size" and "even" in issue.expected and issue.found == "7 (an integer)"
    issue = one_issue(tmp_path, _sub('name = "random"', 'name = "tsa"\nsettings = { seed_max_fraction = 0.05 }'))
    assert issue.key == "optimizer.settings.seed_max_fraction" and ">= seed_min_fraction" in issue.expected


@pytest.fixture
def plugin_distribution(tmp_path, monkeypatch):
    """The example package examples/plugin_model 'installed': its source on the path and a dist-info folder
    carrying the entry points its pyproject.toml declares."""
    import tomllib

    from mechcalib.models import MODELS

    example = EXAMPLES / "plugin_model"
    project = tomllib.loads((example / "pyproject.toml").read_text())["project"]
    info = tmp_path / "site" / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    lines = [
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
        for group, eps in project["entry-points"].items()
    ]
    (info / "entry_points.txt").write_text("\n".join(lines))
    monkeypatch.syspath_prepend(str(example / "src"))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    MODELS.refresh()  # forget entry points read before the 'installation'
    yield
    MODELS.refresh()


def test_user_model_by_entry_point_is_calibrated_by_mechcalib_run(tmp_path, plugin_distribution):
    from mechcalib.models import MODELS

    assert "damped_oscillator" in MODELS and "damped_oscillator" in MODELS.names()
    model = '[model]\nname = "damped_oscillator"\noptions = { amplitude = 2.0 }'
    cfg_path = write(tmp_path, USER_RUN.format(model=model).replace("a = 1.2", "omega = 7.5"), name="decay.toml")
    res = _cli_run(cfg_path, tmp_path / "out")
    assert res["status"] == "finished" and res["n_evaluations"] == 18 and set(res["best"]) == {"omega", "zeta"}
    assert res["model"] == "damped_oscillator"
    issue = one_issue(
        tmp_path, USER_RUN.format(model='[model]\nname = "damped_oscillator"\noptions = { amplitude = 0 }')
    )
    assert issue.key == "model.options.amplitude" and issue.found == "0 (an integer)"


# -- failure_loss against the objective's lower bound (issue 31, item 3) --------------------------------------
@pytest.mark.parametrize("objective", ["overlap_rss", "f1", "f2", "l2"])
def test_failure_loss_below_the_objectives_minimum_is_refused_by_check_and_run(tmp_path, objective):
    """Audit case: `failure_loss = -1.0` was accepted; a failed simulation then beat every real result."""
    from typer.testing import CliRunner

    from mechcalib.cli import app

    text = _sub("seed = 1", "seed = 1\nfailure_loss = -1.0") + f'[objective]\nname = "{objective}"\n'
    with pytest.raises(ConfigFileError) as ei:  # a number: the schema takes it; the objective refuses it
        load_config(write(tmp_path, text))
    (issue,) = ei.value.issues
    assert issue.key == "failure_loss" and issue.found == "-1.0 (a float)"
    assert f">= 0.0, the lowest loss objective {objective!r} can give" in issue.expected
    for command in (["check"], ["run", "--out", str(tmp_path / "out"), "--quiet"]):
        r = CliRunner().invoke(app, [command[0], str(tmp_path / "run.toml"), *command[1:]])
        assert r.exit_code == 2, r.output
        assert "`failure_loss`" in r.output and "-1.0" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "out").exists()


def test_failure_loss_of_zero_or_a_positive_penalty_is_accepted(tmp_path):
    for value in ("0.0", "1e6", "inf"):
        cfg = load_config(write(tmp_path, _sub("seed = 1", f"seed = 1\nfailure_loss = {value}")))
        assert cfg.build_problem().failure_loss == float(value)
