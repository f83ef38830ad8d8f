"""Named settings taken from a source: :class:`Preset`, and the old ``paper_00x`` names kept as aliases.

A preset is data: its name, where its values come from (authors, year, table or equation) and the settings it
gives. Optimisers list theirs in ``setting_presets`` (name -> :class:`Preset`) and expose each as a
classmethod of that name; the settings classes of the learning methods (``CVSettings``, ``NetConfig``,
``TrainConfig``...) do the same with their own records. A model's ``presets`` are something else: parameter
values (``{preset: {parameter: value}}``).

The first names were ``paper_000`` ... ``paper_003``, the order in which the project took up the papers; they
do not say which paper. They still work, each through :func:`deprecated_preset`, and warn once per name per
process.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

#: the project's old preset names and the source each stands for
OLD_NAMES: Mapping[str, str] = MappingProxyType(
    {"paper_000": "kibriya2023", "paper_001": "hu2024", "paper_002": "ding2021", "paper_003": "mares2016"}
)

_WARNED: set[str] = set()


@dataclass(frozen=True, kw_only=True)
class Preset:
    """Settings named after their source.

    Args:
        name: the preset's name, after its source where it has one (``"kibriya2023"``).
        source: where the values come from: authors, year and the table, equation or section
            (``"Kibriya et al. (2023), section 4"``); a preset of the project's own says so.
        settings: the constructor settings it gives (keyword -> value); the caller's overrides go over them.
        aliases: older names that still select it (each warns once per process).
    """

    name: str
    source: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))

    def merged(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """The preset's settings with ``overrides`` over them."""
        return {**self.settings, **overrides}


def presets_by_name(*presets: Preset) -> Mapping[str, Preset]:
    """A read-only mapping name -> :class:`Preset` of ``presets`` (in the order given)."""
    return MappingProxyType({p.name: p for p in presets})


def warn_old_name(old: str, new: str, owner: str) -> None:
    """A :class:`FutureWarning` that preset ``old`` of ``owner`` is now called ``new``, once per name per process."""
    if old in _WARNED:
        return
    _WARNED.add(old)
    warnings.warn(
        f"{owner}: the preset name {old!r} is kept as an alias of {new!r}, which names its source; "
        f"use {new!r} (the settings are the same)",
        FutureWarning,
        stacklevel=3,
    )


def deprecated_preset(old: str) -> Any:
    """A classmethod ``old`` (a ``paper_00x`` name) that warns once (:func:`warn_old_name`) and calls the
    classmethod of the new name (:data:`OLD_NAMES`) with the same arguments."""
    new = OLD_NAMES[old]

    def alias(cls: type, *args: Any, **kwargs: Any) -> Any:
        warn_old_name(old, new, cls.__name__)
        constructor: Callable[..., Any] = getattr(cls, new)
        return constructor(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"The old name of :meth:`{new}` (warns once per process; the settings are the same)."
    return classmethod(alias)
