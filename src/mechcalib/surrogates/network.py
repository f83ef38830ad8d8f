"""The one-hidden-layer perceptron of eqs. 1-2: forward pass, loss and gradients, the trained :class:`MLP`.

See :mod:`mechcalib.surrogates.mlp` for the method (scaling, training, cross-validated sizing)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SeedLike = int | np.random.Generator | None


# ------------------------------------------------------------------------------------------------------
# Kernels
# ------------------------------------------------------------------------------------------------------
def sigmoid(u: np.ndarray) -> np.ndarray:
    """Eq. 2: ``1 / (1 + exp(-u))`` (overflow-safe)."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(u, dtype=float)))


def mrp_error(
    O: np.ndarray, T: np.ndarray, t_min: float | np.ndarray, t_max: float | np.ndarray, axis: int = -1
) -> np.ndarray:
    """Eq. 10: ``Σ |O_i - T_i| / (|D| (T_max - T_min))`` with the training targets' range ``[T_min, T_max]``.

    ``O``, ``T``: outputs and targets (broadcast); the mean is taken along ``axis``; ``t_min``/``t_max``
    broadcast against the result.
    """
    return np.mean(np.abs(np.asarray(O) - np.asarray(T)), axis=axis) / (np.asarray(t_max) - np.asarray(t_min))


def pe_ratio(errors: np.ndarray, J: int) -> np.ndarray:
    """Eq. 11 at the last iteration ``k``: ``Σ_{j=k-J}^{k} ε_j / Σ_{j=k-2J}^{k-J-1} ε_j``.

    Args:
        errors: ``(k + 1, ...)`` ``ε^MRP_j`` for ``j = 0 ... k`` (leading axis: iterations).
        J: smoothing window.

    Returns:
        The ratio (shape ``errors.shape[1:]``); NaN while ``k < 2J``.
    """
    e = np.asarray(errors, dtype=float)
    k = e.shape[0] - 1
    if k < 2 * J:
        return np.full(e.shape[1:], np.nan)
    return e[k - J : k + 1].sum(axis=0) / e[k - 2 * J : k - J].sum(axis=0)


