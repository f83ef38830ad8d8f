"""The model contract, checked for every registered model (and an external simulator) on a cheap condition set
each: a batch equals its sets simulated one by one, a bad set fails alone, the model pickles and the copy
simulates identically, the presets lie inside the space, the channel metadata are those of the curves, and
bad conditions are refused with a clear ConfigurationError. Also the two hook collisions the declared
contract removed: a dataset generated from an external simulator, and a Direct identification of a
hysteretic model."""

from __future__ import annotations

import pickle
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.core.data import Curve
from mechcalib.core.model import Model, SimulationFailure
from mechcalib.errors import ConfigurationError
from mechcalib.models import MODELS, get_model

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "external_arch"


@dataclass(frozen=True)
class Case:
    """A cheap condition set of one model, its constructor options, and the conditions it must refuse
    (``{conditions: text the error contains}``)."""

    conditions: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    bad: tuple[tuple[Mapping[str, Any], str], ...] = ()
    n_random: int = 2  # random sets in the batch besides the default preset (hydration: past its threaded kernel)
    #: presets that lie outside the default search box on purpose, with the reason
    presets_outside: Mapping[str, str] = field(default_factory=dict)


HUGE_RECORD = "GiB"  # a memory estimate refuses the allocation before it is made
_SDOF_BAD = (
    ({"fs": -1.0}, "'fs' must be a finite number > 0"),
    ({"t_end": float("nan")}, "'t_end'"),
    ({"amplitude": "5"}, "'amplitude' must be a finite number"),
    ({"fs": 1e9, "t_end": 30.0}, HUGE_RECORD),
    ({"force": {"t": [0.0, 2.0, 1.0], "force": [0.0, 1.0, 0.0]}}, "increase strictly"),
)
_SDOF = Case({"t_end": 2.0, "fs": 100.0}, bad=_SDOF_BAD)

CASES: dict[str, Case] = {
    "duffing": Case(
        {"t_end": 3.0, "fs": 10.0},
        bad=(
            ({"m": 0.0}, "'m' must be a finite number > 0"),
            ({"substeps": 2.5}, "'substeps' must be an integer"),
            ({"fs": 1e9, "t_end": 30.0}, HUGE_RECORD),
            ({"omega": float("inf")}, "'omega'"),
        ),
    ),
    "linear": Case(
        {"n_points": 20},
        bad=(({"n_points": 1}, "'n_points' must be an integer >= 2"), ({"n_points": "20"}, "'n_points'")),
    ),
    "masonry_arch": Case(
        {"max_displacement": 0.2, "n_samples": 5},
        bad=(
            ({"velocity": -1.0}, "'velocity' must be a finite number > 0"),
            ({"dt_factor": 0.8}, "dt_factor"),
            ({"eq_tol": float("nan")}, "'eq_tol'"),
            ({"n_samples": 10**12}, HUGE_RECORD),
        ),
    ),
    "hydration": Case(
        {"n_steps": 60},
        n_random=70,
        bad=(
            ({"t_min": 10.0, "t_max": 1.0}, "t_min < t_max"),
            ({"T": float("nan")}, "'T'"),
            ({"dalpha": 0.0}, "'dalpha'"),
            ({"n_steps": 10**13}, HUGE_RECORD),
        ),
        presets_outside={"cost_tu1404": "the COST TU1404 peer study's values lie outside Table 1's box"},
    ),
    "sdof_bilinear_kinematic": _SDOF,
    "sdof_bilinear_equal": _SDOF,
    "sdof_boucwen": _SDOF,
    "sdof_degradation": _SDOF,
    "sdof_pinching": _SDOF,
    "mdof_frame": Case({"t_end": 0.5}, bad=_SDOF_BAD),
    "hysteresis_protocol": Case(
        {"protocol": {"amplitudes": [0.5, 1.0, 2.0], "cycles": 1, "points_per_cycle": 16}},
        bad=(
            ({"displacement": [0.0, float("nan"), 1.0]}, "must be finite"),
            ({"protocol": {"amplitudes": [1.0], "cycle": 2}}, "unknown key(s)"),
            ({"fs": 0.0}, "'fs' must be a finite number > 0"),
            ({"cycle_band": 2.0}, "'cycle_band'"),
        ),
    ),
    "eepa_triaxial": Case(
        {"E_scale": 0.01, "t_load": 0.004, "t_end": 0.006, "n_out": 7},
        options={"specimen": "tiny"},
        n_random=1,
        bad=(
            ({"t_load": 0.1}, "t_load"),
            ({"E_scale": -1.0}, "'E_scale' must be a finite number > 0"),
            ({"fs": 1e12}, HUGE_RECORD),
            ({"dt_safety": 2.0}, "'dt_safety'"),
        ),
    ),
    "external_arch": Case(
        {"w_max": 2.0}, bad=(({"w_max": float("nan")}, "finite number"), ({"w_max": "2; rm -rf ~"}, "finite number"))
    ),
}
NAMES = [*MODELS, "external_arch"]


