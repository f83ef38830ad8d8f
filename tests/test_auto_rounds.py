"""``auto``'s rounds: least-squares starts in lockstep filling a batch of ``batch_size`` simulations, the batch
size fixed when a run starts (``run.json``), and the settings that cannot work refused."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.errors import ConfigurationError, SettingError
from mechcalib.models import get_model
from mechcalib.objectives.curves import L2
from mechcalib.optimizers.auto import Auto
from mechcalib.runs import resume_run, run_config

CONFIG = """
seed = 3
[model]
name = "duffing"
preset = "default"
[[experiments]]
kind = "synthetic"
name = "clean"
noise = 0.0
[objective]
name = "l2"
options = { channels = ["displacement"] }
[budget]
max_evals = 60
[evaluator]
kind = "pool"
[output]
directory = "out"
"""


def _duffing():
    model = get_model("duffing")
    truth = model.preset("default")
    exp = mc.experiment_from_model(model, truth, noise=0.0, seed=0, name="d")
    return mc.Problem(model, exp, L2(channels=("displacement",))), truth


def _rounds_to(res, truth, W):
    """Rounds (batches of W simulations) until the first evaluation within 1 % of the truth."""
    sizes = np.bincount(res.history.batch)
    names = list(truth)  # the free parameters, in order
    for x, b in zip(res.history.X, res.history.batch, strict=True):
        if max(abs(x[j] - truth[k]) / abs(truth[k]) for j, k in enumerate(names)) < 0.01:
            return sum(math.ceil(n / W) for n in sizes[: b + 1])
    return None


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_a_batch_size_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(SettingError, match="batch_size must be an integer >= 1.*--workers"):
        Auto(batch_size=bad)


def test_a_batch_larger_than_the_budget_is_refused_naming_the_fix():
    prob, _ = _duffing()
    with pytest.raises(
        ConfigurationError, match=r"batch_size=64 is larger than the budget max_evals=50.*raise max_evals"
    ):
        mc.calibrate(prob, Auto(batch_size=64, seed=0), max_evals=50)


def test_one_slot_runs_one_start_at_a_time_and_a_batch_runs_several_in_fewer_rounds():
    prob, truth = _duffing()
    seq = mc.calibrate(prob, Auto(seed=1), max_evals=150)
    wide = mc.calibrate(prob, Auto(seed=1, batch_size=16), max_evals=150)
    assert next(c for c in seq.choices if c["choice"] == "polish")["width"] == 1
    assert next(c for c in wide.choices if c["choice"] == "polish")["width"] == 3  # 16 // (3 + 1), at most 3
    r1 = _rounds_to(seq, truth, 1)
    r16 = _rounds_to(wide, truth, 16)
    assert r1 is not None and r16 is not None
    # measured (seed 1): 24 rounds (33 simulations) with one slot, 6 (90) with 16
    assert r16 <= r1 / 3, (r1, r16)
    assert wide.n_evals <= 150


def test_run_json_fixes_seed_and_batch_size_and_a_resume_on_other_workers_replays_exactly(tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text(CONFIG.replace("seed = 3\n", ""))  # no seed: one is drawn and recorded
    whole = run_config(cfg, tmp_path / "whole", workers=4)
    man = json.loads((tmp_path / "whole" / "run.json").read_text())
    assert man["batch_size"] == 4 and isinstance(man["seed"], int)
    assert json.loads((tmp_path / "whole" / "result.json").read_text())["seed"] == man["seed"]
    cfg.write_text(CONFIG.replace("seed = 3", f"seed = {man['seed']}"))

    def stop_at_20(done, _total, _best):
        if done >= 20:
            raise _Stop

    with pytest.raises(_Stop):
        run_config(cfg, tmp_path / "cut", workers=4, progress=stop_at_20)
    resumed = resume_run(tmp_path / "cut", workers=2)  # another number of workers: the same batches
    assert json.loads((tmp_path / "cut" / "run.json").read_text())["batch_size"] == 4
    np.testing.assert_array_equal(resumed.result.history.losses, whole.result.history.losses)
    np.testing.assert_array_equal(resumed.result.history.batch, whole.result.history.batch)


class _Stop(Exception):
    pass


def _stop_after(n: int, seen: list[int]):
    """An ``on_evaluation`` hook that raises after the ``n``-th evaluation not replayed (a killed run)."""

    def hook(idx, batch, outcome):
        if outcome.source != "replay":
            seen.append(idx)
            if len(seen) == n:
                raise _Stop

    return hook


def test_a_killed_run_of_lockstep_starts_resumes_from_its_checkpoint_exactly(tmp_path):
    prob, _ = _duffing()
    ref = mc.calibrate(prob, Auto(seed=2, batch_size=8), max_evals=120)
    seen: list[int] = []
    hook = _stop_after(45, seen)  # inside the polishing, between rounds of several starts

    from mechcalib.storage import RunStore

    with RunStore(tmp_path / "r.db") as store:
        with pytest.raises(_Stop):
            mc.calibrate(prob, Auto(seed=2, batch_size=8), max_evals=120, store=store, run_name="r", on_evaluation=hook)
        res = mc.calibrate(prob, Auto(batch_size=8), max_evals=120, store=store, run_name="r")
    assert res.n_simulated == res.n_evals - len(seen)  # no stored evaluation simulated again
    np.testing.assert_array_equal(res.history.losses, ref.history.losses)
    assert res.choices == ref.choices


def test_with_a_batch_the_starts_far_behind_the_best_follow_secant_models_at_one_simulation_a_round():
    prob, truth = _duffing()
    every = mc.calibrate(prob, Auto(seed=1, batch_size=32, lead=math.inf), max_evals=150)
    led = mc.calibrate(prob, Auto(seed=1, batch_size=32), max_evals=150)  # lead = 2
    polish = [next(c["at_eval"] for c in r.choices if c["choice"] == "polish") for r in (every, led)]
    sizes = [np.bincount(r.history.batch[r0:]).tolist() for r, r0 in zip((every, led), polish, strict=True)]
    sizes = [[n for n in s if n] for s in sizes]
    # every start by differences: each round three trial steps, each with its Jacobian (d = 3) asked ahead
    assert set(sizes[0][1:]) == {12}, sizes[0]
    # led: once two starts are more than twice the best's loss, they ask their trial steps alone (4 + 1 + 1)
    assert 6 in sizes[1], sizes[1]
    for r in (every, led):
        assert r.stop_reason == "converged"
        assert max(abs(r.best_params[k] - v) / abs(v) for k, v in truth.items()) < 1e-3
    # measured (seed 1): the target in 6 rounds either way; 118 simulations in all by differences, 90 led
    assert _rounds_to(led, truth, 32) <= _rounds_to(every, truth, 32)
    assert led.n_evals < 0.85 * every.n_evals, (led.n_evals, every.n_evals)


def test_a_lockstep_round_asks_the_jacobian_ahead_only_for_the_starts_within_lead_of_the_best():
    """The rule itself, on a curved two-residual problem driven through :class:`Lockstep`: after each round,
    a start's trial step comes with its difference points exactly when its loss is within ``lead`` of the best."""
    from mechcalib.optimizers.differences import fd_points
    from mechcalib.optimizers.least_squares import LeastSquares
    from mechcalib.optimizers.lockstep import Lockstep

    def residuals(u):
        return np.array([4.0 * (u[1] - u[0] ** 2), 1.0 - 1.6 * u[0], 2.0 * (u[1] - u[0] ** 2)])

    starts = [np.array([0.3, 0.8]), np.array([0.9, 0.1]), np.array([0.15, 0.45])]
    lock = Lockstep(dim=2, method="trf", fd_step=1e-6, starts=starts, width=3, batch_size=32, seed=0,
                    options={"secant": True}, start_type=LeastSquares, lead=2.0)  # fmt: skip
    memo: dict = {}
    checked = {True: 0, False: 0}
    for _ in range(60):
        while lock.advance(memo):
            pass
        if not lock.requests:
            break
        U = lock.batch(memo, math.inf)
        asked = {p.tobytes() for p in U}
        lows = [min(sub._loss.values(), default=math.inf) for sub in lock.active]
        for sub, req, low in zip(lock.active, lock.requests, lows, strict=True):
            assert sub.exact == (low <= 2.0 * min(lows))
            if req.shape[0] == 1:
                ahead = {p.tobytes() for p in fd_points(req[0], 1e-6, False)}
                assert (ahead <= asked) == sub.exact
                checked[sub.exact] += 1
        for u in U:
            r = residuals(u)
            memo[u.tobytes()] = (float(r @ r), r)
    assert checked[True] > 0 and checked[False] > 0, checked  # both kinds of start met
    best = min(f for f, _ in lock.ends)
    assert best < 1e-12  # the zero-residual point (0.625, 0.390625) is reached


