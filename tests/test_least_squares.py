"""Least squares through the run engine: the batched finite-difference Jacobian against analytic ones,
recovery of known Duffing parameters in few simulations, kill and resume without recomputing, bad input."""

from __future__ import annotations

import subprocess
import time
import warnings

import numpy as np
import pytest

import mechcalib as mc
from engine_helpers import MaxAbs, kill_after, python_command
from mechcalib.core.parameters import Parameter, ParameterSpace
from mechcalib.core.problem import Problem, experiment_from_model
from mechcalib.errors import ConfigurationError, SettingError
from mechcalib.models.analytic import Linear
from mechcalib.models.oscillator import Duffing
from mechcalib.objectives.curves import L2
from mechcalib.optimizers import OPTIMIZERS, make_optimizer
from mechcalib.optimizers import make_optimizer as _make
from mechcalib.optimizers.fd_jacobian import batched_jacobian
from mechcalib.optimizers.least_squares import (
    LeastSquares,
    LeastSquaresWarning,
    dunit_dz,
    unit_from_z,
    z_from_unit,
)
from mechcalib.storage import MemoryStore, RunStore

TRUTH = np.array([0.2, 1.0, 0.5])  # the Duffing model's default preset (c, k, k3)


class CountingDuffing(Duffing):
    """Duffing counting the parameter sets it simulates (simulations counted at the model)."""

    calls: list[int] = []

    def simulate(self, theta, conditions=None):
        CountingDuffing.calls.append(int(np.atleast_2d(theta).shape[0]))
        return super().simulate(theta, conditions)


def _duffing_problem(model=None):
    model = model or Duffing()
    return Problem(model, experiment_from_model(model, name="d"), L2(channels=("displacement",)))


def _linear_problem(space=None):
    model = Linear()
    return Problem(model, experiment_from_model(model, name="lin"), L2(), space=space)


# -- the Jacobian ------------------------------------------------------------------------------------
@pytest.mark.parametrize("difference", ["forward", "central"])
def test_batched_jacobian_of_the_linear_model_is_analytic(difference):
    # y = a x + b; a = 0.1 + 0.9 u_a (linear), b = 0.1 * 100**u_b (log): dr/du = (0.9 x, b ln 100)
    space = ParameterSpace([Parameter("a", 0.1, 1.0), Parameter("b", 0.1, 10.0, scale="log")])
    prob = _linear_problem(space)
    calls = []

    def fn(U):
        calls.append(len(U))
        return prob.residuals(space.from_unit(U))

    for u in (np.array([0.3, 0.6]), np.array([1.0, 0.0]), np.array([0.0, 1.0])):
        calls.clear()
        J = batched_jacobian(fn, u, difference=difference)
        b = space.from_unit(u[None])[0, 1]
        x = np.arange(100.0)
        np.testing.assert_allclose(J[:, 0], 0.9 * x, rtol=1e-5, atol=1e-6)
        inside = np.all((u > 1e-3) & (u < 1 - 1e-3))
        # one-sided at a bound: truncation error h ln(100) / 2 with h = 1e-4 (central) or 1e-6 (forward)
        np.testing.assert_allclose(J[:, 1], b * np.log(100.0), rtol=1e-5 if inside or difference == "forward" else 5e-4)
        assert calls == [1, 2 * 2 if difference == "central" and inside else 2]  # one batch for the Jacobian


def test_batched_jacobian_of_duffing_matches_a_refined_reference():
    prob = _duffing_problem()
    space = prob.space

    def fn(U):
        return prob.residuals(space.from_unit(U))

    u = space.to_unit(np.array([[0.3, 1.4, 0.8]]))[0]
    J = batched_jacobian(fn, u)
    # reference: Richardson-extrapolated central differences (error O(h^4))
    Jc = np.empty_like(J)
    for i in range(3):
        cols = []
        for h in (1e-3, 5e-4):
            e = np.zeros(3)
            e[i] = h
            rp, rm = fn(np.array([u + e, u - e]))
            cols.append((rp - rm) / (2 * h))
        Jc[:, i] = (4 * cols[1] - cols[0]) / 3
    assert np.max(np.abs(J - Jc)) <= 1e-4 * np.max(np.abs(Jc))
    assert np.max(np.abs(batched_jacobian(fn, u, difference="central") - Jc)) <= 1e-6 * np.max(np.abs(Jc))


