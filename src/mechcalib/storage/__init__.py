"""Persistence of runs: the SQLite run store, the evaluation cache, resume and exports.

:class:`RunStore` keeps every evaluation of every run as it finishes, the optimiser's checkpoints and each
run's configuration; :func:`mechcalib.calibrate` writes to it when given ``store=``, reuses identical
parameter sets from it (the cache) and resumes a stored run by replaying it; :meth:`RunStore.compact_run`
shrinks a finished run to its failures and improvements, keeping its totals exact. See
:mod:`mechcalib.storage.sqlite` for the tables.
"""

from __future__ import annotations

from .codec import cache_keys, decode_response, encode_response, flatten_response, problem_fingerprint, versions
from .session import RunSession
from .sqlite import CompactionSummary, EvaluationRecord, RunInfo, RunStore

__all__ = [
    "CompactionSummary",
    "EvaluationRecord",
    "RunInfo",
    "RunSession",
    "RunStore",
    "cache_keys",
    "decode_response",
    "encode_response",
    "flatten_response",
    "problem_fingerprint",
    "versions",
]
