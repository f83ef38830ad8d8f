"""Dataset generation through the run engine (Hu et al.'s (2024) 200-set training data): the same dataset as the
in-memory path, resumed after an interruption without simulating a stored set again, failed sets recorded,
a process pool, and the `mechcalib inverse dataset --store` command."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from mechcalib.cli import app
from mechcalib.core.model import SimulationFailure
from mechcalib.errors import ConfigurationError
from mechcalib.inverse.data import (
    SamplingProblem,
    dataset_from_store,
    dataset_run_name,
    from_model,
    from_npz,
    generate_dataset,
)
from mechcalib.models import get_model
from mechcalib.models.oscillator import Duffing
from mechcalib.storage import RunStore

runner = CliRunner()


class CountingDuffing(Duffing):
    """Duffing that counts the parameter sets it simulates and fails where the stiffness ``k`` is high."""

    def __init__(self, fail_above: float | None = None) -> None:
        super().__init__()
        self.fail_above = fail_above
        self.calls = 0

    def __getstate__(self):  # the counter is no part of the problem's identity
        return {k: v for k, v in self.__dict__.items() if k != "calls"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.calls = 0

    def simulate(self, theta, conditions=None):
        theta = np.atleast_2d(theta)
        self.calls += theta.shape[0]
        out = super().simulate(theta, conditions)
        k = self.space.names.index("k")
        if self.fail_above is not None:
            out = [
                SimulationFailure(f"k = {t[k]:.3f} above {self.fail_above}") if t[k] > self.fail_above else r
                for t, r in zip(theta, out, strict=True)
            ]
        return out


def _same(a, b) -> None:
    assert a.names == b.names and a.features == b.features
    np.testing.assert_array_equal(a.Y, b.Y)
    np.testing.assert_allclose(a.X, b.X, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(a.lower, b.lower)
    np.testing.assert_array_equal(a.upper, b.upper)


def test_store_path_equals_in_memory_path(tmp_path):
    m = get_model("duffing")
    ref = from_model(m, 9, seed=4, length=40)
    g = generate_dataset(m, 9, tmp_path / "s.sqlite", seed=4, length=40)
    assert g.complete and (g.done, g.failed, g.simulated) == (9, 0, 9)
    assert g.run_name == dataset_run_name(m, 9, 4) == "dataset-duffing-n9-seed4"
    _same(g.dataset, ref)
    assert g.dataset.X.shape == (9, 40, 2)
    span = m.space.upper - m.space.lower  # a Latin hypercube of 9 points spreads over most of each range
    assert np.all(g.dataset.Y >= m.space.lower) and np.all(np.ptp(g.dataset.Y, axis=0) > 0.7 * span)
    # the stored run reads back the same, and its file export is the SequenceDataset format `train` reads
    _same(dataset_from_store(tmp_path / "s.sqlite", g.run_name, length=40), ref)
    path = g.dataset.save_npz(tmp_path / "d.npz")
    _same(from_npz(path, length=40), ref)
    # a second call finds everything stored: nothing is simulated again
    again = generate_dataset(m, 9, tmp_path / "s.sqlite", seed=4, length=40)
    assert again.simulated == 0 and again.done == 9
    _same(again.dataset, ref)


def test_interrupted_generation_resumes_without_resimulating(tmp_path):
    store = tmp_path / "s.sqlite"
    m = CountingDuffing()
    live = []

    def kill_after_four(idx, batch, o):
        live.append(idx)
        if len(live) == 4:
            raise KeyboardInterrupt  # as a killed process: four sets committed, the fifth never recorded

    with pytest.raises(KeyboardInterrupt):
        generate_dataset(m, 10, store, seed=1, on_evaluation=kill_after_four)
    with RunStore(store, readonly=True) as st:
        assert st.status(dataset_run_name(m, 10, 1)) == "interrupted"
        assert st.n_evaluations(dataset_run_name(m, 10, 1)) == 4
    m2 = CountingDuffing()
    g = generate_dataset(m2, 10, store, seed=1)
    assert m2.calls == 6 and g.simulated == 6 and g.done == 10 and g.complete
    _same(g.dataset, from_model(Duffing(), 10, seed=1))
    # a budget stops early; a later call continues the same design
    m3 = CountingDuffing()
    part = generate_dataset(m3, 10, tmp_path / "b.sqlite", seed=1, budget=3)
    assert (part.done, part.simulated, part.complete, len(part.dataset)) == (3, 3, False, 3)
    rest = generate_dataset(m3, 10, tmp_path / "b.sqlite", seed=1)
    assert (rest.done, rest.simulated, m3.calls) == (10, 7, 10)
    _same(rest.dataset, g.dataset)
    # another design under the same name is refused rather than mixed in
    with pytest.raises(ConfigurationError, match="batch_size|settings"):
        generate_dataset(CountingDuffing(), 12, store, seed=1, run_name=g.run_name)


def test_failed_sets_are_recorded_and_left_out(tmp_path):
    m = CountingDuffing(fail_above=1.5)
    g = generate_dataset(m, 12, tmp_path / "s.sqlite", seed=2)
    k = m.space.free_names.index("k")
    ref = from_model(Duffing(), 12, seed=2)
    bad = ref.Y[:, k] > 1.5
    assert 0 < bad.sum() < 12, "the seed must give failing and succeeding sets"
    assert g.done == 12 and g.failed == int(bad.sum()) and len(g.dataset) == int((~bad).sum())
    np.testing.assert_array_equal(g.dataset.Y, ref.Y[~bad])
    assert g.dataset.meta["failed"] == int(bad.sum())
    with RunStore(tmp_path / "s.sqlite", readonly=True) as st:
        fails = st.failures(g.run_name)
    assert len(fails) == int(bad.sum()) and all("above 1.5" in f.error for f in fails)
    # the in-memory path drops the same sets
    mem = from_model(CountingDuffing(fail_above=1.5), 12, seed=2)
    _same(mem, g.dataset)
    assert mem.meta["failed"] == int(bad.sum())


def test_sampling_problem_scores_zero_and_keeps_responses():
    m = get_model("duffing")
    p = SamplingProblem(m)
    res = p.evaluate(m.space.from_unit(np.array([[0.2, 0.5, 0.7], [0.9, 0.1, 0.3]])[:, : m.space.dim]))
    assert res.losses.tolist() == [0.0, 0.0] and res.status == ["ok", "ok"]
    assert set(res.responses[0]) == {"sim"} and "restoring_force" in res.responses[0]["sim"]
    assert p.fingerprint() == SamplingProblem(get_model("duffing")).fingerprint()
    assert p.fingerprint() != SamplingProblem(m, conditions={"t_end": 10.0}).fingerprint()
    with pytest.raises(ConfigurationError, match="no_such_condition|unknown"):
        SamplingProblem(m, conditions={"no_such_condition": 1.0})
    with pytest.raises(ConfigurationError, match="n >= 2"):
        generate_dataset(m, 1, "unused.sqlite")


def test_pool_workers_give_the_same_dataset(tmp_path):
    m = get_model("duffing")
    g = generate_dataset(m, 6, tmp_path / "s.sqlite", seed=5, workers=2)
    assert g.simulated == 6 and g.complete
    _same(g.dataset, from_model(m, 6, seed=5))
    with RunStore(tmp_path / "s.sqlite", readonly=True) as st:
        workers = {r.worker for r in st.evaluations(g.run_name)}
    assert all(w.startswith("pool") for w in workers)


def test_cli_dataset_through_the_store(tmp_path):
    store, out = tmp_path / "s.sqlite", tmp_path / "d.npz"
    args = [
        "inverse",
        "dataset",
        "duffing",
        "--n",
        "6",
        "--length",
        "30",
        "--seed",
        "3",
        "--store",
        str(store),
        "--out",
        str(out),
    ]
    r = runner.invoke(app, [*args, "--budget", "2"])
    assert r.exit_code == 0, r.output
    assert "2 of 6 sets stored (2 simulated now" in r.output and "partial" in r.output
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "6 of 6 sets stored (4 simulated now, 2 read back), 0 failed" in r.output and "complete" in r.output
    _same(from_npz(out, length=30), from_model(get_model("duffing"), 6, seed=3, length=30))
    r = runner.invoke(app, ["inverse", "dataset", "duffing", "--n", "6", "--workers", "2", "--out", str(out)])
    assert r.exit_code != 0 and "--store" in r.output
    r = runner.invoke(app, ["inverse", "dataset", "duffing", "--n", "6", "--option", "nope=1", "--out", str(out)])
    assert r.exit_code != 0 and "option" in r.output


def test_resume_a_dataset_run_from_its_record(tmp_path):
    # `mechcalib resume STORE --out F.npz` rebuilds the model (with its constructor options), n, seed,
    # conditions and layout from the run's record and simulates only the missing sets
    store, out = tmp_path / "s.sqlite", tmp_path / "d.npz"
    args = [
        "inverse",
        "dataset",
        "duffing",
        "--n",
        "6",
        "--length",
        "30",
        "--seed",
        "3",
        "--store",
        str(store),
        "--out",
        str(out),
        "--condition",
        "F0=0.4",
        "--budget",
        "2",
    ]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    with RunStore(store, readonly=True) as st:
        cfg = st.config(dataset_run_name(get_model("duffing"), 6, 3))
    assert cfg["model_options"] == {} and cfg["conditions"]["F0"] == 0.4
    r = runner.invoke(app, ["resume", str(store), "--out", str(out), "-q"])
    assert r.exit_code == 0, r.output
    assert "6 of 6 sets stored (4 simulated now, 2 read back), 0 failed" in r.output and "complete" in r.output
    ref = from_model(get_model("duffing"), 6, seed=3, length=30, conditions={"F0": 0.4})
    _same(from_npz(out, length=30), ref)
    r = runner.invoke(app, ["resume", str(store)])
    assert r.exit_code != 0 and "--out" in r.output
    r = runner.invoke(app, ["resume", str(store), "--out", str(out), "--run", "nope"])
    assert r.exit_code != 0 and "nope" in r.output


def test_resume_dataset_needs_one_dataset_run(tmp_path):
    from mechcalib.inverse.data import resume_dataset

    with pytest.raises(ConfigurationError, match="no run store"):
        resume_dataset(tmp_path / "missing.sqlite")
    store = tmp_path / "s.sqlite"
    generate_dataset(Duffing(), 4, store, seed=1, budget=1)
    generate_dataset(Duffing(), 4, store, seed=2, budget=1)
    with pytest.raises(ConfigurationError, match="2 dataset runs"):
        resume_dataset(store)
    g = resume_dataset(store, dataset_run_name(Duffing(), 4, 2))
    assert g.done == 4 and g.simulated == 3
