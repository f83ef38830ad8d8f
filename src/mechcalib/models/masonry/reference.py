"""The reference experiment of the masonry-arch calibrations, shipped as ``mechcalib/data/arch_reference.csv``.

It is **simulated, not measured** (Kibriya et al.'s (2023) curves are not public): the DEM of :mod:`.arch` with Pulatsu's
geometry (``contacts="pulatsu"``) and parameters (kn = 4 GPa/m, ks = 1.6 GPa/m, phi = 30.5 deg) with real
masses (``mass_scale`` 1) loaded at 0.5 mm/s to 12 mm, the slow verification velocity of Kibriya et al. (2023) section 4.2.3. ``benchmarks/make_arch_reference.py``
regenerates it; ``mechcalib/data/arch_reference.README.md`` documents it.

The calibrations fit the model at 10 mm/s to it (Kibriya et al. (2023) fits 3DEC at 10 mm/s to a test at 0.005 mm/s):
:func:`reference_experiment` returns the curves with the *model's* conditions for the fit (``velocity``
10 mm/s by default); how the curves were made is in :data:`REFERENCE`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ...core.data import Experiment

#: How the shipped curves were simulated (arch model conditions and contact layout).
REFERENCE = {
    "contacts": "pulatsu",
    "velocity": 0.5,
    "max_displacement": 12.0,
    "n_samples": 241,
    "mass_scale": 1.0,
    "kn": 4.0e9,
    "ks": 1.6e9,
    "phi": 30.5,
}
#: Columns of the CSV: plate displacement [mm], horizontal displacement of the right-abutment voussoir [mm],
#: plate force [kN].
COLUMNS = ("plate displacement", "horizontal displacement", "force")


def reference_path() -> Path:
    """The shipped CSV."""
    return Path(str(resources.files("mechcalib").joinpath("data", "arch_reference.csv")))


def reference_experiment(
    velocity: float = 10.0, max_displacement: float = 12.0, mass_scale: float | None = None
) -> Experiment:
    """The synthetic reference as an :class:`~mechcalib.core.data.Experiment` with the channels of
    ``masonry_arch``: ``vertical`` (force against plate displacement) and ``horizontal`` (force against the
    horizontal displacement of the right-abutment voussoir), both with the plate displacement as progress
    coordinate ``t``. ``velocity`` [mm/s] and ``max_displacement`` [mm] are the conditions under which the
    model is simulated against it (10 mm/s: the calibration case; 0.5 mm/s: Kibriya et al. (2023) Fig. 26), and
    ``mass_scale`` when given (1: real masses; default: the model's)."""
    p, h, f = COLUMNS
    return Experiment.from_csv(
        reference_path(),
        channels={"vertical": (p, f, p), "horizontal": (h, f, p)},
        conditions={"velocity": float(velocity), "max_displacement": float(max_displacement)}
        | ({} if mass_scale is None else {"mass_scale": float(mass_scale)}),
        name="arch_reference",
    )
