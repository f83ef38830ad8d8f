"""The plots of a run folder (the ``report`` command): convergence, the fit of each experiment and, after
``mechcalib uncertainty``, the corner plot and the predictive bands."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..config import ConfigFileError
from ..core.parameters import bound_warnings, bounds_report
from ..reporting import experiment_stems, plot_convergence, plot_fits, plot_loop
from ..storage import RunStore
from .configuration import load_run_config
from .folder import SAMPLES_NPZ, RunDirError, folder_of, read_uncertainty, run_name_in, store_path
from .summary import polished_best

log = logging.getLogger(__name__)

__all__ = ["write_report", "write_uncertainty_plots"]


def write_report(
    out_dir: str | os.PathLike[str],
    *,
    run: str | None = None,
    problem: Any = None,
    folder: str | os.PathLike[str] | None = None,
    warn_bounds: bool = True,
) -> list[Path]:
    """Write ``convergence.png`` (every evaluation's loss and the best so far against the evaluation
    count, log scale), ``fit_<experiment>.png`` per experiment (measured curves against the best
    parameter set's simulation, the residuals under them) and ``loop_<experiment>.png`` for a model with a
    force-displacement loop into the run folder (or ``folder``: a read-only run's plots go elsewhere);
    returns the files written.

    The fit plots use the stored responses of the best evaluation when the run kept them, else simulate
    the best parameter set once per experiment with the problem rebuilt from the stored configuration
    (or ``problem`` when given). After ``mechcalib uncertainty`` the best parameter set is the polished optimum
    when it belongs to the run's present best (as ``show`` and ``result.json`` give it; the titles say so). Without a successful evaluation, or when the configuration cannot be
    rebuilt (a run stored from Python without one), only the convergence plot is written, with a warning.
    A compacted run shows its kept evaluations (failures and improvements) at their place; its best-so-far
    line is exact. A parameter that ends at a bound (:func:`~mechcalib.core.parameters.bounds_report`) is named
    in the fit plots' title and, unless not ``warn_bounds`` (a run that says so itself), warned of in the log,
    with the advice to widen the box.
    """
    out = Path(out_dir)
    spath = store_path(out)
    folder = spath.parent if folder is None else Path(folder)  # default: the run folder, or a store file's
    folder.mkdir(parents=True, exist_ok=True)
    with RunStore(spath, readonly=True) as store:
        name = run_name_in(store, out, run)
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
    bounds = bounds_report(info.space, best.params)
    at = [f"{n} at its {r['at_bound']} bound" for n, r in bounds.items() if r["at_bound"]]
    if at:  # said on the plot and in the log: the fit may be the box's, not the data's
        label += "; " + ", ".join(at) + ": widen the box"
        for line in bound_warnings(bounds, best.params) if warn_bounds else ():
            log.warning("%s", line)
    polished = polished_best(read_uncertainty(out), best.idx, best.loss)
    if polished is not None:  # the optimum `mechcalib uncertainty` polished, as show and result.json give it
        params, loss, words = polished
        x = np.array([params.get(n, best.params[n]) for n in problem.space.free_names], dtype=float)
        responses, label = None, f"run {info.name}: optimum {words}, loss {loss:.4g}"
    written += plot_fits(problem, x, folder, responses=responses, title=label)
    for i, stem in enumerate(experiment_stems(problem, "loop")):
        loop = plot_loop(problem, x, folder / f"{stem}.png", experiment=i, title=label)
        written += [loop] if loop is not None else []
    # corner plot and bands after `mechcalib uncertainty`
    written += write_uncertainty_plots(folder, problem, source=out)
    return list(dict.fromkeys(written))  # a loop redrawn with the draws of an uncertainty analysis, once


def write_uncertainty_plots(
    folder: Path, problem: Any, *, truth: dict[str, float] | None = None, source: Path | None = None
) -> list[Path]:
    """``corner.png`` (the posterior's samples, else draws of the Laplace Gaussian), ``band_<experiment>.png``
    per experiment (the fit with its 95 % band, and the band minus the fit) and, for a model with a
    force-displacement loop, ``loop_<experiment>.png`` with the loops of draws, into ``folder``, from the uncertainty files of the run folder
    ``source`` (default ``folder``; another one when a read-only run's plots go elsewhere); none without them."""
    from ..uncertainty.local import laplace_samples
    from ..uncertainty.plots import corner_plot, predictive_band

    run_folder = folder if source is None else source
    data = read_uncertainty(run_folder)
    if data is None:
        return []
    names = list(problem.space.free_names)
    best = np.array([data["parameters"][n]["best"] for n in names], dtype=float)
    npz = folder_of(run_folder) / SAMPLES_NPZ
    if data.get("posterior") and npz.is_file():
        samples, how = np.load(npz)["samples"], "posterior (emcee)"
    else:
        cov = np.asarray(data["covariance_unit"], dtype=float)
        samples = laplace_samples(problem.space, np.asarray(data["best_unit"], float), cov, 4000, seed=0)
        how = "Laplace (Gauss-Newton) Gaussian"
    logs = [p.scale == "log" for p in problem.space.free]
    tr = None if truth is None else [truth[n] for n in names]
    units = [p.unit for p in problem.space.free]
    out = [corner_plot(samples, names, folder / "corner.png", units=units, best=best, truth=tr, log=logs, title=how)]
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
    for i, stem in enumerate(experiment_stems(problem, "loop")):  # the loop with the loops of the draws
        loop = plot_loop(problem, best, folder / f"{stem}.png", experiment=i, samples=samples, title=f"{how}: loop")
        out += [loop] if loop is not None else []
    return out
