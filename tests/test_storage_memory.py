"""The store contract, run against both stores: the SQLite :class:`RunStore` and the in-memory
:class:`MemoryStore` answer every query of the abstract :class:`Store` alike, and a calibration gives the same
result with either."""

from __future__ import annotations

import json
import math
import pickle
import sqlite3

import numpy as np
import pytest

import mechcalib as mc
from engine_helpers import CountingProblem, faulty_problem, linear_problem
from mechcalib import ConfigurationError
from mechcalib.optimizers import LatinHypercube, make_optimizer
from mechcalib.storage import EvaluationRow, MemoryStore, RunSpec, RunStore, Store, encode_response
from mechcalib.storage.codec import cache_keys

SPACE = [
    {"name": "a", "lower": 0.0, "upper": 1.0, "scale": "linear", "unit": "", "fixed": None},
    {"name": "c", "lower": 0.0, "upper": 9.0, "scale": "linear", "unit": "", "fixed": 2.5},
    {"name": "b", "lower": -1.0, "upper": 1.0, "scale": "linear", "unit": "", "fixed": None},
]


def make_store(kind: str, tmp_path) -> Store:
    return RunStore(tmp_path / "s.sqlite") if kind == "sqlite" else MemoryStore()


@pytest.fixture(params=["sqlite", "memory"])
def store(request, tmp_path):
    s = make_store(request.param, tmp_path)
    yield s
    s.close()


def new_run(store: Store, name: str = "r", **kw) -> int:
    args = {
        "optimizer": "de",
        "settings": {"batch_size": np.int64(4), "pair": (1, 2)},
        "seed": 7,
        "termination": {"max_evals": 10},
        "evaluator": {"kind": "serial"},
        "space": SPACE,
        "fingerprint": "fp",
        "config": {"note": "t"},
        "versions": {"numpy": np.__version__},
    }
    return store.create_run(name, RunSpec(**(args | kw)))


