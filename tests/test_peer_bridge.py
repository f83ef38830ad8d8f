"""The efficiency benchmark's NGOpt bridge: a child process (possibly another environment's Python) speaking one
JSON document per line; its points reach the objective, its failures reach the caller with their message."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def ep():
    if not (BENCH / "efficiency_problems.py").exists():
        pytest.skip("benchmarks/efficiency_problems.py is not in this checkout")
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(
            "efficiency_problems_under_test", BENCH / "efficiency_problems.py"
        )
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses look their module up there
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.path.remove(str(BENCH))
        sys.modules.pop("efficiency_problems_under_test", None)


# A stand-in worker with the real one's protocol (versions, points, "done"): random search, seeded
FAKE = """
import json, sys, numpy as np
a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
d, budget, seed = int(a["--dim"]), int(a["--budget"]), int(a["--seed"])
print(json.dumps({"nevergrad": "fake", "numpy": np.__version__}), flush=True)
rng = np.random.default_rng(seed)
for _ in range(budget):
    print(json.dumps(rng.random(d).tolist()), flush=True)
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    float(json.loads(line))
print('"done"', flush=True)
"""


def _points(ep, budget: int, seed: int) -> list[np.ndarray]:
    seen: list[np.ndarray] = []

    def fun(U: np.ndarray) -> np.ndarray:
        assert U.shape == (1, 3)
        seen.append(U[0].copy())
        return np.array([float(np.sum((U[0] - 0.3) ** 2))])

    ep.run_ngopt(fun, 3, budget, seed)
    return seen


def test_bridge_feeds_every_point_and_is_reproducible(ep, tmp_path, monkeypatch):
    worker = tmp_path / "worker.py"
    worker.write_text(FAKE)
    monkeypatch.setattr(ep, "NGOPT_WORKER", worker)
    a, b = _points(ep, 25, 7), _points(ep, 25, 7)
    assert len(a) == 25 and all(np.all((p >= 0) & (p <= 1)) for p in a)
    np.testing.assert_array_equal(np.array(a), np.array(b))  # floats cross the pipe exactly
    ref = np.random.default_rng(7).random((25, 3))
    np.testing.assert_array_equal(np.array(a), ref)


def test_stopping_the_objective_ends_the_worker(ep, tmp_path, monkeypatch):
    """The run stops (the objective raises): the exception reaches the caller, the worker ends quietly."""
    worker = tmp_path / "worker.py"
    worker.write_text(FAKE)
    monkeypatch.setattr(ep, "NGOPT_WORKER", worker)
    calls = []

    def fun(U: np.ndarray) -> np.ndarray:
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return np.array([1.0])

    with pytest.raises(KeyboardInterrupt):
        ep.run_ngopt(fun, 2, 100, 1)
    assert len(calls) == 4


def test_worker_failure_names_its_status_and_message(ep, tmp_path, monkeypatch):
    worker = tmp_path / "worker.py"
    worker.write_text("import sys\nsys.exit('ModuleNotFoundError: no module named nevergrad')\n")
    monkeypatch.setattr(ep, "NGOPT_WORKER", worker)
    with pytest.raises(RuntimeError, match=r"status 1: ModuleNotFoundError: no module named nevergrad"):
        ep.run_ngopt(lambda U: np.zeros(len(U)), 2, 10, 1)


def test_ngopt_through_the_worker_finds_a_sphere_minimum(ep):
    pytest.importorskip("nevergrad", reason="nevergrad (the peers extra) is not installed")
    pts = _points(ep, 80, 3)
    assert len(pts) == 80
    best = min(float(np.sum((p - 0.3) ** 2)) for p in pts)
    assert best < 1e-2
    np.testing.assert_array_equal(np.array(pts), np.array(_points(ep, 80, 3)))  # seeded
