"""Dry-joint masonry: a 2D rigid-block DEM (:mod:`.dem`), block assemblies and the segmental arch generator
(:mod:`.geometry`), the masonry-arch model of seed 000 (:mod:`.arch`), rigid-block limit analysis
(:mod:`.limit`), failure-mode reporting and plots (:mod:`.failure`) and sensitivity studies (:mod:`.studies`).
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

__all__ = ["ArchGeometry", "Assembly", "Block", "Joint", "LoadPoint", "birhane_arch", "contact_layout", "find_joints"]
