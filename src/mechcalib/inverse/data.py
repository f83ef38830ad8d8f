"""Sequence datasets for inverse networks, and their generation through the run engine.

The dataset type and its sources live in :mod:`.sequences` (:class:`SequenceDataset`, :func:`from_model`,
:func:`from_npz`, :func:`read_sequence_csv`), the scalers in :mod:`.scalers`, resampling and splits in
:mod:`mechcalib.core.dataset`; this module keeps all their names importable and adds the generation of a dataset
through the run engine:

* :func:`generate_dataset`: a Latin hypercube through :func:`mechcalib.calibrate` with the ``lhs`` optimiser on a
  :class:`SamplingProblem`, whose loss is 0, and a run store: each simulation is committed as it finishes, failed
  ones are recorded, a pool runs them in parallel, and calling it again resumes a killed generation;
  :func:`resume_dataset` continues one from its record alone;
* :func:`dataset_from_store`: the dataset of a stored run (``mechcalib export DIR --dataset FILE.npz`` writes the
  same arrays, see :meth:`mechcalib.storage.RunStore.dataset`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.dataset import (
    Dataset,
    SeedLike,
    expand_features,
    resample_on_progress,
    sequence_from_curves,
    train_val_split,
)
from ..core.dataset import is_loop as _is_loop
from ..core.model import Model, SimulationFailure
from ..core.parameters import ParameterSpace
from ..errors import ConfigurationError
from .scalers import ParameterScaler, SequenceScaler
from .sequences import (
    PAPER_LENGTH,
    SIM_EXPERIMENT,
    SequenceDataset,
    _checked,
    _lhs,
    default_features,
    from_arrays,
    from_model,
    from_npz,
    read_sequence_csv,
    simulate_sequences,
)

__all__ = [
    "PAPER_LENGTH",
    "SIM_EXPERIMENT",
    "GenerationResult",
    "ParameterScaler",
    "SamplingProblem",
    "SeedLike",
    "SequenceDataset",
    "SequenceScaler",
    "_checked",
    "_is_loop",
    "_lhs",
    "dataset_from_store",
    "dataset_run_name",
    "default_features",
    "expand_features",
    "from_arrays",
    "from_model",
    "from_npz",
    "generate_dataset",
    "read_sequence_csv",
    "resample_on_progress",
    "resume_dataset",
    "sequence_from_curves",
    "simulate_sequences",
    "train_val_split",
]


# ------------------------------------------------------------------------------------------------------
# Dataset generation through the run engine
# ------------------------------------------------------------------------------------------------------
@dataclass
class SamplingProblem:
    """A problem without an experiment: every successful simulation scores 0, so that an optimiser that
    ignores its losses (the Latin hypercube) turns :func:`mechcalib.calibrate` into a durable sampler.

    Each simulation's response is kept under the experiment name ``"sim"`` (the layout of
    :meth:`SequenceDataset.save_npz` and of a run store's dataset export), and a failed simulation, or one whose
    response holds NaN or inf, is a failed evaluation with its reason, recorded like any other.

    Args:
        model: the forward model.
        space: the sampled parameter space (default: the model's).
        conditions: the model's conditions for every simulation.
        failure_loss: the loss recorded for a failed simulation.
    """

    model: Model
    space: ParameterSpace | None = None
    conditions: Mapping[str, Any] | None = None
    failure_loss: float = float("inf")
    keep_responses: bool = True

    def __post_init__(self) -> None:
        if self.space is None:
            self.space = self.model.space
        if self.space.names != self.model.space.names:
            raise ConfigurationError(
                f"the sampled space must list the model's parameters in order {list(self.model.space.names)}, "
                f"got {list(self.space.names)}"
            )
        self.conditions = dict(self.conditions or {})
        self.model.validate_conditions(self.conditions)  # bad conditions fail here, before any simulation

    def fingerprint(self) -> str:
        """The model (its pickled state: class, constructor settings), the conditions, the space and the
        penalty; the store's cache serves identical parameter sets of an identical problem only."""
        import hashlib
        import pickle

        from ..storage.codec import dumps
        from ..storage.session import space_record
        from ..version import __version__

        h = hashlib.blake2b(digest_size=16)
        h.update(pickle.dumps(self.model, protocol=4))
        h.update(
            dumps(
                {
                    "conditions": self.conditions,
                    "space": space_record(self.space),
                    "failure_loss": self.failure_loss,
                    "version": __version__,
                }
            ).encode()
        )
        return "dataset:" + h.hexdigest()

    def evaluate(self, x_free: np.ndarray) -> Any:
        import time

        from ..core.problem import FAILED, OK, EvaluationBatch

        t0 = time.perf_counter()
        x_free = np.atleast_2d(np.asarray(x_free, dtype=float))
        sims = _simulate_batch(self.model, self.space.to_full(x_free), self.conditions)
        errors: list[str | None] = [s.message if isinstance(s, SimulationFailure) else None for s in sims]
        status = [OK if e is None else FAILED for e in errors]
        ok = np.array([e is None for e in errors])
        raw = np.where(ok, 0.0, np.nan)
        losses = np.where(ok, 0.0, self.failure_loss)
        responses = [None if e is not None else {SIM_EXPERIMENT: s} for s, e in zip(sims, errors, strict=True)]
        return EvaluationBatch(
            losses, raw, status, errors, responses if self.keep_responses else [], time.perf_counter() - t0
        )


def _simulate_batch(model: Model, theta: np.ndarray, conditions: Mapping[str, Any]) -> list:
    """Simulate a batch; a batch that raises is retried one set at a time, so a bad set fails alone."""
    import traceback

    try:
        sims = model.simulate(theta, conditions)
        if len(sims) != theta.shape[0]:
            raise RuntimeError(f"model returned {len(sims)} responses for {theta.shape[0]} parameter sets")
        return [_checked(s) for s in sims]
    except Exception:  # noqa: BLE001 - any error of a model's code fails its sets, never the run
        if theta.shape[0] == 1:
            return [SimulationFailure(traceback.format_exc(limit=3).strip().splitlines()[-1])]
        return [s for i in range(theta.shape[0]) for s in _simulate_batch(model, theta[i : i + 1], conditions)]


def dataset_run_name(model: Model, n: int, seed: int) -> str:
    """The default run name of :func:`generate_dataset`: the same command resumes the same run."""
    return f"dataset-{model.name}-n{int(n)}-seed{int(seed)}"


def resume_dataset(
    store: Any,
    run: str | None = None,
    *,
    workers: int | None = None,
    budget: int | None = None,
    timeout: float | None = None,
    on_evaluation: Any = None,
) -> GenerationResult:
    """Continue a stored dataset run of :func:`generate_dataset` from its record alone: the model (built-in,
    rebuilt with its recorded constructor options), ``n``, seed, conditions and sequence layout come from the
    run's configuration. ``run``: its name (default: the store's only dataset run). Stored sets are read
    back, the rest simulated; the problem fingerprint guards against a model that changed since."""
    from ..models import MODELS, get_model
    from ..storage import RunStore

    own = not isinstance(store, RunStore)
    if own and not Path(store).is_file():
        raise ConfigurationError(f"no run store at {str(store)!r}; give the SQLite file a dataset run was stored in")
    st = RunStore(store) if own else store
    try:
        runs = [i for i in st.runs() if (i.config or {}).get("kind") == "dataset"]
        if run is None:
            if len(runs) != 1:
                raise ConfigurationError(
                    f"{st.path} holds {len(runs)} dataset runs ({', '.join(i.name for i in runs) or 'none'}); name "
                    "one with run=..."
                )
            info = runs[0]
        else:
            info = st.run(run)
            if (info.config or {}).get("kind") != "dataset":
                raise ConfigurationError(
                    f"run {run!r} is not a dataset run (its configuration has no kind = 'dataset'); dataset runs "
                    f"here: {', '.join(i.name for i in runs) or 'none'}"
                )
        cfg = info.config
        try:
            MODELS.resolve(cfg["model"])
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"run {info.name!r} used the model {cfg['model']!r}, which is not available: {exc}"
            ) from None
        opts = cfg.get("model_options") or {}
        model = get_model(cfg["model"], **opts)
        return generate_dataset(
            model,
            cfg["n"],
            st,
            run_name=info.name,
            seed=cfg["seed"],
            workers=workers,
            budget=budget,
            timeout=timeout,
            features=cfg.get("features"),
            length=cfg.get("length", PAPER_LENGTH),
            conditions=cfg.get("conditions"),
            on_evaluation=on_evaluation,
            model_options=opts,
        )
    finally:
        if own:
            st.close()


