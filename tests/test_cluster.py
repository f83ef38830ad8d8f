"""SLURM and PBS through dask-jobqueue, driven by the stand-in scheduler commands of tests/fake_scheduler:
dask-jobqueue's real code path submits real job scripts, run here as local processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.config import ConfigFileError, RunConfig

pytest.importorskip("dask_jobqueue")
pytest.importorskip("distributed")

sys.path.insert(0, str(Path(__file__).parent))
import fake_scheduler  # noqa: E402
from mechcalib.execution import cluster_evaluator  # noqa: E402
from mechcalib.execution.jobqueue import read_jobs  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "linear.toml"


@pytest.fixture
def scheduler(tmp_path, monkeypatch):
    """The stand-in commands first on PATH; the folder of their job states."""
    env = fake_scheduler.install(tmp_path / "bin", tmp_path / "state")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))
    return tmp_path / "state"


def alive_jobs(state: Path) -> list[str]:
    out = subprocess.run(["squeue"], capture_output=True, text=True, check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def wait_for(cond, timeout=30.0):
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        if cond():
            return True
        time.sleep(0.1)
    return False


def slow_sum(x: np.ndarray) -> float:
    time.sleep(0.3)
    return float(np.sum(np.asarray(x) ** 2))


def problem():
    space = mc.ParameterSpace.from_bounds([0.0] * 2, [1.0] * 2)
    return mc.FunctionProblem(slow_sum, space, vectorized=False)


def evaluator(tmp_path, kind="slurm", **kw):
    opts = dict(cores=1, memory="1GB", walltime="00:05:00", maximum_jobs=2, death_timeout=5)
    opts.update(kw)
    ev = cluster_evaluator(kind, cluster_options={"log_directory": str(tmp_path / "logs")}, **opts)
    ev.record_to(tmp_path)
    return ev


# ---- settings ---------------------------------------------------------------------------------------
BASE = {"kind": "slurm", "cores": 2, "memory": "4GB", "walltime": "01:00:00", "maximum_jobs": 4}


def config_with(**evaluator) -> dict:
    import tomllib

    data = tomllib.loads(EXAMPLE.read_text())
    data["experiments"][0]["path"] = str(EXAMPLE.parent / data["experiments"][0]["path"])
    data["evaluator"] = {**BASE, **evaluator}
    return data


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"cores": -2}, ["evaluator.cores", "expected a value >= 1", "got -2"]),
        ({"walltime": "2 hours"}, ["walltime", "HH:MM:SS"]),
        ({"minimum_jobs": 5, "maximum_jobs": 2}, ["maximum_jobs", ">= minimum_jobs", "raise maximum_jobs"]),
        ({"memory": "plenty"}, ["memory", '"4GB"']),
        ({"kind": "pool", "cores": 2}, ["cores", 'only with kind = "slurm" or "pbs"']),
    ],
)
def test_bad_cluster_settings_name_the_key_and_rule(change, words):
    with pytest.raises(ConfigFileError) as err:
        RunConfig.from_dict(config_with(**change))
    msg = str(err.value)
    for w in words:
        assert w in msg, msg
    assert "evaluator" in msg


def test_good_cluster_settings_validate():
    cfg = RunConfig.from_dict(config_with(walltime="1-02:00:00", job_script_prologue=["source venv/bin/activate"]))
    assert cfg.evaluator.kind == "slurm" and cfg.evaluator.walltime == "1-02:00:00"


def test_missing_dask_jobqueue_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)
    with pytest.raises(ImportError, match=r"pip install 'mechcalib\[cluster\]'"):
        cluster_evaluator("slurm", cores=1, memory="1GB", walltime="00:01:00", maximum_jobs=1)


def test_a_slurm_run_without_dask_jobqueue_is_one_line_naming_the_key_and_the_extra(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from mechcalib.cli import app

    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)  # as if not installed
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", str(slurm_config(tmp_path, 8, "linear")), "--out", str(out)])
    assert r.exit_code == 2, r.output
    err = r.output.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert '[evaluator] kind = "slurm" needs dask-jobqueue' in err and "pip install 'mechcalib[cluster]'" in err
    assert not out.exists()  # refused before a run folder was made


# ---- the stand-in scheduler -------------------------------------------------------------------------
def test_jobs_start_are_recorded_and_cancelled_on_exit(tmp_path, scheduler):
    ev = evaluator(tmp_path, adaptive=False, maximum_jobs=2)
    ev.start(problem())
    outs = list(ev.submit(np.random.default_rng(0).random((6, 2))))
    assert sorted(o.index for o in outs) == list(range(6)) and {o.status for o in outs} == {"ok"}, outs[0]
    jobs = read_jobs(tmp_path)["jobs"]
    assert len(jobs) == 2 and all(j["state"] == "submitted" for j in jobs.values())
    assert set(alive_jobs(scheduler)) == set(jobs)
    script = (scheduler / f"{next(iter(jobs))}.sh").read_text()
    assert "--death-timeout 5" in script and "#SBATCH -t 00:05:00" in script
    ev.close()
    assert wait_for(lambda: not alive_jobs(scheduler))
    assert all(j["state"] == "ended" for j in read_jobs(tmp_path)["jobs"].values())


def test_jobs_are_cancelled_even_when_dask_fails_to_close_the_cluster(tmp_path, scheduler, monkeypatch):
    # a worker that has not reached the scheduler within death_timeout ends its job by itself (a loaded 2-core
    # machine starts the second job slowly): a long one keeps both jobs alive until the close cancels them
    ev = evaluator(tmp_path, adaptive=False, maximum_jobs=2, death_timeout=120)
    ev.start(problem())
    assert len(list(ev.submit(np.full((2, 2), 0.5)))) == 2
    assert wait_for(lambda: len(alive_jobs(scheduler)) == 2)
    cluster = ev._cluster
    real_close = cluster.close

    def failing_close(*a, **k):  # as SpecCluster's close does when it races a starting job
        raise AssertionError("Status.running")

    monkeypatch.setattr(cluster, "close", failing_close)
    try:
        ev.close()  # no exception: the run's result is not lost to a failed close
        jobs = read_jobs(tmp_path)["jobs"]
        assert len(jobs) == 2 and {j["state"] for j in jobs.values()} == {"cancelled"}
        assert wait_for(lambda: not alive_jobs(scheduler))
    finally:
        real_close()


def test_pbs_jobs_run_and_end(tmp_path, scheduler):
    ev = evaluator(tmp_path, kind="pbs", adaptive=False, maximum_jobs=1)
    ev.start(problem())
    outs = list(ev.submit(np.full((3, 2), 0.5)))
    assert [o.loss for o in sorted(outs, key=lambda o: o.index)] == [0.5, 0.5, 0.5]
    script = next(scheduler.glob("*.sh")).read_text()
    assert "#PBS -l walltime=00:05:00" in script
    ev.close()
    assert wait_for(lambda: not alive_jobs(scheduler))


def test_adaptive_scales_up_for_a_batch_and_down_after(tmp_path, scheduler):
    ev = evaluator(tmp_path, minimum_jobs=0, maximum_jobs=3)
    ev.start(problem())
    list(ev.submit(np.random.default_rng(1).random((30, 2))))
    assert len(read_jobs(tmp_path)["jobs"]) >= 2  # grew beyond one job for the batch
    # idle, the adaptive cluster retires its workers (dask's adapt waits a few intervals)
    ev._cluster.adapt(minimum_jobs=0, maximum_jobs=3, interval="200ms", wait_count=2)
    assert wait_for(lambda: not alive_jobs(scheduler), timeout=30)
    assert not read_jobs(tmp_path)["events"]  # retired by scaling: not counted as lost
    ev.close()


def test_a_job_killed_mid_batch_loses_nothing_and_is_told(tmp_path, scheduler):
    ev = evaluator(tmp_path, adaptive=False, maximum_jobs=2)
    ev.start(problem())
    X = np.random.default_rng(2).random((10, 2))
    got = []
    for i, o in enumerate(ev.submit(X)):
        got.append(o)
        if i == 0:
            victim = sorted(read_jobs(tmp_path)["jobs"])[0]
            subprocess.run(["scancel", victim], check=True)
    assert sorted(o.index for o in got) == list(range(10)) and {o.status for o in got} == {"ok"}
    np.testing.assert_allclose([o.loss for o in sorted(got, key=lambda o: o.index)], np.sum(X**2, axis=1))
    wait_for(lambda: (ev._look_at_cluster(), read_jobs(tmp_path)["events"])[1], timeout=10)
    events = read_jobs(tmp_path)["events"]
    lost = [e for e in events if e["event"] == "lost_worker"]
    assert len(lost) == 1 and lost[0]["job"] == victim and lost[0]["worker"].startswith("SLURMCluster"), events
    # the simulations running on it were run again, and counted as such
    resent = sum(e["simulations"] for e in events if e["event"] == "resubmitted")
    assert resent == lost[0]["simulations"] and {e["event"] for e in events} <= {"lost_worker", "resubmitted"}
    ev.close()


def test_an_asynchronous_run_tells_a_lost_job_as_it_goes(tmp_path, scheduler):
    from mechcalib.execution.slots import DaskSlots, slots_for

    ev = evaluator(tmp_path, adaptive=False, maximum_jobs=2)
    ev.start(problem())
    slots = slots_for(2, ev)
    assert isinstance(slots, DaskSlots)  # one task per set on the job queue's cluster, not a thread each
    X = np.random.default_rng(4).random((60, 2))
    for t in range(2):
        slots.submit(t, X[t])
    got, sent = {}, 2
    while len(got) < sent:
        t, o = slots.next_done()
        got[t] = o
        told = bool(read_jobs(tmp_path)["events"])
        if sent < len(X) and (len(got) < 10 or not told):  # sets go on until the loss is told (or 60)
            slots.submit(sent, X[sent])
            sent += 1
        if len(got) == 1:  # the job of a worker that runs a set (a set sleeps 0.3 s) is killed under it
            assert wait_for(lambda: any(ev.client.processing().values()), timeout=5)
            busy = next(a for a, keys in ev.client.processing().items() if keys)
            name = ev.client.scheduler_info()["workers"][busy]["name"]
            victim = next(j for j, i in read_jobs(tmp_path)["jobs"].items() if str(name).startswith(i["name"]))
            subprocess.run(["scancel", victim], check=True)
    # the loss was recorded while the run went on (before the slots' close), with the simulation it was running
    assert told, "no cluster event was recorded while the run went on"
    assert {o.status for o in got.values()} == {"ok"} and sorted(got) == list(range(sent))
    np.testing.assert_allclose([got[t].loss for t in range(sent)], np.sum(X[:sent] ** 2, axis=1))
    events = read_jobs(tmp_path)["events"]
    lost = [e for e in events if e["event"] == "lost_worker"]
    assert len(lost) == 1 and lost[0]["job"] == victim, events
    resent = sum(e["simulations"] for e in events if e["event"] == "resubmitted")
    assert resent == lost[0]["simulations"] >= 1
    slots.close()
    ev.close()


def test_a_job_at_its_walltime_ends_and_its_simulations_are_run_again(tmp_path, scheduler):
    import dask

    # dask replaces a lost job after distributed.deploy.lost-worker-timeout (15 s by default)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "500ms"}):
        _walltime_run(tmp_path, scheduler)


def _walltime_run(tmp_path, scheduler):
    ev = evaluator(tmp_path, walltime="00:00:05", minimum_jobs=1, maximum_jobs=2, chunk_size=1)
    ev.start(problem())
    rng = np.random.default_rng(3)
    for _ in range(8):  # batches until a job has reached its walltime (a job lives 5 s)
        X = rng.random((8, 2))
        outs = sorted(ev.submit(X), key=lambda o: o.index)
        assert [o.index for o in outs] == list(range(8)) and {o.status for o in outs} == {"ok"}
        np.testing.assert_allclose([o.loss for o in outs], np.sum(X**2, axis=1))
        ev._look_at_cluster()
        if any(e["event"] == "walltime" for e in read_jobs(tmp_path)["events"]):
            break
    info = read_jobs(tmp_path)
    ended = [e for e in info["events"] if e["event"] == "walltime"]
    assert ended, info["events"]
    states = {j: __import__("json").loads((scheduler / f"{j}.json").read_text())["state"] for j in info["jobs"]}
    assert states[ended[0]["job"]] == "TIMEOUT"  # the stand-in ended that job at its walltime
    assert not [e for e in info["events"] if e["event"] == "lost_worker" and e["job"] == ended[0]["job"]]
    ev.close()
    assert wait_for(lambda: not alive_jobs(scheduler))


# ---- a run killed with SIGKILL ----------------------------------------------------------------------
SLOW_MODEL = """import time

