"""Calibration runs kept in a folder: what the ``run`` and ``resume`` commands do, callable from Python.

The configuration stored with the run has the command-line overrides applied (budget, seed, evaluator), so
:func:`resume_run` rebuilds exactly the run that was started (:mod:`.configuration`).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..calibrate import Result, calibrate
from ..config import RunConfig, load_config
from ..core.problem import Problem
from ..errors import ConfigurationError
from ..execution import Evaluator
from ..execution.dask_backend import DaskEvaluator
from ..execution.jobqueue import cancel_recorded_jobs
from ..storage import RunStore
from ..storage.codec import earlier_fingerprints, problem_fingerprint
from ..storage.integrity import StoreDamagedError, repair_hint
from .configuration import apply_overrides, build_evaluator, cli_overrides, load_run_config, output_as_given
from .folder import (
    MANIFEST_FILE,
    RESULT_FILE,
    RUN_LOG,
    STORE_FILE,
    RunDirError,
    folder_lock,
    locked_by_another,
    now,
    read_manifest,
    read_uncertainty,
    run_name_in,
    store_path,
    write_json,
)
from .loss import check_loss
from .report import write_report
from .steps import step_reports
from .summary import apply_polished_best, folder_uncertainty_brief, result_summary

log = logging.getLogger(__name__)

#: ``progress(done, total, best)``: evaluations done, the evaluation budget (``None``: no ``max_evals``), the
#: best loss so far; called once when the run starts and after every evaluation.
ProgressHook = Callable[[int, "int | None", float], Any]

__all__ = ["ProgressHook", "RunRecord", "resume_run", "run_config"]


@dataclass
class RunRecord:
    """What :func:`run_config` and :func:`resume_run` return: the calibration's :class:`Result`, the
    ``result.json`` content (``summary``), the run folder, and the plots written (empty without plots)."""

    result: Result
    summary: dict[str, Any]
    out_dir: Path
    plots: list[Path]

    @property
    def result_path(self) -> Path:
        return self.out_dir / RESULT_FILE


def _progress_hook(progress: ProgressHook | None, total: int | None, done: int, best: float):
    if progress is None:
        return None
    state: dict[str, Any] = {"done": done, "best": best}
    progress(done, total, best)

    def on_evaluation(idx: int, batch: int, outcome: Any) -> None:
        state["done"] = max(state["done"], idx + 1)
        if outcome.loss < state["best"]:
            state["best"] = float(outcome.loss)
        progress(state["done"], total, state["best"])

    return on_evaluation


def _build(cfg: RunConfig) -> tuple[Any, Any, Any, Evaluator]:
    """Problem, optimiser, termination and evaluator; every configuration error surfaces here, before a
    folder or a store is touched."""
    return cfg.build_problem(), cfg.build_optimizer(), cfg.build_termination(), build_evaluator(cfg)


def _calibrate_in(
    out_dir: Path,
    cfg: RunConfig,
    built: tuple[Any, Any, Any, Evaluator],
    *,
    run_name: str,
    resume: bool,
    progress: ProgressHook | None,
    plots: bool | None,
    t0: float,
) -> RunRecord:
    problem, optimizer, termination, evaluator = built
    run_log = None
    if isinstance(evaluator, DaskEvaluator):
        # lost workers, resubmitted simulations and jobs at their walltime: in jobs.json (counted by `show`)
        # and in run.log; a cluster kind's job ids as submitted, so that resume cancels a killed run's jobs
        evaluator.record_to(out_dir)
        run_log = _log_to(out_dir / RUN_LOG)
    try:
        with RunStore(out_dir / STORE_FILE) as store:
            done, best = 0, math.inf
            if resume:
                info = store.run(run_name)
                done, best = info.n_evals, info.best_loss
            hook = _progress_hook(progress, termination.max_evals, done, best)
            result = calibrate(
                problem,
                optimizer,
                termination,
                evaluator=evaluator,
                store=store,
                run_name=run_name,
                config=cfg.to_dict(),
                resume=resume,
                on_evaluation=hook,
                **cfg.calibrate_options(),
                progress=False,
            )
            summary = result_summary(result, cfg, store, evaluator, wall=time.perf_counter() - t0)
            best_record = store.best(run_name)
    finally:
        evaluator.close()
        if run_log is not None:
            logging.getLogger("mechcalib").removeHandler(run_log)
            run_log.close()
    _check_steps_at_best(problem, summary.get("best"))
    best_index = None if best_record is None else best_record.idx
    summary["uncertainty"] = folder_uncertainty_brief(out_dir, best_index)  # kept by a resume
    apply_polished_best(summary, read_uncertainty(out_dir), best_index)  # and its polished optimum
    write_json(out_dir / RESULT_FILE, summary)
    written: list[Path] = []
    if cfg.output.plots if plots is None else plots:
        try:
            written = write_report(out_dir, run=run_name, problem=problem, warn_bounds=False)  # said by the run
        except Exception as exc:  # noqa: BLE001 - a plot must not cost a finished calibration
            log.warning("plots of run %r could not be written: %s", run_name, exc)
    return RunRecord(result, summary, out_dir, written)


def _log_to(path: Path) -> logging.Handler:
    """The package's log lines of this run appended to ``path`` (created at the first line), with their time."""
    handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logging.getLogger("mechcalib").addHandler(handler)
    return handler


