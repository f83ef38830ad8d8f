"""One-hidden-layer perceptrons trained by conjugate gradients, sized by cross-validation (seed 003, s. 7).

Network (eqs. 1-2): inputs scaled to ``[0, 1]`` (min-max over the training data), one hidden layer of ``h``
sigmoid neurons with a bias neuron in the input and hidden layers, one output neuron. The output neuron is
linear and the target is scaled to ``[0, 1]`` by the training range; seed 003 only asks that data be
transformed "into the range of the activation functions", and a linear output keeps the scaled target's
ends reachable.

Training: nonlinear conjugate gradients (Polak-Ribière PR+, a line search to the strong Wolfe conditions) on
the mean squared error with analytic gradients. Every network of a cross-validation search (the ``V`` folds,
the candidate hidden sizes, the outputs) runs its own conjugate-gradient training with its own stop, and one
compiled, threaded call (:func:`_train_many`, numba) trains them all: no Python runs per iteration, and a
network that stops early costs nothing more. Networks whose inputs are the rows of a product ``(a_i, b_k)``
(Forward Complex: a simulation's parameters times its time steps) are trained on that structure: the hidden
pre-activation splits into ``u_ijk = a_ij + c_kj``, so ``sigmoid(u) = 1 / (1 + exp(-a_ij) exp(-c_kj))`` needs
exponentials only per simulation and per time step, not per sample (:func:`fit_mlp_product`). Why compiled
loops rather than a padded stack of networks in numpy or torch: the networks are tiny (100 samples, up to ~15
neurons), so array code is dominated by per-call overhead, and padding to the largest size wastes work; on
this project's 2-core machine torch's sigmoid of 1.17 M values took 12 ms against numpy's 5 ms.

``CVSettings(trainer=...)`` selects the trainer: ``"compiled"`` (the default, above), ``"numpy"`` (the same
algorithm as vectorised numpy over the batch, :func:`cg_batch`; the reference the compiled one is tested
against) or ``"scipy"`` (``scipy.optimize.minimize(method="CG")`` on the summed loss of the batch: the
gradient is block-separable but step lengths and directions are shared, which stalls networks whose curvature
differs from the rest; measured on the nine Forward Split outputs with ``h = 7``: training errors 0.53-2.8 %
against 0.24-1.1 % with per-network steps, at the same cost).

Stopping (eq. 11, Table 3): each network's mean relative prediction error ``ε^MRP_k`` (eq. 10) on its own
training samples is recorded every iteration; a network stops at the first ``k >= 2J`` where
``r^PE_k = Σ_{j=k-J}^{k} ε_j / Σ_{j=k-2J}^{k-J-1} ε_j`` exceeds ``r^PE_max``, and keeps the weights it had
then, or after ``K`` iterations.

Hidden neurons (eqs. 12-13, Table 3): ``V``-fold cross-validation from ``h_min`` upward; every time
``r^CVE_h = ε^CV_h / ε^CV_{h-1}`` exceeds ``r^CVE_max`` counts, and after ``W`` counts the search stops. The
architecture with the smallest ``ε^CV_h`` is chosen, and of its ``V`` trained networks the one with the
smallest training error ``ε^MRP(D_train)`` on the whole training set. The search runs in rounds: an output
that has counted ``c`` exceedances needs at least ``W - c`` more sizes before it can stop, so that many
sizes are trained for it in one call. Every network's initial weights come from a generator seeded by
``(seed, output, h, fold)``, so the chosen networks do not depend on how the rounds batch them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numba as nb
import numpy as np
from scipy.optimize import minimize

from ..errors import ConfigurationError

SeedLike = int | np.random.Generator | None


# ------------------------------------------------------------------------------------------------------
# Kernels
# ------------------------------------------------------------------------------------------------------
def sigmoid(u: np.ndarray) -> np.ndarray:
    """Eq. 2: ``1 / (1 + exp(-u))`` (overflow-safe)."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(u, dtype=float)))


def mrp_error(O: np.ndarray, T: np.ndarray, t_min: float | np.ndarray, t_max: float | np.ndarray, axis: int = -1) -> np.ndarray:
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
        return {"W1": self.W1.tolist(), "w2": self.w2.tolist(), "x_lo": self.x_lo.tolist(), "x_hi": self.x_hi.tolist(),
                "y_lo": self.y_lo, "y_hi": self.y_hi, "cv_errors": [[h, e] for h, e in self.cv_errors.items()],
                "train_error": self.train_error, "iterations": self.iterations}

    @classmethod
    def from_dict(cls, d: dict) -> MLP:
        return cls(np.asarray(d["W1"], dtype=float), np.asarray(d["w2"], dtype=float), np.asarray(d["x_lo"], dtype=float),
                   np.asarray(d["x_hi"], dtype=float), float(d["y_lo"]), float(d["y_hi"]),
                   {int(h): float(e) for h, e in d["cv_errors"]}, float(d["train_error"]), int(d["iterations"]))


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