from mechcalib.models.analytic import Linear


class SlowLinear(Linear):
    def simulate(self, theta, conditions=None):
        time.sleep(0.15 * len(theta))
        return super().simulate(theta, conditions)
"""


def slurm_config(tmp_path: Path, budget: int, model: str = "mc_slow_model:SlowLinear") -> Path:
    data = EXAMPLE.parent / "data" / "linear_measured.csv"
    text = f"""
seed = 5
[model]
name = "{model}"
[parameters.b]
lower = 1.0
upper = 10.0
[[experiments]]
path = "{data.as_posix()}"
name = "measured"
channels = {{ y = ["x", "y_measured"] }}
[objective]
name = "f1"
[optimizer]
name = "de"
settings = {{ pop_size = 4 }}
[budget]
max_evals = {budget}
[evaluator]
kind = "slurm"
cores = 1
memory = "1GB"
walltime = "00:10:00"
maximum_jobs = 2
adaptive = false
death_timeout = 60
[output]
plots = false
"""
    p = tmp_path / "slurm.toml"
    p.write_text(text)
    return p


def stored(out: Path) -> list[tuple[int, tuple[float, ...], float]]:
    from mechcalib.storage import RunStore

    try:
        with RunStore(out / "store.sqlite", readonly=True) as st:
            runs = st.runs()
            if not runs:
                return []
            return [(r.idx, tuple(r.params.values()), r.loss) for r in st.evaluations(runs[-1].name)]
    except Exception:  # noqa: BLE001 - not created yet
        return []


def test_a_slurm_run_killed_with_sigkill_resumes_with_nothing_lost_and_no_job_left(tmp_path, scheduler, monkeypatch):
    import signal

    from typer.testing import CliRunner

    from mechcalib.cli import app

    code = tmp_path / "code"
    code.mkdir()
    (code / "mc_slow_model.py").write_text(SLOW_MODEL)
    monkeypatch.setenv("PYTHONPATH", f"{code}{os.pathsep}{os.environ['PYTHONPATH']}")  # the run and its jobs
    monkeypatch.syspath_prepend(str(code))  # the resume, in this process
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "mechcalib.cli", "-q", "run", str(slurm_config(tmp_path, 32)), "--out", str(out)]
    with open(tmp_path / "run.out", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        assert wait_for(lambda: len(stored(out)) >= 4 or proc.poll() is not None, timeout=90)
        first = sorted(read_jobs(out)["jobs"])
        subprocess.run(["scancel", first[0]], check=True)  # a job dies under the run: told, not hidden
        told = lambda: any(e["event"] == "lost_worker" for e in read_jobs(out)["events"])  # noqa: E731
        assert wait_for(lambda: (told() and len(stored(out)) >= 12) or proc.poll() is not None, timeout=60)
        live = alive_jobs(scheduler)
        before = stored(out)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, (tmp_path / "run.out").read_text()
    assert 12 <= len(before) < 32 and live == first[1:]  # killed mid-run, its other job still running
    assert "the cluster lost worker" in (out / "run.log").read_text() and first[0] in (out / "run.log").read_text()

    runner = CliRunner()
    r = runner.invoke(app, ["resume", str(out)])
    assert r.exit_code == 0, r.output + "".join(__import__("traceback").format_exception(*r.exc_info))
    jobs = read_jobs(out)["jobs"]
    assert jobs[live[0]]["state"] == "cancelled"  # the killed run's job, cancelled by resume
    after = stored(out)
    assert sorted(i for i, _, _ in after) == list(range(32))  # every evaluation once
    assert set(before) <= set(after)  # nothing stored before the kill was lost or simulated again
    assert wait_for(lambda: not alive_jobs(scheduler), timeout=15)  # and no job left behind
    shown = runner.invoke(app, ["show", str(out)]).output
    assert "cluster: 1 worker lost" in shown and "run.log" in shown, shown