def test_a_failed_difference_point_takes_the_other_side_or_zeroes_the_column():
    A = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]])
    u = np.array([0.4, 0.5])

    def one_side(U):  # a line, failing to the right of u in coordinate 0
        R = U @ A.T
        R[U[:, 0] > u[0]] = np.nan
        return R

    np.testing.assert_allclose(batched_jacobian(one_side, u), A, rtol=1e-6)

    def both_sides(U):  # failing at every point off u in coordinate 0
        R = U @ A.T
        R[U[:, 0] != u[0]] = np.nan
        return R

    with pytest.warns(
        LeastSquaresWarning, match=r"every difference point of free parameter 0 \(unit-cube coordinate\) failed"
    ):
        J = batched_jacobian(both_sides, u)
    np.testing.assert_array_equal(J[:, 0], 0.0)
    np.testing.assert_allclose(J[:, 1], A[:, 1], rtol=1e-6)


def test_lm_transform_maps_onto_the_unit_cube():
    z = np.linspace(-3, 3, 101)
    u = unit_from_z(z)
    assert u.min() >= 0 and u.max() <= 1
    np.testing.assert_allclose(unit_from_z(z_from_unit(np.linspace(0, 1, 11))), np.linspace(0, 1, 11), atol=1e-15)
    np.testing.assert_allclose(dunit_dz(z), (unit_from_z(z + 1e-7) - unit_from_z(z - 1e-7)) / 2e-7, atol=1e-7)


# -- recovery ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["lsq-trf", "lsq-lm"])
def test_least_squares_recovers_duffing_in_few_simulations(name):
    prob = _duffing_problem(CountingDuffing())
    CountingDuffing.calls = []  # the data's simulation left out
    res = mc.calibrate(prob, make_optimizer(name, seed=0, restart=False), max_evals=200)
    err = np.max(np.abs(res.best_x - TRUTH) / TRUTH)
    assert res.stop_reason == "converged" and err < 1e-4
    # simulations counted at the model, Jacobians included: every evaluation is one simulated set
    assert sum(CountingDuffing.calls) == res.n_evals <= 60
    X = np.asarray(res.history.X)
    first = int(np.argmax(np.max(np.abs(X - TRUTH) / TRUTH, axis=1) < 1e-4)) + 1
    print(f"{name}: {first} simulations to 1e-4, {res.n_evals} until scipy stopped")  # noqa: T201
    assert max(CountingDuffing.calls) == 3  # a Jacobian is one batch of d = 3 sets


def test_multi_start_keeps_distinct_end_points_and_reports_alternatives():
    prob = _linear_problem()
    opt = make_optimizer("lsq", seed=2, n_starts=3, restart=False)
    res = mc.calibrate(prob, opt, max_evals=300)
    assert res.stop_reason == "converged" and np.allclose(res.best_x, [0.2, 5.0], rtol=1e-6)
    ends = opt.end_points
    assert len(ends) == 1 and ends[0][1] == res.best_loss  # one basin: its three starts end together
    assert res.alternatives[0][1] == res.best_loss


# -- a batch: the starts in lockstep ----------------------------------------------------------------------
def _rounds(res, W):
    return int(sum(np.ceil(n / W) for n in np.bincount(np.asarray(res.history.batch, int))))