def test_a_start_told_cap_points_without_ending_is_cut_at_its_best_and_the_next_begins():
    from mechcalib.optimizers.least_squares import LeastSquares
    from mechcalib.optimizers.lockstep import Lockstep

    def residuals(u):
        return np.array([4.0 * (u[1] - u[0] ** 2), 1.0 - 1.6 * u[0], 2.0 * (u[1] - u[0] ** 2)])

    def drive(cap):
        lock = Lockstep(dim=2, method="trf", fd_step=1e-6, starts=[np.array([0.05, 0.95]), np.array([0.6, 0.4])],
                        width=1, batch_size=1, seed=0, restart=False, start_type=LeastSquares, cap=cap)  # fmt: skip
        memo: dict = {}
        while True:
            while lock.advance(memo):
                pass
            if not lock.requests:
                return lock, memo
            for u in lock.batch(memo, math.inf):
                r = residuals(u)
                memo[u.tobytes()] = (float(r @ r), r)

    whole, _ = drive(0)
    cut, memo = drive(9)
    assert whole.ends[0][1] and not cut.ends[0][1]  # the first start met scipy's tolerances; cut, it did not
    assert cut.ends[0][0] > whole.ends[0][0]  # cut before its end, ...
    losses = [f for f, _ in memo.values()]  # in the order asked (one slot: nothing asked ahead)
    assert cut.ends[0][0] in (min(losses[:9]), min(losses[:10]))  # ... at its best point (a batch may pass 9)
    assert cut.n_started == 2 and len(cut.ends) == 2  # the second start ran ...
    assert cut.ends[1][0] < 1e-4  # ... near the zero-residual point within its own 9 points


