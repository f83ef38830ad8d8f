"""The SQLite run store: records, cache, queries, exports, codecs."""

from __future__ import annotations

import csv
import math
import sqlite3

import numpy as np
import pytest

import mechcalib as mc
from engine_helpers import CountingProblem, bumpy, count_lines, linear_problem
from mechcalib import ConfigurationError, Termination
from mechcalib.core.data import Curve
from mechcalib.optimizers import LatinHypercube, RandomSearch, make_optimizer
from mechcalib.storage import EvaluationRow, RunStore, decode_response, encode_response, problem_fingerprint


def test_every_evaluation_is_recorded_exactly(tmp_path):
    prob = linear_problem(keep_responses=True)
    with RunStore(tmp_path / "runs.db") as store:
        res = mc.calibrate(
            prob, LatinHypercube(batch_size=8, seed=4), max_evals=20, store=store, run_name="lin", config={"note": "t"}
        )
        recs = store.evaluations("lin", responses=True)
        info = store.run("lin")
        mode = store._q("PRAGMA journal_mode")[0][0]
    assert mode == "wal"
    assert res.run_name == "lin" and res.n_simulated == 20
    assert [r.idx for r in recs] == list(range(20))
    assert [r.batch for r in recs] == [0] * 8 + [1] * 8 + [2] * 4
    assert [r.pos for r in recs] == list(range(8)) * 2 + list(range(4))
    assert np.array_equal([r.x for r in recs], res.history.X)  # exact floats through JSON
    assert np.array_equal([r.u for r in recs], res.history.U)
    assert [r.loss for r in recs] == res.history.losses
    assert all(r.status == "ok" and r.worker == "serial" and r.source == "live" for r in recs)
    assert all(r.finished >= r.started > 0 for r in recs)
    # the stored response is the simulated curve
    r0 = recs[0]
    curve = r0.response["synthetic"]["y"]
    assert isinstance(curve, Curve) and np.allclose(curve.y, r0.params["a"] * np.arange(30) + r0.params["b"])
    assert info.status == "finished" and info.stop_reason == "budget" and info.n_evals == 20
    assert info.optimizer == "lhs" and info.settings["batch_size"] == 8 and info.seed == 4
    assert info.config == {"note": "t"} and info.termination["max_evals"] == 20
    assert info.free_names == ["a", "b"] and info.n_batches == 3
    assert info.versions["numpy"] == np.__version__ and info.fingerprint == problem_fingerprint(prob)
    assert [c[0] for c in store_checkpoints(tmp_path / "runs.db", "lin")] == [1, 2]  # the cut batch is not told


def store_checkpoints(path, run):
    with RunStore(path, readonly=True) as s:
        return s.checkpoints(run)


def test_cache_reuses_identical_parameter_sets_across_runs_and_within_a_batch(tmp_path):
    counter = tmp_path / "sims.txt"
    prob = CountingProblem(counter=str(counter))
    with RunStore(tmp_path / "c.db") as store:
        a = mc.calibrate(prob, make_optimizer("de", seed=2), max_evals=40, store=store)
        assert count_lines(counter) == 40 - a.n_cached
        b = mc.calibrate(prob, make_optimizer("de", seed=2), max_evals=40, store=store)  # another run, same points
        assert (b.n_simulated, b.n_cached) == (0, 40) and count_lines(counter) == 40 - a.n_cached
        assert b.history.losses == a.history.losses
        recs = store.evaluations(b.run_name)
        assert all(r.source == "cache" and r.worker == "cache" and r.cached_from is not None for r in recs)
        # duplicates inside one batch are simulated once
        pts = np.array([[0.2, 0.2, 0.2], [0.7, 0.1, 0.4], [0.2, 0.2, 0.2], [0.2, 0.2, 0.2]])
        n0 = count_lines(counter)
        c = mc.calibrate(prob, _Fixed(points=pts), Termination(max_iters=1), store=store)
        assert count_lines(counter) - n0 == 2 and (c.n_simulated, c.n_cached) == (2, 2)
        assert c.history.losses[0] == c.history.losses[2] == c.history.losses[3]
        # another problem (other penalty) does not share the cache
        other = CountingProblem(counter=str(counter), failure_loss=1e9)
        d = mc.calibrate(other, _Fixed(points=pts), Termination(max_iters=1), store=store)
        assert d.n_simulated == 2
        # cache=False simulates everything
        e = mc.calibrate(prob, _Fixed(points=pts), Termination(max_iters=1), store=store, cache=False)
        assert e.n_simulated == 4