def dataset_from_store(
    store: Any,
    run: str,
    *,
    features: Sequence[str] | None = None,
    length: int = PAPER_LENGTH,
) -> SequenceDataset:
    """The sequence dataset of a stored dataset run (or of any run that kept its responses): its successful
    evaluations in run order, with the bounds of its free parameters (:meth:`Dataset.from_store` in the sequence
    layout); ``meta["failed"]`` counts the failed ones."""
    from ..storage import RunStore

    own = not isinstance(store, RunStore)
    st = RunStore(store, readonly=True) if own else store
    try:
        info = st.run(run)
        ds = SequenceDataset.of(Dataset.from_store(st, run, features=features, length=int(length)))
        n_failed = st.n_evaluations(info.id) - st.n_evaluations(info.id, status="ok")
    finally:
        if own:
            st.close()
    ds.meta.update({"failed": int(n_failed)})
    return ds


@dataclass
class GenerationResult:
    """What :func:`generate_dataset` returns: the dataset of the successful simulations done so far
    (``None`` when there is none yet), the calibration :class:`~mechcalib.calibrate.Result` of the sampling
    run, and the counts: ``n`` planned, ``done`` stored, ``failed`` among them, ``simulated`` by this call."""

    dataset: SequenceDataset | None
    result: Any
    run_name: str
    n: int
    done: int
    failed: int
    simulated: int

    @property
    def complete(self) -> bool:
        return self.done >= self.n