@pytest.mark.parametrize("method", ["trf", "lm"])
def test_a_batch_runs_the_starts_in_lockstep_to_the_same_end_in_fewer_rounds(method):
    seq = LeastSquares(method=method, seed=1, restart=False)
    one = mc.calibrate(_duffing_problem(), seq, max_evals=600)
    wide = LeastSquares(method=method, seed=1, restart=False, batch_size=32)
    res = mc.calibrate(_duffing_problem(), wide, max_evals=600)
    assert res.stop_reason == one.stop_reason == "converged"
    assert np.allclose(res.best_x, one.best_x, rtol=1e-6) and res.best_loss <= 1.0001 * one.best_loss + 1e-18
    assert len(wide.finished_starts) == len(seq.finished_starts) == 5
    assert len(wide.end_points) == len(seq.end_points) and wide.tolerances_met == seq.tolerances_met
    # five starts, each round their requests and the Jacobians at their trial points: a fraction of the rounds
    assert _rounds(res, 32) * 4 <= _rounds(one, 1)


def test_one_slot_asks_what_the_sequential_run_asks():
    a = mc.calibrate(_duffing_problem(), LeastSquares(seed=3), max_evals=120)
    b = mc.calibrate(_duffing_problem(), LeastSquares(seed=3, batch_size=1), max_evals=120)
    assert a.history.losses == b.history.losses and np.array_equal(a.history.batch, b.history.batch)


@pytest.mark.parametrize("bad", [0, -2, 2.5, "8"])
def test_a_batch_size_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(SettingError, match="batch_size"):
        LeastSquares(batch_size=bad)


def _banana(U):
    """Rosenbrock's residuals on the unit cube (a = 4 u0 - 2, b = 4 u1 - 1): TRF rejects steps on its valley."""
    a, b = 4 * U[:, 0] - 2, 4 * U[:, 1] - 1
    return np.column_stack([10 * (b - a * a), 1 - a])


def test_the_rejected_fork_asks_the_step_trf_tries_after_a_rejection():
    rejected = 0
    for x0 in ([0.1, 0.9], [0.2, 0.2], [0.05, 0.5]):
        start = LeastSquares(method="trf", x0=[x0], restart=False, seed=0).setup(2)
        n = 0
        while (P := start.pending_points()) is not None:
            guess = start.rejected_fork(P[0]).pending_points() if P.shape[0] == 1 else None
            R = _banana(P)
            start.record(P, np.sum(R**2, axis=1), R)
            n += len(P)
            after = start.pending_points()
            if n > 1 and P.shape[0] == 1 and after is not None and after.shape[0] == 1:  # a trial step, rejected
                rejected += 1
                np.testing.assert_array_equal(guess, after)
        assert start.finished_starts[0][0] < 1e-12  # the fork told the start nothing
    assert rejected >= 5


def _ask_tell(opt, budget):
    rounds, seen = 0, []
    while not opt.converged and len(seen) < budget:
        U = opt.ask()
        R = _banana(U)
        opt.tell(U, np.sum(R**2, axis=1), residuals=R)
        rounds += 1
        seen += [u.tobytes() for u in U]
    return rounds, seen


def test_trial_steps_asked_ahead_keep_each_start_on_its_path_in_fewer_rounds():
    plain = LeastSquares(method="trf", n_starts=3, restart=False, batch_size=32, seed=5).setup(2)
    ahead = LeastSquares(method="trf", n_starts=3, restart=False, batch_size=32, trials_ahead=3, seed=5).setup(2)
    r0, seen0 = _ask_tell(plain, 2000)
    r1, seen1 = _ask_tell(ahead, 2000)
    assert ahead.finished_starts == plain.finished_starts and ahead.end_points[0][1] == plain.end_points[0][1]
    assert set(seen0) <= set(seen1)  # every point the starts asked, and the trials ahead besides
    assert r1 < r0 and len(seen1) > len(seen0)


def test_trial_steps_ahead_need_trf():
    with pytest.raises(SettingError, match="trials_ahead=2 needs method='trf'"):
        LeastSquares(method="lm", trials_ahead=2)
    with pytest.raises(SettingError, match="trials_ahead"):
        LeastSquares(trials_ahead=-1)


# -- resume ----------------------------------------------------------------------------------------------
class _Stop(KeyboardInterrupt):
    pass


