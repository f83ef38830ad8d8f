"""A measured multisine force on the SDOF Bouc-Wen: accuracy of each input path, speed against openseespy, and
the kernels' compile time in a fresh process.

    PYTHONPATH=src python benchmarks/lab_records.py            # writes benchmarks/results/lab_records.md

The system is the Bouc-Wen benchmark's (Noel and Schoukens 2016: m = 2 kg, c = 10 N s/m, k = 5e4 N/m,
alpha = 5e4 N/m, beta = 1e3 1/m, gamma = 0.8, delta = -1.1, nu = 1, i.e. a1..a4 = 5e4, 800, -1100, 1) under a
synthetic random-phase multisine force, 5-150 Hz, 50 N RMS, sampled at 750 Hz, 40 000 samples (five periods of
8000): the shape of its public record, made here so that the exact input is known. The reference response is
the band-limited input integrated with 64 RK4 steps per sample; every other setting is measured against it
(relative RMS of the displacement over the last period).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from mechcalib.models.hysteresis import HystereticSDOF
from mechcalib.models.hysteresis.opensees import boucwen_material, import_opensees

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "lab_records.md"
FS, N, NP = 750.0, 40_000, 8000
M, C, K = 2.0, 10.0, 5e4
A = (5e4, 800.0, -1100.0, 1.0)
THETA = np.array([[*A, M, C, K]])


def multisine(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(N) / FS
    k = np.arange(1, NP // 2)
    f = k * FS / NP
    lines = k[(f >= 5.0) & (f <= 150.0)]
    ph = np.random.default_rng(seed).uniform(0, 2 * np.pi, lines.size)
    n = np.arange(NP)
    one = np.cos(2 * np.pi * np.outer(n, lines) / NP + ph).sum(1)
    one *= 50.0 / np.sqrt(np.mean(one**2))
    return t, np.tile(one, N // NP)


def rel_rms(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((a - b) ** 2) / np.mean(b**2)))


def model(**kw) -> HystereticSDOF:
    return HystereticSDOF("boucwen", m=M, c=C, k=K, **kw)


def accuracy(t: np.ndarray, F: np.ndarray) -> tuple[list[dict], np.ndarray]:
    period = NP / FS
    ref = model(substeps=64).integrate(THETA, {"force": {"t": t, "force": F, "period": period}, "fs": FS})["u"][0]
    last = slice(N - NP, N)
    rows = []
    settings = [
        ("linear", {"samples_per_step": 4}, "the earlier default: linear, one RK4 step per 4 samples"),
        ("linear", {}, "linear, steps by the rule"),
        ("cubic", {}, "cubic, steps by the rule"),
        ("bandlimited", {}, "band-limited, steps by the rule (the default for a periodic record)"),
        ("bandlimited", {"substeps": 16}, "band-limited, 16 steps per sample"),
    ]
    for interp, opts, what in settings:
        m = model(**opts)
        cond = {"force": {"t": t, "force": F, "period": period, "interpolation": interp}, "fs": FS}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            u = m.integrate(THETA, cond)["u"][0]
            chk = m.step_check(THETA, cond)
        rows.append(
            {
                "setting": what,
                "steps": m.plan(cond).steps,
                "error": rel_rms(u[last], ref[last]),
                "check": chk.difference,
                "accepted": chk.ok,
            }
        )
    return rows, ref


def speed(t: np.ndarray, F: np.ndarray, batch: int, repeats: int) -> dict:
    m = model()
    cond = {"force": {"t": t, "force": F, "period": NP / FS}, "fs": FS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.simulate(THETA, cond)
        m.simulate(np.repeat(THETA, batch, 0), cond)
        t0 = time.perf_counter()
        for _ in range(repeats):
            m.simulate(THETA, cond)
        single = repeats / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(max(1, repeats // 4)):
            m.simulate(np.repeat(THETA, batch, 0), cond)
        batched = max(1, repeats // 4) * batch / (time.perf_counter() - t0)
    return {"steps": m.plan(cond).steps, "single": single, "batched": batched, "batch": batch}


def opensees(t: np.ndarray, F: np.ndarray, ref: np.ndarray, substeps: int, upsampled: bool = False) -> dict:
    """The same SDOF in OpenSees: Elastic(k) || BoucWen || Viscous(c), the record as a Path time series
    (linear between its points), Newmark average acceleration with ``substeps`` steps per sample. ``upsampled``:
    the Path holds the band-limited interpolant at every step (OpenSees' own input is linear between samples,
    which alone leaves the error of the linear row above)."""
    ops = import_opensees()
    if upsampled:
        from mechcalib.records import interpolate

        tf = np.arange(N * substeps) / (FS * substeps)
        values = interpolate(t, F, tf, "bandlimited", NP / FS)
        dt_path = 1.0 / (FS * substeps)
    else:
        values, dt_path = F, 1.0 / FS

    def run() -> np.ndarray:
        ops.wipe()
        ops.model("basic", "-ndm", 1, "-ndf", 1)
        ops.node(1, 0.0)
        ops.node(2, 0.0)
        ops.fix(1, 1)
        ops.mass(2, M)
        ops.uniaxialMaterial("Elastic", 1, K)
        ops.uniaxialMaterial("Viscous", 2, C, 1.0)
        ops.uniaxialMaterial(*boucwen_material(*A)[:1], 3, *boucwen_material(*A)[1:])
        ops.uniaxialMaterial("Parallel", 4, 1, 3)
        ops.element("zeroLength", 1, 1, 2, "-mat", 4, 2, "-dir", 1, 1)
        ops.timeSeries("Path", 1, "-dt", dt_path, "-values", *values.tolist())
        ops.pattern("Plain", 1, 1)
        ops.load(2, 1.0)
        ops.constraints("Plain")
        ops.numberer("Plain")
        ops.system("BandGen")
        ops.test("NormDispIncr", 1e-12, 50)
        ops.algorithm("Newton")
        ops.integrator("Newmark", 0.5, 0.25)
        ops.analysis("Transient")
        u = np.empty(N)
        u[0] = 0.0
        for i in range(1, N):
            if ops.analyze(substeps, 1.0 / FS / substeps) != 0:
                raise RuntimeError(f"OpenSees failed at sample {i}")
            u[i] = ops.nodeDisp(2, 1)
        return u

    t0 = time.perf_counter()
    u = run()
    sec = time.perf_counter() - t0
    return {
        "substeps": substeps,
        "input": "band-limited, upsampled" if upsampled else "linear",
        "single": 1.0 / sec,
        "error": rel_rms(u[N - NP :], ref[N - NP :]),
    }


PROBE = """
import time, warnings
t0 = time.perf_counter()
import numpy as np
from mechcalib.models.hysteresis import SDOFBoucWen
t1 = time.perf_counter()
m = SDOFBoucWen()
t = np.arange(0, 5, 1e-3)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    m.simulate(m.full_vector()[None], {"force": (t, np.sin(7 * t)), "fs": 1000.0})
    t2 = time.perf_counter()
    m.simulate(np.repeat(m.full_vector()[None], 2, 0), {"force": (t, np.sin(7 * t)), "fs": 1000.0})
