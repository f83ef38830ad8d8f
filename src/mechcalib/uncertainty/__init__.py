"""How sure a calibration is: local (Laplace) intervals at the least-squares optimum and an emcee posterior
through the run engine. See :func:`uncertainty` and docs/uncertainty.md.

    import mechcalib as mc
    res = mc.calibrate(problem, max_evals=200, store="runs.sqlite", run_name="fit")
    u = mc.uncertainty(res, problem=problem, store="runs.sqlite", posterior=True, seed=1)
    # the package is callable: mc.uncertainty(...) is mechcalib.uncertainty.uncertainty(...)
    # a run folder: mechcalib.runs.folder_uncertainty("runs/fit") (the library knows nothing of folders)
    u.parameters()["k"]        # {"best", "lower", "upper", "std", "method", ...}
    u.local.weakest            # the least identifiable direction, in words
"""

from __future__ import annotations

import sys
import types
from typing import Any

from .api import CalibratedRun, UncertaintyOptions, UncertaintyResult, analyse, uncertainty
from .likelihood import LikelihoodProblem, channel_blocks
from .local import LocalUncertainty, UncertaintyWarning
from .posterior import PosteriorSummary
from .sampler import EnsembleSampler

__all__ = [
    "CalibratedRun",
    "EnsembleSampler",
    "LikelihoodProblem",
    "LocalUncertainty",
    "PosteriorSummary",
    "UncertaintyOptions",
    "UncertaintyResult",
    "UncertaintyWarning",
    "analyse",
    "channel_blocks",
    "uncertainty",
]


class _CallableModule(types.ModuleType):
    """This package, callable as :func:`uncertainty` (``mc.uncertainty(result, ...)``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> UncertaintyResult:
        return uncertainty(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