def test_cache_reuses_failures_but_not_timeouts(tmp_path):
    with RunStore(tmp_path / "t.db") as store:
        prob = CountingProblem()
        mc.calibrate(prob, _Fixed(points=np.full((1, 3), 0.5)), Termination(max_iters=1), store=store, run_name="r")
        rid = store.run("r").id
        common = dict(params="{}", u="[]", loss=math.inf, raw_loss=math.nan, started=0.0, finished=1.0, worker="w")
        for idx, key, status, error in (
            (1, "k-timeout", "timeout", "timeout"),
            (2, "k-failed", "failed", "boom"),
            (3, "k-crash", "crashed", "died"),
        ):
            row = EvaluationRow(idx=idx, batch=1, pos=idx - 1, key=key, status=status, error=error, **common)
            store.add_evaluation(rid, row)
        assert store.lookup("k-timeout") is None and store.lookup("k-crash") is None
        hit = store.lookup("k-failed")
        assert hit[3:5] == ("failed", "boom") and hit[1] == math.inf
        # an infinite loss survives the database, a NaN raw loss comes back as NaN
        rec = store.evaluations("r", status="failed")[0]
        assert rec.loss == math.inf and math.isnan(rec.raw_loss)


def test_queries_and_exports(tmp_path):
    prob = linear_problem(keep_responses=True)
    path = tmp_path / "q.db"
    with RunStore(path) as store:
        res = mc.calibrate(prob, RandomSearch(batch_size=5, seed=1), max_evals=15, store=store, run_name="q")
        mc.calibrate(prob, RandomSearch(batch_size=5, seed=1), max_evals=5, store=store, run_name="q2")
        assert [r.name for r in store.runs()] == ["q", "q2"]
        assert store.status("q") == "finished" and store.n_evaluations("q") == 15 and store.n_evaluations("q2") == 5
        assert store.n_evaluations("q", status="ok") == 15 and store.failures("q") == []
        best = store.best("q")
        assert best.loss == res.best_loss and np.array_equal(best.x, res.best_x)
        assert store.run(store.run("q").id).name == "q"
        with pytest.raises(ConfigurationError, match="no run 'nope'.*runs are \\['q', 'q2'\\]"):
            store.run("nope")
        csv_path = store.export_csv("q", tmp_path / "out" / "q.csv")
        npz_path = store.export_dataset("q", tmp_path / "q.npz")
        b, n, state = store.load_checkpoint("q")
        assert (b, n) == (3, 15) and state["n_evals"] == 15
        store.rename_run("q2", "q3")
        assert [r.name for r in store.runs()] == ["q", "q3"] and store.n_evaluations("q3") == 5
        with pytest.raises(ConfigurationError, match="'q' already exists"):
            store.rename_run("q3", "q")
        with pytest.raises(ConfigurationError, match="no run 'q2'"):
            store.rename_run("q2", "q4")
        store.delete_run("q3")
        assert [r.name for r in store.runs()] == ["q"]
    with open(csv_path) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 15 and list(rows[0])[:7] == ["idx", "batch", "pos", "a", "b", "u_a", "u_b"]
    assert [float(r["loss"]) for r in rows] == res.history.losses
    assert [[float(r["a"]), float(r["b"])] for r in rows] == np.array(res.history.X).tolist()
    data = np.load(npz_path)
    assert data["X"].shape == (15, 2) and np.array_equal(data["X"], res.history.X)
    assert data["names"].tolist() == ["a", "b"] and data["theta"].shape == (15, 2)
    y = data["response/synthetic/y/y"]
    assert y.shape == (15, 30)
    assert np.allclose(y, data["X"][:, :1] * np.arange(30) + data["X"][:, 1:])
    assert np.array_equal(data["loss"], res.history.losses) and data["status"].tolist() == ["ok"] * 15


def test_dataset_pads_ragged_responses_and_inserts_fixed_values(tmp_path):
    from mechcalib.models import get_model

    model = get_model("linear")
    space = model.space.with_fixed(b=5.0)
    exp = mc.experiment_from_model(model, {"a": 0.2, "b": 5.0}, conditions={"n_points": 10})
    prob = mc.Problem(model, exp, mc.L2(), space=space, keep_responses=True)
    with RunStore(tmp_path / "d.db") as store:
        mc.calibrate(prob, RandomSearch(batch_size=4, seed=0), max_evals=4, store=store, run_name="d")
        rid = store.run("d").id
        ragged = encode_response({"synthetic": {"y": Curve(np.arange(3.0), np.ones(3))}})
        row = EvaluationRow(
            idx=4,
            batch=1,
            pos=0,
            key="extra",
            params='{"a": 0.5}',
            u="[0.4]",
            loss=1.0,
            raw_loss=1.0,
            status="ok",
            error=None,
            started=0.0,
            finished=0.0,
            worker="w",
            response=ragged,
        )
        store.add_evaluation(rid, row)
        data = store.dataset("d")
    assert data["theta"].shape == (5, 2) and np.all(data["theta"][:, 1] == 5.0)
    assert data["param_names"].tolist() == ["a", "b"] and data["names"].tolist() == ["a"]
    y = data["response/synthetic/y/y"]
    assert y.shape == (5, 10) and data["response_len/synthetic/y/y"].tolist() == [10, 10, 10, 10, 3]
    assert np.all(np.isnan(y[4, 3:])) and np.all(y[4, :3] == 1.0)