@pytest.mark.parametrize(
    ("name", "batch_size", "secant"),
    [("lsq-trf", 1, False), ("lsq-lm", 1, False), ("lsq", 1, False), ("lsq", 8, False), ("lsq-lm", 1, True)],
)
@pytest.mark.parametrize("checkpoint_every", [1, None])
def test_killed_run_resumes_to_the_identical_result_without_recomputing(name, batch_size, secant, checkpoint_every):
    """Also with a batch: several starts in lockstep, killed between rounds, resume exactly; and with secant
    Jacobians, whose model the replay rebuilds."""
    total, k = 45, 13
    if secant:  # killed inside its secant steps (evaluations 17-26 of this run)
        total, k = 30, 20

    def make_optimizer(name, **kw):
        return _make(name, secant=secant, **kw)

    ref = mc.calibrate(_duffing_problem(), make_optimizer(name, seed=4, batch_size=batch_size), max_evals=total)
    store = MemoryStore()
    seen = []

    def hook(idx, batch, outcome):
        if outcome.source == "live":
            seen.append(idx)
            if len(seen) == k:
                raise _Stop

    kw = dict(max_evals=total, store=store, run_name="r", cache=False, checkpoint_every=checkpoint_every)
    with pytest.raises(_Stop):
        opt = make_optimizer(name, seed=4, batch_size=batch_size)
        mc.calibrate(_duffing_problem(CountingDuffing()), opt, on_evaluation=hook, **kw)
    prob = _duffing_problem(CountingDuffing())
    CountingDuffing.calls = []
    res = mc.calibrate(prob, make_optimizer(name, batch_size=batch_size), **kw)
    assert res.history.losses == ref.history.losses and np.array_equal(res.history.U, ref.history.U)
    assert res.best_loss == ref.best_loss and np.array_equal(res.best_x, ref.best_x)
    assert res.n_replayed == k and res.n_simulated == total - k == sum(CountingDuffing.calls)


class SlowDuffing(Duffing):
    """Duffing taking 20 ms per parameter set, so that a run can be killed mid-way."""

    def simulate(self, theta, conditions=None):
        time.sleep(0.02 * np.atleast_2d(theta).shape[0])
        return super().simulate(theta, conditions)


def child_run(db: str, total: int) -> None:
    """The run killed by :func:`test_sigkilled_run_resumes_exactly` (executed in a child process)."""
    with RunStore(db) as store:
        mc.calibrate(
            _duffing_problem(SlowDuffing()),
            make_optimizer("lsq-lm", seed=3),
            max_evals=total,
            store=store,
            run_name="k",
        )


def test_sigkilled_run_resumes_exactly(tmp_path):
    db, total = str(tmp_path / "kill.db"), 40
    child = subprocess.Popen(python_command(f"h.child_run({db!r}, {total})", module="test_least_squares"))
    kill_after(child, db, "k", 12)
    ref = mc.calibrate(_duffing_problem(SlowDuffing()), make_optimizer("lsq-lm", seed=3), max_evals=total)
    with RunStore(db) as store:
        stored = store.n_evaluations("k")
        assert 12 <= stored < total
        res = mc.calibrate(
            _duffing_problem(SlowDuffing()), make_optimizer("lsq-lm"), max_evals=total, store=store, run_name="k"
        )
    assert res.history.losses == ref.history.losses and np.array_equal(res.history.U, ref.history.U)
    assert res.best_loss == ref.best_loss and res.n_replayed + res.n_cached == stored
    assert res.n_simulated == total - stored


# -- bad input -------------------------------------------------------------------------------------------
def test_an_objective_without_residuals_is_warned_and_fitted_on_the_root_loss():
    model = Linear()
    prob = Problem(model, experiment_from_model(model, name="lin"), MaxAbs())
    with pytest.warns(LeastSquaresWarning, match="'max_abs' has none.*l2, f1, f2, overlap_rss"):
        res = mc.calibrate(prob, make_optimizer("lsq-trf", seed=0), max_evals=40)
    assert np.isfinite(res.best_loss)


