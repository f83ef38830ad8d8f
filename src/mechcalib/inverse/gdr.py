"""GDR-Net (Hu et al. (2024), section 2.1): quality labels, a VAE with a quality head, and parameter weights.

1. **Quality label** (eqs. 1-3): the cross-correlation of a simulated sequence ``X`` ``(N, K)`` with the
   experimental one ``X̃`` at lag ``m``, squashed by a sigmoid:
   ``γ(m) = sigmoid( (1 / (N K)) Σ_k Σ_n X_k(n) X̃_k(n + m) )`` (eq. 2; eq. 3 is ``K = 2``, ``m = 0``); samples
   with ``n + m`` outside ``[0, N)`` contribute nothing. :func:`gamma_label` is the formula on the values given;
   :func:`quality_labels` first divides every channel of both sequences by the experiment's RMS of that channel,
   so that channels in different units weigh alike and the label does not depend on units. The label, as
   defined, rewards amplitude as well as shape (a sequence twice the experiment's size scores higher than the
   experiment itself); it ranks candidates of similar amplitude.
2. **VAE with a quality head** (eqs. 4-6): an MLP encoder ``x -> (μ, log σ²)`` of a ``latent_dim``-dimensional
   Gaussian ``q_φ(z|x)``, an MLP decoder ``z -> x̂`` with the Gaussian likelihood ``p_θ(x|z) = N(x̂, s² I)``
   (``s = recon_sigma``), the prior ``N(0, I)``, and a classification head ``z -> p`` (logistic) trained with
   the binary cross-entropy against ``γ`` (eq. 5, soft labels). ELBO (eq. 4):
   ``L1 = E_q[log p_θ(x|z)] - KL(q_φ(z|x) ‖ p(z))``, estimated with one reparameterised sample. Eq. 6 as printed
   minimises ``-(L1 + L2)``, which would maximise the BCE; the objective minimised is ``-L1 + L2`` (the negative
   ELBO plus the BCE), the intent stated in the text ("minimizing the negative ELBO and BCELoss").
3. **Principal-component ordering** (end of section 2.1): PCA of the latent means ``μ(x)`` over the data gives
   components ``j`` with explained-variance ratios ``r_j`` and unit-variance scores ``s_j(x)``. The paper does not
   say how the ordering turns into weights of the inputs; here the weight of input ``i`` is
   ``w_i ∝ Σ_j r_j · mean_x |∂s_j / ∂x_i|`` (the Jacobian through the encoder, by automatic differentiation),
   normalised so that ``Σ_i w_i = 1``: an input that moves the dominant latent directions weighs most.
   :meth:`GDRNet.select` keeps the ``k`` heaviest inputs and renormalises their weights (the paper keeps three of
   seven EEPA parameters with weights 0.378, 0.407, 0.215).

Inputs are the candidate parameters in unit-cube coordinates ``(n, D)`` (any features work); labels the ``γ`` of
their simulations against the experiment. The torch parts load lazily (extra ``mechcalib[deep]``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.presets import Preset, deprecated_preset, presets_by_name
from ..errors import ConfigurationError, DataError, require

SeedLike = int | np.random.Generator | None


# ------------------------------------------------------------------------------------------------------
# Quality labels (eqs. 1-3)
# ------------------------------------------------------------------------------------------------------
def sigmoid(u: np.ndarray | float) -> np.ndarray:
    """Overflow-safe logistic function."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(u, dtype=float)))


def cross_correlation(X: np.ndarray, X_exp: np.ndarray, m: int = 0) -> np.ndarray:
    """Eq. 2's argument: ``(1 / (N K)) Σ_k Σ_n X_k(n) X̃_k(n + m)``.

    Args:
        X: ``(N, K)`` one sequence or ``(B, N, K)`` a batch (a 1-D ``(N,)`` is one channel).
        X_exp: ``(N, K)`` the experimental sequence ``X̃``.
        m: lag (may be negative); products whose ``n + m`` falls outside the sequence are left out.

    Returns:
        ``()`` or ``(B,)``.
    """
    A = np.asarray(X, dtype=float)
    E = np.asarray(X_exp, dtype=float)
    if E.ndim == 1:
        E = E[:, None]
    if A.ndim == 1:
        A = A[:, None]
    if A.shape[-2:] != E.shape:
        raise DataError(f"simulated sequences {A.shape} and the experiment {E.shape} must share (N, K)")
    N, K = E.shape
    m = int(m)
    if abs(m) >= N:
        return np.zeros(A.shape[:-2])
    if m >= 0:
        prod = A[..., : N - m, :] * E[m:, :]
    else:
        prod = A[..., -m:, :] * E[: N + m, :]
    return prod.sum(axis=(-2, -1)) / (N * K)