def test_response_codec_round_trip():
    c = Curve(np.arange(4.0), np.arange(4.0) ** 2, t=np.arange(4.0), x_name="d", y_name="F", x_unit="m", y_unit="N")
    resp = {"exp1": {"force": c}, "extra": np.eye(2), "tag": {"n": 3}, "obj": {"s": {1, 2}}}
    back = decode_response(encode_response(resp))
    bc = back["exp1"]["force"]
    assert np.array_equal(bc.x, c.x) and np.array_equal(bc.y, c.y) and np.array_equal(bc.t, c.t)
    assert (bc.x_name, bc.y_name, bc.x_unit, bc.y_unit) == ("d", "F", "m", "N")
    assert np.array_equal(back["extra"], np.eye(2)) and int(back["tag"]["n"]) == 3 and back["obj"]["s"] == {1, 2}
    assert np.array_equal(decode_response(encode_response(np.arange(5))), np.arange(5))
    assert encode_response(None) is None and decode_response(None) is None


def test_fingerprint_identifies_the_problem():
    assert problem_fingerprint(linear_problem()) == problem_fingerprint(linear_problem())
    assert problem_fingerprint(linear_problem(keep_responses=False)) != problem_fingerprint(linear_problem())
    assert problem_fingerprint(CountingProblem()) != problem_fingerprint(CountingProblem(failure_loss=1.0))
    lam = mc.FunctionProblem.from_bounds(lambda X: X[:, 0], [0], [1])  # lambdas go through cloudpickle
    assert problem_fingerprint(lam) is not None


def test_readonly_store_and_settings(tmp_path):
    with pytest.raises(ConfigurationError, match="no store"):
        RunStore(tmp_path / "absent.db", readonly=True)
    with pytest.raises(ConfigurationError, match="durability"):
        RunStore(tmp_path / "x.db", durability="disk")
    path = tmp_path / "ro.db"
    with RunStore(path, durability="power") as store:
        assert store._q("PRAGMA synchronous")[0][0] == 2  # FULL
        mc.calibrate(CountingProblem(), RandomSearch(seed=0), max_evals=10, store=store, run_name="w")
    with RunStore(path, readonly=True) as ro:
        assert ro.n_evaluations("w") == 10
        with pytest.raises(sqlite3.OperationalError):
            ro._con.execute("DELETE FROM evaluations")
        with pytest.raises(ConfigurationError, match="read-only"):
            mc.calibrate(CountingProblem(), RandomSearch(seed=0), max_evals=10, store=ro)
    with pytest.raises(ConfigurationError, match="run_name needs a store"):
        mc.calibrate(CountingProblem(), RandomSearch(seed=0), max_evals=10, run_name="x")


def test_a_store_without_the_choices_column_is_read_and_upgraded(tmp_path):
    path = tmp_path / "old.db"
    with RunStore(path) as store:
        mc.calibrate(linear_problem(False), make_optimizer("auto", seed=0), max_evals=12, store=store, run_name="a")
        mc.calibrate(CountingProblem(), RandomSearch(seed=0), max_evals=5, store=store, run_name="b")
        n_a = store.run("a").n_evals
        assert [c["choice"] for c in store.run("a").choices][:2] == ["design", "check"]
        assert store.run("b").choices == []  # a method that records no choices
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE runs DROP COLUMN choices")  # as a store written before the column existed
    con.close()
    with RunStore(path, readonly=True) as ro:
        assert ro.run("a").choices == [] and ro.run("a").n_evals == n_a
    with RunStore(path) as store:  # opened writable, the column is added back
        assert store.run("a").choices == []
        mc.calibrate(CountingProblem(), make_optimizer("auto", seed=0), max_evals=6, store=store, run_name="c")
        assert store.run("c").choices[0] == {
            "choice": "design",
            "reason": "4 Sobol points (budget 6)",
            "at_eval": 0,
            "n": 4,
            "full": 4,
            "budget": 6,
        }


def test_store_given_as_path_and_generated_names(tmp_path):
    res = mc.calibrate(CountingProblem(), RandomSearch(seed=0), max_evals=10, store=tmp_path / "p.db")
    assert res.run_name.startswith("random-")
    with RunStore(tmp_path / "p.db") as s:
        assert s.n_evaluations(res.run_name) == 10
        assert [r.loss for r in s.evaluations(res.run_name)] == bumpy(np.array(res.history.X)).tolist()


class _Fixed(RandomSearch):
    def __init__(self, *, points=None, seed=None):
        super().__init__(batch_size=len(points), seed=seed)
        self.points = points

    def _ask(self):
        return np.array(self.points, dtype=float)
