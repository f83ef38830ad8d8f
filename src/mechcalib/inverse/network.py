"""PartsNet's Encoder-Net and Decoder-Net (Hu et al. (2024), sections 2.2-2.3) and the ablation family of section 4.1.

One model class, :class:`InverseNet`, configured by :class:`NetConfig`, maps a batch of sequences
``(B, L, C)`` to parameters ``(B, d)``:

1. a recurrent layer stack producing the hidden-state matrix ``H`` ``(B, L, hidden)``: a GRU (eqs. 7-10) or an
   Elman RNN (``H_i = tanh(X_i W_x + H_{i-1} W_h + b)``);
2. ``num_layers`` attention blocks (none for the plain RNN/GRU):

   * ``"dot"`` (``+A``): single-head scaled dot-product self-attention (eq. 11) on learned projections of ``H``,
     added to ``H``;
   * ``"transformer"`` (``+TransE``): PyTorch's standard Transformer encoder layer (multi-head attention, eq. 12,
     residuals, post-layer normalisation, feed-forward block);
   * ``"sparse"`` (``+STE``): section 2.2.2's encoder: layer normalisation of ``H``, the sparse multi-head
     attention of eqs. 13-14, a residual connection, layer normalisation and an MLP (with its own residual);
3. pooling of the sequence to one vector (the last time step, or the mean over time);
4. Decoder-Net (eq. 15): ``h = ReLU(Linear(x)) + x`` (first layer of the hidden size) and a linear layer to the
   ``d`` parameters (the second layer, "contingent upon the number of calibrated parameters").

:data:`VARIANTS` names the eight networks of Table 4; they differ only in ``cell`` and ``attention`` and share
every other hyper-parameter, so the ablation isolates the recurrent cell and the attention mechanism.

Sparse attention (eq. 13): per query row, with ``n`` keys and sparsity ``s``, the threshold is the ``k``-th
smallest score, ``k = floor(s n)`` (at most ``n - 1``), and scores at or below it are set to ``-inf`` before
the softmax, so ``s`` is the fraction of scores dropped (exactly ``floor(s n) / n`` when scores are distinct,
more with ties at the threshold); the row's largest score is always kept, so at least one key survives, and
``s = 0`` is dense attention. Eq. 13 writes ``‖QKᵀ‖ <= threshold``; ``criterion="value"`` (default) compares the
scores themselves (small and negative scores dropped, the reading under which dropping changes the softmax
least), ``criterion="abs"`` their magnitudes. The mask needs a selection over every row, ``O(n² log n)`` in the
paper's count, so the full score matrix is formed whatever the implementation and only softmax-times-values can
be sparse. ``attention_impl="masked"`` (default, the reference) fills the dropped scores with ``-inf`` before a
dense softmax; ``"fused"`` passes the same boolean mask to ``torch.nn.functional.scaled_dot_product_attention``
(one fused kernel for scaling, softmax and the product with ``V``). The two agree to round-off (float64: within
1e-10 in values and gradients, ``tests/test_inverse_torch.py``), not bit for bit, so the reference stays the
default and trained results do not move. Per training step PartsNet is slower than GRU+TransE with either form,
not faster as the paper's 21.25 % claims: ``benchmarks/results/partsnet_attention.md``.

GRU forms: ``recurrent_impl="eq"`` computes eqs. 7-10 literally, the reset gate before the recurrent weight,
``(R_i ⊙ H_{i-1}) W_HH``; ``"fused"`` (default) uses ``torch.nn.GRU``/``torch.nn.RNN``, whose candidate state
applies the reset gate after it, ``R_i ⊙ (H_{i-1} W_HH + b)``: the variant PyTorch (which the paper used)
implements, about twice as fast on a CPU here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..core.presets import Preset, deprecated_preset
from ..errors import ConfigurationError

CELLS = ("gru", "rnn")
ATTENTIONS = ("none", "dot", "transformer", "sparse")
IMPLS = ("fused", "eq")
POOLS = ("last", "mean")
CRITERIA = ("value", "abs")
ATTENTION_IMPLS = ("masked", "fused")

#: Table 4's networks as (recurrent cell, attention block).
VARIANTS: dict[str, tuple[str, str]] = {
    "RNN": ("rnn", "none"),
    "GRU": ("gru", "none"),
    "RNN+A": ("rnn", "dot"),
    "GRU+A": ("gru", "dot"),
    "RNN+TransE": ("rnn", "transformer"),
    "GRU+TransE": ("gru", "transformer"),
    "RNN+STE": ("rnn", "sparse"),
    "PartsNet": ("gru", "sparse"),
}


# ------------------------------------------------------------------------------------------------------
# Sparse attention (eqs. 11, 13-14)
# ------------------------------------------------------------------------------------------------------
def n_dropped(n_keys: int, sparsity: float) -> int:
    """Scores dropped per query row: ``min(floor(sparsity n_keys), n_keys - 1)``."""
    if not 0.0 <= sparsity < 1.0:
        raise ConfigurationError(f"sparsity is the fraction of scores dropped and must lie in [0, 1), got {sparsity!r}")
    return min(math.floor(sparsity * n_keys + 1e-9), n_keys - 1)


def sparse_mask(scores: torch.Tensor, sparsity: float, *, criterion: str = "value") -> torch.Tensor:
    """Eq. 13: the boolean mask of dropped scores (``True`` = set to ``-inf``).

    Args:
        scores: ``(..., n_queries, n_keys)`` attention scores ``QKᵀ``.
        sparsity: fraction of each row's scores to drop, in ``[0, 1)``.
        criterion: ``"value"`` or ``"abs"`` (see the module docstring).

    Returns:
        ``(..., n_queries, n_keys)`` bool; every row keeps its largest score.
    """
    if criterion not in CRITERIA:
        raise ConfigurationError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    n = scores.shape[-1]
    k = n_dropped(n, sparsity)
    if k == 0:
        return torch.zeros_like(scores, dtype=torch.bool)
    s = scores.detach()
    if criterion == "abs":
        s = s.abs()
    # ties at the threshold must not empty a row: the row's largest score (its first, as argmax) stays. Only a
    # row whose threshold is its maximum is emptied, so argmax is taken there alone
    if s.device.type == "cpu":  # numpy's introselect and reductions are several times faster than torch's here
        a = s.contiguous().numpy()
        d = a <= np.partition(a, k - 1, axis=-1)[..., k - 1 : k]
        full = d.all(axis=-1)
        if full.any():
            d[full, a[full].argmax(axis=-1)] = False
        return torch.from_numpy(d)
    drop = s <= torch.kthvalue(s, k, dim=-1, keepdim=True).values
    full = drop.all(dim=-1, keepdim=True)
    if bool(full.any()):
        first_max = torch.zeros_like(drop).scatter_(-1, s.argmax(dim=-1, keepdim=True), True)
        drop &= ~(first_max & full)
    return drop


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    sparsity: float = 0.0,
    *,
    criterion: str = "value",
    impl: str = "masked",
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Eq. 11 (``sparsity = 0``) or eq. 14's sparse attention: ``softmax(mask(QKᵀ) / sqrt(d_k)) V``.

    Args:
        q: ``(..., n_q, d_k)``; k: ``(..., n_k, d_k)``; v: ``(..., n_k, d_v)``.
        impl: ``"masked"`` (reference: ``-inf`` fill and a dense softmax) or ``"fused"`` (the same mask into
            ``scaled_dot_product_attention``; equal to round-off, see the module docstring).

    Returns:
        ``(output (..., n_q, d_v), weights (..., n_q, n_k))``; the fused form returns no weights (``None``).
    """
    if impl not in ATTENTION_IMPLS:
        raise ConfigurationError(f"attention impl must be one of {ATTENTION_IMPLS}, got {impl!r}")
    if impl == "fused":
        keep = None
        if sparsity > 0:
            # the threshold needs every score: they are formed once more, outside the graph, for the mask only
            with torch.no_grad():
                keep = ~sparse_mask(q @ k.transpose(-2, -1), sparsity, criterion=criterion)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep), None
    scores = q @ k.transpose(-2, -1)
    if sparsity > 0:
        scores = scores.masked_fill(sparse_mask(scores, sparsity, criterion=criterion), float("-inf"))
    w = torch.softmax(scores / math.sqrt(q.shape[-1]), dim=-1)
    return w @ v, w


