"""The command line's shared pieces: the NAME=VALUE option parser, the error handler's exit codes, and a
package whose modules import in any order (no cycle)."""

from __future__ import annotations

import ast
import itertools
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer
from typer.testing import CliRunner

from mechcalib.cli import app
from mechcalib.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    VALUE_KINDS,
    errors,
    fail,
    finish_generation,
    parse_assignments,
)
from mechcalib.config import load_config
from mechcalib.errors import ConfigurationError, DataError, MissingExtraError
from mechcalib.execution import EvaluatorError

CLI = Path(__file__).resolve().parents[1] / "src" / "mechcalib" / "cli"
MODULES = sorted(f"mechcalib.cli.{p.stem}" for p in CLI.glob("*.py") if p.stem not in ("__init__", "__main__"))
COMMAND_MODULES = [m for m in MODULES if m != "mechcalib.cli.common"]


# -- the option parser ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [
        ("int", "3", 3),
        ("int", "-12", -12),
        ("int", "+4", 4),
        ("float", "1.5", 1.5),
        ("float", "2e-3", 2e-3),
        ("float", "7", 7.0),
        ("number", "7", 7),
        ("number", "0.25", 0.25),
        ("number", "-1e2", -100.0),
        ("bool", "true", True),
        ("bool", "False", False),
        ("bool", "yes", True),
        ("bool", "off", False),
        ("bool", "1", True),
        ("bool", "0", False),
        ("str", "paper", "paper"),
        ("str", "1.5", "1.5"),
        ("auto", "paper", "paper"),
        ("auto", "3", 3),
        ("auto", "0.5", 0.5),
        ("auto", "TRUE", True),
        ("auto", "false", False),
        ("auto", "yes", "yes"),
    ],
)
def test_each_kind_converts_its_text(kind, text, value):
    out = parse_assignments([f"x={text}"], "--opt", kind)
    assert out == {"x": value} and type(out["x"]) is type(value)


@pytest.mark.parametrize(
    ("kind", "text", "reason"),
    [
        ("int", "1.5", "is not an integer"),
        ("int", "three", "is not an integer"),
        ("float", "abc", "is not a number"),
        ("float", "1; rm -rf ~", "is not a number"),
        ("float", "nan", "is not a finite number"),
        ("float", "-inf", "is not a finite number"),
        ("number", "1.2.3", "is not a number"),
        ("number", "inf", "is not a finite number"),
        ("bool", "maybe", "is not a boolean"),
        ("auto", "nan", "is not a finite number"),
    ],
)
def test_bad_text_names_option_text_and_expected_form(kind, text, reason):
    with pytest.raises(typer.BadParameter) as info:
        parse_assignments([f"k={text}"], "--opt", kind)
    exc = info.value
    assert exc.param_hint == "--opt"
    assert exc.message == f"k: {text!r} {reason}; expected {VALUE_KINDS[kind][1]}"
    assert "Invalid value for --opt" in exc.format_message()


@pytest.mark.parametrize("item", ["k", "k=", "=1", " = "])
def test_missing_name_or_value(item):
    with pytest.raises(typer.BadParameter, match="expected NAME=VALUE") as info:
        parse_assignments([item], "--set", "float")
    assert info.value.param_hint == "--set" and repr(item) in info.value.message


def test_declared_names_with_their_own_kinds():
    kinds = {"n_points": "int", "F0": "float", "label": "str"}
    out = parse_assignments(["n_points=5", " F0 = 2 ", "label=a=b", "F0=3"], "--condition", kinds, what="condition")
    # spaces around name and value are dropped, the first "=" splits, a repeated name keeps its last value
    assert out == {"n_points": 5, "F0": 3.0, "label": "a=b"} and isinstance(out["F0"], float)
    with pytest.raises(typer.BadParameter) as info:
        parse_assignments(["mass=2"], "--condition", kinds, what="condition")
    assert info.value.message == "unknown condition 'mass'; valid names are ['n_points', 'F0', 'label']"
    assert parse_assignments([], "--condition", kinds) == {}


def test_a_bad_option_is_a_usage_error_through_the_command():
    r = CliRunner().invoke(app, ["simulate", "duffing", "--condition", "F0=big", "--out", "unused.csv"])
    assert r.exit_code == EXIT_USAGE
    text = " ".join(r.output.replace("│", " ").split())
    assert "--condition" in text and "'F0' must be a finite number, got 'big'" in text


# -- the error handler ------------------------------------------------------------------------------------------
def _exit_of(exc: BaseException, capsys, resume=None) -> tuple[int, str]:
    with pytest.raises(typer.Exit) as info, errors(resume):
        raise exc
    return info.value.exit_code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("exc", "code", "message"),
    [
        (ConfigurationError("pop_size must be >= 2, got 1"), EXIT_USAGE, "error: pop_size must be >= 2, got 1"),
        (DataError("data file 'x.csv' does not exist"), EXIT_USAGE, "error: data file 'x.csv' does not exist"),
        (MissingExtraError("install it with `pip install 'mechcalib[deep]'`"), EXIT_USAGE, "mechcalib[deep]"),
        (FileNotFoundError("no such file: 'a.npz'"), EXIT_FAILED, "error: FileNotFoundError: no such file: 'a.npz'"),
        (PermissionError("read-only"), EXIT_FAILED, "error: PermissionError: read-only"),
        (EvaluatorError("workers did not start"), EXIT_FAILED, "error: EvaluatorError: workers did not start"),
    ],
)
def test_error_handler_exit_codes(capsys, exc, code, message):
    got, err = _exit_of(exc, capsys)
    assert got == code and message in err and err.count("\n") == 1


