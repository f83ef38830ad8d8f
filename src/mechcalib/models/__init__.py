"""Built-in forward models. ``get_model(name)`` builds one by registry name.

:data:`MODELS` is the model :class:`~mechcalib.registry.Registry`: the built-in models below, plus those
that installed distributions declare in the entry-point group ``mechcalib.models``. ``get_model`` and
configuration files also take a ``"package.module:Class"`` target naming any :class:`Model` subclass.
"""

from __future__ import annotations

from typing import Any

from ..core.model import Channel, Model, Response, SimulationFailure
from ..registry import Registry

MODELS: Registry[type[Model]] = Registry(
    "model",
    base=Model,
    group="mechcalib.models",
    entries={
        "duffing": "mechcalib.models.oscillator:Duffing",
        "linear": "mechcalib.models.analytic:Linear",
        "masonry_arch": "mechcalib.models.masonry.arch:MasonryArch",
        "hydration": "mechcalib.models.hydration:Hydration",
        "sdof_bilinear_kinematic": "mechcalib.models.hysteresis.sdof:SDOFBilinearKinematic",
        "sdof_bilinear_equal": "mechcalib.models.hysteresis.sdof:SDOFBilinearEqual",
        "sdof_boucwen": "mechcalib.models.hysteresis.sdof:SDOFBoucWen",
        "sdof_degradation": "mechcalib.models.hysteresis.sdof:SDOFDegradation",
        "sdof_pinching": "mechcalib.models.hysteresis.sdof:SDOFPinching",
        "mdof_frame": "mechcalib.models.hysteresis.mdof:FrameMDOF",
        "hysteresis_protocol": "mechcalib.models.hysteresis.protocol:DisplacementProtocol",
        "eepa_triaxial": "mechcalib.models.granular.triaxial:EEPATriaxial",
    },
)

__all__ = ["Channel", "MODELS", "Model", "Response", "SimulationFailure", "get_model"]


def get_model(name: str, **options: Any) -> Model:
    """A model by registry name or ``"package.module:Class"`` target, built with ``options``; an unknown
    name lists the valid ones."""
    return MODELS.resolve(name)(**options)
