"""Uncertainty of the run in a run folder: what ``mechcalib uncertainty DIR`` does. The folder is resolved
here into a :class:`~mechcalib.uncertainty.CalibratedRun` (its store, its run, the problem rebuilt from its
configuration, its best point) and handed to the library (:func:`mechcalib.uncertainty.analyse`), which
knows nothing of folders.

Files written in the run folder::

    uncertainty.json   :meth:`UncertaintyResult.to_json` plus the polished optimum in the unit cube
    samples.csv        the posterior samples (burn-in removed), one column per free parameter
    samples.npz        ``names``, ``samples`` ``(n, d)``, ``chain_unit`` ``(steps, walkers, d)`` (unit cube),
                       ``log_prob`` ``(steps, walkers)``, ``burn``, ``tau``
    corner.png, band_<experiment>.png   (:func:`~.report.write_uncertainty_plots`, by ``mechcalib report``)

and ``result.json`` gains an ``uncertainty`` entry: per parameter ``best``, ``lower``, ``upper``, ``std`` and
``method``. ``uncertainty.json`` records the run's best evaluation it started from (``source``); once a resumed
run finds a better one, ``show`` and ``result.json`` keep the intervals but mark them ``stale``, naming the
command that brings them up to date.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigurationError, writing
from ..storage import RunStore
from .configuration import build_evaluator, load_run_config
from .folder import (
    RESULT_FILE,
    SAMPLES_CSV,
    SAMPLES_NPZ,
    UNCERTAINTY_FILE,
    folder_lock,
    folder_of,
    run_name_in,
    store_path,
    write_json,
)
from .summary import apply_polished_best, run_summary, uncertainty_brief

if TYPE_CHECKING:
    from ..uncertainty import UncertaintyOptions, UncertaintyResult

__all__ = ["folder_uncertainty", "write_samples"]

log = logging.getLogger(__name__)


def folder_uncertainty(
    out_dir: str | os.PathLike[str],
    *,
    run: str | None = None,
    progress: Callable[[int, int], Any] | None = None,
    **options: Any,
) -> tuple[UncertaintyResult, list[Path]]:
    """Analyse the run of a run folder (or run store file) with its store, configuration and evaluator,
    holding the folder's lock, and write the files of the module docstring; ``options``: the fields of
    :class:`~mechcalib.uncertainty.UncertaintyOptions`. Returns the result and the files written."""
    from ..uncertainty import UncertaintyOptions  # the library (scipy, emcee) is imported on use

    folder = folder_of(out_dir)
    with folder_lock(folder):
        cfg = load_run_config(out_dir, run=run)
        before = run_summary(out_dir, run=run, n_failures=0)
        evaluator = build_evaluator(cfg)
        try:
            problem = cfg.build_problem()
            res = _analyse_folder(Path(out_dir), run, problem, UncertaintyOptions(**options), evaluator, progress)
        finally:
            evaluator.close()
        data = res.to_json() | {"best_unit": res.best_u.tolist(), "covariance_unit": res.local.cov_u.tolist()}
        data["source"] = {k: before.get(k) for k in ("run_name", "best_index", "best_loss", "n_evaluations")}
        if before.get("best_evaluated"):  # show gave an earlier analysis' polished optimum: the evaluation's loss
            data["source"]["best_loss"] = before["best_evaluated"]["loss"]
        written = [write_json(folder / UNCERTAINTY_FILE, data)]
        if res.posterior is not None:
            written += write_samples(res, folder)
        rpath = folder / RESULT_FILE
        if rpath.is_file():
            try:
                summary = json.loads(rpath.read_text())
                if not isinstance(summary, dict):
                    raise ValueError(f"a JSON {type(summary).__name__}, not an object")
            except (OSError, ValueError) as exc:  # the analysis is kept in uncertainty.json all the same
                log.warning(
                    "cannot read %s (%s): it is left as it is and does not name this analysis, which is in %s; "
                    "restore %s from a copy to have both in one file",
                    rpath,
                    exc,
                    UNCERTAINTY_FILE,
                    RESULT_FILE,
                )
                return res, written
            summary["uncertainty"] = uncertainty_brief(data, best_index=before.get("best_index"))
            apply_polished_best(summary, data, before.get("best_index"))
            write_json(rpath, summary)
            written.append(rpath)
    return res, written


def _analyse_folder(
    out: Path,
    run: str | None,
    problem: Any,
    options: UncertaintyOptions,
    evaluator: Any,
    progress: Callable[[int, int], Any] | None,
) -> UncertaintyResult:
    """The analysis of the folder's run from its best evaluation, recorded in the folder's store."""
    from ..uncertainty import CalibratedRun, analyse

    store = RunStore(store_path(out))
    try:
        name = run_name_in(store, out, run)
        best = store.best(name)
        if best is None:
            raise ConfigurationError(f"run {name!r} has no successful evaluation; nothing to analyse")
        target = CalibratedRun(problem=problem, store=store, run_name=name, best_u=np.asarray(best.u, dtype=float))
        return analyse(target, options, evaluator=evaluator, progress=progress)
    finally:
        store.close()


def write_samples(res: UncertaintyResult, folder: Path) -> list[Path]:
    """``samples.csv`` and ``samples.npz`` of a posterior (module docstring)."""
    post = res.posterior
    assert post is not None
    names = list(res.names)
    csv = folder / SAMPLES_CSV
    with writing(csv):
        np.savetxt(csv, post.samples, delimiter=",", header=",".join(names), comments="", fmt="%.17g")
    npz = folder / SAMPLES_NPZ
    with writing(npz):
        np.savez_compressed(
            npz,
            names=np.array(names),
            samples=post.samples,
            chain_unit=post.chain,
            log_prob=post.log_prob,
            burn=post.burn,
            tau=post.tau,
        )
    return [csv, npz]
