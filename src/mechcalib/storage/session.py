"""One run's link to the store while :func:`mechcalib.calibrate` runs: create or resume the run, answer
asks from stored evaluations (replay), reuse identical parameter sets (cache), record each outcome as it
arrives, save optimiser checkpoints and the run's end."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import pickle
import secrets
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import ConfigurationError
from ..execution._base import DETERMINISTIC_STATUSES, Outcome
from .base import Store
from .codec import (
    cache_keys,
    decode_response,
    dumps,
    earlier_fingerprints,
    encode_response,
    problem_fingerprint,
    versions,
)
from .rows import EvaluationRecord, EvaluationRow, RunSpec

log = logging.getLogger(__name__)


class ResumeError(ConfigurationError):
    """A stored run cannot be continued with the given problem or optimiser."""


def space_record(space: Any) -> list[dict[str, Any]]:
    return [
        {"name": p.name, "lower": p.lower, "upper": p.upper, "scale": p.scale, "unit": p.unit, "fixed": p.fixed}
        for p in space.parameters
    ]


def _seed_record(seed: Any) -> Any:
    if isinstance(seed, np.random.Generator):
        return {"generator": seed.bit_generator.state}
    return seed


def _seed_from_record(rec: Any) -> Any:
    if isinstance(rec, dict) and "generator" in rec:
        state = rec["generator"]
        bg = getattr(np.random, state["bit_generator"])()
        bg.state = state
        return np.random.Generator(bg)
    return rec


class RunSession:
    """Created by :func:`mechcalib.calibrate` when it is given a store; see its docstring for the rules.

    Args:
        store: the run store (any :class:`~mechcalib.storage.base.Store`).
        problem, optimizer, termination: those of the calibration (the optimiser is not set up yet: an
            unseeded optimiser receives a drawn seed, recorded so that the run can resume exactly).
        evaluator: the evaluator's ``describe()`` record.
        run_name: the run's name (``None``: a new run with a generated name).
        config: the caller's configuration, stored as JSON.
        resume: continue a stored run of that name (``True``/``"checkpoint"``: from its latest usable
            checkpoint, then by replay; ``"replay"``: replay from the start); ``False`` refuses an existing name.
        cache: reuse stored evaluations of identical parameter sets of the same problem.
    """

    def __init__(
        self,
        store: Store,
        problem: Any,
        optimizer: Any,
        termination: Any,
        evaluator: dict[str, Any],
        *,
        run_name: str | None,
        config: dict[str, Any] | None,
        resume: bool | str,
        cache: bool,
    ) -> None:
        if resume not in (True, False, "checkpoint", "replay"):
            raise ConfigurationError(f"resume must be True, False, 'checkpoint' or 'replay', got {resume!r}")
        if store.readonly:
            raise ConfigurationError(f"{store!r} is read-only; open it writable to record a run")
        self.store = store
        self.problem = problem
        self.space = problem.space
        self.names = list(self.space.free_names)
        self.cache = bool(cache)
        self.resume_mode = resume
        self.fingerprint = problem_fingerprint(problem)
        self.resumed = False
        self.replay: dict[int, EvaluationRecord] = {}
        #: evaluations recorded as stored that the store no longer holds (found on resume)
        self.lost = 0
        self._n_evals: int | None = None  # evaluations stored as of this session's last batch
        self._pending: tuple[int, int] | None = None  # (stored before, expected after) the batch begun
        self._warned_unpicklable = False  # the optimiser's state could not be pickled (said once)
        self._open(optimizer, termination, evaluator, run_name, config)
        # Unfingerprinted problems: keys unique to this run, so the cache only serves the run itself.
        self._key_base = self.fingerprint or f"run:{self.run_id}"

    # -- opening ------------------------------------------------------------------------------------
    def _open(self, optimizer: Any, termination: Any, evaluator: dict, run_name: str | None, config: Any) -> None:
        store = self.store
        settings = optimizer.settings()
        term = dataclasses.asdict(termination)
        space = space_record(self.space)
        if run_name is not None and store.has_run(run_name):
            if self.resume_mode is False:
                raise ConfigurationError(
                    f"a run named {run_name!r} already exists in {store.path}; continue it (`mechcalib resume DIR`, "
                    "or resume=True in Python) or start it elsewhere (`--out` another folder, or another run_name)"
                )
            info = store.run(run_name)
            self._check_same(info, optimizer, settings, space)
            stored_seed = _seed_from_record(info.seed)
            explicit_seed = optimizer.seed is not None and not isinstance(optimizer.seed, np.random.Generator)
            if explicit_seed and optimizer.seed != info.seed:
                raise ResumeError(
                    f"run {run_name!r} was stored with seed {info.seed!r}, the optimiser has seed {optimizer.seed!r}; "
                    "pass seed=None (or the stored seed) to resume it, or choose another run_name"
                )
            optimizer.seed = stored_seed
            store.reopen_run(info.id, termination=term, evaluator=evaluator, config=config, versions=versions())
            self.run_id, self.run_name, self.resumed = info.id, info.name, True
            self.replay = store.stored_evaluations(info.id)
            log.info("resuming run %r: %d stored evaluations", run_name, len(self.replay))
            loss = store.lost_evaluations(info.id)
            if loss is not None:
                log.warning("%s; %d evaluations will be simulated again", loss.describe(), loss.total)
                self.lost = loss.total
            return
        if optimizer.seed is None:
            optimizer.seed = secrets.randbits(63)  # recorded, so that the run can be resumed exactly
        name = run_name or f"{optimizer.name}-{datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
        spec = RunSpec(
            optimizer=optimizer.name,
            settings=settings | {"seed": optimizer.seed},
            seed=_seed_record(optimizer.seed),
            termination=term,
            evaluator=evaluator,
            space=space,
            fingerprint=self.fingerprint,
            config=config,
            versions=versions(),
        )
        self.run_id = store.create_run(name, spec)
        self.run_name = name

    def _check_same(self, info: Any, optimizer: Any, settings: dict, space: list) -> None:
        where = f"run {info.name!r} in {self.store.path}"
        if info.optimizer != optimizer.name:
            raise ResumeError(
                f"{where} used optimizer {info.optimizer!r}, not {optimizer.name!r}; choose another run_name"
            )
        mine = json.loads(dumps({k: v for k, v in settings.items() if k != "seed"}))
        theirs = {k: v for k, v in info.settings.items() if k != "seed"}
        if mine != theirs:
            diff = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            raise ResumeError(
                f"{where} used other optimizer settings ({', '.join(f'{k}: stored {theirs.get(k)!r}, now {mine.get(k)!r}' for k in diff)}); "
                "resume with the stored settings or choose another run_name"
            )
        if json.loads(dumps(space)) != info.space:
            raise ResumeError(
                f"{where} searched another parameter space; resume with the same space or choose another run_name"
            )
        if self.fingerprint is not None and info.fingerprint is not None and self.fingerprint != info.fingerprint:
            if info.fingerprint in earlier_fingerprints(self.problem):
                # a store written by an earlier version (before fingerprints sorted mappings' keys and
                # ignored shared references): same problem; its cache keys were made with the stored
                # fingerprint, so keep using it for this run
                self.fingerprint = info.fingerprint
                return
            raise ResumeError(
                f"{where} was made with another problem (model, experiments, objective or penalty differ: fingerprint "
                f"{info.fingerprint} != {self.fingerprint}); choose another run_name"
            )

    # -- resume ---------------------------------------------------------------------------------------
    def checkpoints(self) -> Iterator[tuple[int, int, dict[str, Any], list[EvaluationRecord]]]:
        """Usable checkpoints, newest first: ``(batches done, evaluations done, state, records)`` where the
        stored evaluations cover exactly batches ``0 ... batch - 1``."""
        if not self.resumed or self.resume_mode == "replay":
            return
        for b, n, blob in self.store.iter_checkpoints(self.run_id):
            if any(i not in self.replay for i in range(n)):
                continue  # the evaluations it covers are not all stored
            recs = [self.replay[i] for i in range(n)]
            if n and recs[-1].batch != b - 1:
                continue
            nxt = self.replay.get(n)
            if nxt is not None and nxt.batch != b:
                continue
            try:
                state = pickle.loads(blob)
            except Exception as exc:  # e.g. the optimiser's code changed: fall back to replay
                log.warning("checkpoint at batch %d of run %r cannot be loaded (%s); replaying", b, self.run_name, exc)
                continue
            yield b, n, state, recs

    def replayed(self, rec: EvaluationRecord, x: np.ndarray, batch: int, pos: int, index: int) -> Outcome:
        """The stored outcome of evaluation ``rec.idx``, after checking the optimiser asked the same point."""
        stored = np.array([rec.params.get(n, math.nan) for n in self.names], dtype=float)
        if rec.batch != batch or rec.pos != pos or not np.array_equal(stored, x):
            raise ResumeError(
                f"resuming run {self.run_name!r}: evaluation {rec.idx} was stored as batch {rec.batch} position "
                f"{rec.pos} at {stored.tolist()}, the optimiser now asks batch {batch} position {pos} at "
                f"{np.asarray(x).tolist()}; the optimiser (its code, settings or seed) or the budget rules changed. "
                "Resume with the same optimiser or choose another run_name"
            )
        return Outcome(
            index,
            rec.loss,
            rec.raw_loss,
            rec.status,
            rec.error,
            None,
            rec.started,
            rec.finished,
            rec.worker or "",
            "replay",
        )

    # -- evaluations ----------------------------------------------------------------------------------
    def keys(self, X: np.ndarray) -> list[str]:
        return cache_keys(self._key_base, X)

    def lookup(self, key: str, index: int) -> tuple[Outcome, int, bytes | None] | None:
        """A cache hit for ``key``: ``(outcome, source row id, response blob)``, else ``None``."""
        if not self.cache:
            return None
        row = self.store.lookup(key, DETERMINISTIC_STATUSES)
        if row is None:
            return None
        rid, loss, raw, status, error, blob = row
        now = time.time()
        o = Outcome(
            index,
            math.nan if loss is None else float(loss),
            math.nan if raw is None else float(raw),
            status,
            error,
            None,
            now,
            now,
            "cache",
            "cache",
        )
        return o, int(rid), blob

    def begin_batch(self, n_before: int, n_after: int) -> None:
        """A batch is about to be evaluated: before its first evaluation is committed (:meth:`record`), the
        store records outside itself that ``n_before`` are stored and up to ``n_after`` will be."""
        self._pending = (n_before, n_after)

    def record(
        self,
        o: Outcome,
        *,
        idx: int,
        batch: int,
        pos: int,
        key: str,
        x: np.ndarray,
        u: np.ndarray,
        cached_from: int | None = None,
        blob: bytes | None = None,
    ) -> int:
        """Commit one outcome; returns its row id."""
        if self._pending is not None:
            self.store.expect(self.run_id, *self._pending)
            self._pending = None
        if blob is None and o.response is not None:
            blob = encode_response(o.response)
        row = EvaluationRow(
            idx=idx,
            batch=batch,
            pos=pos,
            key=key,
            params=json.dumps(dict(zip(self.names, x.tolist(), strict=True))),
            u=json.dumps(u.tolist()),
            loss=o.loss,
            raw_loss=o.raw_loss,
            status=o.status,
            error=o.error,
            started=o.started,
            finished=o.finished,
            worker=o.worker,
            source=o.source,
            cached_from=cached_from,
            response=blob,
        )
        return self.store.add_evaluation(self.run_id, row)

    def response_of(self, blob: bytes | None) -> Any:
        return decode_response(blob)

    def checkpoint(self, batch: int, n_evals: int, optimizer: Any) -> None:
        try:
            state = pickle.dumps(optimizer.checkpoint_state(), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an optimiser whose state cannot be pickled resumes by replay
            if not self._warned_unpicklable:
                log.warning("optimizer %s: state cannot be pickled (%s); resume will replay", optimizer.name, exc)
                self._warned_unpicklable = True
            self.touch(batch, n_evals)
            return
        self.store.save_checkpoint(self.run_id, batch, n_evals, state)
        self._sync(n_evals)

    def touch(self, batch: int, n_evals: int | None = None) -> None:
        """The heartbeat after a batch; with ``n_evals``, also the store's :meth:`~Store.sync`."""
        self.store.touch(self.run_id, batch)
        if n_evals is not None:
            self._sync(n_evals)

    def _sync(self, n_evals: int) -> None:
        self._n_evals = n_evals
        self.store.sync(self.run_id, n_evals)

    def finish(
        self,
        status: str,
        n_batches: int,
        stop_reason: str | None = None,
        error: str | None = None,
        choices: list[dict[str, Any]] | None = None,
    ) -> None:
        self.store.finish_run(
            self.run_id, status=status, n_batches=n_batches, stop_reason=stop_reason, error=error, choices=choices
        )
        # what the store holds now, whatever the status: a run stopped in a batch confirms what it committed
        count = getattr(self.store, "n_evaluations", None)
        n = count(self.run_id) if count is not None else self._n_evals
        if n is not None:
            self.store.sync(self.run_id, n, force=True)
