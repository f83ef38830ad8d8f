"""Plots of calibration results (matplotlib, imported lazily, no display needed)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .core.model import SimulationFailure


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _experiment(problem, experiment: int | str):
    exps = problem.experiments
    if isinstance(experiment, str):
        for e in exps:
            if e.name == experiment:
                return e
        raise KeyError(f"no experiment {experiment!r}; experiments are {[e.name for e in exps]}")
    return exps[experiment]


def plot_fit(
    problem,
    x_free: np.ndarray,
    path: str | Path,
    *,
    experiment: int | str = 0,
    response: Mapping[str, Any] | SimulationFailure | None = None,
    title: str | None = None,
) -> Path:
    """Measured against simulated curves of one experiment (the first by default), a panel per channel.

    Args:
        x_free: free parameter values ``(dim,)``.
        experiment: the experiment's index or name.
        response: the simulated response ``{channel: Curve}`` at ``x_free`` when already known (e.g. kept
            in the run store); otherwise the problem simulates ``x_free`` once.
        title: a figure title.
    """
    plt = _pyplot()
    exp = _experiment(problem, experiment)
    sim = response
    if sim is None:
        (sim,) = problem.simulate(np.atleast_2d(x_free), exp)
    names = exp.channel_names
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
    for ax, ch in zip(axes[0], names, strict=True):
        c = exp[ch]
        ax.plot(c.x, c.y, ".", ms=2, color="0.5", label="measured")
        if not isinstance(sim, SimulationFailure) and ch in sim:
            s = sim[ch]
            ax.plot(s.x, s.y, "-", lw=1.2, color="C3", label="calibrated model")
        ax.set_xlabel(f"{c.x_name} [{c.x_unit}]" if c.x_unit else c.x_name)
        ax.set_ylabel(f"{c.y_name} [{c.y_unit}]" if c.y_unit else c.y_name)
        ax.set_title(ch if len(problem.experiments) == 1 else f"{exp.name}: {ch}")
        ax.legend()
    if isinstance(sim, SimulationFailure):
        fig.text(0.5, 0.01, f"simulation failed: {sim.message}", ha="center", color="C3", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.") or "experiment"


def plot_fits(
    problem,
    x_free: np.ndarray,
    out_dir: str | Path,
    *,
    responses: Mapping[str, Any] | None = None,
    prefix: str = "fit",
    title: str | None = None,
) -> list[Path]:
    """:func:`plot_fit` for every experiment, written to ``<out_dir>/<prefix>_<experiment name>.png``.

    ``responses``: ``{experiment name: {channel: Curve}}`` at ``x_free`` when known (a run store keeps
    them with ``keep_responses``); experiments missing from it are simulated.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    used: set[str] = set()
    for i, exp in enumerate(problem.experiments):
        stem = f"{prefix}_{_file_name(exp.name)}"
        if stem in used:  # two experiments whose names differ only in odd characters
            stem = f"{stem}_{i}"
        used.add(stem)
        resp = responses.get(exp.name) if responses is not None else None
        written.append(plot_fit(problem, x_free, out / f"{stem}.png", experiment=i, response=resp, title=title))
    return written