def external_arch(tmp: Path) -> Model:
    """The external-simulator example (a Python stand-in for 3DEC) with declared units."""
    from mechcalib.models.external import CsvOutput, ExternalModel

    space = mc.ParameterSpace(
        [
            mc.Parameter("kn", 1e8, 1e10, scale="log"),
            mc.Parameter("ks", 1e8, 1e10, scale="log"),
            mc.Parameter("phi", 25.0, 45.0),
        ]
    )
    return ExternalModel(
        space,
        ["{python}", "arch_sim.py", "params.txt", "result.csv"],
        templates={"params.txt": EXAMPLE / "params.template"},
        files=[EXAMPLE / "arch_sim.py"],
        outputs={"force": CsvOutput("result.csv", "displacement", "force", x_unit="mm", y_unit="kN")},
        conditions={"w_max": 4.0},
        workdir_root=tmp / "work",
        timeout=60,
        name="arch",
        keep="none",
        presets={"default": {"kn": 4e9, "ks": 1.6e9, "phi": 30.5}},
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Callable[[str], Model]:
    cache: dict[str, Model] = {}

    def make(name: str) -> Model:
        if name not in cache:
            tmp = tmp_path_factory.mktemp(name)
            if name == "external_arch":
                cache[name] = external_arch(tmp)
            else:
                opts = dict(CASES[name].options)
                if name == "eepa_triaxial":
                    opts["cache_dir"] = tmp / "granular_cache"
                cache[name] = get_model(name, **opts)
        return cache[name]

    return make


def batch_of(model: Model, case: Case) -> np.ndarray:
    """The default preset and ``n_random`` seeded sets inside the space's bounds."""
    rng = np.random.default_rng(7)
    rand = model.space.full_from_unit(rng.uniform(0.05, 0.95, (case.n_random, model.space.dim)))
    return np.vstack([model.full_vector()[None], rand])


def assert_same(a: Mapping[str, Curve], b: Mapping[str, Curve]) -> None:
    assert list(a) == list(b)
    for ch in a:
        for part in ("x", "y", "t"):
            u, v = getattr(a[ch], part), getattr(b[ch], part)
            assert (u is None) == (v is None), (ch, part)
            if u is not None:
                assert np.array_equal(u, v), f"channel {ch!r}: {part} differs"


@pytest.fixture(scope="module")
def results(built) -> Callable[[str], dict[str, Any]]:
    """Per model: the batch (the default, a bad set second, the random sets) and each good set alone."""
    cache: dict[str, dict[str, Any]] = {}

    def get(name: str) -> dict[str, Any]:
        if name not in cache:
            model, case = built(name), CASES[name]
            good = batch_of(model, case)
            bad = model.full_vector()
            bad[0] = np.nan  # a set no model can simulate
            theta = np.vstack([good[:1], bad[None], good[1:]])
            batch = model.simulate(theta, case.conditions)
            singles = {i: model.simulate(theta[i : i + 1], case.conditions)[0] for i in (0, 2, theta.shape[0] - 1)}
            cache[name] = {"theta": theta, "batch": batch, "singles": singles}
        return cache[name]

    return get


def test_every_registered_model_has_a_case():
    assert set(MODELS) <= set(CASES), f"add a cheap condition set for {sorted(set(MODELS) - set(CASES))}"


@pytest.mark.parametrize("name", NAMES)
def test_batch_equals_one_by_one_and_a_bad_set_fails_alone(name, results):
    r = results(name)
    batch, theta = r["batch"], r["theta"]
    assert len(batch) == theta.shape[0]
    assert isinstance(batch[1], SimulationFailure) and batch[1].message
    assert not any(isinstance(b, SimulationFailure) for i, b in enumerate(batch) if i != 1), [
        b.message for b in batch if isinstance(b, SimulationFailure)
    ]
    for i, one in r["singles"].items():
        assert not isinstance(one, SimulationFailure), one
        assert_same(batch[i], one)
    assert not np.array_equal(batch[0][next(iter(batch[0]))].y, batch[2][next(iter(batch[2]))].y)


@pytest.mark.parametrize("name", NAMES)
def test_pickled_model_simulates_identically(name, built, results):
    model, case = built(name), CASES[name]
    clone = pickle.loads(pickle.dumps(model))
    assert type(clone) is type(model) and clone.space.names == model.space.names
    (again,) = clone.simulate(results(name)["theta"][:1], case.conditions)
    assert_same(again, results(name)["singles"][0])


@pytest.mark.parametrize("name", NAMES)
def test_presets_lie_inside_the_space(name, built):
    model = built(name)
    assert "default" in model.presets
    for preset in model.presets:
        v = model.full_vector(preset=preset)  # every parameter has a value
        if preset in CASES[name].presets_outside:
            continue
        outside = [
            (p.name, float(x), (p.lower, p.upper))
            for p, x in zip(model.space, v, strict=True)
            if not p.lower <= x <= p.upper
        ]
        assert not outside, f"preset {preset!r}: {outside}"


@pytest.mark.parametrize("name", NAMES)
def test_channel_metadata_are_those_of_the_curves(name, built, results):
    model, resp = built(name), results(name)["batch"][0]
    assert list(resp) == list(model.channel_names)
    for ch in model.channels:
        c = resp[ch.name]
        assert (c.x_name, c.y_name, c.x_unit, c.y_unit) == (ch.x_name, ch.y_name, ch.x_unit, ch.y_unit), ch.name


@pytest.mark.parametrize("name", NAMES)
def test_bad_conditions_are_refused_with_a_clear_error(name, built):
    model, case = built(name), CASES[name]
    ok = model.validate_conditions(case.conditions)
    assert set(ok) == set(model.default_conditions)
    with pytest.raises(ConfigurationError, match="no condition 'no_such_condition'"):
        model.validate_conditions({"no_such_condition": 1.0})
    for cond, text in case.bad:
        with pytest.raises(ConfigurationError, match=text.replace("(", r"\(").replace(")", r"\)")):
            model.validate_conditions({**case.conditions, **cond})
    cond, text = case.bad[0]
    with pytest.raises(ConfigurationError):  # simulate refuses them too, before any work
        model.simulate(model.full_vector()[None], {**case.conditions, **cond})


def test_memory_estimate_names_the_size_and_the_fix(built):
    with pytest.raises(ConfigurationError, match=r"about \d.* GiB.*lower fs or t_end"):
        built("sdof_boucwen").validate_conditions({"fs": 1e9, "t_end": 30.0})


def test_problem_refuses_bad_experiment_conditions_when_built():
    m = get_model("duffing")
    exp = mc.experiment_from_model(m, conditions={"t_end": 3.0, "fs": 10.0})
    exp = mc.Experiment(dict(exp.channels), conditions={"t_end": -3.0}, name="bad")
    with pytest.raises(ConfigurationError, match="'t_end' must be a finite number > 0"):
        mc.Problem(m, exp, mc.F1())


# -- the two hook collisions ------------------------------------------------------------------------------
def test_dataset_from_an_external_simulator(tmp_path):
    """The dataset generator builds shared state through ``prepare_shared(conditions)``; it used to call
    ``prepare(conditions)``, which an external model defines as ``prepare(values, conditions)``, so the
    conditions were taken for parameter values and the generation failed."""
    from mechcalib.inverse.data import generate_dataset

    model = external_arch(tmp_path)
    g = generate_dataset(model, 3, tmp_path / "s.sqlite", seed=0, conditions={"w_max": 2.0}, length=9)
    assert g.complete and g.failed == 0 and g.simulated == 3
    assert g.dataset.X.shape == (3, 9, 1) and g.dataset.names == ("kn", "ks", "phi")


def test_direct_identification_of_a_hysteretic_model():
    """``Direct`` takes the fast path only through ``channel_array``; it used to call any ``response`` method,
    and every hysteretic model has ``response(res, i)`` for another purpose, so each evaluation raised a
    TypeError, counted as a failed simulation, and the identification ended at ``inf`` without an error."""
    from mechcalib.optimizers import RandomSearch
    from mechcalib.surrogates.strategies import Direct

    model = get_model("sdof_bilinear_kinematic")
    cond = {"t_end": 2.0, "fs": 50.0}
    target = mc.experiment_from_model(model, conditions=cond)["acceleration"]
    d = Direct(
        model,
        channel="acceleration",
        conditions=cond,
        max_evals=20,
        optimizer=lambda rng: RandomSearch(batch_size=10, seed=rng),
    )
    res = d.identify_curve(target, seed=0)
    assert res.n_evals == 20 and np.isfinite(res.loss) and res.loss > 0


def test_direct_uses_the_channel_array_of_a_model_that_has_one():
    """The hydration model's ``channel_array`` (the fast path) gives the losses of the curve path exactly."""
    from mechcalib.optimizers import RandomSearch
    from mechcalib.surrogates.strategies import Direct

    model = get_model("hydration")
    cond = {"n_steps": 40}
    assert model.channel_array(np.empty((0, len(model.space))), "alpha", None, cond).shape == (0, 40)
    assert get_model("sdof_boucwen").channel_array(np.empty((0, 7)), "acceleration") is None
    target = mc.experiment_from_model(model, conditions=cond)["alpha"]
    make = lambda rng: RandomSearch(batch_size=8, seed=rng)
    fast = Direct(model, channel="alpha", conditions=cond, max_evals=16, optimizer=make).identify_curve(target, seed=1)
    assert np.isfinite(fast.loss)
    theta = model.space.to_full(model.space.from_unit(fast.p[None]))
    direct = np.sum((model.channel_array(theta, "alpha", target.x, cond) - target.y) ** 2)
    assert direct == pytest.approx(fast.loss, rel=1e-12)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
