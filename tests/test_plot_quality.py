"""The PNG figures a reviewer reads (fit with residuals, convergence, force-displacement loop, corner plot,
predictive band with its residual-band view): drawn, then measured. No two tick labels may touch, every axis
label names a unit (``[-]`` where the quantity is declared dimensionless), legends sit outside every axes, and
the panels draw the numbers they claim (residuals = measured minus model, the band minus the fit)."""

from __future__ import annotations

import re
import sys
from itertools import combinations

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.core.model import Channel, Model
from mechcalib.models import get_model
from mechcalib.optimizers import make_optimizer
from mechcalib.reporting import (
    _pyplot,
    axis_label,
    convergence_figure,
    fit_figure,
    interval_text,
    layout_problems,
    loop_channel,
    loop_figure,
)
from mechcalib.uncertainty.plots import band_figure, corner_figure

UNIT = re.compile(r"\[[^\]]+\]\s*$")


class SpringLoop(Model):
    """A cheap hysteretic toy: an imposed displacement u(t) = a sin t, a force k u + f sgn(u') (a friction
    loop); channels force(t) and the loop force(u), with units."""

    name = "spring_loop"

    def __init__(self) -> None:
        self.space = mc.ParameterSpace(
            [mc.Parameter("k", 0.5, 2.0, unit="kN/mm"), mc.Parameter("f", 0.0, 1.0, unit="kN"),
             mc.Parameter("r", 0.5, 2.0, unit="-")]
        )  # fmt: skip
        self.channels = (
            Channel("force", "time", "force", "s", "kN"),
            Channel("loop", "displacement", "force", "mm", "kN"),
        )
        self.presets = {"default": {"k": 1.0, "f": 0.3, "r": 1.0}}

    def simulate(self, theta, conditions=None):
        t = np.linspace(0.0, 4 * np.pi, 400)
        u = 2.0 * np.sin(t)
        out = []
        for k, f, r in np.atleast_2d(theta):
            force = k * u + f * np.sign(np.cos(t)) * r
            out.append(
                {
                    "force": mc.Curve(t, force, x_name="time", y_name="force", x_unit="s", y_unit="kN"),
                    "loop": mc.Curve(u, force, t=t, x_name="displacement", y_name="force", x_unit="mm", y_unit="kN"),
                }
            )
        return out


@pytest.fixture(scope="module")
def problem():
    model = SpringLoop()
    exp = mc.experiment_from_model(model, noise=0.05, seed=1, name="cyclic test")
    return mc.Problem(model, exp, mc.L2())


def _shown(axis):
    """The tick labels matplotlib draws: visible, with text, at a tick inside the view limits."""
    lo, hi = sorted(axis.get_view_interval())
    tol = 1e-9 * max(abs(lo), abs(hi), 1e-300)
    out = []
    for locs, labels in (
        (axis.get_majorticklocs(), axis.get_majorticklabels()),
        (axis.get_minorticklocs(), axis.get_minorticklabels()),
    ):
        for loc, lab in zip(locs, labels):
            if lo - tol <= loc <= hi + tol and lab.get_visible() and lab.get_text().strip():
                out.append(lab)
    return out


def _tick_labels(fig):
    return [
        (lab.get_text(), lab.get_window_extent())
        for ax in fig.axes
        if ax.get_visible() and ax.axison
        for axis in (ax.xaxis, ax.yaxis)
        for lab in _shown(axis)
    ]


def check_figure(fig) -> None:
    """The house rules of a figure, measured on the drawn canvas."""
    fig.canvas.draw()
    boxes = _tick_labels(fig)
    assert boxes, "a figure without tick labels measures nothing"
    touching = [
        (a, b) for (a, ba), (b, bb) in combinations(boxes, 2) if ba.overlaps(bb) and ba.width > 0 and bb.width > 0
    ]
    assert not touching, f"tick labels overlap: {touching[:5]}"
    for ax in fig.axes:
        for axis, label in ((ax.xaxis, ax.get_xlabel()), (ax.yaxis, ax.get_ylabel())):
            if ax.axison and _shown(axis):
                assert UNIT.search(label), f"axis label {label!r} names no unit"
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    for leg in legends:
        lb = leg.get_window_extent()
        for ax in fig.axes:
            if ax.get_visible() and ax.axison:
                assert not lb.overlaps(ax.get_window_extent()), "a legend covers an axes' data area"