class MultiHeadAttention(nn.Module):
    """Eq. 12 (dense) / eq. 14 (sparse) multi-head self-attention.

    ``d_k = d_v = d_model / heads``; ``W^Q, W^K, W^V`` hold every head's projection side by side, ``W^O`` maps the
    concatenated heads back to ``d_model``. Input and output ``(B, L, d_model)``.
    """

    def __init__(
        self, d_model: int, heads: int, *, sparsity: float = 0.0, criterion: str = "value", impl: str = "masked"
    ) -> None:
        super().__init__()
        if impl not in ATTENTION_IMPLS:
            raise ConfigurationError(f"attention impl must be one of {ATTENTION_IMPLS}, got {impl!r}")
        if d_model % heads:
            raise ConfigurationError(
                f"the hidden size must be a multiple of the number of heads, got {d_model} and {heads}"
            )
        n_dropped(2, sparsity)  # validates the range
        self.heads, self.sparsity, self.criterion, self.impl = int(heads), float(sparsity), criterion, impl
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        # the last forward's attention weights (B, heads, L, L); None after a fused forward, which forms none
        self.weights: torch.Tensor | None = None

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        B, L, D = x.shape
        return x.view(B, L, self.heads, D // self.heads).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, L, D = x.shape
        out, w = attention(
            self._split(self.w_q(x)),
            self._split(self.w_k(x)),
            self._split(self.w_v(x)),
            self.sparsity,
            criterion=self.criterion,
            impl=self.impl,
        )
        self.weights = None if w is None else w.detach()
        return self.w_o(out.transpose(1, 2).reshape(B, L, D))


# ------------------------------------------------------------------------------------------------------
# Recurrent layers (eqs. 7-10)
# ------------------------------------------------------------------------------------------------------
class GRULayer(nn.Module):
    """One GRU layer computing eqs. 7-10 as printed.

    ``R_i = σ(X_i W_XR + H_{i-1} W_hR + b_R)``, ``Z_i = σ(X_i W_XZ + H_{i-1} W_hZ + b_Z)``,
    ``H̃_i = tanh(X_i W_XH + (R_i ⊙ H_{i-1}) W_HH + b_H)``, ``H_i = Z_i ⊙ H_{i-1} + (1 - Z_i) ⊙ H̃_i``, ``H_0 = 0``.
    ``w_x`` holds ``[W_XR | W_XZ | W_XH]`` with the biases ``[b_R | b_Z | b_H]``; ``w_h`` holds ``[W_hR | W_hZ]``;
    ``w_hh`` is ``W_HH``. Input ``(B, L, C)``, output ``(B, L, hidden)``.
    """

    def __init__(self, n_in: int, hidden: int) -> None:
        super().__init__()
        self.hidden = int(hidden)
        self.w_x = nn.Linear(n_in, 3 * hidden)
        self.w_h = nn.Linear(hidden, 2 * hidden, bias=False)
        self.w_hh = nn.Linear(hidden, hidden, bias=False)
        bound = 1.0 / math.sqrt(hidden)  # the same uniform initialisation as torch.nn.GRU
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        Hs = self.hidden
        xp = self.w_x(x)  # input projections of every step at once
        h = x.new_zeros(x.shape[0], Hs)
        out = []
        for i in range(x.shape[1]):
            a = xp[:, i]
            rz = torch.sigmoid(a[:, : 2 * Hs] + self.w_h(h))
            r, z = rz[:, :Hs], rz[:, Hs:]
            cand = torch.tanh(a[:, 2 * Hs :] + self.w_hh(r * h))
            h = z * h + (1.0 - z) * cand
            out.append(h)
        return torch.stack(out, dim=1)


class RNNLayer(nn.Module):
    """One Elman RNN layer: ``H_i = tanh(X_i W_x + H_{i-1} W_h + b)``, ``H_0 = 0``. ``(B, L, C) -> (B, L, hidden)``."""

    def __init__(self, n_in: int, hidden: int) -> None:
        super().__init__()
        self.w_x = nn.Linear(n_in, hidden)
        self.w_h = nn.Linear(hidden, hidden, bias=False)
        bound = 1.0 / math.sqrt(hidden)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xp = self.w_x(x)
        h = x.new_zeros(x.shape[0], self.w_h.in_features)
        out = []
        for i in range(x.shape[1]):
            h = torch.tanh(xp[:, i] + self.w_h(h))
            out.append(h)
        return torch.stack(out, dim=1)


class Recurrent(nn.Module):
    """``num_layers`` stacked recurrent layers; ``(B, L, C) -> H (B, L, hidden)``."""

    def __init__(self, cell: str, n_in: int, hidden: int, num_layers: int, impl: str) -> None:
        super().__init__()
        self.impl = impl
        if impl == "fused":
            cls = nn.GRU if cell == "gru" else nn.RNN
            self.net = cls(n_in, hidden, num_layers=num_layers, batch_first=True)
        else:
            cls = GRULayer if cell == "gru" else RNNLayer
            self.net = nn.Sequential(*[cls(n_in if i == 0 else hidden, hidden) for i in range(num_layers)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)[0] if self.impl == "fused" else self.net(x)


# ------------------------------------------------------------------------------------------------------
# Attention blocks and Decoder-Net
# ------------------------------------------------------------------------------------------------------
class DotAttentionBlock(nn.Module):
    """``+A``: ``H + softmax(Q Kᵀ / sqrt(d)) V`` with single-head projections ``Q, K, V`` of ``H`` (eq. 11)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.att = MultiHeadAttention(hidden, 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.att(h)


class SparseEncoderBlock(nn.Module):
    """``+STE``, section 2.2.2: ``A = H + SparseMultiHead(LN(H))`` (eq. 14), then ``A + MLP(LN(A))``.

    The MLP is ``Linear(hidden, mlp_ratio hidden) - ReLU - Linear(mlp_ratio hidden, hidden)``.
    """

    def __init__(
        self, hidden: int, heads: int, sparsity: float, mlp_ratio: int, criterion: str, impl: str = "masked"
    ) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden)
        self.att = MultiHeadAttention(hidden, heads, sparsity=sparsity, criterion=criterion, impl=impl)
        self.norm2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(
            nn.Linear(hidden, mlp_ratio * hidden), nn.ReLU(), nn.Linear(mlp_ratio * hidden, hidden)
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        a = h + self.att(self.norm1(h))
        return a + self.mlp(self.norm2(a))


class DecoderNet(nn.Module):
    """Eq. 15: ``y = Linear_2(ReLU(Linear_1(x)) + x)``; ``(B, hidden) -> (B, d)``."""

    def __init__(self, hidden: int, n_outputs: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(hidden, hidden)
        self.fc2 = nn.Linear(hidden, n_outputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.fc1(x)) + x)


# ------------------------------------------------------------------------------------------------------
# The configurable network
# ------------------------------------------------------------------------------------------------------
#: Hu et al. (2024)'s network sizes (PartsNet: GRU + sparse encoder)
HU2024_NET = Preset(
    name="hu2024",
    source="Hu et al. (2024), Table 1",
    settings=dict(hidden=72, heads=4, num_layers=1, sparsity=0.49, cell="gru", attention="sparse"),
    aliases=("paper_001",),
)


@dataclass(frozen=True)
class NetConfig:
    """Architecture of an :class:`InverseNet` (defaults: PartsNet with Table 1's sizes).

    Attributes:
        n_features: ``C``, features per time step (2 for force and displacement).
        n_outputs: ``d``, calibrated parameters.
        hidden: hidden size of the recurrent layers, the attention blocks and Decoder-Net (Table 1: 72).
        cell: ``"gru"`` or ``"rnn"``.
        attention: ``"none"``, ``"dot"``, ``"transformer"`` or ``"sparse"``.
        heads: attention heads of the multi-head blocks (Table 1: 4).
        num_layers: recurrent layers, and attention blocks after them (Table 1: 1).
        sparsity: fraction of scores dropped per query row by the sparse blocks (Table 1: 0.49).
        recurrent_impl: ``"fused"`` (torch.nn.GRU/RNN) or ``"eq"`` (eqs. 7-10 literally).
        mlp_ratio: width of the encoder MLPs (and TransE's feed-forward block) in units of ``hidden``.
        pool: ``"last"`` (the last time step) or ``"mean"`` (mean over time) before Decoder-Net.
        criterion: ``"value"`` or ``"abs"``: how eq. 13 compares scores with the threshold.
        attention_impl: ``"masked"`` (reference, default) or ``"fused"`` (``scaled_dot_product_attention`` with
            the boolean mask; equal to round-off) for the sparse blocks.
    """

    n_features: int = 2
    n_outputs: int = 3
    hidden: int = 72
    cell: str = "gru"
    attention: str = "sparse"
    heads: int = 4
    num_layers: int = 1
    sparsity: float = 0.49
    recurrent_impl: str = "fused"
    mlp_ratio: int = 2
    pool: str = "last"
    criterion: str = "value"
    attention_impl: str = "masked"

    def __post_init__(self) -> None:
        for k in ("n_features", "n_outputs", "hidden", "heads", "num_layers", "mlp_ratio"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigurationError(f"NetConfig.{k} must be a positive integer, got {v!r}")
        for k, allowed in (
            ("cell", CELLS),
            ("attention", ATTENTIONS),
            ("recurrent_impl", IMPLS),
            ("pool", POOLS),
            ("criterion", CRITERIA),
            ("attention_impl", ATTENTION_IMPLS),
        ):
            if getattr(self, k) not in allowed:
                raise ConfigurationError(f"NetConfig.{k} must be one of {allowed}, got {getattr(self, k)!r}")
        n_dropped(2, float(self.sparsity))
        if self.attention in ("transformer", "sparse") and self.hidden % self.heads:
            raise ConfigurationError(
                f"hidden ({self.hidden}) must be a multiple of heads ({self.heads}); change one of them"
            )

    @classmethod
    def hu2024(cls, **overrides: Any) -> NetConfig:
        """Hu et al. (2024) Table 1 (:data:`HU2024_NET`): hidden size 72, 4 heads, 1 layer, sparsity 0.49
        (PartsNet: GRU + sparse encoder)."""
        return cls(**HU2024_NET.merged(overrides))

    paper_001 = deprecated_preset("paper_001")

    @classmethod
    def variant(cls, name: str, **overrides: Any) -> NetConfig:
        """One of Table 4's networks (:data:`VARIANTS`) with Table 1's shared sizes, overridable."""
        if name not in VARIANTS:
            raise ConfigurationError(f"unknown network {name!r}; the variants are {list(VARIANTS)}")
        cell, att = VARIANTS[name]
        return cls.hu2024(**{**overrides, "cell": cell, "attention": att})

    @property
    def name(self) -> str:
        """The Table 4 name of this (cell, attention) pair."""
        return next(k for k, v in VARIANTS.items() if v == (self.cell, self.attention))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NetConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def with_(self, **changes: Any) -> NetConfig:
        return replace(self, **changes)


class InverseNet(nn.Module):
    """Sequence ``(B, L, C)`` -> parameters ``(B, d)``: recurrent layers, attention blocks, pooling, Decoder-Net."""

    def __init__(self, config: NetConfig) -> None:
        super().__init__()
        self.config = c = config
        self.recurrent = Recurrent(c.cell, c.n_features, c.hidden, c.num_layers, c.recurrent_impl)
        blocks: list[nn.Module] = []
        for _ in range(c.num_layers if c.attention != "none" else 0):
            if c.attention == "dot":
                blocks.append(DotAttentionBlock(c.hidden))
            elif c.attention == "transformer":
                blocks.append(
                    nn.TransformerEncoderLayer(
                        c.hidden, c.heads, dim_feedforward=c.mlp_ratio * c.hidden, dropout=0.0, batch_first=True
                    )
                )
            else:
                blocks.append(
                    SparseEncoderBlock(c.hidden, c.heads, c.sparsity, c.mlp_ratio, c.criterion, c.attention_impl)
                )
        self.blocks = nn.ModuleList(blocks)
        self.decoder = DecoderNet(c.hidden, c.n_outputs)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Encoder-Net: ``(B, L, C) -> (B, L, hidden)``."""
        if x.ndim != 3 or x.shape[-1] != self.config.n_features:
            raise ConfigurationError(
                f"the network takes (batch, length, {self.config.n_features}) sequences, got shape {tuple(x.shape)}"
            )
        h = self.recurrent(x)
        for b in self.blocks:
            h = b(h)
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.encode(x)
        z = h[:, -1] if self.config.pool == "last" else h.mean(dim=1)
        return self.decoder(z)

    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
