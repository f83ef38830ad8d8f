"""Bit-for-bit regression check of a refactoring: every built-in model's default simulation, one seeded
calibration per optimiser (the metaheuristics, ``auto``, least squares, CMA-ES), the uncertainty engine's
intervals and a short posterior, a run killed with SIGKILL and resumed, an external simulator, and the run
folder's ``result.json`` and ``run.json``, written to an ``.npz`` and compared with a stored baseline.

    python benchmarks/regression.py --write benchmarks/results/regression_baseline.json   # before the change
    python benchmarks/regression.py --check benchmarks/results/regression_baseline.json   # after it

The baseline holds a SHA-256 digest of every array's float64 bytes and shape (the arrays themselves are
11 MB; ``--write X.npz`` / ``--check X.npz`` keep and compare them in full, printing the first difference
of each key). The check exits 1 when any array differs. The granular model runs on its ``tiny``
specimen so that the whole check takes a few minutes.

The digests hold on the machine that wrote them: numba compiles for the CPU it runs on, and another CPU
(another vector width, fused multiply-add or not) changes the last bits of the models' outputs. On another
machine write the baseline from a checkout of main first (``git worktree add /tmp/base main``, then
``PYTHONPATH=/tmp/base/src python benchmarks/regression.py --write /tmp/base.npz`` from there) and check
against that.

Run folders are made through the ``mechcalib`` command line, so the check holds whatever module the Python side
lives in. Their JSON files are compared without what differs between two identical runs (times, dates,
versions, the temporary folder's path); a JSON document is kept as the bytes of its canonical text.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import mechcalib as mc
from mechcalib.models import get_model
from mechcalib.optimizers import make_optimizer

MODELS: dict[str, dict] = {
    "duffing": {},
    "linear": {},
    "hydration": {},
    "sdof_bilinear_kinematic": {},
    "sdof_bilinear_equal": {},
    "sdof_boucwen": {},
    "sdof_degradation": {},
    "sdof_pinching": {},
    "mdof_frame": {},
    "masonry_arch": {},
    "eepa_triaxial": {"specimen": "tiny"},
}
OPTIMIZERS = ["ga", "pso", "tbpso", "abc", "iabc", "tsa", "de", "grade", "random", "lhs"]
# the residual methods and CMA-ES, on the same problem with the overlap RSS (whose residuals pair the hysteretic
# curve by progress; the L2 objective above fails on it, so the metaheuristics above are told failures only)
RESIDUAL_OPTIMIZERS = ["auto", "lsq-trf", "lsq-lm", "cmaes"]
ROOT = Path(__file__).resolve().parents[1]
# keys of a run folder's JSON files that differ between two identical runs
VOLATILE = {
    "timings",
    "written",
    "created",
    "started",
    "finished",
    "updated",
    "seconds",
    "elapsed",
    "wall_seconds",
    "version",
    "versions",
    "mechcalib",
    "python",
    "numpy",
    "host",
    "hostname",
    "pid",
    "duration",
    "sim_seconds",
    "eval_seconds",
    "time",
    "timestamp",
    "config_path",
    "source_path",
    "rate",
}

AUTO_CONFIG = """
description = "regression: Duffing, auto, overlap RSS"
seed = 5
[model]
name = "duffing"
[[experiments]]
kind = "synthetic"
name = "synthetic_duffing"
noise = 0.02
seed = 7
conditions = {{ t_end = 30.0 }}
[objective]
name = "overlap_rss"
[budget]
max_evals = {budget}
[evaluator]
kind = "serial"
[output]
directory = "runs"
plots = false
"""


def _model_arrays(name: str, options: dict, cache_dir: str) -> dict[str, np.ndarray]:
    if name == "eepa_triaxial":
        options = {**options, "cache_dir": cache_dir}
    model = get_model(name, **options)
    theta = model.full_vector()
    # the default set and a perturbed one inside the bounds, simulated as one batch
    space = model.space
    free = space.free_from_full(theta[None, :])
    other = space.to_full(np.clip(free * 1.05, space.lower, space.upper))[0]
    out: dict[str, np.ndarray] = {}
    for i, resp in enumerate(model.simulate(np.stack([theta, other]))):
        if not resp:
            out[f"model/{name}/{i}/failed"] = np.array([1.0])
            continue
        for ch, curve in resp.items():
            out[f"model/{name}/{i}/{ch}/x"] = np.asarray(curve.x, dtype=float)
            out[f"model/{name}/{i}/{ch}/y"] = np.asarray(curve.y, dtype=float)
    return out


def _calibration_arrays(opt: str) -> dict[str, np.ndarray]:
    model = get_model("duffing")
    exp = mc.experiment_from_model(model, noise=0.02, seed=3)
    problem = mc.Problem(model, exp, mc.L2())
    with tempfile.TemporaryDirectory() as tmp:
        res = mc.calibrate(problem, make_optimizer(opt, seed=7), max_evals=300, store=f"{tmp}/s.sqlite")
    return {
        f"opt/{opt}/best_x": np.asarray(res.best_x, dtype=float),
        f"opt/{opt}/best_loss": np.array([res.best_loss]),
        f"opt/{opt}/X": np.asarray(res.history.X, dtype=float),
        f"opt/{opt}/losses": np.asarray(res.history.losses, dtype=float),
    }


def _residual_arrays(opt: str) -> dict[str, np.ndarray]:
    model = get_model("duffing")
    exp = mc.experiment_from_model(model, noise=0.02, seed=3)
    problem = mc.Problem(model, exp, mc.OverlapRSS())
    with tempfile.TemporaryDirectory() as tmp:
        res = mc.calibrate(problem, make_optimizer(opt, seed=7), max_evals=150, store=f"{tmp}/s.sqlite")
    return {
        f"opt/{opt}/best_x": np.asarray(res.best_x, dtype=float),
        f"opt/{opt}/best_loss": np.array([res.best_loss]),
        f"opt/{opt}/X": np.asarray(res.history.X, dtype=float),
        f"opt/{opt}/losses": np.asarray(res.history.losses, dtype=float),
        f"opt/{opt}/stop": _text(res.stop_reason),
        f"opt/{opt}/choices": _text(res.choices),
    }


def _text(obj: Any) -> np.ndarray:
    """A JSON-compatible object as the bytes of its canonical JSON text (one float per byte)."""
    return np.frombuffer(json.dumps(obj, sort_keys=True, default=str).encode(), dtype=np.uint8).astype(float)


def _scrub(obj: Any, tmp: str) -> Any:
    """``obj`` without the keys in :data:`VOLATILE`, the temporary folder's path written as ``TMP``."""
    if isinstance(obj, dict):
        return {k: _scrub(v, tmp) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [_scrub(v, tmp) for v in obj]
    if isinstance(obj, str):
        return obj.replace(tmp, "TMP")
    return obj


def _cli(*args: str, cwd: str | Path) -> None:
    cmd = [shutil.which("mechcalib") or "mechcalib", *args]
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")


def _folder_arrays(
    key: str, folder: Path, tmp: str, files: tuple[str, ...], cache_keys: bool = True
) -> dict[str, np.ndarray]:
    """The run folder's JSON files (scrubbed) and its store's evaluations in index order (``cache_keys=False``:
    without their cache keys, which hash the external model's absolute paths)."""
    out: dict[str, np.ndarray] = {}
    for name in files:
        out[f"{key}/{name}"] = _text(_scrub(json.loads((folder / name).read_text()), tmp))
    con = sqlite3.connect(f"file:{folder / 'store.sqlite'}?mode=ro", uri=True)
    try:
        runs = [r[0] for r in con.execute("SELECT id FROM runs ORDER BY id")]
        for k, rid in enumerate(runs):
            cols = "idx, batch, pos, loss, raw_loss, key, params, u, status, error"
            rows = con.execute(f"SELECT {cols} FROM evaluations WHERE run_id=? ORDER BY idx", (rid,)).fetchall()
            for j, col in enumerate(("idx", "batch", "pos", "loss", "raw_loss")):
                out[f"{key}/store/{k}/{col}"] = np.array([np.nan if r[j] is None else r[j] for r in rows], float)
            for j, col in enumerate(("key", "params", "u", "status", "error"), start=5):
                if col == "key" and not cache_keys:
                    continue
                out[f"{key}/store/{k}/{col}"] = _text([_scrub(r[j], tmp) for r in rows])
    finally:
        con.close()
    return out


def _run_folder_arrays() -> dict[str, np.ndarray]:
    """``auto`` through ``mechcalib run``, then ``mechcalib uncertainty --posterior`` (a short chain)."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "auto.toml"
        cfg.write_text(AUTO_CONFIG.format(budget=150))
        _cli("run", str(cfg), "--out", f"{tmp}/r", "--quiet", cwd=tmp)
        out = _folder_arrays("folder/run", Path(tmp) / "r", tmp, ("result.json", "run.json"))
        _cli("uncertainty", f"{tmp}/r", "--posterior", "--walkers", "8", "--steps", "30", "--seed", "2", "-q",
             cwd=tmp)  # fmt: skip
        out.update(_folder_arrays("folder/uncertainty", Path(tmp) / "r", tmp, ("result.json", "uncertainty.json")))
        with np.load(Path(tmp) / "r" / "samples.npz") as f:
            for k in ("samples", "chain_unit", "log_prob"):
                out[f"folder/uncertainty/samples/{k}"] = np.asarray(f[k], dtype=float)
    return out


def _stored(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1)
        try:
            return int(con.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _killed_and_resumed_arrays() -> dict[str, np.ndarray]:
    """The same ``auto`` run killed with SIGKILL once 20 evaluations are stored (it converges after about 30),
    then resumed: its files and store must equal those of an uninterrupted run whatever the moment of the kill
    (which is not recorded)."""
    for attempt in range(5):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = Path(tmp) / "auto.toml"
            cfg.write_text(AUTO_CONFIG.format(budget=300))
            cmd = [shutil.which("mechcalib") or "mechcalib", "run", str(cfg), "--out", f"{tmp}/r", "--quiet"]
            child = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            db = Path(tmp) / "r" / "store.sqlite"
            while child.poll() is None and _stored(db) < 20:
                time.sleep(0.005)
            if child.poll() is not None:  # finished before the kill: try again
                print(f"  the run ended before it was killed (attempt {attempt + 1})", flush=True)
                continue
            os.kill(child.pid, signal.SIGKILL)
            child.wait(30)
            _cli("resume", f"{tmp}/r", "--quiet", cwd=tmp)
            out = _folder_arrays("folder/killed", Path(tmp) / "r", tmp, ("result.json",))
            # how many evaluations the resume replayed and simulated tells when the kill came (a batch stores
            # several at once): only their sum is the run's
            result = _scrub(json.loads((Path(tmp) / "r" / "result.json").read_text()), tmp)
            split = result.pop("n_replayed") + result.pop("n_simulated")
            out["folder/killed/result.json"] = _text({**result, "n_replayed + n_simulated": split})
            return out
    raise RuntimeError("the run to kill finished before 20 evaluations were stored, five times")


def _external_arrays() -> dict[str, np.ndarray]:
    """The external-simulator example's stand-in script driven through files, with the configuration below (the
    example's, shortened and serial, kept here so that editing the example does not change the baseline)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = ROOT / "examples" / "external_arch"
        for name in ("arch_sim.py", "params.template", "measured.csv"):
            shutil.copy(src / name, Path(tmp) / name)
        cfg = Path(tmp) / "arch.toml"
        cfg.write_text(EXTERNAL_CONFIG)
        _cli("run", str(cfg), "--out", f"{tmp}/r", "--quiet", cwd=tmp)
        return _folder_arrays("folder/external", Path(tmp) / "r", tmp, ("result.json", "run.json"), False)


EXTERNAL_CONFIG = """# Calibrate an external simulator driven through files (Kibriya et al. (2023) section 3.5 drove 3DEC this way):
# the stand-in arch_sim.py plays 3DEC. Each evaluation gets a fresh working directory under work/
# with arch_sim.py copied in and params.txt written from params.template.
description = "masonry-arch stand-in (kn, ks, phi) against a synthetic measured curve"
seed = 3

[model.external]
name = "arch"
command = ["{python}", "arch_sim.py", "params.txt", "result.csv"]   # an argument list, never a shell line
files = ["arch_sim.py"]                                          # copied into every working directory
templates = { "params.txt" = "params.template" }                 # written with {{ name }} filled in
timeout = 30                                                     # seconds; a slower run counts as failed
workdir_root = "work"                                            # relative to this file's folder
keep = "failed"                                                  # keep working directories of failed runs only
conditions = { w_max = 4.0 }                                     # a numeric input, used as {{ w_max }}
presets = { default = { kn = 4e9, ks = 1.6e9, phi = 30.5 } }     # Pulatsu's values (Kibriya et al. (2023) section 2.3)

[model.external.outputs.force]                                   # channel read from the result file
file = "result.csv"
x = "displacement"
y = "force"

# An external model has no default parameters: give each one, in the order of the model.
# Bounds as in Kibriya et al. (2023) section 4: 1e8 ... 1e10 Pa/m for the stiffnesses, 25 ... 45 degrees for friction.
[parameters.kn]
lower = 1e8
upper = 1e10
scale = "log"
unit = "Pa/m"

[parameters.ks]
lower = 1e8
upper = 1e10
scale = "log"
unit = "Pa/m"

[parameters.phi]
lower = 25.0
upper = 45.0
unit = "deg"

[[experiments]]
path = "measured.csv"
name = "arch_test"
[experiments.channels.force]
x = "displacement"
y = "force"

[objective]
name = "overlap_rss"

[optimizer]
name = "tbpso"
preset = "paper_000"               # 10 particles, 20 iterations: 210 simulations

[budget]
max_evals = 30

[evaluator]
kind = "serial"
"""


PARTS = ("model", "opt", "folder")


def collect(parts: tuple[str, ...] = PARTS) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    if "model" not in parts:
        return out | _collect_rest(parts)
    with tempfile.TemporaryDirectory() as cache:
        for name, options in MODELS.items():
            t0 = time.perf_counter()
            out.update(_model_arrays(name, options, cache))
            print(f"model {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    return out | _collect_rest(parts)


def _collect_rest(parts: tuple[str, ...]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    if "opt" not in parts:
        return out | _collect_folders(parts)
    for opt in OPTIMIZERS:
        t0 = time.perf_counter()
        out.update(_calibration_arrays(opt))
        print(f"optimizer {opt}: {time.perf_counter() - t0:.1f} s", flush=True)
    for opt in RESIDUAL_OPTIMIZERS:
        t0 = time.perf_counter()
        out.update(_residual_arrays(opt))
        print(f"optimizer {opt} (overlap RSS): {time.perf_counter() - t0:.1f} s", flush=True)
    return out | _collect_folders(parts)


def _collect_folders(parts: tuple[str, ...]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    if "folder" not in parts:
        return out
    for label, part in (
        ("run folder and uncertainty", _run_folder_arrays),
        ("SIGKILL and resume", _killed_and_resumed_arrays),
        ("external model", _external_arrays),
    ):
        t0 = time.perf_counter()
        out.update(part())
        print(f"{label}: {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def digests(arrays: dict[str, np.ndarray]) -> dict[str, str]:
    out = {}
    for k, a in arrays.items():
        a = np.ascontiguousarray(a, dtype="<f8")
        out[k] = f"{a.shape}:" + hashlib.sha256(a.tobytes()).hexdigest()
    return out


def compare(now: dict[str, np.ndarray], base: dict[str, np.ndarray]) -> list[str]:
    diffs = [f"missing now: {k}" for k in sorted(set(base) - set(now))]
    diffs += [f"new key: {k}" for k in sorted(set(now) - set(base))]
    for k in sorted(set(base) & set(now)):
        a, b = np.asarray(now[k]), np.asarray(base[k])
        if a.shape != b.shape:
            diffs.append(f"{k}: shape {a.shape} != baseline {b.shape}")
        elif not np.array_equal(a, b, equal_nan=True):
            i = int(np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))))[0])
            diffs.append(f"{k}: first difference at {i}: {a.ravel()[i]!r} != baseline {b.ravel()[i]!r}")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", metavar="NPZ")
    g.add_argument("--check", metavar="NPZ")
    ap.add_argument(
        "--parts",
        default=",".join(PARTS),
        help="what to run and compare, of model,opt,folder (default all; a check compares those keys only)",
    )
    args = ap.parse_args()
    parts = tuple(p.strip() for p in args.parts.split(","))
    if not set(parts) <= set(PARTS):
        ap.error(f"--parts takes names of {PARTS}, got {args.parts!r}")
    if args.write and set(parts) != set(PARTS):
        ap.error("--write takes the whole check (leave out --parts)")
    now = collect(parts)
    if args.write:
        if args.write.endswith(".npz"):
            np.savez_compressed(args.write, **now)
        else:
            with open(args.write, "w") as f:
                json.dump(digests(now), f, indent=0, sort_keys=True)
        print(f"wrote {len(now)} arrays to {args.write}")
        return 0
    if args.check.endswith(".npz"):
        with np.load(args.check) as f:
            base = {k: f[k] for k in f.files if k.split("/")[0] in parts}
        diffs = compare(now, base)
    else:
        with open(args.check) as f:
            base = {k: v for k, v in json.load(f).items() if k.split("/")[0] in parts}
        got = digests(now)
        diffs = [f"missing now: {k}" for k in sorted(set(base) - set(got))]
        diffs += [f"new key: {k}" for k in sorted(set(got) - set(base))]
        diffs += [f"{k}: digest differs" for k in sorted(set(base) & set(got)) if base[k] != got[k]]
    for d in diffs:
        print("DIFF", d)
    print(f"{len(base)} baseline arrays, {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
