"""The user's model code on dask workers (execution/shipping.py): a ``module:Class`` model whose module the
workers cannot import is shipped to them, or found before the first batch with a short error (exit 1), the
run folder left resumable."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mechcalib.cli import app
from mechcalib.runs import RESULT_FILE, STORE_FILE
from mechcalib.storage import RunStore

pytest.importorskip("distributed")

runner = CliRunner()
DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "linear_measured.csv"
MODULE = "mc_user_linear"
CODE = "from mechcalib.models.analytic import Linear\n\n\nclass MyLinear(Linear):\n    pass\n"


def config(tmp_path: Path, **evaluator: object) -> Path:
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in evaluator.items())
    text = f"""
seed = 3
[model]
name = "{MODULE}:MyLinear"
[parameters.b]
lower = 1.0
upper = 10.0
[[experiments]]
path = "{DATA.as_posix()}"
name = "measured"
channels = {{ y = ["x", "y_measured"] }}
[objective]
name = "f1"
[optimizer]
name = "de"
settings = {{ pop_size = 4 }}
[budget]
max_evals = 8
[evaluator]
kind = "dask"
workers = 2
{extra}[output]
plots = false
"""
    p = tmp_path / "user.toml"
    p.write_text(text)
    return p


def load_unreachable(folder: Path, monkeypatch, package: bool = False) -> None:
    """The user's module imported here from its file, its folder on no path: the local workers (spawned with
    this process's sys.path) cannot import it. ``package``: a package whose ``model`` submodule holds the class."""
    if package:
        (folder / MODULE).mkdir(parents=True)  # the class in a submodule: the whole package travels
        (folder / MODULE / "__init__.py").write_text("from .model import MyLinear\n")
        (folder / MODULE / "model.py").write_text(CODE)
        init = folder / MODULE / "__init__.py"
        spec = importlib.util.spec_from_file_location(MODULE, init, submodule_search_locations=[str(init.parent)])
    else:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{MODULE}.py").write_text(CODE)
        spec = importlib.util.spec_from_file_location(MODULE, folder / f"{MODULE}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, MODULE, mod)
    if package:
        monkeypatch.delitem(sys.modules, f"{MODULE}.model", raising=False)
    spec.loader.exec_module(mod)
    assert str(folder) not in sys.path


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    load_unreachable(tmp_path / "code", monkeypatch)
    return tmp_path / "code"


def _evals(out: Path) -> list[float]:
    with RunStore(out / STORE_FILE, readonly=True) as st:
        run = st.runs()[-1]
        return [r.loss for r in st.evaluations(run.name)]


@pytest.mark.parametrize("package", [False, True], ids=["module", "package"])
def test_the_model_module_is_shipped_and_the_run_succeeds(tmp_path, monkeypatch, package):
    load_unreachable(tmp_path / "code", monkeypatch, package)
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", str(config(tmp_path)), "--out", str(out)])
    assert r.exit_code == 0, r.output
    losses = _evals(out)
    assert len(losses) == 8 and np.all(np.isfinite(losses))
    assert json.loads((out / RESULT_FILE).read_text())["n_failed"] == 0


def test_a_worker_without_the_module_is_a_short_error_and_resume_works_once_fixed(tmp_path, user_module, monkeypatch):
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", str(config(tmp_path, ship_code=False)), "--out", str(out)])
    assert r.exit_code == 1, r.output
    err = r.output.strip()
    assert len(err.splitlines()) <= 10, err
    assert f"module '{MODULE}'" in err and f"{MODULE}:MyLinear" in err and "tcp://" in err, err
    assert (
        "PYTHONPATH" in err
        and "ship_code = false" in err
        and "ship_code = true" in err
        and f"mechcalib resume {out}" in err
    ), err
    assert "Traceback" not in err and "distributed" not in err.replace("docs/cluster.md", ""), err
    assert (out / STORE_FILE).is_file() and not _evals(out)  # nothing simulated, the folder kept
    # fixed: the module's folder on the workers' path (the local workers inherit this process's sys.path)
    monkeypatch.syspath_prepend(str(user_module))
    r = runner.invoke(app, ["resume", str(out)])
    assert r.exit_code == 0, r.output
    assert len(_evals(out)) == 8


def test_a_package_travels_as_a_zip_of_its_python_files_and_compiled_code_does_not(tmp_path, monkeypatch):
    import zipfile

    from mechcalib.execution.shipping import _source_of, user_modules

    load_unreachable(tmp_path / "code", monkeypatch, package=True)
    (tmp_path / "code" / MODULE / "notes.txt").write_text("not shipped")
    source, why = _source_of(f"{MODULE}.model")
    assert source is not None and why == ""
    assert sorted(zipfile.ZipFile(source).namelist()) == [f"{MODULE}/__init__.py", f"{MODULE}/model.py"]

    class Problem:
        model = sys.modules[MODULE].MyLinear()

    assert user_modules(Problem()) == {f"{MODULE}.model": f"the model {MODULE}.model:MyLinear"}
    (tmp_path / "code" / MODULE / "fast.so").write_bytes(b"\x7fELF")
    source, why = _source_of(MODULE)
    assert source is None and "compiled extension modules" in why


def test_cluster_events_are_counted_for_show_and_the_progress_line(tmp_path):
    from mechcalib.cli.common import ProgressBar
    from mechcalib.execution.dask_backend import event_counts
    from mechcalib.runs import cluster_note

    assert cluster_note(event_counts(tmp_path)) is None and ProgressBar("run", False, tmp_path)._description() == "run"
    events = [
        {"event": "lost_worker", "job": "1001", "worker": "w0", "tasks": 1, "simulations": 2},
        {"event": "resubmitted", "simulations": 2},
        {"event": "walltime", "job": "1002", "worker": "w1", "tasks": 0, "simulations": 0},
        {"event": "resubmitted", "simulations": 1},
    ]
    (tmp_path / "jobs.json").write_text(json.dumps({"kind": "slurm", "jobs": {}, "events": events}))
    assert event_counts(tmp_path) == {"lost_worker": 1, "resubmitted": 3, "walltime": 1}
    text = "1 worker lost, 1 job ended at its walltime, 3 simulations resubmitted"
    assert cluster_note(event_counts(tmp_path)) == text
    assert ProgressBar("run", False, tmp_path)._description() == f"run ({text})"
