"""Compiled trainer (numba): one conjugate-gradient run per network, all networks in one threaded call.
See :mod:`mechcalib.surrogates.mlp` for why compiled loops."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

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
