"""Built-in forward models. ``get_model(name)`` builds one by registry name."""

from __future__ import annotations

import importlib

from ..errors import ConfigurationError
from ..core.model import Channel, Model, Response, SimulationFailure

_MODELS = {
    "duffing": ("oscillator", "Duffing"),
    "linear": ("analytic", "Linear"),
    "masonry_arch": ("masonry.arch", "MasonryArch"),
    "hydration": ("hydration", "Hydration"),
    "sdof_bilinear_kinematic": ("hysteresis.sdof", "SDOFBilinearKinematic"),
    "sdof_bilinear_equal": ("hysteresis.sdof", "SDOFBilinearEqual"),
    "sdof_boucwen": ("hysteresis.sdof", "SDOFBoucWen"),
    "sdof_degradation": ("hysteresis.sdof", "SDOFDegradation"),
    "sdof_pinching": ("hysteresis.sdof", "SDOFPinching"),
    "mdof_frame": ("hysteresis.mdof", "FrameMDOF"),
    "eepa_triaxial": ("granular.triaxial", "EEPATriaxial"),
}
MODELS = tuple(_MODELS)

__all__ = ["Channel", "MODELS", "Model", "Response", "SimulationFailure", "get_model"]


def get_model(name: str, **options) -> Model:
    """A built-in model by registry name; an unknown name lists the valid ones."""
    try:
        mod, cls = _MODELS[name]
    except KeyError:
        raise ConfigurationError(f"unknown model {name!r}; valid names are {sorted(_MODELS)}") from None
    return getattr(importlib.import_module(f"{__name__}.{mod}"), cls)(**options)
