"""Where simulations run: evaluators behind one interface.

==========  ===============================  ====================================================
name        class                            runs on
==========  ===============================  ====================================================
``serial``  :class:`SerialEvaluator`         the calling process (timeouts abandon the call)
``pool``    :class:`PoolEvaluator`           local worker processes (timeouts kill the worker)
``dask``    :class:`DaskEvaluator`           a dask.distributed cluster (extra ``mechcalib[dask]``)
(config)    :class:`JobQueueEvaluator`       SLURM or PBS jobs through dask-jobqueue (``mechcalib[cluster]``;
                                             ``cluster_evaluator("slurm", ...)``, docs/cluster.md)
==========  ===============================  ====================================================

Every evaluator takes a whole ask batch with ``submit(X)`` and yields one :class:`Outcome` per
parameter set as it finishes; :func:`mechcalib.calibrate` records each on arrival and tells the optimiser
the complete batch in ask order. ``make_evaluator(name, **options)`` builds one by name (configs, CLI).
"""

from __future__ import annotations

from typing import Any

from ..registry import Registry
from ._base import (
    CRASHED,
    DETERMINISTIC_STATUSES,
    FAILED,
    OK,
    STATUSES,
    TIMEOUT,
    Evaluator,
    EvaluatorError,
    FunctionEvaluator,
    Outcome,
    evaluate_chunk,
    outcomes_to_batch,
)
from .pool import PoolEvaluator
from .serial import SerialEvaluator

#: The evaluator registry (names are case-insensitive); dask's module imports dask only when used.
EVALUATORS: Registry[type[Evaluator]] = Registry(
    "evaluator",
    base=Evaluator,
    case_insensitive=True,
    entries={
        "serial": SerialEvaluator,
        "pool": PoolEvaluator,
        "dask": "mechcalib.execution.dask_backend:DaskEvaluator",
    },
)

__all__ = [
    "CRASHED",
    "DETERMINISTIC_STATUSES",
    "EVALUATORS",
    "FAILED",
    "OK",
    "STATUSES",
    "TIMEOUT",
    "DaskEvaluator",
    "Evaluator",
    "EvaluatorError",
    "FunctionEvaluator",
    "JobQueueEvaluator",
    "Outcome",
    "PoolEvaluator",
    "SerialEvaluator",
    "cluster_evaluator",
    "evaluate_chunk",
    "make_evaluator",
    "outcomes_to_batch",
]


def __getattr__(name: str) -> Any:
    if name in ("JobQueueEvaluator", "cluster_evaluator"):  # dask-jobqueue (extra ``mechcalib[cluster]``)
        from . import jobqueue

        return getattr(jobqueue, name)
    if name == "DaskEvaluator":  # its module imports dask lazily anyway; keep the package light
        return EVALUATORS.get("dask")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_evaluator(name: str, **options: Any) -> Evaluator:
    """An evaluator by registry name (or ``"package.module:Class"`` target) with its keyword options, e.g.
    ``make_evaluator("pool", n_workers=4, timeout=300)``; an unknown name lists the valid ones."""
    return EVALUATORS.resolve(name)(**options)
