"""The affinity hydration model (``model``) and the loaders of the calorimetry formats it is calibrated
against (``calorimetry``)."""

from __future__ import annotations

from .model import (
    EA_DEFAULT,
    R_GAS,
    T_REF,
    Hydration,
    affinity_rate,
    arrhenius_factor,
    integrate_alpha,
    log_time_grid,
)

__all__ = [
    "EA_DEFAULT",
    "R_GAS",
    "T_REF",
    "Hydration",
    "affinity_rate",
    "arrhenius_factor",
    "integrate_alpha",
    "log_time_grid",
]
