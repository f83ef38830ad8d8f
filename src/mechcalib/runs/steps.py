"""The time-integration step check where a run goes: ``mechcalib check`` judges the steps at the first points
the run will simulate (its optimiser's first design points, inside the configured box), not at a model preset
that may lie outside it, and a run checks them again at its best point when it ends, warning then. A model
reports through :meth:`~mechcalib.core.model.Model.check_steps` (``None``: nothing to report)."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

__all__ = ["StepReport", "design_points", "step_reports"]

#: how many of the run's first design points ``check`` judges
N_DESIGN_POINTS = 3


@dataclass(frozen=True)
class StepReport:
    """The step check of one experiment: the model's ``message`` at the point it judged worst, ``ok`` (whether
    it converged there), ``at`` (that point's parameters by name)."""

    experiment: str
    message: str
    ok: bool
    at: dict[str, float]


def design_points(optimizer: Any, termination: Any, space: Any, n: int = N_DESIGN_POINTS) -> np.ndarray:
    """The first ``n`` points ``(n, len(space))`` (full parameter vectors, fixed values included) that a run of
    ``optimizer`` under ``termination`` asks for: a fresh copy with the same seed, set up and asked once."""
    opt = optimizer.copy()
    opt.set_budget(termination.max_evals)
    opt.setup(space.dim)
    quiet = logging.getLogger("mechcalib.optimizers")
    level = quiet.level
    quiet.setLevel(logging.WARNING)  # the method's own log lines belong to the run, not to this look ahead
    try:
        U = np.asarray(opt.ask(), float)[:n]
    finally:
        quiet.setLevel(level)
    return space.full_from_unit(U)


def step_reports(model: Any, experiments: Any, thetas: np.ndarray, names: Any) -> list[StepReport]:
    """Per experiment, the model's step check at each full parameter vector of ``thetas`` ``(n, len(names))``:
    the first that did not converge, else the last; experiments the model says nothing of are left out."""
    out = []
    for exp in experiments:
        found: StepReport | None = None
        for theta in np.atleast_2d(thetas):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # reported by the caller, once
                msg = model.check_steps(theta[None, :], exp.conditions)
            if not msg:
                continue
            found = StepReport(exp.name, msg, "converged" in msg, dict(zip(names, map(float, theta), strict=True)))
            if not found.ok:
                break
        if found is not None:
            out.append(found)
    return out
