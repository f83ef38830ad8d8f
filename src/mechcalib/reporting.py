"""Plots of calibration results (matplotlib, imported lazily, no display needed).

Every figure a report writes has a builder that returns it (``fit_figure``, ``convergence_figure``,
``loop_figure``) and a writer that saves it (``plot_fit``, ``plot_convergence``, ``plot_loop``). The rules they
share: every axis label carries a unit (:func:`axis_label`: the unit the model, the parameter or the curve
declares, ``[-]`` when none is), legends sit outside the axes (:func:`legend_below`), tick labels are few
enough not to touch, and a fit has its residuals in a panel under it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .core.model import SimulationFailure

#: units that declare a quantity dimensionless (written ``[-]`` on an axis)
DIMENSIONLESS = ("", "-", "1", "dimensionless")


def _pyplot():
    import matplotlib

    from .display import interactive

    if interactive() != "notebook":  # a notebook keeps its inline backend: a returned figure shows there
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def axis_label(name: str, unit: str | None) -> str:
    """``name [unit]``; ``name [-]`` for a quantity whose unit is empty or declared dimensionless."""
    u = (unit or "").strip()
    return f"{name} [{'-' if u in DIMENSIONLESS else u}]"


def interval_text(lo: float, hi: float, digits: int = 3) -> str:
    """``[lo, hi]`` with at least ``digits`` significant digits and as many more as it takes for the two bounds
    to print differently (``[0.1996, 0.2003]``, never ``[0.2, 0.2]``)."""
    for d in range(digits, 17):
        a, b = f"{lo:.{d}g}", f"{hi:.{d}g}"
        if a != b or lo == hi:
            return f"[{a}, {b}]"
    return f"[{lo!r}, {hi!r}]"


def legend_below(fig, axes: Sequence[Any], **kw: Any) -> None:
    """One legend for the figure, outside every axes (below them, a constrained layout makes room), from the
    labelled artists of ``axes`` (each label once)."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(lab, h)
    if seen:
        kw.setdefault("fontsize", 8)
        wide = max(1, int(fig.get_figwidth() / 2.4))  # about 2.4 inches a legend entry
        fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncols=min(len(seen), wide), **kw)


def _few_ticks(ax, n: int = 5) -> None:
    from matplotlib.ticker import MaxNLocator

    if ax.get_xscale() == "linear":
        ax.xaxis.set_major_locator(MaxNLocator(n))
    if ax.get_yscale() == "linear":
        ax.yaxis.set_major_locator(MaxNLocator(n))


def _drawn_tick_labels(axis) -> list:
    """The tick labels matplotlib draws on ``axis``: visible, with text, at a tick inside the view limits."""
    lo, hi = sorted(axis.get_view_interval())
    tol = 1e-9 * max(abs(lo), abs(hi), 1e-300)
    out = []
    for locs, labels in (
        (axis.get_majorticklocs(), axis.get_majorticklabels()),
        (axis.get_minorticklocs(), axis.get_minorticklabels()),
    ):
        for loc, lab in zip(locs, labels, strict=False):
            if lo - tol <= loc <= hi + tol and lab.get_visible() and lab.get_text().strip():
                out.append(lab)
    return out


def layout_problems(fig) -> list[str]:
    """What a reviewer would send back in a drawn figure, in words (``[]``: none): two tick labels whose boxes
    overlap, an axis with tick labels whose label names no unit (``name [unit]``), a legend over an axes."""
    from itertools import combinations

    fig.canvas.draw()
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    boxes = [(lab.get_text(), lab.get_window_extent()) for ax in axes for a in (ax.xaxis, ax.yaxis)
             for lab in _drawn_tick_labels(a)]  # fmt: skip
    out = [
        f"tick labels {a!r} and {b!r} overlap"
        for (a, ba), (b, bb) in combinations(boxes, 2)
        if ba.width > 0 and bb.width > 0 and ba.overlaps(bb)
    ]
    for ax in axes:
        for axis, label in ((ax.xaxis, ax.get_xlabel()), (ax.yaxis, ax.get_ylabel())):
            if _drawn_tick_labels(axis) and not re.search(r"\[[^\]]+\]\s*$", label):
                out.append(f"axis label {label!r} names no unit")
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    for leg in legends:
        if any(leg.get_window_extent().overlaps(ax.get_window_extent()) for ax in axes):
            out.append("a legend covers an axes")
    return out


def _experiment(problem, experiment: int | str):
    exps = problem.experiments
    if isinstance(experiment, str):
        for e in exps:
            if e.name == experiment:
                return e
        raise KeyError(f"no experiment {experiment!r}; experiments are {[e.name for e in exps]}")
    return exps[experiment]