def _check_steps_at_best(problem: Any, best: dict[str, float] | None) -> None:
    """The model's time-integration step check at the run's best point, warned of when it did not converge
    (:mod:`.steps`): the run's first simulation was checked at a design point, the answer is here."""
    if best is None or not isinstance(problem, Problem):
        return
    try:
        theta = np.array([[best[n] for n in problem.space.names]], dtype=float)
        reports = step_reports(problem.model, problem.experiments, theta, problem.space.names)
    except Exception as exc:  # noqa: BLE001 - a check must not cost a finished calibration
        log.warning("the step check at the best point could not run: %s", exc)
        return
    for r in reports:
        if not r.ok:
            log.warning("at the run's best point, experiment %r: %s", r.experiment, r.message)


def run_config(
    config: RunConfig | str | os.PathLike[str],
    out_dir: str | os.PathLike[str] | None = None,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    budget: int | None = None,
    seed: int | None = None,
    progress: ProgressHook | None = None,
    plots: bool | None = None,
) -> RunRecord:
    """Run a calibration described by a configuration, recording it in ``out_dir``.

    Args:
        config: a :class:`RunConfig` or the path of a TOML file.
        out_dir: the run folder (created); default ``<output.directory>/<name>``. It must not hold a
            run yet (continue one with :func:`resume_run`).
        workers: evaluate in a local process pool of this many workers (instead of the configured evaluator).
        scheduler: evaluate on the dask cluster of this scheduler address.
        budget: the maximum number of evaluations (overrides ``budget.max_evals``).
        seed: the optimiser seed (overrides ``seed``).
        progress: a :data:`ProgressHook`.
        plots: write the report plots at the end (default: the configuration's ``output.plots``).

    The configuration stored with the run has the overrides applied, and with ``out_dir`` its
    ``output.directory`` is the folder holding ``out_dir`` as given (:func:`output_as_given`); ``run.json``
    records the overrides, the file's path and ``out`` (``out_dir`` as given, ``null`` without). Returns a :class:`RunRecord`; ``result.json`` holds its ``summary``.
    """
    t0 = time.perf_counter()
    cfg = config if isinstance(config, RunConfig) else load_config(Path(config))
    ov = cli_overrides(budget=budget, seed=seed, workers=workers, scheduler=scheduler, timeout=cfg.evaluator.timeout)
    cfg = apply_overrides(cfg, ov)
    out = Path(out_dir) if out_dir is not None else Path(cfg.output.directory) / cfg.name
    cfg = output_as_given(cfg, out_dir)  # the stored configuration records --out's folder as given
    if out.exists() and not out.is_dir():
        raise RunDirError(f"--out {str(out)!r} is a file, not a folder")
    if not locked_by_another(out):
        _refuse_taken(out)  # early, before building; the check that decides is made under the lock
    built = _build(cfg)
    try:
        fixed = _fixed_at_start(cfg, built[1], built[3])
        out.mkdir(parents=True, exist_ok=True)
        with folder_lock(out):
            _refuse_taken(out)
            write_json(
                out / MANIFEST_FILE,
                {
                    "run_name": cfg.name,
                    "config_path": cfg.source,
                    "out": None if out_dir is None else os.fspath(out_dir),
                    "overrides": ov,
                    **fixed,
                    "store": STORE_FILE,
                    "created": now(),
                },
            )
            return _calibrate_in(
                out, cfg, built, run_name=cfg.name, resume=False, progress=progress, plots=plots, t0=t0
            )
    except BaseException:
        built[3].close()  # the evaluator, when the run never reached it
        raise


