"""Kibriya et al. (2023) objective 2 (section 3.4.2): a neural smoother of force-displacement curves.

Explicit DEM time integration makes the simulated force oscillate and drop (stick-slip) about the physical
response. Objective 2 removes that noise before scoring: each curve is discretised into 200 points and a
dense network with five hidden layers of 20 tanh neurons is trained on that curve alone (mean absolute
error, Adam, full batch, no test split: the network is a smoother, not a predictor); its output at the same
200 points replaces the curve. Experiment and simulation are both smoothed, then objective 1
(:class:`~mechcalib.objectives.OverlapRSS`, eqs. 16-20) compares them.

What the network fits
---------------------
The input is always 200 points uniform in [-1, 1]. Two modes:

* ``"abscissa"``: a curve whose abscissa is monotonic (force against plate displacement) is resampled at
  200 abscissae uniform over its range and the network fits ``y(x)``, as printed.
* ``"progress"``: a curve whose abscissa is not monotonic (force against the horizontal abutment
  displacement, which reverses when a joint slides) is not a function ``y(x)``; it is resampled at 200
  points uniform in its progress coordinate ``t`` (time, load step; the row index when absent) and the
  network fits both ``x(t)`` and ``y(t)``.

``mode="auto"`` picks ``"abscissa"`` when it applies. The network always has two outputs; in the abscissa
mode the second one is masked out of the loss (zero gradient, so Adam leaves it untouched), which keeps one
architecture and lets curves of either mode train together. Targets are standardised per output.

How much it smooths
-------------------
The seed stops training early on purpose ("it was made sure not to overtrain the DNN") but gives no
number of epochs. The defaults (1000 full-batch Adam steps, learning rate 0.01) halve the distance of a
noisy curve to the clean one and keep its peak (``tests/test_smoothing.py``); on the arch's 10 mm/s curves
they follow the rise, the plateau and the softening and ignore most of the oscillation, while 2000 steps and
more begin to follow it. The absolute error makes the fit median-like, so single stick-slip drops are
ignored. Networks start from Glorot-uniform weights and zero biases (Keras' ``Dense`` defaults; the seed
used TensorFlow), drawn from ``seed``: the same curve and settings give the same smoothed curve on a given
installation, whatever else is smoothed with it.

Backends and arithmetic
-----------------------
``backend="numpy"`` (default): manual back-propagation and Adam on stacked arrays (:func:`fit_numpy`), no extra
dependency. ``backend="torch"``: the same network, initial weights and Adam (PyTorch's update formula, which the
numpy code mirrors) through autograd, on the CPU; install the ``deep`` extra. ``"auto"`` uses torch when it can
be imported. ``dtype`` is ``"float32"`` by default (about 2.3 times faster than ``"float64"``: numpy's float32
tanh is vectorised and half the memory moves). In float64 the two backends agree to round-off (1e-12) for the
first hundred steps; after that the sign in the gradient of the absolute error amplifies round-off (a
different BLAS, or float32, does the same), and at 1000 steps two such smoothed curves differ locally by a few
per cent of the force range while smoothing equally well (``tests/test_smoothing.py``: over three noise draws
the distance to the clean curve falls to 0.13-0.6 of the noisy curve's, 0.3-0.45 on average, in either
precision). numpy is the default: it needs no optional package and is faster on these tiny networks.

Batches
-------
Networks are trained stacked: :meth:`NeuralSmoother.smooth_many` fits all its curves at once, and
:meth:`SmoothedOverlapRSS.values_many` all the curves of a batch of simulations (``benchmarks/arch_calibration.py``
scores each optimiser batch so). Each network's arithmetic involves only its own slices of the stacked arrays,
so a curve's result does not depend on what it is trained with: batched and one-at-a-time training agree bit
for bit. The cost per simulation of the arch, measured by ``python benchmarks/arch_calibration.py speed``, is in
``benchmarks/results/arch.speed.md``; its floor is arithmetic, not overhead: 1000 steps of a 5 x 20 network
on 200 points are about 2 GFLOP per curve. The experiment's curves are smoothed once per process (cached).
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

import numpy as np

from ..core.data import Curve, Experiment
from ..errors import DataError, SettingError, require
from . import OverlapRSS

SmoothMode = Literal["auto", "abscissa", "progress"]
Backend = Literal["auto", "numpy", "torch"]
Dtype = Literal["float32", "float64"]

N_OUT = 2  # outputs of every network: (y,) masked to one column, or (x, y)


# --------------------------------------------------------------------------------------------
# Pure kernels (numpy)
# --------------------------------------------------------------------------------------------
def layer_sizes(n_layers: int, width: int, n_in: int = 1, n_out: int = N_OUT) -> tuple[int, ...]:
    """Widths of every layer, input and output included: ``(n_in, width x n_layers, n_out)``."""
    return (n_in,) + (width,) * n_layers + (n_out,)


def n_params(sizes: Sequence[int]) -> int:
    """Number of weights and biases of a dense network with layer widths ``sizes``."""
    return int(sum(a * b + b for a, b in pairwise(sizes)))


def init_params(sizes: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    """Flat parameter vector ``(P,)``: per layer the weights ``(a, b)`` row-major, then the biases ``(b,)``.
    Weights are Glorot-uniform, ``U(-l, l)`` with ``l = sqrt(6 / (a + b))``; biases are zero."""
    out = []
    for a, b in pairwise(sizes):
        lim = np.sqrt(6.0 / (a + b))
        out.append(rng.uniform(-lim, lim, a * b))
        out.append(np.zeros(b))
    return np.concatenate(out)


def unpack(theta: np.ndarray, sizes: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Views ``[(W (B, a, b), bias (B, 1, b)), ...]`` into stacked parameters ``theta`` ``(B, P)``."""
    B = theta.shape[0]
    layers, off = [], 0
    for a, b in pairwise(sizes):
        W = theta[:, off : off + a * b].reshape(B, a, b)
        off += a * b
        layers.append((W, theta[:, off : off + b].reshape(B, 1, b)))
        off += b
    return layers


