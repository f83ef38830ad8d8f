"""mechcalib.inverse with torch: sparse attention (eq. 13-14), GRU (eqs. 7-10), every block's shapes, the ablation
family, GDR-Net's VAE (eqs. 4-6), training, save/load, seeds, an end-to-end recovery and the commands."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the deep-learning parts need the extra mechcalib[deep] (torch)")

from typer.testing import CliRunner

from mechcalib.cli import app
from mechcalib.errors import ConfigurationError, DataError
from mechcalib.inverse import SequenceDataset, SequenceScaler, from_model
from mechcalib.inverse.data import train_val_split
from mechcalib.inverse.gdr import GDRNet, vae_loss_terms
from mechcalib.inverse.network import (
    VARIANTS,
    DecoderNet,
    GRULayer,
    InverseNet,
    MultiHeadAttention,
    NetConfig,
    Recurrent,
    RNNLayer,
    SparseEncoderBlock,
    attention,
    sparse_mask,
)
from mechcalib.inverse.train import InverseCalibrator, TrainConfig
from mechcalib.models import get_model


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread; trainings also pass ``threads=1`` because numba's OpenMP layer (the models' parallel
    kernels) can raise the OpenMP thread count that torch reads."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def tiny_data(n=24, L=12, C=2, d=2, seed=0) -> SequenceDataset:
    """Sequences a_j * sin / cos shapes with a known inverse: X[:, :, c] = Y[:, 0] sin(t (1 + c)) + Y[:, 1] t."""
    rng = np.random.default_rng(seed)
    Y = rng.uniform([0.5, -1.0], [1.5, 1.0], size=(n, d))
    t = np.linspace(0, 3, L)
    X = np.stack([Y[:, :1] * np.sin(t * (1 + c)) + Y[:, 1:2] * t for c in range(C)], axis=-1)
    return SequenceDataset(X, Y, ("a", "b"), tuple(f"ch{c}.y" for c in range(C)), [0.5, -1.0], [1.5, 1.0])


# -- sparse attention ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("sparsity, n_keys", [(0.49, 10), (0.49, 99), (0.25, 8), (0.95, 10), (0.999, 7)])
def test_sparse_mask_drops_the_stated_fraction_per_row(sparsity, n_keys):
    g = torch.Generator().manual_seed(0)
    s = torch.randn(2, 3, 5, n_keys, generator=g)
    drop = sparse_mask(s, sparsity)
    k = min(math.floor(sparsity * n_keys), n_keys - 1)
    assert torch.all(drop.sum(-1) == k)  # distinct scores: exactly floor(s n) per query row
    kept_min = s.masked_fill(drop, float("inf")).min(-1).values
    dropped_max = s.masked_fill(~drop, float("-inf")).max(-1).values
    assert torch.all(dropped_max < kept_min)  # the dropped ones are the smallest
    assert torch.all((~drop).sum(-1) >= 1)


def test_sparse_mask_ties_abs_and_dense_limit():
    ties = torch.zeros(1, 4, 6)
    drop = sparse_mask(ties, 0.5)
    assert torch.all((~drop).sum(-1) == 1)  # every score sits at the threshold: one key still kept
    s = torch.tensor([[[-5.0, 0.1, 2.0, -0.2, 3.0]]])
    np.testing.assert_array_equal(sparse_mask(s, 0.4).numpy()[0, 0], [True, False, False, True, False])
    np.testing.assert_array_equal(sparse_mask(s, 0.4, criterion="abs").numpy()[0, 0], [False, True, False, True, False])
    assert not sparse_mask(s, 0.0).any()
    with pytest.raises(ConfigurationError, match=r"\[0, 1\)"):
        sparse_mask(s, 1.0)


def test_attention_dense_at_zero_sparsity_and_masked_weights_zero():
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 7, 4, generator=g) for _ in range(3))
    out, _ = attention(q, k, v, 0.0)
    ref = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1) @ v  # sqrt(d_k) = 2
    torch.testing.assert_close(out, ref)
    _, w_s = attention(q, k, v, 0.49)
    drop = sparse_mask(q @ k.transpose(-2, -1), 0.49)
    assert torch.all(w_s[drop] == 0) and torch.allclose(w_s.sum(-1), torch.ones(2, 7))
    mha = MultiHeadAttention(8, 2, sparsity=0.0)
    x = torch.randn(3, 9, 8, generator=g)
    dense = mha(x)
    mha.sparsity = 1e-9  # below 1/9: no score dropped, the masked path gives dense attention
    torch.testing.assert_close(mha(x), dense)
    assert mha.weights.shape == (3, 2, 9, 9)


# -- recurrent layers (eqs. 7-10) ---------------------------------------------------------------------------
def test_gru_layer_matches_equations_7_to_10():
    torch.manual_seed(3)
    C, H = 2, 3
    layer = GRULayer(C, H)
    x = torch.randn(1, 2, C)
    Wx, bx = layer.w_x.weight.detach().numpy().T, layer.w_x.bias.detach().numpy()
    Wh, Whh = layer.w_h.weight.detach().numpy().T, layer.w_hh.weight.detach().numpy().T
    sig = lambda u: 1 / (1 + np.exp(-u))
    h = np.zeros(H)
    hs = []
    for i in range(2):
        xi = x[0, i].numpy()
        R = sig(xi @ Wx[:, :H] + h @ Wh[:, :H] + bx[:H])  # eq. 7
        Z = sig(xi @ Wx[:, H : 2 * H] + h @ Wh[:, H:] + bx[H : 2 * H])  # eq. 8
        Hc = np.tanh(xi @ Wx[:, 2 * H :] + (R * h) @ Whh + bx[2 * H :])  # eq. 9
        h = Z * h + (1 - Z) * Hc  # eq. 10
        hs.append(h)
    np.testing.assert_allclose(layer(x)[0].detach().numpy(), np.array(hs), rtol=1e-5, atol=1e-6)
    rnn = RNNLayer(C, H)
    ref = np.tanh(x[0, 0].numpy() @ rnn.w_x.weight.detach().numpy().T + rnn.w_x.bias.detach().numpy())
    np.testing.assert_allclose(rnn(x)[0, 0].detach().numpy(), ref, rtol=1e-5)


@pytest.mark.parametrize("cell", ["gru", "rnn"])
@pytest.mark.parametrize("impl", ["fused", "eq"])
def test_block_shapes(cell, impl):
    B, L, C, H = 3, 11, 2, 8
    x = torch.randn(B, L, C)
    h = Recurrent(cell, C, H, 2, impl)(x)
    assert h.shape == (B, L, H)
    assert MultiHeadAttention(H, 4, sparsity=0.49)(h).shape == (B, L, H)
    assert SparseEncoderBlock(H, 2, 0.49, 2, "value")(h).shape == (B, L, H)
    assert DecoderNet(H, 3)(h[:, -1]).shape == (B, 3)
    net = InverseNet(
        NetConfig(
            n_features=C, n_outputs=3, hidden=H, heads=2, cell=cell, recurrent_impl=impl, num_layers=2, pool="mean"
        )
    )
    assert net.encode(x).shape == (B, L, H) and net(x).shape == (B, 3)
    with pytest.raises(ConfigurationError, match="takes"):
        net(torch.randn(B, L, C + 1))


def test_config_validation_and_names():
    assert NetConfig.hu2024() == NetConfig(hidden=72, heads=4, num_layers=1, sparsity=0.49)
    assert [NetConfig.variant(v).name for v in VARIANTS] == list(VARIANTS)
    with pytest.raises(ConfigurationError, match="multiple of heads"):
        NetConfig(hidden=10, heads=4)
    with pytest.raises(ConfigurationError, match="unknown network"):
        NetConfig.variant("LSTM")
    with pytest.raises(ConfigurationError, match="attention"):
        NetConfig(attention="local")
    tc = TrainConfig.hu2024()
    assert (tc.batch_size, tc.lr, tc.epochs, tc.loss, tc.quantile) == (40, 5.6e-4, 600, "mse", 0.75)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_builds_and_trains_a_step(variant):
    cfg = NetConfig.variant(variant, n_features=2, n_outputs=2, hidden=8, heads=2)
    assert cfg.name == variant
    torch.manual_seed(0)
    net = InverseNet(cfg)
    x, y = torch.randn(5, 12, 2), torch.rand(5, 2)
    before = [p.detach().clone() for p in net.parameters()]
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    loss = torch.nn.functional.mse_loss(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert math.isfinite(float(loss.detach()))
    changed = [not torch.equal(a, b) for a, b in zip(before, net.parameters(), strict=True)]
    assert all(changed)  # every weight receives a gradient
    net.eval()  # no dropout: encode() must equal the block-by-block pass
    h = net.recurrent(x)  # shapes through every block of this variant, down to the parameters
    assert h.shape == (5, 12, 8)
    for block in net.blocks:
        h = block(h)
        assert h.shape == (5, 12, 8)
    torch.testing.assert_close(net.encode(x), h)
    assert net.decoder(h[:, -1]).shape == (5, 2) and net(x).shape == (5, 2)
    has = {"dot": "DotAttentionBlock", "transformer": "TransformerEncoderLayer", "sparse": "SparseEncoderBlock"}
    kinds = {type(b).__name__ for b in net.blocks}
    assert kinds == ({has[cfg.attention]} if cfg.attention != "none" else set())


# -- GDR-Net (eqs. 4-6) ----------------------------------------------------------------------------------------
def test_vae_loss_terms_hand_values():
    x = torch.tensor([[1.0, 2.0]])
    x_hat = torch.tensor([[1.5, 2.0]])
    mu = torch.tensor([[1.0, 2.0]])
    logvar = torch.tensor([[0.0, math.log(2.0)]])
    logits = torch.tensor([0.0])
    y = torch.tensor([0.3])
    t = vae_loss_terms(x, x_hat, mu, logvar, logits, y, recon_sigma=0.5)
    nll = 0.25 / (2 * 0.25) + 0.5 * 2 * math.log(2 * math.pi * 0.25)
    kl = -0.5 * ((1 + 0 - 1 - 1) + (1 + math.log(2) - 4 - 2))
    assert float(t["nll"]) == pytest.approx(nll, rel=1e-6)
    assert float(t["kl"]) == pytest.approx(kl, rel=1e-6)
    assert float(t["bce"]) == pytest.approx(math.log(2), rel=1e-6)  # p = 0.5 whatever the label
    assert float(t["elbo"]) == pytest.approx(-nll - kl, rel=1e-6)
    assert float(t["loss"]) == pytest.approx(nll + kl + math.log(2), rel=1e-6)  # -L1 + L2
    t2 = vae_loss_terms(x, x, torch.zeros(1, 2), torch.zeros(1, 2), torch.tensor([2.0]), torch.tensor([1.0]), 1.0)
    assert float(t2["kl"]) == 0.0 and float(t2["bce"]) == pytest.approx(math.log(1 + math.exp(-2.0)), rel=1e-6)


def test_gdr_weights_rank_varying_informative_inputs_first():
    rng = np.random.default_rng(0)
    n = 120
    X = rng.random((n, 5))
    X[:, 3:] = 0.5 + 0.01 * rng.standard_normal((n, 2))  # two candidates that barely vary
    gamma = 1 / (1 + np.exp(-4 * (X[:, 0] - X[:, 1])))
    gdr = GDRNet(latent_dim=3, hidden=16, epochs=60, lr=3e-3, seed=0).fit(X, gamma, list("abcde"))
    assert gdr.weights.sum() == pytest.approx(1.0) and gdr.explained.sum() == pytest.approx(1.0)
    assert set(gdr.select(3)) == {"a", "b", "c"}
    assert sum(gdr.select(3).values()) == pytest.approx(1.0)
    assert gdr.weights[3] < 0.1 and gdr.weights[4] < 0.1
    h = gdr.history
    assert h["loss"][-1] < h["loss"][0] and h["bce"][-1] < h["bce"][0]
    again = GDRNet(latent_dim=3, hidden=16, epochs=60, lr=3e-3, seed=0).fit(X, gamma, list("abcde"))
    np.testing.assert_array_equal(again.weights, gdr.weights)
    q = gdr.predict_quality(X[:5])
    assert q.shape == (5,) and np.all((q > 0) & (q < 1))
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        GDRNet(epochs=1).fit(X, gamma + 1)


# -- training, persistence, seeds -------------------------------------------------------------------------------
def small_cal(seed=0, **kw) -> InverseCalibrator:
    return InverseCalibrator(
        "PartsNet", TrainConfig(epochs=3, batch_size=8, lr=3e-3, seed=seed, threads=1, **kw), hidden=8, heads=2
    )


def test_save_load_round_trip(tmp_path):
    data = tiny_data()
    cal = small_cal().fit(data)
    path = cal.save(tmp_path / "net.pt")
    back = InverseCalibrator.load(path)
    np.testing.assert_array_equal(back.predict(data.X), cal.predict(data.X))
    assert back.net_config == cal.net_config and back.train_config == cal.train_config
    assert back.names == ("a", "b") and back.features == data.features and back.length == 12
    assert back.history == cal.history and back.variant == "PartsNet"
    np.testing.assert_array_equal(back.y_scaler.lower, [0.5, -1.0])
    one = back.predict(data.X[0])
    assert one.shape == (2,) and set(back.identify(data.X[0]).parameters) == {"a", "b"}
    with pytest.raises(DataError, match="shape"):
        back.predict(data.X[:, :5])
    (tmp_path / "bad.pt").write_bytes(b"not a network")
    with pytest.raises(DataError, match="cannot read"):
        InverseCalibrator.load(tmp_path / "bad.pt")


def test_per_step_input_scaling_round_trip(tmp_path):
    data = tiny_data()
    cal = small_cal(x_scaling="step").fit(data)
    assert cal.x_scaler.mean.shape == (12, 2) and cal.train_config.x_scaling == "step"
    tr, _ = train_val_split(len(data), 0.2, 0)  # fit holds a fifth out; the scaler sees the training part only
    expected = SequenceScaler.fit(data.X[tr], per_step=True)
    np.testing.assert_allclose(cal.x_scaler.mean, expected.mean)
    np.testing.assert_allclose(cal.x_scaler.std, expected.std)
    back = InverseCalibrator.load(cal.save(tmp_path / "step.pt"))
    assert back.train_config.x_scaling == "step" and back.x_scaler.mean.shape == (12, 2)
    np.testing.assert_array_equal(back.predict(data.X), cal.predict(data.X))
    assert small_cal().fit(data).x_scaler.mean.shape == (2,)  # default: per feature
    with pytest.raises(ConfigurationError, match="x_scaling must be 'feature'.*got 'time'"):
        TrainConfig(x_scaling="time")


def test_seeded_training_is_reproducible():
    data = tiny_data()
    a, b = small_cal(seed=4).fit(data), small_cal(seed=4).fit(data)
    np.testing.assert_array_equal(a.predict(data.X), b.predict(data.X))
    assert a.history == b.history
    c = small_cal(seed=5).fit(data)
    assert not np.array_equal(a.predict(data.X), c.predict(data.X))
    ev = a.evaluate(data)
    assert {"MSE", "MAE", "RMSE", "MedAE", "QLoss", "R2", "R2_a", "R2_b", "Time"} <= set(ev)
    assert len(a.history["val_R2"]) == 3 and a.epochs_run == 3


def test_early_stopping_restores_the_best_epoch():
    data = tiny_data()
    cal = small_cal(patience=2, min_delta=1e9, restore_best=True).fit(data)  # nothing counts as improvement
    assert cal.epochs_run == 3 and cal.best_epoch == 1
    one = InverseCalibrator(
        "PartsNet", TrainConfig(epochs=1, batch_size=8, lr=3e-3, seed=0, threads=1), hidden=8, heads=2
    ).fit(data)
    np.testing.assert_array_equal(cal.predict(data.X), one.predict(data.X))


def test_recovery_on_a_family_with_a_known_inverse():
    """tiny_data's sequences are linear in (a, b) and the two channels separate them, so the inverse is exact. PartsNet
    (hidden 16, 2 heads) on 120 sequences of 12 x 2, 60 epochs, recovers 40 unseen ones to R² 0.9994 and RMSE 0.0064
    in [0, 1]-scaled parameters (largest error 0.024 of a's range 1, 0.021 of b's range 2); asserted with margin."""
    train, val = tiny_data(n=120, seed=0), tiny_data(n=40, seed=1)
    cal = InverseCalibrator(
        "PartsNet", TrainConfig(epochs=60, batch_size=30, lr=1e-2, seed=0, threads=1), hidden=16, heads=2
    ).fit(train, val)
    ev = cal.evaluate(val)
    assert ev["R2_a"] > 0.99 and ev["R2_b"] > 0.99 and ev["RMSE"] < 0.02, ev
    err = np.abs(cal.predict(val.X) - val.Y).max(axis=0)
    assert err[0] < 0.06 and err[1] < 0.1, err


def test_training_pins_the_torch_thread_count(monkeypatch):
    """numba's OpenMP layer (the models' parallel kernels) can raise the thread count torch reads; TrainConfig.threads
    and GDRNet(threads=) pin it during training and restore the caller's setting afterwards."""
    import mechcalib.inverse.gdr as gdr_mod
    import mechcalib.inverse.network as net_mod

    seen: list[int] = []

    def recording(fn):  # fn, noting torch's thread count at every call
        return lambda *a, **k: (seen.append(torch.get_num_threads()), fn(*a, **k))[1]

    monkeypatch.setattr(net_mod.InverseNet, "forward", recording(net_mod.InverseNet.forward))
    torch.set_num_threads(2)
    small_cal().fit(tiny_data())
    assert seen and set(seen) == {1} and torch.get_num_threads() == 2
    seen.clear()
    monkeypatch.setattr(gdr_mod, "vae_loss_terms", recording(gdr_mod.vae_loss_terms))
    rng = np.random.default_rng(0)
    GDRNet(hidden=8, epochs=2, seed=0, threads=1).fit(rng.random((20, 3)), rng.random(20))
    assert seen and set(seen) == {1} and torch.get_num_threads() == 2
    with pytest.raises(ConfigurationError, match="threads"):
        GDRNet(threads=0)


