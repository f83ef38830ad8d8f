"""Asynchronous evaluation (calibrate(..., asynchronous=...)): the steady-state variants of DE and CMA-ES and
auto's design submitted as slots free converge; a run killed with SIGKILL resumes into exactly the told order
and result of the uninterrupted run (on a simulated clock, where durations are deterministic), simulating
nothing stored again; the synchronous path is untouched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mechcalib.calibrate import minimize
from mechcalib.errors import ConfigurationError
from mechcalib.execution.slots import ClockSlots
from mechcalib.optimizers import CMAES, DE, Auto
from mechcalib.storage import RunStore
from mechcalib.testing.functions import rosenbrock, sphere

LO, HI = [-2.0] * 4, [2.0] * 4


def duration(x: np.ndarray) -> float:
    """A deterministic lognormal-like duration (median 1, spread factor about 2) of a parameter set."""
    z = np.sin(37.0 * float(np.dot(x, [1.0, 1.7, 2.3, 3.1][: len(x)])))
    return float(np.exp(np.log(2.0) * 1.6 * z))


@pytest.mark.parametrize("make", [lambda: DE(seed=2), lambda: CMAES(seed=2)], ids=["de", "cmaes"])
def test_async_variants_converge_and_keep_slots_busy(make):
    slots = ClockSlots(8, duration)
    r = minimize(sphere, LO, HI, make(), max_evals=2000, asynchronous=slots)
    assert r.n_evals == 2000 and slots.evaluated == 2000
    assert r.best_loss < 1e-4
    assert slots.busy / (8 * slots.now) > 0.95  # a slot is refilled the moment it frees


def test_async_de_tells_each_trial_against_its_target_at_once():
    opt = DE(seed=0, pop_size=5).setup(2)
    U = opt.ask_async(5)  # the initial population
    for t, u in enumerate(U):
        opt.tell_async(t, u, float(t))
    (trial,) = opt.ask_async(1)  # ticket 5: a trial of target 0 (loss 0)
    opt.tell_async(5, trial, -1.0)
    assert np.array_equal(opt._X[0], trial) and opt._f[0] == -1.0
    (trial2,) = opt.ask_async(1)  # ticket 6: target 1 (loss 1) is kept against a worse trial
    opt.tell_async(6, trial2, 5.0)
    assert np.array_equal(opt._X[1], U[1]) and opt._f[1] == 1.0


def test_async_cmaes_updates_once_a_population_is_told():
    opt = CMAES(seed=0, popsize=6).setup(3)
    U = opt.ask_async(9)
    for t in range(5):
        opt.tell_async(t, U[t], float(t))
    assert opt._es.countiter == 0
    opt.tell_async(5, U[5], 5.0)
    assert opt._es.countiter == 1  # six told: one update; points 6-8 go towards the next one


def test_async_cmaes_with_more_in_flight_than_lambda_updates_twice_between_asks():
    opt = CMAES(seed=0, popsize=4).setup(3)
    U = opt.ask_async(10)
    for t in range(8):  # two populations told with no ask between them (pycma alone refuses the second tell)
        opt.tell_async(t, U[t], float(t))
    assert opt._es.countiter == 2 and opt.n_tells == 2
    slots = ClockSlots(12, duration)  # 12 in flight, lambda 8: a whole run
    r = minimize(sphere, LO, HI, CMAES(seed=1, popsize=8), max_evals=600, asynchronous=slots)
    assert r.n_evals == 600 and r.best_loss < 1e-3


def test_async_cmaes_keeps_its_default_population_on_many_slots():
    opt = CMAES(seed=3)  # pycma's default population in 4-D: 8, with 32 simulations in flight
    slots = ClockSlots(32, duration)
    r = minimize(sphere, LO, HI, opt, max_evals=2000, asynchronous=slots)
    first = opt._runs[0]  # the run before the first IPOP restart: an update per 8 told, whatever the slots
    assert first["popsize"] == 8 and first["evals"] % 8 == 0 and first["evals"] >= 80
    assert r.best_loss < 1e-4 and slots.busy / (32 * slots.now) > 0.9


def test_auto_design_is_submitted_as_slots_free():
    slots = ClockSlots(4, duration)
    r = minimize(sphere, LO, HI, Auto(seed=1), max_evals=120, asynchronous=slots)
    sync = minimize(sphere, LO, HI, Auto(seed=1), max_evals=120)
    # each batch is handed out as slots free and told whole: the same search as the synchronous run
    assert r.best_loss == sync.best_loss and r.choices == sync.choices
    assert sorted(map(tuple, r.history.X)) == sorted(map(tuple, sync.history.X))
    assert slots.busy / (4 * slots.now) > 0.7


def test_the_process_pool_refuses_asynchronous_with_the_fix():
    from mechcalib.execution import PoolEvaluator

    with PoolEvaluator(n_workers=1) as ev, pytest.raises(ConfigurationError, match="dask"):
        minimize(sphere, LO, HI, DE(seed=1), max_evals=10, evaluator=ev, asynchronous=True)


def test_threaded_slots_run_every_set_once():
    r = minimize(sphere, LO, HI, DE(seed=1), max_evals=60, asynchronous=3)
    assert r.n_evals == 60 and len({tuple(x) for x in r.history.X}) == 60


_COUNT = [0]


def killing_rosenbrock(X: np.ndarray) -> np.ndarray:
    """Rosenbrock; the process kills itself with SIGKILL past ``MECHCALIB_TEST_KILL_AFTER`` evaluations."""
    _COUNT[0] += len(X)
    limit = os.environ.get("MECHCALIB_TEST_KILL_AFTER")
    if limit is not None and _COUNT[0] > int(limit):
        os.kill(os.getpid(), signal.SIGKILL)
    return rosenbrock(X)


_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from test_asynchronous import LO, HI, duration, killing_rosenbrock
from mechcalib.calibrate import minimize
from mechcalib.execution.slots import ClockSlots
from mechcalib.optimizers import {opt}
minimize(killing_rosenbrock, LO, HI, {opt}(seed=5), max_evals=240, asynchronous=ClockSlots(6, duration),
         store={store!r}, run_name="a")
"""


