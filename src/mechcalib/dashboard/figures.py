"""The figures of a run that need its problem: the fit of every experiment with its residuals, the
force-displacement loop, the corner samples and the predictive band.

The problem is rebuilt once per run from the configuration stored with it (:func:`~mechcalib.runs.load_run_config`)
and the best point simulated once per best evaluation (:class:`FigureCache` keys each result by the run, its best
index and the uncertainty files' times), never inside the store's read.
"""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ..config import ConfigFileError, RunConfig
from ..core.model import SimulationFailure
from ..errors import MechcalibError
from ..runs.configuration import load_run_config
from ..runs.folder import MANIFEST_FILE, SAMPLES_NPZ, read_manifest
from .data import RunRead

log = logging.getLogger(__name__)

#: points a curve is drawn with at most (a long record is thinned evenly)
CURVE_POINTS = 5000
#: samples a corner plot draws at most
CORNER_POINTS = 2000
#: parameter sets drawn from the samples for the predictive band
BAND_DRAWS = 40

__all__ = ["FigureCache", "axis_label"]


def axis_label(name: str, unit: str | None) -> str:
    """``name [unit]``; ``[-]`` for a dimensionless quantity."""
    return f"{name} [{unit or '-'}]"


def _thin(*arrays: np.ndarray, n: int = CURVE_POINTS) -> list[list[float]]:
    step = max(1, int(np.ceil(arrays[0].size / n)))
    return [np.asarray(a, dtype=float)[::step].tolist() for a in arrays]


def _on(x: np.ndarray, sim: Any) -> np.ndarray | None:
    """A simulated curve at the measured abscissae (as is when as long), or ``None`` when no pairing holds."""
    sx, sy = np.asarray(sim.x, float), np.asarray(sim.y, float)
    if sy.size == x.size:
        return sy
    if sx.size > 1 and np.all(np.diff(sx) > 0):
        return np.interp(x, sx, sy)
    return None


