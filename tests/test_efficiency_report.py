"""The efficiency benchmark's bookkeeping: ``--rerun`` drops runs from the store and the summary, and the report
lists seeds beyond 1-10 in a table of their own."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.core.problem import FunctionProblem
from mechcalib.optimizers import make_optimizer
from mechcalib.storage import RunStore

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def eff():
    if not (BENCH / "efficiency.py").exists():
        pytest.skip("benchmarks/efficiency.py is not in this checkout")
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("efficiency_under_test", BENCH / "efficiency.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.path.remove(str(BENCH))
        sys.modules.pop("efficiency_under_test", None)


def _run(sims, met=True):
    return {"status": "finished", "sims_to_target": sims, "end_met": met, "wall_seconds": 1.0, "budget": 600}


def test_seeds_beyond_ten_get_their_own_table(eff):
    runs = {f"arch/auto/s{s}": _run(100 + s) for s in range(1, 11)}
    assert eff.extra_seeds(runs, ["arch"]) == []  # seeds 1-10 only: no table
    runs |= {"arch/auto/s11": _run(300), "arch/auto/s12": _run(None, met=False), "arch/auto/s13": _run(200)}
    runs |= {"arch/ngopt/s11": _run(250), "arch/ngopt/s14": _run(None, met=False)}
    lines = eff.extra_seeds(runs, ["arch"])
    assert lines[0] == "### Seeds beyond 1-10"
    rows = [line for line in lines if line.startswith("| arch")]
    # auto is judged at its end (end_met); the others by reaching the target; a gap in the seeds is listed
    assert rows == [
        "| arch | auto | 11-13 | 2/3 | 250 (200-300) |",
        "| arch | ngopt | (11, 14) | 1/2 | 250 (250-250) |",
    ]
    # the main table still counts seeds 1-10 only
    assert eff.cell_stats(runs, "arch", "auto")["n_done"] == 10


def test_rerun_drops_runs_from_store_and_summary(eff, tmp_path, monkeypatch):
    summary = tmp_path / "summary.json"
    monkeypatch.setattr(eff, "SUMMARY", summary)
    summary.write_text(json.dumps({"format": 1, "runs": {"p/m/s1": _run(5), "p/m/s2": _run(6)}}))
    prob = FunctionProblem.from_bounds(lambda X: np.sum(X**2, axis=1), [0, 0], [1, 1])
    with RunStore(tmp_path / "s.sqlite") as store:
        for name in ("p/m/s1", "p/m/s2"):
            mc.calibrate(prob, make_optimizer("random", seed=0), max_evals=4, store=store, run_name=name)
        eff.drop_runs(store, ["p/m/s1", "p/m/s3"])  # a name in neither is ignored
        assert not store.has_run("p/m/s1") and store.has_run("p/m/s2")
    assert list(json.loads(summary.read_text())["runs"]) == ["p/m/s2"]
