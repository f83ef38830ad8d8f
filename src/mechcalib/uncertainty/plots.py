"""The plots a user reads an uncertainty from: a corner plot of the posterior (or of the Laplace Gaussian) and
the calibrated fit with its predictive band (matplotlib only; no ``corner`` package needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.model import SimulationFailure
from ..reporting import save_png


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def corner_plot(
    samples: np.ndarray,
    names: Sequence[str],
    path: str | Path,
    *,
    best: Sequence[float] | np.ndarray | None = None,
    truth: Sequence[float] | None = None,
    log: Sequence[bool] | None = None,
    title: str | None = None,
    bins: int = 30,
) -> Path:
    """Histograms of each parameter on the diagonal and pairwise scatter/density below it, for ``samples``
    ``(n, d)``; the 95 % interval dashed, ``best`` (the polished optimum) and ``truth`` marked; log-scaled
    parameters on log axes."""
    plt = _pyplot()
    samples = np.asarray(samples, dtype=float)
    d = samples.shape[1]
    log = list(log) if log is not None else [False] * d
    # a log axis only where the samples span more than a factor 3 (narrow ranges read better linearly)
    log = [
        bool(g) and samples[:, i].min() > 0 and samples[:, i].max() > 3 * samples[:, i].min() for i, g in enumerate(log)
    ]
    fig, axes = plt.subplots(d, d, figsize=(2.3 * d + 0.6, 2.3 * d + 0.6), squeeze=False)
    lo, hi = np.percentile(samples, [2.5, 97.5], axis=0)

    def edges(i: int) -> np.ndarray:
        a, b = samples[:, i].min(), samples[:, i].max()
        if b <= a:
            a, b = a - 0.5 * abs(a) - 1e-12, b + 0.5 * abs(b) + 1e-12
        return np.geomspace(a, b, bins + 1) if log[i] and a > 0 else np.linspace(a, b, bins + 1)

    for i in range(d):
        for j in range(d):
            ax = axes[i, j]
            if j > i:
                ax.axis("off")
                continue
            if i == j:
                ax.hist(samples[:, i], bins=edges(i), color="0.4", histtype="stepfilled", alpha=0.6)
                for v in (lo[i], hi[i]):
                    ax.axvline(v, color="k", ls="--", lw=0.8)
                ax.set_yticks([])
                ax.set_title(f"{names[i]}: [{lo[i]:.3g}, {hi[i]:.3g}]", fontsize=8)
            else:
                ax.hist2d(samples[:, j], samples[:, i], bins=[edges(j), edges(i)], cmap="Greys")
                if best is not None:
                    ax.plot(best[j], best[i], "o", color="tab:blue", ms=4)
                if truth is not None:
                    ax.plot(truth[j], truth[i], "s", color="tab:red", ms=4)
                if log[i]:
                    ax.set_yscale("log")
            if log[j]:
                ax.set_xscale("log")
            if i == j:
                if best is not None:
                    ax.axvline(best[i], color="tab:blue", lw=1.2)
                if truth is not None:
                    ax.axvline(truth[i], color="tab:red", lw=1.2)
            if i == d - 1:
                ax.set_xlabel(names[j])
            else:
                ax.set_xticklabels([])
            if j == 0 and i > 0:
                ax.set_ylabel(names[i])
            elif i != j:
                ax.set_yticklabels([])
            ax.tick_params(labelsize=7)
    note = "blue: polished optimum" + ("; red: truth" if truth is not None else "") + "; dashed: 95 % interval"
    fig.suptitle((title + "\n" if title else "") + note, fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_png(fig, path, dpi=110)
    plt.close(fig)
    return path


def _on(x: np.ndarray, sim: Any) -> np.ndarray:
    """A simulated curve at the measured points: as is when it has as many points, interpolated in ``x`` when
    that increases, else along the normalised point index (a loop)."""
    sx, sy = np.asarray(sim.x, float), np.asarray(sim.y, float)
    if sy.shape[0] == x.shape[0]:
        return sy
    if np.all(np.diff(sx) > 0) and np.all(np.diff(x) > 0):
        return np.interp(x, sx, sy)
    return np.interp(np.linspace(0, 1, x.size), np.linspace(0, 1, sy.size), sy)


def predictive_band(
    problem: Any,
    samples: np.ndarray,
    best: np.ndarray,
    path: str | Path,
    *,
    noise: Mapping[str, float] | None = None,
    experiment: int = 0,
    n_draws: int = 100,
    seed: int = 0,
    title: str | None = None,
) -> Path:
    """The measured curves, the fit at ``best`` and the 95 % band of the simulated response over ``n_draws``
    parameter sets drawn from ``samples`` ``(n, d)`` (free parameters), a panel per channel; with ``noise``
    (``{channel: sigma}``) the band widened by the measurement noise too (the posterior-predictive band)."""
    plt = _pyplot()
    exp = problem.experiments[experiment]
    rng = np.random.default_rng(seed)
    pick = samples[rng.choice(len(samples), size=min(n_draws, len(samples)), replace=False)]
    sims = problem.simulate(np.vstack([best[None, :], pick]), exp)
    names = exp.channel_names
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4), squeeze=False)
    for ax, ch in zip(axes[0], names, strict=True):
        c = exp[ch]
        x = np.asarray(c.x, dtype=float)
        ok = [s[ch] for s in sims[1:] if not isinstance(s, SimulationFailure) and ch in s]
        Y = np.array([_on(x, s) for s in ok])
        order = np.arange(x.size)  # the curve's own order (a loop's abscissa need not increase)
        xs = x[order]
        ax.plot(xs, np.asarray(c.y, float)[order], ".", ms=2.5, color="0.3", label="measured")
        if len(Y):
            lo, hi = np.percentile(Y, [2.5, 97.5], axis=0)
            if np.all(np.diff(x) > 0):
                ax.fill_between(xs, lo, hi, color="tab:orange", alpha=0.45, label="95 % band (parameters)")
            else:  # a loop: the band's edges as lines
                ax.plot(xs, lo, "-", color="tab:orange", lw=0.8, label="95 % band (parameters)")
                ax.plot(xs, hi, "-", color="tab:orange", lw=0.8)
            s = (noise or {}).get(ch, (noise or {}).get(f"{exp.name}:{ch}"))
            if s:
                draws = Y + rng.normal(0.0, s, Y.shape)
                plo, phi = np.percentile(draws, [2.5, 97.5], axis=0)
                ax.plot(xs, plo, ":", color="tab:orange", lw=1)
                ax.plot(xs, phi, ":", color="tab:orange", lw=1, label="95 % posterior-predictive (+ noise)")
        b = sims[0]
        if not isinstance(b, SimulationFailure) and ch in b:
            ax.plot(np.asarray(b[ch].x, float), np.asarray(b[ch].y, float), "-", color="tab:blue", lw=1, label="fit")
        ax.set_xlabel(c.x_name or "x")
        ax.set_ylabel(c.y_name or ch)
        ax.set_title(ch)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_png(fig, path, dpi=110)
    plt.close(fig)
    return path
