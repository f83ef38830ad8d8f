"""Resume: a run interrupted at any moment (SIGKILL included) continues without simulating a stored
evaluation again and ends with exactly the result of an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest

import mechcalib as mc
from engine_helpers import CountingProblem, count_lines, kill_after, python_command
from mechcalib import ConfigurationError, Termination
from mechcalib.execution import PoolEvaluator
from mechcalib.optimizers import OPTIMIZERS, make_optimizer
from mechcalib.storage import RunStore
from mechcalib.storage.session import ResumeError


def _same_run(a, b):
    assert a.history.losses == b.history.losses
    assert np.array_equal(a.history.X, b.history.X) and np.array_equal(a.history.U, b.history.U)
    assert a.history.batch == b.history.batch and a.history.told == b.history.told
    assert a.history.best_per_batch == b.history.best_per_batch
    assert a.best_loss == b.best_loss and np.array_equal(a.best_x, b.best_x)
    assert (a.n_evals, a.n_batches, a.stop_reason) == (b.n_evals, b.n_batches, b.stop_reason)


class _Stop(KeyboardInterrupt):
    pass


def _interrupt_after(k):
    """An on_evaluation hook that interrupts the run after its ``k``-th new (not replayed) evaluation."""
    seen = []

    def hook(idx, batch, outcome):
        if outcome.source != "replay":
            seen.append(idx)
            if len(seen) == k:
                raise _Stop

    return hook


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_interrupted_run_resumes_to_the_uninterrupted_result(name, tmp_path):
    total, k = 70, 23  # 23 is mid-batch for every registered optimiser's default batch size
    counter = tmp_path / "sims.txt"
    prob = CountingProblem(counter=str(counter))
    ref = mc.calibrate(CountingProblem(), make_optimizer(name, seed=11), max_evals=total)
    with RunStore(tmp_path / "r.db") as store:
        with pytest.raises(_Stop):
            mc.calibrate(
                prob,
                make_optimizer(name, seed=11),
                max_evals=total,
                store=store,
                run_name="r",
                cache=False,
                on_evaluation=_interrupt_after(k),
            )
        assert store.run("r").status == "interrupted" and store.n_evaluations("r") == k
        n0 = count_lines(counter)
        # the seed comes from the store; cache=False so that every missing evaluation is simulated
        res = mc.calibrate(prob, make_optimizer(name), max_evals=total, store=store, run_name="r", cache=False)
        _same_run(res, ref)
        assert count_lines(counter) - n0 == total - k == res.n_simulated
        assert res.n_replayed == k
        # resuming the finished run again replays it whole, from the checkpoint or from the start
        for mode in (True, "replay"):
            again = mc.calibrate(prob, make_optimizer(name), max_evals=total, store=store, run_name="r", resume=mode)
            _same_run(again, ref)
            assert again.n_simulated == 0 and again.n_replayed == total
        assert store.run("r").status == "finished" and store.n_evaluations("r") == total


def test_sigkilled_run_resumes_exactly_while_two_readers_watch(tmp_path):
    db, counter = str(tmp_path / "kill.db"), str(tmp_path / "sims.txt")
    total, kill_at, delay = 300, 50, 0.02
    ready = [str(tmp_path / f"reader{i}.ready") for i in range(2)]
    child = subprocess.Popen(python_command(f"h.child_run({db!r}, 'k', {counter!r}, {total}, {delay})"))
    readers = [
        subprocess.Popen(python_command(f"h.reader_main({db!r}, 'k', {f!r}, 90.0)"), stdout=subprocess.PIPE, text=True)
        for f in ready
    ]
    try:
        # poll from a third reader until enough evaluations are stored and both readers have read a few
        # evaluations before the kill, then kill the writer
        deadline = time.monotonic() + 90
        n, n_ready = 0, None
        while time.monotonic() < deadline and child.poll() is None:
            if os.path.exists(db):
                try:
                    with RunStore(db, readonly=True) as ro:
                        n = ro.n_evaluations("k") if ro.has_run("k") else 0
                except Exception:
                    n = 0
                if n_ready is None and all(os.path.exists(f) for f in ready):
                    n_ready = n
                if n_ready is not None and n >= max(kill_at, n_ready + 3):
                    break
            time.sleep(0.01)
        assert child.poll() is None, "the writer ended before it could be killed"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        reports = [json.loads(r.communicate(timeout=90)[0]) for r in readers]
    finally:
        for p in (child, *readers):
            if p.poll() is None:
                p.kill()
                p.wait(10)

    with RunStore(db) as store:
        info = store.run("k")
        stored = store.n_evaluations("k")
        assert info.status == "interrupted" and kill_at <= stored < total
        for rep in reports:  # both readers read while the run was being written, without error
            seen = rep["seen"]
            assert rep["errors"] == [] and seen == sorted(seen) and min(seen) < stored and max(seen) <= stored
        sims_at_kill = count_lines(counter)
        assert sims_at_kill >= stored
        res = mc.calibrate(  # the same problem without the delay (its fingerprint() leaves the delay out)
            CountingProblem(counter=counter),
            make_optimizer("pso"),
            max_evals=total,
            store=store,
            run_name="k",
            cache=False,
        )
        assert store.run("k").status == "finished" and store.n_evaluations("k") == total
    ref = mc.calibrate(CountingProblem(), make_optimizer("pso", seed=7), max_evals=total)
    _same_run(res, ref)
    # exactly the evaluations missing from the store were simulated after the kill
    assert count_lines(counter) - sims_at_kill == total - stored == res.n_simulated
    assert res.n_replayed == stored


def test_sigkilled_cmaes_run_resumes_exactly_across_restarts(tmp_path):
    """kill -9 of a CMA-ES run between its first and second IPOP restart (measured for this seed and ``tolx``:
    restarts after 91 and 385 evaluations), then resume: the result of an uninterrupted run, and only the
    evaluations missing from the store are simulated."""
    db, counter = str(tmp_path / "cma.db"), str(tmp_path / "sims.txt")
    total, kill_at, delay = 420, 150, 0.01
    settings = {"seed": 7, "tolx": 3e-2}
    child = subprocess.Popen(
        python_command(
            "from mechcalib.optimizers import make_optimizer; from mechcalib.storage import RunStore; "
            f"h.mc.calibrate(h.CountingProblem(counter={counter!r}, delay={delay}), make_optimizer('cmaes', "
            f"**{settings!r}), max_evals={total}, store=RunStore({db!r}), run_name='c', cache=False)"
        )
    )
    kill_after(child, db, "c", kill_at, timeout_s=90)

    ref_opt = make_optimizer("cmaes", **settings)
    ref = mc.calibrate(CountingProblem(), ref_opt, max_evals=total)
    assert [r["evals"] for r in ref_opt.runs[:2]] == [91, 294]  # the kill falls between the two restarts
    with RunStore(db) as store:
        stored = store.n_evaluations("c")
        assert store.run("c").status == "interrupted" and kill_at <= stored < 385
        sims_at_kill = count_lines(counter)
        res = mc.calibrate(
            CountingProblem(counter=counter),
            make_optimizer("cmaes", tolx=3e-2),  # the seed comes from the store
            max_evals=total,
            store=store,
            run_name="c",
            cache=False,
        )
        assert store.run("c").status == "finished" and store.n_evaluations("c") == total
    _same_run(res, ref)
    assert count_lines(counter) - sims_at_kill == total - stored == res.n_simulated
    assert res.n_replayed == stored


def test_pool_run_interrupted_mid_batch_resumes_on_the_same_pool(tmp_path):
    prob = CountingProblem(delay=0.005)
    ref = mc.calibrate(prob, make_optimizer("de", seed=9), max_evals=50)
    with PoolEvaluator(n_workers=2) as pool, RunStore(tmp_path / "p.db") as store:
        with pytest.raises(_Stop):
            mc.calibrate(
                prob,
                make_optimizer("de", seed=9),
                max_evals=50,
                evaluator=pool,
                store=store,
                run_name="p",
                on_evaluation=_interrupt_after(17),
            )
        res = mc.calibrate(prob, make_optimizer("de"), max_evals=50, evaluator=pool, store=store, run_name="p")
    _same_run(res, ref)
    assert res.n_replayed == 17 and res.n_simulated + res.n_cached == 33


def test_budget_can_be_extended_and_stopping_rules_hold_after_restore(tmp_path):
    prob = CountingProblem()
    with RunStore(tmp_path / "e.db") as store:
        short = mc.calibrate(prob, make_optimizer("pso", seed=1), max_evals=45, store=store, run_name="e")
        assert short.history.told[-1] is False  # the last batch was cut by the budget
        longer = mc.calibrate(prob, make_optimizer("pso"), max_evals=90, store=store, run_name="e")
        _same_run(longer, mc.calibrate(prob, make_optimizer("pso", seed=1), max_evals=90))
        assert longer.n_simulated + longer.n_cached == 45
        # a run that stopped at its target stays stopped when restored from a checkpoint
        t = Termination(target=0.2, max_evals=500)
        first = mc.calibrate(prob, make_optimizer("pso", seed=1), t, store=store, run_name="t")
        again = mc.calibrate(prob, make_optimizer("pso"), t, store=store, run_name="t")
        assert first.stop_reason == again.stop_reason == "target" and again.n_simulated == 0
        _same_run(again, first)


def test_unreadable_checkpoint_falls_back_to_replay(tmp_path):
    prob = CountingProblem()
    with RunStore(tmp_path / "c.db") as store:
        with pytest.raises(_Stop):
            mc.calibrate(
                prob,
                make_optimizer("ga", seed=2),
                max_evals=60,
                store=store,
                run_name="c",
                on_evaluation=_interrupt_after(35),
            )
        assert len(store.checkpoints("c")) >= 1
        store._con.execute("UPDATE checkpoints SET state = x'00'")
        res = mc.calibrate(prob, make_optimizer("ga"), max_evals=60, store=store, run_name="c")
    _same_run(res, mc.calibrate(prob, make_optimizer("ga", seed=2), max_evals=60))
    assert res.n_replayed == 35


def test_unseeded_run_gets_a_recorded_seed_and_resumes_exactly(tmp_path):
    prob = CountingProblem()
    with RunStore(tmp_path / "u.db") as store:
        with pytest.raises(_Stop):
            mc.calibrate(
                prob, make_optimizer("tsa"), max_evals=50, store=store, run_name="u", on_evaluation=_interrupt_after(12)
            )
        seed = store.run("u").seed
        assert isinstance(seed, int)
        res = mc.calibrate(prob, make_optimizer("tsa"), max_evals=50, store=store, run_name="u")
    _same_run(res, mc.calibrate(prob, make_optimizer("tsa", seed=seed), max_evals=50))


def test_generator_seed_is_recorded(tmp_path):
    prob = CountingProblem()
    with RunStore(tmp_path / "g.db") as store:
        with pytest.raises(_Stop):
            mc.calibrate(
                prob,
                make_optimizer("random", seed=np.random.default_rng(5)),
                max_evals=40,
                store=store,
                run_name="g",
                on_evaluation=_interrupt_after(15),
            )
        res = mc.calibrate(prob, make_optimizer("random"), max_evals=40, store=store, run_name="g")
    _same_run(res, mc.calibrate(prob, make_optimizer("random", seed=np.random.default_rng(5)), max_evals=40))


def test_resume_refuses_a_different_run(tmp_path):
    prob = CountingProblem()
    with RunStore(tmp_path / "x.db") as store:
        mc.calibrate(prob, make_optimizer("pso", seed=1), max_evals=20, store=store, run_name="x")
        with pytest.raises(ConfigurationError, match="already exists.*resume=True"):
            mc.calibrate(prob, make_optimizer("pso", seed=1), max_evals=20, store=store, run_name="x", resume=False)
        with pytest.raises(ResumeError, match="used optimizer 'pso', not 'de'"):
            mc.calibrate(prob, make_optimizer("de"), max_evals=20, store=store, run_name="x")
        with pytest.raises(ResumeError, match="swarm_size: stored 10, now 12"):
            mc.calibrate(prob, make_optimizer("pso", swarm_size=12), max_evals=20, store=store, run_name="x")
        with pytest.raises(ResumeError, match="seed 1, the optimiser has seed 2"):
            mc.calibrate(prob, make_optimizer("pso", seed=2), max_evals=20, store=store, run_name="x")
        with pytest.raises(ResumeError, match="another problem"):
            mc.calibrate(
                CountingProblem(failure_loss=5.0), make_optimizer("pso"), max_evals=20, store=store, run_name="x"
            )
        with pytest.raises(ResumeError, match="another parameter space"):
            mc.calibrate(CountingProblem(dim=2), make_optimizer("pso"), max_evals=20, store=store, run_name="x")
        with pytest.raises(ConfigurationError, match="resume must be"):
            mc.calibrate(prob, make_optimizer("pso"), max_evals=20, store=store, run_name="x", resume="yes")
        # a stored run whose points the optimiser no longer asks is detected, not silently mixed
        store._con.execute('UPDATE evaluations SET params = \'{"x0": 0.0, "x1": 0.0, "x2": 0.0}\' WHERE idx = 3')
        with pytest.raises(ResumeError, match="evaluation 3 was stored"):
            mc.calibrate(prob, make_optimizer("pso"), max_evals=20, store=store, run_name="x", resume="replay")
