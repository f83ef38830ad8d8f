"""`mechcalib export` over the several runs a run folder's store holds: the folder's run, and the polish and
Jacobian runs `mechcalib uncertainty` adds; they are listed, and exported with --run NAME or --all."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mechcalib.cli import app
from mechcalib.errors import ConfigurationError
from mechcalib.runs import export_run
from mechcalib.storage import RunStore

EXAMPLES = Path(__file__).parents[1] / "examples"


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> tuple[Path, str, dict[str, int]]:
    """A run folder after `run` and `uncertainty`: the folder, its run, evaluations per run in the store."""
    out = tmp_path_factory.mktemp("export") / "lin"
    runner = CliRunner()
    ran = runner.invoke(app, ["run", str(EXAMPLES / "linear.toml"), "--out", str(out), "-q", "--budget", "100"])
    assert ran.exit_code == 0, ran.output
    assert runner.invoke(app, ["uncertainty", str(out), "-q"]).exit_code == 0
    name = json.loads((out / "run.json").read_text())["run_name"]
    with RunStore(out / "store.sqlite", readonly=True) as st:
        counts = {r.name: r.n_evals for r in st.runs()}
    assert set(counts) == {name, f"{name}.polish", f"{name}.jacobian"}
    return out, name, counts


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path) as fh:
        return list(csv.DictReader(fh))


def test_export_lists_the_other_runs(analysed):
    out, name, counts = analysed
    r = CliRunner().invoke(app, ["export", str(out)])
    assert r.exit_code == 0, r.output
    assert f"run {name!r}: {counts[name]} evaluations" in r.output
    assert "other runs in this store (2):" in r.output
    assert f"{name}.polish  finished, {counts[name + '.polish']} evaluations" in r.output
    assert f"{name}.jacobian" in r.output and "--run NAME" in r.output and "--all" in r.output
    assert len(_rows(out / "evaluations.csv")) == counts[name]


def test_export_one_other_run_by_name(analysed, tmp_path):
    out, name, counts = analysed
    r = CliRunner().invoke(app, ["export", str(out), "--run", f"{name}.jacobian", "--dataset", str(tmp_path / "j")])
    assert r.exit_code == 0, r.output
    table = out / f"evaluations.{name}.jacobian.csv"  # beside the folder's own table, not over it
    rows = _rows(table)
    assert len(rows) == counts[f"{name}.jacobian"] == 5  # the centre and +-h in each of 2 parameters
    b = sorted(float(row["b"]) for row in rows)
    assert b[0] < b[2] < b[-1] and b.count(b[2]) == 3  # central differences around the polished b
    assert np.load(tmp_path / "j.npz")["X"].shape == (5, 2)
    assert f"{name}  finished" in r.output  # the folder's run is listed among the others


def test_export_all_runs(analysed, tmp_path):
    out, name, counts = analysed
    dest = tmp_path / "tables"
    res = export_run(out, all_runs=True, path=dest, dataset=tmp_path / "d.npz")
    written = {e["run"]: e for e in res["exports"]}
    assert set(written) == set(counts) and res["other_runs"] == []
    assert written[name]["table"] == dest / "evaluations.csv"
    assert written[f"{name}.polish"]["table"] == dest / f"evaluations.{name}.polish.csv"
    for run, n in counts.items():
        assert len(_rows(written[run]["table"])) == n
    assert (tmp_path / "d.npz").is_file() and (tmp_path / f"d.{name}.jacobian.npz").is_file()
    assert res["run"] == name


def test_run_and_all_together_are_refused(analysed):
    out, name, _ = analysed
    with pytest.raises(ConfigurationError, match="one run .* or every run"):
        export_run(out, run=name, all_runs=True)
    r = CliRunner().invoke(app, ["export", str(out), "--run", "nope"])
    assert r.exit_code != 0 and "nope" in r.output and "Traceback" not in r.output


def test_the_command_exports_every_run(analysed, tmp_path):
    out, name, counts = analysed
    dest = tmp_path / "all"
    r = CliRunner().invoke(app, ["export", str(out), "--all", "--out", str(dest)])
    assert r.exit_code == 0, r.output
    for run, n in counts.items():
        assert f"(run {run!r}: {n} evaluations)" in r.output
    assert "other runs" not in r.output
    assert sorted(p.name for p in dest.iterdir()) == sorted(
        ["evaluations.csv", f"evaluations.{name}.polish.csv", f"evaluations.{name}.jacobian.csv"]
    )
    both = CliRunner().invoke(app, ["export", str(out), "--all", "--run", name])
    assert both.exit_code != 0 and "not both" in both.output and "Traceback" not in both.output
