"""Ask/tell optimisers, one algorithm per module.

==================  ==========================  ==============================================
registry name       class                       source
==================  ==========================  ==============================================
``ga``              :class:`GA`                 seed 000 section 3.1 (``geneticalgorithm`` defaults)
``pso``             :class:`PSO`                seed 000 eqs. 1-10
``tbpso``           :class:`TBPSO`              seed 000 eqs. 11-15
``abc``             :class:`ABC`                seed 002 eqs. 28-33 (Karaboga)
``iabc``            :class:`IABC`               seed 002 eqs. 34-35
``tsa``             :class:`TSA`                tree-seed algorithm (Kiran 2015)
``de``              :class:`DE`                 differential evolution rand/1/bin (Storn & Price)
``grade``           :class:`GRADE`              seed 003 (Ibrahimbegovic et al. 2004; Kucerova 2007)
``random``          :class:`RandomSearch`       baseline
``lhs``             :class:`LatinHypercube`     baseline
==================  ==========================  ==============================================

Classes are imported lazily so that one algorithm's module is loaded only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import ConfigurationError
from ._base import Optimizer

_CLASSES = {
    "ga": ("ga", "GA"),
    "pso": ("pso", "PSO"),
    "tbpso": ("tbpso", "TBPSO"),
    "abc": ("abc", "ABC"),
    "iabc": ("abc", "IABC"),
    "tsa": ("tsa", "TSA"),
    "de": ("de", "DE"),
    "grade": ("grade", "GRADE"),
    "random": ("random_search", "RandomSearch"),
    "lhs": ("random_search", "LatinHypercube"),
}
_BY_CLASS = {cls: mod for mod, cls in _CLASSES.values()}

__all__ = ["Optimizer", "OPTIMIZERS", "get_optimizer", "make_optimizer", *_BY_CLASS]
OPTIMIZERS = tuple(_CLASSES)


def __getattr__(name: str) -> Any:
    if name in _BY_CLASS:
        return getattr(importlib.import_module(f"{__name__}.{_BY_CLASS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_optimizer(name: str) -> type[Optimizer]:
    """The optimiser class registered under ``name``; an unknown name lists the valid ones."""
    try:
        mod, cls = _CLASSES[name.lower()]
    except KeyError:
        raise ConfigurationError(f"unknown optimizer {name!r}; valid names are {sorted(_CLASSES)}") from None
    return getattr(importlib.import_module(f"{__name__}.{mod}"), cls)


def make_optimizer(name: str, preset: str | None = None, **settings: Any) -> Optimizer:
    """Build an optimiser by name, from a named preset (a classmethod such as ``paper_000``) or settings."""
    cls = get_optimizer(name)
    if preset is None:
        return cls(**settings)
    presets = presets_of(cls)
    if preset not in presets:
        raise ConfigurationError(f"optimizer {name!r} has no preset {preset!r}; presets are {sorted(presets)}")
    return getattr(cls, preset)(**settings)


def presets_of(cls: type[Optimizer]) -> tuple[str, ...]:
    """Names of a class's presets: its classmethods listed in ``cls.presets``."""
    return tuple(getattr(cls, "presets", ()))