def test_configuration_file_errors_print_their_issue_list(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[model]\nname = "linear"\n')  # no experiments, no budget
    with pytest.raises(typer.Exit) as info, errors():
        load_config(bad)
    err = capsys.readouterr().err
    # the file's headed list of broken rules, as it is (no "error:" prefix before the heading)
    assert info.value.exit_code == EXIT_USAGE and err.startswith("invalid configuration") and "`budget`" in err


def test_interrupt_says_how_to_resume(capsys):
    code, err = _exit_of(KeyboardInterrupt(), capsys, resume=Path("runs/a"))
    assert code == EXIT_INTERRUPTED and err.strip() == f"interrupted; continue with `mechcalib resume {Path('runs/a')}`"
    code, err = _exit_of(KeyboardInterrupt(), capsys)
    assert code == EXIT_INTERRUPTED and err.strip() == "interrupted"


def test_other_exceptions_pass_through_and_success_is_silent(capsys):
    with pytest.raises(ZeroDivisionError), errors():
        raise ZeroDivisionError("a bug shows its traceback")
    with errors():
        pass
    assert capsys.readouterr().err == ""


def test_fail_prints_and_exits(capsys):
    with pytest.raises(typer.Exit) as info:
        fail("give --run NAME")
    assert info.value.exit_code == EXIT_USAGE and capsys.readouterr().err == "error: give --run NAME\n"
    with pytest.raises(typer.Exit) as info:
        fail("the simulation failed", EXIT_FAILED)
    assert info.value.exit_code == EXIT_FAILED and EXIT_OK == 0


def _generation(complete: bool):
    return SimpleNamespace(dataset=None, complete=complete, done=3 if complete else 1, n=3)


def test_a_generation_without_a_successful_simulation(tmp_path, capsys):
    # still going (a budget stopped it): nothing written, success; ended with every set failed: status 1
    assert finish_generation(_generation(False), tmp_path / "d.npz") is None
    with pytest.raises(typer.Exit) as info:
        finish_generation(_generation(True), tmp_path / "d.npz")
    assert info.value.exit_code == EXIT_FAILED and not (tmp_path / "d.npz").exists()
    assert capsys.readouterr().out.count("no successful simulation yet") == 2


def test_a_run_without_a_successful_evaluation_exits_with_1(tmp_path, capsys):
    from mechcalib.cli.run import _print_result

    summary = {
        "run_name": "r",
        "status": "finished",
        "stop_reason": "max_evals",
        "best_loss": None,
        "n_evaluations": 4,
        "n_failed": 4,
        "n_simulated": 4,
        "best": {},
    }
    rec = SimpleNamespace(summary=summary, result_path=tmp_path / "result.json", out_dir=tmp_path, plots=[])
    with pytest.raises(typer.Exit) as info:
        _print_result(rec, quiet=True)
    captured = capsys.readouterr()
    assert info.value.exit_code == EXIT_FAILED and "best loss - after 4 evaluations (4 failed" in captured.out
    assert "no evaluation of the run succeeded" in captured.err
    _print_result(SimpleNamespace(**{**vars(rec), "summary": {**summary, "best_loss": 0.5, "n_failed": 0}}), True)
    assert "best loss 0.5 after 4 evaluations" in capsys.readouterr().out


# -- no import cycle --------------------------------------------------------------------------------------------
def test_the_package_holds_the_expected_modules():
    assert MODULES == [
        "mechcalib.cli.common",
        "mechcalib.cli.dashboard",
        "mechcalib.cli.inverse",
        "mechcalib.cli.models",
        "mechcalib.cli.run",
    ]


@pytest.mark.parametrize("order", list(itertools.permutations(MODULES[1:])) + [tuple(MODULES)])
def test_modules_import_in_any_order_in_a_fresh_interpreter(order):
    # each command module first, before the package's __init__ runs its registrations, then the rest
    code = "; ".join(f"import {m}" for m in order) + "; import mechcalib.cli; mechcalib.cli.app"
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_command_modules_import_only_common():
    for name in COMMAND_MODULES:
        tree = ast.parse((CLI / f"{name.rsplit('.', 1)[1]}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:  # from .x import ... / from . import x
                targets = [node.module] if node.module else [a.name for a in node.names]
                assert targets == ["common"], (name, targets)


def test_methods_lists_every_family_by_its_registry_name():
    from typer.testing import CliRunner

    from mechcalib.cli import app
    from mechcalib.inverse import NETWORKS
    from mechcalib.optimizers import OPTIMIZERS

    r = CliRunner().invoke(app, ["methods"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    for family in ("optimizer", "surrogate strategy", "inverse network"):
        assert family in r.output
    for name in [*OPTIMIZERS, *NETWORKS, "Inverse PCA"]:
        assert name in r.output
