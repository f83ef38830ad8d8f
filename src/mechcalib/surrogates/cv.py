"""Hidden-layer sizing by cross-validation (eqs. 12-13, Table 3) and the fitting entry points
(:func:`fit_mlps`, :func:`fit_mlp_product`, :func:`fit_mlp`, :func:`train_single`).
See :mod:`mechcalib.surrogates.mlp`."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from ..core.presets import Preset, deprecated_preset
from ..errors import ConfigurationError
from .compiled import _train_many
from .network import MLP, SeedLike, _pack, _scale, _split, _with_bias, init_weights, sigmoid
from .training import TRAINERS, train_batch

#: Mareš et al. (2016)'s cross-validation constants
MARES2016_CV = Preset(
    name="mares2016",
    source="Mareš et al. (2016), Table 3",
    settings={"V": 10, "J": 100, "K": 5000, "r_pe_max": 0.999, "h_min": 1, "r_cve_max": 0.99, "W": 3},
    aliases=("paper_003",),
)


@dataclass(frozen=True)
class CVSettings:
    """Table 3 of Mareš et al. (2016) (``h_max`` is a safety cap the paper does not need; ``trainer`` picks the
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
            raise ConfigurationError(
                f"CVSettings: h_max >= h_min must hold, got h_min={self.h_min}, h_max={self.h_max}"
            )

    @classmethod
    def mares2016(cls, **overrides) -> CVSettings:
        """Mareš et al. (2016) Table 3 (:data:`MARES2016_CV`): V = 10, J = 100, K = 5000, r^PE_max = 0.999,
        h_min = 1, r^CVE_max = 0.99, W = 3."""
        return cls(**MARES2016_CV.merged(overrides))

    paper_003 = deprecated_preset("paper_003")

    @classmethod
    def quick(cls, **overrides) -> CVSettings:
        """A reduced profile for tests and ``--quick`` benchmarks (V = 5, J = 25, K = 600)."""
        return cls(
            **{
                "V": 5,
                "J": 25,
                "K": 600,
                "r_pe_max": 0.999,
                "h_min": 1,
                "r_cve_max": 0.99,
                "W": 2,
                "h_max": 10,
                **overrides,
            }
        )


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
            _train_many(
                Th, hs[order], outs[order], np.ascontiguousarray(M[order]), Xa, Xb, Ys, s.K, s.J, s.r_pe_max, it
            )
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
        W1, w2, it = train_batch(
            X1, Yb, Mb, h, K=s.K, J=s.J, r_pe_max=s.r_pe_max, rng=np.random.default_rng([*words, h]), trainer=s.trainer
        )
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
        settings: Table 3 constants (default :meth:`CVSettings.mares2016`).
        groups: optional ``(n,)`` labels; samples of one label share a fold, so a fold's validation error is
            measured on unseen groups.

    Returns:
        ``q`` networks, each with its ``cv_errors``, ``train_error`` and ``iterations``.
    """
    s = settings or CVSettings.mares2016()
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
    s = settings or CVSettings.mares2016()
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


def train_single(
    X: np.ndarray, y: np.ndarray, h: int, settings: CVSettings | None = None, *, seed: SeedLike = None
) -> MLP:
    """One network with a given ``h`` trained on all of ``(X, y)`` (no cross-validation)."""
    s = settings or CVSettings.mares2016()
    rng = np.random.default_rng(seed)
    X = np.atleast_2d(np.asarray(X, dtype=float))
    y = np.asarray(y, dtype=float).ravel()
    x_lo, x_hi = X.min(axis=0), X.max(axis=0)
    y_lo, y_hi = float(y.min()), float(y.max())
    X1 = _with_bias(_scale(X, x_lo, x_hi))
    ys = (y - y_lo) / (y_hi - y_lo if y_hi > y_lo else 1.0)
    W1, w2, it = train_batch(
        X1, ys[None], np.ones((1, y.size)), h, K=s.K, J=s.J, r_pe_max=s.r_pe_max, rng=rng, trainer=s.trainer
    )
    net = MLP(W1[0], w2[0], x_lo, x_hi, y_lo, y_hi, iterations=int(it[0]))
    net.train_error = net.error(X, y)
    return net
