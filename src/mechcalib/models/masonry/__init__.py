"""Dry-joint masonry: a 2D rigid-block DEM (:mod:`.dem`), block assemblies and the segmental arch generator
(:mod:`.geometry`), the masonry-arch model of Kibriya et al. (2023) (:mod:`.arch`), rigid-block limit analysis
(:mod:`.limit`), failure-mode reporting (:mod:`.failure`; the deformed-shape plot is
:func:`mechcalib.reporting.plot_arch_run`) and the shipped synthetic reference experiment (:mod:`.reference`).
The sensitivity studies are ``benchmarks/arch_studies.py``.
See docs/masonry.md."""

from __future__ import annotations

from .geometry import (
    ArchGeometry,
    Assembly,
    Block,
    Joint,
    LoadPoint,
    birhane_arch,
    contact_layout,
    find_joints,
)
from .reference import reference_experiment

__all__ = [
    "ArchGeometry",
    "Assembly",
    "Block",
    "Joint",
    "LoadPoint",
    "birhane_arch",
    "contact_layout",
    "find_joints",
    "reference_experiment",
]
