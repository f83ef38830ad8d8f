"""The plots a user reads an uncertainty from: a corner plot of the posterior (or of the Laplace Gaussian) and
the calibrated fit with its predictive band, the band also drawn minus the fit so that a band too thin to see
at full scale can be read.

The corner plot is drawn by the ``corner`` package (Foreman-Mackey (2016); the ``plots`` extra,
``pip install 'mechcalib[plots]'``); without it a plain matplotlib version of the same layout is drawn. Either
way a panel's title gives its 95 % interval with as many digits as it takes for the bounds to differ, and every
axis names its parameter's unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.model import SimulationFailure
from ..reporting import (
    _few_ticks,
    _pyplot,
    _write,
    axis_label,
    channel_labels,
    interval_text,
    legend_below,
    on_points,
    residual_abscissa,
)


def _logs(samples: np.ndarray, log: Sequence[bool] | None) -> list[bool]:
    """A log axis only where asked and the samples span more than a factor 3 (narrow ranges read better
    linearly)."""
    d = samples.shape[1]
    asked = list(log) if log is not None else [False] * d
    return [
        bool(g) and samples[:, i].min() > 0 and samples[:, i].max() > 3 * samples[:, i].min()
        for i, g in enumerate(asked)
    ]


def corner_figure(
    samples: np.ndarray,
    names: Sequence[str],
    *,
    units: Sequence[str] | None = None,
    best: Sequence[float] | np.ndarray | None = None,
    truth: Sequence[float] | None = None,
    log: Sequence[bool] | None = None,
    title: str | None = None,
    bins: int = 30,
):
    """The figure of :func:`corner_plot` (through ``corner`` when installed, else matplotlib alone)."""
    samples = np.asarray(samples, dtype=float)
    d = samples.shape[1]
    logs = _logs(samples, log)
    labels = [axis_label(n, u) for n, u in zip(names, units or [""] * d, strict=True)]
    try:
        import corner
    except ImportError:
        fig = _corner_matplotlib(samples, labels, logs, bins)
    else:
        fig = corner.corner(
            samples,
            bins=bins,
            labels=labels,
            axes_scale=["log" if g else "linear" for g in logs],
            quantiles=[0.025, 0.975],
            truths=None if truth is None else list(truth),
            truth_color="tab:red",
            max_n_ticks=3,
            label_kwargs={"fontsize": 8},
            plot_datapoints=False,
            fill_contours=True,
            levels=(0.39, 0.86),  # 1 and 2 sigma of a 2-D Gaussian
            hist_kwargs={"color": "0.3"},
        )
    axes = np.array(fig.axes).reshape(d, d)
    lo, hi = np.percentile(samples, [2.5, 97.5], axis=0)
    for i in range(d):
        axes[i, i].set_title(f"{names[i]}: {interval_text(lo[i], hi[i])}", fontsize=8)
        if best is not None:
            axes[i, i].axvline(best[i], color="tab:blue", lw=1.2)
        for j in range(i):
            if best is not None:
                axes[i, j].plot(best[j], best[i], "o", color="tab:blue", ms=4)
        for ax in axes[i, : i + 1]:
            ax.tick_params(labelsize=7)
            for lab in ax.get_xticklabels():
                lab.set_rotation(45)
                lab.set_horizontalalignment("right")
    fig.set_size_inches(2.3 * d + 1.0, 2.3 * d + 1.0)
    fig.subplots_adjust(left=0.16, bottom=0.16, right=0.97, top=0.86, wspace=0.12, hspace=0.12)
    note = "blue: polished optimum" + ("; red: truth" if truth is not None else "") + "; dashed: 95 % interval"
    fig.suptitle((title + "\n" if title else "") + note, fontsize=9)
    return fig


def _corner_matplotlib(samples: np.ndarray, labels: list[str], logs: list[bool], bins: int):
    """The corner layout in matplotlib alone: histograms on the diagonal (the 95 % interval dashed), 2-D
    histograms below it, the upper triangle empty."""
    from matplotlib.ticker import LogLocator, MaxNLocator

    plt = _pyplot()
    d = samples.shape[1]
    fig, axes = plt.subplots(d, d, squeeze=False)
    lo, hi = np.percentile(samples, [2.5, 97.5], axis=0)

    def edges(i: int) -> np.ndarray:
        a, b = samples[:, i].min(), samples[:, i].max()
        if b <= a:
            a, b = a - 0.5 * abs(a) - 1e-12, b + 0.5 * abs(b) + 1e-12
        return np.geomspace(a, b, bins + 1) if logs[i] and a > 0 else np.linspace(a, b, bins + 1)

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
            else:
                ax.hist2d(samples[:, j], samples[:, i], bins=[edges(j), edges(i)], cmap="Greys")
                if logs[i]:
                    ax.set_yscale("log")
                ax.yaxis.set_major_locator(LogLocator(numticks=3) if logs[i] else MaxNLocator(3))
            if logs[j]:
                ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(numticks=3) if logs[j] else MaxNLocator(3))
            if i == d - 1:
                ax.set_xlabel(labels[j], fontsize=8)
            else:
                ax.set_xticklabels([])
            if j == 0 and i > 0:
                ax.set_ylabel(labels[i], fontsize=8)
            elif i != j:
                ax.set_yticklabels([])
    return fig


def corner_plot(
    samples: np.ndarray,
    names: Sequence[str],
    path: str | Path,
    *,
    units: Sequence[str] | None = None,
    best: Sequence[float] | np.ndarray | None = None,
    truth: Sequence[float] | None = None,
    log: Sequence[bool] | None = None,
    title: str | None = None,
    bins: int = 30,
) -> Path:
    """Histograms of each parameter on the diagonal and pairwise densities below it, for ``samples``
    ``(n, d)``; the 95 % interval dashed and in each diagonal panel's title, ``best`` (the polished optimum) and
    ``truth`` marked; axes labelled with the parameters' ``units``; log-scaled parameters on log axes."""
    fig = corner_figure(samples, names, units=units, best=best, truth=truth, log=log, title=title, bins=bins)
    return _write(fig, path)


