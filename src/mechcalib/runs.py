"""Calibration runs kept in a folder: what the ``run``, ``resume``, ``show``, ``export`` and ``report``
commands do, callable from Python.

A run folder holds::

    store.sqlite    the run store: every evaluation, optimiser checkpoints, the run's configuration
    run.json        how the run was started: run name, configuration file, command-line overrides
    result.json     written when the run ends (see :func:`result_summary` for the fields)
    run.lock        locked (``flock``) by the one process running or resuming there (:func:`folder_lock`)
    *.png           plots (:func:`write_report`)

The configuration stored with the run is :meth:`RunConfig.to_dict` with the overrides applied (budget, seed,
evaluator), so :func:`resume_run` rebuilds exactly the run that was started; when that stored form can no
longer be validated (a data file moved, an older schema) the original file named in ``run.json`` is read
instead, with the same overrides. Example::

    from mechcalib.runs import run_config, resume_run, run_summary
    rec = run_config("examples/linear.toml", "runs/linear", budget=100, seed=1)
    rec.summary["best"], rec.summary["best_loss"]
    rec = resume_run("runs/linear", budget=200)          # continue to 200 evaluations
    run_summary("runs/linear")["n_evaluations"]          # 200
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import math
import os
import secrets
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from .calibrate import Result, calibrate
from .config import ConfigFileError, RunConfig, load_config
from .errors import ConfigurationError, MissingExtraError
from .execution import Evaluator, make_evaluator
from .runfolder import LOCK_FILE, RunDirError, folder_lock, locked_by_another
from .storage import RunStore, Store
from .storage.codec import earlier_fingerprints, problem_fingerprint, to_jsonable
from .storage.export import evaluation_columns
from .storage.integrity import StoreDamagedError, repair_hint
from .storage.repair import RepairReport, repair_store

log = logging.getLogger(__name__)

STORE_FILE = "store.sqlite"
RESULT_FILE = "result.json"
MANIFEST_FILE = "run.json"

#: ``progress(done, total, best)``: evaluations done, the evaluation budget (``None``: no ``max_evals``), the
#: best loss so far; called once when the run starts and after every evaluation.
ProgressHook = Callable[[int, "int | None", float], Any]

__all__ = [
    "LOCK_FILE",
    "MANIFEST_FILE",
    "RESULT_FILE",
    "STORE_FILE",
    "RunDirError",
    "RunRecord",
    "build_evaluator",
    "export_run",
    "folder_lock",
    "load_run_config",
    "repair_run",
    "resume_run",
    "run_config",
    "run_summary",
    "write_report",
]


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


# ------------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------------
def _clean(v: Any) -> Any:
    """JSON-compatible, with non-finite floats as ``None`` (strict JSON has no inf/NaN)."""
    v = to_jsonable(v)
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def _write_json(path: Path, data: Mapping[str, Any]) -> Path:
    """Write atomically (a reader never sees half a file), through a temporary file of this process only."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        tmp.write_text(json.dumps(_clean(data), indent=2, allow_nan=False) + "\n")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return path


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _store_path(out_dir: str | os.PathLike[str]) -> Path:
    """The run store of a run folder, or ``out_dir`` itself when it names a store file (one written from
    Python, ``calibrate(..., store="x.sqlite")``: no ``run.json`` beside it, outputs go to its folder)."""
    out = Path(out_dir)
    if out.is_file():
        return out
    if not out.is_dir():
        raise RunDirError(f"no run folder {str(out)!r}; give the folder of a run (`mechcalib run CONFIG --out DIR`)")
    path = out / STORE_FILE
    if not path.is_file():
        raise RunDirError(
            f"{str(out)!r} holds no run store ({STORE_FILE}); give the folder of a run "
            "(`mechcalib run CONFIG --out DIR`)"
        )
    return path


