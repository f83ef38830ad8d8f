"""A parameter that ends within 1 % of a bound is flagged (issue 30, item 3): in `run`'s output, `show`,
`result.json`, the report and the uncertainty table, with the advice to widen the box; one function decides
(:func:`mechcalib.core.parameters.bound_side`)."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mechcalib.cli import app
from mechcalib.core.parameters import Parameter, bound_side, bound_warnings, bounds_report
from mechcalib.runs import RESULT_FILE, write_report

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "linear_measured.csv"

# y = 0.2 x + 5 measured; the box of `a` stops at 0.19, so the least-squares optimum lies on its upper bound
CONFIG = f"""
seed = 1
[model]
name = "linear"
[parameters.a]
bounds = [0.1, 0.19]
[parameters.b]
bounds = [1.0, 10.0]
[[experiments]]
path = "{DATA.as_posix()}"
name = "measured"
channels = {{ y = ["x", "y_measured"] }}
[objective]
name = "f1"
[optimizer]
name = "auto"
[budget]
max_evals = 60
[output]
plots = false
"""


def _flat(text: str) -> str:
    """A rich table's text as one line: borders and wrapping gone, a row's cells in order."""
    return " ".join(re.sub(r"[│┃┏┓┗┛┡┩└┘━─┳┻╇╈┼]+", " ", text).split()) + " "


def test_bound_side_measures_one_percent_of_the_range_in_the_parameter_scale():
    assert bound_side(0.497, -0.2, 0.5) == "upper"  # 0.003 from 0.5: 0.43 % of 0.7
    assert bound_side(0.49, -0.2, 0.5) is None  # 1.4 %
    assert bound_side(-0.199, -0.2, 0.5) == "lower"
    assert bound_side(0.25, -0.2, 0.5) is None
    # log scale: 1 % of the decades, not of the values
    assert bound_side(1.05, 1.0, 1000.0, "log") == "lower"  # 0.7 % of 3 decades
    assert bound_side(10.0, 1.0, 1000.0) == "lower"  # linear: 0.9 % of 999
    assert bound_side(10.0, 1.0, 1000.0, "log") is None  # log: a third of the decades
    assert bound_side(1.2, 1.0, 1000.0, "log") is None  # 2.6 % of 3 decades
    assert bound_side(-1.05, -1000.0, -1.0, "log") == "upper"  # a negative log-scaled parameter
    assert bound_side(0.5, 0.0, 1.0, tol=0.6) == "lower"  # the tolerance is a share of the range


def test_bounds_report_skips_fixed_parameters_and_warns_with_the_advice():
    space = [Parameter("a", 0.0, 1.0), Parameter("k", 1.0, 100.0, "log"), Parameter("c", 0.0, 1.0, fixed=1.0)]
    values = {"a": 0.999, "k": 10.0, "c": 1.0}
    rep = bounds_report(space, values)
    assert rep == {
        "a": {"lower": 0.0, "upper": 1.0, "at_bound": "upper"},
        "k": {"lower": 1.0, "upper": 100.0, "at_bound": None},
    }
    (line,) = bound_warnings(rep, values)
    assert "'a'" in line and "upper bound 1" in line and "widen the box" in line and "[parameters.a]" in line


@pytest.fixture(scope="module")
def at_bound_run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("bounds")
    cfg = tmp / "lin.toml"
    cfg.write_text(CONFIG)
    out = tmp / "run"
    r = runner.invoke(app, ["run", str(cfg), "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out, r


def test_run_prints_and_result_json_records_the_parameter_at_its_bound(at_bound_run):
    out, r = at_bound_run
    res = json.loads((out / RESULT_FILE).read_text())
    assert res["best"]["a"] == pytest.approx(0.19, abs=0.0009)
    assert res["bounds"]["a"] == {"lower": 0.1, "upper": 0.19, "at_bound": "upper"}
    assert res["bounds"]["b"]["at_bound"] is None
    assert "at upper bound" in r.stdout  # the table's note
    assert "warning: parameter 'a' ends at its upper bound 0.19" in r.stderr and "widen the box" in r.stderr
    assert "'b' ends" not in r.stderr


def test_show_and_report_flag_it(at_bound_run, caplog):
    out, _ = at_bound_run
    r = runner.invoke(app, ["show", str(out)])
    assert r.exit_code == 0, r.output
    assert "at upper bound" in r.stdout and "parameter 'a' ends at its upper bound" in r.stderr
    s = json.loads(runner.invoke(app, ["show", str(out), "--json"]).stdout)
    assert s["bounds"]["a"]["at_bound"] == "upper"
    with caplog.at_level(logging.WARNING, logger="mechcalib"):
        write_report(out, folder=out / "plots")
    assert any("parameter 'a' ends at its upper bound" in m for m in caplog.messages)


def test_uncertainty_table_marks_the_interval_cut_by_the_bound(at_bound_run):
    out, _ = at_bound_run
    r = runner.invoke(app, ["uncertainty", str(out), "--force"])
    assert r.exit_code == 0, r.output
    table = _flat(r.stdout)
    assert re.search(r" a [0-9.]+ [0-9.]+ 0\.19 [0-9.e-]+ at upper bound, cut b ", table), table
    assert "cut: the 95 % interval ends at a bound" in r.stdout
    assert "parameter 'a' ends at its upper bound" in r.stderr
    p = json.loads((out / "uncertainty.json").read_text())["parameters"]
    assert p["a"]["at_bound"] == "upper" and p["a"]["cut"] in ("upper", "both") and p["a"]["upper"] == 0.19
    assert p["b"]["at_bound"] is None
    # and show carries the marks over into its intervals table
    shown = json.loads(runner.invoke(app, ["show", str(out), "--json"]).stdout)
    assert shown["uncertainty"]["parameters"]["a"]["cut"] == p["a"]["cut"]


@pytest.mark.slow
def test_friction_damper_example_flags_alpha_in_run_show_and_uncertainty(tmp_path):
    """The example of the issue: `alpha` ends at 0.497 of its 0.5 limit (about 30 s: 500 evaluations)."""
    out = tmp_path / "friction"
    r = runner.invoke(
        app, ["run", str(ROOT / "examples/friction_damper/friction_damper.toml"), "--out", str(out), "--no-plots"]
    )
    assert r.exit_code == 0, r.output
    res = json.loads((out / RESULT_FILE).read_text())
    assert res["bounds"]["alpha"]["at_bound"] == "upper" and res["best"]["alpha"] > 0.493
    assert [n for n, b in res["bounds"].items() if b["at_bound"]] == ["alpha"]
    assert "parameter 'alpha' ends at its upper bound 0.5" in r.stderr
    shown = runner.invoke(app, ["show", str(out)])
    assert "at upper bound" in shown.stdout and "parameter 'alpha' ends" in shown.stderr
    u = runner.invoke(app, ["uncertainty", str(out)])
    assert u.exit_code == 0, u.output
    table = _flat(u.stdout)
    assert re.search(r" alpha [0-9.]+ [0-9.]+ 0\.5 [0-9.e-]+ at upper bound, cut ko ", table), table
    assert "cut: the 95 % interval ends at a bound" in u.stdout
    assert json.loads((out / "uncertainty.json").read_text())["parameters"]["alpha"]["upper"] == 0.5
