"""mechcalib.inverse without torch: Appendix A metrics, section 4.2 error measures, GDR-Net labels (eqs. 1-3),
sequence datasets, scalers and splits."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from mechcalib import Problem, calibrate, experiment_from_model
from mechcalib.errors import DataError
from mechcalib.inverse import (
    ParameterScaler,
    SequenceDataset,
    SequenceScaler,
    adaptive_difference,
    cross_correlation,
    from_model,
    from_npz,
    gamma_label,
    mae,
    medae,
    mse,
    pearson,
    quality_labels,
    quantile_loss,
    r2,
    read_sequence_csv,
    regression_metrics,
    resample_on_progress,
    rmse,
    standard_error,
    systematic_error,
    train_val_split,
)
from mechcalib.inverse.metrics import taylor_correction
from mechcalib.models import get_model
from mechcalib.objectives import OverlapRSS
from mechcalib.optimizers.random_search import RandomSearch
from mechcalib.storage import RunStore


# -- Appendix A ----------------------------------------------------------------------------------------
def test_metrics_against_hand_computed_values():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    p = np.array([1.5, 2.0, 2.0, 5.0])  # residuals y - p = -0.5, 0, 1, -1
    assert mse(y, p) == pytest.approx(2.25 / 4)
    assert mae(y, p) == pytest.approx(2.5 / 4)
    assert rmse(y, p) == pytest.approx(0.75)
    assert medae(y, p) == pytest.approx(0.75)  # median of 0.5, 0, 1, 1
    # pinball at q = 0.75: 0.125, 0, 0.75, 0.25
    assert quantile_loss(y, p, 0.75) == pytest.approx(1.125 / 4)
    assert quantile_loss(y, p, 0.25) == pytest.approx((0.375 + 0 + 0.25 + 0.75) / 4)
    assert r2(y, p) == pytest.approx(1 - 2.25 / 5.0)
    m = regression_metrics(y, p)
    assert list(m) == ["MSE", "MAE", "RMSE", "MedAE", "QLoss", "R2"]
    assert m["QLoss"] == pytest.approx(0.28125) and m["R2"] == pytest.approx(0.55)


def test_r2_multioutput_and_degenerate_columns():
    Y = np.array([[0.0, 1.0], [1.0, 3.0], [2.0, 5.0]])
    P = np.array([[0.0, 2.0], [1.0, 3.0], [2.0, 4.0]])  # column 0 exact; column 1 SSres 2, SStot 8
    assert r2(Y, P) == pytest.approx((1.0 + 0.75) / 2)
    assert r2(Y, P, "pooled") == pytest.approx(1 - 2 / (2 + 8))
    assert r2(Y, Y.mean(axis=0) + 0 * Y) == pytest.approx(0.0)  # predicting the mean scores 0
    const = np.ones((3, 1))
    assert r2(const, const) == 1.0 and r2(const, const + 0.1) == 0.0
    assert pearson([1, 2, 3], [2, 4, 6.5]) == pytest.approx(np.corrcoef([1, 2, 3], [2, 4, 6.5])[0, 1])
    with pytest.raises(DataError, match="same shape"):
        mse([1, 2], [1, 2, 3])
    with pytest.raises(DataError, match=r"\(0, 1\)"):
        quantile_loss([1.0], [1.0], 1.5)


# -- section 4.2 ---------------------------------------------------------------------------------------
def test_adaptive_difference_hand_values():
    s = np.array([0.0, 1.0, 3.0])
    f = s**2
    # interior: h = min(1, 2) = 1; f(2) interpolated between (1, 1) and (3, 9) = 5; (5 - f(0)) / 2 = 2.5
    np.testing.assert_allclose(adaptive_difference(f, s), [1.0, 2.5, 4.0])
    # a uniform grid gives the ordinary central difference; a linear function is exact on any grid
    g = np.sin(np.linspace(0, 3, 20))
    np.testing.assert_allclose(adaptive_difference(g), np.gradient(g), atol=1e-15)
    s2 = np.array([0.0, 0.3, 1.0, 1.2, 2.5])
    np.testing.assert_allclose(adaptive_difference(3 * s2 - 1, s2), 3.0)
    two = np.column_stack([g, 2 * g])
    np.testing.assert_allclose(adaptive_difference(two)[:, 1], 2 * np.gradient(g), atol=1e-14)
    with pytest.raises(DataError, match="strictly increasing"):
        adaptive_difference(f, np.array([0.0, 0.0, 1.0]))


def test_systematic_and_standard_error():
    x = np.linspace(0, 1, 11)[:, None] * np.ones((1, 2))
    # a constant offset has zero derivatives: E = |0.3 - e_opt|
    assert systematic_error(x + 0.3, x, 0.1) == pytest.approx(0.2, abs=1e-15)
    # d = n (sample index): D1 = 1, D2 = D3 = 0 -> correction eps
    d = np.arange(11.0)
    np.testing.assert_allclose(taylor_correction(d, eps=1e-3), 1e-3)
    assert systematic_error(d, np.zeros(11), 0.5, eps=1e-3) == pytest.approx(abs(5.0 - 1e-3 - 0.5))
    # residuals [1, -1, 1] and [2, 0], p = 1: sqrt((3 + 4) / ((3 - 1) + (2 - 1)))
    se = standard_error([np.array([1.0, -1.0, 1.0]), np.array([2.0, 0.0])], [np.zeros(3), np.zeros(2)], 1)
    assert se == pytest.approx(math.sqrt(7 / 3))
    assert standard_error(np.array([3.0, 1.0, 2.0]), np.array([3.0, 1.0, 2.0]), 2) == 0.0
    with pytest.raises(DataError, match="more samples"):
        standard_error(np.ones(2), np.zeros(2), 2)


# -- GDR-Net labels (eqs. 1-3) ---------------------------------------------------------------------------
def test_gamma_label_against_hand_cross_correlations():
    X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    E = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    # m = 0 (eq. 3): (1*1 + 2*0 + 3*0 + 4*1 + 5*1 + 6*1) / (2 * 3)
    assert cross_correlation(X, E) == pytest.approx(16 / 6)
    assert gamma_label(X, E) == pytest.approx(1 / (1 + math.exp(-16 / 6)))
    # m = 1: X(0).E(1) + X(1).E(2) = 2 + 7; m = -1: X(1).E(0) + X(2).E(1) = 3 + 6
    assert cross_correlation(X, E, 1) == pytest.approx(9 / 6)
    assert cross_correlation(X, E, -1) == pytest.approx(9 / 6)
    assert cross_correlation(X, E, 3) == 0.0
    eq3 = 1 / (1 + math.exp(-(X[:, 0] @ E[:, 0] + X[:, 1] @ E[:, 1]) / (2 * 3)))
    batch = gamma_label(np.stack([X, -X, E]), E)
    assert batch.shape == (3,) and batch[0] == pytest.approx(eq3)
    assert batch[1] == pytest.approx(1 - eq3)  # sigmoid(-u) = 1 - sigmoid(u)


def test_quality_labels_are_unit_free():
    rng = np.random.default_rng(0)
    E = rng.normal(size=(20, 2))
    S = E[None] + 0.3 * rng.normal(size=(5, 20, 2))
    g = quality_labels(S, E)
    units = np.array([1000.0, 0.01])
    np.testing.assert_allclose(quality_labels(S * units, E * units), g, rtol=1e-12)
    assert quality_labels(E[None], E)[0] == pytest.approx(1 / (1 + math.exp(-1.0)))  # mean of squares / RMS² = 1
    np.testing.assert_allclose(
        quality_labels(S[:, :, 0], E[:, 0]),
        gamma_label(S[:, :, :1] / np.sqrt(np.mean(E[:, 0] ** 2)), E[:, :1] / np.sqrt(np.mean(E[:, 0] ** 2))),
    )


# -- data ----------------------------------------------------------------------------------------------------
def test_resample_scalers_and_split():
    t = np.array([0.0, 0.5, 0.5, 2.0, 4.0])
    v = np.column_stack([3 * t + 1, -t])
    out = resample_on_progress(v, t, 9)
    grid = np.linspace(0, 4, 9)
    np.testing.assert_allclose(out, np.column_stack([3 * grid + 1, -grid]))
    with pytest.raises(DataError, match="non-decreasing"):
        resample_on_progress(v, t[::-1], 9)
    X = np.random.default_rng(1).normal(3.0, 2.0, size=(10, 7, 2))
    sc = SequenceScaler.fit(X)
    Z = sc.transform(X)
    np.testing.assert_allclose(Z.reshape(-1, 2).mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(Z.reshape(-1, 2).std(axis=0), 1)
    np.testing.assert_allclose(SequenceScaler.from_dict(sc.to_dict()).inverse_transform(Z), X)
    ps = ParameterScaler.fit(np.array([[1.0, 5.0], [2.0, 5.0]]), lower=[0.0, 4.0], upper=[4.0, 6.0])
    np.testing.assert_allclose(ps.transform([[2.0, 5.5]]), [[0.5, 0.75]])
    tr, va = train_val_split(50, 0.2, seed=3)
    assert len(va) == 10 and len(tr) == 40 and not set(tr) & set(va) and set(tr) | set(va) == set(range(50))
    np.testing.assert_array_equal(va, train_val_split(50, 0.2, seed=3)[1])


def test_per_step_scaler_and_its_floor():
    """Per time step: every step of every feature gets mean 0 and standard deviation 1 over the samples; a channel
    equal in every sample up to rounding keeps its tiny spread small (floor: 1e-3 of its overall std) instead of
    becoming unit noise."""
    rng = np.random.default_rng(2)
    t = np.linspace(0.0, 1.0, 7)
    force = 100 * np.sin(3 * t)[None, :] * (1 + 0.05 * rng.standard_normal((10, 1)))  # one shape, +-5 % levels
    disp = t[None, :] + 1e-12 * rng.standard_normal((10, 7))  # prescribed, equal up to rounding
    X = np.stack([disp, force], axis=-1)
    sc = SequenceScaler.fit(X, per_step=True)
    assert sc.mean.shape == (7, 2) and sc.std.shape == (7, 2)
    Z = sc.transform(X)
    np.testing.assert_allclose(Z[:, 1:, 1].mean(axis=0), 0, atol=1e-9)
    np.testing.assert_allclose(Z[:, 1:, 1].std(axis=0), 1)
    overall = X[:, :, 0].std()
    np.testing.assert_allclose(sc.std[:, 0], 1e-3 * overall)
    assert np.abs(Z[:, :, 0]).max() < 1e-6
    np.testing.assert_allclose(SequenceScaler.from_dict(sc.to_dict()).inverse_transform(Z), X)
    # per feature, the +-5 % level differences are a small part of the force's spread over time
    assert SequenceScaler.fit(X).transform(X)[:, :, 1].std(axis=0).max() < 0.2
    with pytest.raises(DataError, match="floor"):
        SequenceScaler.fit(X, per_step=True, floor=0.0)


def test_from_model_and_npz_round_trip(tmp_path):
    m = get_model("duffing")
    ds = from_model(m, 12, length=30, seed=2)
    assert ds.X.shape == (12, 30, 2) and ds.features == ("restoring_force.x", "restoring_force.y")
    assert ds.names == ("c", "k", "k3") and np.all((ds.unit() >= 0) & (ds.unit() <= 1))
    # one Latin-hypercube point per stratum of each parameter
    for j in range(3):
        np.testing.assert_array_equal(np.sort(np.floor(ds.unit()[:, j] * 12)), np.arange(12))
    # the loop channel is x(t) and k x + k3 x^3 at 30 equally spaced times of the 0-30 s response
    (resp,) = m.simulate(m.full_vector(dict(zip(ds.names, ds.Y[0], strict=True)))[None])
    c = resp["restoring_force"]
    np.testing.assert_allclose(ds.X[0, :, 0], np.interp(np.linspace(0, 30, 30), c.t, c.x))
    path = ds.save_npz(tmp_path / "d.npz")
    back = from_npz(path, length=30)
    np.testing.assert_allclose(back.X, ds.X)
    np.testing.assert_array_equal(back.Y, ds.Y)
    assert back.features == ds.features and np.array_equal(back.lower, ds.lower)
    hist = from_model(m, 4, features=["displacement", "restoring_force.y"], length=10, seed=0)
    assert hist.features == ("displacement.y", "restoring_force.y")
    assert ds.select(["k3", "c"]).Y.shape == (12, 2)
    with pytest.raises(DataError, match="unknown channel"):
        from_model(m, 4, features=["force"], length=10, seed=0)


def test_from_run_store_export(tmp_path):
    """A dataset exported from a stored calibration run (responses kept) becomes a sequence dataset."""
    m = get_model("duffing")
    prob = Problem(m, experiment_from_model(m), OverlapRSS(), keep_responses=True)
    with RunStore(tmp_path / "s.sqlite") as store:
        res = calibrate(prob, RandomSearch(batch_size=4, seed=0), max_evals=8, store=store, run_name="r")
        path = store.export_dataset("r", tmp_path / "e.npz")
    ds = from_npz(path, length=25)
    assert len(ds) == 8 and ds.X.shape == (8, 25, 2) and ds.names == ("c", "k", "k3")
    assert ds.features == ("restoring_force.x", "restoring_force.y") and ds.lower is None
    assert res.n_evals == 8
    np.testing.assert_allclose(from_npz(path, features=["displacement"], length=25).X[:, :, 0], ds.X[:, :, 0])


def test_read_sequence_csv(tmp_path):
    p = tmp_path / "m.csv"
    t = np.linspace(0, 2, 41)
    rows = "\n".join(f"{a},{b},{c}" for a, b, c in zip(t, np.sin(t), 2 * t, strict=True))
    p.write_text("time [s],force [N],disp [mm]\n" + rows + "\n")
    seq, cols = read_sequence_csv(p, ["disp", "force"], length=11, progress="time")
    assert cols == ["disp", "force"] and seq.shape == (11, 2)
    np.testing.assert_allclose(seq[:, 0], 2 * np.linspace(0, 2, 11))
    with pytest.raises(DataError, match="no column"):
        read_sequence_csv(p, ["load"], length=11)


def test_dataset_validation():
    with pytest.raises(DataError, match=r"\(n, L, C\)"):
        SequenceDataset(np.zeros((3, 4)), np.zeros((3, 1)), ("a",), ("f",))
    with pytest.raises(DataError, match="NaN"):
        SequenceDataset(np.full((2, 3, 1), np.nan), np.zeros((2, 1)), ("a",), ("f.y",))


def test_import_without_torch():
    """``import mechcalib.inverse`` and the command line load no torch (it is the optional extra)."""
    code = "import sys, mechcalib.inverse, mechcalib.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
