"""Figures in the manner of Ding et al.'s (2021) Figs. 7-16 and 19, drawn by ``hysteresis_iabc.py --figures``.

Figs. 7-16 show, for each SDOF law, the hysteresis loop and the acceleration response of the identified
parameters against the true ones; Fig. 19 the frame's horizontal acceleration at node 5 with two noise levels.
Here every panel is computed from the models and the study's stored runs (the run store or its summary,
``hysteresis.summary.json.gz``):

* loops: ``laws.hysteresis_loop(law, a, path)`` driven along the true system's displacement history
  ``u(t)`` (so identified and true laws see one path and differ only by their parameters);
* responses: ``model.simulate`` of the true and of the identified parameters; the measured (noisy) record,
  eq. 36 with the run's seed, is drawn in grey;
* "identified" is the run of I-ABC whose largest parameter error is the median over its seeds (the
  representative run, not the best one); its seed and largest error are in the legend.

One PNG per SDOF law (``hysteresis.fig7_16.<law>.png``: loops on top, accelerations below, one column per
noise level) and one for the frame (``hysteresis.fig19.png``: node 5 at 5 % and 10 % noise over the first
second, and the two components' loops for Table 7's M4-M7 algorithms).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mechcalib.core.problem import experiment_from_model
from mechcalib.models import get_model
from mechcalib.models.hysteresis.laws import hysteresis_loop
from mechcalib.reporting import save_png

WINDOW = (10.0, 20.0)  # s: the response panels show the second half of the record (steady cycles)


def representative(runs: dict[str, Any], case: str, alg: str, truth: np.ndarray, select) -> Any | None:
    """The run of ``alg`` on ``case`` whose largest relative parameter error is the median over its seeds."""
    sel = select(runs, case, alg)
    if not sel:
        return None
    errs = [float(np.max(np.abs(r.best - truth) / np.abs(truth))) for r in sel]
    order = np.argsort(errs, kind="stable")
    return sel[int(order[(len(sel) - 1) // 2])]


def _err(r, truth) -> float:
    return 100 * float(np.max(np.abs(r.best - truth) / np.abs(truth)))


def sdof_figure(law: str, title: str, runs, truth, noises, case_id, select, out: Path) -> Path | None:
    import matplotlib.pyplot as plt

    model = get_model(f"sdof_{law}")
    theta_true = model.space.to_full(np.asarray(truth, float)[None, :])
    resp_true = model.simulate(theta_true)[0]
    u = resp_true["displacement"]
    acc = resp_true["acceleration"]
    r_true, _ = hysteresis_loop(law, truth, u.y)
    fig, axs = plt.subplots(2, len(noises), figsize=(4.2 * len(noises), 6.4), squeeze=False)
    drawn = False
    for j, n in enumerate(noises):
        run = representative(runs, case_id(law, n), "iabc", truth, select)
        ax_l, ax_a = axs[0, j], axs[1, j]
        ax_l.plot(u.y, r_true, color="k", lw=1.6, label="true")
        win = (acc.x >= WINDOW[0]) & (acc.x <= WINDOW[1])
        if n:
            meas = experiment_from_model(model, noise=n / 100.0, seed=run.seed if run is not None else 1)
            ax_a.plot(acc.x[win], meas["acceleration"].y[win], color="0.75", lw=0.5, label=f"measured, {n} % noise")
        ax_a.plot(acc.x[win], acc.y[win], color="k", lw=1.4, label="true")
        if run is not None:
            drawn = True
            r_id, _ = hysteresis_loop(law, run.best, u.y)
            lab = f"I-ABC s{run.seed} (largest error {_err(run, truth):.1f} %)"
            ax_l.plot(u.y, r_id, color="C3", lw=1.0, ls="--", label=lab)
            resp_id = model.simulate(model.space.to_full(run.best[None, :]))[0]["acceleration"]
            ax_a.plot(resp_id.x[win], resp_id.y[win], color="C3", lw=1.0, ls="--", label="identified")
        ax_l.set_title(f"{title}, {n} % noise: loop along the true u(t)", fontsize=8)
        ax_l.set_xlabel("displacement u [m]")
        ax_l.set_ylabel("restoring force r [N]")
        ax_a.set_title(f"acceleration, {WINDOW[0]:g}-{WINDOW[1]:g} s", fontsize=8)
        ax_a.set_xlabel("t [s]")
        ax_a.set_ylabel("u'' [m/s²]")
        for ax in (ax_l, ax_a):
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=6, loc="best")
    return _finish(fig, drawn, out)


def _finish(fig, drawn: bool, out: Path) -> Path | None:
    """Save ``fig`` to ``out`` (a palette PNG) when anything was drawn on it; close it either way."""
    import matplotlib.pyplot as plt

    if not drawn:
        plt.close(fig)
        return None
    fig.tight_layout()
    save_png(fig, out, dpi=72, colors=64)
    plt.close(fig)
    return out


def frame_figure(runs, truth, case_id, select, rows: dict[str, str], out: Path) -> Path | None:
    """Fig. 19 (node 5 with two noise levels) and the components' loops of the M4-M7 runs."""
    import matplotlib.pyplot as plt

    model = get_model("mdof_frame")
    theta_true = model.space.to_full(np.asarray(truth, float)[None, :])
    true = model.simulate(theta_true)[0]
    a5 = true["acceleration_node5"]
    fig, axs = plt.subplots(2, 2, figsize=(10.5, 6.6))
    win = a5.x <= 1.0  # the first second: the noise is visible at this scale
    for ax, n in zip(axs[0], (5, 10), strict=True):
        meas = experiment_from_model(model, noise=n / 100.0, seed=1)
        ax.plot(
            a5.x[win], meas["acceleration_node5"].y[win], color="C0", lw=0.7, label=f"measured, {n} % noise (seed 1)"
        )
        ax.plot(a5.x[win], a5.y[win], color="k", lw=0.9, label="noise-free")
        ax.set_title(f"Fig. 19 analogue: node 5, horizontal acceleration, {n} % noise, 0-1 s", fontsize=8)
        ax.set_xlabel("t [s]")
        ax.set_ylabel("acceleration [m/s²]")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    drawn = False
    for c, ax in zip((1, 2), axs[1], strict=True):
        d, r = true[f"hysteretic_displacement_{c}"], true[f"restoring_force_{c}"]
        ax.plot(d.y, r.y, color="k", lw=1.6, label="true")
        for k, (alg, label) in enumerate(rows.items()):
            run = representative(runs, case_id("frame", "M4"), alg, truth, select)
            if run is None:
                continue
            drawn = True
            resp = model.simulate(model.space.to_full(run.best[None, :]))[0]
            ax.plot(
                resp[f"hysteretic_displacement_{c}"].y,
                resp[f"restoring_force_{c}"].y,
                color=f"C{k}",
                lw=0.9,
                ls="--",
                label=f"{label} s{run.seed} ({_err(run, truth):.1f} %)",
            )
        ax.set_title(f"component {c}: loop, 10 % noise (M4-M7), median run of each algorithm", fontsize=8)
        ax.set_xlabel("hysteretic displacement [m]")
        ax.set_ylabel("restoring force [N]")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    return _finish(fig, drawn, out)
