"""External simulators contained: detached descendants killed, output capped, failed folders pruned, failures of
the machine stopping the run instead of being charged to a parameter set, template targets that are files."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.config import ConfigFileError, RunConfig
from mechcalib.errors import InfrastructureError
from mechcalib.models import SimulationFailure
from mechcalib.models import external as ext
from mechcalib.models.external import CsvOutput, ExternalModel, ExternalSetupError
from mechcalib.models.external_process import SUPERVISOR, run_contained
from mechcalib.storage import RunStore

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table in /proc")

OUT = "open('out.csv', 'w').write('x,y\\n0,0\\n1,' + repr(float(sys.argv[1])) + '\\n')\n"


def script_model(tmp_path: Path, code: str, **kw) -> ExternalModel:
    src = tmp_path / "prog.py"
    src.write_text("import os, sys, time\n" + code)
    opts = dict(files=[src], outputs={"y": CsvOutput("out.csv", "x", "y")}, workdir_root=tmp_path / "work")
    opts.update(kw)
    return ExternalModel(
        mc.ParameterSpace([mc.Parameter("a", 0.0, 1.0)]), ["{python}", "-S", "prog.py", "{{ a }}"], **opts
    )


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def wait_gone(pid: int, seconds: float = 3.0) -> bool:
    end = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.02)
    return not alive(pid)


# A grandchild that leaves the program's session; with `double`, its parent exits first so that it is orphaned.
DETACH = """
def detach(double):
    if os.fork() == 0:
        if double and os.fork() != 0:
            os._exit(0)
        os.setsid()
        open('gc.tmp', 'w').write(str(os.getpid()))
        os.replace('gc.tmp', 'grandchild.pid')
        time.sleep(60)
        os._exit(0)