def gamma_label(X: np.ndarray, X_exp: np.ndarray, m: int = 0) -> np.ndarray:
    """Eqs. 2-3: ``γ(m) = sigmoid(cross_correlation(X, X̃, m))``, in ``(0, 1)``; shapes as :func:`cross_correlation`."""
    return sigmoid(cross_correlation(X, X_exp, m))


def quality_labels(X: np.ndarray, X_exp: np.ndarray, m: int = 0) -> np.ndarray:
    """``γ`` of sequences ``(B, N, K)`` against ``X̃`` ``(N, K)`` after dividing every channel of both by the
    experiment's RMS of that channel (a channel that is zero throughout is left as is)."""
    E = np.asarray(X_exp, dtype=float)
    A = np.asarray(X, dtype=float)
    if E.ndim == 1:  # one channel: the sequences are (N,) or (B, N)
        E, A = E[:, None], A[..., None]
    rms = np.sqrt(np.mean(E**2, axis=0))
    rms = np.where(rms > 0, rms, 1.0)
    return gamma_label(A / rms, E / rms, m)


# ------------------------------------------------------------------------------------------------------
# Loss terms (eqs. 4-6)
# ------------------------------------------------------------------------------------------------------
def vae_loss_terms(x, x_hat, mu, logvar, logits, y, recon_sigma: float = 0.1) -> dict[str, Any]:
    """Per-batch means of eqs. 4-6's terms (torch tensors in, 0-d tensors out).

    Args:
        x, x_hat: ``(B, D)`` inputs and reconstructions (decoder means).
        mu, logvar: ``(B, latent)`` posterior means and log-variances.
        logits: ``(B,)`` quality-head logits; ``p = sigmoid(logits)``.
        y: ``(B,)`` labels ``γ`` in ``[0, 1]``.
        recon_sigma: the likelihood's standard deviation ``s``.

    Returns:
        ``{"nll": -E_q[log p_θ(x|z)], "kl": KL(q ‖ N(0, I)), "elbo": L1 = -nll - kl, "bce": L2, "loss": -L1 + L2,
        "recon_mse": mean((x - x̂)²)}``. ``nll = Σ_d (x - x̂)² / (2 s²) + (D / 2) log(2π s²)`` per sample;
        ``kl = -½ Σ (1 + log σ² - μ² - σ²)`` per sample; ``bce = -(y log p + (1 - y) log(1 - p))``.
    """
    import torch.nn.functional as F

    D = x.shape[-1]
    s2 = float(recon_sigma) ** 2
    sq = ((x - x_hat) ** 2).sum(dim=-1)
    nll = (sq / (2 * s2) + 0.5 * D * math.log(2 * math.pi * s2)).mean()
    kl = (-0.5 * (1 + logvar - mu**2 - logvar.exp()).sum(dim=-1)).mean()
    bce = F.binary_cross_entropy_with_logits(logits, y)
    elbo = -nll - kl
    return {"nll": nll, "kl": kl, "elbo": elbo, "bce": bce, "loss": -elbo + bce, "recon_mse": (sq / D).mean().detach()}


def _build_vae(n_in: int, hidden: int, latent: int):
    torch = require("torch", "deep")
    nn = torch.nn

    class _VAE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
            self.mu = nn.Linear(hidden, latent)
            self.logvar = nn.Linear(hidden, latent)
            self.dec = nn.Sequential(
                nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_in)
            )
            self.head = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        def encode(self, x):
            h = self.enc(x)
            return self.mu(h), self.logvar(h)

        def forward(self, x, sample: bool = True):
            mu, logvar = self.encode(x)
            z = mu + torch.randn_like(mu) * (0.5 * logvar).exp() if sample else mu
            return self.dec(z), mu, logvar, self.head(z).squeeze(-1)

    return _VAE()


