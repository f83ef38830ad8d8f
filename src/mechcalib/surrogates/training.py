"""Conjugate-gradient training of a batch of networks with the stopping rule of eq. 11: the ``numpy``
reference (:func:`cg_batch`), the ``scipy`` trainer with shared steps, and :func:`train_batch`, which also
dispatches to the compiled trainer (:mod:`.compiled`). See :mod:`mechcalib.surrogates.mlp`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize

from ..errors import ConfigurationError
from .compiled import _train_many
from .network import _pack, _split, _unpack, forward, init_weights, loss_and_grad, pe_ratio


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
        _train_many(
            theta,
            np.full(B, h, dtype=np.int64),
            np.arange(B, dtype=np.int64),
            np.ascontiguousarray(Mb),
            np.ascontiguousarray(X1[:, :-1], dtype=float),
            np.zeros((1, 0)),
            np.ascontiguousarray(np.asarray(Y, dtype=float)[:, :, None]),
            int(K),
            int(J),
            float(r_pe_max),
            iters,
        )
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

        res = minimize(
            fun, theta, jac=True, method="CG", callback=callback, options={"maxiter": K - (len(hist) - 1), "gtol": 0.0}
        )
        progressed = not np.array_equal(res.x, theta)
        theta = res.x
        if not done and not progressed:  # line search cannot move: converged to precision
            break
    a, b = _unpack(theta, B, d1, h)
    best_W1[~stopped], best_w2[~stopped] = a[~stopped], b[~stopped]
    iters[~stopped] = len(hist) - 1
    return best_W1, best_w2, iters


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
