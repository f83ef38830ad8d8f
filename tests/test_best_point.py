"""One best point everywhere: after `mechcalib uncertainty` polished the run's best evaluation, `show`, result.json
and the report's plots give the polished optimum, say where it came from (``best_source``) and keep the evaluation
(``best_evaluated``); once the run's best moves past the analysis, they give the evaluation again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mechcalib.cli import app

EXAMPLES = Path(__file__).parents[1] / "examples"


@pytest.fixture(scope="module")
def polished(tmp_path_factory):
    out = tmp_path_factory.mktemp("best") / "lin"
    runner = CliRunner()
    r = runner.invoke(app, ["run", str(EXAMPLES / "linear.toml"), "--out", str(out), "-q", "--budget", "60"])
    assert r.exit_code == 0, r.output
    before = json.loads(runner.invoke(app, ["show", str(out), "--json"]).stdout)
    r = runner.invoke(app, ["uncertainty", str(out), "--json"])
    assert r.exit_code == 0, r.output
    return out, before, json.loads((out / "uncertainty.json").read_text())


def test_show_and_result_json_give_the_polished_optimum_and_its_source(polished):
    out, before, unc = polished
    assert before["best_source"] == f"evaluation {before['best_index']}" and "best_evaluated" not in before
    runner = CliRunner()
    show = json.loads(runner.invoke(app, ["show", str(out), "--json"]).stdout)
    result = json.loads((out / "result.json").read_text())
    assert unc["best_loss"] < before["best_loss"]  # the polish moved the optimum (60 evaluations of DE are rough)
    for s in (show, result):
        assert s["best"] == {n: p["best"] for n, p in unc["parameters"].items()}
        assert s["best_loss"] == unc["best_loss"]
        assert s["best_source"].startswith(
            f"polished by `mechcalib uncertainty` from evaluation {before['best_index']}"
        )
        assert s["best_evaluated"]["params"] == before["best"] and s["best_evaluated"]["loss"] == before["best_loss"]
    assert "polished by `mechcalib uncertainty`" in runner.invoke(app, ["show", str(out)]).output
    # a second analysis starts from the same evaluation and records the evaluation's loss as its source
    assert runner.invoke(app, ["uncertainty", str(out), "--json"]).exit_code == 0
    again = json.loads((out / "uncertainty.json").read_text())
    assert again["source"]["best_loss"] == before["best_loss"]
    assert json.loads((out / "result.json").read_text())["best_evaluated"]["loss"] == before["best_loss"]


def test_the_report_plots_the_polished_optimum(polished, monkeypatch):
    import mechcalib.runs.report as report

    out, before, unc = polished
    seen = {}

    def fits(problem, x, folder, *, responses=None, title=None, **kw):
        seen.update(x=x, title=title, responses=responses)
        return []

    monkeypatch.setattr(report, "plot_fits", fits)
    monkeypatch.setattr(report, "write_uncertainty_plots", lambda *a, **k: [])
    report.write_report(out)
    np.testing.assert_array_equal(seen["x"], [unc["parameters"][n]["best"] for n in ("a", "b")])
    assert "polished by `mechcalib uncertainty`" in seen["title"] and seen["responses"] is None


def test_a_stale_analysis_gives_the_evaluation_back(polished, tmp_path):
    import shutil

    out, before, unc = polished
    copy = tmp_path / "lin"
    shutil.copytree(out, copy)
    moved = dict(unc, source=dict(unc["source"], best_index=unc["source"]["best_index"] + 1))
    (copy / "uncertainty.json").write_text(json.dumps(moved))
    show = json.loads(CliRunner().invoke(app, ["show", str(copy), "--json"]).stdout)
    assert show["best"] == before["best"] and show["best_loss"] == before["best_loss"]
    assert show["best_source"] == f"evaluation {before['best_index']}" and "best_evaluated" not in show