def test_a_killed_run_with_starts_led_and_trailing_resumes_exactly(tmp_path):
    prob, _ = _duffing()
    ref = mc.calibrate(prob, Auto(seed=1, batch_size=32), max_evals=150)
    assert 6 in np.bincount(ref.history.batch).tolist()  # trailing starts asked their trial steps alone
    seen: list[int] = []
    hook = _stop_after(31, seen)  # after the 15 + 9 + 10 + 12 + 12 of design, check and first rounds: inside
    # the rounds where two starts trail, mid-batch

    from mechcalib.storage import RunStore

    with RunStore(tmp_path / "r.db") as store:
        with pytest.raises(_Stop):
            mc.calibrate(
                prob, Auto(seed=1, batch_size=32), max_evals=150, store=store, run_name="r", on_evaluation=hook
            )
        res = mc.calibrate(prob, Auto(batch_size=32), max_evals=150, store=store, run_name="r")
    assert res.n_simulated == res.n_evals - len(seen)
    np.testing.assert_array_equal(res.history.losses, ref.history.losses)
    np.testing.assert_array_equal(res.history.batch, ref.history.batch)
    assert res.choices == ref.choices


def test_lead_below_one_is_refused():
    with pytest.raises(SettingError, match="lead must lie in"):
        Auto(lead=0.5)


def test_the_cmaes_fallback_fills_the_batch_with_its_population():
    noise = np.random.default_rng(0)

    def noisy(U):  # a stochastic simulator: new noise at every evaluation
        R = np.column_stack([U[:, 0] - 0.3, 2.0 * (U[:, 1] - 0.6)])
        return R + 1e-3 * noise.standard_normal(R.shape)

    def drive(opt, n):
        opt.set_budget(n)
        opt.setup(2)
        sizes = []
        while opt.n_evals < n - 16 and not opt.converged:
            U = opt.ask()
            sizes.append(len(U))
            R = noisy(U)
            opt.tell(U, np.sum(R**2, axis=1), residuals=R)
        return sizes

    wide = Auto(seed=0, batch_size=16)
    sizes = drive(wide, 400)
    rec = next(c for c in wide.choices if c["choice"] == "cmaes")
    assert rec["popsize"] == 16 and set(sizes[-3:]) == {16}  # the generations fill the 16 workers
    one = Auto(seed=0)
    drive(one, 400)
    assert "popsize" not in next(c for c in one.choices if c["choice"] == "cmaes")  # pycma's default
    small = Auto(seed=0, batch_size=16)
    drive(small, 60)  # at most a tenth of what is left: the default population
    assert "popsize" not in next(c for c in small.choices if c["choice"] == "cmaes")


