"""Evaluators: serial, process pool and dask; per-evaluation failures, timeouts and crashes."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

import mechcalib as mc
from engine_helpers import CountingProblem, bumpy, faulty_problem
from mechcalib import ConfigurationError
from mechcalib.execution import PoolEvaluator, SerialEvaluator, make_evaluator
from mechcalib.optimizers import RandomSearch, make_optimizer
from mechcalib.storage import RunStore

# Points of FaultyLine (a, b): ok, raises, NaN, ok, hangs, ok
X_FAULTS = np.array([[0.5, 0.5], [0.05, 0.3], [0.15, 0.3], [0.3, 0.7], [0.92, 0.1], [0.6, 0.4]])
EXPECT = ["ok", "failed", "failed", "ok", "timeout", "ok"]


def _check_faults(outs_by_index, problem):
    statuses = [outs_by_index[i].status for i in range(len(X_FAULTS))]
    assert statuses == EXPECT
    assert "RuntimeError: injected failure at a=0.050" in outs_by_index[1].error
    assert "must be finite" in outs_by_index[2].error  # the NaN response
    assert outs_by_index[4].error.startswith("timeout")
    ref = problem.evaluate(X_FAULTS[[0, 3, 5]])
    for k, i in enumerate([0, 3, 5]):
        assert outs_by_index[i].loss == ref.losses[k] and outs_by_index[i].error is None
    for i in (1, 2, 4):
        assert outs_by_index[i].loss == math.inf and math.isnan(outs_by_index[i].raw_loss)


@pytest.fixture(scope="module")
def pool():
    with PoolEvaluator(n_workers=2, timeout=1.0, start_timeout=120.0) as ev:
        yield ev


def test_serial_equals_problem_evaluate_whatever_the_chunking():
    prob = CountingProblem()
    X = np.random.default_rng(0).uniform(-1, 1, (7, 3))
    ref = prob.evaluate(X)
    for ev in (SerialEvaluator(), SerialEvaluator(chunk_size=3), SerialEvaluator(timeout=30.0)):
        res = ev.start(prob).evaluate(X)
        assert np.array_equal(res.losses, ref.losses) and res.status == ["ok"] * 7


def test_serial_failure_injection_raise_nan_hang():
    prob = faulty_problem(hang_s=4.0)
    ev = SerialEvaluator(timeout=1.0).start(prob)
    t0 = time.perf_counter()
    outs = {o.index: o for o in ev.submit(X_FAULTS)}
    assert time.perf_counter() - t0 < 3.5  # the hang was abandoned after its 1 s, not waited for
    _check_faults(outs, prob)
    assert all(o.worker == "serial" and o.finished >= o.started for o in outs.values())


def test_function_problem_nan_and_exception_are_per_set():
    def fn(x):
        if x[0] > 0.5:
            raise ValueError("too large")
        return math.nan if x[0] < -0.5 else float(x @ x)

    prob = mc.FunctionProblem.from_bounds(fn, [-1, -1], [1, 1], vectorized=False, failure_loss=1e6)
    res = SerialEvaluator().start(prob).evaluate(np.array([[0.0, 0.1], [0.9, 0.0], [-0.9, 0.0]]))
    assert res.status == ["ok", "failed", "failed"]
    assert res.losses.tolist() == [0.010000000000000002, 1e6, 1e6]  # the problem's penalty
    assert "ValueError: too large" in res.errors[1] and "not finite" in res.errors[2]


def test_pool_failure_injection_hang_and_crash(pool):
    prob = faulty_problem(hang_s=30.0, crash=True)
    pool.start(prob)
    pids_before = {w.proc.pid for w in pool._workers}
    X = np.vstack([X_FAULTS, [[0.97, 0.5], [0.4, 0.4]]])  # + a crash, + an ok set after it
    t0 = time.perf_counter()
    outs = list(pool.submit(X))
    got = [o.index for o in outs]
    assert sorted(got) == list(range(8))  # each position exactly once
    assert time.perf_counter() - t0 < 60
    by = {o.index: o for o in outs}
    _check_faults(by, prob)
    assert "worker process killed" in by[4].error
    assert by[6].status == "crashed" and "exit code 7" in by[6].error
    assert by[7].status == "ok"
    # the hung and the crashed workers were replaced, and the pool still works
    assert len({w.proc.pid for w in pool._workers} - pids_before) >= 2
    assert all(w.proc.is_alive() for w in pool._workers)
    ref = prob.evaluate(X[[0, 3]])
    assert np.array_equal(pool.evaluate(X[[0, 3]]).losses, ref.losses)


def test_pool_chunk_with_a_hung_set_is_retried_set_by_set(pool):
    prob = faulty_problem(hang_s=30.0)
    X = np.array([[0.5, 0.5], [0.92, 0.1], [0.3, 0.3], [0.6, 0.6]])
    pool.chunk_size = 2
    try:
        res = pool.start(prob).evaluate(X)
    finally:
        pool.chunk_size = 1
    assert res.status == ["ok", "timeout", "ok", "ok"]
    assert np.array_equal(res.losses[[0, 2, 3]], prob.evaluate(X[[0, 2, 3]]).losses)


def test_pool_results_equal_serial_and_abandoned_work_is_discarded(pool):
    prob = CountingProblem(delay=0.01)
    pool.start(prob)
    X = np.random.default_rng(1).uniform(-1, 1, (12, 3))
    it = pool.submit(X)
    next(it)  # take one outcome and abandon the rest while workers are busy
    del it
    X2 = np.random.default_rng(2).uniform(-1, 1, (9, 3))
    res = pool.evaluate(X2)
    assert np.array_equal(res.losses, bumpy(X2)) and res.status == ["ok"] * 9


def test_calibrate_with_pool_gives_the_serial_result(pool, tmp_path):
    prob = CountingProblem(delay=0.002)
    serial = mc.calibrate(prob, make_optimizer("pso", seed=3), max_evals=60)
    with RunStore(tmp_path / "runs.db") as store:
        par = mc.calibrate(prob, make_optimizer("pso", seed=3), max_evals=60, evaluator=pool, store=store, cache=False)
        workers = {r.worker for r in store.evaluations(par.run_name)}
    assert par.history.losses == serial.history.losses and par.best_loss == serial.best_loss
    assert np.array_equal(par.history.X, serial.history.X)
    assert all(w.startswith("pool-") for w in workers) and len(workers) == 2


@pytest.mark.parametrize("which", ["serial", "pool"])
def test_calibration_with_failures_completes_and_records_them(which, pool, tmp_path):
    prob = faulty_problem(hang_s=5.0)
    ev = SerialEvaluator(timeout=1.0) if which == "serial" else pool
    # a batch of fixed points repeated: each failure kind appears, the run goes on
    with RunStore(tmp_path / "f.db") as store:
        res = mc.calibrate(prob, _Fixed(X_FAULTS), Termination(max_iters=2), evaluator=ev, store=store, cache=False)
        fails = store.failures(res.run_name)
        info = store.run(res.run_name)
    assert res.n_evals == 12 and res.n_failed == 6 and res.stop_reason == "max_iters"
    assert [f.status for f in fails] == ["failed", "failed", "timeout"] * 2
    assert all(f.error for f in fails) and "injected failure" in fails[0].error
    assert info.status == "finished" and info.n_failed == 6
    assert res.best_params["a"] in (0.5, 0.3, 0.6)


Termination = mc.Termination


class _Fixed(RandomSearch):
    """Asks the same fixed unit-cube points every batch (the faulty line's bounds are [0, 1])."""

    def __init__(self, points=None, *, seed=None):
        super().__init__(batch_size=len(points) if points is not None else 1, seed=seed)
        self.points = points

    def _ask(self):
        return np.array(self.points, dtype=float)


def test_dask_local_cluster_failure_injection_and_result():
    pytest.importorskip("distributed", reason="dask.distributed is not installed (extra mechcalib[dask])")
    from mechcalib.execution import DaskEvaluator

    prob = faulty_problem(hang_s=4.0)
    with DaskEvaluator(n_workers=2, processes=False, timeout=1.0) as ev:
        ev.start(prob)
        assert ev.n_workers == 2
        outs = {o.index: o for o in ev.submit(X_FAULTS)}
        _check_faults(outs, prob)
        assert all(o.worker.startswith(("inproc://", "tcp://")) for o in outs.values())
        cprob = CountingProblem()
        a = mc.calibrate(cprob, make_optimizer("de", seed=5), max_evals=40, evaluator=ev)
    b = mc.calibrate(cprob, make_optimizer("de", seed=5), max_evals=40)
    assert a.history.losses == b.history.losses and a.best_loss == b.best_loss


def _slow_first(x):
    """Loss ``x0 + 10 x1``; sleeps longer the smaller ``x1`` (the ask position in the test below)."""
    time.sleep(0.1 * (7 - x[1]))
    return float(x[0] + 10 * x[1])


def test_dask_slices_finishing_out_of_order_map_to_their_positions():
    pytest.importorskip("distributed", reason="dask.distributed is not installed (extra mechcalib[dask])")
    from mechcalib.execution import DaskEvaluator

    prob = mc.FunctionProblem.from_bounds(_slow_first, [0, 0], [1, 8], vectorized=False)
    X = np.column_stack([np.random.default_rng(4).uniform(0, 1, 8), np.arange(8.0)])
    ref = np.array([_slow_first(x) for x in X])
    with DaskEvaluator(n_workers=2, processes=False, tasks_per_worker=2) as ev:
        ev.start(prob)
        # 2 slices per worker thread: 4 tasks of 2 sets, the first slices the slowest
        assert [list(r) for r in ev._plan(8)] == [[0, 1], [2, 3], [4, 5], [6, 7]]
        outs = list(ev.submit(X))
        order = [o.index for o in outs]
        assert sorted(order) == list(range(8)) and order != sorted(order)  # finished out of ask order
        for o in outs:
            assert o.status == "ok" and o.loss == ref[o.index]
        # each set of a slice was evaluated and timed alone
        assert all(0.1 * (7 - X[o.index, 1]) <= o.seconds < 0.1 * (7 - X[o.index, 1]) + 0.5 for o in outs)
        res = ev.evaluate(X)
        assert np.array_equal(res.losses, ref) and res.status == ["ok"] * 8


def test_dask_slice_sizes_follow_the_workers_and_the_time_of_a_set():
    pytest.importorskip("distributed", reason="dask.distributed is not installed (extra mechcalib[dask])")
    from mechcalib.execution.dask_backend import balanced_slices, slice_count

    assert slice_count(50, 2, 1, None, 0.5) == 2  # one slice per worker thread
    assert slice_count(50, 2, 2, None, 0.5) == 4
    assert slice_count(3, 8, 1, None, 0.5) == 3  # never more tasks than sets
    # slices of at most 2 sets of 0.25 s: 25 tasks, rounded up to 26 so that both workers get 13
    assert slice_count(50, 2, 1, 0.25, 0.5) == 26
    assert slice_count(50, 2, 1, 0.05, 0.5) == 6  # 10 sets per slice: 5 tasks, 6 for 2 workers
    assert slice_count(50, 2, 1, 30.0, 0.5) == 50  # minute-long sets go one per task
    sizes = [len(r) for r in balanced_slices(50, 4)]
    assert sizes == [13, 13, 12, 12] and [len(r) for r in balanced_slices(10, 4)] == [3, 3, 2, 2]
    assert [p for r in balanced_slices(50, 13) for p in r] == list(range(50))


def test_dask_lost_slice_is_retried_set_by_set_so_only_the_culprit_crashes():
    pytest.importorskip("distributed", reason="dask.distributed is not installed (extra mechcalib[dask])")
    import dask

    from mechcalib.execution import DaskEvaluator

    prob = faulty_problem(crash=True)
    X = np.array([[0.5, 0.5], [0.3, 0.7], [0.97, 0.5], [0.6, 0.4]])  # the third set kills its worker
    # a task is lost on its first worker death, and a worker holds one task at a time (no bystander
    # task queued on the worker that dies)
    opts = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(opts), DaskEvaluator(n_workers=2, processes=True, tasks_per_worker=1) as ev:
        ev.start(prob)
        assert [list(r) for r in ev._plan(4)] == [[0, 1], [2, 3]]
        res = ev.evaluate(X)
    assert res.status == ["ok", "ok", "crashed", "ok"]
    assert "KilledWorker" in res.errors[2]
    assert np.array_equal(res.losses[[0, 1, 3]], prob.evaluate(X[[0, 1, 3]]).losses)


def test_settings_are_validated():
    with pytest.raises(ConfigurationError, match="valid names are"):
        make_evaluator("cluster")
    with pytest.raises(ConfigurationError, match="timeout must be a positive"):
        SerialEvaluator(timeout=0)
    with pytest.raises(ConfigurationError, match="chunk_size must be an integer"):
        PoolEvaluator(chunk_size=0)
    with pytest.raises(ConfigurationError, match="n_workers must be an integer"):
        PoolEvaluator(n_workers=0)
    with pytest.raises(ConfigurationError, match="start\\(problem\\)"):
        SerialEvaluator().submit(np.zeros((1, 2)))
    with pytest.raises(ConfigurationError, match="cannot be pickled"):
        PoolEvaluator(n_workers=1).start(_Unpicklable())


class _Unpicklable:
    space = mc.ParameterSpace.from_bounds([0], [1])

    def __reduce__(self):
        raise TypeError("no pickling here")

    def evaluate(self, X):  # pragma: no cover - never reached
        raise AssertionError
