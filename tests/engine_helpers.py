"""Problems, models and subprocess entry points shared by the execution, storage and resume tests.

Module level so that pool workers (spawned) and child processes can import them by name.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import mechcalib as mc
from mechcalib.core.data import Curve
from mechcalib.core.objective import Objective
from mechcalib.core.problem import EvaluationBatch
from mechcalib.models import Channel, Model
from mechcalib.objectives.curves import sim_at_data
from mechcalib.storage import RunStore

TESTS_DIR = Path(__file__).resolve().parent


def bumpy(X: np.ndarray) -> np.ndarray:
    """A multimodal loss on ``(n, d)`` points, minimum near 0.3 in every coordinate."""
    X = np.atleast_2d(X)
    return np.sum((X - 0.3) ** 2, axis=1) + 0.1 * np.sum(np.sin(5 * X) ** 2, axis=1)


class CountingProblem:
    """``bumpy`` over ``[-1, 1]^dim``; appends one line per simulated set to ``counter`` (when given) and
    sleeps ``delay`` seconds per set, so tests can count and time simulations across processes."""

    def __init__(self, dim: int = 3, counter: str | None = None, delay: float = 0.0, failure_loss: float = math.inf):
        self.space = mc.ParameterSpace.from_bounds([-1.0] * dim, [1.0] * dim)
        self.counter = counter
        self.delay = delay
        self.failure_loss = failure_loss

    def fingerprint(self) -> str:
        # what decides the losses; the counter file and the delay do not (a resume may run faster)
        return f"counting-{self.space.dim}-{self.failure_loss!r}"

    def evaluate(self, X: np.ndarray) -> EvaluationBatch:
        t0 = time.perf_counter()
        X = np.atleast_2d(np.asarray(X, dtype=float))
        n = X.shape[0]
        if self.delay:
            time.sleep(self.delay * n)
        raw = bumpy(X)
        if self.counter:
            with open(self.counter, "a") as fh:
                fh.write("sim\n" * n)
        return EvaluationBatch(raw, raw.copy(), ["ok"] * n, [None] * n, [], time.perf_counter() - t0)


def count_lines(path: str | os.PathLike[str]) -> int:
    try:
        with open(path) as fh:
            return sum(1 for _ in fh)
    except FileNotFoundError:
        return 0


class FaultyLine(Model):
    """``y = a x + b`` with failures injected by the value of ``a``:

    * ``a < 0.1``: raises ``RuntimeError("injected failure ...")``;
    * ``0.1 <= a < 0.2``: the response is NaN (the curve refuses it);
    * ``0.9 <= a < 0.95``: hangs ``hang_s`` seconds before answering;
    * ``a >= 0.95`` and ``crash``: the process exits (a segfault's stand-in; only in worker processes).
    """

    name = "faulty_line"

    def __init__(self, hang_s: float = 20.0, crash: bool = False) -> None:
        self.space = mc.ParameterSpace([mc.Parameter("a", 0.0, 1.0), mc.Parameter("b", 0.0, 1.0)])
        self.channels = (Channel("y", "x", "y"),)
        self.presets = {"default": {"a": 0.5, "b": 0.5}}
        self.default_conditions = {"n_points": 20}
        self.hang_s = hang_s
        self.crash = crash

    def simulate(self, theta, conditions=None):
        theta = self.check_theta(theta)
        x = np.arange(int(self.conditions(conditions)["n_points"]), dtype=float)
        out = []
        for a, b in theta:
            if a < 0.1:
                raise RuntimeError(f"injected failure at a={a:.3f}")
            if 0.9 <= a < 0.95:
                time.sleep(self.hang_s)
            if a >= 0.95 and self.crash:
                os._exit(7)
            y = a * x + b if a >= 0.2 else np.full_like(x, np.nan)
            out.append({"y": Curve(x, y, x_name="x", y_name="y")})
        return out


def faulty_problem(hang_s: float = 20.0, crash: bool = False, keep_responses: bool = False) -> mc.Problem:
    model = FaultyLine(hang_s=hang_s, crash=crash)
    exp = mc.experiment_from_model(model, {"a": 0.5, "b": 0.5})
    return mc.Problem(model, exp, mc.L2(), keep_responses=keep_responses)


def linear_problem(keep_responses: bool = True) -> mc.Problem:
    from mechcalib.models import get_model

    model = get_model("linear")
    exp = mc.experiment_from_model(model, {"a": 0.2, "b": 5.0}, conditions={"n_points": 30})
    return mc.Problem(model, exp, mc.L2(), keep_responses=keep_responses)


# -- subprocess entry points -------------------------------------------------------------------------
def child_run(db: str, run_name: str, counter: str, n_evals: int, delay: float) -> None:
    """A calibration that writes to ``db``; the resume test kills it mid-run."""
    from mechcalib.optimizers import make_optimizer
    from mechcalib.storage import RunStore

    problem = CountingProblem(counter=counter, delay=delay)
    with RunStore(db) as store:
        mc.calibrate(
            problem, make_optimizer("pso", seed=7), max_evals=n_evals, store=store, run_name=run_name, cache=False
        )


def reader_main(db: str, run_name: str, ready_file: str, limit_s: float) -> None:
    """Query the store while another process writes it, until the writer is gone; touch ``ready_file``
    after the first successful read; print a JSON summary on stdout."""
    from mechcalib.storage import RunStore

    t_end = time.monotonic() + limit_s
    seen: list[int] = []
    errors: list[str] = []
    store = None
    while time.monotonic() < t_end:
        try:
            if store is None:
                if not Path(db).exists():
                    time.sleep(0.01)
                    continue
                store = RunStore(db, readonly=True)
            if not store.has_run(run_name):
                time.sleep(0.01)
                continue
            info = store.run(run_name)
            n = store.n_evaluations(run_name)
            best = store.best(run_name)
            if best is not None and not math.isfinite(best.loss):
                errors.append(f"best loss {best.loss}")
            seen.append(n)
            if len(seen) == 1:
                Path(ready_file).touch()
            if info.status != "running":
                break
        except Exception as exc:  # reported, not raised: the test asserts there were none
            errors.append(f"{type(exc).__name__}: {exc}")
        time.sleep(0.005)
    print(json.dumps({"seen": seen, "errors": errors}))
    sys.stdout.flush()


def python_command(call: str, module: str = "engine_helpers") -> list[str]:
    """``python -c`` running ``call`` with this folder and the tested mechcalib importable and the test module
    ``module`` imported as ``h``."""
    paths = [str(TESTS_DIR), str(Path(mc.__file__).parents[1])]
    return [sys.executable, "-c", f"import sys; sys.path[:0] = {paths!r}; import {module} as h; {call}"]


def stored_evaluations(db: str, run_name: str) -> int:
    """How many evaluations run ``run_name`` of the store ``db`` holds, read-only (0 while it cannot be read)."""
    if not os.path.exists(db):
        return 0
    try:
        with RunStore(db, readonly=True) as ro:
            return ro.n_evaluations(run_name) if ro.has_run(run_name) else 0
    except Exception:  # the writer may be creating the file or its schema
        return 0


def kill_after(child: subprocess.Popen, db: str, run_name: str, n: int, timeout_s: float = 120.0) -> None:
    """SIGKILL ``child`` once its run ``run_name`` in ``db`` holds ``n`` evaluations; the test fails if the child
    ends first (the kill would then test nothing)."""
    try:
        deadline, got = time.monotonic() + timeout_s, 0
        while time.monotonic() < deadline and child.poll() is None and got < n:
            got = stored_evaluations(db, run_name)
            time.sleep(0.01)
        assert child.poll() is None, f"the child ended before it could be killed ({got} of {n} evaluations stored)"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)


@dataclass(frozen=True)
class MaxAbs(Objective):
    """An objective that is no sum of squares (the largest absolute difference): it has no residuals."""

    name = "max_abs"

    def channel_misfit(self, sim, exp):
        return float(np.max(np.abs(sim_at_data(sim, exp) - exp.y)))
