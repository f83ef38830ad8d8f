"""Wet sand (Hu et al. (2024), section 3): speed of the EEPA DEM, curves, the velocity study of Fig. 7, the Young's
modulus scaling and the 200-set `fast` dataset through the run store.

Run on demand (not in CI); each stage is written to ``results/granular.json`` as soon as it ends and skipped
when the script runs again (``--redo STAGE,...`` runs it again), so an interrupted benchmark resumes.
``results/granular.md`` and the PNGs are rewritten from the JSON after every stage.

Stages (``--stages``, in this order by default):

* ``fast``: the `fast` specimen (generated and cached on first use) and one default load-unload simulation on
  one thread, then a batch of two on two threads (particle-steps per second on one and two cores);
* ``dataset``: the first ``--dataset-sets`` sets of the 200-set `fast` dataset (Latin hypercube, seed 0, over
  the model's bounds) through :func:`mechcalib.inverse.data.generate_dataset` and the run store
  ``results/granular.fast_dataset.sqlite`` with a pool of ``--workers`` processes; the rest of the dataset is
  made by the command printed in the report (it resumes the same run);
* ``escale``: Young's modulus scaled by 0.1 and 0.01 (specimens relaxed at those moduli);
* ``params``: one-at-a-time changes of lambda_p, f_ss and f_sa to ends of the dataset ranges;
* ``velocity``: Fig. 7 setup 2 (5 mm/s for 0.4 s, 2 mm/s to 0.6 s) beside setup 1;
* ``paper``: the `paper` specimen (the paper's clump) and one default simulation;
* ``profile``: where one time step of the `paper` specimen spends its time on one thread
  (:mod:`granular_profile`): the rebuild test, neighbour-list rebuilds, the pair contacts, the walls, the motion.

Redoing ``fast`` or ``paper`` first moves their previous speed figures to ``speed_history`` (with the commit they
were measured on, where recorded), so that the report shows the speed before and after a change of the kernels.

Usage::

    NUMBA_NUM_THREADS=2 nice -n 10 python benchmarks/granular.py                  # every stage, about 30 min
    python benchmarks/granular.py --stages fast,params --redo params
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
JSON_PATH = RESULTS / "granular.json"
MD_PATH = RESULTS / "granular.md"
STORE = RESULTS / "granular.fast_dataset.sqlite"
DATASET_NPZ = RESULTS / "granular.fast_dataset.npz"
RUN_NAME = "eepa_fast_200"
STAGES = ("fast", "dataset", "escale", "params", "velocity", "paper", "seeds", "profile")
SEEDS = {"fast": (0, 1, 2, 3), "paper": (0, 1)}
PAPER_EDEM_S = 0.1714 * 3600  # EDEM, one setup-1 simulation of 8238 particles (section 3.2.3)
PAPER_EDEM_SETUP2_S = 1.2985 * 3600
SETUP2 = {"v_load": 5.0, "t_load": 0.4, "v_unload": 2.0, "t_end": 0.6}
DATASET_CMD = (
    f"NUMBA_NUM_THREADS=1 nice -n 10 mechcalib inverse dataset eepa_triaxial --n 200 --seed 0 "
    f"--store {STORE.relative_to(HERE.parent)} --run-name {RUN_NAME} --workers 2 "
    f"--out {(RESULTS / 'granular.fast_dataset.npz').relative_to(HERE.parent)}"
)


def load() -> dict:
    return json.loads(JSON_PATH.read_text()) if JSON_PATH.exists() else {}


def save(res: dict) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = JSON_PATH.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(res, indent=1))
    os.replace(tmp, JSON_PATH)


def loadavg() -> float:
    return round(os.getloadavg()[0], 2)


def commit() -> str:
    """The checked-out commit (with ``+`` when the working tree differs), or ``?`` outside git."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "src"], cwd=HERE.parent, capture_output=True, text=True)
    except OSError:
        return "?"
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "") if head.returncode == 0 else "?"