class GDRNet:
    """VAE + quality head trained on ``(candidate parameters, γ)``; PCA ordering gives each input a weight.

    Args:
        latent_dim: latent dimension (Table 1: 3).
        hidden: width of the MLP layers.
        epochs: training epochs (Table 1: 1000).
        lr: Adam learning rate.
        batch_size: minibatch size.
        recon_sigma: standard deviation of the Gaussian likelihood (sets the weight of reconstruction vs. KL).
        seed: seed of the initialisation, the shuffling and the reparameterisation noise.
        threads: torch CPU threads during :meth:`fit` (``None``: leave torch's setting), restored afterwards. A
            model's parallel numba kernel run earlier in the process (simulating the candidates) can change the
            OpenMP thread count torch reads; set ``threads`` to pin it.

    After :meth:`fit`: ``history`` (per-epoch means of ``nll``, ``kl``, ``bce``, ``loss``, ``recon_mse``),
    ``weights`` ``(D,)``, ``order`` (inputs by decreasing weight), ``explained`` (PCA ratios ``r_j``),
    ``seconds``.
    """

    setting_presets = presets_by_name(
        Preset(
            name="hu2024",
            source="Hu et al. (2024), Table 1",
            settings=dict(latent_dim=3, epochs=1000),
            aliases=("paper_001",),
        )
    )

    def __init__(
        self,
        *,
        latent_dim: int = 3,
        hidden: int = 64,
        epochs: int = 1000,
        lr: float = 1e-3,
        batch_size: int = 40,
        recon_sigma: float = 0.1,
        seed: int | None = None,
        threads: int | None = None,
    ) -> None:
        for k, v in (("latent_dim", latent_dim), ("hidden", hidden), ("epochs", epochs), ("batch_size", batch_size)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigurationError(f"GDRNet {k} must be a positive integer, got {v!r}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ConfigurationError(f"GDRNet threads must be None or a positive integer, got {threads!r}")
        if not (lr > 0 and recon_sigma > 0):
            raise ConfigurationError(
                f"GDRNet lr and recon_sigma must be > 0, got lr={lr!r}, recon_sigma={recon_sigma!r}"
            )
        self.latent_dim, self.hidden, self.epochs, self.lr = latent_dim, hidden, epochs, float(lr)
        self.batch_size, self.recon_sigma, self.seed, self.threads = batch_size, float(recon_sigma), seed, threads
        self.names: tuple[str, ...] = ()
        self.history: dict[str, list[float]] = {}
        self.weights: np.ndarray | None = None
        self.explained: np.ndarray | None = None
        self.seconds = 0.0
        self._vae = None

    @classmethod
    def hu2024(cls, **overrides: Any) -> GDRNet:
        """Hu et al. (2024) Table 1: latent dimension 3, 1000 epochs."""
        return cls(**cls.setting_presets["hu2024"].merged(overrides))

    paper_001 = deprecated_preset("paper_001")

    # -----------------------------------------------------------------------------------------------
    def fit(self, X: np.ndarray, labels: np.ndarray, names: Sequence[str] | None = None) -> GDRNet:
        """Train on inputs ``X`` ``(n, D)`` (unit-cube candidate parameters) and labels ``γ`` ``(n,)`` in ``[0, 1]``."""
        torch = require("torch", "deep")
        X = np.asarray(X, dtype=float)
        y = np.asarray(labels, dtype=float).ravel()
        if X.ndim != 2 or X.shape[0] != y.size or X.shape[0] < 2:
            raise DataError(f"GDRNet.fit needs X (n, D) and labels (n,), n >= 2; got {X.shape} and {y.shape}")
        if np.any((y < 0) | (y > 1)) or not np.all(np.isfinite(X)):
            raise DataError("GDRNet labels must lie in [0, 1] and the inputs must be finite")
        self.names = tuple(names) if names is not None else tuple(f"x{i + 1}" for i in range(X.shape[1]))
        if len(self.names) != X.shape[1]:
            raise DataError(f"{len(self.names)} names for {X.shape[1]} inputs")
        rng = np.random.default_rng(self.seed)
        old_threads = torch.get_num_threads()
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        try:
            self._train(torch, X, y, rng)
        finally:
            torch.set_num_threads(old_threads)
        self._order(X)
        return self

    def _train(self, torch, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(rng.integers(2**31)))
            self._vae = vae = _build_vae(X.shape[1], self.hidden, self.latent_dim).double()
            opt = torch.optim.Adam(vae.parameters(), lr=self.lr)
            Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
            keys = ("nll", "kl", "bce", "loss", "recon_mse")
            self.history = {k: [] for k in keys}
            t0 = time.perf_counter()
            n = X.shape[0]
            for _ in range(self.epochs):
                perm = rng.permutation(n)
                sums = dict.fromkeys(keys, 0.0)
                for s in range(0, n, self.batch_size):
                    idx = torch.as_tensor(perm[s : s + self.batch_size])
                    xb, yb = Xt[idx], yt[idx]
                    x_hat, mu, logvar, logits = vae(xb)
                    terms = vae_loss_terms(xb, x_hat, mu, logvar, logits, yb, self.recon_sigma)
                    opt.zero_grad()
                    terms["loss"].backward()
                    opt.step()
                    for k in keys:
                        sums[k] += float(terms[k].detach()) * len(idx)
                for k in keys:
                    self.history[k].append(sums[k] / n)
            self.seconds = time.perf_counter() - t0
        vae.eval()

    def _need_fit(self):
        if self._vae is None:
            raise ConfigurationError("GDRNet is not fitted: call fit(X, labels) first")
        return self._vae

    def encode(self, X: np.ndarray) -> np.ndarray:
        """``(n, latent)`` posterior means ``μ(x)``."""
        torch = require("torch", "deep")
        vae = self._need_fit()
        with torch.no_grad():
            return vae.encode(torch.as_tensor(np.asarray(X, dtype=float)))[0].numpy()

    def predict_quality(self, X: np.ndarray) -> np.ndarray:
        """``(n,)`` predicted ``γ`` (head on the latent mean)."""
        torch = require("torch", "deep")
        vae = self._need_fit()
        with torch.no_grad():
            return torch.sigmoid(vae(torch.as_tensor(np.asarray(X, dtype=float)), sample=False)[3]).numpy()

    def _order(self, X: np.ndarray) -> None:
        torch = require("torch", "deep")
        vae = self._need_fit()
        Xt = torch.as_tensor(X).clone().requires_grad_(True)
        mu = vae.encode(Xt)[0]
        M = mu.detach().numpy()
        Mc = M - M.mean(axis=0)
        _, S, Vt = np.linalg.svd(Mc, full_matrices=False)
        var = S**2 / max(M.shape[0] - 1, 1)
        self.explained = var / var.sum() if var.sum() > 0 else np.full(var.size, 1.0 / var.size)
        # Jacobian of the latent means: J[n, k, i] = dμ_k/dx_i (rows are independent, so grad of the column sum)
        J = np.stack(
            [torch.autograd.grad(mu[:, k].sum(), Xt, retain_graph=True)[0].numpy() for k in range(mu.shape[1])], axis=1
        )
        sd = np.sqrt(np.where(var > 0, var, 1.0))
        dS = np.einsum("kj,nki->nji", Vt.T, J) / sd[None, :, None]  # d(unit-variance score j)/dx_i
        w = np.einsum("j,ji->i", self.explained, np.abs(dS).mean(axis=0))
        self.weights = w / w.sum() if w.sum() > 0 else np.full(w.size, 1.0 / w.size)

    @property
    def order(self) -> np.ndarray:
        """Input indices by decreasing weight."""
        if self.weights is None:
            raise ConfigurationError("GDRNet is not fitted: call fit(X, labels) first")
        return np.argsort(-self.weights, kind="stable")

    def select(self, k: int | None = None) -> dict[str, float]:
        """The ``k`` (default: ``latent_dim``) heaviest inputs with their weights renormalised to sum 1, heaviest
        first."""
        k = self.latent_dim if k is None else int(k)
        idx = self.order[:k]
        w = self.weights[idx]
        return {self.names[i]: float(v) for i, v in zip(idx, w / w.sum(), strict=True)}