def _manifest(out_dir: Path) -> dict[str, Any]:
    path = out_dir / MANIFEST_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        log.warning("cannot read %s (%s); ignoring it", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def _run_name(store: Store, out_dir: Path, run: str | None) -> str:
    """The run to act on: ``run``, else the one named in ``run.json``, else the store's latest."""
    if run is not None:
        store.run(run)  # raises with the list of runs
        return run
    name = _manifest(out_dir).get("run_name")
    if isinstance(name, str) and store.has_run(name):
        return name
    runs = store.runs()
    if not runs:
        raise RunDirError(f"the store {store.path} holds no run yet")
    return runs[-1].name


def _overrides(
    *, budget: int | None, seed: int | None, workers: int | None, scheduler: str | None, timeout: float | None
) -> dict[str, Any]:
    """Command-line overrides as config sections (only those given)."""
    if workers is not None and scheduler is not None:
        raise ConfigurationError("give either workers (a local process pool) or scheduler (a dask cluster), not both")
    for k, v in (("budget", budget), ("workers", workers)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ConfigurationError(f"{k} must be an integer >= 1, got {v!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ConfigurationError(f"seed must be an integer >= 0, got {seed!r}")
    out: dict[str, Any] = {}
    if budget is not None:
        out["max_evals"] = budget
    if seed is not None:
        out["seed"] = seed
    if workers is not None:
        out["evaluator"] = {"kind": "pool", "workers": workers, "scheduler": None, "timeout": timeout}
    elif scheduler is not None:
        out["evaluator"] = {"kind": "dask", "workers": None, "scheduler": scheduler, "timeout": timeout}
    return out


def _apply(cfg: RunConfig, overrides: Mapping[str, Any]) -> RunConfig:
    """``cfg`` with overrides (``max_evals``, ``seed``, ``evaluator``) applied and validated again."""
    if not overrides:
        return cfg
    data = copy.deepcopy(cfg.to_dict())
    if "max_evals" in overrides:
        data["budget"]["max_evals"] = overrides["max_evals"]
    if "seed" in overrides:
        data["seed"] = overrides["seed"]
    if "evaluator" in overrides:
        data["evaluator"] = dict(overrides["evaluator"])
    out = RunConfig.from_dict(data, source=cfg.source, check=False)
    return out


def build_evaluator(cfg: RunConfig) -> Evaluator:
    """The evaluator the configuration's ``[evaluator]`` section describes."""
    e = cfg.evaluator
    if e.kind == "serial":
        return make_evaluator("serial", timeout=e.timeout)
    if e.kind == "pool":
        return make_evaluator("pool", n_workers=e.workers, timeout=e.timeout)
    opts: dict[str, Any] = {"address": e.scheduler, "timeout": e.timeout}
    if e.workers is not None:
        opts["n_workers"] = e.workers
    return make_evaluator("dask", **opts)


def _progress_hook(progress: ProgressHook | None, total: int | None, done: int, best: float):
    if progress is None:
        return None
    state = {"done": done, "best": best}
    progress(done, total, best)

    def on_evaluation(idx: int, batch: int, outcome: Any) -> None:
        state["done"] = max(state["done"], idx + 1)
        if outcome.loss < state["best"]:
            state["best"] = float(outcome.loss)
        progress(state["done"], total, state["best"])

    return on_evaluation


# ------------------------------------------------------------------------------------------------------
# Run, resume
# ------------------------------------------------------------------------------------------------------
def result_summary(
    result: Result, cfg: RunConfig, store: Store, evaluator: Evaluator, *, wall: float
) -> dict[str, Any]:
    """The ``result.json`` content.

    Keys: ``run_name``, ``status``, ``name`` (the configuration's), ``model``, ``optimizer``, ``settings``,
    ``seed`` (the seed the run used, drawn and recorded when the configuration gives none), ``best``
    (every parameter by name, fixed ones included; ``null`` when every evaluation failed), ``best_loss``
    (``null`` when every evaluation failed), ``last_error`` (the last failure's message, ``null`` without),
    ``n_evaluations``, ``n_failed``, ``failures`` (count by status), ``n_batches``, ``stop_reason``,
    ``alternatives`` (``[{"params", "loss"}]``, best first), ``choices`` (the method's recorded decisions,
    e.g. ``auto``'s design, starts, fallback rule and phase boundaries; ``[]`` for methods that record none),
    ``n_simulated``/``n_cached``/``n_replayed``
    (of the last invocation: a resume that recomputes nothing has ``n_simulated == 0``), ``budget``,
    ``evaluator``, ``timings`` (``wall_seconds`` and ``calibrate_seconds`` of the last invocation,
    ``simulation_seconds`` summed over the simulation calls of the run (sets simulated together count once), ``mean_simulation_seconds``,
    ``created``/``updated`` of the run), ``config_path``, ``store``, ``versions``, ``written``; ``uncertainty``
    (added by the caller: the intervals of ``mechcalib uncertainty``, ``stale`` once the best has moved).
    """
    info = store.run(result.run_name)
    # totals from the store's exact counters, right for a compacted run too (failures are always kept)
    fails = store.failures(info.id)
    timing = store.timing(info.id)
    n_live = int(timing["n_live"])
    # without one successful evaluation the optimiser's best is a failure's penalty, not a result
    none_ok = info.n_failed >= info.n_evals
    return {
        "run_name": result.run_name,
        "status": info.status,
        "name": cfg.name,
        "model": cfg.model.name if cfg.model.name is not None else cfg.model.external.name,
        "optimizer": result.optimizer,
        "settings": result.settings,
        "seed": info.seed,
        "best": None if none_ok else result.best_params,
        "best_loss": None if none_ok or not math.isfinite(result.best_loss) else result.best_loss,
        "last_error": fails[-1].error if fails else None,
        "n_evaluations": result.n_evals,
        "n_failed": result.n_failed,
        "failures": dict(Counter(r.status for r in fails)),
        "n_batches": result.n_batches,
        "stop_reason": result.stop_reason,
        "alternatives": [{"params": p, "loss": f} for p, f in result.alternatives],
        "choices": result.choices,
        "n_simulated": result.n_simulated,
        "n_cached": result.n_cached,
        "n_replayed": result.n_replayed,
        "budget": cfg.budget.model_dump(),
        "evaluator": evaluator.describe(),
        "timings": {
            "wall_seconds": wall,
            "calibrate_seconds": result.seconds,
            "simulation_seconds": float(timing["seconds"]),
            "mean_simulation_seconds": float(timing["seconds"]) / n_live if n_live else None,
            "created": info.created,
            "updated": info.updated,
        },
        "config_path": cfg.source,
        "store": STORE_FILE,
        "versions": info.versions,
        "written": _now(),
    }


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
            )
            summary = result_summary(result, cfg, store, evaluator, wall=time.perf_counter() - t0)
            best = store.best(run_name)
    finally:
        evaluator.close()
    summary["uncertainty"] = _uncertainty_brief(out_dir, None if best is None else best.idx)  # kept by a resume
    _write_json(out_dir / RESULT_FILE, summary)
    written: list[Path] = []
    if cfg.output.plots if plots is None else plots:
        try:
            written = write_report(out_dir, run=run_name, problem=problem)
        except Exception as exc:  # noqa: BLE001 - a plot must not cost a finished calibration
            log.warning("plots of run %r could not be written: %s", run_name, exc)
    return RunRecord(result, summary, out_dir, written)


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

    The configuration stored with the run has the overrides applied; ``run.json`` records them with the
    file's path. Returns a :class:`RunRecord`; ``result.json`` holds its ``summary``.
    """
    t0 = time.perf_counter()
    cfg = config if isinstance(config, RunConfig) else load_config(config)
    ov = _overrides(budget=budget, seed=seed, workers=workers, scheduler=scheduler, timeout=cfg.evaluator.timeout)
    cfg = _apply(cfg, ov)
    out = Path(out_dir) if out_dir is not None else Path(cfg.output.directory) / cfg.name
    if out.exists() and not out.is_dir():
        raise RunDirError(f"--out {str(out)!r} is a file, not a folder")
    if not locked_by_another(out):
        _refuse_taken(out)  # early, before building; the check that decides is made under the lock
    built = _build(cfg)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with folder_lock(out):
            _refuse_taken(out)
            _write_json(
                out / MANIFEST_FILE,
                {
                    "run_name": cfg.name,
                    "config_path": cfg.source,
                    "overrides": ov,
                    "store": STORE_FILE,
                    "created": _now(),
                },
            )
            return _calibrate_in(
                out, cfg, built, run_name=cfg.name, resume=False, progress=progress, plots=plots, t0=t0
            )
    except BaseException:
        built[3].close()  # the evaluator, when the run never reached it
        raise


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


def load_run_config(
    out_dir: str | os.PathLike[str], *, run: str | None = None, config: str | os.PathLike[str] | None = None
) -> RunConfig:
    """The configuration of a stored run: the form stored with the run, else (when that no longer
    validates, or is absent) the original file named in ``run.json`` with the recorded overrides. ``config``
    names a file to use instead (with the recorded overrides), e.g. when the project folder moved."""
    out = Path(out_dir)
    with RunStore(_store_path(out), readonly=True) as store:
        name = _run_name(store, out, run)
        stored = store.config(name)
    man = _manifest(out)
    overrides = man.get("overrides") or {}
    errors: list[str] = []
    if config is None and isinstance(stored, dict):
        try:
            return RunConfig.from_dict(stored, source=man.get("config_path"))
        except ConfigFileError as exc:
            errors.append(f"the configuration stored with run {name!r} is no longer valid: {exc}")
    path = config if config is not None else man.get("config_path")
    if path is None:
        errors.append(f"run {name!r} stores no configuration and {MANIFEST_FILE} names no configuration file")
        raise RunDirError("; ".join(errors) + "; give the configuration file with --config FILE")
    try:
        cfg = load_config(path)
    except ConfigFileError as exc:
        errors.append(str(exc))
        raise RunDirError("cannot rebuild the run's configuration:\n" + "\n".join(errors)) from None
    if errors:
        log.warning("%s; using %s", errors[0], path)
    return _apply(cfg, overrides)


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
) -> RunRecord:
    """Continue a stored run (interrupted, killed or finished) and rewrite ``result.json``.

    No stored evaluation is simulated again; a seeded run ends with exactly the result of an uninterrupted
    one. ``budget`` sets a new maximum number of evaluations (the total, at least the evaluations already
    stored) and is recorded for later resumes; ``workers``/``scheduler`` choose where the remaining
    evaluations run (default: the stored evaluator); ``config``: see :func:`load_run_config`.
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    folder = out if out.is_dir() and (out / MANIFEST_FILE).is_file() else _store_path(out).parent
    with folder_lock(folder):  # before run.json is touched: a refused resume changes nothing
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
    man = _manifest(out)
    if run is None and out.is_dir() and man.get("config_path") and not _holds_a_run(out / STORE_FILE):
        # killed before its run was recorded (nothing was computed): start it as `run` would have
        log.warning("the run in %s was stopped before it was recorded; starting it from %s", out, man["config_path"])
        cfg = _apply(load_config(config or man["config_path"]), man.get("overrides") or {})
        ov = _overrides(budget=budget, seed=None, workers=workers, scheduler=scheduler, timeout=cfg.evaluator.timeout)
        cfg = _apply(cfg, ov)
        return _calibrate_in(
            out, cfg, _build(cfg), run_name=cfg.name, resume=False, progress=progress, plots=plots, t0=t0
        )
    with RunStore(_store_path(out), readonly=True) as store:
        if store.damage:  # writing more into a damaged file risks the rows still readable
            raise StoreDamagedError(
                f"the run store {store.path} is damaged ({'; '.join(store.damage[:3])}), so it is not resumed; "
                f"{repair_hint(store.path)}"
            )
        name = _run_name(store, out, run)
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
    ov = _overrides(budget=budget, seed=None, workers=workers, scheduler=scheduler, timeout=cfg.evaluator.timeout)
    cfg = _apply(cfg, ov)
    built = _build(cfg)
    if config is None:
        cfg, built = _as_fingerprinted(out, info.fingerprint, cfg, built, ov)
    if ov:
        man = _manifest(out)
        man.setdefault("run_name", name)
        man["overrides"] = {**(man.get("overrides") or {}), **ov}
        _write_json(out / MANIFEST_FILE, man)
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
    man = _manifest(out)
    path = man.get("config_path")
    if not isinstance(path, str) or not Path(path).is_file():
        return cfg, built
    try:
        alt = _apply(_apply(load_config(path), man.get("overrides") or {}), ov)
        alt_problem = alt.build_problem()
    except ConfigurationError:
        return cfg, built
    if fingerprint not in earlier_fingerprints(alt_problem):
        return cfg, built  # another problem indeed: the run session says so
    built[3].close()
    return alt, (alt_problem, alt.build_optimizer(), alt.build_termination(), build_evaluator(alt))


def repair_run(path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> RepairReport:
    """Salvage a damaged run store (:func:`~mechcalib.storage.repair.repair_store`). ``path``: a run folder
    (the salvage is a new run folder, default ``<path>.repaired``, holding the salvaged store and a copy of
    ``run.json``, ready for :func:`resume_run`) or a store file (default ``<stem>.repaired.sqlite``)."""
    src = Path(path)
    if src.is_dir():
        dest = Path(out) if out is not None else src.with_name(src.name + ".repaired")
        if dest.exists():
            raise RunDirError(f"{str(dest)!r} exists; give a new folder with --out")
        dest.mkdir(parents=True)
        try:
            report = repair_store(_store_path(src), dest / STORE_FILE)
        except BaseException:
            import shutil

            shutil.rmtree(dest, ignore_errors=True)
            raise
        if (src / MANIFEST_FILE).is_file():
            _write_json(dest / MANIFEST_FILE, _manifest(src) | {"repaired_from": str(src), "created": _now()})
        report.target = dest
        return report
    dest = Path(out) if out is not None else src.with_name(f"{src.stem}.repaired{src.suffix or '.sqlite'}")
    return repair_store(src, dest)


# ------------------------------------------------------------------------------------------------------
# Show, export, report
# ------------------------------------------------------------------------------------------------------
def run_summary(out_dir: str | os.PathLike[str], *, run: str | None = None, n_failures: int = 5) -> dict[str, Any]:
    """A stored run's state, read while it may still be running (the store is opened read-only).

    Keys: ``run_name``, ``status`` (``running``, ``finished``, ``interrupted``, ``failed``), ``stop_reason``,
    ``error``, ``optimizer``, ``seed``, ``n_evaluations``, ``n_failed``, ``failures`` (count by status),
    ``recent_failures`` (the last ``n_failures``: ``idx``, ``status``, ``error``), ``best`` (every parameter
    of the best ok evaluation by name, ``null`` when none succeeded), ``best_loss``, ``best_index``,
    ``budget`` (the termination rules), ``n_batches``, ``created``, ``updated``, ``store``, ``result``
    (the ``result.json`` path when written), ``damage`` (the integrity check's complaints: ``[]`` when the
    store is sound, ``null`` when it was too large to check quickly), ``uncertainty`` (per parameter ``best``,
    ``lower``, ``upper``, ``std``, ``method`` after ``mechcalib uncertainty``; ``null`` before).
    """
    out = Path(out_dir)
    spath = _store_path(out)
    with RunStore(spath, readonly=True) as store:
        name = _run_name(store, out, run)
        info = store.run(name)
        fails = store.failures(name)
        best = store.best(name)
        damage = store.damage
    params = None
    if best is not None:
        params = {p["name"]: (p["fixed"] if p.get("fixed") is not None else best.params[p["name"]]) for p in info.space}
    return _clean(
        {
            "run_name": info.name,
            "status": info.status,
            "stop_reason": info.stop_reason,
            "error": info.error,
            "optimizer": info.optimizer,
            "seed": info.seed,
            "n_evaluations": info.n_evals,
            "n_failed": info.n_failed,
            "failures": dict(Counter(r.status for r in fails)),
            "recent_failures": [{"idx": r.idx, "status": r.status, "error": r.error} for r in fails[-n_failures:]]
            if n_failures
            else [],
            "best": params,
            "best_loss": best.loss if best is not None else None,
            "best_index": best.idx if best is not None else None,
            "budget": info.termination,
            "n_batches": info.n_batches,
            "created": info.created,
            "updated": info.updated,
            "store": str(spath),
            "result": str(out / RESULT_FILE) if (out / RESULT_FILE).is_file() else None,
            "damage": damage,
            "uncertainty": _uncertainty_brief(out, best.idx if best is not None else None),
        }
    )


def _uncertainty_brief(out: Path, best_index: int | None) -> dict[str, Any] | None:
    """The intervals of ``mechcalib uncertainty`` when it was run in the folder (``uncertainty.json``)."""
    from .uncertainty.folder import brief, read_uncertainty

    data = read_uncertainty(out)
    return None if data is None else brief(data, best_index=best_index)


def _parquet_engine() -> None:
    import importlib.util

    missing = [m for m in ("pandas",) if importlib.util.find_spec(m) is None]
    if importlib.util.find_spec("pyarrow") is None and importlib.util.find_spec("fastparquet") is None:
        missing.append("pyarrow")
    if missing:
        raise MissingExtraError(
            f"Parquet export needs {' and '.join(missing)}, which is not installed; install it with "
            f"`pip install 'mechcalib[parquet]'` (pandas and pyarrow), or export CSV (format 'csv')"
        )


def export_run(
    out_dir: str | os.PathLike[str],
    *,
    path: str | os.PathLike[str] | None = None,
    fmt: str = "csv",
    dataset: str | os.PathLike[str] | None = None,
    include_failed: bool = False,
    run: str | None = None,
) -> dict[str, Any]:
    """Write a run's evaluations as a table, and optionally its dataset for surrogate training.

    Args:
        path: the table file (default ``<out_dir>/evaluations.csv`` or ``.parquet``); columns as
            :meth:`RunStore.export_csv`.
        fmt: ``"csv"`` or ``"parquet"`` (needs pandas with pyarrow or fastparquet).
        dataset: an ``.npz`` file for :meth:`RunStore.dataset` (parameters, losses and, when the run kept
            them (``output.keep_responses``), the simulated responses).
        include_failed: keep failed evaluations in the dataset.

    Returns ``{"table": path, "rows": n, "dataset": path or None, "dataset_rows": n, "responses": [keys]}``.
    A compacted run (:meth:`RunStore.compact_run`) exports its kept rows only (``rows`` counts them) and
    gives no dataset.
    """
    if fmt not in ("csv", "parquet"):
        raise ConfigurationError(f"export format must be 'csv' or 'parquet', got {fmt!r}")
    if fmt == "parquet":
        _parquet_engine()
    out = Path(out_dir)
    spath = _store_path(out)
    with RunStore(spath, readonly=True) as store:
        name = _run_name(store, out, run)
        table = Path(path) if path is not None else spath.parent / f"evaluations.{fmt}"
        if fmt == "csv":
            store.export_csv(name, table)
            info = store.run(name)
            rows = info.n_evals - info.n_dropped  # the rows stored (and written)
        else:
            import pandas as pd

            cols = evaluation_columns(store, name)
            table.parent.mkdir(parents=True, exist_ok=True)
            pd.DataFrame(cols).to_parquet(table, index=False)
            rows = len(cols["idx"])
        res: dict[str, Any] = {"table": table, "rows": rows, "dataset": None, "dataset_rows": 0, "responses": []}
        if dataset is not None:
            data = store.dataset(name, include_failed=include_failed)
            dpath = Path(dataset)
            if dpath.suffix != ".npz":
                dpath = dpath.with_name(dpath.name + ".npz")
            dpath.parent.mkdir(parents=True, exist_ok=True)
            np.savez_compressed(dpath, **data)
            res |= {
                "dataset": dpath,
                "dataset_rows": int(data["X"].shape[0]),
                "responses": sorted(k for k in data if k.startswith("response/")),
            }
    return res


def write_report(
    out_dir: str | os.PathLike[str],
    *,
    run: str | None = None,
    problem: Any = None,
    folder: str | os.PathLike[str] | None = None,
) -> list[Path]:
    """Write ``convergence.png`` (every evaluation's loss and the best so far against the evaluation
    count, log scale) and ``fit_<experiment>.png`` per experiment (measured curves against the best
    parameter set's simulation) into the run folder (or ``folder``: a read-only run's plots go elsewhere);
    returns the files written.

    The fit plots use the stored responses of the best evaluation when the run kept them, else simulate
    the best parameter set once per experiment with the problem rebuilt from the stored configuration
    (or ``problem`` when given). Without a successful evaluation, or when the configuration cannot be
    rebuilt (a run stored from Python without one), only the convergence plot is written, with a warning.
    A compacted run shows its kept evaluations (failures and improvements) at their place; its best-so-far
    line is exact.
    """
    from .reporting import plot_convergence, plot_fits

    out = Path(out_dir)
    spath = _store_path(out)
    folder = spath.parent if folder is None else Path(folder)  # default: the run folder, or a store file's
    folder.mkdir(parents=True, exist_ok=True)
    with RunStore(spath, readonly=True) as store:
        name = _run_name(store, out, run)
        info = store.run(name)
        recs = store.evaluations(info.id)
        idx, _ = store.trace(info.id)
        best = store.best(name, responses=True)
    # every evaluation index: a dropped (non-improving ok) evaluation is a gap (NaN), which leaves the
    # best-so-far line as it was
    losses = np.full(idx.size, np.nan)
    status = ["ok"] * idx.size
    for r in recs:
        losses[r.idx] = r.loss
        status[r.idx] = r.status
    kept = f", {len(recs)} kept" if info.compacted else ""
    title = f"{info.name}: {info.optimizer}, {info.n_evals} evaluations{kept}"
    written = [plot_convergence(losses, folder / "convergence.png", status=status, title=title)]
    if best is None:
        log.warning("run %r has no successful evaluation; no fit plot", name)
        return written
    if problem is None:
        try:
            problem = load_run_config(out, run=name).build_problem()
        except (RunDirError, ConfigFileError) as exc:
            log.warning("no fit plot for run %r: %s", name, exc)
            return written
    x = np.array([best.params[n] for n in problem.space.free_names], dtype=float)
    responses = best.response if isinstance(best.response, Mapping) else None
    label = f"best of run {info.name} (evaluation {best.idx}, loss {best.loss:.4g})"
    written += plot_fits(problem, x, folder, responses=responses, title=label)
    from .uncertainty.folder import write_uncertainty_plots

    # corner plot and bands after `mechcalib uncertainty`
    written += write_uncertainty_plots(folder, problem, source=out)
    return written
