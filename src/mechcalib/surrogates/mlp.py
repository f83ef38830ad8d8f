"""One-hidden-layer perceptrons trained by conjugate gradients, sized by cross-validation (seed 003, s. 7).

Network (eqs. 1-2): inputs scaled to ``[0, 1]`` (min-max over the training data), one hidden layer of ``h``
sigmoid neurons with a bias neuron in the input and hidden layers, one output neuron. The output neuron is
linear and the target is scaled to ``[0, 1]`` by the training range; seed 003 only asks that data be
transformed "into the range of the activation functions", and a linear output keeps the scaled target's
ends reachable.

Training: nonlinear conjugate gradients (Polak-Ribière) on the mean squared error with analytic gradients.
The networks of one cross-validation step (the ``V`` folds, times several outputs) are trained together by
:func:`cg_batch`: every network keeps its own search direction, ``β`` and line search, so each run is the
conjugate-gradient training of that network alone, while one vectorised numpy pass evaluates all of them.
``CVSettings(trainer="scipy")`` uses ``scipy.optimize.minimize(method="CG")`` instead, on the summed loss of
the batch: the gradient is block-separable but step lengths and directions are then shared, which stalls
networks whose curvature differs from the rest (measured on the nine Forward Split outputs with ``h = 7``:
training errors 0.53-2.8 % against 0.24-1.1 % with :func:`cg_batch`, at the same cost).

Stopping (eq. 11, Table 3): each network's mean relative prediction error ``ε^MRP_k`` (eq. 10) on its own
training samples is recorded every iteration; a network stops at the first ``k >= 2J`` where
``r^PE_k = Σ_{j=k-J}^{k} ε_j / Σ_{j=k-2J}^{k-J-1} ε_j`` exceeds ``r^PE_max``, and keeps the weights it had
then; the batch stops when every network has stopped or after ``K`` iterations.

Hidden neurons (eqs. 12-13, Table 3): ``V``-fold cross-validation from ``h_min`` upward; every time
``r^CVE_h = ε^CV_h / ε^CV_{h-1}`` exceeds ``r^CVE_max`` counts, and after ``W`` counts the search stops. The
architecture with the smallest ``ε^CV_h`` is chosen, and of its ``V`` trained networks the one with the
smallest training error ``ε^MRP(D_train)`` on the whole training set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

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
    trainer: str = "batched",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train ``B`` networks with ``h`` hidden neurons by conjugate gradients with the stopping rule of eq. 11.

    Args:
        X1: ``(n, d + 1)`` scaled inputs with a bias column.
        Y: ``(B, n)`` scaled targets of each network.
        M: ``(B, n)`` training masks (1 where the sample trains network ``b``).
        h: hidden neurons; K, J, r_pe_max: Table 3.
        trainer: ``"batched"`` (:func:`cg_batch`: every network its own PR+ conjugate-gradient run, all
            evaluated together) or ``"scipy"`` (``scipy.optimize.minimize(method="CG")`` on the summed loss,
            directions and steps shared by the batch).

    Returns:
        ``(W1 (B, d + 1, h), w2 (B, h + 1), iterations (B,))``: each network's weights at its own stop.
    """
    if trainer == "scipy":
        return _train_batch_scipy(X1, Y, M, h, K=K, J=J, r_pe_max=r_pe_max, rng=rng)
    if trainer != "batched":
        raise ConfigurationError(f"trainer must be 'batched' or 'scipy', got {trainer!r}")
    B, d1 = Y.shape[0], X1.shape[1]
    W1, w2 = init_weights(rng, B, d1, h)
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


@dataclass(frozen=True)
class CVSettings:
    """Table 3 of seed 003 (``h_max`` is a safety cap the paper does not need; ``trainer`` picks the
    conjugate-gradient implementation, see :func:`train_batch`)."""

    V: int = 10
    J: int = 100
    K: int = 5000
    r_pe_max: float = 0.999
    h_min: int = 1
    r_cve_max: float = 0.99
    W: int = 3
    h_max: int = 25
    trainer: str = "batched"

    def __post_init__(self) -> None:
        if self.trainer not in ("batched", "scipy"):
            raise ConfigurationError(f"CVSettings.trainer must be 'batched' or 'scipy', got {self.trainer!r}")
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


def fit_mlps(
    X: np.ndarray,
    Y: np.ndarray,
    settings: CVSettings | None = None,
    *,
    seed: SeedLike = None,
    groups: np.ndarray | None = None,
) -> list[MLP]:
    """Fit one network per column of ``Y``, each sized by ``V``-fold cross-validation (eqs. 10-13).

    All outputs and folds of one ``h`` are trained together (see the module docstring); an output leaves
    the search once its ``W``-th ``r^CVE_h > r^CVE_max`` occurs.

    Args:
        X: ``(n, d)`` inputs shared by every output.
        Y: ``(n, q)`` targets (or ``(n,)`` for one output).
        settings: Table 3 constants (default :meth:`CVSettings.paper_003`).
        groups: optional ``(n,)`` labels; samples of one label share a fold (Forward Complex: the time steps
            of one simulation), so a fold's validation error is measured on unseen simulations.

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
    X1 = _with_bias(_scale(X, x_lo, x_hi))
    Ys = ((Y - y_lo) / y_span).T  # (q, n)
    if groups is None:
        fold = folds(n, s.V, rng)
    else:
        labels, inv = np.unique(np.asarray(groups), return_inverse=True)
        fold = folds(labels.size, s.V, rng)[inv]
    train_mask = fold[None, :] != np.arange(s.V)[:, None]  # (V, n)

    cv: list[dict[int, float]] = [{} for _ in range(q)]
    best_net: list[dict[int, tuple[np.ndarray, np.ndarray, float, int]]] = [{} for _ in range(q)]
    exceed = np.zeros(q, dtype=int)
    active = np.ones(q, dtype=bool)
    h = s.h_min
    while active.any() and h <= s.h_max:
        outs = np.flatnonzero(active)
        Yb = np.repeat(Ys[outs], s.V, axis=0)  # (len(outs) * V, n), output-major
        Mb = np.tile(train_mask, (outs.size, 1))
        W1, w2, it = train_batch(X1, Yb, Mb, h, K=s.K, J=s.J, r_pe_max=s.r_pe_max, rng=rng, trainer=s.trainer)
        O, _ = forward(X1, W1, w2)
        err_abs = np.abs(O - Yb)
        val = np.sum(~Mb * err_abs, axis=1) / np.maximum(np.sum(~Mb, axis=1), 1)  # eq. 10 on D_train,i
        full = err_abs.mean(axis=1)  # eq. 10 on the whole D_train
        for j, o in enumerate(outs):
            sl = slice(j * s.V, (j + 1) * s.V)
            cv[o][h] = float(val[sl].mean())  # eq. 12
            b = j * s.V + int(np.argmin(full[sl]))
            best_net[o][h] = (W1[b], w2[b], float(full[b]), int(it[b]))
            if h > s.h_min and cv[o][h] / cv[o][h - 1] > s.r_cve_max:  # eq. 13
                exceed[o] += 1
                if exceed[o] >= s.W:
                    active[o] = False
        h += 1
    nets = []
    for o in range(q):
        hb = min(cv[o], key=cv[o].get)
        W1o, w2o, tr, it = best_net[o][hb]
        nets.append(MLP(W1o, w2o, x_lo, x_hi, float(y_lo[o]), float(y_hi[o]), dict(cv[o]), tr, it))
    return nets


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
