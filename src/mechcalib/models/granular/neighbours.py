"""Neighbour lists of the granular DEM (:mod:`.dem`): a Verlet list of sphere pairs built with linked cells, the
contact history carried from an old list to a rebuilt one, and the constants of the pairs and wall contacts."""

from __future__ import annotations

import numba as nb
import numpy as np

from .fields import C_A0, C_A0K2, C_FMIN, C_IROLL, C_K1, C_K2, C_LAM, C_MSTAR, C_RMIN, C_RSTAR, C_SR, N_HIST
from .forces import contact_constants


@nb.njit(cache=True, error_model="numpy")
def build_neighbours(sx, srad, sb, skin, start, nbr):
    """Verlet list of sphere pairs ``i < j`` of different bodies closer than ``r_i + r_j + skin``, by linked
    cells. Writes ``start`` ``(ns + 1,)`` and ``nbr`` (CSR, each row sorted); returns the number of pairs, or
    -1 if ``nbr`` is too short."""
    ns = sb.size
    if ns == 0:
        start[0] = 0
        return 0
    rmax = srad.max()
    cell = 2.0 * rmax + skin
    lo = np.empty(3)
    hi = np.empty(3)
    for d in range(3):
        lo[d] = sx[:, d].min()
        hi[d] = sx[:, d].max()
    nc = np.empty(3, dtype=np.int64)
    for d in range(3):
        nc[d] = max(1, int((hi[d] - lo[d]) / cell) + 1)
    ncell = nc[0] * nc[1] * nc[2]
    cid = np.empty((ns, 3), dtype=np.int64)
    head = np.zeros(ncell + 1, dtype=np.int64)
    for s in range(ns):
        for d in range(3):
            c = int((sx[s, d] - lo[d]) / cell)
            cid[s, d] = min(max(c, 0), nc[d] - 1)
        head[(cid[s, 0] * nc[1] + cid[s, 1]) * nc[2] + cid[s, 2] + 1] += 1
    for c in range(ncell):
        head[c + 1] += head[c]
    fill = head[:-1].copy()
    order = np.empty(ns, dtype=np.int64)
    for s in range(ns):
        c = (cid[s, 0] * nc[1] + cid[s, 1]) * nc[2] + cid[s, 2]
        order[fill[c]] = s
        fill[c] += 1
    buf = np.empty(256, dtype=np.int64)
    ptr = 0
    cap = nbr.size
    for i in range(ns):
        start[i] = ptr
        m = 0
        xi, yi, zi, ri, bi = sx[i, 0], sx[i, 1], sx[i, 2], srad[i], sb[i]
        for dx in range(-1, 2):
            cx = cid[i, 0] + dx
            if cx < 0 or cx >= nc[0]:
                continue
            for dy in range(-1, 2):
                cy = cid[i, 1] + dy
                if cy < 0 or cy >= nc[1]:
                    continue
                for dz in range(-1, 2):
                    cz = cid[i, 2] + dz
                    if cz < 0 or cz >= nc[2]:
                        continue
                    c = (cx * nc[1] + cy) * nc[2] + cz
                    for q in range(head[c], head[c + 1]):
                        j = order[q]
                        if j <= i or sb[j] == bi:
                            continue
                        ex, ey, ez = sx[j, 0] - xi, sx[j, 1] - yi, sx[j, 2] - zi
                        rc = ri + srad[j] + skin
                        if ex * ex + ey * ey + ez * ez < rc * rc and m < buf.size:
                            buf[m] = j
                            m += 1
        # insertion sort of the (few) neighbours of i
        for a in range(1, m):
            v = buf[a]
            b = a - 1
            while b >= 0 and buf[b] > v:
                buf[b + 1] = buf[b]
                b -= 1
            buf[b + 1] = v
        if ptr + m > cap:
            return -1
        for a in range(m):
            nbr[ptr + a] = buf[a]
        ptr += m
    start[ns] = ptr
    return ptr


@nb.njit(cache=True, error_model="numpy")
def transfer_history(start_o, nbr_o, hist_o, start_n, nbr_n, hist_n):
    """Copy the history of pairs present in both lists (rows sorted by ``j``) and zero the new ones."""
    ns = start_n.size - 1
    for i in range(ns):
        a, a_end = start_o[i], start_o[i + 1]
        for k in range(start_n[i], start_n[i + 1]):
            j = nbr_n[k]
            while a < a_end and nbr_o[a] < j:
                a += 1
            if a < a_end and nbr_o[a] == j:
                for c in range(N_HIST):
                    hist_n[k, c] = hist_o[a, c]
            else:
                for c in range(N_HIST):
                    hist_n[k, c] = 0.0


@nb.njit(cache=True, inline="always", error_model="numpy")
def _store_constants(const, k, c):
    sr, k1, k2, fmin, lam, a0, a0k2 = c
    const[k, C_SR], const[k, C_K1], const[k, C_K2], const[k, C_FMIN] = sr, k1, k2, fmin
    const[k, C_LAM], const[k, C_A0], const[k, C_A0K2] = lam, a0, a0k2


@nb.njit(cache=True, error_model="numpy")
def pair_constants(start, nbr, srad, sb, mass, iroll, row, const):
    """The constants (columns ``C_*`` of :mod:`.fields`) of the pairs of a list, for the interaction ``row``:
    fixed while the list stands, so the force loop of every step reads them instead of dividing again."""
    for i in range(start.size - 1):
        ri, bi = srad[i], sb[i]
        for k in range(start[i], start[i + 1]):
            j = nbr[k]
            rj, bj = srad[j], sb[j]
            rstar = ri * rj / (ri + rj)
            const[k, C_RSTAR] = rstar
            const[k, C_MSTAR] = mass[bi] * mass[bj] / (mass[bi] + mass[bj])
            const[k, C_IROLL] = iroll[bi] * iroll[bj] / (iroll[bi] + iroll[bj])
            _store_constants(const, k, contact_constants(rstar, row))
            const[k, C_RMIN] = min(ri, rj)


@nb.njit(cache=True, error_model="numpy")
def wall_constants(srad, sb, mass, iroll, itab, wall_types, const):
    """The constants of the contacts of every sphere with the three walls (rows ``3 s + w``): the sphere's radius
    as ``R*`` and its body's mass as ``m*`` (:mod:`.dem` docstring)."""
    for s in range(srad.size):
        r, b = srad[s], sb[s]
        for w in range(3):
            kk = 3 * s + w
            const[kk, C_RSTAR] = r
            const[kk, C_MSTAR] = mass[b]
            const[kk, C_IROLL] = iroll[b]
            if wall_types[w] < itab.shape[0]:  # a table without the wall's row: the wall is never touched
                _store_constants(const, kk, contact_constants(r, itab[wall_types[w]]))
            const[kk, C_RMIN] = r