def _fixed_at_start(cfg: RunConfig, optimizer: Any, evaluator: Evaluator) -> dict[str, Any]:
    """The settings a run fixes when it starts, recorded in ``run.json``: ``seed`` (drawn once when the
    configuration gives none, so that every run can be repeated) and, for an optimiser with a ``batch_size``
    (``auto``, least squares) that the configuration leaves out, ``batch_size``: the evaluator's workers (1 when serial; the
    configured ``workers`` for a cluster that does not say)."""
    fixed: dict[str, Any] = {}
    if optimizer.seed is None:
        optimizer.seed = int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(optimizer.seed, int):
        fixed["seed"] = optimizer.seed
    if hasattr(optimizer, "batch_size") and "batch_size" not in cfg.optimizer.settings:
        try:
            slots = int(evaluator.n_workers)
        except Exception:  # noqa: BLE001 - a cluster that cannot say yet: the configured workers
            slots = int(cfg.evaluator.workers or 1)
        optimizer.batch_size = max(1, slots)
        fixed["batch_size"] = optimizer.batch_size
        budget = cfg.budget.max_evals
        if budget is not None and optimizer.batch_size > budget:  # refused before the folder is made
            raise ConfigurationError(
                f"{optimizer.name}: batch_size={optimizer.batch_size} (the evaluator's workers) is larger than the "
                f"budget max_evals={budget}: not one round fits; raise max_evals to at least "
                f"{optimizer.batch_size} or run on fewer workers (--workers)"
            )
    return fixed


def _fixed_on_resume(man: dict[str, Any], optimizer: Any, info: Any = None) -> None:
    """A resume keeps the ``batch_size`` and seed its run started with (``run.json``; the store's record of the
    run, ``info``, where ``run.json`` was lost), whatever the workers now: the batches asked, and so the
    result, do not depend on the cluster that finishes the run."""
    stored = dict(getattr(info, "settings", None) or {})
    if isinstance(getattr(info, "seed", None), int):
        stored["seed"] = info.seed
    batch_size = man.get("batch_size", stored.get("batch_size"))
    if batch_size is not None and hasattr(optimizer, "batch_size"):
        optimizer.batch_size = int(batch_size)
    seed = man.get("seed", stored.get("seed"))
    if isinstance(seed, int) and optimizer.seed is None:
        optimizer.seed = seed


def _refuse_taken(out: Path) -> None:
    """Refuse a folder whose store already holds a run."""
    if (out / STORE_FILE).exists():
        with RunStore(out / STORE_FILE, readonly=True) as st:
            runs = st.runs()
        if runs:
            r = runs[-1]
            raise RunDirError(
                f"{str(out)!r} already holds run {r.name!r} ({r.status}, {r.n_evals} evaluations); continue it with "
                f"`mechcalib resume {out}` or give another folder with --out"
            )