def forward(layers: list[tuple[np.ndarray, np.ndarray]], s: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Outputs of ``B`` networks at inputs ``s`` ``(N,)``: tanh hidden layers, linear output.

    Returns the hidden activations ``[(B, N, width), ...]`` and the output ``(B, N, n_out)``."""
    W, b = layers[0]
    a = np.tanh(s[None, :, None] * W + b)  # one input: the product is the matrix product
    acts = [a]
    for W, b in layers[1:-1]:
        a = np.tanh(np.matmul(a, W) + b)
        acts.append(a)
    W, b = layers[-1]
    return acts, np.matmul(a, W) + b


def mae_grad(out: np.ndarray, Y: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean absolute error of each network over its unmasked outputs and its gradient.

    ``out``, ``Y`` ``(B, N, m)``; ``mask`` ``(B, 1, m)`` of 0/1. Returns the losses ``(B,)`` and
    ``dL/dout`` ``(B, N, m)`` = ``sign(out - Y) * mask / count`` (0 where ``out == Y``, as autograd)."""
    r = out - Y
    count = out.shape[1] * mask.sum(axis=(1, 2))
    loss = (np.abs(r) * mask).sum(axis=(1, 2)) / count
    return loss, np.sign(r) * (mask / count[:, None, None])


def backward(
    layers: list[tuple[np.ndarray, np.ndarray]],
    glayers: list[tuple[np.ndarray, np.ndarray]],
    s: np.ndarray,
    acts: list[np.ndarray],
    dout: np.ndarray,
) -> None:
    """Back-propagate ``dout`` ``(B, N, n_out)`` and write the gradients into ``glayers`` (views of the
    gradient buffer, laid out as ``layers``)."""
    g = dout
    for k in range(len(layers) - 1, -1, -1):
        gW, gb = glayers[k]
        if k == 0:
            np.sum(s[None, :, None] * g, axis=1, keepdims=True, out=gW)
        else:
            np.matmul(acts[k - 1].transpose(0, 2, 1), g, out=gW)
        np.sum(g, axis=1, keepdims=True, out=gb)
        if k:
            a = acts[k - 1]
            g = np.matmul(g, layers[k][0].transpose(0, 2, 1)) * (1.0 - a * a)


def adam_update(
    theta: np.ndarray,
    grad: np.ndarray,
    m: np.ndarray,
    v: np.ndarray,
    step: int,
    lr: float,
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 1e-8,
) -> None:
    """One Adam step in place (Kingma and Ba; the update as PyTorch writes it, so both backends agree):
    ``m += (1 - b1)(g - m)``, ``v = b2 v + (1 - b2) g^2``,
    ``theta -= lr / (1 - b1^k) * m / (sqrt(v) / sqrt(1 - b2^k) + eps)`` at step ``k`` (from 1)."""
    m += (1.0 - beta1) * (grad - m)
    v *= beta2
    v += (1.0 - beta2) * grad * grad
    denom = np.sqrt(v) / np.sqrt(1.0 - beta2**step) + eps
    theta -= (lr / (1.0 - beta1**step)) * m / denom


def fit_reference(
    s: np.ndarray, Y: np.ndarray, mask: np.ndarray, theta0: np.ndarray, sizes: Sequence[int], steps: int, lr: float
) -> tuple[np.ndarray, np.ndarray]:
    """Reference trainer in the parameter layout of :func:`unpack` (:func:`forward`, :func:`backward`,
    :func:`adam_update`): ``B`` independent networks, one per target ``Y[b]`` ``(N, n_out)``, all from
    ``theta0`` ``(P,)``, full-batch Adam on the masked mean absolute error. Readable, slow;
    :func:`fit_numpy` is the same computation arranged for speed. Returns the outputs ``(B, N, n_out)`` and the
    final losses ``(B,)``."""
    B = Y.shape[0]
    theta = np.repeat(theta0[None, :], B, axis=0)
    grad = np.zeros_like(theta)
    m, v = np.zeros_like(theta), np.zeros_like(theta)
    layers, glayers = unpack(theta, sizes), unpack(grad, sizes)
    for k in range(1, steps + 1):
        acts, out = forward(layers, s)
        _, dout = mae_grad(out, Y, mask)
        backward(layers, glayers, s, acts, dout)
        adam_update(theta, grad, m, v, k, lr)
    _, out = forward(layers, s)
    return out, mae_grad(out, Y, mask)[0]


def fit_numpy(
    s: np.ndarray,
    Y: np.ndarray,
    mask: np.ndarray,
    theta0: np.ndarray,
    sizes: Sequence[int],
    steps: int,
    lr: float,
    dtype: str = "float64",
) -> tuple[np.ndarray, np.ndarray]:
    """Train ``B`` independent networks at once, one per target ``Y[b]`` ``(N, n_out)``, all from ``theta0``
    ``(P,)`` (layout of :func:`init_params`), by full-batch Adam on the masked mean absolute error; the
    computation of :func:`fit_reference` (equal to round-off), arranged for speed.

    Why it is fast: activations are stored transposed, ``(B, width, N)``, so that every elementwise operation
    runs along the ``N`` points (numpy handles a broadcast over a short last axis slowly), the weights of all
    networks are stacked for batched matrix products, and every array is preallocated (no temporaries of a
    few hundred kB, which cost a page-faulting allocation each, in the loop over steps). Each network's
    arithmetic involves only its own slices, so training a stack is training each network alone, bit for bit
    (``tests/test_smoothing.py``). ``dtype`` ``"float32"`` halves memory traffic and uses numpy's vectorised
    float32 tanh (about 2.3 times faster); the trained curves then differ from float64 ones by round-off
    amplified by the training (module docstring). Returns the outputs ``(B, N, n_out)`` (float64) and the
    final losses ``(B,)``. Adam's constants are Kingma and Ba's, as in :func:`adam_update` and :func:`fit_torch`."""
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    if dtype not in ("float64", "float32"):
        raise SettingError("", "dtype", "'float64' or 'float32'", dtype)
    dt = np.dtype(dtype)
    Y = np.asarray(Y, float)
    B, N, m = Y.shape
    pairs = list(pairwise(sizes))
    L = len(pairs)
    # Per layer: transposed weights (b, a) then biases (b, 1), all networks stacked in one (B, P) buffer.
    offs = np.cumsum([0] + [a * b + b for a, b in pairs])
    theta = np.empty((B, int(offs[-1])), dt)
    grad = np.zeros_like(theta)

    def views(buf: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        return [
            (buf[:, o : o + a * b].reshape(B, b, a), buf[:, o + a * b : o + a * b + b].reshape(B, b, 1))
            for (a, b), o in zip(pairs, offs[:-1], strict=True)
        ]

    lay, glay = views(theta), views(grad)
    for (WT, bT), (W, b) in zip(lay, unpack(np.asarray(theta0, float)[None, :], sizes), strict=True):
        WT[:] = W[0].T
        bT[:] = b[0].T
    mom, vel, t1 = np.zeros_like(theta), np.zeros_like(theta), np.empty_like(theta)
    sT = np.asarray(s, dt).reshape(1, 1, N)
    YT = np.ascontiguousarray(Y.transpose(0, 2, 1), dtype=dt)  # (B, m, N)
    mk = np.asarray(mask, float).reshape(B, m, 1)
    count = N * mk.sum(axis=(1, 2))
    gscale = (mk / count[:, None, None]).astype(dt)  # d(MAE)/d(out) = sign(r) * gscale
    acts = [np.empty((B, b, N), dt) for _, b in pairs[:-1]]
    gbuf = [np.empty((B, b, N), dt) for _, b in pairs[:-1]]
    dbuf = [np.empty((B, b, N), dt) for _, b in pairs[:-1]]
    out, r = np.empty((B, m, N), dt), np.empty((B, m, N), dt)

    def fwd() -> None:
        WT, bT = lay[0]
        np.multiply(WT, sT, out=acts[0])  # one input: the product is the matrix product
        np.add(acts[0], bT, out=acts[0])
        np.tanh(acts[0], out=acts[0])
        for k in range(1, L - 1):
            WT, bT = lay[k]
            np.matmul(WT, acts[k - 1], out=acts[k])
            np.add(acts[k], bT, out=acts[k])
            np.tanh(acts[k], out=acts[k])
        WT, bT = lay[-1]
        np.matmul(WT, acts[-1], out=out)
        np.add(out, bT, out=out)

    for step in range(1, steps + 1):
        fwd()
        np.subtract(out, YT, out=r)
        np.sign(r, out=r)
        np.multiply(r, gscale, out=r)
        g = r
        for k in range(L - 1, -1, -1):
            gW, gb = glay[k]
            if k == 0:
                np.multiply(g, sT, out=dbuf[0])
                np.sum(dbuf[0], axis=2, keepdims=True, out=gW)
            else:
                np.matmul(g, acts[k - 1].transpose(0, 2, 1), out=gW)
            np.sum(g, axis=2, keepdims=True, out=gb)
            if k:
                a, gn, d = acts[k - 1], gbuf[k - 1], dbuf[k - 1]
                np.matmul(lay[k][0].transpose(0, 2, 1), g, out=gn)
                np.multiply(a, a, out=d)  # tanh' = 1 - a^2
                np.subtract(1.0, d, out=d)
                np.multiply(gn, d, out=gn)
                g = gn
        # Adam, as adam_update, without temporaries
        np.subtract(grad, mom, out=t1)
        t1 *= 1.0 - beta1
        mom += t1
        vel *= beta2
        np.multiply(grad, grad, out=t1)
        t1 *= 1.0 - beta2
        vel += t1
        np.sqrt(vel, out=t1)
        t1 /= np.sqrt(1.0 - beta2**step)
        t1 += eps
        np.divide(mom, t1, out=t1)
        t1 *= lr / (1.0 - beta1**step)
        theta -= t1
    fwd()
    np.subtract(out, YT, out=r)
    loss = (np.abs(r.astype(float)) * mk).sum(axis=(1, 2)) / count
    return out.transpose(0, 2, 1).astype(float), loss


def fit_torch(
    s: np.ndarray,
    Y: np.ndarray,
    mask: np.ndarray,
    theta0: np.ndarray,
    sizes: Sequence[int],
    steps: int,
    lr: float,
    threads: int | None = 1,
    dtype: str = "float64",
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fit_numpy` through PyTorch autograd and ``torch.optim.Adam`` (CPU); same arguments and returns.
    ``threads`` caps torch's intra-op threads during the fit (restored afterwards)."""
    if dtype not in ("float64", "float32"):
        raise SettingError("", "dtype", "'float64' or 'float32'", dtype)
    torch = require("torch", "deep")
    tdt = torch.float64 if dtype == "float64" else torch.float32
    old = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
    try:
        B = Y.shape[0]
        theta = np.repeat(theta0[None, :], B, axis=0)
        # One leaf tensor per weight and bias, from the same initial draw as the numpy fit.
        params = [
            torch.tensor(np.ascontiguousarray(a), dtype=tdt, requires_grad=True)
            for layer in unpack(theta, sizes)
            for a in layer
        ]
        st = torch.tensor(s, dtype=tdt)[None, :, None]
        Yt = torch.tensor(Y, dtype=tdt)
        mk = torch.tensor(mask, dtype=tdt)
        count = Y.shape[1] * mk.sum(dim=(1, 2))
        opt = torch.optim.Adam(params, lr=lr, betas=(0.9, 0.999), eps=1e-8)

        def net() -> torch.Tensor:
            a = torch.tanh(torch.addcmul(params[1], st, params[0]))
            for i in range(2, len(params) - 2, 2):
                a = torch.tanh(torch.baddbmm(params[i + 1], a, params[i]))
            return torch.baddbmm(params[-1], a, params[-2])

        for _ in range(steps):
            opt.zero_grad(set_to_none=False)
            loss = ((net() - Yt).abs() * mk).sum(dim=(1, 2)) / count
            loss.sum().backward()
            opt.step()
        with torch.no_grad():
            out = net()
            loss = ((out - Yt).abs() * mk).sum(dim=(1, 2)) / count
        return out.numpy().astype(float), loss.numpy().astype(float)
    finally:
        torch.set_num_threads(old)


def torch_available() -> bool:
    """Whether PyTorch can be imported (the ``deep`` extra)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------------------------
# Curves in, curves out
# --------------------------------------------------------------------------------------------
def _monotonic(x: np.ndarray) -> bool:
    d = np.diff(x)
    return bool(np.ptp(x) > 0 and (np.all(d >= 0) or np.all(d <= 0)))


def discretise(
    curve: Curve, n_points: int, mode: SmoothMode = "auto"
) -> tuple[str, np.ndarray, np.ndarray, np.ndarray | None]:
    """A curve at ``n_points`` points for the smoother: ``(mode, x, y, t)``, each ``(n_points,)`` (``t``:
    ``None`` when the curve has none). ``"abscissa"``: uniform in ``x`` from its first to its last value;
    ``"progress"``: uniform in the progress coordinate. ``"auto"``: ``"abscissa"`` when ``x`` is monotonic."""
    if mode not in ("auto", "abscissa", "progress"):
        raise SettingError("", "mode", "'auto', 'abscissa' or 'progress'", mode)
    x, y = curve.x, curve.y
    if mode == "abscissa" and not _monotonic(x):
        raise DataError(
            f"curve {curve.y_name!r} vs {curve.x_name!r}: the abscissa mode needs a monotonic, non-constant x; "
            "use mode='progress' (or 'auto')"
        )
    if mode == "abscissa" or (mode == "auto" and _monotonic(x)):
        xs = np.linspace(x[0], x[-1], n_points)
        order = slice(None) if x[-1] >= x[0] else slice(None, None, -1)
        ys = np.interp(xs, x[order], y[order])
        ts = None if curve.t is None else np.interp(xs, x[order], curve.t[order])
        return "abscissa", xs, ys, ts
    p = curve.progress
    if not np.ptp(p) > 0:
        raise DataError(
            f"curve {curve.y_name!r} vs {curve.x_name!r}: its abscissa is not monotonic and its progress coordinate "
            "is constant; give a progress coordinate t that advances"
        )
    ps = np.linspace(p[0], p[-1], n_points)
    return "progress", np.interp(ps, p, x), np.interp(ps, p, y), (None if curve.t is None else ps)


class NeuralSmoother:
    """Kibriya et al. (2023) section 3.4.2: a dense network fitted to one curve, its output the smoothed curve.

    Args:
        n_layers, width: hidden layers and neurons per layer (5 and 20, tanh).
        n_points: points the curve is discretised into (200) - the training set and the output.
        steps: full-batch Adam steps (1000; more follow the noise, see the module docstring).
        learning_rate: Adam's step size (0.01).
        mode: ``"auto"``, ``"abscissa"`` or ``"progress"`` (module docstring).
        backend: ``"numpy"`` (default), ``"torch"`` or ``"auto"`` (torch when installed).
        threads: torch intra-op threads during a fit (1: the networks are tiny).
        seed: seed of the initial weights; every curve's network starts from the same draw.
        dtype: ``"float32"`` (default, about 2.3 times faster) or ``"float64"`` arithmetic of the training.
        batch: at most this many networks are trained in one stacked call (memory stays in cache); the
            result does not depend on it.
    """

    def __init__(
        self,
        *,
        n_layers: int = 5,
        width: int = 20,
        n_points: int = 200,
        steps: int = 1000,
        learning_rate: float = 0.01,
        mode: SmoothMode = "auto",
        backend: Backend = "numpy",
        threads: int | None = 1,
        seed: int = 0,
        dtype: Dtype = "float32",
        batch: int = 24,
    ) -> None:
        for k, val, lo in (
            ("n_layers", n_layers, 1),
            ("width", width, 1),
            ("n_points", n_points, 2),
            ("steps", steps, 0),
            ("batch", batch, 1),
        ):
            if isinstance(val, bool) or not isinstance(val, int | np.integer) or val < lo:
                raise SettingError("", k, f"an integer >= {lo}", val)
        if (
            isinstance(learning_rate, bool)
            or not isinstance(learning_rate, int | float)
            or not (np.isfinite(learning_rate) and learning_rate > 0)
        ):
            raise SettingError("", "learning_rate", "a finite number > 0", learning_rate)
        if mode not in ("auto", "abscissa", "progress"):
            raise SettingError("", "mode", "'auto', 'abscissa' or 'progress'", mode)
        if backend not in ("auto", "numpy", "torch"):
            raise SettingError("", "backend", "'auto', 'numpy' or 'torch'", backend)
        if dtype not in ("float32", "float64"):
            raise SettingError("", "dtype", "'float32' or 'float64'", dtype)
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise SettingError("", "seed", "an integer (the smoother is always seeded)", seed)
        if backend == "torch":
            require("torch", "deep")
        self.n_layers, self.width, self.n_points, self.steps = int(n_layers), int(width), int(n_points), int(steps)
        self.learning_rate, self.mode, self.backend, self.threads, self.seed = (
            float(learning_rate),
            mode,
            backend,
            threads,
            int(seed),
        )
        self.dtype, self.batch = dtype, int(batch)
        self.sizes = layer_sizes(self.n_layers, self.width)
        self.last_losses: np.ndarray | None = None  # final training MAE (standardised units) of the last fit

    @property
    def resolved_backend(self) -> str:
        """The backend a fit uses now."""
        if self.backend == "auto":
            return "torch" if torch_available() else "numpy"
        return self.backend

    def settings(self) -> dict:
        return {
            "n_layers": self.n_layers,
            "width": self.width,
            "n_points": self.n_points,
            "steps": self.steps,
            "learning_rate": self.learning_rate,
            "mode": self.mode,
            "backend": self.backend,
            "seed": self.seed,
            "dtype": self.dtype,
        }

    def fit(self, Y: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Fit one network per target ``Y[b]`` ``(n_points, 2)`` (standardised) at inputs uniform in [-1, 1];
        ``mask`` ``(B, 1, 2)`` selects the outputs each one is trained on. Returns the outputs ``(B, n_points, 2)``.
        The networks are trained in stacks of at most ``batch``; each one's result is what it would be alone."""
        s = np.linspace(-1.0, 1.0, self.n_points)
        theta0 = init_params(self.sizes, np.random.default_rng(self.seed))
        fit = fit_torch if self.resolved_backend == "torch" else fit_numpy
        kw = {"threads": self.threads} if fit is fit_torch else {}
        Y, mask = np.asarray(Y, float), np.asarray(mask, float)
        outs, losses = [], []
        for i in range(0, Y.shape[0], self.batch):
            o, loss = fit(
                s,
                Y[i : i + self.batch],
                mask[i : i + self.batch],
                theta0,
                self.sizes,
                self.steps,
                self.learning_rate,
                dtype=self.dtype,
                **kw,
            )
            outs.append(o)
            losses.append(loss)
        self.last_losses = np.concatenate(losses) if losses else np.zeros(0)
        return np.concatenate(outs) if outs else np.zeros((0, self.n_points, N_OUT))

    def smooth_many(self, curves: Sequence[Curve]) -> list[Curve]:
        """Smooth each curve with its own network (trained together, independently). Each result has
        ``n_points`` points and keeps the curve's labels and, resampled, its progress coordinate."""
        curves = list(curves)
        if not curves:
            return []
        B, N = len(curves), self.n_points
        Y, mask = np.zeros((B, N, N_OUT)), np.zeros((B, 1, N_OUT))
        prep, scale = [], np.zeros((B, 2, N_OUT))
        for i, c in enumerate(curves):
            mode, xs, ys, ts = discretise(c, N, self.mode)
            cols = [ys] if mode == "abscissa" else [xs, ys]
            for j, col in enumerate(cols):
                mu, sd = float(np.mean(col)), float(np.std(col))
                sd = sd if sd > 0 else 1.0
                Y[i, :, j], scale[i, :, j], mask[i, 0, j] = (col - mu) / sd, (mu, sd), 1.0
            prep.append((mode, xs, ts))
        out = self.fit(Y, mask) * scale[:, 1:2, :] + scale[:, 0:1, :]
        res = []
        for i, (c, (mode, xs, ts)) in enumerate(zip(curves, prep, strict=True)):
            if mode == "abscissa":
                x_new, y_new = xs, out[i, :, 0]
            else:
                x_new, y_new = out[i, :, 0], out[i, :, 1]
            res.append(Curve(x_new, y_new, t=ts, x_name=c.x_name, y_name=c.y_name, x_unit=c.x_unit, y_unit=c.y_unit))
        return res

    def smooth(self, curve: Curve) -> Curve:
        """The smoothed curve (``n_points`` points); see :meth:`smooth_many`."""
        return self.smooth_many([curve])[0]

    def smooth_experiment(self, experiment: Experiment) -> Experiment:
        """A copy of ``experiment`` with every channel smoothed."""
        names = list(experiment.channels)
        sm = self.smooth_many([experiment[k] for k in names])
        return Experiment(
            dict(zip(names, sm, strict=True)),
            conditions=experiment.conditions,
            name=f"{experiment.name} (smoothed)",
            weight=experiment.weight,
        )


# --------------------------------------------------------------------------------------------
# Objective 2
# --------------------------------------------------------------------------------------------
_CACHE: OrderedDict[tuple, Curve] = OrderedDict()
_CACHE_SIZE = 64
_LOCK = threading.Lock()


def _curve_key(c: Curve) -> str:
    h = hashlib.blake2b(digest_size=16)
    for a in (c.x, c.y, c.t):
        h.update(b"-" if a is None else np.ascontiguousarray(a, dtype="<f8").tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class SmoothedOverlapRSS(OverlapRSS):
    """Kibriya et al. (2023) objective 2: objective 1 (``n_points``, ``pairing`` as in :class:`OverlapRSS`) on the curves
    smoothed by a :class:`NeuralSmoother` with the ``smooth_*`` settings, experiment and simulation alike.

    The smoothed experiment is cached (per process, by the curve's values and the settings), so it is
    trained once per calibration; the channels of a simulation train together, and :meth:`values_many`
    trains those of a whole batch of simulations together (the same values as one by one).

    Residuals: objective 1's (:class:`OverlapRSS`) between the smoothed simulated and the smoothed measured
    curve of each channel, so the loss is the same function of them (``residual_loss = "root_per_channel"``:
    each channel's misfit is the root of its sum of squares). The pairing and the residual count of a channel
    follow the smoothed measured curve."""

    smooth_steps: int = 1000
    smooth_learning_rate: float = 0.01
    smooth_points: int = 200
    smooth_layers: int = 5
    smooth_width: int = 20
    smooth_mode: SmoothMode = "auto"
    smooth_backend: Backend = "numpy"
    smooth_seed: int = 0
    smooth_dtype: Dtype = "float32"
    name = "smoothed_overlap_rss"
    lower_bound = 0.0
    has_residuals = True

    def __post_init__(self) -> None:
        super().__post_init__()
        _ = self.smoother  # validate the settings now

    @property
    def smoother(self) -> NeuralSmoother:
        # Built on demand, not stored: the objective's pickle (a run's fingerprint) must not change with use.
        return NeuralSmoother(
            n_layers=self.smooth_layers,
            width=self.smooth_width,
            n_points=self.smooth_points,
            steps=self.smooth_steps,
            learning_rate=self.smooth_learning_rate,
            mode=self.smooth_mode,
            backend=self.smooth_backend,
            seed=self.smooth_seed,
            dtype=self.smooth_dtype,
        )

    def smoothed_reference(self, curves: Sequence[Curve]) -> list[Curve]:
        """``curves`` smoothed, from the cache where possible (meant for the experiment's curves)."""
        sm = self.smoother
        base = (tuple(sorted(sm.settings().items())), sm.resolved_backend)
        keys = [base + (_curve_key(c),) for c in curves]
        with _LOCK:
            hit = {k: _CACHE[k] for k in keys if k in _CACHE}
        todo = [i for i, k in enumerate(keys) if k not in hit]
        if todo:
            for i, c in zip(todo, sm.smooth_many([curves[i] for i in todo]), strict=True):
                hit[keys[i]] = c
            with _LOCK:
                for i in todo:
                    _CACHE[keys[i]] = hit[keys[i]]
                    _CACHE.move_to_end(keys[i])
                while len(_CACHE) > _CACHE_SIZE:
                    _CACHE.popitem(last=False)
        return [hit[k] for k in keys]

    def _smoothed_pairs(
        self, simulated: Mapping[str, Curve], experiment: Experiment
    ) -> tuple[list[str], list[Curve], list[Curve]]:
        """The compared channels with their smoothed simulated curves (one stacked fit) and smoothed references."""
        names = list(self.channels if self.channels is not None else experiment.channel_names)
        missing = [ch for ch in names if ch not in simulated]
        if missing:
            raise DataError(
                f"the simulation has no channel {missing[0]!r} measured in experiment {experiment.name!r}; "
                f"it has {sorted(simulated)}"
            )
        exp_s = self.smoothed_reference([experiment[ch] for ch in names])
        sim_s = self.smoother.smooth_many([simulated[ch] for ch in names])
        return names, sim_s, exp_s

    def breakdown(self, simulated: Mapping[str, Curve], experiment: Experiment) -> dict[str, float]:
        names, sim_s, exp_s = self._smoothed_pairs(simulated, experiment)
        return {ch: OverlapRSS.channel_misfit(self, s, e) for ch, s, e in zip(names, sim_s, exp_s, strict=True)}

    def channel_misfit(self, sim: Curve, exp: Curve) -> float:
        (e,) = self.smoothed_reference([exp])
        return OverlapRSS.channel_misfit(self, self.smoother.smooth(sim), e)

    # -- residuals: objective 1's on the smoothed curves ----------------------------------------------
    def channel_residual_count(self, exp: Curve) -> int:
        (e,) = self.smoothed_reference([exp])
        return OverlapRSS.channel_residual_count(self, e)

    def channel_residuals(self, sim: Curve, exp: Curve) -> np.ndarray:
        (e,) = self.smoothed_reference([exp])
        return OverlapRSS.channel_residuals(self, self.smoother.smooth(sim), e)

    def residuals(self, simulated: Mapping[str, Curve], experiment: Experiment) -> np.ndarray:
        """As :meth:`Objective.residuals`, the simulated channels smoothed in one stacked fit (the same
        values as one by one)."""
        names, sim_s, exp_s = self._smoothed_pairs(simulated, experiment)
        parts = [
            np.sqrt(self.weights.get(ch, 1.0)) * OverlapRSS.channel_residuals(self, s, e)
            for ch, s, e in zip(names, sim_s, exp_s, strict=True)
        ]
        return np.concatenate(parts) if parts else np.zeros(0)

    def values_many(self, simulated: Sequence[Mapping[str, Curve]], experiment: Experiment) -> list[float | Exception]:
        """The objective of each of several simulated responses against ``experiment``, with the networks of
        all their channels trained in one stacked fit. Item ``i`` equals ``self(simulated[i], experiment)``
        (bit for bit: the stacked networks are independent), or is the exception that response raised
        (a missing channel, a curve the smoother cannot take), so that one bad response fails alone."""
        names = list(self.channels if self.channels is not None else experiment.channel_names)
        exp_s = self.smoothed_reference([experiment[ch] for ch in names])
        out: list[float | Exception] = [math.nan] * len(simulated)
        ok, curves = [], []
        for i, sim in enumerate(simulated):
            try:
                missing = [ch for ch in names if ch not in sim]
                if missing:
                    raise DataError(
                        f"the simulation has no channel {missing[0]!r} measured in experiment {experiment.name!r}; "
                        f"it has {sorted(sim)}"
                    )
                for ch in names:  # validate here, so that one bad curve does not fail the whole stack
                    discretise(sim[ch], self.smooth_points, self.smooth_mode)
            except Exception as exc:  # noqa: BLE001 - any response the objective cannot take fails alone
                out[i] = exc
                continue
            ok.append(i)
            curves.extend(sim[ch] for ch in names)
        smoothed = self.smoother.smooth_many(curves)
        for j, i in enumerate(ok):
            try:
                parts = [
                    OverlapRSS.channel_misfit(self, smoothed[j * len(names) + c], exp_s[c]) for c in range(len(names))
                ]
                out[i] = float(sum(self.weights.get(ch, 1.0) * v for ch, v in zip(names, parts, strict=True)))
            except Exception as exc:  # noqa: BLE001 - as above
                out[i] = exc
        return out


__all__ = [
    "NeuralSmoother",
    "SmoothedOverlapRSS",
    "adam_update",
    "backward",
    "discretise",
    "fit_numpy",
    "fit_reference",
    "fit_torch",
    "forward",
    "init_params",
    "layer_sizes",
    "mae_grad",
    "n_params",
    "torch_available",
    "unpack",
]
