"""Ask/tell optimisers, one algorithm per module.

==================  ==========================  ==============================================
registry name       class                       source
==================  ==========================  ==============================================
``ga``              :class:`GA`                 Kibriya et al. (2023) section 3.1 (``geneticalgorithm`` defaults)
``pso``             :class:`PSO`                Kibriya et al. (2023) eqs. 1-10
``tbpso``           :class:`TBPSO`              Kibriya et al. (2023) eqs. 11-15
``abc``             :class:`ABC`                Ding et al. (2021) eqs. 28-33 (Karaboga)
``iabc``            :class:`IABC`               Ding et al. (2021) eqs. 34-35
``tsa``             :class:`TSA`                tree-seed algorithm (Kiran 2015)
``ltsa``            :class:`LevyTSA`            tree-seed algorithm with Lévy-flight steps (Kiran 2015; Mantegna 1994)
``bmo``             :class:`BMO`                bird mating optimiser (Askarzadeh 2014)
``de``              :class:`DE`                 differential evolution rand/1/bin (Storn & Price)
``grade``           :class:`GRADE`              Mareš et al. (2016) (Ibrahimbegovic et al. 2004; Kucerova 2007)
``cmaes``           :class:`CMAES`              CMA-ES from pycma (Hansen 2016), IPOP/BIPOP restarts (Auger & Hansen 2005; Hansen 2009)
``random``          :class:`RandomSearch`       baseline
``lhs``             :class:`LatinHypercube`     baseline
``lsq``             :class:`LeastSquares`       multi-start ``scipy.optimize.least_squares`` on residuals
``lsq-trf``         :class:`LeastSquaresTRF`    trust-region reflective, one start
``lsq-lm``          :class:`LeastSquaresLM`     Levenberg-Marquardt (cosine transform), one start
``eki``             :class:`EKI`                ensemble Kalman inversion (Iglesias, Law & Stuart 2013; step: Iglesias & Yang 2021)
``auto``            :class:`Auto`               the default: Sobol design, least-squares polishing, CMA-ES fallback
==================  ==========================  ==============================================

Classes are imported lazily so that one algorithm's module is loaded only when used.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError
from ..registry import Registry
from ._base import Optimizer

#: The optimiser registry: the built-in algorithms, plus those that installed distributions declare in the
#: entry-point group ``mechcalib.optimizers``. Names are case-insensitive.
OPTIMIZERS: Registry[type[Optimizer]] = Registry(
    "optimizer",
    base=Optimizer,
    group="mechcalib.optimizers",
    case_insensitive=True,
    entries={
        "ga": "mechcalib.optimizers.ga:GA",
        "pso": "mechcalib.optimizers.pso:PSO",
        "tbpso": "mechcalib.optimizers.tbpso:TBPSO",
        "abc": "mechcalib.optimizers.abc:ABC",
        "iabc": "mechcalib.optimizers.abc:IABC",
        "tsa": "mechcalib.optimizers.tsa:TSA",
        "ltsa": "mechcalib.optimizers.ltsa:LevyTSA",
        "bmo": "mechcalib.optimizers.bmo:BMO",
        "de": "mechcalib.optimizers.de:DE",
        "grade": "mechcalib.optimizers.grade:GRADE",
        "cmaes": "mechcalib.optimizers.cmaes:CMAES",
        "random": "mechcalib.optimizers.random_search:RandomSearch",
        "lhs": "mechcalib.optimizers.random_search:LatinHypercube",
        "lsq": "mechcalib.optimizers.least_squares:LeastSquares",
        "lsq-trf": "mechcalib.optimizers.least_squares:LeastSquaresTRF",
        "lsq-lm": "mechcalib.optimizers.least_squares:LeastSquaresLM",
        "eki": "mechcalib.optimizers.eki:EKI",
        "auto": "mechcalib.optimizers.auto:Auto",
    },
)
_BY_CLASS = {
    "GA": "ga",
    "PSO": "pso",
    "TBPSO": "tbpso",
    "ABC": "abc",
    "IABC": "iabc",
    "TSA": "tsa",
    "LevyTSA": "ltsa",
    "BMO": "bmo",
    "DE": "de",
    "GRADE": "grade",
    "CMAES": "cmaes",
    "RandomSearch": "random",
    "LatinHypercube": "lhs",
    "LeastSquares": "lsq",
    "LeastSquaresTRF": "lsq-trf",
    "LeastSquaresLM": "lsq-lm",
    "EKI": "eki",
    "Auto": "auto",
}

__all__ = ["Optimizer", "OPTIMIZERS", "get_optimizer", "make_optimizer", *_BY_CLASS]


def __getattr__(name: str) -> Any:
    if name in _BY_CLASS:
        return OPTIMIZERS.get(_BY_CLASS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_optimizer(name: str) -> type[Optimizer]:
    """The optimiser class registered under ``name`` (or a ``"package.module:Class"`` target); an unknown
    name lists the valid ones."""
    return OPTIMIZERS.resolve(name)


def make_optimizer(name: str, preset: str | None = None, **settings: Any) -> Optimizer:
    """Build an optimiser by name, from a named preset (a classmethod such as ``kibriya2023``; an old
    ``paper_00x`` name warns once) or settings."""
    cls = get_optimizer(name)
    if preset is None:
        return cls(**settings)
    if preset not in presets_of(cls):
        raise ConfigurationError(
            f"optimizer {name!r} has no preset {preset!r}; presets are {sorted(cls.setting_presets)}"
        )
    return getattr(cls, preset)(**settings)


def presets_of(cls: type[Optimizer]) -> tuple[str, ...]:
    """Every preset name a class accepts: those of ``cls.setting_presets`` and then their old aliases."""
    records = cls.setting_presets.values()
    return (*(p.name for p in records), *(a for p in records for a in p.aliases))
