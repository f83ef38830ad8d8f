from __future__ import annotations

from typer.testing import CliRunner

from mechcalib.cli import app

runner = CliRunner()


def test_models_and_optimizers_listing():
    r = runner.invoke(app, ["models"])
    assert r.exit_code == 0 and "duffing" in r.output and "k3" in r.output
    r = runner.invoke(app, ["optimizers"])
    assert r.exit_code == 0 and "lhs" in r.output


def test_demo_recovers_parameters(tmp_path):
    r = runner.invoke(app, ["demo", "--optimizer", "lhs", "--evals", "60", "--out", str(tmp_path), "--plots"])
    assert r.exit_code == 0, r.output
    assert "best loss" in r.output and (tmp_path / "fit_synthetic_duffing.png").stat().st_size > 10_000
    assert (tmp_path / "result.json").is_file() and (tmp_path / "store.sqlite").is_file()


def test_warmup_compiles_the_named_models_and_refuses_an_unknown_one():
    from typer.testing import CliRunner

    r = CliRunner().invoke(app, ["warmup", "duffing", "linear", "--jobs", "1"])
    assert r.exit_code == 0, r.output
    assert "duffing:" in r.output and "linear:" in r.output and "CPU s" in r.output
    assert "compiled 2 models" in r.output and "(1 at once)" in r.output
    r = CliRunner().invoke(app, ["warmup", "duffing", "linear", "--jobs", "2"])  # in two spawned processes
    assert r.exit_code == 0, r.output
    assert "duffing:" in r.output and "linear:" in r.output and "(2 at once)" in r.output
    r = CliRunner().invoke(app, ["warmup", "no_such_model"])
    assert r.exit_code == 2 and "no_such_model" in r.output