def plot_convergence(
    losses: Sequence[float] | np.ndarray,
    path: str | Path,
    *,
    status: Sequence[str] | None = None,
    title: str | None = None,
) -> Path:
    """Loss of every evaluation (dots) and the best loss so far (a step line) against the number of
    evaluations, on a log scale (symmetric-log when a loss is <= 0).

    Args:
        losses: ``(N,)`` in evaluation order; non-finite values (failed evaluations with an infinite
            penalty) are left out of the dots and of the scale.
        status: ``(N,)`` evaluation statuses; evaluations not ``"ok"`` are marked at the bottom of the plot.
    """
    plt = _pyplot()
    f = np.asarray(losses, dtype=float).reshape(-1)
    n = np.arange(1, f.size + 1)
    ok = np.isfinite(f)
    failed = np.array([s != "ok" for s in status], dtype=bool) if status is not None else ~ok
    best = np.minimum.accumulate(np.where(ok, f, np.inf)) if f.size else f
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.plot(n[ok & ~failed], f[ok & ~failed], ".", ms=3, color="C0", alpha=0.7, zorder=3, label="evaluation")
    shown = np.isfinite(best)
    if shown.any():
        ax.step(n[shown], best[shown], where="post", color="C3", lw=1.5, label="best so far")
    if ok.any():
        lo = float(np.min(f[ok]))
        if lo > 0:
            ax.set_yscale("log")
        else:
            ax.set_yscale("symlog", linthresh=max(float(np.max(np.abs(f[ok]))) * 1e-6, 1e-12))
    if failed.any():
        ylo = ax.get_ylim()[0]
        ax.plot(
            n[failed],
            np.full(int(failed.sum()), ylo),
            "x",
            ms=4,
            color="C1",
            clip_on=False,
            label=f"failed ({int(failed.sum())})",
        )
    ax.set_xlabel("evaluations")
    ax.set_ylabel("loss")
    ax.grid(True, which="both", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    if f.size:
        ax.legend()
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def save_png(fig, path: str | Path, *, dpi: float = 100, colors: int = 256, **savefig_kw: Any) -> Path:
    """Save ``fig`` as a palette PNG of at most ``colors`` colours: line plots come out about 3-4 times
    smaller than matplotlib's RGBA files with no visible change (octree quantisation, no dithering, so
    thin coloured lines keep their colour). Extra keywords go to ``savefig``."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, **savefig_kw)
    buf.seek(0)
    with Image.open(buf) as im:
        pal = im.convert("RGB").quantize(colors, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    path = Path(path)
    pal.save(path, optimize=True)
    return path


def plot_deformed(
    assembly,
    centroids: np.ndarray,
    pos: np.ndarray,
    *,
    pos_ref: np.ndarray | None = None,
    mode=None,
    scale: float = 5.0,
    sub_blocks: bool = False,
    title: str = "",
    ax=None,
):
    """A masonry assembly (:mod:`mechcalib.models.masonry`) in the block positions ``pos``, coloured by the
    displacement magnitude of each block's centroid [mm] (from ``pos_ref``, default the assembled state),
    displacements amplified ``scale`` times; the hinges of ``mode`` (a ``FailureMode``) as red dots at their
    pivots, sliding joints as blue lines (Kibriya et al. (2023) Figs. 3, 16). Returns the figure (the caller
    saves it). :func:`plot_arch_run` draws a run of the masonry-arch model with it."""
    import textwrap

    from .models.masonry.failure import block_polygons, joint_end_points

    if ax is None:
        plt = _pyplot()
    from matplotlib.collections import PolyCollection

    nb = len(assembly.blocks)
    ref = np.column_stack([centroids, np.zeros(nb)]) if pos_ref is None else pos_ref
    disp = np.hypot(pos[:, 0] - ref[:, 0], pos[:, 1] - ref[:, 1]) * 1e3
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 4.5))
    else:
        fig = ax.figure
    polys, vals = [], []
    for b, group in enumerate(block_polygons(assembly, centroids, pos, scale, ref, sub_blocks)):
        for p in group:
            polys.append(p * 1e3)
            vals.append(disp[b])
    pc = PolyCollection(polys, array=np.array(vals), cmap="viridis", edgecolors="k", linewidths=0.5)
    ax.add_collection(pc)
    fig.colorbar(pc, ax=ax, label="displacement [mm]", shrink=0.8)
    amp = ref + scale * (pos - ref)
    if mode is not None:
        for jt, st in zip(assembly.joints, mode.joints, strict=True):
            ends = [e * 1e3 for e in joint_end_points(amp, centroids, jt)]
            if st.sliding:
                ax.plot([ends[0][0], ends[1][0]], [ends[0][1], ends[1][1]], color="tab:blue", lw=3, alpha=0.8)
            if st.hinge and st.hinge != "separated":
                p = ends[list(jt.tags).index(st.hinge)]
                ax.plot(*p, "o", color="tab:red", ms=8, mec="k")
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.set_xlabel("x [mm]")
    ax.set_ylabel("y [mm]")
    ax.set_title(
        "\n".join(textwrap.wrap(title or f"deformed shape (displacements x{scale:g}); red: hinges, blue: sliding", 90)),
        fontsize=9,
    )
    return fig


def plot_arch_run(
    model, run, *, state: str = "end", scale: float = 5.0, path: str | Path | None = None, title: str = "", ax=None
):
    """Deformed shape of ``run`` (an ``ArchRun`` of the masonry-arch ``model``) at ``state`` (``"peak"`` or
    ``"end"``), coloured by displacement, with its hinges and sliding joints (Kibriya et al. (2023) Figs. 3,
    16); the arrow points from the report to the model, which draws nothing itself."""
    pos = run.pos_peak if state == "peak" else run.pos_end
    mode = run.mode_peak if state == "peak" else run.mode_end
    fig = plot_deformed(
        model.assembly,
        model.centroids,
        pos,
        pos_ref=run.pos_eq,
        mode=mode,
        scale=scale,
        sub_blocks=model.contacts == "pulatsu",
        title=title,
        ax=ax,
    )
    if path is not None:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    return fig
