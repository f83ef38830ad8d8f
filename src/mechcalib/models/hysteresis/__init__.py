"""Hysteretic forward models of Ding et al. (2021): the five laws (:mod:`.laws`), the batched integrator
(:mod:`.integrate`), the SDOF systems (:mod:`.sdof`) and the 3-span, 4-storey frame (:mod:`.mdof`).
See docs/hysteresis.md."""

from __future__ import annotations

from .laws import LAWS, LawSpec, hysteresis_loop
from .mdof import FrameMDOF, build_frame
from .sdof import (
    HystereticSDOF,
    SDOFBilinearEqual,
    SDOFBilinearKinematic,
    SDOFBoucWen,
    SDOFDegradation,
    SDOFPinching,
)

__all__ = [
    "LAWS",
    "FrameMDOF",
    "HystereticSDOF",
    "LawSpec",
    "SDOFBilinearEqual",
    "SDOFBilinearKinematic",
    "SDOFBoucWen",
    "SDOFDegradation",
    "SDOFPinching",
    "build_frame",
    "hysteresis_loop",
]