class FigureCache:
    """The problem of each run folder and the figures of its best point, computed once per best index."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the dictionaries
        self._work = threading.Lock()  # one computation at a time
        self._problems: dict[tuple[str, str], Any] = {}
        self._fits: dict[tuple[str, str], tuple[Any, dict[str, Any]]] = {}
        self._bands: dict[tuple[str, str], tuple[Any, dict[str, Any]]] = {}
        self._latest: dict[tuple[str, str], tuple[Any, dict[str, Any]]] = {}
        self._jobs: dict[tuple[str, str], threading.Thread] = {}

    def add_figures(self, read: RunRead, *, wait: float | None = None) -> None:
        """Add ``fit``, ``loops``, ``corner``, ``bands`` (each ``None`` with a ``*_note`` saying why) to the
        read's view. They are computed in a thread of their own (a model may take minutes to simulate): the
        call waits ``wait`` seconds for them (``None``: until they are done), then shows the latest computed,
        saying when they belong to an earlier best."""
        view = read.view
        if not view.get("ok"):
            return
        fk = (str(read.folder), str(read.run_name))
        jk = (view.get("best_index"), read.samples_key)
        with self._lock:
            latest = self._latest.get(fk)
            if (latest is None or latest[0] != jk) and fk not in self._jobs:
                job = threading.Thread(target=self._compute, args=(read, fk, jk), daemon=True)
                self._jobs[fk] = job
                job.start()
            running = self._jobs.get(fk)
        if running is not None:
            running.join(wait)
        with self._lock:
            latest = self._latest.get(fk)
        if latest is None:
            busy = "being computed (the run's problem rebuilt and its best point simulated)"
            view.update(fit=None, loops=None, corner=None, bands=None, fit_note=f"the fit is {busy}")
            view["uncertainty_note"] = view.get("uncertainty_note") or f"the uncertainty panels are {busy}"
            return
        view.update(latest[1])
        if latest[0] != jk:
            view["figures_note"] = (
                f"the figures show evaluation {latest[0][0]}; those of the present best are being computed"
            )

    def _compute(self, read: RunRead, fk: tuple[str, str], jk: Any) -> None:
        try:
            with self._work:
                out = self._figures(read)
        except Exception as exc:  # a model that fails to simulate must not take the page down
            log.warning("figures of %s: %s: %s", read.folder, type(exc).__name__, exc)
            note = f"the figures could not be computed ({type(exc).__name__}: {exc})"
            out = {"fit": None, "loops": None, "corner": None, "bands": None, "fit_note": note}
        with self._lock:
            self._latest[fk] = (jk, out)
            self._jobs.pop(fk, None)

    def _figures(self, read: RunRead) -> dict[str, Any]:
        problem, note = self._problem(read)
        fit = self._fit(read, problem) if problem is not None and read.best_x is not None else None
        if fit is None and note is None:
            note = "no successful evaluation yet: nothing to fit"
        out: dict[str, Any] = {
            "fit_note": note,
            "fit": None if fit is None else fit["experiments"],
            "loops": None if fit is None else fit["loops"],
            "corner": None,
            "bands": None,
        }
        if read.uncertainty is not None:
            unc, why = self._uncertainty(read, problem)
            out["corner"] = None if unc is None else unc["corner"]
            out["bands"] = None if unc is None else unc["bands"]
            if why:
                out["uncertainty_note"] = why
        return out

    # -- the problem -----------------------------------------------------------------------------------
    def _problem(self, read: RunRead) -> tuple[Any, str | None]:
        key = (str(read.folder), str(read.run_name))
        if key in self._problems:
            return self._problems[key]
        if read.config is None and not (Path(read.folder) / MANIFEST_FILE).is_file():
            out: tuple[Any, str | None] = (None, "the run stores no configuration (a run from Python): no fit")
        else:
            try:
                out = (_config(read).build_problem(), None)
            except (ConfigFileError, MechcalibError, OSError) as exc:
                out = (None, f"the run's problem cannot be rebuilt ({exc}): no fit")
        self._problems[key] = out
        return out

    # -- the fit -----------------------------------------------------------------------------------------
    def _fit(self, read: RunRead, problem: Any) -> dict[str, Any] | None:
        key = (str(read.folder), str(read.run_name))
        best = read.view.get("best_index")
        cached = self._fits.get(key)
        if cached is not None and cached[0] == best:
            return cached[1]
        x = np.asarray(read.best_x, dtype=float)
        experiments, loops = [], []
        for exp in problem.experiments:
            (sim,) = problem.simulate(x[None, :], exp)
            experiments.append(_experiment_fit(exp, sim))
            loops += _loops(exp, sim)
        fit = {"experiments": experiments, "loops": loops}
        self._fits[key] = (best, fit)
        return fit

    # -- corner and band ---------------------------------------------------------------------------------
    def _uncertainty(self, read: RunRead, problem: Any) -> tuple[dict[str, Any] | None, str | None]:
        key = (str(read.folder), str(read.run_name))
        cached = self._bands.get(key)
        if cached is not None and cached[0] == read.samples_key:
            return cached[1], None
        data = read.uncertainty or {}
        names = [p["name"] for p in read.view["parameters"]]
        units = {p["name"]: p.get("unit") for p in read.view["parameters"]}
        samples, how = _samples(read.folder, data, problem, names)
        if samples is None:
            return None, how
        best = np.array([data["parameters"][n]["best"] for n in names], dtype=float)
        pick = np.random.default_rng(0).permutation(len(samples))[:CORNER_POINTS]
        corner = {
            "how": how,
            "names": names,
            "labels": [axis_label(n, units[n]) for n in names],
            "samples": samples[pick].T.tolist(),
            "best": best.tolist(),
        }
        bands = _bands(problem, samples, best, data) if problem is not None else []
        out = {"corner": corner, "bands": bands}
        self._bands[key] = (read.samples_key, out)
        return out, None


def _config(read: RunRead) -> Any:
    """The run's configuration: the one stored with it (read already), else as the run folder's files say
    (:func:`~mechcalib.runs.load_run_config`, which reads the store once more)."""
    if read.config is not None:
        try:
            return RunConfig.from_dict(read.config, source=read_manifest(Path(read.folder)).get("config_path"))
        except ConfigFileError:
            pass  # no longer valid: the configuration file named in run.json, with the recorded overrides
    return load_run_config(read.folder, run=read.run_name)


def _samples(folder: Path, data: dict[str, Any], problem: Any, names: list[str]) -> tuple[np.ndarray | None, str]:
    """The posterior samples (``samples.npz``), else draws of the Laplace Gaussian; ``(None, why)`` without."""
    from ..uncertainty.local import laplace_samples

    npz = Path(folder) / SAMPLES_NPZ
    if data.get("posterior") and npz.is_file():
        try:
            with np.load(npz) as z:
                s = np.asarray(z["samples"], dtype=float)
        except (OSError, ValueError, KeyError) as exc:
            return None, f"{npz} cannot be read ({exc}): no corner plot"
        if s.ndim == 2 and s.shape[1] == len(names) and len(s):
            return s, "posterior (emcee)"
        return None, f"{npz} holds samples of another shape {s.shape}: no corner plot"
    if problem is None or data.get("covariance_unit") is None or data.get("best_unit") is None:
        return None, "no posterior samples and no Laplace covariance to draw from: no corner plot"
    cov = np.asarray(data["covariance_unit"], dtype=float)
    s = laplace_samples(problem.space, np.asarray(data["best_unit"], float), cov, 4000, seed=0)
    return s, "Laplace (Gauss-Newton) Gaussian"


def _experiment_fit(exp: Any, sim: Any) -> dict[str, Any]:
    """Measured and simulated curves of every channel of an experiment, with the residuals (measured minus
    simulated at the measured points)."""
    failed = isinstance(sim, SimulationFailure)
    channels = []
    for ch in exp.channel_names:
        c = exp[ch]
        mx, my = np.asarray(c.x, float), np.asarray(c.y, float)
        entry: dict[str, Any] = {
            "name": ch,
            "x_label": axis_label(c.x_name, c.x_unit),
            "y_label": axis_label(c.y_name, c.y_unit),
            "measured": _thin(mx, my),
            "simulated": None,
            "residual": None,
            "rms": None,
        }
        if not failed and ch in sim:
            s = sim[ch]
            entry["simulated"] = _thin(np.asarray(s.x, float), np.asarray(s.y, float))
            on = _on(mx, s)
            if on is not None:
                r = my - on
                entry["residual"] = _thin(mx, r)
                entry["rms"] = float(np.sqrt(np.mean(r**2)))
        channels.append(entry)
    return {
        "name": exp.name,
        "channels": channels,
        "failure": sim.message if failed else None,
    }


_DISP = re.compile(r"displacement|drift|deflection|elongation|\bu\b", re.I)
_FORCE = re.compile(r"force|load|shear|moment", re.I)


def _loops(exp: Any, sim: Any) -> list[dict[str, Any]]:
    """The force-displacement loops of a response: every simulated channel whose abscissa is a displacement
    and ordinate a force, with the measured one when the experiment has that channel; without one, a force and
    a displacement history of the same component (names ending alike, as ``restoring_force_1`` and
    ``hysteretic_displacement_1``) drawn against each other."""
    if isinstance(sim, SimulationFailure):
        return []
    out = []
    for ch, s in sim.items():
        if not (_DISP.search(s.x_name or "") and _FORCE.search(s.y_name or "")):
            continue
        measured = _thin(np.asarray(exp[ch].x, float), np.asarray(exp[ch].y, float)) if ch in exp.channels else None
        out.append(_loop(exp.name, ch, s.x_name, s.x_unit, s, measured))
    return out or _paired_loops(exp.name, sim)


def _loop(exp: str, ch: str, x_name: str, x_unit: str, s: Any, measured: Any, x: Any = None) -> dict[str, Any]:
    xs = np.asarray(s.x if x is None else x, float)
    return {
        "experiment": exp,
        "channel": ch,
        "x_label": axis_label(x_name, x_unit),
        "y_label": axis_label(s.y_name, s.y_unit),
        "simulated": _thin(xs, np.asarray(s.y, float)),
        "measured": measured,
    }


def _paired_loops(exp: str, sim: Any) -> list[dict[str, Any]]:
    forces = {ch: s for ch, s in sim.items() if _FORCE.search(s.y_name or "") and not _DISP.search(s.x_name or "")}
    disps = {ch: s for ch, s in sim.items() if _DISP.search(s.y_name or "") and not _FORCE.search(s.y_name or "")}
    out = []
    for fc, f in forces.items():
        tail = fc.rsplit("_", 1)[-1] if "_" in fc else None
        match = [d for d in disps if (d.rsplit("_", 1)[-1] == tail if tail else len(disps) == 1)]
        for dc in match[:1]:
            d = disps[dc]
            if np.asarray(d.y).shape == np.asarray(f.y).shape and d.x_name == f.x_name:
                out.append(_loop(exp, f"{fc} against {dc}", d.y_name, d.y_unit, f, None, x=d.y))
    return out


def _bands(problem: Any, samples: np.ndarray, best: np.ndarray, data: dict[str, Any]) -> list[dict[str, Any]]:
    """The 95 % band of the simulated response over :data:`BAND_DRAWS` sets drawn from the samples, per channel
    of every experiment, on the measured abscissae, with the fit and the measured points."""
    rng = np.random.default_rng(0)
    pick = samples[rng.choice(len(samples), size=min(BAND_DRAWS, len(samples)), replace=False)]
    out = []
    for exp in problem.experiments:
        sims = problem.simulate(np.vstack([best[None, :], pick]), exp)
        for ch in exp.channel_names:
            c = exp[ch]
            mx, my = np.asarray(c.x, float), np.asarray(c.y, float)
            ys = [_on(mx, s[ch]) for s in sims[1:] if not isinstance(s, SimulationFailure) and ch in s]
            Y = np.array([y for y in ys if y is not None])
            b = sims[0]
            fit = _on(mx, b[ch]) if not isinstance(b, SimulationFailure) and ch in b else None
            if not len(Y) or fit is None:
                continue
            lo, hi = np.percentile(Y, [2.5, 97.5], axis=0)
            x, lo_, hi_, fy, my_ = _thin(mx, lo, hi, fit, my)
            out.append(
                {
                    "experiment": exp.name,
                    "channel": ch,
                    "x_label": axis_label(c.x_name, c.x_unit),
                    "y_label": axis_label(c.y_name, c.y_unit),
                    "x": x,
                    "lo": lo_,
                    "hi": hi_,
                    "fit": fy,
                    "measured": my_,
                    "draws": len(Y),
                }
            )
    return out