def channel_labels(problem, exp, ch: str) -> tuple[str, str]:
    """The x and y axis labels of channel ``ch`` of ``exp``: the measured curve's names and units, a unit the
    curve leaves out taken from the model's declaration of the channel."""
    c = exp[ch]
    model_ch = {m.name: m for m in getattr(getattr(problem, "model", None), "channels", ())}.get(ch)
    xu = c.x_unit or (model_ch.x_unit if model_ch is not None else "")
    yu = c.y_unit or (model_ch.y_unit if model_ch is not None else "")
    return axis_label(c.x_name or "x", xu), axis_label(c.y_name or ch, yu)


def on_points(x: np.ndarray, sim: Any) -> np.ndarray:
    """A simulated curve at the measured points: as is when it has as many points, interpolated in ``x`` when
    that increases, else along the normalised point index (a loop)."""
    sx, sy = np.asarray(sim.x, float), np.asarray(sim.y, float)
    if sy.shape[0] == x.shape[0]:
        return sy
    if np.all(np.diff(sx) > 0) and np.all(np.diff(x) > 0):
        return np.interp(x, sx, sy)
    return np.interp(np.linspace(0, 1, x.size), np.linspace(0, 1, sy.size), sy)


def residual_abscissa(x: np.ndarray, x_label: str) -> tuple[np.ndarray, str]:
    """The abscissa of a residual panel: ``x`` when it increases, else the point index (a loop's residual drawn
    over its displacement would fold back on itself)."""
    if x.size < 2 or np.all(np.diff(x) > 0):
        return x, x_label
    return np.arange(x.size, dtype=float), "point [index]"