def set_threads(k: int) -> int:
    import numba

    k = min(k, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(k)
    return k


def record(run, n_spheres: int) -> dict:
    """The figures and the 2000 Hz curve of one TriaxialRun."""
    return {
        "peak_N": run.peak_force,
        "steps": run.steps,
        "dt_s": run.dt,
        "status": run.status,
        "preload_time_s": run.preload_time,
        "preload_steady": run.preload_steady,
        "sphere_steps": run.steps * n_spheres,
        "time": run.time.tolist(),
        "disp_mm": run.displacement.tolist(),
        "force_N": run.force.tolist(),
        "wall_N": run.wall_force.tolist(),
    }


CPU_S: dict[str, float] = {}  # process CPU time of the last timed_runs (less disturbed by other jobs than the wall)


def timed_runs(model, thetas: np.ndarray, conditions: dict | None = None, threads: int = 1) -> tuple[list, float]:
    """Simulate and time; a batch runs one member per thread (``prange``)."""
    set_threads(threads)
    t0, c0 = time.perf_counter(), time.process_time()
    runs = model.run(thetas, conditions)
    wall = time.perf_counter() - t0
    CPU_S["last"] = time.process_time() - c0
    for r in runs:
        if not hasattr(r, "steps"):
            raise RuntimeError(f"simulation failed: {r}")
    return runs, wall


def specimen_stage(model, E_scale: float = 1.0) -> dict:
    t0 = time.perf_counter()
    info = model.specimen_info(E_scale)
    return {**info, "seconds_here": time.perf_counter() - t0}


# ----------------------------------------------------------------------------------------------------------
def stage_fast(res: dict) -> dict:
    from mechcalib.models import get_model

    m = get_model("eepa_triaxial", specimen="fast", seed=0)
    load0 = loadavg()
    spec = specimen_stage(m)
    nsph = 2 * spec["n_particles"]
    (r1,), w1 = timed_runs(m, m.full_vector()[None], threads=1)
    c1 = CPU_S["last"]
    threads = set_threads(2)
    runs2, w2 = timed_runs(m, np.repeat(m.full_vector()[None], 2, axis=0), threads=2)
    return {
        "threads_batch2": threads,
        "specimen": spec,
        "n_spheres": nsph,
        "default": record(r1, nsph),
        "seconds_1thread": w1,
        "sphere_steps_per_s_1core": r1.steps * nsph / w1,
        "cpu_seconds_1thread": c1,
        "commit": commit(),
        "seconds_batch2_2threads": w2,
        "sphere_steps_per_s_2cores": sum(r.steps for r in runs2) * nsph / w2,
        "load": [load0, loadavg()],
    }


def stage_dataset(res: dict, n_sets: int, workers: int) -> dict:
    from mechcalib.inverse.data import generate_dataset
    from mechcalib.models import get_model

    m = get_model("eepa_triaxial", specimen="fast", seed=0)
    load0 = loadavg()
    t0 = time.perf_counter()
    g = generate_dataset(m, 200, STORE, run_name=RUN_NAME, seed=0, workers=workers, budget=n_sets)
    wall = time.perf_counter() - t0
    per = wall / max(g.simulated, 1)
    return {
        "n": 200,
        "sets_done": g.done,
        "sets_simulated_here": g.simulated,
        "failed": g.failed,
        "workers": workers,
        "seconds": wall,
        "seconds_per_set": per,
        "projected_rest_s": per * (200 - g.done),
        "store": str(STORE.relative_to(HERE.parent)),
        "run_name": RUN_NAME,
        "command": DATASET_CMD,
        "peaks_N": [float(x[:, 1].max()) for x in g.dataset.X] if g.dataset is not None else [],
        "load": [load0, loadavg()],
    }


def dataset_state() -> list[str]:
    """The dataset run as the store holds it now (the stage above records only its own first sets)."""
    from mechcalib.storage import RunStore

    if not STORE.exists():
        return []
    with RunStore(STORE, readonly=True) as st:
        if not st.has_run(RUN_NAME):
            return []
        info = st.run(RUN_NAME)
        t = st.timing(RUN_NAME)
        n_ok = st.n_evaluations(RUN_NAME, status="ok")
    per = t["seconds"] / max(t["n_live"], 1)
    return [
        (
            f"Store now (read when this report was written): {info.n_evals} of 200 sets stored ({n_ok} ok, "
            f"{info.n_evals - n_ok} failed), run status `{info.status}`; {per:.1f} s of simulation per set on "
            f"average (each set on one core; the runs shared the machine with other jobs)."
        ),
        "",
        *exported_peaks(),
    ]


def exported_peaks() -> list[str]:
    """Peak piston force over every set of the exported dataset (the stage above sees only its own sets)."""
    if not DATASET_NPZ.exists():
        return []
    with np.load(DATASET_NPZ) as z:
        pk = z["response/sim/force_displacement/y"].max(axis=1)
    return [
        f"Peak piston force over the {len(pk)} sets of `{DATASET_NPZ.name}`: {pk.min():.0f} - {pk.max():.0f} N "
        f"(mean {pk.mean():.0f} N).",
        "",
    ]


def stage_escale(res: dict) -> dict:
    from mechcalib.models import get_model

    m = get_model("eepa_triaxial", specimen="fast", seed=0)
    out = {"load": [loadavg()]}
    for es in (0.1, 0.01):
        spec = specimen_stage(m, es)
        (r,), w = timed_runs(m, m.full_vector()[None], {"E_scale": es})
        out[str(es)] = {"specimen": spec, "seconds": w, **record(r, 2 * spec["n_particles"])}
    out["load"].append(loadavg())
    return out


# One at a time from the default [0.575, 0.520, 0.347] to an end of the dataset ranges (the far end for f_ss,
# f_sa: the default lies near their lower ends).
PARAM_SETS = {
    "lambda_p=0.55": {"lambda_p": 0.55},
    "lambda_p=0.75": {"lambda_p": 0.75},
    "f_ss=0.56": {"f_ss": 0.56},
    "f_sa=0.52": {"f_sa": 0.52},
}


def stage_params(res: dict) -> dict:
    from mechcalib.models import get_model

    m = get_model("eepa_triaxial", specimen="fast", seed=0)
    nsph = 2 * m.specimen_info()["n_particles"]
    out = {"load": [loadavg()], "sets": {}}
    items = [(k, m.full_vector(v)) for k, v in PARAM_SETS.items()]
    for k, theta in items:
        (r,), w = timed_runs(m, theta[None])
        out["sets"][k] = {"theta": theta.tolist(), "seconds": w, **record(r, nsph)}
    out["load"].append(loadavg())
    return out


def stage_velocity(res: dict) -> dict:
    from mechcalib.models import get_model

    m = get_model("eepa_triaxial", specimen="fast", seed=0)
    nsph = 2 * m.specimen_info()["n_particles"]
    load0 = loadavg()
    (r,), w = timed_runs(m, m.full_vector()[None], SETUP2)
    return {"setup2": {"conditions": SETUP2, "seconds": w, **record(r, nsph)}, "load": [load0, loadavg()]}


def stage_paper(res: dict) -> dict:
    from mechcalib.models import get_model

    m = get_model("eepa_triaxial", specimen="paper", seed=0)
    load0 = loadavg()
    spec = specimen_stage(m)
    nsph = 2 * spec["n_particles"]
    (r,), w = timed_runs(m, m.full_vector()[None])
    return {
        "specimen": spec,
        "n_spheres": nsph,
        "seconds": w,
        "sphere_steps_per_s_1core": r.steps * nsph / w,
        "cpu_seconds": CPU_S["last"],
        "commit": commit(),
        **record(r, nsph),
        "load": [load0, loadavg()],
    }


def stage_seeds(res: dict) -> dict:
    """Seed-to-seed scatter: one packing per seed (same specification and density), the default curve."""
    from mechcalib.models import get_model

    out: dict = {"load": [loadavg()]}
    for name, seeds in SEEDS.items():
        rows = []
        for seed in seeds:
            m = get_model("eepa_triaxial", specimen=name, seed=seed)
            spec = specimen_stage(m)
            (r,), w = timed_runs(m, m.full_vector()[None])
            rows.append(
                {
                    "seed": seed,
                    "n_particles": spec["n_particles"],
                    "mass_g": spec["mass_g"],
                    "solid_fraction": spec["solid_fraction"],
                    "peak_N": r.peak_force,
                    "seconds": w,
                }
            )
        out[name] = rows
    out["load"].append(loadavg())
    return out


def stage_profile(res: dict) -> dict:
    from granular_profile import profile
    from mechcalib.models import get_model

    m = get_model("eepa_triaxial", specimen="paper", seed=0)
    m.specimen()  # generated (or read) before the clock starts
    set_threads(1)
    load0 = loadavg()
    out = profile(m, t_state=0.005)
    return {**out, "commit": commit(), "load": [load0, loadavg()]}


def keep_speed(res: dict, stage: str) -> None:
    """Before ``stage`` is redone: its speed figures into ``res['speed_history']``."""
    old = res.get(stage)
    if not old:
        return
    if stage == "fast":
        row = {"seconds": old["seconds_1thread"], "cpu_seconds": old.get("cpu_seconds_1thread")}
    else:
        row = {"seconds": old["seconds"], "cpu_seconds": old.get("cpu_seconds")}
    steps = old["default"]["steps"] if stage == "fast" else old["steps"]
    row.update(
        {
            "stage": stage,
            "commit": old.get("commit", "before the profile stage"),
            "steps": steps,
            "n_spheres": old["n_spheres"],
            "sphere_steps_per_s_1core": old["sphere_steps_per_s_1core"],
            "load": old["load"][-1],
        }
    )
    res.setdefault("speed_history", []).append(row)


# ----------------------------------------------------------------------------------------------------------
def plots(res: dict) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: list[Path] = []

    def finish(fig, axes, name: str, legend: int | None = 8, dpi: int = 120) -> None:
        for a in axes:
            if legend:
                a.legend(fontsize=legend)
            a.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(RESULTS / name, dpi=dpi)
        plt.close(fig)
        out.append(RESULTS / name)

    fast = res.get("fast")
    if fast:
        fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
        d = fast["default"]
        for a in ax:
            a.plot(d["disp_mm"], d["force_N"], "k", lw=2, label="default (fast)")
        if "paper" in res:
            p = res["paper"]
            ax[0].plot(p["disp_mm"], p["force_N"], "k--", lw=1.5, label="default (paper specimen)")
        ax[0].plot(d["disp_mm"], d["wall_N"], "0.6", lw=1, label="cylinder (vertical), default fast")
        for k, s in res.get("params", {}).get("sets", {}).items():
            ax[1].plot(s["disp_mm"], s["force_N"], lw=1, label=k)
        for a, t in zip(ax, ("default parameters", "parameter sets (one at a time from the default)"), strict=True):
            a.set(xlabel="piston displacement [mm]", ylabel="piston force [N]", title=t)
        finish(fig, ax, "granular.curves.png", legend=7)
    if fast and "velocity" in res:
        fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
        s1, s2 = fast["default"], res["velocity"]["setup2"]
        for s, lab in ((s1, "setup 1: 50 mm/s, 20 mm/s back"), (s2, "setup 2: 5 mm/s, 2 mm/s back")):
            ax[0].plot(s["disp_mm"], s["force_N"], label=lab)
            t = np.asarray(s["time"])
            ax[1].plot(t / t[-1], s["force_N"], label=lab)
        ax[0].set(xlabel="piston displacement [mm]", ylabel="piston force [N]", title="Fig. 7 velocity study (fast)")
        ax[1].set(xlabel="time / duration", ylabel="piston force [N]", title="against normalised time")
        finish(fig, ax, "granular.velocity.png")
    if fast and "escale" in res:
        fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
        rows = [("1", fast["default"])] + [(k, res["escale"][k]) for k in ("0.1", "0.01")]
        for k, s in rows:
            f = np.asarray(s["force_N"])
            ax[0].plot(s["disp_mm"], f, label=f"E x {k} (peak {f.max():.0f} N)")
            ax[1].plot(s["disp_mm"], f / f.max(), label=f"E x {k}")
        ax[0].set(xlabel="piston displacement [mm]", ylabel="piston force [N]", title="Young's modulus scaling")
        ax[1].set(xlabel="piston displacement [mm]", ylabel="force / peak", title="shape")
        finish(fig, ax, "granular.E_scale.png")
    if STORE.exists():
        from mechcalib.inverse.data import dataset_from_store

        try:
            ds = dataset_from_store(STORE, RUN_NAME)
        except Exception as exc:  # noqa: BLE001 - a store being written may hold no finished set yet
            print(f"dataset plot skipped: {exc}")
            ds = None
        if ds is not None:
            fig, ax = plt.subplots(1, 4, figsize=(15, 3.8), gridspec_kw={"width_ratios": [2, 1, 1, 1]})
            for x in ds.X:
                ax[0].plot(x[:, 0], x[:, 1], lw=0.8)
            ax[0].set(
                xlabel="piston displacement [mm]",
                ylabel="piston force [N]",
                title=f"{len(ds)} stored sets of the 200-set dataset",
            )
            peak = ds.X[:, :, 1].max(axis=1)
            for j, nm in enumerate(ds.names):
                ax[j + 1].plot(ds.Y[:, j], peak, "o")
                ax[j + 1].set(xlabel=nm, ylabel="peak force [N]" if j == 0 else None)
            finish(fig, ax, "granular.dataset.png", legend=None, dpi=110)
    return out


def fmt(v: float, nd: int = 1) -> str:
    return f"{v:,.{nd}f}"


def report(res: dict) -> str:
    from granular_profile import profile_section, speed_history

    L = [
        "# Wet sand EEPA DEM: speed, curves, velocity study, dataset (Hu et al. (2024), section 3)",
        "",
        (
            "Written by `benchmarks/granular.py` from `granular.json`; reproduce with "
            "`NUMBA_NUM_THREADS=2 nice -n 10 python benchmarks/granular.py` (stages resume; `--redo STAGE`). "
            "Machine: 2 cores shared with other jobs; `load` is the 1-minute load average at the start and end of a "
            "stage. A sphere-step is one sphere advanced by one time step (a clump has two spheres)."
        ),
        "",
    ]
    fast, paper = res.get("fast"), res.get("paper")
    if fast:
        s = fast["specimen"]
        L += [
            "## Speed",
            "",
            "| run | bodies (spheres) | steps | wall time [s] | sphere-steps/s | load |",
            "|---|---|---|---|---|---|",
            (
                f"| `fast` specimen, generated once (pour, relax, preload) | {s['n_particles']} ({2 * s['n_particles']}) | "
                f"{s.get('pour_steps', 0) + s.get('relax_steps', 0) + s.get('preload_steps', 0):,} | "
                f"{fmt(s['seconds_here'])} (0 when cached) | | {fast['load'][0]} |"
            ),
            (
                f"| `fast`, default, 1 thread | {s['n_particles']} ({fast['n_spheres']}) | {fast['default']['steps']:,} | "
                f"{fmt(fast['seconds_1thread'])} | {fast['sphere_steps_per_s_1core']:.3g} | {fast['load'][1]} |"
            ),
            (
                f"| `fast`, batch of 2, 2 threads | same | 2 x {fast['default']['steps']:,} | "
                f"{fmt(fast['seconds_batch2_2threads'])} | {fast['sphere_steps_per_s_2cores']:.3g} | {fast['load'][1]} |"
            ),
        ]
        if "velocity" in res:
            v = res["velocity"]["setup2"]
            L.append(
                f"| `fast`, Fig. 7 setup 2 (0.6 s), 1 thread | same | {v['steps']:,} | {fmt(v['seconds'])} | "
                f"{v['sphere_steps'] / v['seconds']:.3g} | {res['velocity']['load'][1]} |"
            )
        if paper:
            ps = paper["specimen"]
            L += [
                (
                    f"| `paper` specimen, generated once | {ps['n_particles']} ({2 * ps['n_particles']}) | "
                    f"{ps.get('pour_steps', 0) + ps.get('relax_steps', 0) + ps.get('preload_steps', 0):,} | "
                    f"{fmt(ps['seconds_here'])} (0 when cached) | | {paper['load'][0]} |"
                ),
                (
                    f"| `paper`, default, 1 thread | {ps['n_particles']} ({paper['n_spheres']}) | {paper['steps']:,} | "
                    f"{fmt(paper['seconds'])} | {paper['sphere_steps_per_s_1core']:.3g} | {paper['load'][1]} |"
                ),
            ]
        L += [
            "",
            (
                f"Targets: one `fast` simulation under 60 s: **{fmt(fast['seconds_1thread'])} s**; one `paper` "
                f"simulation under 15 min: **{fmt(paper['seconds']) + ' s' if paper else 'not run'}**. The paper's "
                f"EDEM took 0.1714 h = {PAPER_EDEM_S:.0f} s per setup-1 simulation of 8238 particles and 1.2985 h = "
                f"{PAPER_EDEM_SETUP2_S:.0f} s for setup 2 (hardware not given)."
            ),
            "",
        ]
    L += speed_history(res)
    L += profile_section(res.get("profile"))
    ds = res.get("dataset")
    if ds:
        L += [
            "## The 200-set `fast` dataset through the run store",
            "",
            (
                f"{ds['sets_simulated_here']} sets simulated here ({ds['sets_done']} of {ds['n']} stored, "
                f"{ds['failed']} failed) with a pool of {ds['workers']} workers in {fmt(ds['seconds'])} s, "
                f"{fmt(ds['seconds_per_set'])} s per set including the pool's start (load {ds['load'][0]} -> "
                f"{ds['load'][1]}). The remaining {ds['n'] - ds['sets_done']} sets at that rate: "
                f"{fmt(ds['projected_rest_s'] / 60)} min. Store `{ds['store']}`, run `{ds['run_name']}`; "
                "the same command continues it (stored sets are read back, not simulated) and writes the dataset:"
            ),
            "",
            f"    {ds['command']}",
            "",
        ]
        if ds["peaks_N"]:
            pk = np.asarray(ds["peaks_N"])
            L += [f"Peak piston force over these sets: {pk.min():.0f} - {pk.max():.0f} N (mean {pk.mean():.0f} N).", ""]
        L += dataset_state()
    if fast:
        d = fast["default"]
        f, u = np.asarray(d["force_N"]), np.asarray(d["disp_mm"])
        L += [
            "## Curves (`granular.curves.png`)",
            "",
            (
                f"Default parameters, `fast`: peak {d['peak_N']:.1f} N at {u[np.argmax(f)]:.2f} mm; "
                f"force at the end of unloading {f[-1]:.1f} N; preload reached in {1e3 * d['preload_time_s']:.1f} ms "
                f"(steady: {d['preload_steady']}); time step {1e6 * d['dt_s']:.3f} us."
            ),
        ]
        if paper:
            L.append(
                f"Default parameters, `paper` specimen: peak {paper['peak_N']:.1f} N "
                f"({paper['specimen']['n_particles']} clumps, {paper['specimen']['mass_g']:.1f} g, solid "
                f"fraction {paper['specimen']['solid_fraction']:.3f})."
            )
        L.append("")
        if "params" in res:
            L += ["| set | peak [N] | peak / default | end of unloading [N] |", "|---|---|---|---|"]
            for k, s in res["params"]["sets"].items():
                L.append(f"| {k} | {s['peak_N']:.1f} | {s['peak_N'] / d['peak_N']:.3f} | {s['force_N'][-1]:.1f} |")
            L.append("")
    if fast and "velocity" in res:
        v = res["velocity"]["setup2"]
        f1, f2 = np.asarray(fast["default"]["force_N"]), np.asarray(v["force_N"])
        u1, u2 = np.asarray(fast["default"]["disp_mm"]), np.asarray(v["disp_mm"])
        grid = np.linspace(0, 2.0, 41)
        i1, i2 = int(np.argmax(f1)), int(np.argmax(f2))
        dl = np.abs(np.interp(grid, u1[: i1 + 1], f1[: i1 + 1]) - np.interp(grid, u2[: i2 + 1], f2[: i2 + 1])).max()
        L += [
            "## Velocity study, Fig. 7 (`granular.velocity.png`)",
            "",
            (
                f"Setup 1 (50 mm/s for 0.04 s, 20 mm/s back to 0.06 s): peak {f1.max():.1f} N. Setup 2 (5 mm/s for "
                f"0.4 s, 2 mm/s back to 0.6 s): peak {f2.max():.1f} N ({100 * (f2.max() / f1.max() - 1):+.1f} %); the "
                f"loading branches differ by at most {dl:.1f} N over 0-2 mm. Setup 3 (the real velocity) was not run: "
                "about 100 times setup 1."
            ),
            "",
        ]
    if fast and "escale" in res:
        L += [
            "## Young's modulus scaling (`granular.E_scale.png`)",
            "",
            "| E scale | specimen bodies | solid fraction | time step [us] | steps | wall [s] | peak [N] |",
            "|---|---|---|---|---|---|---|",
            (
                f"| 1 | {fast['specimen']['n_particles']} | {fast['specimen']['solid_fraction']:.3f} | "
                f"{1e6 * fast['default']['dt_s']:.3f} | {fast['default']['steps']:,} | {fmt(fast['seconds_1thread'])} | "
                f"{fast['default']['peak_N']:.1f} |"
            ),
        ]
        for k in ("0.1", "0.01"):
            s = res["escale"][k]
            L.append(
                f"| {k} | {s['specimen']['n_particles']} | {s['specimen']['solid_fraction']:.3f} | "
                f"{1e6 * s['dt_s']:.3f} | {s['steps']:,} | {fmt(s['seconds'])} | {s['peak_N']:.1f} |"
            )
        L += ["", "The model uses E x 1 (no scaling) by default: the curve changes with the modulus.", ""]
    if "seeds" in res:
        sd = res["seeds"]
        L += [
            "## Seed-to-seed scatter (one packing per seed, default parameters)",
            "",
            f"Load {sd['load'][0]} -> {sd['load'][1]}.",
            "",
            "| specimen | seed | bodies | mass [g] | solid fraction | peak [N] |",
            "|---|---|---|---|---|---|",
        ]
        for name in SEEDS:
            for row in sd.get(name, []):
                L.append(
                    f"| {name} | {row['seed']} | {row['n_particles']} | {row['mass_g']:.1f} | "
                    f"{row['solid_fraction']:.4f} | {row['peak_N']:.1f} |"
                )
            pk = np.array([row["peak_N"] for row in sd.get(name, [])])
            if pk.size > 1:
                L.append(f"| {name} | mean (SD) | | | | {pk.mean():.0f} ({pk.std(ddof=1):.0f}) |")
        L += ["", "The paper's Table 3 cases peak at 405-678 N.", ""]
    return "\n".join(L) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--redo", default="")
    ap.add_argument("--dataset-sets", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args(argv)
    stages = [s for s in a.stages.split(",") if s]
    redo = {s for s in a.redo.split(",") if s}
    bad = [s for s in stages + list(redo) if s not in STAGES]
    if bad:
        ap.error(f"unknown stage(s) {bad}; the stages are {list(STAGES)}")
    res = load()
    for st in stages:
        if st in res and st not in redo:
            print(f"{st}: stored, skipped (--redo {st} runs it again)")
            continue
        t0 = time.perf_counter()
        print(f"{st}: running (load {loadavg()})", flush=True)
        if st in ("fast", "paper"):
            keep_speed(res, st)
        if st == "dataset":
            res[st] = stage_dataset(res, a.dataset_sets, a.workers)
        else:
            res[st] = globals()[f"stage_{st}"](res)
        res[st]["stage_seconds"] = time.perf_counter() - t0
        save(res)
        MD_PATH.write_text(report(res))
        plots(res)
        print(f"{st}: done in {time.perf_counter() - t0:.1f} s", flush=True)
    MD_PATH.write_text(report(res))
    for p in plots(res):
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