def test_end_to_end_recovery_on_duffing_sequences():
    """PartsNet (hidden 12, 1 head) on 200 Duffing restoring-force loops (F0 = 2 N), 99 x 2 each, 150 for training,
    12 epochs: validation R² 0.62 (c 0.81, k 0.80, k3 0.25) and MSE 0.035 in [0, 1]-scaled parameters, where
    predicting the training mean scores R² 0 and MSE 0.089; the cubic stiffness needs longer training."""
    data = from_model(get_model("duffing"), 200, features=["restoring_force"], conditions={"F0": 2.0}, seed=0)
    assert data.X.shape == (200, 99, 2)
    tr, va = data.split(0.25, seed=1)
    cal = InverseCalibrator(
        "PartsNet", TrainConfig(epochs=12, lr=1e-2, batch_size=30, seed=0, threads=1), hidden=12, heads=1
    )
    ev = cal.fit(tr, va).evaluate(va)
    assert ev["R2"] > 0.5, ev
    assert ev["R2_c"] > 0.7 and ev["R2_k"] > 0.7, ev
    mean_mse = float(np.mean((va.unit() - tr.unit().mean(axis=0)) ** 2))
    assert ev["MSE"] < 0.5 * mean_mse, (ev["MSE"], mean_mse)


# -- commands -------------------------------------------------------------------------------------------------
def test_commands_dataset_train_identify(tmp_path):
    runner = CliRunner()
    data = tmp_path / "d.npz"
    r = runner.invoke(app, ["inverse", "dataset", "duffing", "--n", "16", "--length", "15", "--out", str(data)])
    assert r.exit_code == 0, r.output
    assert "16 sequences of 15 x 2" in r.output
    net = tmp_path / "n.pt"
    r = runner.invoke(
        app,
        [
            "inverse",
            "train",
            str(data),
            "--out",
            str(net),
            "--length",
            "15",
            "--epochs",
            "2",
            "--hidden",
            "8",
            "--heads",
            "2",
            "--batch-size",
            "8",
            "--threads",
            "1",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "validation" in r.output and "R2" in r.output and net.is_file()
    csv = tmp_path / "m.csv"
    r = runner.invoke(app, ["simulate", "duffing", "--set", "k=2", "--out", str(csv)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["inverse", "identify", str(net), str(csv), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)  # stderr: the warning of a two-epoch network's low validation R²
    assert out["columns"] == ["restoring_force.x", "restoring_force.y"] and set(out["parameters"]) == {"c", "k", "k3"}
    direct = InverseCalibrator.load(net)
    from mechcalib.inverse import read_sequence_csv

    seq, _ = read_sequence_csv(csv, ["restoring_force.x", "restoring_force.y"], length=15)
    with pytest.warns(UserWarning, match="validation R²"):  # two epochs: a poor network, and said so
        assert out["parameters"] == direct.identify(seq).parameters
    r = runner.invoke(app, ["inverse", "train", str(data), "--out", str(net), "--variant", "LSTM"])
    assert r.exit_code == 2 and "variants" in r.output
    step = tmp_path / "step.pt"
    r = runner.invoke(
        app,
        [
            "inverse",
            "train",
            str(data),
            "--out",
            str(step),
            "--length",
            "15",
            "--epochs",
            "1",
            "--hidden",
            "8",
            "--heads",
            "2",
            "--threads",
            "1",
            "--x-scaling",
            "step",
        ],
    )
    assert r.exit_code == 0, r.output
    assert InverseCalibrator.load(step).x_scaler.mean.shape == (15, 2)
    r = runner.invoke(app, ["inverse", "train", str(data), "--out", str(step), "--x-scaling", "time"])
    assert r.exit_code == 2 and "x_scaling must be 'feature'" in r.output, r.output
    r = runner.invoke(app, ["inverse", "identify", str(net), str(tmp_path / "missing.csv")])
    assert r.exit_code == 2 and "does not exist" in r.output


@pytest.mark.parametrize("criterion", ["value", "abs"])
def test_fused_attention_equals_the_masked_dense_form(criterion):
    """The fused path (boolean mask into scaled_dot_product_attention) is eq. 14 as the masked reference computes
    it: values and gradients agree to round-off in float64, for a single call and through a whole PartsNet."""
    g = torch.Generator().manual_seed(5)
    qkv = [torch.randn(3, 4, 99, 18, generator=g, dtype=torch.float64) for _ in range(3)]
    outs, grads = {}, {}
    for impl in ("masked", "fused"):
        leaves = [t.clone().requires_grad_(True) for t in qkv]
        out, w = attention(*leaves, 0.49, criterion=criterion, impl=impl)
        assert (w is None) == (impl == "fused")
        (out * torch.linspace(-1, 1, 18, dtype=torch.float64)).sum().backward()
        outs[impl], grads[impl] = out.detach(), [t.grad for t in leaves]
    torch.testing.assert_close(outs["fused"], outs["masked"], rtol=0, atol=1e-10)
    for a, b in zip(grads["fused"], grads["masked"], strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)
    # a sparse mask is in effect: the result differs from dense attention
    assert (outs["masked"] - attention(*qkv, 0.0)[0]).abs().max() > 1e-3

    cfg = NetConfig.hu2024(criterion=criterion)
    nets = {}
    for impl in ("masked", "fused"):
        torch.manual_seed(0)
        nets[impl] = InverseNet(cfg.with_(attention_impl=impl)).double()
    x = torch.randn(6, 99, 2, generator=g, dtype=torch.float64)
    y = torch.rand(6, 3, generator=g, dtype=torch.float64)
    res = {}
    for impl, net in nets.items():
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        res[impl] = (loss.detach(), [p.grad for p in net.parameters()])
    torch.testing.assert_close(res["fused"][0], res["masked"][0], rtol=0, atol=1e-10)
    for a, b in zip(res["fused"][1], res["masked"][1], strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)
    assert NetConfig().attention_impl == "masked"  # the reference stays the default
    with pytest.raises(ConfigurationError, match="attention_impl"):
        NetConfig(attention_impl="flash")


# -- what training and identification tell the user ---------------------------------------------------------
def _tiny(tmp_path, epochs: int, val_fraction: float = 0.25):
    ds = from_model(get_model("duffing"), 24, length=15, seed=0)
    data = tmp_path / "d.npz"
    ds.save_npz(data)
    net = tmp_path / f"n{epochs}_{val_fraction}.pt"
    args = ["inverse", "train", str(data), "--out", str(net), "--length", "15", "--epochs", str(epochs)]
    args += [
        "--hidden",
        "8",
        "--heads",
        "2",
        "--batch-size",
        "8",
        "--threads",
        "1",
        "--val-fraction",
        str(val_fraction),
    ]
    return data, net, CliRunner().invoke(app, args)


def test_train_shows_the_epochs_and_the_losses(tmp_path):
    _, net, r = _tiny(tmp_path, 3)
    assert r.exit_code == 0, r.output
    cal = InverseCalibrator.load(net)
    h = cal.history
    # the bar's last state: all epochs, the last epoch's training and validation losses and R²
    assert "epoch 3/3" in r.stderr
    assert f"train loss {h['train_loss'][-1]:.4g}, validation loss {h['val_loss'][-1]:.4g}" in r.stderr
    assert f"validation R2 {h['val_R2'][-1]:.3f}" in r.stderr
    data = tmp_path / "d.npz"
    quiet = CliRunner().invoke(app, ["inverse", "train", str(data), "--out", str(tmp_path / "q.pt"), "--length", "15",
                                     "--epochs", "1", "--hidden", "8", "--heads", "2", "--threads", "1", "-q"])  # fmt: skip
    assert quiet.exit_code == 0 and "epoch" not in quiet.stderr
    seen = []
    ds = from_model(get_model("duffing"), 12, length=15, seed=0)
    tc = TrainConfig(epochs=2, batch_size=8, val_fraction=0.25, threads=1)
    InverseCalibrator("GRU", tc, hidden=8).fit(ds, on_epoch=lambda e, n, s: seen.append((e, n, sorted(s))))
    assert [(e, n) for e, n, _ in seen] == [(1, 2), (2, 2)] and "val_R2" in seen[0][2] and "train_loss" in seen[0][2]


def test_identify_warns_below_the_validation_r2_threshold(tmp_path):
    from mechcalib.inverse import InverseAccuracyWarning

    data, net, r = _tiny(tmp_path, 2)
    assert r.exit_code == 0, r.output
    cal = InverseCalibrator.load(net)
    r2 = cal.validation_r2
    assert r2 == cal.history["val_R2"][-1] and r2 < 0.9  # two epochs learn little
    seq = np.zeros((15, 2))
    with pytest.warns(InverseAccuracyWarning, match=rf"validation R² of {r2:.3g}, below the threshold 0.9"):
        cal.identify(seq)
    cal.min_r2 = r2 - 0.01  # a lower threshold (the setting) passes it
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", InverseAccuracyWarning)
        cal.identify(seq)
    csv = tmp_path / "m.csv"
    assert CliRunner().invoke(app, ["simulate", "duffing", "--set", "k=2", "--out", str(csv)]).exit_code == 0
    r = CliRunner().invoke(app, ["inverse", "identify", str(net), str(csv), "--json"])
    assert r.exit_code == 0, r.output
    assert f"warning: network 'PartsNet' has a validation R² of {r2:.3g}, below the threshold 0.9" in r.stderr
    assert json.loads(r.stdout)["warnings"][0].startswith("network 'PartsNet' has a validation R²")
    r = CliRunner().invoke(app, ["inverse", "identify", str(net), str(csv), "--min-r2", str(r2 - 0.01)])
    assert r.exit_code == 0 and "warning" not in r.stderr
    # a network trained without validation: its accuracy is unknown, and said so
    _, blind, r = _tiny(tmp_path, 1, val_fraction=0.0)
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["inverse", "identify", str(blind), str(csv)])
    assert "trained without a validation set" in r.stderr