def generate_dataset(
    model: Model,
    n: int,
    store: Any,
    *,
    run_name: str | None = None,
    seed: int = 0,
    workers: int | None = None,
    evaluator: Any = None,
    budget: int | None = None,
    timeout: float | None = None,
    features: Sequence[str] | None = None,
    length: int = PAPER_LENGTH,
    space: ParameterSpace | None = None,
    conditions: Mapping[str, Any] | None = None,
    on_evaluation: Any = None,
    model_options: Mapping[str, Any] | None = None,
) -> GenerationResult:
    """Simulate a Latin hypercube of ``n`` points of ``space`` through :func:`mechcalib.calibrate` and a run
    store, and read the sequence dataset back from the store.

    The design is one Latin hypercube of ``n`` points (the ``lhs`` optimiser, ``batch_size = n``, seeded), the
    problem a :class:`SamplingProblem` (loss 0). So the run engine gives what a long dataset needs: every
    simulation is committed as it finishes, with its response; a killed generation resumes where it stopped when
    called again with the same ``run_name`` (the design is replayed from the seed and every stored point is read
    back, not simulated); failed simulations are recorded with their reason and left out of the dataset; a
    pool of worker processes runs simulations in parallel. With the same ``seed`` the points, and so the
    dataset, equal those of :func:`from_model`.

    Args:
        model: the forward model.
        n: number of Latin-hypercube points (>= 2).
        store: a :class:`~mechcalib.storage.RunStore` or the path of its SQLite file.
        run_name: the run's name in the store (default :func:`dataset_run_name`: model, ``n`` and ``seed``).
        seed: seed of the design.
        workers: simulations run in a process pool of this many workers; ``None`` or 1: in this process, one
            set at a time. Ignored when ``evaluator`` is given.
        evaluator: an :class:`~mechcalib.execution.Evaluator` (for example a dask one), kept open.
        budget: stop once this many points of the design are stored (a partial generation, continued by a later
            call with a larger or no budget); default: all ``n``.
        timeout: per-simulation limit in seconds (a simulation past it is recorded as ``"timeout"``).
        features, length: sequence layout of the returned dataset (see :func:`simulate_sequences`).
        space, conditions: sampled space (default: the model's) and the model's conditions.
        on_evaluation: passed to :func:`mechcalib.calibrate` (progress).
        model_options: the constructor options ``model`` was built with (``get_model(model.name, **options)``),
            recorded with the run so that :func:`resume_dataset` can rebuild it.
    """
    from ..calibrate import calibrate
    from ..optimizers.random_search import LatinHypercube
    from ..storage import RunStore

    n = int(n)
    if n < 2:
        raise ConfigurationError(f"a dataset needs n >= 2 samples, got {n!r}")
    if budget is not None and (isinstance(budget, bool) or int(budget) < 1):
        raise ConfigurationError(f"budget must be a positive number of simulations or None, got {budget!r}")
    if workers is not None and int(workers) < 1:
        raise ConfigurationError(f"workers must be >= 1, got {workers!r}")
    problem = SamplingProblem(model, space, conditions)
    model.prepare_shared(problem.conditions)  # shared set-up (a DEM specimen) made once here, not raced by the workers
    name = run_name or dataset_run_name(model, n, seed)
    own_ev = evaluator is None
    if own_ev:
        from ..execution import PoolEvaluator, SerialEvaluator

        evaluator = (
            PoolEvaluator(n_workers=int(workers), timeout=timeout)
            if workers and int(workers) > 1
            else SerialEvaluator(timeout=timeout, chunk_size=1)
        )
    own_store = not isinstance(store, RunStore)
    st = RunStore(store) if own_store else store
    config = {
        "kind": "dataset",
        "model": model.name,
        "n": n,
        "seed": int(seed),
        "conditions": dict(problem.conditions),
        "features": list(features) if features else None,
        "length": int(length),
        "model_options": dict(model_options or {}),
    }
    live = {"n": 0}

    def hook(idx: int, batch: int, outcome: Any) -> None:
        if outcome.source == "live":
            live["n"] += 1
        if on_evaluation is not None:
            on_evaluation(idx, batch, outcome)

    try:
        res = calibrate(
            problem,
            LatinHypercube(batch_size=n, seed=int(seed)),
            max_evals=min(n, int(budget)) if budget is not None else n,
            evaluator=evaluator,
            store=st,
            run_name=name,
            config=config,
            on_evaluation=hook,
            n_alternatives=0,
            progress=False,
        )
        info = st.run(name)
        done = st.n_evaluations(info.id)
        ok = st.n_evaluations(info.id, status="ok")
        ds = dataset_from_store(st, name, features=features, length=length) if ok else None
    finally:
        if own_ev:
            evaluator.close()
        if own_store:
            st.close()
    if ds is not None:
        ds.meta.update({"model": model.name, "conditions": dict(problem.conditions)})
    return GenerationResult(ds, res, name, n, done, done - ok, live["n"])
