"""Uncertainty in a run folder: what ``mechcalib uncertainty DIR`` does, and what ``show``, ``report`` and
``result.json`` read of it.

Files written in the run folder::

    uncertainty.json   :meth:`UncertaintyResult.to_json` plus the polished optimum in the unit cube
    samples.csv        the posterior samples (burn-in removed), one column per free parameter
    samples.npz        ``names``, ``samples`` ``(n, d)``, ``chain_unit`` ``(steps, walkers, d)`` (unit cube),
                       ``log_prob`` ``(steps, walkers)``, ``burn``, ``tau``
    corner.png, band_<experiment>.png   (:func:`write_uncertainty_plots`, by ``mechcalib report``)

and ``result.json`` gains an ``uncertainty`` entry: per parameter ``best``, ``lower``, ``upper``, ``std`` and
``method``. ``uncertainty.json`` records the run's best evaluation it started from (``source``); once a resumed
run finds a better one, ``show`` and ``result.json`` keep the intervals but mark them ``stale``, naming the
command that brings them up to date.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .api import UncertaintyResult, uncertainty

log = logging.getLogger(__name__)

UNCERTAINTY_FILE = "uncertainty.json"
SAMPLES_CSV = "samples.csv"
SAMPLES_NPZ = "samples.npz"


def _folder(out_dir: str | os.PathLike[str]) -> Path:
    from ..runs import _store_path

    return _store_path(Path(out_dir)).parent


def folder_uncertainty(
    out_dir: str | os.PathLike[str],
    *,
    run: str | None = None,
    progress: Callable[[int, int], Any] | None = None,
    **options: Any,
) -> tuple[UncertaintyResult, list[Path]]:
    """Run :func:`~.api.uncertainty` on a run folder (its store, configuration and evaluator), holding the
    folder's lock, and write the files of the module docstring; returns the result and the files written."""
    from ..runfolder import folder_lock
    from ..runs import RESULT_FILE, _write_json, build_evaluator, load_run_config, run_summary

    folder = _folder(out_dir)
    with folder_lock(folder):
        cfg = load_run_config(out_dir, run=run)
        before = run_summary(out_dir, run=run, n_failures=0)
        evaluator = build_evaluator(cfg)
        try:
            res = uncertainty(
                out_dir, problem=cfg.build_problem(), run=run, evaluator=evaluator, progress=progress, **options
            )
        finally:
            evaluator.close()
        data = res.to_json() | {"best_unit": res.best_u.tolist(), "covariance_unit": res.local.cov_u.tolist()}
        data["source"] = {k: before.get(k) for k in ("run_name", "best_index", "best_loss", "n_evaluations")}
        written = [_write_json(folder / UNCERTAINTY_FILE, data)]
        if res.posterior is not None:
            written += write_samples(res, folder)
        rpath = folder / RESULT_FILE
        if rpath.is_file():
            summary = json.loads(rpath.read_text())
            summary["uncertainty"] = brief(data, best_index=before.get("best_index"))
            _write_json(rpath, summary)
            written.append(rpath)
    return res, written


def brief(data: dict[str, Any], *, best_index: int | None = None) -> dict[str, Any]:
    """The ``result.json`` / ``show`` form of an ``uncertainty.json``: the method and per parameter ``best``,
    ``lower``, ``upper``, ``std``, ``method``. Given the run's present ``best_index``, ``stale`` says whether the
    run has found a better point since the intervals were computed (``None`` when the file does not say)."""
    keys = ("best", "lower", "upper", "std", "method")
    source = data.get("source") or {}
    stale = None
    if best_index is not None and source.get("best_index") is not None:
        stale = int(source["best_index"]) != int(best_index)
    out = {
        "method": data.get("method"),
        "converged": data.get("converged"),
        "parameters": {n: {k: p.get(k) for k in keys} for n, p in (data.get("parameters") or {}).items()},
        "least_identifiable": (data.get("local") or {}).get("least_identifiable"),
        "file": UNCERTAINTY_FILE,
        "stale": stale,
    }
    if stale:
        out["note"] = (
            f"computed at evaluation {source['best_index']}, but the run's best is now evaluation {best_index}; "
            "run `mechcalib uncertainty` on the run folder again to bring the intervals up to date"
        )
    return out


def read_uncertainty(out_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The folder's ``uncertainty.json`` (``None`` without one or when unreadable)."""
    path = _folder(out_dir) / UNCERTAINTY_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        log.warning("cannot read %s (%s); ignoring it", path, exc)
        return None
    return data if isinstance(data, dict) else None


def write_samples(res: UncertaintyResult, folder: Path) -> list[Path]:
    """``samples.csv`` and ``samples.npz`` of a posterior (module docstring)."""
    post = res.posterior
    assert post is not None
    names = list(res.names)
    csv = folder / SAMPLES_CSV
    np.savetxt(csv, post.samples, delimiter=",", header=",".join(names), comments="", fmt="%.17g")
    npz = folder / SAMPLES_NPZ
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


def write_uncertainty_plots(
    folder: Path, problem: Any, *, truth: dict[str, float] | None = None, source: Path | None = None
) -> list[Path]:
    """``corner.png`` (the posterior's samples, else draws of the Laplace Gaussian) and ``band_<experiment>.png``
    per experiment (the fit with its 95 % band) into ``folder``, from the uncertainty files of the run folder
    ``source`` (default ``folder``; another one when a read-only run's plots go elsewhere); none without them."""
    from .local import laplace_samples
    from .plots import corner_plot, predictive_band

    run_folder = folder if source is None else source
    data = read_uncertainty(run_folder)
    if data is None:
        return []
    names = list(problem.space.free_names)
    best = np.array([data["parameters"][n]["best"] for n in names], dtype=float)
    npz = _folder(run_folder) / SAMPLES_NPZ
    if data.get("posterior") and npz.is_file():
        samples, how = np.load(npz)["samples"], "posterior (emcee)"
    else:
        cov = np.asarray(data["covariance_unit"], dtype=float)
        samples = laplace_samples(problem.space, np.asarray(data["best_unit"], float), cov, 4000, seed=0)
        how = "Laplace (Gauss-Newton) Gaussian"
    logs = [p.scale == "log" for p in problem.space.free]
    tr = None if truth is None else [truth[n] for n in names]
    out = [corner_plot(samples, names, folder / "corner.png", best=best, truth=tr, log=logs, title=how)]
    noise = (data.get("local") or {}).get("noise")
    for i, e in enumerate(problem.experiments):
        out.append(
            predictive_band(
                problem,
                samples,
                best,
                folder / f"band_{re.sub(r'[^A-Za-z0-9_.-]+', '_', e.name)}.png",
                noise=noise,
                experiment=i,
                title=f"{how}: {e.name}",
            )
        )
    return out
