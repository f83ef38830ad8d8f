"""Where one simulation of the masonry arch (:mod:`mechcalib.models.masonry`) spends its time, on one thread, for
the two geometries of the calibration study (``benchmarks/arch_calibration.py``): Pulatsu's (8 sub-blocks, 17
sub-contacts per joint) and the surface-meshed one (h = 12 mm, 15 per joint), and for the model's default
layout (15 uniform sub-contacts per joint), each at the model's default conditions (10 mm/s to 12 mm,
``mass_scale`` 0.01) and parameters (Pulatsu's set).

    NUMBA_NUM_THREADS=1 python benchmarks/arch_profile.py [--repeats 7] [--baseline REV]

Figures, after a warm-up run that compiles the kernels:

* the whole simulation, ``MasonryArch.run`` (what a calibration pays per set), wall and CPU seconds (best and
  median of ``--repeats``); the steps of the self-weight and loading phases, the sub-contacts, the
  sub-contact steps per second;
* the phases: the kernel alone (``dem.run_batch``), the self-weight equilibration alone (the same call with
  no loading), the loading phase as the difference;
* the parts of a step, each called in a compiled loop as often as the run steps (the state of the run after
  self-weight and at its end, where hinges have opened): gravity and the contact forces
  (:func:`~mechcalib.models.masonry.kernels.contact_forces`, which includes the blocks' ``cos``/``sin``), the
  central-difference update (``integrate``); the rest of the run is the per-step bookkeeping (state-change
  counts, the plate, the finiteness check, every ``eq_check``-th step's equilibrium ratio, the samples);
* ``--baseline REV``: the kernels (``kernels.py``) of git revision ``REV`` in place of the current ones, timed
  in the same process, interleaved with the current ones (the machine is shared: the ratio is what counts),
  and their outputs compared array by array (``np.array_equal``). The older kernels get the current
  ``dem.run_batch``'s arguments and read the fields of ``Contacts`` they know.

Writes ``results/arch_profile.md`` and ``results/arch_profile.json`` with the machine's load average.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba as nb
import numpy as np

from mechcalib.models.masonry import dem, kernels
from mechcalib.models.masonry.arch import MasonryArch

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
# the two geometries of benchmarks/arch_calibration.py (GEOMETRIES)
GEOMETRIES = {
    "pulatsu": ("Pulatsu's geometry (8 sub-blocks, 17 sub-contacts per joint)", {"contacts": "pulatsu"}),
    "surface": ("surface-meshed geometry, h = 12 mm (15 per joint)", {"contacts": "surface", "mesh_size": 12.0}),
    "uniform": ("the model's default layout (15 uniform sub-contacts per joint)", {}),
}


@nb.njit
def _loop_forces(n, pos, vel, F, fn, fs, slip, contacts, kna, ksa, mu, rounding, dt, rot, cn, state, centroid, g):
    for _ in range(n):
        kernels._gravity(F, g[0], g[1], g[2], g[3])
        kernels.contact_forces(
            pos, vel, F, fn, fs, slip, contacts, kna, ksa, mu, rounding, dt, rot, cn, state, 0, centroid
        )


@nb.njit
def _loop_integrate(n, pos, vel, F, mass, inertia, free, alpha, dt):
    for _ in range(n):
        kernels.integrate(pos, vel, F, mass, inertia, free, alpha, dt, kernels.LOCAL)


def _timed(fn) -> tuple[float, float, object]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def _parts(model: MasonryArch, res: dem.BatchResult, kw: dict, theta: np.ndarray) -> dict:
    """CPU seconds of the parts of a step, each called as often as the run steps (best of 3)."""
    s, ms = model.system, kw["mass_scale"]
    mass, inertia = s.mass * ms, s.inertia * ms
    g = (mass, s.free, 0.0, -9.81 / ms)
    kn, ks, phi = theta
    nc, n = s.n_contacts, int(res.eq_steps[0] + res.load_steps[0] + 1)
    dt = float(res.dt[0])
    out = {}
    for tag, pos0 in (("after self-weight", res.pos_eq[0]), ("at the end", res.pos_end[0])):
        args = (
            np.ascontiguousarray(pos0),
            np.zeros_like(pos0),
            np.zeros_like(pos0),
            np.zeros(nc),
            res.fs[0].copy(),
            np.zeros(nc),
            dem.kernel_contacts(s),
            kn * s.area,
            ks * s.area,
            math.tan(math.radians(phi)),
            kw["rounding"],
            dt,
            np.zeros((s.n_blocks, 2)),
            np.zeros(nc),
            np.zeros(nc, np.int64),
            s.centroid,
            g,
        )
        _loop_forces(2, *args)
        out[f"forces {tag}"] = min(_timed(lambda args=args: _loop_forces(n, *args))[1] for _ in range(3))
        out[f"closed sub-contacts {tag}"] = int(np.count_nonzero(args[14]))
    F = np.zeros((s.n_blocks, 3))
    F[:, 1] = 1e-6  # a small unbalance: both signs of the damping branch stay in play
    _loop_integrate(2, res.pos_eq[0].copy(), np.zeros_like(F), F, mass, inertia, s.free, kw["alpha"], dt)
    out["integrate"] = min(
        _timed(
            lambda: _loop_integrate(
                n, res.pos_eq[0].copy(), np.zeros_like(F), F, mass, inertia, s.free, kw["alpha"], dt
            )
        )[1]
        for _ in range(3)
    )
    return out


def _load_kernels(rev: str):
    """The kernels module of git revision ``rev``, imported from a temporary file."""
    src = subprocess.run(
        ["git", "show", f"{rev}:src/mechcalib/models/masonry/kernels.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="arch_kernels_")) / f"kernels_{rev[:12]}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(model: MasonryArch, theta: np.ndarray, batch) -> tuple[float, float, dem.BatchResult]:
    current = dem._run_batch
    dem._run_batch = batch
    try:
        w, c, runs = _timed(lambda: model.run(theta[None, :]))
    finally:
        dem._run_batch = current
    return w, c, runs[0].raw


def _cpu_batch(model: MasonryArch, theta: np.ndarray, kw: dict) -> float:
    return _timed(lambda: dem.run_batch(model.system, *theta[:, None], **kw))[1]


def _same(a: dem.BatchResult, b: dem.BatchResult) -> bool:
    return all(
        np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True) for f in dem.BatchResult.__dataclass_fields__
    )


def _stats(v: list[float]) -> dict:
    return {"best": min(v), "median": statistics.median(v), "all": v}


def profile(repeats: int, baseline: str | None) -> dict:
    old = _load_kernels(baseline) if baseline else None
    variants = {"current": kernels._run_batch} | ({f"baseline {baseline}": old._run_batch} if old else {})
    out: dict = {
        "numba_threads": os.environ.get("NUMBA_NUM_THREADS", "unset"),
        "load_start": os.getloadavg(),
        "cores": os.cpu_count(),
        "geometries": {},
    }
    for geom, (label, opts) in GEOMETRIES.items():
        model = MasonryArch(**opts)
        theta = model.full_vector()
        kw = model.batch_settings(model.validate_conditions(None))
        first = {v: _run(model, theta, f) for v, f in variants.items()}  # compiles
        ref = first["current"][2]
        identical = {v: _same(r[2], ref) for v, r in first.items()}
        times: dict[str, dict[str, list[float]]] = {v: {"wall": [], "cpu": []} for v in variants}
        order = list(variants)
        for rep in range(repeats):
            for v in order if rep % 2 == 0 else order[::-1]:  # ABBA: drifts of the load cancel
                w, c, r = _run(model, theta, variants[v])
                identical[v] = identical[v] and _same(r, ref)
                times[v]["wall"].append(w)
                times[v]["cpu"].append(c)
        kernel = [_cpu_batch(model, theta, kw) for _ in range(repeats)]
        eq = [_cpu_batch(model, theta, {**kw, "duration": 0.0}) for _ in range(repeats)]
        c = model.validate_conditions(None)
        eq_steps, load_steps = int(ref.eq_steps[0]), int(ref.load_steps[0])
        n_samples = int(c["n_samples"])
        nc = model.system.n_contacts
        cur = times["current"]
        out["geometries"][geom] = {
            "label": label,
            "blocks": model.system.n_blocks,
            "free blocks": int(model.system.free.sum()),
            "sub-contacts": nc,
            "joints": int(dem.kernel_contacts(model.system).joint_start.size - 1),
            "eq steps": eq_steps,
            "eq checks": math.ceil(eq_steps / 10),
            "load steps": load_steps,
            "steps between samples": load_steps // (n_samples - 1),
            "samples (kinetic energy, tracked points)": n_samples,
            "dt": float(ref.dt[0]),
            "sub-contact state changes (open/close, stick/slip)": [int(ref.n_open[0]), int(ref.n_slip[0])],
            "times": times,
            "identical": identical,
            "kernel cpu": _stats(kernel),
            "self-weight cpu": _stats(eq),
            "parts cpu": _parts(model, ref, kw, theta),
            "contact steps per second": nc * (eq_steps + load_steps + 1) / min(cur["cpu"]),
        }
    out["load_end"] = os.getloadavg()
    return out


def _report(d: dict) -> str:
    lines = [
        "# Masonry arch: where one simulation spends its time",
        "",
        f"`NUMBA_NUM_THREADS={d['numba_threads']} python benchmarks/arch_profile.py`; one simulation of the default "
        f"conditions (10 mm/s to 12 mm, `mass_scale` 0.01) and Pulatsu's parameters. Load average "
        f"{d['load_start'][0]:.2f} at the start, {d['load_end'][0]:.2f} at the end, on {d['cores']} cores (a shared "
        "machine: best and median of the repeats, interleaved).",
        "",
    ]
    base = [v for v in next(iter(d["geometries"].values()))["times"] if v != "current"]
    if base:
        lines += [
            f"Summary: one simulation on one thread, {base[0]} against the current kernels (CPU seconds; the "
            "speed-up is the ratio of the medians, and of the bests):",
            "",
            "| geometry | before, median | after, median | speed-up (median) | before, best | after, best | "
            "speed-up (best) | outputs identical |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for g in d["geometries"].values():
            b, c = g["times"][base[0]]["cpu"], g["times"]["current"]["cpu"]
            mb, mc = statistics.median(b), statistics.median(c)
            same = "yes" if all(g["identical"].values()) else "NO"
            lines.append(
                f"| {g['label']} | {mb:.3f} | {mc:.3f} | {mb / mc:.2f} | {min(b):.3f} | {min(c):.3f} | "
                f"{min(b) / min(c):.2f} | {same} |"
            )
        lines.append("")
    lines += [
        "The parts below are timed on their own, after the interleaved runs: on a loaded machine their shares "
        "of the kernel (timed at another moment) can add up to more than 100 %.",
        "",
    ]
    for g in d["geometries"].values():
        t = g["times"]
        cur = t["current"]
        n = g["eq steps"] + g["load steps"] + 1
        lines += [
            f"## {g['label']}",
            "",
            f"{g['blocks']} blocks ({g['free blocks']} free), {g['sub-contacts']} sub-contacts on {g['joints']} joints; "
            f"{g['eq steps']} self-weight steps ({g['eq checks']} equilibrium checks, one per 10 steps) and "
            f"{g['load steps']} loading steps (dt {g['dt']:.3g} s, a sample every {g['steps between samples']} steps: "
            f"{g['samples (kinetic energy, tracked points)']} kinetic energies and tracked points); "
            f"{g['sub-contact state changes (open/close, stick/slip)'][0]} open/close and "
            f"{g['sub-contact state changes (open/close, stick/slip)'][1]} stick/slip changes during loading.",
            "",
            "| kernels | wall s, best | wall s, median | CPU s, best | CPU s, median | outputs identical to current |",
            "|---|---|---|---|---|---|",
        ]
        for v, tv in t.items():
            lines.append(
                f"| {v} | {min(tv['wall']):.3f} | {statistics.median(tv['wall']):.3f} | {min(tv['cpu']):.3f} | "
                f"{statistics.median(tv['cpu']):.3f} | {'yes' if g['identical'][v] else 'NO'} |"
            )
        for v, tv in t.items():
            if v != "current":
                lines += [
                    "",
                    f"Speed-up of the current kernels over {v}: {min(tv['cpu']) / min(cur['cpu']):.2f} (best CPU), "
                    f"{statistics.median(tv['cpu']) / statistics.median(cur['cpu']):.2f} (median CPU), "
                    f"{statistics.median(tv['wall']) / statistics.median(cur['wall']):.2f} (median wall).",
                ]
        p = g["parts cpu"]
        kern, eq = g["kernel cpu"]["best"], g["self-weight cpu"]["best"]
        f_eq, f_end = p["forces after self-weight"], p["forces at the end"]
        lines += [
            "",
            f"Current kernels: {g['contact steps per second'] / 1e6:.1f} million sub-contact steps per CPU second "
            f"({1e9 / g['contact steps per second']:.1f} ns each, everything included).",
            "",
            "| part (current kernels) | CPU s per simulation | ns per step | share of the kernel |",
            "|---|---|---|---|",
            f"| the kernel (`dem.run_batch`, with the stable step) | {kern:.3f} | {1e9 * kern / n:.0f} | 100 % |",
            f"| self-weight phase ({g['eq steps']} steps) | {eq:.3f} | {1e9 * eq / max(g['eq steps'], 1):.0f} | "
            f"{100 * eq / kern:.0f} % |",
            f"| loading phase ({g['load steps']} steps) | {kern - eq:.3f} | "
            f"{1e9 * (kern - eq) / g['load steps']:.0f} | {100 * (kern - eq) / kern:.0f} % |",
            f"| gravity + contact forces, state after self-weight ({p['closed sub-contacts after self-weight']} "
            f"closed) | {f_eq:.3f} | {1e9 * f_eq / n:.0f} | {100 * f_eq / kern:.0f} % |",
            f"| gravity + contact forces, end state ({p['closed sub-contacts at the end']} closed) | {f_end:.3f} | "
            f"{1e9 * f_end / n:.0f} | {100 * f_end / kern:.0f} % |",
            f"| central-difference update (`integrate`) | {p['integrate']:.3f} | {1e9 * p['integrate'] / n:.0f} | "
            f"{100 * p['integrate'] / kern:.0f} % |",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--baseline", default=None, help="git revision whose kernels.py to time against (interleaved)")
    ap.add_argument("--out", type=Path, default=RESULTS / "arch_profile.md")
    args = ap.parse_args(argv)
    d = profile(args.repeats, args.baseline)
    text = _report(d)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(json.dumps(d, indent=1) + "\n")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
