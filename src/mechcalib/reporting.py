"""Plots of calibration results (matplotlib, imported lazily, no display needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .models._base import SimulationFailure


def plot_fit(problem, x_free: np.ndarray, path: str | Path) -> Path:
    """Measured against simulated curves, one panel per channel of the first experiment."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    exp = problem.experiments[0]
    (sim,) = problem.simulate(np.atleast_2d(x_free), exp)
    names = exp.channel_names
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
    for ax, ch in zip(axes[0], names, strict=True):
        c = exp[ch]
        ax.plot(c.x, c.y, ".", ms=2, color="0.5", label="measured")
        if not isinstance(sim, SimulationFailure):
            s = sim[ch]
            ax.plot(s.x, s.y, "-", lw=1.2, color="C3", label="calibrated model")
        ax.set_xlabel(f"{c.x_name} [{c.x_unit}]" if c.x_unit else c.x_name)
        ax.set_ylabel(f"{c.y_name} [{c.y_unit}]" if c.y_unit else c.y_name)
        ax.set_title(ch)
        ax.legend()
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