def test_a_budget_below_one_jacobian_is_refused():
    for diff, need in (("forward", 4), ("central", 7)):
        with pytest.raises(ConfigurationError, match=f"max_evals={need - 1}; raise max_evals to at least {need}"):
            mc.calibrate(_duffing_problem(), make_optimizer("lsq-trf", difference=diff), max_evals=need - 1)


def test_a_parameter_the_data_do_not_see_is_named():
    opt = LeastSquares(n_starts=1, restart=False, seed=0)
    opt._names = ("seen", "unseen")
    opt.setup(2)
    with pytest.warns(LeastSquaresWarning, match="do not change with parameter 'unseen'.*data do not see it"):
        while not opt.converged:
            U = opt.ask()
            R = np.column_stack([U[:, 0] - 0.3, 2 * (U[:, 0] - 0.3)])
            opt.tell(U, np.sum(R**2, axis=1), residuals=R)
    assert opt.best_x[0] == pytest.approx(0.3, abs=1e-8)


def test_failing_simulations_inside_a_run_never_crash_it():
    rng = np.random.default_rng(0)
    opt = LeastSquares(n_starts=2, seed=1)
    opt.setup(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LeastSquaresWarning)
        for _ in range(60):
            U = opt.ask()
            R = np.column_stack([U - 0.3, np.sin(U[:, :1])])
            R[rng.random(len(U)) < 0.25] = np.nan
            opt.tell(U, np.sum(R**2, axis=1), residuals=R)
    assert opt.best_f < 0.3


def test_registered_and_listed():
    assert {"lsq", "lsq-trf", "lsq-lm"} <= set(OPTIMIZERS)
    assert make_optimizer("lsq-lm").settings()["method"] == "lm"


def test_own_starts_are_polished_first():
    opt = make_optimizer("lsq-lm", x0=[[0.25, 0.45]], restart=False, seed=0)
    res = mc.calibrate(_linear_problem(), opt, max_evals=100)
    assert opt.n_starts == 0 and res.stop_reason == "converged"
    np.testing.assert_allclose(res.history.U[0], [0.25, 0.45], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.best_x, [0.2, 5.0], rtol=1e-6)
    for bad in ([[1.5, 0.2]], [[float("nan"), 0.2]], [["low", 0.2]], []):
        with pytest.raises(SettingError, match="x0") as e:
            make_optimizer("lsq", x0=bad)
        assert e.value.name == "x0"


# -- secant Jacobians (one slot) -------------------------------------------------------------------------
def test_the_secant_model_meets_the_secant_condition_and_goes_back_to_differences():
    from mechcalib.optimizers.secant import MAX_UPDATES, Secant

    rng = np.random.default_rng(0)
    A = rng.normal(size=(5, 3))

    def res(u):  # a curved residual: no Jacobian is exact for long
        return A @ u + 0.3 * u**2 @ np.ones((3, 5))

    asked = []

    def differences(u):
        def call():
            asked.append(u.copy())
            return A + 0.6 * np.ones((5, 1)) * u[None, :]  # the analytic Jacobian

        return call

    model = Secant()
    u = np.array([0.2, 0.5, 0.7])
    model.told(u, res(u))
    B = model.jacobian(u, res(u), differences(u))
    assert len(asked) == 1 and model.exact
    for k in range(MAX_UPDATES):  # accepted steps without rejection: secant updates only
        s = 0.05 * rng.normal(size=3)
        model.told(u + s, res(u + s))
        B = model.jacobian(u + s, res(u + s), differences(u + s))
        np.testing.assert_allclose(B @ s, res(u + s) - res(u), rtol=1e-10, atol=1e-12)  # B s = y
        u = u + s
        assert len(asked) == 1 and model.updates == k + 1 and not model.exact
    s = np.full(3, 0.01)
    model.told(u + s, res(u + s))
    model.jacobian(u + s, res(u + s), differences(u + s))  # after MAX_UPDATES: differences
    assert len(asked) == 2 and model.exact
    u = u + s
    for t in (0.3, 0.1, 0.02):  # two rejected trials, then the accepted one: differences again
        model.told(u + t, res(u + t))
    model.jacobian(u + 0.02, res(u + 0.02), differences(u + 0.02))
    assert len(asked) == 3 and model.exact
    model.told(u + 0.05, None)  # a failed trial brings no secant information and is no rejection counted
    model.told(u + 0.03, res(u + 0.03))
    model.jacobian(u + 0.03, res(u + 0.03), differences(u + 0.03), at=np.array([7.0]))
    assert len(asked) == 3 and model.updates == 1 and not model.misleads()
    model.told(u + 0.2, res(u + 0.2))  # two trials rejected on a secant Jacobian: a third is not asked
    assert not model.misleads()
    model.told(u + 0.1, res(u + 0.1))
    assert model.misleads() and model.at.tolist() == [7.0]  # the driver starts again from there