def fit_figure(
    problem,
    x_free: np.ndarray,
    *,
    experiment: int | str = 0,
    response: Mapping[str, Any] | SimulationFailure | None = None,
    title: str | None = None,
):
    """The figure of :func:`plot_fit`: per channel the measured and simulated curves above, the residual
    (measured minus simulated, at the measured points) below."""
    plt = _pyplot()
    exp = _experiment(problem, experiment)
    sim = response
    if sim is None:
        (sim,) = problem.simulate(np.atleast_2d(x_free), exp)
    names = exp.channel_names
    fig, axes = plt.subplots(
        2,
        len(names),
        figsize=(5 * len(names), 5.2),
        squeeze=False,
        gridspec_kw={"height_ratios": [3, 1]},
        layout="constrained",
    )
    for k, ch in enumerate(names):
        ax, rax = axes[0, k], axes[1, k]
        c = exp[ch]
        x, y = np.asarray(c.x, float), np.asarray(c.y, float)
        xl, yl = channel_labels(problem, exp, ch)
        ax.plot(x, y, ".", ms=2, color="0.5", label="measured")
        rx, rxl = residual_abscissa(x, xl)
        if not isinstance(sim, SimulationFailure) and ch in sim:
            s = sim[ch]
            ax.plot(s.x, s.y, "-", lw=1.2, color="C3", label="calibrated model")
            rax.plot(rx, y - on_points(x, s), ".", ms=2, color="C0", label="residual (measured - model)")
        rax.axhline(0.0, color="k", lw=0.6)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        rax.set_xlabel(rxl)
        rax.set_ylabel(axis_label("residual", yl.rsplit("[", 1)[1].rstrip("]")))
        ax.set_title(ch if len(problem.experiments) == 1 else f"{exp.name}: {ch}", fontsize=10)
        for a in (ax, rax):
            _few_ticks(a)
    legend_below(fig, axes.ravel())
    if isinstance(sim, SimulationFailure):
        fig.text(0.5, 0.99, f"simulation failed: {sim.message}", ha="center", va="top", color="C3", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_fit(
    problem,
    x_free: np.ndarray,
    path: str | Path,
    *,
    experiment: int | str = 0,
    response: Mapping[str, Any] | SimulationFailure | None = None,
    title: str | None = None,
) -> Path:
    """Measured against simulated curves of one experiment (the first by default), a panel per channel with
    the residuals under it (:func:`fit_figure`), written to ``path``.

    Args:
        x_free: free parameter values ``(dim,)``.
        experiment: the experiment's index or name.
        response: the simulated response ``{channel: Curve}`` at ``x_free`` when already known (e.g. kept
            in the run store); otherwise the problem simulates ``x_free`` once.
        title: a figure title.
    """
    fig = fit_figure(problem, x_free, experiment=experiment, response=response, title=title)
    return _write(fig, path)


def _write(fig, path: str | Path, dpi: float = 110) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_png(fig, path, dpi=dpi)
    _pyplot().close(fig)
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
    for i, (exp, stem) in enumerate(zip(problem.experiments, experiment_stems(problem, prefix), strict=True)):
        resp = responses.get(exp.name) if responses is not None else None
        written.append(plot_fit(problem, x_free, out / f"{stem}.png", experiment=i, response=resp, title=title))
    return written


def experiment_stems(problem, prefix: str) -> list[str]:
    """``<prefix>_<experiment name>`` per experiment, file-safe and distinct."""
    used: set[str] = set()
    stems = []
    for i, exp in enumerate(problem.experiments):
        stem = f"{prefix}_{_file_name(exp.name)}"
        if stem in used:  # two experiments whose names differ only in odd characters
            stem = f"{stem}_{i}"
        used.add(stem)
        stems.append(stem)
    return stems


def convergence_figure(
    losses: Sequence[float] | np.ndarray, *, status: Sequence[str] | None = None, title: str | None = None
):
    """The figure of :func:`plot_convergence`."""
    plt = _pyplot()
    f = np.asarray(losses, dtype=float).reshape(-1)
    n = np.arange(1, f.size + 1)
    ok = np.isfinite(f)
    failed = np.array([s != "ok" for s in status], dtype=bool) if status is not None else ~ok
    best = np.minimum.accumulate(np.where(ok, f, np.inf)) if f.size else f
    fig, ax = plt.subplots(figsize=(6.5, 4.6), layout="constrained")
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
    ax.set_xlabel("evaluations [count]")
    ax.set_ylabel("loss [objective's unit]")
    ax.grid(True, which="both", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    if f.size:
        legend_below(fig, [ax])
    return fig


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
    return _write(convergence_figure(losses, status=status, title=title), path)


def loop_channel(problem, exp) -> tuple[str, bool] | None:
    """The force-displacement loop of experiment ``exp``: ``(channel, measured)`` for the first channel the model
    declares (or the experiment measures) with a displacement abscissa and a force ordinate, the measured one
    first; ``None`` for a model without one."""
    declared = list(getattr(getattr(problem, "model", None), "channels", ()))

    def is_loop(x_name: str, y_name: str) -> bool:
        return "displacement" in (x_name or "").lower() and "force" in (y_name or "").lower()

    measured = [ch for ch in exp.channel_names if is_loop(exp[ch].x_name, exp[ch].y_name)]
    if measured:
        return measured[0], True
    model_loops = [c.name for c in declared if is_loop(c.x_name, c.y_name)]
    return (model_loops[0], False) if model_loops else None


def loop_figure(
    problem,
    x_free: np.ndarray,
    *,
    experiment: int | str = 0,
    samples: np.ndarray | None = None,
    n_draws: int = 40,
    seed: int = 0,
    title: str | None = None,
):
    """The force-displacement loop of an experiment (:func:`loop_channel`): the measured loop when the
    experiment measures it, the model's at ``x_free``, and with ``samples`` ``(n, dim)`` (an uncertainty
    analysis' draws) the loops of ``n_draws`` of them; ``None`` when the model declares no loop."""
    exp = _experiment(problem, experiment)
    found = loop_channel(problem, exp)
    if found is None:
        return None
    ch, measured = found
    plt = _pyplot()
    X = np.atleast_2d(np.asarray(x_free, float))
    if samples is not None and len(samples):
        rng = np.random.default_rng(seed)
        X = np.vstack([X, samples[rng.choice(len(samples), size=min(n_draws, len(samples)), replace=False)]])
    sims = problem.simulate(X, exp)
    fig, ax = plt.subplots(figsize=(6.2, 5.0), layout="constrained")
    for k, s in enumerate(sims[1:]):
        if not isinstance(s, SimulationFailure) and ch in s:
            lab = "model at posterior draws" if k == 0 else None
            ax.plot(s[ch].x, s[ch].y, "-", lw=0.5, color="tab:orange", alpha=0.35, label=lab)
    if measured:
        c = exp[ch]
        ax.plot(c.x, c.y, ".", ms=2, color="0.4", label="measured")
    best = sims[0]
    if not isinstance(best, SimulationFailure) and ch in best:
        lab = "calibrated model" if measured else "calibrated model (this loop is not measured)"
        ax.plot(best[ch].x, best[ch].y, "-", lw=1.1, color="C3", label=lab)
    decl = {c.name: c for c in getattr(getattr(problem, "model", None), "channels", ())}.get(ch)
    if measured:
        xl, yl = channel_labels(problem, exp, ch)
    else:
        assert decl is not None
        xl, yl = axis_label(decl.x_name, decl.x_unit), axis_label(decl.y_name, decl.y_unit)
    ax.set_xlabel(xl)
    ax.set_ylabel(yl)
    ax.axhline(0.0, color="k", lw=0.4)
    ax.axvline(0.0, color="k", lw=0.4)
    _few_ticks(ax)
    ax.set_title(title or f"{exp.name}: {ch} loop", fontsize=10)
    legend_below(fig, [ax])
    return fig


def plot_loop(
    problem,
    x_free: np.ndarray,
    path: str | Path,
    *,
    experiment: int | str = 0,
    samples: np.ndarray | None = None,
    title: str | None = None,
) -> Path | None:
    """:func:`loop_figure` written to ``path``; ``None`` (nothing written) for a model without a loop."""
    fig = loop_figure(problem, x_free, experiment=experiment, samples=samples, title=title)
    return None if fig is None else _write(fig, path)


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
