"""One method concept: the surrogate strategies and an inverse network fit a core Dataset and identify an
Identification; the Dataset from a run store, through a file and split; a calibration's Result as an
Identification. Everything on the linear model y = a x + b with tiny sizes."""

from __future__ import annotations

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.core.data import Curve, Experiment
from mechcalib.core.dataset import Dataset
from mechcalib.core.identification import Identification, Method, Provenance
from mechcalib.errors import DataError
from mechcalib.models import get_model
from mechcalib.optimizers import LatinHypercube
from mechcalib.storage import RunStore
from mechcalib.surrogates import (
    CVSettings,
    Direct,
    ErrorF,
    ForwardComplex,
    ForwardSplit,
    InverseExpert,
    InversePCA,
    lhs_md,
)

TINY = CVSettings(V=2, J=5, K=60, W=1, h_max=2)
N_POINTS = 12


def linear_dataset(n: int = 16, seed: int = 0, shift: float = 0.0) -> Dataset:
    """``n`` Latin-hypercube sets of the linear model, channel ``y`` on ``x = shift ... shift + 11``."""
    model = get_model("linear")
    U = lhs_md(n, 2, iterations=50, seed=seed)
    theta = model.space.from_unit(U)
    sims = model.simulate(theta, {"n_points": N_POINTS})
    Y = np.vstack([s["y"].y for s in sims])
    return Dataset(
        theta,
        {"y": Y},
        names=model.space.free_names,
        abscissa={"y": sims[0]["y"].x + shift},
        space=model.space,
        unit=U,
        meta={"model": "linear"},
    )


@pytest.fixture(scope="module")
def data() -> Dataset:
    return linear_dataset()


STRATEGIES = {
    "forward_split": lambda: ForwardSplit(steps=(1, 6, 12), settings=TINY, max_evals=120),
    "forward_complex": lambda: ForwardComplex(step=4, settings=TINY, max_evals=120),
    "error_f": lambda: ErrorF("F1", settings=TINY, max_evals=120),
    "inverse_expert": lambda: InverseExpert(steps=(1, 12), settings=TINY),
    "inverse_pca": lambda: InversePCA(2, settings=TINY),
    "direct": lambda: Direct(get_model("linear"), channel="y", conditions={"n_points": N_POINTS}, max_evals=120),
}


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_each_strategy_fits_a_dataset_and_identifies(name, data):
    strategy = STRATEGIES[name]()
    assert isinstance(strategy, Method)
    fit_on = linear_dataset(shift=1.0) if name == "forward_complex" else data  # log t needs t > 0
    assert strategy.fit(fit_on, seed=0) is strategy
    target = fit_on.curves()[3]
    idn = strategy.identify(target, seed=1)
    assert isinstance(idn, Identification)
    assert idn.names == ("a", "b") and idn.values.shape == (2,) and set(idn.parameters) == {"a", "b"}
    assert idn.method == name
    assert idn.provenance.n_samples == 16 and idn.provenance.dataset == fit_on.fingerprint()
    # the physical values are the unit-cube coordinates mapped through the model's space
    np.testing.assert_allclose(idn.values, get_model("linear").space.from_unit(idn.p[None])[0])
    if name.startswith("inverse"):
        assert idn.loss is None and idn.n_evals == 0
    else:
        assert np.isfinite(idn.loss) and idn.n_evals > 0
    # a Curve or an Experiment identifies the same as the array on the grid
    curve = Curve(fit_on.grid(), target)
    same = strategy.identify(Experiment({"y": curve}), seed=1)
    np.testing.assert_allclose(same.values, idn.values)


def test_inverse_network_fits_a_dataset_and_identifies(data):
    torch = pytest.importorskip("torch")
    from mechcalib.inverse import InverseCalibrator, TrainConfig

    old = torch.get_num_threads()
    try:
        cal = InverseCalibrator(
            "GRU", TrainConfig(epochs=2, batch_size=8, lr=3e-3, val_fraction=0.0, threads=1), hidden=4
        )
        assert isinstance(cal, Method)
        assert cal.fit(data, seed=3) is cal
        assert cal.train_config.seed == 3 and cal.features == ("y.y",) and cal.length == N_POINTS
        idn = cal.identify(data.curves()[0])
        assert isinstance(idn, Identification)
        assert idn.names == ("a", "b") and idn.loss is None and idn.method == "GRU"
        assert idn.provenance.dataset == data.fingerprint() and idn.provenance.n_samples == 16
        np.testing.assert_array_equal(idn.values, cal.predict(data.curves()[0][:, None]))
        # an experiment is resampled like the training data (here: already on the training length)
        exp = Experiment({"y": Curve(data.grid(), data.curves()[0])})
        np.testing.assert_allclose(cal.identify(exp).values, idn.values, rtol=1e-6)
    finally:
        torch.set_num_threads(old)


