"""The README's Python example saved as a script without `if __name__ == "__main__":` (issue 30, item 4): the
pool evaluator's spawned workers would import the script again and die while starting; the pool refuses such a
script before starting any worker, with the fix. Run as real scripts in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mechcalib as mc

SRC = str(Path(mc.__file__).parents[1])

BODY = """
import mechcalib as mc
from mechcalib.execution import PoolEvaluator
from mechcalib.models import get_model

model = get_model("linear")
experiment = mc.experiment_from_model(model, {"a": 0.3, "b": 2.0}, conditions={"n_points": 20})
problem = mc.Problem(model, experiment, mc.F1())
"""
CALL = "result = mc.calibrate(problem, max_evals=4, evaluator=PoolEvaluator(n_workers=1))\n"
CALL += 'print("BEST", result.n_evals)\n'


def _run_script(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    script = tmp_path / "fit.py"
    script.write_text(text)
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_script_without_the_main_guard_is_refused_with_the_fix(tmp_path):
    r = _run_script(tmp_path, BODY + CALL)
    assert r.returncode != 0
    assert "ConfigurationError" in r.stderr and str(tmp_path / "fit.py") in r.stderr
    assert 'outside an `if __name__ == "__main__":` block' in r.stderr and "'spawn' start method" in r.stderr
    assert "died while starting" not in r.stderr and "bootstrapping phase" not in r.stderr  # no worker started


def test_the_same_script_with_the_guard_runs_on_the_pool(tmp_path):
    guarded = BODY + 'if __name__ == "__main__":\n' + "".join(f"    {ln}\n" for ln in CALL.splitlines())
    r = _run_script(tmp_path, guarded)
    assert r.returncode == 0, r.stderr
    assert "BEST 4" in r.stdout


def test_a_guard_elsewhere_in_the_script_does_not_hide_an_unguarded_call(tmp_path):
    text = BODY + CALL + 'if __name__ == "__main__":\n    print("main")\n'
    r = _run_script(tmp_path, text)
    assert r.returncode != 0 and 'outside an `if __name__ == "__main__":` block' in r.stderr