"""


def _grandchild(work: Path) -> int:
    (pidfile,) = work.glob("*/grandchild.pid")
    return int(pidfile.read_text())


@linux
@pytest.mark.parametrize("double", [False, True], ids=["setsid-child", "double-fork-daemon"])
def test_timeout_kills_a_grandchild_that_started_its_own_session(tmp_path, double):
    code = (
        DETACH
        + f"detach({double})\nwhile not os.path.exists('grandchild.pid'):\n    time.sleep(0.01)\ntime.sleep(60)\n"
    )
    m = script_model(tmp_path, code, timeout=1.5)
    t0 = time.perf_counter()
    (f,) = m.simulate(np.array([[0.5]]))
    assert time.perf_counter() - t0 < 10
    assert isinstance(f, SimulationFailure) and "timed out after 1.5 s" in f.message
    pid = _grandchild(tmp_path / "work")
    assert wait_gone(pid), f"grandchild {pid} survived the timeout"


@linux
def test_a_daemon_left_behind_by_a_successful_run_is_killed(tmp_path, caplog):
    m = script_model(
        tmp_path,
        DETACH + "detach(True)\nwhile not os.path.exists('grandchild.pid'):\n    time.sleep(0.01)\n" + OUT,
        keep="all",
    )
    (r,) = m.simulate(np.array([[0.25]]))
    assert not isinstance(r, SimulationFailure) and r["y"].y[-1] == 0.25
    assert wait_gone(_grandchild(tmp_path / "work"))
    assert "killed 1 process(es) the program left running" in caplog.text


@linux
def test_a_simulation_dies_with_the_process_that_started_it(tmp_path):
    # what a pool worker killed for its deadline leaves: the supervisor follows its parent, with the whole tree
    (tmp_path / "prog.py").write_text("import os, time\n" + DETACH + "detach(False)\ntime.sleep(60)\n")
    spec = {"args": [sys.executable, "-S", "prog.py"], "cwd": str(tmp_path), "stdout": str(tmp_path / "o"),
            "stderr": str(tmp_path / "e"), "limit": 4096, "timeout": None}  # fmt: skip
    parent = (
        "import json, os, subprocess, sys, time\n"
        f"spec = {spec!r}\nspec['parent'] = os.getpid()\n"
        f"subprocess.Popen([sys.executable, '-I', '-S', {str(SUPERVISOR)!r}, json.dumps(spec)], stdout=subprocess.DEVNULL)\ntime.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-S", "-c", parent])
    try:
        end = time.monotonic() + 10
        while not (tmp_path / "grandchild.pid").exists() and time.monotonic() < end:
            time.sleep(0.02)
        pid = int((tmp_path / "grandchild.pid").read_text())
    finally:
        proc.kill()
        proc.wait()
    assert wait_gone(pid), f"grandchild {pid} outlived the process that started the simulation"


def test_chatty_output_is_cut_to_the_limit_with_the_tail_kept(tmp_path):
    code = "for i in range(40000):\n    print(f'line {i:06d} ' + 'x' * 60)\nprint('END-MARK')\nsys.exit(3)\n"
    m = script_model(tmp_path, code, output_limit=65536)
    (f,) = m.simulate(np.array([[0.5]]))
    assert isinstance(f, SimulationFailure) and "exited with status 3" in f.message
    expected = "".join(f"line {i:06d} " + "x" * 60 + "\n" for i in range(40000)).encode() + b"END-MARK\n"
    (wd,) = (tmp_path / "work").iterdir()
    data = (wd / "stdout.log").read_bytes()
    note, _, tail = data.partition(b"\n")
    assert note.startswith(b"[mechcalib: output cut to its last 65536 bytes")
    assert tail == expected[-65536:]  # exactly the last bytes the program wrote
    # the failure's message carries the last lines, so they outlive a deleted folder
    assert "last lines of stdout" in f.message and f.message.endswith("END-MARK")
    assert f"({len(expected)} bytes written)" in f.message


def test_failed_folders_are_kept_up_to_a_count_and_a_size_oldest_first(tmp_path):
    code = "open('big.bin', 'wb').write(b'0' * 10000)\nsys.exit(3)\n"
    m = script_model(tmp_path, code, max_failed_dirs=3)
    values = [0.1, 0.2, 0.3, 0.4, 0.5]
    msgs = [m.simulate(np.array([[a]]))[0].message for a in values]
    kept = sorted((tmp_path / "work").iterdir(), key=lambda d: (d / "failure.txt").stat().st_mtime)
    assert [ext.json.loads((d / "parameters.json").read_text())["parameters"]["a"] for d in kept] == values[2:]
    assert all((d / "failure.txt").read_text().startswith("external: exited with status 3") for d in kept)
    assert "working directory deleted" not in msgs[-1]
    # by size: each folder holds a bit more than 10 kB, so 25 kB keeps the newest two
    m2 = script_model(tmp_path, code, max_failed_dirs=10, max_failed_bytes=25000)
    (f,) = m2.simulate(np.array([[0.6]]))
    assert len(list((tmp_path / "work").iterdir())) == 2
    m3 = script_model(tmp_path, code, max_failed_bytes=5000)  # no folder fits: the new one goes too
    (f,) = m3.simulate(np.array([[0.7]]))
    assert "working directory deleted" in f.message and "max_failed_bytes = 5000" in f.message
    assert list((tmp_path / "work").iterdir()) == []
    other = tmp_path / "work" / "external-x-abcd1234"  # a failed folder of a model named "external-x"
    other.mkdir()
    (other / "failure.txt").write_text("failed\n")
    m3.simulate(np.array([[0.8]]))
    assert list((tmp_path / "work").iterdir()) == [other]


@linux
def test_a_log_that_cannot_be_written_is_reported_with_its_errno(tmp_path):
    # /dev/full fails every write with ENOSPC: a real full disk as the log sees it
    rep = run_contained(
        [sys.executable, "-c", "print('hello')"], tmp_path, stdout=Path("/dev/full"), stderr=tmp_path / "e",
        timeout=None, env=None, output_limit=4096,
    )  # fmt: skip
    assert rep.rc == 0 and rep.log_error is not None and rep.log_error[0] == errno.ENOSPC


# -- failures of the machine stop the run; resume continues ------------------------------------------------
def _problem(tmp_path: Path, command: list[str]) -> mc.Problem:
    model = ExternalModel(
        mc.ParameterSpace([mc.Parameter("a", 0.0, 1.0)]),
        command,
        outputs={"y": CsvOutput("out.csv", "x", "y")},
        workdir_root=tmp_path / "work",
    )
    exp = mc.Experiment({"y": mc.Curve(np.array([0.0, 1.0]), np.array([0.0, 0.3]))})
    return mc.Problem(model, exp, mc.L2())


def _optimizer():
    return mc.optimizers.make_optimizer("random", batch_size=2, seed=5)


def _stops_then_resumes(tmp_path: Path, prob: mc.Problem, breaking, fixing, n: int = 4, break_at: int = 2) -> None:
    """Calibrate ``n`` evaluations; after ``break_at`` the machine fails (``breaking()``): the run stops with an
    InfrastructureError and its stored evaluations; after ``fixing()`` resume ends as an unbroken run."""
    reference = mc.calibrate(prob, _optimizer(), max_evals=n, store=RunStore(tmp_path / "ref.db"), run_name="r")
    seen = []

    def count(i, b, o):
        seen.append(i)
        if len(seen) == break_at:
            breaking()

    with RunStore(tmp_path / "s.db") as st:
        with pytest.raises(InfrastructureError, match="machine failed, not the parameter set"):
            mc.calibrate(prob, _optimizer(), max_evals=n, store=st, run_name="r", on_evaluation=count)
        info = st.run("r")
        assert info.status == "interrupted" and "InfrastructureError" in info.error
        stored = st.stored_evaluations(info.id)
        assert len(stored) == break_at and all(r.status == "ok" for r in stored.values())
        fixing()
        res = mc.calibrate(prob, _optimizer(), max_evals=n, store=st, run_name="r")
    assert res.n_replayed == break_at and res.n_simulated == n - break_at and res.n_failed == 0
    assert res.best_loss == reference.best_loss and np.array_equal(res.history.X, reference.history.X)


def test_a_missing_program_stops_the_run_and_resume_continues(tmp_path):
    prog = tmp_path / "sim.py"
    prog.write_text(f"#!{sys.executable} -S\nimport sys\n{OUT}")
    prog.chmod(0o755)
    hidden = tmp_path / "sim.hidden"
    prob = _problem(tmp_path, [str(prog), "{{ a }}"])
    _stops_then_resumes(tmp_path, prob, lambda: prog.rename(hidden), lambda: hidden.rename(prog))


def test_a_full_disk_stops_the_run_and_resume_continues(tmp_path, monkeypatch):
    real, full = ext._write_text, []

    def write(path, text):
        if full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, text)

    monkeypatch.setattr(ext, "_write_text", write)
    prob = _problem(tmp_path, ["{python}", "-S", "-c", f"import sys\n{OUT}", "{{ a }}"])
    _stops_then_resumes(tmp_path, prob, lambda: full.append(1), full.clear)
    assert list((tmp_path / "work").iterdir()) == []  # no half-prepared folder left behind


def test_a_failure_on_a_full_file_system_is_the_machines(tmp_path, monkeypatch):
    m = script_model(tmp_path, "sys.exit(1)\n")
    monkeypatch.setattr(ext, "disk_full", lambda path: 512)
    with pytest.raises(InfrastructureError, match="is full \\(512 bytes free\\)"):
        m.simulate(np.array([[0.5]]))
    assert list((tmp_path / "work").iterdir()) == []


def _raise_machine(x):
    if x[0, 0] > 0.5:
        raise InfrastructureError("disk gone")
    return x[:, 0]


@pytest.mark.parametrize("kind", ["pool", "dask"])
def test_process_evaluators_stop_on_a_failure_of_the_machine(kind):
    prob = mc.FunctionProblem.from_bounds(_raise_machine, [0.0], [1.0])
    if kind == "dask":
        pytest.importorskip("distributed")
        evaluator = mc.execution.DaskEvaluator(n_workers=1, processes=False, chunk_size=1)
    else:
        evaluator = mc.execution.PoolEvaluator(n_workers=1, chunk_size=1)
    with evaluator as ev:
        ev.start(prob)
        assert [o.loss for o in ev.submit(np.array([[0.25]]))] == [0.25]
        with pytest.raises(InfrastructureError, match="disk gone"):
            list(ev.submit(np.array([[0.75]])))
        assert [o.loss for o in ev.submit(np.array([[0.5]]))] == [0.5]  # the pool still works


def test_the_cli_says_how_to_continue_after_a_failure_of_the_machine(capsys):
    import typer

    from mechcalib.cli.common import EXIT_FAILED, errors

    with pytest.raises(typer.Exit) as exc, errors("runs/demo"):
        raise InfrastructureError("disk full")
    assert exc.value.exit_code == EXIT_FAILED
    assert capsys.readouterr().err.strip() == "error: disk full; continue with `mechcalib resume runs/demo`"


# -- template targets are files ------------------------------------------------------------------------------
@pytest.mark.parametrize("target", [".", "sub/", "sub/.", "stdout.log"])
def test_a_template_target_must_be_a_file(tmp_path, target):
    tpl = tmp_path / "t.template"
    tpl.write_text("a = {{ a }}\n")
    with pytest.raises(ExternalSetupError) as exc:
        script_model(tmp_path, OUT, templates={target: tpl})
    assert exc.value.field == f"templates.{target}" and repr(target) in str(exc.value)
    cfg = {
        "model": {"external": {"command": ["{python}", "prog.py"], "templates": {target: str(tpl)}}},
        "parameters": {"a": {"lower": 0.0, "upper": 1.0}},
        "experiments": [{"path": "m.csv"}],
        "budget": {"max_evals": 4},
    }
    (tmp_path / "m.csv").write_text("x,y\n0,0\n1,1\n")
    cfg["model"]["external"]["outputs"] = {"y": {"file": "out.csv", "x": "x", "y": "y"}}
    with pytest.raises(ConfigFileError) as cexc:
        RunConfig.from_dict(cfg, base_dir=tmp_path).build_problem()
    text = str(cexc.value)
    assert "model.external.templates" in text and repr(target) in text
    assert "a folder or '.' is not a file" in text or "mechcalib's own" in text