def test_dataset_round_trip_through_npz(data, tmp_path):
    path = data.save(tmp_path / "d.npz")
    back = Dataset.load(path)
    assert back.names == data.names and back.keys == data.keys and back.meta == data.meta
    np.testing.assert_array_equal(back.theta, data.theta)
    np.testing.assert_array_equal(back.curves("y"), data.curves("y"))
    np.testing.assert_array_equal(back.grid("y"), data.grid("y"))
    np.testing.assert_array_equal(back.unit(), data.unit())
    assert back.fingerprint() == data.fingerprint()


def test_split_subset_and_select(data):
    tr, va = data.split(0.25, seed=0)
    assert (len(tr), len(va)) == (12, 4)
    assert sorted(map(tuple, np.vstack([tr.theta, va.theta]))) == sorted(map(tuple, data.theta))
    np.testing.assert_array_equal(tr.unit(), data.unit()[np.isin(data.theta[:, 0], tr.theta[:, 0])])
    b = data.select(["b"])
    assert b.names == ("b",) and b.theta.shape == (16, 1)
    with pytest.raises(DataError, match="unknown parameter 'c'"):
        data.select(["c"])
    with pytest.raises(DataError, match="response 'y' must have shape"):
        Dataset(np.zeros((3, 2)), {"y": np.zeros((4, 5))})


def test_dataset_from_a_store_of_a_calibration(tmp_path):
    model = get_model("linear")
    exp = mc.experiment_from_model(model, {"a": 0.2, "b": 5.0}, conditions={"n_points": N_POINTS})
    prob = mc.Problem(model, exp, mc.L2(), keep_responses=True)
    with RunStore(tmp_path / "runs.sqlite") as store:
        res = mc.calibrate(prob, LatinHypercube(batch_size=10, seed=0), max_evals=10, store=store, run_name="lhs")
        ds = Dataset.from_store(store, "lhs")
        seq = Dataset.from_store(store, "lhs", length=6)
    assert len(ds) == 10 and ds.names == ("a", "b") and ds.keys == ("y",) and ds.meta["run"] == "lhs"
    np.testing.assert_array_equal(ds.grid(), np.arange(N_POINTS, dtype=float))
    np.testing.assert_allclose(ds.curves(), ds.theta[:, :1] * ds.grid()[None] + ds.theta[:, 1:])
    np.testing.assert_allclose(ds.from_unit(ds.unit()), ds.theta)
    assert seq.keys == ("y.y",) and seq.curves().shape == (10, 6)
    # the store's dataset trains a strategy like any other
    idn = InverseExpert(steps=(1, N_POINTS), settings=TINY).fit(ds, seed=0).identify(exp)
    assert idn.names == ("a", "b") and res.n_evals == 10


def test_identification_from_a_calibration_result():
    model = get_model("linear")
    exp = mc.experiment_from_model(model, {"a": 0.2, "b": 5.0}, conditions={"n_points": N_POINTS})
    prob = mc.Problem(model, exp, mc.L2())
    res = mc.calibrate(prob, LatinHypercube(batch_size=8, seed=1), max_evals=8)
    idn = Identification.from_result(res)
    assert idn.parameters == res.best_params and idn.loss == res.best_loss and idn.n_evals == 8
    assert idn.method == res.optimizer and idn.provenance.settings == res.settings and idn.unit is None
    free = Identification.from_result(res, prob.space)
    np.testing.assert_array_equal(free.values, res.best_x)
    np.testing.assert_allclose(free.unit, prob.space.to_unit(res.best_x[None])[0])
    assert free.params(prob.space) == pytest.approx(res.best_params)
    with pytest.raises(DataError, match="one value per name"):
        Identification(names=("a",), values=[1.0, 2.0], provenance=Provenance(method="x"))