def _line(ax, label):
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return line


def test_axis_label_names_the_unit_or_dimensionless():
    assert axis_label("k", "kN/mm") == "k [kN/mm]"
    assert axis_label("r", "-") == axis_label("r", "") == axis_label("r", "1") == "r [-]"


def test_interval_text_never_rounds_an_interval_to_one_value():
    assert interval_text(0.19955, 0.20029) == "[0.1996, 0.2003]"
    assert interval_text(1.234, 5.678) == "[1.23, 5.68]"
    assert interval_text(2.0, 2.0) == "[2, 2]"


def test_fit_figure_draws_the_residual_of_each_channel_under_it(problem):
    plt = _pyplot()
    x = np.array([1.1, 0.25, 1.0])
    fig = fit_figure(problem, x, title="fit")
    check_figure(fig)
    exp = problem.experiments[0]
    (sim,) = problem.simulate(x[None, :], exp)
    axes = np.array(fig.axes).reshape(2, 2)
    for k, ch in enumerate(exp.channel_names):
        res = _line(axes[1, k], "residual (measured - model)")
        np.testing.assert_allclose(res.get_ydata(), exp[ch].y - sim[ch].y)
    # the loop's residual is drawn over the point index, not over its folding displacement
    assert axes[1, 1].get_xlabel() == "point [index]" and axes[1, 0].get_xlabel() == "time [s]"
    assert axes[0, 1].get_xlabel() == "displacement [mm]" and axes[1, 1].get_ylabel() == "residual [kN]"
    plt.close(fig)


def test_convergence_figure(problem):
    plt = _pyplot()
    losses = np.r_[np.geomspace(10.0, 0.01, 200), np.inf]
    fig = convergence_figure(losses, status=["ok"] * 200 + ["failed"], title="run")
    check_figure(fig)
    plt.close(fig)


def test_loop_figure_shows_the_measured_loop_and_the_draws(problem):
    plt = _pyplot()
    exp = problem.experiments[0]
    assert loop_channel(problem, exp) == ("loop", True)
    samples = np.random.default_rng(0).normal([1.0, 0.3, 1.0], 0.01, (200, 3))
    fig = loop_figure(problem, np.array([1.0, 0.3, 1.0]), samples=samples, n_draws=10)
    check_figure(fig)
    ax = fig.axes[0]
    np.testing.assert_array_equal(_line(ax, "measured").get_ydata(), exp["loop"].y)
    assert sum(ln.get_color() == "tab:orange" for ln in ax.get_lines()) == 10
    plt.close(fig)
    # a model without a displacement-force channel has no loop view
    linear = get_model("linear")
    lin = mc.Problem(linear, mc.experiment_from_model(linear), mc.L2())
    assert loop_channel(lin, lin.experiments[0]) is None
    assert loop_figure(lin, np.full(lin.space.dim, 0.5)) is None


def test_loop_of_a_model_whose_loop_is_not_measured(problem):
    plt = _pyplot()
    model = problem.model
    exp = mc.Experiment({"force": problem.experiments[0]["force"]}, name="force only")
    p = mc.Problem(model, exp, mc.L2())
    assert loop_channel(p, exp) == ("loop", False)
    fig = loop_figure(p, np.array([1.0, 0.3, 1.0]))
    check_figure(fig)
    assert fig.axes[0].get_xlabel() == "displacement [mm]"
    assert "calibrated model (this loop is not measured)" in [ln.get_label() for ln in fig.axes[0].get_lines()]
    plt.close(fig)


def _narrow_samples():
    rng = np.random.default_rng(3)
    # c of the issue: a 95 % interval 0.19955-0.20029, which three significant digits print as [0.2, 0.2]
    return np.column_stack([rng.normal(1.0, 0.05, 4000), rng.normal(0.19992, 0.00019, 4000),
                            rng.lognormal(0.0, 0.8, 4000)])  # fmt: skip