def add(store: Store, rid: int, idx: int, loss: float, *, status: str = "ok", key: str | None = None, **kw) -> int:
    a, b = 0.1 * idx, -0.05 * idx
    row = EvaluationRow(
        idx=idx,
        batch=kw.pop("batch", idx // 2),
        pos=kw.pop("pos", idx % 2),
        key=key or f"k{idx}",
        params=json.dumps({"a": a, "b": b}),
        u=json.dumps([a, (b + 1) / 2]),
        loss=loss,
        raw_loss=kw.pop("raw_loss", loss if status == "ok" else math.nan),
        status=status,
        error=None if status == "ok" else "boom",
        started=kw.pop("started", 100.0 + idx),
        finished=kw.pop("finished", 100.5 + idx),
        worker="serial",
        **kw,
    )
    return store.add_evaluation(rid, row)


def test_a_run_is_recorded_and_read_back(store):
    rid = new_run(store)
    assert store.has_run("r") and not store.has_run("other")
    info = store.run("r")
    assert store.run(rid) == info and [i.name for i in store.runs()] == ["r"]
    assert (info.id, info.status, info.optimizer, info.seed, info.fingerprint) == (rid, "running", "de", 7, "fp")
    # values come back as JSON gives them: numpy scalars as numbers, tuples as lists
    assert info.settings == {"batch_size": 4, "pair": [1, 2]} and info.termination == {"max_evals": 10}
    assert info.space == SPACE and info.free_names == ["a", "b"] and store.config("r") == {"note": "t"}
    assert (info.n_evals, info.n_failed, info.best_loss, info.compacted, info.n_dropped) == (0, 0, math.inf, False, 0)
    with pytest.raises(ConfigurationError, match="already exists"):
        new_run(store)
    with pytest.raises(ConfigurationError, match=r"no run 'x' in .*runs are \['r'\]"):
        store.run("x")
    store.finish_run(rid, status="finished", n_batches=3, stop_reason="max_evals")
    info = store.run("r")
    assert (info.status, info.stop_reason, info.n_batches) == ("finished", "max_evals", 3)
    store.reopen_run(rid, termination={"max_evals": 20}, evaluator={"kind": "pool"}, config=None, versions={})
    info = store.run("r")
    assert (info.status, info.termination, info.evaluator, info.config) == (
        "running",
        {"max_evals": 20},
        {"kind": "pool"},
        {"note": "t"},
    )
    store.finish_run(rid, status="failed", n_batches=3, error="E")
    assert [(i.name, i.status, i.error) for i in store.runs()] == [("r", "failed", "E")]


def test_evaluations_are_kept_in_run_order_with_exact_values(store):
    rid = new_run(store)
    blob = encode_response({"exp": {"y": np.arange(3.0)}})
    ids = [
        add(store, rid, 2, 0.5, response=blob),
        add(store, rid, 0, 2.0),
        add(store, rid, 1, math.inf, status="failed"),
    ]
    assert ids == sorted(ids)  # row ids grow
    recs = store.evaluations("r")
    assert [r.idx for r in recs] == [0, 1, 2] and [r.id for r in recs] == [ids[1], ids[2], ids[0]]
    assert recs[2].params == {"a": 0.1 * 2, "b": -0.05 * 2} and np.array_equal(recs[2].x, [0.2, -0.1])
    assert np.array_equal(recs[2].u, [0.2, 0.45]) and recs[2].response is None
    assert math.isnan(recs[1].raw_loss) and recs[1].loss == math.inf and recs[1].error == "boom"
    assert recs[0].seconds == 0.5 and recs[0].source == "live" and recs[0].cached_from is None
    with_resp = store.evaluations(rid, responses=True)
    assert np.array_equal(with_resp[2].response["exp"]["y"], np.arange(3.0)) and with_resp[0].response is None
    assert [r.idx for r in store.evaluations("r", status="ok")] == [0, 2]
    assert [r.idx for r in store.evaluations("r", status=["failed", "timeout"])] == [1]
    assert [r.idx for r in store.failures("r")] == [1]
    assert {i: r.id for i, r in store.stored_evaluations(rid).items()} == {0: ids[1], 1: ids[2], 2: ids[0]}
    info = store.run("r")
    assert (info.n_evals, info.n_failed, info.best_loss) == (3, 1, 0.5)
    with pytest.raises((sqlite3.IntegrityError, ConfigurationError)):  # one row per index
        add(store, rid, 2, 0.1)


def test_checkpoints_newest_first_and_the_batch_count(store):
    rid = new_run(store)
    for b in (1, 2):
        store.save_checkpoint(rid, b, 2 * b, pickle.dumps({"b": b}))
    store.save_checkpoint(rid, 2, 4, pickle.dumps({"b": "again"}))  # the same batch replaces
    cps = [(b, n, pickle.loads(s)) for b, n, s in store.iter_checkpoints(rid)]
    assert cps == [(2, 4, {"b": "again"}), (1, 2, {"b": 1})]
    assert store.run(rid).n_batches == 2
    store.touch(rid, 5)
    assert store.run(rid).n_batches == 5
    assert list(store.iter_checkpoints(new_run(store, "other"))) == []


def test_cache_lookup_by_key(store):
    r1, r2 = new_run(store, "one"), new_run(store, "two")
    add(store, r1, 0, 9.0, key="t", status="timeout")
    first = add(store, r1, 1, math.nan, key="k", raw_loss=math.nan)
    add(store, r2, 0, 1.0, key="k")
    failed = add(store, r2, 1, math.inf, key="f", status="failed")
    # the first row of the key with a reusable status, any run; a NaN loss comes back as None
    assert store.lookup("k")[:5] == (first, None, None, "ok", None)
    assert store.lookup("f") == (failed, math.inf, None, "failed", "boom", None)
    assert store.lookup("t") is None and store.lookup("t", ("timeout",))[0] == 1
    assert store.lookup("f", ("ok",)) is None and store.lookup("missing") is None


def test_best_trace_and_timing(store):
    rid = new_run(store)
    assert store.best(rid) is None and store.timing(rid)["n_live"] == 0
    idx, best = store.trace(rid)
    assert idx.size == 0 and best.size == 0
    blob = encode_response([1.0, 2.0])
    losses = [5.0, math.inf, 3.0, 4.0, 1.0, 1.0]
    for i, f in enumerate(losses):
        add(
            store,
            rid,
            i,
            f,
            status="failed" if i == 1 else "ok",
            response=blob if i == 4 else None,
            started=10.0 * i,
            finished=10.0 * i + 2.0,
            source="cache" if i == 3 else "live",
        )
    b = store.best("r", responses=True)
    assert (b.idx, b.loss) == (4, 1.0) and np.array_equal(b.response, [1.0, 2.0])  # earliest on ties
    idx, best = store.trace("r")
    assert idx.tolist() == list(range(6)) and best.tolist() == [5.0, 5.0, 3.0, 3.0, 1.0, 1.0]
    t = store.timing("r")
    assert (t["seconds"], t["first_started"], t["last_finished"], t["n_live"]) == (12.0, 0.0, 52.0, 5)
    assert t["active_seconds"] == 52.0  # steps of 10 s, under the pause threshold


def _result(res: mc.Result) -> dict:
    h = res.history
    return {
        "best": (res.best_x.tolist(), res.best_loss, res.best_params, res.alternatives),
        "counts": (res.n_evals, res.n_batches, res.n_failed, res.stop_reason, res.optimizer, res.settings),
        "store": (res.run_name, res.n_simulated, res.n_cached, res.n_replayed),
        "history": (
            np.array(h.U).tolist(),
            np.array(h.X).tolist(),
            h.losses,
            h.status,
            h.errors,
            h.batch,
            h.told,
            h.best_per_batch,
            h.evals_per_batch,
        ),
    }


def _stored(store: Store, run: str) -> list:
    """A run's stored rows without the wall-clock columns."""
    return [
        (
            r.idx,
            r.batch,
            r.pos,
            r.key,
            r.params,
            r.u.tolist(),
            r.loss,
            r.raw_loss,
            r.status,
            r.error,
            r.worker,
            r.source,
            r.cached_from,
        )
        for r in store.evaluations(run)
    ]


def _calibrations(store: Store) -> tuple[list[dict], list, dict]:
    """Two runs of one problem (the second served by the cache), a run with failures, and a resumed run."""
    prob = CountingProblem()
    out = [
        _result(mc.calibrate(prob, make_optimizer("de", seed=2), max_evals=40, store=store, run_name="a")),
        _result(mc.calibrate(prob, make_optimizer("de", seed=2), max_evals=40, store=store, run_name="b")),
        _result(
            mc.calibrate(
                faulty_problem(), LatinHypercube(batch_size=6, seed=3), max_evals=18, store=store, run_name="faulty"
            )
        ),
    ]
    mc.calibrate(prob, make_optimizer("pso", seed=5), max_evals=24, store=store, run_name="resumed", cache=False)
    out.append(
        _result(
            mc.calibrate(
                prob, make_optimizer("pso", seed=5), max_evals=48, store=store, run_name="resumed", cache=False
            )
        )
    )
    lin = linear_problem(keep_responses=True)
    mc.calibrate(lin, LatinHypercube(batch_size=5, seed=1), max_evals=10, store=store, run_name="lin")
    rows = [_stored(store, n) for n in ("a", "b", "faulty", "resumed")]
    return out, rows, store.dataset("lin", include_failed=True)


def test_calibrate_gives_the_same_result_with_either_store(tmp_path):
    with RunStore(tmp_path / "s.sqlite") as disk:
        on_disk, disk_rows, disk_data = _calibrations(disk)
        disk_runs = [(i.name, i.status, i.n_evals, i.n_failed, i.best_loss, i.seed) for i in disk.runs()]
    mem = MemoryStore()
    in_memory, mem_rows, mem_data = _calibrations(mem)
    assert in_memory[1]["store"][2] == 40 and in_memory[3]["store"][3] == 24  # cache hits, replay
    assert in_memory[2]["counts"][2] > 0  # failures recorded
    np.testing.assert_equal(in_memory, on_disk)
    np.testing.assert_equal(mem_rows, disk_rows)
    np.testing.assert_equal(mem_data, disk_data)
    assert [(i.name, i.status, i.n_evals, i.n_failed, i.best_loss, i.seed) for i in mem.runs()] == disk_runs


def test_memory_store_refuses_a_second_run_of_a_name_and_keys_match(tmp_path):
    mem = MemoryStore()
    prob = CountingProblem()
    mc.calibrate(prob, LatinHypercube(batch_size=4, seed=1), max_evals=8, store=mem, run_name="x")
    with pytest.raises(ConfigurationError, match="already exists in :memory:"):
        mc.calibrate(prob, LatinHypercube(batch_size=4, seed=1), max_evals=8, store=mem, run_name="x", resume=False)
    recs = mem.evaluations("x")
    assert [r.key for r in recs] == cache_keys(mem.run("x").fingerprint, np.array([r.x for r in recs]))
