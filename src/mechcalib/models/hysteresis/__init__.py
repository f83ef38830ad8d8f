"""Hysteretic forward models of Ding et al. (2021): the five laws (:mod:`.laws`), the batched integrator
(:mod:`.integrate`), the SDOF systems (:mod:`.sdof`), the 3-span, 4-storey frame (:mod:`.mdof`) and imposed-displacement tests
(:mod:`.protocol`; the Bouc-Wen parameterisations in :mod:`.conventions`).
See docs/hysteresis.md."""

from __future__ import annotations

from .laws import LAWS, LawSpec, hysteresis_loop
from .mdof import FrameMDOF, build_frame
from .protocol import DisplacementProtocol, cyclic_protocol
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
    "DisplacementProtocol",
    "FrameMDOF",
    "HystereticSDOF",
    "LawSpec",
    "SDOFBilinearEqual",
    "SDOFBilinearKinematic",
    "SDOFBoucWen",
    "SDOFDegradation",
    "SDOFPinching",
    "build_frame",
    "cyclic_protocol",
    "hysteresis_loop",
]
