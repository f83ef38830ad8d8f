"""Bit-for-bit regression check of a refactoring: every built-in model's default simulation and one seeded
calibration per optimiser, written to an ``.npz`` and compared with a stored baseline.

    python benchmarks/regression.py --write benchmarks/results/regression_baseline.json   # before the change
    python benchmarks/regression.py --check benchmarks/results/regression_baseline.json   # after it

The baseline holds a SHA-256 digest of every array's float64 bytes and shape (the arrays themselves are
11 MB; ``--write X.npz`` / ``--check X.npz`` keep and compare them in full, printing the first difference
of each key). The check exits 1 when any array differs. The granular model runs on its ``tiny``
specimen so that the whole check takes a few minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time

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


def collect() -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as cache:
        for name, options in MODELS.items():
            t0 = time.perf_counter()
            out.update(_model_arrays(name, options, cache))
            print(f"model {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    for opt in OPTIMIZERS:
        t0 = time.perf_counter()
        out.update(_calibration_arrays(opt))
        print(f"optimizer {opt}: {time.perf_counter() - t0:.1f} s", flush=True)
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
    args = ap.parse_args()
    now = collect()
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
            base = {k: f[k] for k in f.files}
        diffs = compare(now, base)
    else:
        with open(args.check) as f:
            base = json.load(f)
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