def forward(X1: np.ndarray, W1: np.ndarray, w2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 1 for a batch of networks sharing inputs.

    Args:
        X1: ``(n, d + 1)`` scaled inputs with a trailing bias column of ones.
        W1: ``(B, d + 1, h)`` input-to-hidden weights (last row: bias weights).
        w2: ``(B, h + 1)`` hidden-to-output weights (last entry: bias weight).

    Returns:
        ``(O, H)``: outputs ``(B, n)`` and hidden activations ``(B, n, h)``.
    """
    H = sigmoid(np.einsum("nd,bdh->bnh", X1, W1))
    return np.einsum("bnh,bh->bn", H, w2[:, :-1]) + w2[:, -1:], H


def loss_and_grad(
    X1: np.ndarray, Y: np.ndarray, M: np.ndarray, W1: np.ndarray, w2: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-network loss ``L_b = Σ_i M_bi (O_bi - Y_bi)^2 / (2 Σ_i M_bi)`` and its analytic gradients.

    Args:
        X1: ``(n, d + 1)``; Y: ``(B, n)`` scaled targets; M: ``(B, n)`` 0/1 training masks.
        W1, w2: as in :func:`forward`.

    Returns:
        ``(L (B,), dW1 (B, d + 1, h), dw2 (B, h + 1))``.
    """
    O, H = forward(X1, W1, w2)
    cnt = M.sum(axis=1)
    R = M * (O - Y)
    L = 0.5 * np.sum(R * (O - Y), axis=1) / cnt
    E = R / cnt[:, None]  # dL/dO
    dw2 = np.concatenate([np.einsum("bn,bnh->bh", E, H), E.sum(axis=1, keepdims=True)], axis=1)
    dZ = E[:, :, None] * w2[:, None, :-1] * H * (1.0 - H)
    dW1 = np.einsum("nd,bnh->bdh", X1, dZ)
    return L, dW1, dw2


# ------------------------------------------------------------------------------------------------------
# Networks
# ------------------------------------------------------------------------------------------------------
@dataclass
class MLP:
    """A trained network: ``predict`` maps raw inputs ``(n, d)`` to raw outputs ``(n,)``.

    Attributes:
        W1: ``(d + 1, h)``; w2: ``(h + 1,)``; x_lo, x_hi: ``(d,)`` input scaling; y_lo, y_hi: target scaling
        (the training range, also the scale of eq. 10). ``cv_errors``: ``{h: ε^CV_h}`` of the search that
        chose it; ``train_error``: ``ε^MRP(D_train)``; ``iterations``: CG iterations of its training.
    """

    W1: np.ndarray
    w2: np.ndarray
    x_lo: np.ndarray
    x_hi: np.ndarray
    y_lo: float
    y_hi: float
    cv_errors: dict[int, float] = field(default_factory=dict)
    train_error: float = float("nan")
    iterations: int = 0

    @property
    def h(self) -> int:
        return int(self.W1.shape[1])

    def scale_inputs(self, X: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=float))
        return _with_bias(_scale(X, self.x_lo, self.x_hi))

    def predict(self, X: np.ndarray) -> np.ndarray:
        O, _ = forward(self.scale_inputs(X), self.W1[None], self.w2[None])
        return self.y_lo + (self.y_hi - self.y_lo) * O[0]

    def error(self, X: np.ndarray, y: np.ndarray) -> float:
        """Eq. 10 on a dataset, scaled by this network's training range."""
        return float(mrp_error(self.predict(X), np.asarray(y, dtype=float), self.y_lo, self.y_hi))

    def to_dict(self) -> dict:
        """Plain lists and numbers (JSON, a run store's config) that :meth:`from_dict` restores exactly."""
        return {
            "W1": self.W1.tolist(),
            "w2": self.w2.tolist(),
            "x_lo": self.x_lo.tolist(),
            "x_hi": self.x_hi.tolist(),
            "y_lo": self.y_lo,
            "y_hi": self.y_hi,
            "cv_errors": [[h, e] for h, e in self.cv_errors.items()],
            "train_error": self.train_error,
            "iterations": self.iterations,
        }

    @classmethod
    def from_dict(cls, d: dict) -> MLP:
        return cls(
            np.asarray(d["W1"], dtype=float),
            np.asarray(d["w2"], dtype=float),
            np.asarray(d["x_lo"], dtype=float),
            np.asarray(d["x_hi"], dtype=float),
            float(d["y_lo"]),
            float(d["y_hi"]),
            {int(h): float(e) for h, e in d["cv_errors"]},
            float(d["train_error"]),
            int(d["iterations"]),
        )


def _scale(X: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    span = np.where(hi > lo, hi - lo, 1.0)
    return (X - lo) / span


def _with_bias(X: np.ndarray) -> np.ndarray:
    return np.concatenate([X, np.ones((X.shape[0], 1))], axis=1)


def _unpack(theta: np.ndarray, B: int, d1: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    n1 = B * d1 * h
    return theta[:n1].reshape(B, d1, h), theta[n1:].reshape(B, h + 1)


def init_weights(rng: np.random.Generator, B: int, d1: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Uniform random weights in ``±1/sqrt(fan_in)``: ``(B, d1, h)`` and ``(B, h + 1)``."""
    W1 = rng.uniform(-1.0, 1.0, (B, d1, h)) * (2.0 / np.sqrt(d1))
    w2 = rng.uniform(-1.0, 1.0, (B, h + 1)) / np.sqrt(h + 1)
    return W1, w2


def _pack(W1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """``(B, d1, h)``, ``(B, h + 1)`` -> ``(B, d1 h + h + 1)`` rows of per-network parameters."""
    return np.concatenate([W1.reshape(W1.shape[0], -1), w2], axis=1)


def _split(T: np.ndarray, d1: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    return T[:, : d1 * h].reshape(-1, d1, h), T[:, d1 * h :]
