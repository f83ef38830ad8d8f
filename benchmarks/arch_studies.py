"""Sensitivity studies of the masonry-arch DEM (Kibriya et al. (2023) sections 2.3-2.4) and its checks against the
limit analysis. Each function returns plain rows (dicts) and optionally writes a PNG.

Run them all (on demand, not in the test suite):

    python benchmarks/arch_studies.py                       # writes benchmarks/results/arch.studies/
    python benchmarks/arch_studies.py OUTDIR
    python benchmarks/arch_studies.py rate                  # the rate effect: benchmarks/results/arch.rate.md

``OUTDIR/studies.md`` gets every table, the PNGs go beside it (docs/masonry.md quotes them).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mechcalib.core.data import Experiment
from mechcalib.core.model import SimulationFailure
from mechcalib.models.masonry import dem
from mechcalib.models.masonry.arch import MEASURED_PEAK_KN, PULATSU, MasonryArch
from mechcalib.models.masonry.limit import hinge_mechanisms, static_collapse
from mechcalib.objectives import OverlapRSS
from mechcalib.reporting import plot_arch_run

RESULTS = Path(__file__).resolve().parent / "results"

PULATSU_THETA = np.array([[PULATSU["kn"], PULATSU["ks"], PULATSU["phi"]]])
# The studies of sections 3-4 of docs/masonry.md characterise the real-mass model (studies.md); the default
# inertia scaling and what led to it are in rate_report (arch.rate.md).
REAL = {"mass_scale": 1.0}


def _force_at(run, u_mm: float) -> float:
    c = run.response["vertical"]
    return float(np.interp(u_mm, c.x, c.y))


def _curves_png(runs: dict[str, object], path: Path | None, title: str) -> None:
    if path is None:
        return
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for label, r in runs.items():
        v, h = r.response["vertical"], r.response["horizontal"]
        ax[0].plot(v.x, v.y, lw=0.8, label=label)
        ax[1].plot(h.x, h.y, lw=0.8, label=label)
    ax[0].axhline(MEASURED_PEAK_KN, color="k", ls=":", lw=0.8, label="measured peak 2.71 kN")
    ax[0].set_xlabel("vertical plate displacement [mm]")
    ax[1].set_xlabel(f"horizontal displacement, {r.response['horizontal'].x_name.split('(')[-1].rstrip(')')} [mm]")
    for a in ax:
        a.set_ylabel("force [kN]")
        a.grid(alpha=0.3)
    ax[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def contact_placement(velocities: Sequence[float] = (10.0, 1.0), png: Path | None = None) -> list[dict]:
    """Peak load for each contact layout (2 contacts at the joint edges, evenly spaced with and without
    edge contacts, Pulatsu's 8 sub-blocks, surface mesh 12 mm) at each velocity [mm/s]."""
    layouts = [
        ("edges (2)", {"contacts": "edges"}),
        ("uniform 15 (edges included)", {"contacts": "uniform", "n_contacts": 15}),
        ("midpoint 15 (inset)", {"contacts": "midpoint", "n_contacts": 15}),
        ("pulatsu (17)", {"contacts": "pulatsu"}),
        ("surface h = 12 mm (15)", {"contacts": "surface", "mesh_size": 12.0}),
        ("uniform 5", {"contacts": "uniform", "n_contacts": 5}),
        ("midpoint 5 (inset)", {"contacts": "midpoint", "n_contacts": 5}),
    ]
    rows, runs = [], {}
    for label, opts in layouts:
        m = MasonryArch(**opts)
        for v in velocities:
            (r,) = m.run(PULATSU_THETA, {"velocity": v, **REAL})
            rows.append(
                {
                    "layout": label,
                    "velocity": v,
                    "peak_kN": r.peak_force,
                    "u_peak_mm": r.peak_displacement,
                    "F12_kN": _force_at(r, 12.0),
                    "mode": r.mode_end.summary(),
                }
            )
            if v == min(velocities):
                runs[label] = r
    _curves_png(runs, png, f"contact layout, Pulatsu's parameters, {min(velocities):g} mm/s")
    return rows


def velocity_study(
    velocities: Sequence[float] = (0.5, 1.0, 5.0, 10.0, 50.0),
    contacts: str = "uniform",
    png: Path | None = None,
    **opts,
) -> list[dict]:
    """Kibriya et al. (2023) Fig. 7: the response against the loading velocity [mm/s]."""
    m = MasonryArch(contacts=contacts, **opts)
    rows, runs = [], {}
    for v in velocities:
        t0 = time.perf_counter()
        (r,) = m.run(PULATSU_THETA, {"velocity": v, **REAL})
        rows.append(
            {
                "velocity": v,
                "peak_kN": r.peak_force,
                "u_peak_mm": r.peak_displacement,
                "F1.6_kN": _force_at(r, 1.6),
                "F12_kN": _force_at(r, 12.0),
                "seconds": time.perf_counter() - t0,
                "steps": r.load_steps,
                "mode": r.mode_end.summary(),
            }
        )
        runs[f"{v:g} mm/s"] = r
    _curves_png(runs, png, f"loading velocity ({contacts}), Pulatsu's parameters")
    return rows


RATE_VARIANTS: tuple[dict, ...] = (
    {"velocity": 0.5},
    {"velocity": 1.0},
    {"velocity": 10.0},
    {"velocity": 10.0, "dt_factor": 0.25},
    {"velocity": 10.0, "dt_factor": 0.125},
    {"velocity": 10.0, "kp_factor": 0.1},
    {"velocity": 10.0, "kp_factor": 10.0},
    {"velocity": 1.0, "alpha": 0.4},
    {"velocity": 10.0, "alpha": 0.4},
    {"velocity": 1.0, "alpha": 0.0},
    {"velocity": 10.0, "alpha": 0.0},
    {"velocity": 50.0},
    {"velocity": 50.0, "alpha": 0.4},
    {"velocity": 50.0, "alpha": 0.0},
)


def rate_study(
    variants: Sequence[dict] = RATE_VARIANTS, contacts: str = "uniform", max_displacement: float = 12.0, **opts
) -> list[dict]:
    """Where the rate sensitivity comes from: Pulatsu's parameters at a velocity [mm/s], with the time step
    (``dt_factor``), the loading plate's spring (``kp_factor`` times the default ``kn x 110 mm x 200 mm``; the
    plate itself is kinematic, it has no mass) and the local damping (``alpha``) varied one at a time.
    Rows: peak, force at 1.6 and 12 mm, the largest kinetic energy of the blocks during loading, steps."""
    m = MasonryArch(contacts=contacts, **opts)
    kn, ks, phi = (PULATSU[k] for k in ("kn", "ks", "phi"))
    rows = []
    for var in variants:
        v, a = float(var["velocity"]), float(var.get("alpha", 0.8))
        f, kpf = float(var.get("dt_factor", 0.5)), float(var.get("kp_factor", 1.0))
        t0 = time.perf_counter()
        res = dem.run_batch(
            m.system,
            kn,
            ks,
            phi,
            velocity=v / 1e3,
            duration=max_displacement / v,
            n_samples=241,
            alpha=a,
            dt_factor=f,
            kp=kpf * kn * m.system.load_area,
            eq_tol=1e-5,
            rounding=0.02,
        )
        s = res.samples[0]
        u, F = s[:, dem.S_DISP] * 1e3, s[:, dem.S_FORCE] / 1e3
        rows.append(
            {
                "velocity": v,
                "alpha": a,
                "dt_factor": f,
                "kp_factor": kpf,
                "dt_ms": float(res.dt[0]) * 1e3,
                "peak_kN": float(F.max()),
                "F1.6_kN": float(np.interp(1.6, u, F)),
                "F12_kN": float(np.interp(max_displacement, u, F)),
                "max_KE_mJ": float(s[:, dem.S_KE].max()) * 1e3,
                "steps": int(res.load_steps[0]),
                "seconds": time.perf_counter() - t0,
            }
        )
    return rows


def running_mean(u: np.ndarray, F: np.ndarray, width: float = 0.5) -> np.ndarray:
    """``F`` averaged over a centred window of ``width`` [mm] of ``u`` (on a 0.01 mm grid; the window is cut at
    the curve's ends), at the points ``u``."""
    ok = np.isfinite(u) & np.isfinite(F)
    u, F = u[ok], F[ok]
    grid = np.arange(0.0, u.max() + 1e-9, 0.01)
    g = np.interp(grid, u, F)
    h = max(1, int(round(width / 0.01)) // 2)
    c = np.concatenate(([0.0], np.cumsum(g)))
    lo = np.clip(np.arange(grid.size) - h, 0, grid.size)
    hi = np.clip(np.arange(grid.size) + h + 1, 0, grid.size)
    return np.interp(u, grid, (c[hi] - c[lo]) / (hi - lo))


#: (label, settings of :func:`dem.run_batch`) of :func:`rate_mechanisms`; every row varies one thing from the
#: first (local damping 0.8, a velocity step, a massless plate, real masses, dt_factor 0.5).
RATE_MECHANISMS: tuple[tuple[str, dict], ...] = (
    ("present model", {}),
    ("plate mass 5 kg (actuator spring = plate spring)", {"plate_mass": 5.0}),
    ("plate mass 50 kg", {"plate_mass": 50.0}),
    ("velocity ramp 0.02 s", {"ramp": 0.02}),
    ("velocity ramp 0.1 s", {"ramp": 0.1}),
    ("local damping 0.4", {"alpha": 0.4}),
    ("combined damping 0.8", {"damping_form": "combined"}),
    ("local 0.8 + contact dashpots xi = 0.1", {"viscous": 0.1}),
    ("local 0.8 + contact dashpots xi = 0.5", {"viscous": 0.5}),
    ("contact dashpots xi = 0.5 only", {"alpha": 0.0, "viscous": 0.5}),
    ("no damping, ramp 0.1 s", {"alpha": 0.0, "ramp": 0.1}),
    ("masses x 0.01 (= 10x slower)", {"mass_scale": 0.01}),
    ("masses x 0.1", {"mass_scale": 0.1}),
    ("masses x 10", {"mass_scale": 10.0}),
    ("dt_factor 0.125 (state changes within a step)", {"dt_factor": 0.125}),
    ("kn x (1 + 1e-12) (round-off)", {"kn_rel": 1e-12}),
)


def _mechanism_run(system, v: float, umax: float, settings: dict) -> dict:
    kn, ks, phi = (PULATSU[k] for k in ("kn", "ks", "phi"))
    st = {"alpha": 0.8, "dt_factor": 0.5, **settings}
    kn *= 1.0 + st.pop("kn_rel", 0.0)
    res = dem.run_batch(
        system,
        kn,
        ks,
        phi,
        velocity=v / 1e3,
        duration=umax / v + 0.5 * float(st.get("ramp", 0.0)),
        n_samples=int(round(umax / 0.05)) + 1,
        eq_tol=1e-5,
        rounding=0.02,
        **st,
    )
    s = res.samples[0]
    u, F = s[:, dem.S_DISP] * 1e3, s[:, dem.S_FORCE] / 1e3
    return {"u": u, "F": F, "res": res}


def rate_mechanisms(
    mechanisms: Sequence[tuple[str, dict]] = RATE_MECHANISMS,
    contacts: str = "uniform",
    max_displacement: float = 12.0,
) -> list[dict]:
    """The rate effect, one mechanism at a time (Pulatsu's parameters): for each variant the peak at 10 mm/s over
    0-12 mm read three ways (the largest sample of the default output every 0.05 mm, its 0.5 mm running mean,
    the largest force of any step), the force at 1.6 mm at 1 and 50 mm/s and their ratio, the sub-contact state
    changes per loading step at 10 mm/s (open/closed, stick/slip), the failure mode at 12 mm and the cost."""
    from mechcalib.models.masonry.failure import failure_mode

    m = MasonryArch(contacts=contacts)
    rows = []
    for label, st in mechanisms:
        t0 = time.perf_counter()
        r = {v: _mechanism_run(m.system, v, max_displacement, st) for v in (1.0, 10.0, 50.0)}
        u, F, res = r[10.0]["u"], r[10.0]["F"], r[10.0]["res"]
        f1 = {v: float(np.interp(1.6, r[v]["u"], r[v]["F"])) for v in (1.0, 50.0)}
        mode = failure_mode(m.assembly, m.centroids, res.pos_eq[0], res.pos_end[0])
        steps = max(int(res.load_steps[0]), 1)
        rows.append(
            {
                "variant": label,
                "peak10_kN": float(np.nanmax(F)),
                "mean0.5_kN": float(np.nanmax(running_mean(u, F))),
                "step_peak_kN": float(res.step_peak[0]) / 1e3,
                "F1.6@1_kN": f1[1.0],
                "F1.6@50_kN": f1[50.0],
                "ratio_50/1": f1[50.0] / f1[1.0],
                "peak1_kN": float(np.nanmax(r[1.0]["F"])),
                "open/step": float(res.n_open[0]) / steps,
                "slip/step": float(res.n_slip[0]) / steps,
                "hinges+sliding@12mm": f"{mode.n_hinges}+{mode.n_sliding}",
                "steps10": steps,
                "seconds": time.perf_counter() - t0,
            }
        )
    return rows


def rate_fix(layouts: Sequence[str] = ("uniform", "pulatsu"), scales: Sequence[float] = (1.0, 0.01)) -> list[dict]:
    """The model's default output (``MasonryArch.run``) with real masses and with the default inertia scaling, for
    each layout: the peak over 0-12 mm at 10 mm/s and its 0.5 mm running mean against the measured 2.71 kN, the
    force at 1.6 mm at 1 and 50 mm/s and their ratio (Kibriya et al. (2023) Fig. 7: 1.19-1.54), the real-mass
    0.5 mm/s peak (quasi-static), the limit-analysis load, and the failure modes at the peak and at 12 mm."""
    rows = []
    for lay in layouts:
        m = MasonryArch(contacts=lay)
        (qs,) = m.run(PULATSU_THETA, {"velocity": 0.5, "mass_scale": 1.0})
        lim = static_collapse(m.assembly, mu=math.tan(math.radians(PULATSU["phi"]))).load / 1e3
        for c in scales:
            r = {v: m.run(PULATSU_THETA, {"velocity": v, "mass_scale": c})[0] for v in (1.0, 10.0, 50.0)}
            cv = r[10.0].response["vertical"]
            f1 = {v: _force_at(r[v], 1.6) for v in (1.0, 50.0)}
            rows.append(
                {
                    "layout": lay,
                    "mass_scale": c,
                    "peak10_kN": r[10.0].peak_force,
                    "vs_2.71": r[10.0].peak_force / MEASURED_PEAK_KN - 1.0,
                    "mean0.5_kN": float(np.nanmax(running_mean(cv.x, cv.y))),
                    "F1.6@1_kN": f1[1.0],
                    "F1.6@50_kN": f1[50.0],
                    "ratio_50/1": f1[50.0] / f1[1.0],
                    "F12@10_kN": _force_at(r[10.0], 12.0),
                    "qs_peak0.5_kN": qs.peak_force,
                    "limit_kN": lim,
                    "mode_peak": f"{r[10.0].mode_peak.n_hinges} H + {r[10.0].mode_peak.n_sliding} S",
                    "mode_12mm": r[10.0].mode_end.summary(),
                    "steps10": r[10.0].load_steps,
                }
            )
    return rows


def velocity_sweep(
    layouts: Sequence[str] = ("uniform", "pulatsu"), velocities: Sequence[float] = (0.5, 1.0, 5.0, 10.0, 50.0)
) -> list[dict]:
    """Kibriya et al. (2023) Fig. 7 with the default inertia scaling: peak, force at 1.6 and 12 mm per velocity."""
    rows = []
    for lay in layouts:
        m = MasonryArch(contacts=lay)
        for v in velocities:
            (r,) = m.run(PULATSU_THETA, {"velocity": v})
            rows.append(
                {
                    "layout": lay,
                    "velocity": v,
                    "peak_kN": r.peak_force,
                    "u_peak_mm": r.peak_displacement,
                    "F1.6_kN": _force_at(r, 1.6),
                    "F12_kN": _force_at(r, 12.0),
                    "steps": r.load_steps,
                }
            )
    return rows


def displacement_study(layouts: Sequence[str] = ("pulatsu", "uniform"), png: Path | None = None) -> list[dict]:
    """Kibriya et al. (2023) Fig. 4: small against large displacements, Pulatsu's parameters at 10 mm/s (default
    inertia scaling): peak, the force at 6 and 12 mm and the loss of strength by 12 mm, the mode at 12 mm."""
    rows, runs = [], {}
    for lay in layouts:
        for d in ("large", "small"):
            (r,) = MasonryArch(contacts=lay, displacements=d).run(PULATSU_THETA)
            rows.append(
                {
                    "layout": lay,
                    "displacements": d,
                    "peak_kN": r.peak_force,
                    "u_peak_mm": r.peak_displacement,
                    "F6_kN": _force_at(r, 6.0),
                    "F12_kN": _force_at(r, 12.0),
                    "drop_by_12mm": 1.0 - _force_at(r, 12.0) / r.peak_force,
                    "mode_12mm": r.mode_end.summary(),
                }
            )
            if lay == layouts[0]:
                runs[f"{d} displacements ({lay})"] = r
    _curves_png(runs, png, "small against large displacements (Fig. 4), 10 mm/s, default inertia scaling")
    return rows


RATE_HEADER = """# The arch's rate effect, measured (Pulatsu's parameters kn = 4 GPa/m, ks = 1.6 GPa/m, phi = 30.5 deg)

Regenerate: `PYTHONPATH=src python benchmarks/arch_studies.py rate` (about 3 minutes on an idle core; 13 minutes at load 22).
Peaks are over 0-12 mm; `peak10` is the largest sample of the output (every 0.05 mm) at 10 mm/s, `mean0.5` the
largest value of its 0.5 mm running mean, `step_peak` the largest plate force of any time step; `ratio_50/1`
is the force at 1.6 mm at 50 mm/s over that at 1 mm/s (Kibriya et al. (2023) Fig. 7: 1.19 for Pulatsu's
geometry, 1.54 for the surface mesh; target <= 1.69). `open/step` and `slip/step`: sub-contact changes between
open and closed, and between sticking and slipping, per loading step at 10 mm/s. Hinges + sliding joints at
12 mm by `failure.failure_mode`.
"""


def rate_report(path: Path) -> None:
    """Write the rate-effect section (``arch.rate.md``): mechanisms, the fix for both layouts, the sweep."""
    parts = [RATE_HEADER]
    parts += ["## 1. Mechanisms, one at a time (uniform 15 contacts, real masses unless varied)"]
    parts += [_table(rate_mechanisms())]
    parts += ["## 2. The default output with real masses (mass_scale 1) and the default inertia scaling (0.01)"]
    parts += [_table(rate_fix())]
    parts += ["## 3. Velocity sweep with the default inertia scaling", _table(velocity_sweep())]
    parts += [
        "## 4. Small against large displacements (Kibriya et al. (2023) Fig. 4; the experiment lost 35 % by 12 mm)"
    ]
    parts += [_table(displacement_study(png=path.with_name("arch.fig4.png"))), "![fig4](arch.fig4.png)"]
    path.write_text("\n\n".join(parts) + "\n")


def mesh_study(
    sizes: Sequence[float] = (10, 12, 15, 20, 25, 30, 35), velocity: float = 10.0, png: Path | None = None
) -> list[dict]:
    """Kibriya et al. (2023) Fig. 8: surface-meshed joints of size h [mm], with Pulatsu's geometry for reference."""
    rows, runs = [], {}
    for label, opts in [("pulatsu", {"contacts": "pulatsu"})] + [
        (f"h = {h:g} mm", {"contacts": "surface", "mesh_size": float(h)}) for h in sizes
    ]:
        m = MasonryArch(**opts)
        (r,) = m.run(PULATSU_THETA, {"velocity": velocity, **REAL})
        rows.append(
            {
                "mesh": label,
                "contacts_per_joint": int(m.system.n_contacts // len(m.assembly.joints)),
                "peak_kN": r.peak_force,
                "F1.6_kN": _force_at(r, 1.6),
                "F12_kN": _force_at(r, 12.0),
                "mode": r.mode_end.summary(),
            }
        )
        runs[label] = r
    _curves_png(runs, png, f"joint mesh size, {velocity:g} mm/s")
    return rows


def friction_study(phis: Sequence[float] = (27.0, 30.5, 35.0), velocity: float = 1.0) -> list[dict]:
    """Kibriya et al. (2023) section 2.3: sliding failure at 27 deg, hinges at 35 deg, mixed at 30.5 deg."""
    m = MasonryArch()
    th = np.array([[PULATSU["kn"], PULATSU["ks"], p] for p in phis])
    rows = []
    for p, r in zip(phis, m.run(th, {"velocity": velocity, **REAL}), strict=True):
        rows.append(
            {
                "phi": p,
                "peak_kN": r.peak_force,
                "F12_kN": _force_at(r, 12.0),
                "mode": r.mode_end.summary(),
                "limit_kN": static_collapse(m.assembly, mu=math.tan(math.radians(p))).load / 1e3,
            }
        )
    return rows


def limit_convergence(
    kns: Sequence[float] = (4e8, 4e9, 4e10),
    velocities: Sequence[float] = (1.0, 0.2),
    contacts: Sequence[str] = ("edges", "uniform"),
    phi: float = 60.0,
) -> tuple[dict, list[dict]]:
    """DEM peak (``ks = 0.4 kn``, high friction, slow loading) against the rigid-block collapse load."""
    ref = MasonryArch()
    lp = static_collapse(ref.assembly)
    km = hinge_mechanisms(ref.assembly)
    limit = {
        "static_kN": lp.load / 1e3,
        "kinematic_kN": km.load / 1e3,
        "hinges": lp.hinges,
        "friction_30.5_kN": static_collapse(ref.assembly, mu=math.tan(math.radians(30.5))).load / 1e3,
    }
    rows = []
    for lay in contacts:
        m = MasonryArch(contacts=lay)
        for v in velocities:
            th = np.array([[k, 0.4 * k, phi] for k in kns])
            for k, r in zip(
                kns, m.run(th, {"velocity": v, "max_displacement": 3.0, "n_samples": 301, **REAL}), strict=True
            ):
                rows.append(
                    {
                        "contacts": lay,
                        "velocity": v,
                        "kn": k,
                        "peak_kN": r.peak_force,
                        "ratio_to_limit": r.peak_force / limit["static_kN"],
                        "u_peak_mm": r.peak_displacement,
                        "hinges": r.mode_peak.hinges,
                    }
                )
    return limit, rows


def reference_experiment(velocity: float = 0.5, contacts: str = "pulatsu") -> Experiment:
    """The documented synthetic reference of the calibration studies: Pulatsu's geometry and parameters
    loaded slowly (0.5 mm/s, Kibriya et al. (2023) section 4.2.3) to 12 mm, simulated afresh (the shipped copy is
    :func:`mechcalib.models.masonry.reference_experiment`). Its name says it is simulated; its conditions are
    model conditions only, so it can serve in a :class:`~mechcalib.core.problem.Problem`."""
    m = MasonryArch(contacts=contacts)
    (resp,) = m.simulate(PULATSU_THETA, {"velocity": velocity, **REAL})
    return Experiment(
        dict(resp), conditions={"velocity": velocity, **REAL}, name=f"simulated_reference_{contacts}_{velocity:g}mmps"
    )


def objective_contour(
    reference: Experiment,
    *,
    n_kn: int = 13,
    n_phi: int = 13,
    ratio: float = 2.5,
    velocity: float = 10.0,
    contacts: str = "pulatsu",
    png: Path | None = None,
) -> dict:
    """Kibriya et al. (2023) Fig. 12: objective 1 over a linear grid of kn in [1e8, 1e10] Pa/m and phi in [25, 45] deg
    with ``ks = kn / ratio``, the model at ``velocity`` against ``reference``. Returns the grid and losses."""
    m = MasonryArch(contacts=contacts)
    kn = np.linspace(1e8, 1e10, n_kn)
    phi = np.linspace(25.0, 45.0, n_phi)
    K, P = np.meshgrid(kn, phi, indexing="ij")
    theta = np.column_stack([K.ravel(), K.ravel() / ratio, P.ravel()])
    obj = OverlapRSS()
    losses = np.array(
        [
            np.inf if isinstance(r, SimulationFailure) else obj(r, reference)
            for r in m.simulate(theta, {"velocity": velocity, **REAL})
        ]
    ).reshape(K.shape)
    if png is not None:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        cs = ax.contourf(K / 1e9, P, losses, levels=20, cmap="viridis")
        fig.colorbar(cs, ax=ax, label="objective 1 [kN]")
        i, j = np.unravel_index(np.argmin(losses), losses.shape)
        ax.plot(
            K[i, j] / 1e9, P[i, j], "r*", ms=12, label=f"grid minimum ({K[i, j] / 1e9:.2f} GPa/m, {P[i, j]:.1f} deg)"
        )
        ax.plot(PULATSU["kn"] / 1e9, PULATSU["phi"], "wo", mec="k", label="reference parameters")
        ax.set_xlabel("kn [GPa/m] (ks = kn / 2.5)")
        ax.set_ylabel("phi [deg]")
        ax.legend(fontsize=8)
        ax.set_title(f"objective 1, model at {velocity:g} mm/s against {reference.name}", fontsize=9)
        fig.tight_layout()
        fig.savefig(png, dpi=110)
        plt.close(fig)
    return {"kn": kn, "phi": phi, "loss": losses}


def _table(rows: list[dict]) -> str:
    keys = list(rows[0])
    fmt = lambda v: f"{v:.4g}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(fmt(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["rate"]:
        path = Path(argv[1]) if len(argv) > 1 else RESULTS / "arch.rate.md"
        rate_report(path)
        sys.stdout.write(f"wrote {path}\n")
        return 0
    out = Path(argv[0]) if argv else RESULTS / "arch.studies"
    out.mkdir(parents=True, exist_ok=True)
    parts = []
    limit, conv = limit_convergence()
    parts += ["## Limit analysis", str(limit), "", "## DEM towards the limit load", _table(conv)]
    parts += ["## Contact placement", _table(contact_placement(png=out / "contact_placement.png"))]
    parts += ["## Velocity (uniform 15)", _table(velocity_study(png=out / "velocity_uniform.png"))]
    parts += ["## Velocity (pulatsu)", _table(velocity_study(contacts="pulatsu", png=out / "velocity_pulatsu.png"))]
    parts += ["## Mesh size", _table(mesh_study(png=out / "mesh.png"))]
    parts += ["## Rate sensitivity: time step, plate spring, local damping (uniform 15)", _table(rate_study())]
    parts += ["## Friction angle", _table(friction_study())]
    ref = reference_experiment()
    grid = objective_contour(ref, png=out / "objective_contour.png")
    i, j = np.unravel_index(np.argmin(grid["loss"]), grid["loss"].shape)
    base = OverlapRSS()(MasonryArch(contacts="pulatsu").simulate(PULATSU_THETA, REAL)[0], ref)
    parts += [
        "## Objective 1 over kn x phi (ks = kn / 2.5), model at 10 mm/s against the 0.5 mm/s reference",
        (
            f"grid minimum {grid['loss'][i, j]:.4g} at kn = {grid['kn'][i] / 1e9:.3g} GPa/m, "
            f"phi = {grid['phi'][j]:.3g} deg; the reference parameters at 10 mm/s score {base:.4g}"
        ),
    ]
    m = MasonryArch()
    (r,) = m.run(PULATSU_THETA, {"velocity": 1.0, **REAL})
    plot_arch_run(
        m,
        r,
        state="end",
        scale=5,
        path=out / "deformed_1mmps.png",
        title="Pulatsu's parameters, 1 mm/s, 12 mm (x5): " + r.mode_end.summary(),
    )
    (r,) = m.run(PULATSU_THETA, REAL)
    plot_arch_run(
        m, r, state="end", scale=5, path=out / "deformed_10mmps.png", title="Pulatsu's parameters, 10 mm/s, 12 mm (x5)"
    )
    (out / "studies.md").write_text("\n\n".join(parts) + "\n")
    sys.stdout.write(f"wrote {out / 'studies.md'} and the PNGs beside it\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
