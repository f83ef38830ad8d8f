"""mechcalib: calibrate nonlinear mechanical simulation models against experimental curves."""

from __future__ import annotations

from .calibrate import History, Result, Termination, calibrate, minimize
from .core.data import Curve, Experiment
from .core.parameters import Parameter, ParameterSpace
from .core.problem import EvaluationBatch, FunctionProblem, Problem, experiment_from_model
from .errors import ConfigurationError, DataError, MechcalibError, MissingExtraError
from .objectives import F1, F2, L2, OBJECTIVES, Objective, OverlapRSS, make_objective
from .version import __version__ as __version__

__all__ = [
    "F1",
    "F2",
    "L2",
    "OBJECTIVES",
    "ConfigurationError",
    "Curve",
    "DataError",
    "EvaluationBatch",
    "Experiment",
    "FunctionProblem",
    "History",
    "MechcalibError",
    "MissingExtraError",
    "Objective",
    "OverlapRSS",
    "Parameter",
    "ParameterSpace",
    "Problem",
    "Result",
    "Termination",
    "calibrate",
    "experiment_from_model",
    "make_objective",
    "minimize",
]


def __getattr__(name: str) -> object:
    # mc.uncertainty(result, ...): the uncertainty package (callable) is imported on first use
    if name == "uncertainty":
        import importlib

        return importlib.import_module(".uncertainty", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