def _told_order(path: Path) -> list[int]:
    with RunStore(path) as st:
        recs = st.evaluations("a")
    return [r.idx for r in sorted(recs, key=lambda r: r.batch)]


@pytest.mark.parametrize("opt", ["DE", "CMAES"])
def test_sigkill_and_resume_reproduce_the_uninterrupted_run(tmp_path, opt):
    cls = {"DE": DE, "CMAES": CMAES}[opt]
    full = minimize(
        killing_rosenbrock, LO, HI, cls(seed=5), max_evals=240, asynchronous=ClockSlots(6, duration),
        store=tmp_path / "full.db", run_name="a",
    )  # fmt: skip
    killed = tmp_path / "killed.db"
    code = _SCRIPT.format(tests=str(Path(__file__).parent), opt=opt, store=str(killed))
    env = {
        **os.environ,
        "MECHCALIB_TEST_KILL_AFTER": "100",
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"), *sys.path]),
    }
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, timeout=120)
    assert p.returncode == -signal.SIGKILL, p.stderr.decode()[-2000:]
    before = _told_order(killed)
    assert len(before) == 100
    slots = ClockSlots(6, duration)
    resumed = minimize(killing_rosenbrock, LO, HI, cls(), max_evals=240, asynchronous=slots, store=killed, run_name="a")
    assert resumed.n_replayed == 100 and resumed.n_simulated == 140 and slots.evaluated == 140
    assert _told_order(killed) == _told_order(tmp_path / "full.db")  # the same told order, replayed then continued
    assert resumed.best_loss == full.best_loss
    assert np.array_equal(np.array(resumed.history.X), np.array(full.history.X))
    assert resumed.history.losses == full.history.losses


def test_resume_with_another_optimiser_setting_names_the_mismatch(tmp_path):
    minimize(sphere, LO, HI, DE(seed=1), max_evals=30, asynchronous=ClockSlots(4, duration), store=tmp_path / "s.db",
             run_name="a")  # fmt: skip
    with RunStore(tmp_path / "s.db") as st:
        st.finish_run(st.run("a").id, status="interrupted", n_batches=30)
    with pytest.raises(ConfigurationError):
        minimize(sphere, LO, HI, DE(seed=1, pop_size=6), max_evals=40, asynchronous=ClockSlots(4, duration),
                 store=tmp_path / "s.db", run_name="a")  # fmt: skip


def test_the_config_key_runs_a_folder_asynchronously(tmp_path):
    from typer.testing import CliRunner

    from mechcalib.cli import app

    cfg = tmp_path / "run.toml"
    cfg.write_text(
        'seed = 1\n[model]\nname = "linear"\n[[experiments]]\nkind = "synthetic"\n'
        '[optimizer]\nname = "de"\nasynchronous = true\nsettings = { pop_size = 6 }\n[budget]\nmax_evals = 30\n'
    )
    r = CliRunner().invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "--quiet"])
    assert r.exit_code == 0, r.output
    store = next((tmp_path / "out").rglob("*.sqlite"), None) or next((tmp_path / "out").rglob("*.db"))
    with RunStore(store) as st:
        (info,) = st.runs()
        recs = st.evaluations(info.name)
        assert info.evaluator["asynchronous"] == 1
    assert sorted(r.batch for r in recs) == list(range(30))  # each row's batch is its rank in the told order
    bad = tmp_path / "bad.toml"
    bad.write_text(cfg.read_text().replace("asynchronous = true", 'asynchronous = "yes"'))
    r = CliRunner().invoke(app, ["run", str(bad), "--out", str(tmp_path / "out2"), "--quiet"])
    assert r.exit_code != 0 and "asynchronous" in r.output


def test_dask_runs_one_task_per_set_in_flight():
    pytest.importorskip("distributed")
    from mechcalib.execution.dask_backend import DaskEvaluator

    with DaskEvaluator(n_workers=3, processes=False, chunk_size=1) as ev:
        r = minimize(sphere, LO, HI, DE(seed=1, pop_size=6), max_evals=24, evaluator=ev, asynchronous=True)
    assert r.n_evals == 24 and r.n_simulated == 24
    assert len({tuple(x) for x in r.history.X}) == 24  # every asked point evaluated once
