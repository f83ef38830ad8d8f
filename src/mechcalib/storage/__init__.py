"""Persistence of runs: the run stores, the evaluation cache, resume and exports.

:class:`RunStore` keeps every evaluation of every run as it finishes, the optimiser's checkpoints and each
run's configuration in one SQLite file; :class:`MemoryStore` keeps the same in plain Python structures
(for tests); both implement the abstract :class:`Store` that :class:`RunSession` writes through.
:func:`mechcalib.calibrate` writes to a store when given ``store=``, reuses identical parameter sets from it
(the cache) and resumes a stored run by replaying it; :meth:`RunStore.compact_run` shrinks a finished run to
its failures and improvements, keeping its totals exact.

Modules: :mod:`~mechcalib.storage.base` (the abstract store), :mod:`~mechcalib.storage.schema` (the SQLite
tables), :mod:`~mechcalib.storage.rows` (the rows written and read), :mod:`~mechcalib.storage.sqlite` and
:mod:`~mechcalib.storage.memory` (the stores), :mod:`~mechcalib.storage.compaction`,
:mod:`~mechcalib.storage.export`, :mod:`~mechcalib.storage.codec` (encodings) and
:mod:`~mechcalib.storage.session` (one run's link to its store).
"""

from __future__ import annotations

from .base import Store
from .codec import cache_keys, decode_response, encode_response, flatten_response, problem_fingerprint, versions
from .memory import MemoryStore
from .rows import CompactionSummary, EvaluationRecord, EvaluationRow, RunInfo, RunSpec
from .session import RunSession
from .sqlite import RunStore

__all__ = [
    "CompactionSummary",
    "EvaluationRecord",
    "EvaluationRow",
    "MemoryStore",
    "RunInfo",
    "RunSession",
    "RunSpec",
    "RunStore",
    "Store",
    "cache_keys",
    "decode_response",
    "encode_response",
    "flatten_response",
    "problem_fingerprint",
    "versions",
]
