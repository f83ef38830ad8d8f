"""Misfits between simulated and measured curves.

``curves``: the overlap-interpolated RSS, F1/F2, L2 and the objective registry; ``smoothing``: the neural
smoother and the objective on smoothed curves (imported lazily through the registry).
"""

from __future__ import annotations

from .curves import (
    F1,
    F2,
    L2,
    OBJECTIVES,
    Objective,
    ObjectiveRegistry,
    OverlapRSS,
    make_objective,
    overlap_bounds,
    overlap_rss,
    progress_rss,
    sim_at_data,
    sum_abs,
    sum_squares,
)

__all__ = [
    "F1",
    "F2",
    "L2",
    "OBJECTIVES",
    "Objective",
    "ObjectiveRegistry",
    "OverlapRSS",
    "make_objective",
    "overlap_bounds",
    "overlap_rss",
    "progress_rss",
    "sim_at_data",
    "sum_abs",
    "sum_squares",
]