@pytest.mark.parametrize("library", ["corner", "matplotlib"])
def test_corner_figure_titles_ticks_and_units(library, monkeypatch):
    if library == "corner":
        pytest.importorskip("corner", reason="the plots extra (corner) is not installed")
    else:
        monkeypatch.setitem(sys.modules, "corner", None)  # import corner raises ImportError: the fallback
    plt = _pyplot()
    s = _narrow_samples()
    fig = corner_figure(
        s, ["k", "c", "r"], units=["kN/mm", "kN", "-"], best=s.mean(0), truth=[1.0, 0.2, 1.0], log=[False, False, True]
    )
    check_figure(fig)
    axes = np.array(fig.axes).reshape(3, 3)
    lo, hi = re.search(r"\[(\S+), (\S+)\]", axes[1, 1].get_title()).groups()
    assert lo != hi and float(lo) == pytest.approx(np.percentile(s[:, 1], 2.5), rel=1e-3)
    assert [axes[2, j].get_xlabel() for j in range(3)] == ["k [kN/mm]", "c [kN]", "r [-]"]
    assert axes[2, 2].get_xscale() == "log"
    plt.close(fig)


def test_band_figure_draws_the_band_minus_the_fit(problem):
    plt = _pyplot()
    best = np.array([1.0, 0.3, 1.0])
    samples = np.random.default_rng(0).normal(best, [0.02, 0.01, 0.01], (300, 3))
    fig = band_figure(problem, samples, best, noise={"force": 0.05}, n_draws=50)
    check_figure(fig)
    exp = problem.experiments[0]
    axes = np.array(fig.axes).reshape(2, 2)
    (fit,) = problem.simulate(best[None, :], exp)
    rax = axes[1, 0]
    (band,) = [c for c in rax.collections if c.get_label() == "95 % band (parameters)"]
    verts = band.get_paths()[0].vertices
    # the residual-band view is centred on the fit: the band minus the fit straddles zero, and is narrow
    assert np.all(np.abs(verts[:, 1]) < 0.2)
    assert np.min(verts[:, 1]) < 0 < np.max(verts[:, 1])
    reach = np.max(np.abs(verts[:, 1]))
    assert rax.get_ylim() == pytest.approx((-2.5 * reach, 2.5 * reach))  # zoomed on the band
    pts = [ln for ln in rax.get_lines() if ln.get_marker() == "."][0]
    np.testing.assert_allclose(pts.get_ydata(), exp["force"].y - fit["force"].y)
    assert rax.get_ylabel() == "minus the fit [kN]"
    plt.close(fig)


def test_the_check_catches_touching_ticks_missing_units_and_a_legend_on_the_data():
    from matplotlib.ticker import MultipleLocator

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0.992, 0.996], [0, 1], label="line")
    ax.xaxis.set_major_locator(MultipleLocator(0.0002))  # `0.9920.9940.996`: the run-together ticks
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [N]")
    with pytest.raises(AssertionError, match="tick labels overlap"):
        check_figure(fig)
    ax.xaxis.set_major_locator(MultipleLocator(0.002))
    ax.set_ylabel("y")
    with pytest.raises(AssertionError, match="names no unit"):
        check_figure(fig)
    ax.set_ylabel("y [N]")
    ax.legend(loc="center")
    with pytest.raises(AssertionError, match="legend covers"):
        check_figure(fig)
    # the library's own measure (benchmarks/uncertainty.py --sdof-figures applies it to docs/img) agrees
    assert layout_problems(fig) == ["a legend covers an axes"]
    ax.get_legend().remove()
    assert layout_problems(fig) == []
    ax.xaxis.set_major_locator(MultipleLocator(0.0002))
    ax.set_ylabel("y")
    found = layout_problems(fig)
    assert "axis label 'y' names no unit" in found and any("overlap" in f for f in found)
    plt.close(fig)


def test_the_report_of_a_run_writes_the_fit_and_the_loop(problem, tmp_path):
    from mechcalib.runs.report import write_report
    from mechcalib.storage import RunStore

    store = tmp_path / "toy.sqlite"
    with RunStore(store) as st:
        mc.calibrate(problem, make_optimizer("de", seed=1, pop_size=8), max_evals=16, store=st, run_name="toy")
    written = write_report(store, problem=problem)
    assert sorted(p.name for p in written) == ["convergence.png", "fit_cyclic_test.png", "loop_cyclic_test.png"]
    assert all(p.stat().st_size > 4_000 for p in written)