def resume_run(
    out_dir: str | os.PathLike[str],
    *,
    budget: int | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    run: str | None = None,
    config: str | os.PathLike[str] | None = None,
    progress: ProgressHook | None = None,
    plots: bool | None = None,
    accept_loss: bool = False,
) -> RunRecord:
    """Continue a stored run (interrupted, killed or finished) and rewrite ``result.json``.

    No stored evaluation is simulated again; a seeded run ends with exactly the result of an uninterrupted
    one. A folder whose store lacks evaluations that its counts file or ``result.json`` record as stored (a
    deleted write-ahead log, an emptied or replaced store) is refused with their count
    (:class:`~mechcalib.storage.integrity.EvaluationsLostError`) before anything is simulated, unless
    ``accept_loss``: they are then simulated again. ``budget`` sets a new maximum number of evaluations (the total, at least the evaluations already
    stored) and is recorded for later resumes; ``workers``/``scheduler`` choose where the remaining
    evaluations run (default: the stored evaluator); ``config``: see :func:`load_run_config`.
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    folder = out if out.is_dir() and (out / MANIFEST_FILE).is_file() else store_path(out).parent
    with folder_lock(folder):  # before run.json is touched: a refused resume changes nothing
        check_loss(out, run, accept_loss)
        cancel_recorded_jobs(folder)  # jobs of a killed cluster run still queued or running
        return _resume_locked(
            out,
            t0,
            budget=budget,
            workers=workers,
            scheduler=scheduler,
            run=run,
            config=config,
            progress=progress,
            plots=plots,
        )


def _resume_locked(
    out: Path,
    t0: float,
    *,
    budget: int | None,
    workers: int | None,
    scheduler: str | None,
    run: str | None,
    config: str | os.PathLike[str] | None,
    progress: ProgressHook | None,
    plots: bool | None,
) -> RunRecord:
    man = read_manifest(out)
    if run is None and out.is_dir() and man.get("config_path") and not _holds_a_run(out / STORE_FILE):
        # killed before its run was recorded (nothing was computed): start it as `run` would have
        log.warning("the run in %s was stopped before it was recorded; starting it from %s", out, man["config_path"])
        cfg = apply_overrides(load_config(Path(config or man["config_path"])), man.get("overrides") or {})
        ov = cli_overrides(
            budget=budget, seed=None, workers=workers, scheduler=scheduler, timeout=cfg.evaluator.timeout
        )
        cfg = output_as_given(apply_overrides(cfg, ov), man.get("out"))
        built = _build(cfg)
        _fixed_on_resume(man, built[1])
        return _calibrate_in(out, cfg, built, run_name=cfg.name, resume=False, progress=progress, plots=plots, t0=t0)
    with RunStore(store_path(out), readonly=True) as store:
        if store.damage:  # writing more into a damaged file risks the rows still readable
            raise StoreDamagedError(
                f"the run store {store.path} is damaged ({'; '.join(store.damage[:3])}), so it is not resumed; "
                f"{repair_hint(store.path)}"
            )
        name = run_name_in(store, out, run)
        info = store.run(name)
        n_done = info.n_evals
    if info.compacted:
        raise RunDirError(
            f"run {name!r} in {out / STORE_FILE} was compacted (only its improvements and failures are kept), so it "
            "cannot be resumed: its replay would be incomplete; start a new run in another folder instead"
        )
    cfg = load_run_config(out, run=name, config=config)
    if budget is not None and not isinstance(budget, bool) and isinstance(budget, int) and budget < n_done:
        raise ConfigurationError(
            f"budget {budget} is below the {n_done} evaluations run {name!r} already holds; give a budget >= {n_done}"
        )
    ov = cli_overrides(budget=budget, seed=None, workers=workers, scheduler=scheduler, timeout=cfg.evaluator.timeout)
    cfg = output_as_given(apply_overrides(cfg, ov), man.get("out"))
    built = _build(cfg)
    if config is None:
        cfg, built = _as_fingerprinted(out, info.fingerprint, cfg, built, ov)
    _fixed_on_resume(man, built[1], info)
    if ov:
        man = read_manifest(out)
        man.setdefault("run_name", name)
        man["overrides"] = {**(man.get("overrides") or {}), **ov}
        write_json(out / MANIFEST_FILE, man)
    return _calibrate_in(out, cfg, built, run_name=name, resume=True, progress=progress, plots=plots, t0=t0)


def _holds_a_run(path: Path) -> bool:
    if not path.is_file():
        return False
    with RunStore(path, readonly=True) as store:
        return bool(store.runs())


def _as_fingerprinted(
    out: Path, fingerprint: str | None, cfg: RunConfig, built: tuple[Any, Any, Any, Evaluator], ov: dict[str, Any]
) -> tuple[RunConfig, tuple[Any, Any, Any, Evaluator]]:
    """A store written before fingerprints sorted mappings' keys holds the hash of the problem with its
    keys (a ``conditions`` table) in the order of the file, while the stored configuration sorts them: when
    only the file named in ``run.json`` gives the stored fingerprint, resume from that file (the same
    problem, with the recorded overrides)."""
    problem = built[0]
    if fingerprint is None or fingerprint in (problem_fingerprint(problem), *earlier_fingerprints(problem)):
        return cfg, built
    man = read_manifest(out)
    path = man.get("config_path")
    if not isinstance(path, str) or not Path(path).is_file():
        return cfg, built
    try:
        alt = output_as_given(
            apply_overrides(apply_overrides(load_config(path), man.get("overrides") or {}), ov), man.get("out")
        )
        alt_problem = alt.build_problem()
    except ConfigurationError:
        return cfg, built
    if fingerprint not in earlier_fingerprints(alt_problem):
        return cfg, built  # another problem indeed: the run session says so
    built[3].close()
    return alt, (alt_problem, alt.build_optimizer(), alt.build_termination(), build_evaluator(alt))


def cancel_jobs(out_dir: str | os.PathLike[str]) -> list[str]:
    """Cancel the batch-scheduler jobs a stopped cluster run left behind (``jobs.json``), under the folder's
    lock, so that the jobs of a run still going are never touched; the ids cancelled."""
    out = Path(out_dir)
    if not out.is_dir():
        raise RunDirError(f"{str(out)!r} is not a run folder")
    with folder_lock(out):
        return cancel_recorded_jobs(out)