t3 = time.perf_counter()
print(f"{t1 - t0:.2f} {t2 - t1:.2f} {t3 - t2:.2f}")
"""


def compile_times() -> dict:
    """Import, first single and first batched simulation in fresh processes: an empty numba cache, then the
    cache the first one wrote; wall-clock seconds and the process's CPU seconds (less sensitive to a shared
    machine's load), with the load average at the start."""
    import resource

    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(ROOT / "src")}
        for label in ("empty cache", "cache written"):
            load = os.getloadavg()[0]
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
            imp, first, batch = map(float, r.stdout.split()[-3:])
            out[label] = {"import": imp, "first": first, "first_batch": batch, "cpu": cpu, "load": load}
    return out


def write(acc: list[dict], spd: dict, osp: list[dict] | None, comp: dict | None) -> None:
    lines = [
        "# Measured records: accuracy, speed and compile time (benchmarks/lab_records.py)",
        "",
        f"SDOF Bouc-Wen (m = {M:g} kg, c = {C:g} N s/m, k = {K:g} N/m, a1..a4 = {', '.join(f'{a:g}' for a in A)}) "
        f"under a synthetic multisine force, 5-150 Hz, 50 N RMS, {FS:g} Hz, {N} samples (5 periods of {NP}).",
        "Error: relative RMS of the displacement over the last period against the band-limited input integrated",
        "with 64 RK4 steps per sample. Check: the convergence check's measured difference (chosen steps against",
        "twice as many), accepted below 1e-3.",
        "",
        "| input path | RK4 steps (substeps, samples per step) | error | check | accepted |",
        "|---|---|---|---|---|",
    ]
    for r in acc:
        lines.append(
            f"| {r['setting']} | {r['steps']} | {r['error']:.2e} | {r['check']:.2e} | {'yes' if r['accepted'] else 'no'} |"
        )
    lines += [
        "",
        "## Speed (band-limited input, steps by the rule, accepted by the check)",
        "",
        "| code | setting | simulations / s | error |",
        "|---|---|---|---|",
        f"| mechcalib, one set per call | {spd['steps']} | {spd['single']:.1f} | {acc[3]['error']:.2e} |",
        f"| mechcalib, {spd['batch']} sets per call (threads) | {spd['steps']} | {spd['batched']:.1f} | {acc[3]['error']:.2e} |",
    ]
    for o in osp or []:
        lines.append(
            f"| openseespy (Newmark, {o['input']} input, {o['substeps']} steps per sample) | - | {o['single']:.2f} | "
            f"{o['error']:.2e} |"
        )
    lines += [
        "",
        f"Machine: {os.cpu_count()} cores shared with other jobs (load average {os.getloadavg()[0]:.1f} at the end); the",
        "rates compare codes measured side by side, not absolute speeds.",
    ]
    if comp is not None:
        lines += [
            "",
            "## Compile time of the hysteresis kernels in a fresh process",
            "",
            "| numba cache | import [s] | first simulation [s] | first batched simulation [s] | process CPU [s] "
            "| load average |",
            "|---|---|---|---|---|---|",
        ]
        for k, v in comp.items():
            lines.append(
                f"| {k} | {v['import']:.1f} | {v['first']:.1f} | {v['first_batch']:.1f} | {v['cpu']:.1f} | "
                f"{v['load']:.1f} |"
            )
        lines += [
            "",
            "The kernels are compiled with `cache=True`: the compile is paid once per installation (numba writes",
            "the machine code next to the package, or under `NUMBA_CACHE_DIR`), and every later process loads it.",
        ]
    OUT.write_text("\n".join(lines) + "\n")
    print(OUT.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--opensees-substeps", type=int, default=4)
    ap.add_argument("--no-compile", action="store_true", help="skip the fresh-process compile measurement")
    args = ap.parse_args()
    comp = None if args.no_compile else compile_times()
    t, F = multisine()
    acc, ref = accuracy(t, F)
    spd = speed(t, F, args.batch, args.repeats)
    try:
        osp = [opensees(t, F, ref, args.opensees_substeps), opensees(t, F, ref, 16, upsampled=True)]
    except ImportError:
        osp = None
    write(acc, spd, osp, comp)
    (OUT.with_suffix(".json")).write_text(
        json.dumps({"accuracy": acc, "speed": spd, "opensees": osp, "compile": comp}, default=str)
    )


if __name__ == "__main__":
    main()