def train_batch(
    X1: np.ndarray,
    Y: np.ndarray,
    M: np.ndarray,
    h: int,
    *,
    K: int = 5000,
    J: int = 100,
    r_pe_max: float = 0.999,
    rng: np.random.Generator,
    trainer: str = "compiled",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train ``B`` networks with ``h`` hidden neurons by conjugate gradients with the stopping rule of eq. 11.

    Args:
        X1: ``(n, d + 1)`` scaled inputs with a bias column.
        Y: ``(B, n)`` scaled targets of each network.
        M: ``(B, n)`` training masks (1 where the sample trains network ``b``).
        h: hidden neurons; K, J, r_pe_max: Table 3.
        trainer: ``"compiled"`` (:func:`_train_many`), ``"numpy"`` (:func:`cg_batch`) or ``"scipy"``
            (shared steps); see the module docstring.

    Returns:
        ``(W1 (B, d + 1, h), w2 (B, h + 1), iterations (B,))``: each network's weights at its own stop.
    """
    _check_trainer(trainer)
    if trainer == "scipy":
        return _train_batch_scipy(X1, Y, M, h, K=K, J=J, r_pe_max=r_pe_max, rng=rng)
    B, d1 = Y.shape[0], X1.shape[1]
    W1, w2 = init_weights(rng, B, d1, h)
    if trainer == "compiled":
        theta = _pack(W1, w2)
        Mb = np.asarray(M, dtype=bool)
        iters = np.zeros(B, dtype=np.int64)
        _train_many(theta, np.full(B, h, dtype=np.int64), np.arange(B, dtype=np.int64), np.ascontiguousarray(Mb),
                    np.ascontiguousarray(X1[:, :-1], dtype=float), np.zeros((1, 0)),
                    np.ascontiguousarray(np.asarray(Y, dtype=float)[:, :, None]), int(K), int(J), float(r_pe_max), iters)
        W1, w2 = _split(theta, d1, h)
        return W1, w2, iters
    Mf = M.astype(float)
    cnt = Mf.sum(axis=1)
    iters = np.full(B, K, dtype=int)
    hist: list[np.ndarray] = []

    def fg(idx: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, b = _split(T, d1, h)
        L, g1, g2 = loss_and_grad(X1, Y[idx], Mf[idx], a, b)
        return L, _pack(g1, g2)

    def on_iteration(k: int, T: np.ndarray, active: np.ndarray) -> np.ndarray:
        a, b = _split(T, d1, h)
        O, _ = forward(X1, a, b)
        hist.append(np.sum(Mf * np.abs(O - Y), axis=1) / cnt)  # eq. 10 in scaled units (range 1)
        if k >= 2 * J:
            r = pe_ratio(np.asarray(hist[-(2 * J + 1) :]), J)
            new = active & (r > r_pe_max)
            iters[new] = k
            active = active & ~new
        return active

    T = cg_batch(fg, _pack(W1, w2), on_iteration, K)
    W1, w2 = _split(T, d1, h)
    return W1, w2, iters


TRAINERS = ("compiled", "numpy", "scipy")


def _check_trainer(trainer: str) -> None:
    if trainer not in TRAINERS:
        raise ConfigurationError(f"trainer must be one of {list(TRAINERS)}, got {trainer!r}")


def _train_batch_scipy(
    X1: np.ndarray,
    Y: np.ndarray,
    M: np.ndarray,
    h: int,
    *,
    K: int,
    J: int,
    r_pe_max: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`train_batch` with ``scipy.optimize.minimize(method="CG")`` on the summed loss of the batch."""
    B, d1 = Y.shape[0], X1.shape[1]
    W1, w2 = init_weights(rng, B, d1, h)
    theta = np.concatenate([W1.ravel(), w2.ravel()])
    Mf = M.astype(float)
    cnt = Mf.sum(axis=1)
    best_W1, best_w2 = W1.copy(), w2.copy()
    stopped = np.zeros(B, dtype=bool)
    iters = np.full(B, K, dtype=int)
    hist: list[np.ndarray] = []

    def fun(th: np.ndarray) -> tuple[float, np.ndarray]:
        a, b = _unpack(th, B, d1, h)
        L, g1, g2 = loss_and_grad(X1, Y, Mf, a, b)
        return float(L.sum()), np.concatenate([g1.ravel(), g2.ravel()])

    def record(th: np.ndarray) -> bool:
        a, b = _unpack(th, B, d1, h)
        O, _ = forward(X1, a, b)
        hist.append(np.sum(Mf * np.abs(O - Y), axis=1) / cnt)  # eq. 10 in scaled units (range 1)
        k = len(hist) - 1
        if k >= 2 * J:
            r = pe_ratio(np.asarray(hist[-(2 * J + 1) :]), J)
            new = (~stopped) & (r > r_pe_max)
            if new.any():
                best_W1[new], best_w2[new] = a[new], b[new]
                iters[new] = k
                stopped[new] = True
        return bool(stopped.all()) or k >= K

    done = record(theta)
    while not done:

        def callback(intermediate_result) -> None:
            nonlocal done
            if record(intermediate_result.x):
                done = True
                raise StopIteration

        res = minimize(fun, theta, jac=True, method="CG", callback=callback,
                       options={"maxiter": K - (len(hist) - 1), "gtol": 0.0})
        progressed = not np.array_equal(res.x, theta)
        theta = res.x
        if not done and not progressed:  # line search cannot move: converged to precision
            break
    a, b = _unpack(theta, B, d1, h)
    best_W1[~stopped], best_w2[~stopped] = a[~stopped], b[~stopped]
    iters[~stopped] = len(hist) - 1
    return best_W1, best_w2, iters


def _pack(W1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """``(B, d1, h)``, ``(B, h + 1)`` -> ``(B, d1 h + h + 1)`` rows of per-network parameters."""
    return np.concatenate([W1.reshape(W1.shape[0], -1), w2], axis=1)


def _split(T: np.ndarray, d1: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    return T[:, : d1 * h].reshape(-1, d1, h), T[:, d1 * h :]


def line_search_batch(
    fg: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    T: np.ndarray,
    D: np.ndarray,
    f0: np.ndarray,
    g0: np.ndarray,
    a0: np.ndarray,
    *,
    max_evals: int = 6,
    c1: float = 1e-4,
    c2: float = 0.1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised line search along each network's own direction (bracketing with secant steps).

    Args:
        fg: ``(idx, T_sub) -> (losses, gradients)`` for the networks ``idx``.
        T: ``(B, P)`` parameters; D: ``(B, P)`` descent directions; f0: ``(B,)`` losses at ``T``;
        g0: ``(B,)`` directional derivatives ``∇L·D < 0``; a0: ``(B,)`` first trial steps.

    Returns:
        ``(a, f, G)``: the accepted step (the evaluated point of lowest loss; 0 if none decreased it), its loss
        and gradient ``(B, P)`` (``NaN`` rows where ``a = 0``: the caller keeps its gradient). A network stops
        searching once the strong Wolfe conditions hold (``c1``, ``c2``).
    """
    B = T.shape[0]
    lo, flo, dlo = np.zeros(B), f0.copy(), g0.copy()
    hi = np.full(B, np.inf)
    dhi = np.full(B, np.nan)
    a = a0.copy()
    best_a, best_f = np.zeros(B), f0.copy()
    best_G = np.full(T.shape, np.nan)
    todo = np.ones(B, dtype=bool)
    for _ in range(max_evals):
        idx = np.flatnonzero(todo)
        if idx.size == 0:
            break
        ai = a[idx]
        f, G = fg(idx, T[idx] + ai[:, None] * D[idx])
        d = np.einsum("bp,bp->b", G, D[idx])
        f = np.where(np.isfinite(f), f, np.inf)
        better = f < best_f[idx]
        bi = idx[better]
        best_a[bi], best_f[bi], best_G[bi] = ai[better], f[better], G[better]
        wolfe = (f <= f0[idx] + c1 * ai * g0[idx]) & (np.abs(d) <= -c2 * g0[idx])
        todo[idx[wolfe]] = False
        # update the bracket: a point with a higher loss or an ascending slope closes it
        up = (f > flo[idx]) | (d >= 0)
        hi[idx[up]], dhi[idx[up]] = ai[up], d[up]
        dn = ~up
        lo[idx[dn]], flo[idx[dn]], dlo[idx[dn]] = ai[dn], f[dn], d[dn]
        l, hgh = lo[idx], hi[idx]
        open_ = ~np.isfinite(hgh)
        with np.errstate(invalid="ignore", divide="ignore"):
            sec = l - dlo[idx] * (hgh - l) / (dhi[idx] - dlo[idx])
            ok = np.isfinite(sec) & (sec > l + 0.1 * (hgh - l)) & (sec < hgh - 0.1 * (hgh - l))
        nxt = np.where(open_, 3.0 * np.maximum(ai, l), np.where(ok, sec, 0.5 * (l + hgh)))
        a[idx] = nxt
    return best_a, best_f, best_G


def cg_batch(
    fg: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    T0: np.ndarray,
    on_iteration: Callable[[int, np.ndarray, np.ndarray], np.ndarray],
    K: int,
) -> np.ndarray:
    """Polak-Ribière (PR+) nonlinear conjugate gradients run for ``B`` independent problems at once.

    Each problem has its own direction, ``β`` and line search (:func:`line_search_batch`); one vectorised
    gradient evaluation serves every problem still running. ``on_iteration(k, T, active)`` is called after
    each iteration and returns the updated ``(B,)`` mask of problems that continue.

    Args:
        fg: ``(idx, T_sub) -> (losses (m,), gradients (m, P))``.
        T0: ``(B, P)`` starting points.
        K: maximal iterations.

    Returns:
        ``(B, P)`` final parameters (a problem keeps the point it had when it left).
    """
    T = T0.copy()
    B = T.shape[0]
    all_idx = np.arange(B)
    f, G = fg(all_idx, T)
    D = -G
    gg = np.einsum("bp,bp->b", G, G)
    a_init = 1.0 / np.maximum(np.sqrt(gg), 1e-12)
    active = on_iteration(0, T, np.ones(B, dtype=bool))
    for k in range(1, K + 1):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        g0 = np.einsum("bp,bp->b", G[idx], D[idx])
        bad = g0 >= 0  # not a descent direction: restart along -G
        if bad.any():
            D[idx[bad]] = -G[idx[bad]]
            g0[bad] = -gg[idx[bad]]

        def sub(i, Ts, idx=idx):
            return fg(idx[i], Ts)

        a, fn, Gn = line_search_batch(sub, T[idx], D[idx], f[idx], g0, a_init[idx])
        moved = a > 0
        mi = idx[moved]
        T[mi] += a[moved, None] * D[mi]
        f[mi] = fn[moved]
        Gnew = Gn[moved]
        beta = np.maximum(0.0, np.einsum("bp,bp->b", Gnew, Gnew - G[mi]) / np.maximum(gg[mi], 1e-300))  # PR+
        g_old_d = g0[moved]
        G[mi] = Gnew
        gg[mi] = np.einsum("bp,bp->b", Gnew, Gnew)
        D[mi] = -Gnew + beta[:, None] * D[mi]
        # next first trial: the step that would repeat the last decrease (Nocedal & Wright eq. 3.60)
        gd = np.einsum("bp,bp->b", Gnew, D[mi])
        with np.errstate(invalid="ignore", divide="ignore"):
            a_init[mi] = np.where(gd < 0, np.clip(a[moved] * g_old_d / gd, 1e-8, 1e8), a[moved])
        stuck = idx[~moved]  # no decrease found: restart along -G with a smaller first step
        D[stuck] = -G[stuck]
        a_init[stuck] = a_init[stuck] * 0.1
        active = on_iteration(k, T, active)
    return T


# ------------------------------------------------------------------------------------------------------
# Compiled trainer: one conjugate-gradient run per network, all networks in one threaded call
# ------------------------------------------------------------------------------------------------------
U_CLIP = 300.0  # |pre-activation part| bound: exp(±300) products stay finite and nonzero, so sigmoid is exact


_FM = {"contract", "reassoc", "nsz", "arcp"}  # SIMD reductions; NaN/inf semantics kept (no nnan/ninf)


@nb.njit(cache=True, fastmath=_FM)
def _preactivation(theta, h, XT, first, bias_row, U):
    """``U[j, i] = Σ_m XT[m, i] W1[first + m, j]`` (plus ``W1[bias_row, j]`` when ``bias_row >= 0``)."""
    for j in range(h):
        bj = theta[bias_row * h + j] if bias_row >= 0 else 0.0
        for i in range(XT.shape[1]):
            U[j, i] = bj
        for m in range(XT.shape[0]):
            w = theta[(first + m) * h + j]
            for i in range(XT.shape[1]):
                U[j, i] += XT[m, i] * w


@nb.njit(cache=True, fastmath=_FM)
def _net_eval(theta, h, XaT, XbT, Yr, A, C, H, Sa, Sc, e, G):
    """Eqs. 1-2 and the loss ``L = Σ (O - Y)^2 / (2 N)`` of one network with its gradient ``G``.

    Inputs are the product rows ``(a_i, b_k)`` of ``XaT`` ``(da, na)`` (the network's training rows,
    transposed) and ``XbT`` ``(db, nb)`` (``nb = 1, db = 0`` for plain inputs); targets ``Yr`` ``(na, nb)``,
    ``N = na nb`` samples. ``theta`` holds ``W1`` ``(da + db + 1, h)`` row-major (rows: ``a`` features,
    ``b`` features, bias), then ``w2`` ``(h + 1)`` (last: bias). With a product the pre-activation is
    ``a_ij + c_kj`` and ``sigmoid = 1 / (1 + exp(-a_ij) exp(-c_kj))``. Loops run over samples innermost
    (contiguous, vectorised). Returns ``(L, ε^MRP)`` (eq. 10 in scaled units).
    """
    da, na = XaT.shape
    db, nbk = XbT.shape
    d1 = da + db + 1
    off2 = d1 * h
    inv_n = 1.0 / (na * nbk)
    L = 0.0
    E1 = 0.0
    b2 = theta[off2 + h]
    _preactivation(theta, h, XaT, 0, d1 - 1, A)
    if db == 0 and nbk == 1:  # plain inputs: A holds the hidden activations (h, na)
        for j in range(h):
            for ii in range(na):
                A[j, ii] = 1.0 / (1.0 + math.exp(-min(max(A[j, ii], -U_CLIP), U_CLIP)))
        for ii in range(na):
            e[ii] = b2
        for j in range(h):
            w = theta[off2 + j]
            for ii in range(na):
                e[ii] += w * A[j, ii]
        L, E1, gb = _residuals(e, Yr[:, 0], inv_n)
        for j in range(h):
            w = theta[off2 + j]
            g2 = 0.0
            for ii in range(na):
                hv = A[j, ii]
                g2 += e[ii] * hv
                Sa[j, ii] = e[ii] * w * hv * (1.0 - hv)
            G[off2 + j] = g2
    else:  # product inputs: exp(-a) per row and exp(-c) per column, no exponential per sample
        _preactivation(theta, h, XbT, da, -1, C)
        for j in range(h):
            for ii in range(na):
                A[j, ii] = math.exp(-min(max(A[j, ii], -U_CLIP), U_CLIP))
            for k in range(nbk):
                C[j, k] = math.exp(-min(max(C[j, k], -U_CLIP), U_CLIP))
                Sc[j, k] = 0.0
            G[off2 + j] = 0.0
        gb = 0.0
        for ii in range(na):
            for k in range(nbk):
                e[k] = b2
            for j in range(h):
                aij = A[j, ii]
                w = theta[off2 + j]
                for k in range(nbk):
                    hv = 1.0 / (1.0 + aij * C[j, k])
                    H[j, k] = hv
                    e[k] += w * hv
            li, ei, gi = _residuals(e, Yr[ii], inv_n)
            L += li
            E1 += ei
            gb += gi
            for j in range(h):
                w = theta[off2 + j]
                g2 = 0.0
                sa = 0.0
                for k in range(nbk):
                    hv = H[j, k]
                    g2 += e[k] * hv
                    dz = e[k] * w * hv * (1.0 - hv)
                    sa += dz
                    Sc[j, k] += dz
                G[off2 + j] += g2
                Sa[j, ii] = sa
        _input_grads(XbT, Sc, da, -1, h, G)
    G[off2 + h] = gb
    _input_grads(XaT, Sa, 0, d1 - 1, h, G)
    return 0.5 * L * inv_n, E1 * inv_n


@nb.njit(cache=True, fastmath=_FM)
def _residuals(e, y, inv_n):
    """Outputs ``e[:y.size]`` -> ``dL/dO`` in place; returns ``(Σ r^2, Σ |r|, Σ dL/dO)``."""
    L = 0.0
    E1 = 0.0
    g = 0.0
    for i in range(y.size):
        r = e[i] - y[i]
        L += r * r
        E1 += abs(r)
        e[i] = r * inv_n
        g += e[i]
    return L, E1, g


@nb.njit(cache=True, fastmath=_FM)
def _input_grads(XT, S, first, bias_row, h, G):
    """``G`` of ``W1[first + m, j]`` = ``Σ_i XT[m, i] S[j, i]`` (and of ``W1[bias_row, j]`` = ``Σ_i S[j, i]``)."""
    for j in range(h):
        if bias_row >= 0:
            acc = 0.0
            for i in range(XT.shape[1]):
                acc += S[j, i]
            G[bias_row * h + j] = acc
        for m in range(XT.shape[0]):
            acc = 0.0
            for i in range(XT.shape[1]):
                acc += XT[m, i] * S[j, i]
            G[(first + m) * h + j] = acc


@nb.njit(cache=True)
def _train_one(theta, h, Xa, Xb, Y, rows, K, J, r_pe_max):
    """PR+ conjugate gradients of one network from ``theta`` (updated in place) with the stop of eq. 11.

    The same algorithm as :func:`cg_batch` with :func:`line_search_batch` (bracketing with secant steps,
    strong Wolfe ``c1 = 1e-4``, ``c2 = 0.1``, at most 6 evaluations) for a single network. Returns the
    iteration at which the network stopped (``K`` if eq. 11 never stopped it).
    """
    P = theta.size
    na, nbk = rows.size, Xb.shape[0]
    XaT = np.ascontiguousarray(Xa[rows].T)  # the network's training rows, samples contiguous
    XbT = np.ascontiguousarray(Xb.T)
    Yr = np.ascontiguousarray(Y[rows])
    A, Sa = np.empty((h, na)), np.empty((h, na))
    C, Sc, H = np.empty((h, nbk)), np.empty((h, nbk)), np.empty((h, nbk))
    e = np.empty(max(na, nbk))
    G, Gt, Gbest = np.empty(P), np.empty(P), np.empty(P)
    trial = np.empty(P)
    f, err = _net_eval(theta, h, XaT, XbT, Yr, A, C, H, Sa, Sc, e, G)
    D = -G
    gg = np.dot(G, G)
    a_init = 1.0 / max(math.sqrt(gg), 1e-12)
    cs = np.zeros(K + 2)  # cs[k + 1] = Σ_{j <= k} ε_j (eq. 11 windows in O(1))
    cs[1] = err
    for k in range(1, K + 1):
        g0 = np.dot(G, D)
        if g0 >= 0.0:  # not a descent direction: restart along -G
            D[:] = -G
            g0 = -gg
        # line search along D (bracket [lo, hi], secant or bisection inside it, expansion outside)
        lo, flo, dlo = 0.0, f, g0
        hi, dhi = math.inf, math.nan
        a = a_init
        best_a, best_f, best_e = 0.0, f, err
        for _ in range(6):
            for q in range(P):
                trial[q] = theta[q] + a * D[q]
            ft, et = _net_eval(trial, h, XaT, XbT, Yr, A, C, H, Sa, Sc, e, Gt)
            dt = np.dot(Gt, D)
            if not math.isfinite(ft):
                ft = math.inf
            if ft < best_f:
                best_a, best_f, best_e = a, ft, et
                Gbest[:] = Gt
            if ft <= f + 1e-4 * a * g0 and abs(dt) <= -0.1 * g0:
                break
            if ft > flo or dt >= 0.0:
                hi, dhi = a, dt
            else:
                lo, flo, dlo = a, ft, dt
            if not math.isfinite(hi):
                a = 3.0 * max(a, lo)
            else:
                sec = lo - dlo * (hi - lo) / (dhi - dlo)
                if math.isfinite(sec) and lo + 0.1 * (hi - lo) < sec < hi - 0.1 * (hi - lo):
                    a = sec
                else:
                    a = 0.5 * (lo + hi)
        if best_a > 0.0:
            for q in range(P):
                theta[q] += best_a * D[q]
            f, err = best_f, best_e
            beta = max(0.0, (np.dot(Gbest, Gbest) - np.dot(Gbest, G)) / max(gg, 1e-300))  # PR+
            G[:] = Gbest
            gg = np.dot(G, G)
            for q in range(P):
                D[q] = -G[q] + beta * D[q]
            gd = np.dot(G, D)
            # next first trial: the step that would repeat the last decrease (Nocedal & Wright eq. 3.60)
            a_init = min(max(best_a * g0 / gd, 1e-8), 1e8) if gd < 0.0 else best_a
        else:  # no decrease found: restart along -G with a smaller first step
            D[:] = -G
            a_init *= 0.1
        cs[k + 1] = cs[k] + err
        if k >= 2 * J:
            num = cs[k + 1] - cs[k - J]  # Σ_{j=k-J}^{k} ε_j
            den = cs[k - J] - cs[k - 2 * J]  # Σ_{j=k-2J}^{k-J-1} ε_j
            if num > r_pe_max * den and den > 0.0:
                return k
    return K


@nb.njit(parallel=True, cache=True)
def _train_many(Theta, hs, outs, M, Xa, Xb, Y, K, J, r_pe_max, iters):
    """Train ``B`` networks at once, each by :func:`_train_one` (threads over networks).

    Args:
        Theta: ``(B, P_max)`` initial parameters, updated in place (network ``b`` uses the first
            ``(da + db + 2) h_b + 1`` entries, laid out as in :func:`_net_eval`).
        hs: ``(B,)`` hidden neurons; outs: ``(B,)`` target index into ``Y``.
        M: ``(B, na)`` bool training rows of each network.
        Xa: ``(na, da)``, Xb: ``(nb, db)`` scaled product inputs (``nb = 1, db = 0`` for plain inputs).
        Y: ``(q, na, nb)`` scaled targets.
        iters: ``(B,)`` filled with each network's stopping iteration.
    """
    B = Theta.shape[0]
    d1 = Xa.shape[1] + Xb.shape[1] + 1
    for b in nb.prange(B):
        h = hs[b]
        P = d1 * h + h + 1
        rows = np.flatnonzero(M[b])
        th = Theta[b, :P].copy()
        iters[b] = _train_one(th, h, Xa, Xb, Y[outs[b]], rows, K, J, r_pe_max)
        Theta[b, :P] = th


@dataclass(frozen=True)
class CVSettings:
    """Table 3 of seed 003 (``h_max`` is a safety cap the paper does not need; ``trainer`` picks the
    conjugate-gradient implementation, see the module docstring)."""

    V: int = 10
    J: int = 100
    K: int = 5000
    r_pe_max: float = 0.999
    h_min: int = 1
    r_cve_max: float = 0.99
    W: int = 3
    h_max: int = 25
    trainer: str = "compiled"

    def __post_init__(self) -> None:
        if self.trainer not in TRAINERS:
            raise ConfigurationError(f"CVSettings.trainer must be one of {list(TRAINERS)}, got {self.trainer!r}")
        for k in ("V", "J", "K", "h_min", "W", "h_max"):
            v = getattr(self, k)
            if not isinstance(v, int | np.integer) or v < 1:
                raise ConfigurationError(f"CVSettings.{k} must be a positive integer, got {v!r}")
        if self.V < 2:
            raise ConfigurationError(f"CVSettings.V must be >= 2 folds, got {self.V!r}")
        if self.h_max < self.h_min:
            raise ConfigurationError(f"CVSettings: h_max >= h_min must hold, got h_min={self.h_min}, h_max={self.h_max}")

    @classmethod
    def paper_003(cls, **overrides) -> CVSettings:
        """Table 3: V = 10, J = 100, K = 5000, r^PE_max = 0.999, h_min = 1, r^CVE_max = 0.99, W = 3."""
        return cls(**{"V": 10, "J": 100, "K": 5000, "r_pe_max": 0.999, "h_min": 1, "r_cve_max": 0.99, "W": 3, **overrides})

    @classmethod
    def quick(cls, **overrides) -> CVSettings:
        """A reduced profile for tests and ``--quick`` benchmarks (V = 5, J = 25, K = 600)."""
        return cls(**{"V": 5, "J": 25, "K": 600, "r_pe_max": 0.999, "h_min": 1, "r_cve_max": 0.99, "W": 2, "h_max": 10,
                      **overrides})


def folds(n: int, V: int, rng: np.random.Generator) -> np.ndarray:
    """``(n,)`` fold index of every sample: a random permutation cut into ``V`` nearly equal parts."""
    f = np.empty(n, dtype=int)
    f[rng.permutation(n)] = np.arange(n) % V
    return f


def _seed_words(seed: SeedLike) -> list[int]:
    """Entropy for the per-network generators (an int seed, or words drawn from a generator)."""
    if isinstance(seed, np.random.Generator):
        return [int(v) for v in seed.integers(0, 2**32, size=2)]
    return list(np.random.SeedSequence(seed).generate_state(2))


def _train_round(
    jobs: list[tuple[int, int]],
    Xa: np.ndarray,
    Xb: np.ndarray,
    Ys: np.ndarray,
    fold: np.ndarray,
    s: CVSettings,
    words: list[int],
) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Train the ``V`` fold networks of every ``(output, h)`` in ``jobs``; ``{(o, h): (W1 (V, d1, h),
    w2 (V, h + 1), iterations (V,))}``. Initial weights: generator seeded by ``(words, o, h, fold)``."""
    d1 = Xa.shape[1] + Xb.shape[1] + 1
    V = s.V
    hmax = max(h for _, h in jobs)
    Theta = np.zeros((len(jobs) * V, d1 * hmax + hmax + 1))
    hs = np.repeat([h for _, h in jobs], V).astype(np.int64)
    outs = np.repeat([o for o, _ in jobs], V).astype(np.int64)
    M = np.tile(fold[None, :] != np.arange(V)[:, None], (len(jobs), 1))
    for j, (o, h) in enumerate(jobs):
        for v in range(V):
            W1, w2 = init_weights(np.random.default_rng([*words, o, h, v]), 1, d1, h)
            Theta[j * V + v, : d1 * h + h + 1] = _pack(W1, w2)[0]
    iters = np.zeros(len(jobs) * V, dtype=np.int64)
    if s.trainer == "compiled":
        order = np.argsort(-hs, kind="stable")  # large networks first: threads finish together
        Th = np.ascontiguousarray(Theta[order])
        it = np.zeros_like(iters)
        with nb.parallel_chunksize(1):
            _train_many(Th, hs[order], outs[order], np.ascontiguousarray(M[order]), Xa, Xb, Ys, s.K, s.J, s.r_pe_max, it)
        Theta[order], iters[order] = Th, it
        out = {}
        for j, (o, h) in enumerate(jobs):
            T = Theta[j * V : (j + 1) * V, : d1 * h + h + 1]
            W1, w2 = _split(T, d1, h)
            out[(o, h)] = (W1, w2, iters[j * V : (j + 1) * V])
        return out
    # numpy / scipy trainers (plain inputs only): one batch per h
    if Xb.shape[1] != 0:
        raise ConfigurationError(f"product inputs need CVSettings(trainer='compiled'), got trainer={s.trainer!r}")
    X1 = _with_bias(Xa)
    out = {}
    for h in sorted({h for _, h in jobs}):
        js = [j for j, (_, hh) in enumerate(jobs) if hh == h]
        Yb = np.concatenate([np.repeat(Ys[jobs[j][0], :, 0][None], V, axis=0) for j in js])
        Mb = np.concatenate([M[j * V : (j + 1) * V] for j in js])
        W1, w2, it = train_batch(X1, Yb, Mb, h, K=s.K, J=s.J, r_pe_max=s.r_pe_max,
                                 rng=np.random.default_rng([*words, h]), trainer=s.trainer)
        for n, j in enumerate(js):
            sl = slice(n * V, (n + 1) * V)
            out[jobs[j]] = (W1[sl], w2[sl], it[sl])
    return out


def _net_outputs(Xa: np.ndarray, Xb: np.ndarray, W1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """``(B, na, nb)`` outputs of networks ``(B, d1, h)``, ``(B, h + 1)`` on the product inputs."""
    da = Xa.shape[1]
    a = np.einsum("nd,bdh->bnh", Xa, W1[:, :da]) + W1[:, -1][:, None, :]
    c = np.einsum("kd,bdh->bkh", Xb, W1[:, da:-1])
    H = sigmoid(a[:, :, None, :] + c[:, None, :, :])
    return np.einsum("bnkh,bh->bnk", H, w2[:, :-1]) + w2[:, -1][:, None, None]


def _cv_search(
    Xa: np.ndarray, Xb: np.ndarray, Ys: np.ndarray, fold: np.ndarray, s: CVSettings, seed: SeedLike
) -> tuple[list[dict[int, float]], list[dict[int, tuple[np.ndarray, np.ndarray, float, int]]]]:
    """Eqs. 12-13 for every output ``o`` of ``Ys`` ``(q, na, nb)`` (scaled targets, range 1), folds over the
    rows ``na``. Returns per output ``{h: ε^CV_h}`` and ``{h: (W1, w2, ε^MRP(D_train), iterations)}`` of the
    fold network with the smallest training error."""
    q = Ys.shape[0]
    words = _seed_words(seed)
    cv: list[dict[int, float]] = [{} for _ in range(q)]
    best: list[dict[int, tuple[np.ndarray, np.ndarray, float, int]]] = [{} for _ in range(q)]
    exceed = np.zeros(q, dtype=int)
    next_h = np.full(q, s.h_min)
    active = np.ones(q, dtype=bool)
    while active.any():
        jobs = []
        for o in np.flatnonzero(active):
            need = max(1, s.W - int(exceed[o]))  # the fewest sizes after which o may stop
            jobs += [(int(o), h) for h in range(int(next_h[o]), min(int(next_h[o]) + need, s.h_max + 1))]
        trained = _train_round(jobs, Xa, Xb, Ys, fold, s, words)
        for o in np.flatnonzero(active):
            h = int(next_h[o])
            while active[o] and (int(o), h) in trained:
                W1, w2, it = trained[(int(o), h)]
                err = np.abs(_net_outputs(Xa, Xb, W1, w2) - Ys[o][None])  # (V, na, nb)
                val = np.array([err[v][fold == v].mean() for v in range(s.V)])  # eq. 10 on D_train,v
                full = err.reshape(s.V, -1).mean(axis=1)  # eq. 10 on the whole D_train
                cv[o][h] = float(val.mean())  # eq. 12
                b = int(np.argmin(full))
                best[o][h] = (W1[b], w2[b], float(full[b]), int(it[b]))
                if h > s.h_min and cv[o][h] / cv[o][h - 1] > s.r_cve_max:  # eq. 13
                    exceed[o] += 1
                    if exceed[o] >= s.W:
                        active[o] = False
                h += 1
                if h > s.h_max:
                    active[o] = False
            next_h[o] = h
    return cv, best


def fit_mlps(
    X: np.ndarray,
    Y: np.ndarray,
    settings: CVSettings | None = None,
    *,
    seed: SeedLike = None,
    groups: np.ndarray | None = None,
) -> list[MLP]:
    """Fit one network per column of ``Y``, each sized by ``V``-fold cross-validation (eqs. 10-13).

    Args:
        X: ``(n, d)`` inputs shared by every output.
        Y: ``(n, q)`` targets (or ``(n,)`` for one output).
        settings: Table 3 constants (default :meth:`CVSettings.paper_003`).
        groups: optional ``(n,)`` labels; samples of one label share a fold, so a fold's validation error is
            measured on unseen groups.

    Returns:
        ``q`` networks, each with its ``cv_errors``, ``train_error`` and ``iterations``.
    """
    s = settings or CVSettings.paper_003()
    rng = np.random.default_rng(seed)
    X = np.atleast_2d(np.asarray(X, dtype=float))
    Y = np.asarray(Y, dtype=float)
    Y = Y[:, None] if Y.ndim == 1 else Y
    n, q = Y.shape
    if X.shape[0] != n:
        raise ConfigurationError(f"X and Y need the same number of rows, got {X.shape[0]} and {n}")
    x_lo, x_hi = X.min(axis=0), X.max(axis=0)
    y_lo, y_hi = Y.min(axis=0), Y.max(axis=0)
    y_span = np.where(y_hi > y_lo, y_hi - y_lo, 1.0)
    Xa = np.ascontiguousarray(_scale(X, x_lo, x_hi))
    Ys = np.ascontiguousarray(((Y - y_lo) / y_span).T[:, :, None])  # (q, n, 1)
    if groups is None:
        fold = folds(n, s.V, rng)
    else:
        labels, inv = np.unique(np.asarray(groups), return_inverse=True)
        fold = folds(labels.size, s.V, rng)[inv]
    cv, best = _cv_search(Xa, np.zeros((1, 0)), Ys, fold, s, rng)
    nets = []
    for o in range(q):
        hb = min(cv[o], key=cv[o].get)
        W1o, w2o, tr, it = best[o][hb]
        nets.append(MLP(W1o, w2o, x_lo, x_hi, float(y_lo[o]), float(y_hi[o]), dict(cv[o]), tr, it))
    return nets


def fit_mlp_product(
    A: np.ndarray, Bf: np.ndarray, Y: np.ndarray, settings: CVSettings | None = None, *, seed: SeedLike = None
) -> MLP:
    """One network on the product inputs ``(A_i, B_k) -> Y_ik``, sized by cross-validation with folds over
    the rows ``i`` (Forward Complex: ``A`` the simulations' parameters, ``B`` the time input, so a fold's
    validation error is measured on unseen simulations).

    Args:
        A: ``(na, da)``; Bf: ``(nb, db)``; Y: ``(na, nb)`` targets.

    Returns:
        A plain :class:`MLP` whose inputs are the concatenated rows ``(A_i, B_k)`` ``(da + db)``.
    """
    s = settings or CVSettings.paper_003()
    rng = np.random.default_rng(seed)
    A = np.atleast_2d(np.asarray(A, dtype=float))
    Bf = np.asarray(Bf, dtype=float)
    Bf = Bf[:, None] if Bf.ndim == 1 else Bf
    Y = np.asarray(Y, dtype=float)
    if Y.shape != (A.shape[0], Bf.shape[0]):
        raise ConfigurationError(f"Y must be (rows of A, rows of B) = {(A.shape[0], Bf.shape[0])}, got {Y.shape}")
    x_lo = np.concatenate([A.min(axis=0), Bf.min(axis=0)])
    x_hi = np.concatenate([A.max(axis=0), Bf.max(axis=0)])
    da = A.shape[1]
    Xa = np.ascontiguousarray(_scale(A, x_lo[:da], x_hi[:da]))
    Xb = np.ascontiguousarray(_scale(Bf, x_lo[da:], x_hi[da:]))
    y_lo, y_hi = float(Y.min()), float(Y.max())
    Ys = np.ascontiguousarray(((Y - y_lo) / (y_hi - y_lo if y_hi > y_lo else 1.0))[None])
    fold = folds(A.shape[0], s.V, rng)
    cv, best = _cv_search(Xa, Xb, Ys, fold, s, rng)
    hb = min(cv[0], key=cv[0].get)
    W1, w2, tr, it = best[0][hb]
    return MLP(W1, w2, x_lo, x_hi, y_lo, y_hi, dict(cv[0]), tr, it)


def fit_mlp(X: np.ndarray, y: np.ndarray, settings: CVSettings | None = None, *, seed: SeedLike = None) -> MLP:
    """One network for ``y`` ``(n,)`` sized by cross-validation (see :func:`fit_mlps`)."""
    return fit_mlps(X, np.asarray(y, dtype=float).reshape(-1, 1), settings, seed=seed)[0]


def train_single(X: np.ndarray, y: np.ndarray, h: int, settings: CVSettings | None = None, *, seed: SeedLike = None) -> MLP:
    """One network with a given ``h`` trained on all of ``(X, y)`` (no cross-validation)."""
    s = settings or CVSettings.paper_003()
    rng = np.random.default_rng(seed)
    X = np.atleast_2d(np.asarray(X, dtype=float))
    y = np.asarray(y, dtype=float).ravel()
    x_lo, x_hi = X.min(axis=0), X.max(axis=0)
    y_lo, y_hi = float(y.min()), float(y.max())
    X1 = _with_bias(_scale(X, x_lo, x_hi))
    ys = (y - y_lo) / (y_hi - y_lo if y_hi > y_lo else 1.0)
    W1, w2, it = train_batch(X1, ys[None], np.ones((1, y.size)), h, K=s.K, J=s.J, r_pe_max=s.r_pe_max, rng=rng,
                             trainer=s.trainer)
    net = MLP(W1[0], w2[0], x_lo, x_hi, y_lo, y_hi, iterations=int(it[0]))
    net.train_error = net.error(X, y)
    return net
