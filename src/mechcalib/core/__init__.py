"""The core types every other layer builds on: parameters and their spaces, measured curves and
experiments, the model contract (``Model``, ``Channel``, ``Response``, ``SimulationFailure``) and the
calibration problem."""

from __future__ import annotations

from .data import Curve, Experiment
from .model import Channel, Model, Response, SimulationFailure
from .parameters import Parameter, ParameterSpace
from .problem import EvaluationBatch, FunctionProblem, Problem, experiment_from_model

__all__ = [
    "Channel",
    "Curve",
    "EvaluationBatch",
    "Experiment",
    "FunctionProblem",
    "Model",
    "Parameter",
    "ParameterSpace",
    "Problem",
    "Response",
    "SimulationFailure",
    "experiment_from_model",
]
