"""Wet sand in a confined triaxial test (Hu et al. (2024) section 3): the Edinburgh elasto-plastic adhesion (EEPA)
contact law (:mod:`.contact`), a 3D DEM of spheres and dual-sphere clumps (:mod:`.dem`), poured specimens
cached on disk (:mod:`.specimen`) and the :class:`~.triaxial.EEPATriaxial` model (``eepa_triaxial``).
"""

from __future__ import annotations

__all__ = ["EEPATriaxial"]


def __getattr__(name: str):
    if name == "EEPATriaxial":
        from .triaxial import EEPATriaxial

        return EEPATriaxial
    raise AttributeError(name)