def test_with_a_batch_the_design_is_one_round_and_the_cmaes_generations_inject_a_model_optimum():
    assert Auto(batch_size=32).design_size(3) == 10  # no budget: the plain rule, max(2 d + 2, 10)
    opt = Auto(batch_size=32)
    opt.set_budget(1800)
    assert opt.design_size(3) == 32  # a tenth of the budget is 180: one round of 32
    opt.set_budget(60)
    assert opt.design_size(3) == 8  # a tenth is 6: at least 2 d + 2
    one = Auto()
    one.set_budget(1800)
    assert one.design_size(3) == 180  # one worker: a tenth of the budget

    noise = np.random.default_rng(0)

    def rough(U):  # a stochastic simulator: new noise at every evaluation, so CMA-ES runs
        D = U - np.array([0.62, 0.35])
        R = np.column_stack([D[:, 0], 3.0 * D[:, 1]])
        return R + 1e-3 * noise.standard_normal(R.shape)

    def drive(opt, n):
        opt.set_budget(n)
        opt.setup(2)
        while opt.n_evals < n - 16 and not opt.converged:
            U = opt.ask()
            R = rough(U)
            opt.tell(U, np.sum(R**2, axis=1), residuals=R)
        return opt

    wide = drive(Auto(seed=1, batch_size=16), 400)
    rec = next(c for c in wide.choices if c["choice"] == "cmaes")
    assert rec["model_injection"] is True and "quadratic model" in rec["reason"]
    assert rec["mu_ratio"] == 0.25 and wide._sub.parents == 4  # a batch population: a quarter parents
    assert wide._sub._model.count > wide.n_evals - rec["at_eval"]  # the design and the check started the model
    off = drive(Auto(seed=1, batch_size=16, cmaes_model=False), 400)
    assert "model_injection" not in next(c for c in off.choices if c["choice"] == "cmaes")
    assert off._sub._model is None
    one = drive(Auto(seed=1), 400)  # one worker: pycma's default population, no injection
    assert "model_injection" not in next(c for c in one.choices if c["choice"] == "cmaes")
    assert "mu_ratio" not in next(c for c in one.choices if c["choice"] == "cmaes") and one._sub.mu_ratio is None


@pytest.mark.parametrize(("name", "bad"), [("cmaes_model", "yes"), ("cmaes_model", 1), ("cmaes_model", None),
                                         ("cmaes_mu_ratio", 0.0), ("cmaes_mu_ratio", 0.75), ("cmaes_mu_ratio", None)])  # fmt: skip
def test_cmaes_settings_are_checked(name, bad):
    with pytest.raises(SettingError, match=name) as e:
        Auto(**{name: bad})
    assert e.value.name == name


def test_a_killed_run_in_the_cmaes_phase_with_injection_resumes_exactly(tmp_path):
    def rough(X):
        return np.sum((X - 0.4) ** 2, axis=1) + 1e-3 * np.sum(np.floor(X * 50.0), axis=1)

    from mechcalib.calibrate import minimize
    from mechcalib.storage import RunStore

    lo, hi = [-1.0] * 3, [1.0] * 3
    ref = minimize(rough, lo, hi, Auto(seed=5, batch_size=16), max_evals=300)
    assert any(c["choice"] == "cmaes" and c.get("model_injection") for c in ref.choices)
    seen: list[int] = []
    hook = _stop_after(150, seen)  # inside the CMA-ES generations

    with RunStore(tmp_path / "r.db") as store:
        with pytest.raises(_Stop):
            minimize(rough, lo, hi, Auto(seed=5, batch_size=16), max_evals=300, store=store, run_name="r",
                     on_evaluation=hook)  # fmt: skip
        res = minimize(rough, lo, hi, Auto(batch_size=16), max_evals=300, store=store, run_name="r")
    assert res.n_simulated == res.n_evals - len(seen)
    np.testing.assert_array_equal(res.history.losses, ref.history.losses)
    assert res.choices == ref.choices


def test_more_workers_than_the_budget_is_refused_before_a_folder_is_made(tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text(CONFIG)  # max_evals = 60
    with pytest.raises(ConfigurationError, match=r"batch_size=64 \(the evaluator's workers\).*max_evals=60.*--workers"):
        run_config(cfg, tmp_path / "r", workers=64)
    assert not (tmp_path / "r").exists()
