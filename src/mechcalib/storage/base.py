"""The abstract run store: what the run session (:mod:`mechcalib.storage.session`),
:func:`mechcalib.calibrate` and the run folders (:mod:`mechcalib.runs`) ask of a store.

Two stores implement it: :class:`~mechcalib.storage.sqlite.RunStore` (durable, one SQLite file) and
:class:`~mechcalib.storage.memory.MemoryStore` (plain Python structures, for tests). Values go in and come
out as the SQLite store's tables hold them: settings, seeds, spaces and configs as canonical JSON (read back
through ``json.loads``), ``params``/``u`` of an evaluation as JSON text, a NaN REAL as ``None``; so a
calibration gives the same result with either store.

A run is named by its name or its id (``run: str | int``); the writing methods take the id that
:meth:`Store.create_run` returned.
"""

from __future__ import annotations

import math
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np

from . import export
from .rows import EvaluationRecord, EvaluationRow, RunInfo, RunSpec, evaluation_columns_of


class Store(ABC):
    """A store of runs, their evaluations and optimiser checkpoints (see the module docstring)."""

    #: where the store lives (named in error messages).
    path: Path | str
    #: a read-only store refuses to record a run.
    readonly: bool

    # -- runs ---------------------------------------------------------------------------------------
    @abstractmethod
    def runs(self) -> list[RunInfo]:
        """Every run, oldest first, with its evaluation counts and best loss."""

    @abstractmethod
    def run(self, run: str | int) -> RunInfo:
        """One run by name or id; raises :class:`~mechcalib.errors.ConfigurationError` naming the stored
        runs when there is none."""

    @abstractmethod
    def has_run(self, name: str) -> bool:
        """Whether a run of this name is stored."""

    def config(self, run: str | int) -> dict[str, Any] | None:
        """The configuration stored with a run."""
        return self.run(run).config

    @abstractmethod
    def create_run(self, name: str, spec: RunSpec) -> int:
        """Insert a run marked ``running`` by this process; returns its id. Refuses a stored name."""

    @abstractmethod
    def reopen_run(
        self,
        run_id: int,
        *,
        termination: dict[str, Any],
        evaluator: dict[str, Any],
        config: dict[str, Any] | None,
        versions: dict[str, str],
    ) -> None:
        """Mark a stored run ``running`` by this process (resume); ``config=None`` keeps the stored one."""

    @abstractmethod
    def finish_run(
        self,
        run_id: int,
        *,
        status: str,
        n_batches: int,
        stop_reason: str | None = None,
        error: str | None = None,
        choices: list[dict[str, Any]] | None = None,
    ) -> None:
        """Record the end of a run (``finished``, ``interrupted`` or ``failed``) and the method's ``choices``
        (``None``: keep the stored ones)."""

    # -- evaluations --------------------------------------------------------------------------------
    @abstractmethod
    def add_evaluation(self, run_id: int, row: EvaluationRow) -> int:
        """Record one evaluation at once; returns its row id (unique in the store, increasing).
        ``(run_id, row.idx)`` is unique."""

    @abstractmethod
    def lookup(self, key: str, statuses: Sequence[str] = ("ok", "failed")) -> tuple | None:
        """The first stored evaluation (lowest row id, any run) with this cache key and one of these
        statuses: ``(id, loss, raw_loss, status, error, response blob)``, a NaN loss as ``None``."""

    @abstractmethod
    def evaluations(
        self, run: str | int, *, status: str | Sequence[str] | None = None, responses: bool = False
    ) -> list[EvaluationRecord]:
        """A run's stored evaluations in run order, optionally only some statuses, optionally with responses."""

    def evaluation_table(self, run: str | int, *, every: int = 1) -> dict[str, np.ndarray]:
        """A run's stored evaluations as columns, thinned for a plot: the rows whose index is a multiple of
        ``every`` and every ``ok`` row that improved the best loss before it (so the best-so-far curve stays
        exact). Keys: ``idx`` ``(N,)``, ``loss`` (NaN where none), ``status``, ``X`` ``(N, dim)`` free parameter
        values in the space's order. Of a compacted run: its kept rows."""
        info = self.run(run)
        rows, params, best = [], [], math.inf
        for r in self.evaluations(info.id):
            better = r.status == "ok" and r.loss < best
            best = min(best, r.loss) if better else best
            if better or r.idx % max(int(every), 1) == 0:
                rows.append((r.idx, r.loss, r.status))
                params.append(r.params)
        return evaluation_columns_of(info.free_names, rows, params)

    @abstractmethod
    def stored_evaluations(self, run_id: int) -> dict[int, EvaluationRecord]:
        """``{idx: record}`` of a run, without responses (what a resume replays)."""

    @abstractmethod
    def failures(self, run: str | int) -> list[EvaluationRecord]:
        """The run's evaluations whose status is not ``ok``, in run order."""

    @abstractmethod
    def best(self, run: str | int, *, responses: bool = False) -> EvaluationRecord | None:
        """The run's best ``ok`` evaluation (lowest loss, a NaN loss first as SQL orders NULL, earliest on
        ties), or ``None``."""

    @abstractmethod
    def trace(self, run: str | int) -> tuple[np.ndarray, np.ndarray]:
        """The run's best-so-far curve ``(idx, best)`` over every evaluation index (``inf`` before the first
        ``ok`` one)."""

    @abstractmethod
    def timing(self, run: str | int) -> dict[str, float | int]:
        """The run's time totals: ``seconds``, ``first_started``, ``last_finished``, ``active_seconds``,
        ``n_live`` (:func:`mechcalib.storage.compaction.timing_of`)."""

    # -- checkpoints --------------------------------------------------------------------------------
    @abstractmethod
    def save_checkpoint(self, run_id: int, batch: int, n_evals: int, state: bytes) -> None:
        """Store a pickled optimiser state after ``batch`` told batches and ``n_evals`` evaluations (one per
        batch: a second replaces the first) and set the run's batch count."""

    @abstractmethod
    def touch(self, run_id: int, n_batches: int) -> None:
        """Update a run's batch count and ``updated`` time (a heartbeat)."""

    def sync(self, run_id: int, n_evals: int, *, force: bool = False) -> None:
        """After a batch: make what is stored durable in the store's own file and record ``n_evals`` (the
        run's stored evaluations) outside it, for :meth:`recorded_evaluations` (nothing to do in memory). A
        store may skip a call that comes soon after the last one, unless ``force``."""
        return None

    def recorded_evaluations(self, run_id: int) -> int | None:
        """The evaluation count :meth:`sync` last recorded for a run outside the store (``None``: none), so
        a resume can tell when the store lost evaluations (a deleted write-ahead log)."""
        return None

    def expect(self, run_id: int, n_evals: int, expected: int) -> None:
        """Before the first evaluation of a batch is committed: record outside the store that the run has
        ``n_evals`` stored and is about to hold up to ``expected`` (nothing to do in memory)."""
        return None

    def lost_evaluations(self, run_id: int) -> Any:
        """The :class:`~mechcalib.storage.integrity.EvaluationLoss` of a run (evaluations recorded as stored
        that the store does not hold), ``None`` when nothing was lost (always in memory)."""
        return None

    @abstractmethod
    def iter_checkpoints(self, run_id: int) -> Iterator[tuple[int, int, bytes]]:
        """``(batch, n_evals, pickled state)``, newest first."""

    # -- exports ------------------------------------------------------------------------------------
    def export_csv(self, run: str | int, path: str | os.PathLike[str]) -> Path:
        """Write a run's evaluations to CSV: ``idx, batch, pos``, one column per free parameter, ``u_<name>``
        per unit-cube coordinate, ``loss, raw_loss, status, error, started, finished, seconds, worker,
        source, cached_from``.

        Warning: for a compacted run (:meth:`RunStore.compact_run`) only the kept rows are written (its
        failures and improvements, ``RunInfo.n_dropped`` fewer than it made); ``idx`` tells where each one
        stood."""
        return export.export_csv(self, run, path)

    def dataset(self, run: str | int, *, include_failed: bool = False, unique: bool = True) -> dict[str, np.ndarray]:
        """A run's parameter sets and responses as arrays (for surrogate training).

        Keys: ``names`` (free parameter names), ``X`` ``(N, dim)`` free values, ``U`` ``(N, dim)`` unit-cube
        points, ``theta`` ``(N, n_params)`` full parameter vectors (fixed values inserted), ``param_names``,
        ``loss``, ``raw_loss``, ``status``, ``idx``; and for every response array path (``exp/channel/y``...)
        ``response/<path>`` stacked to ``(N, m)``: rows without it, or shorter, are padded with NaN, and
        ``response_len/<path>`` ``(N,)`` gives each row's length when they differ.

        Args:
            include_failed: keep failed evaluations (default: ``ok`` only).
            unique: keep one row per distinct parameter set (cache hits repeat their source).

        A compacted run (:meth:`RunStore.compact_run`) is refused: a dataset needs all its rows.
        """
        return export.dataset(self, run, include_failed=include_failed, unique=unique)

    # -- lifetime -----------------------------------------------------------------------------------
    @abstractmethod
    def close(self) -> None:
        """Release the store (a closed store answers no more calls)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