def band_figure(
    problem: Any,
    samples: np.ndarray,
    best: np.ndarray,
    *,
    noise: Mapping[str, float] | None = None,
    experiment: int = 0,
    n_draws: int = 100,
    seed: int = 0,
    title: str | None = None,
):
    """The figure of :func:`predictive_band`: per channel the band at full scale above, and below it the
    residual-band view (the band and the measured points minus the fit, where a thin band is visible)."""
    plt = _pyplot()
    exp = problem.experiments[experiment]
    rng = np.random.default_rng(seed)
    pick = samples[rng.choice(len(samples), size=min(n_draws, len(samples)), replace=False)]
    sims = problem.simulate(np.vstack([best[None, :], pick]), exp)
    names = exp.channel_names
    fig, axes = plt.subplots(
        2, len(names), figsize=(5.5 * len(names), 5.6), squeeze=False, gridspec_kw={"height_ratios": [3, 2]}
    )
    fig.set_layout_engine("constrained")
    for k, ch in enumerate(names):
        _band_panels(axes[0, k], axes[1, k], problem, exp, ch, sims, noise)
    legend_below(fig, axes.ravel())
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def _band_panels(ax, rax, problem: Any, exp: Any, ch: str, sims: list, noise: Any) -> None:
    c = exp[ch]
    x, y = np.asarray(c.x, dtype=float), np.asarray(c.y, dtype=float)
    xl, yl = channel_labels(problem, exp, ch)
    rx, rxl = residual_abscissa(x, xl)
    b = sims[0]
    fit = on_points(x, b[ch]) if not isinstance(b, SimulationFailure) and ch in b else None
    ax.plot(x, y, ".", ms=2.5, color="0.3", label="measured")
    Y = np.array([on_points(x, s[ch]) for s in sims[1:] if not isinstance(s, SimulationFailure) and ch in s])
    increasing = x.size < 2 or bool(np.all(np.diff(x) > 0))
    if len(Y):
        lo, hi = np.percentile(Y, [2.5, 97.5], axis=0)
        bands = [(lo, hi, "95 % band (parameters)", "-")]
        s = (noise or {}).get(ch, (noise or {}).get(f"{exp.name}:{ch}"))
        if s:  # the band's half-width and the noise's 95 % half-width added in quadrature (Gaussian)
            mid, half = (hi + lo) / 2, np.hypot((hi - lo) / 2, 1.959964 * s)
            bands.append((mid - half, mid + half, "95 % posterior-predictive (+ noise)", ":"))
        for blo, bhi, lab, ls in bands:
            for target, base, xx in ((ax, 0.0, x), (rax, 0.0 if fit is None else fit, rx)):
                if ls == "-" and (increasing or target is rax):
                    target.fill_between(
                        xx, blo - base, bhi - base, color="tab:orange", alpha=0.6, lw=0, zorder=3, label=lab
                    )
                else:  # a loop at full scale, or the noise band: the edges as lines
                    target.plot(xx, blo - base, ls, color="tab:orange", lw=1.2, zorder=3, label=lab)
                    target.plot(xx, bhi - base, ls, color="tab:orange", lw=1.2, zorder=3)
    if fit is not None:
        ax.plot(np.asarray(b[ch].x, float), np.asarray(b[ch].y, float), "-", color="tab:blue", lw=1, label="fit")
        rax.plot(rx, y - fit, ".", ms=1.5 if x.size > 2000 else 2.5, color="0.3", alpha=0.5 if x.size > 2000 else 1)
    rax.axhline(0.0, color="tab:blue", lw=1)
    if len(Y) and fit is not None:  # zoomed on the parameters' band: the noise may run off the panel
        reach = float(np.max(np.abs(np.r_[lo - fit, hi - fit])))
        if reach > 0:
            rax.set_ylim(-2.5 * reach, 2.5 * reach)
            rax.set_title("band minus the fit (zoomed on the band)", fontsize=8)
    ax.set_xlabel(xl)
    ax.set_ylabel(yl)
    ax.set_title(ch, fontsize=10)
    rax.set_xlabel(rxl)
    rax.set_ylabel(axis_label("minus the fit", yl.rsplit("[", 1)[1].rstrip("]")))
    for a in (ax, rax):
        _few_ticks(a)


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
    parameter sets drawn from ``samples`` ``(n, d)`` (free parameters), a panel per channel, with the band minus
    the fit under it; with ``noise`` (``{channel: sigma}``) the band widened by the measurement noise too (the
    posterior-predictive band)."""
    fig = band_figure(
        problem, samples, best, noise=noise, experiment=experiment, n_draws=n_draws, seed=seed, title=title
    )
    return _write(fig, path)