@pytest.mark.parametrize("method", ["lm", "trf"])
def test_secant_jacobians_reach_the_truth_and_end_on_a_difference_jacobian(method):
    # what the secant model saves is measured in benchmarks/efficiency.md (auto with one worker); here: from
    # each of six starts it reaches the truth, and the end is confirmed by a forward-difference Jacobian taken
    # next to it (MINPACK's tolerances met on a secant Jacobian prove nothing)
    prob = _duffing_problem()
    for x0 in np.random.default_rng(1).random((6, 3)):
        opt = LeastSquares(method=method, x0=[x0.tolist()], restart=False, secant=True, seed=0)
        res = mc.calibrate(prob, opt, max_evals=300)
        x = np.array([res.best_params[k] for k in ("c", "k", "k3")])
        np.testing.assert_allclose(x, TRUTH, rtol=1e-6)
        assert opt.tolerances_met == [True]
        U = prob.space.to_unit(res.history.X)
        u_end = prob.space.to_unit(res.best_x[None, :])[0]
        bases = [p for p in U if np.max(np.abs(p - u_end)) < 1e-4]
        columns = [sum(0 < np.max(np.abs(q - p)) <= 2e-6 for q in U) for p in bases]
        assert max(columns) >= 3, (x0, columns)


@pytest.mark.parametrize(
    ("losses", "misled", "stalled"),
    [
        ([100.0, 99.95, 99.9, 99.85], 2, True),  # two misled runs in a row, each lowering the loss by 5e-4
        ([100.0, 99.95, 90.0, 89.99, 89.98], 4, True),  # a real step between two slow runs resets the count
        ([100.0, 90.0, 81.0, 72.9], 3, False),  # runs that lower it by 10 %: on to a run that ends
    ],
)
def test_a_secant_start_misled_run_after_run_without_progress_ends_stalled(losses, misled, stalled):
    """``_links``: each misled run begins again on a difference Jacobian from its last accepted point; two in a
    row that each lower the loss by less than a relative 1e-3 end the start there, as met (seen where a secant
    TRF crept along a face of the frame of benchmarks/efficiency.md for dozens of simulations)."""
    from mechcalib.optimizers.differences import snap
    from mechcalib.optimizers.least_squares import _Mislead

    opt = LeastSquares(method="trf", secant=True, x0=[[0.5, 0.5]], restart=False, seed=0)
    opt.setup(2)
    points = [snap(np.array([0.5, 0.5 - 0.01 * i])) for i in range(len(losses))]  # as scipy's points are looked up
    opt._loss = {p.tobytes(): f for p, f in zip(points, losses, strict=True)}
    calls = []

    def run(x, model):
        calls.append(x.copy())
        if len(calls) < len(points):
            raise _Mislead(points[len(calls)])  # misled: starts again from its last accepted point
        return x, True, "ftol", True  # ends on a difference Jacobian

    x, met, msg = opt._links(points[0], run)
    assert met
    assert len(calls) == misled + (0 if stalled else 1)  # the runs misled, and the one that ended
    assert msg.startswith("stalled") == stalled
    np.testing.assert_array_equal(x, points[misled] if stalled else points[-1])


def test_secant_jacobians_need_one_slot():
    with pytest.raises(SettingError, match="secant"):
        LeastSquares(secant=True, batch_size=4)
