"""A run's configuration: the command-line overrides (budget, seed, evaluator) as configuration sections,
the evaluator a configuration describes, and the configuration of a stored run.

The configuration stored with a run is :meth:`RunConfig.to_dict` with the overrides applied, so a resume
rebuilds exactly the run that was started; when that stored form can no longer be validated (a data file
moved, an older schema) the original file named in ``run.json`` is read instead, with the same overrides.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

from ..config import ConfigFileError, RunConfig, load_config
from ..config.schema import CLUSTER_KEYS, CLUSTER_KINDS
from ..errors import ConfigurationError
from ..execution import Evaluator, make_evaluator
from ..storage import RunStore
from .folder import MANIFEST_FILE, RunDirError, read_manifest, run_name_in, store_path

log = logging.getLogger(__name__)

__all__ = ["apply_overrides", "build_evaluator", "cli_overrides", "load_run_config", "output_as_given"]


def output_as_given(cfg: RunConfig, out: str | os.PathLike[str] | None) -> RunConfig:
    """``cfg`` as stored with a run started with ``--out OUT``: ``output.directory`` is the folder holding the
    run folder, as the user gave it (a relative ``--out`` stays relative, to the folder the command ran in),
    not the default resolved against the configuration's folder, where the run is not. ``None``: unchanged."""
    if out is None:
        return cfg
    parent = str(PurePath(os.fspath(out)).parent)
    return cfg.model_copy(update={"output": cfg.output.model_copy(update={"directory": parent})})


def cli_overrides(
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


def apply_overrides(cfg: RunConfig, overrides: Mapping[str, Any]) -> RunConfig:
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
    return RunConfig.from_dict(data, source=cfg.source, check=False)


def build_evaluator(cfg: RunConfig) -> Evaluator:
    """The evaluator the configuration's ``[evaluator]`` section describes."""
    e = cfg.evaluator
    if e.kind == "serial":
        return make_evaluator("serial", timeout=e.timeout)
    if e.kind == "pool":
        return make_evaluator("pool", n_workers=e.workers, timeout=e.timeout)
    if e.kind in CLUSTER_KINDS:
        from ..execution.jobqueue import JobQueueEvaluator

        keys = (*CLUSTER_KEYS, "timeout", "ship_code")
        return JobQueueEvaluator(e.kind, **{k: getattr(e, k) for k in keys})
    opts: dict[str, Any] = {"address": e.scheduler, "timeout": e.timeout, "ship_code": e.ship_code}
    if e.workers is not None:
        opts["n_workers"] = e.workers
    return make_evaluator("dask", **opts)


def load_run_config(
    out_dir: str | os.PathLike[str], *, run: str | None = None, config: str | os.PathLike[str] | None = None
) -> RunConfig:
    """The configuration of a stored run: the form stored with the run, else (when that no longer
    validates, or is absent) the original file named in ``run.json`` with the recorded overrides. ``config``
    names a file to use instead (with the recorded overrides), e.g. when the project folder moved."""
    out = Path(out_dir)
    with RunStore(store_path(out), readonly=True) as store:
        name = run_name_in(store, out, run)
        stored = store.config(name)
    man = read_manifest(out)
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
        cfg = load_config(Path(path))
    except ConfigFileError as exc:
        errors.append(str(exc))
        raise RunDirError("cannot rebuild the run's configuration:\n" + "\n".join(errors)) from None
    if errors:
        log.warning("%s; using %s", errors[0], path)
    return apply_overrides(cfg, overrides)
