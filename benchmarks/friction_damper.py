"""Calibration of hysteretic laws on a measured friction damper, checked on an earthquake record.

Data: the banded rotary friction device of Coble et al. (2022) (CC BY-SA 4.0), decimated to 128 Hz in
``examples/friction_damper/data`` (``examples/friction_damper/prepare_data.py`` makes them from the raw
1024 Hz records). Displacement imposed, friction force measured, in inches and kips.

For every law (Coulomb friction ``F = Fc sgn(u') + F0`` as the baseline; the bilinear laws of Ding et al.
(2021); Bouc-Wen in OpenSees' parameterisation with ``beta = 0.5`` fixed and ``Ao`` free, which fixes the
scale of ``z`` so that ``(1 - alpha) ko`` is the slip force; the Bouc-Wen-Baber-Noori law), each with a force
offset ``F0``, mechcalib's default method (``auto``) calibrates

* one fit per sinusoidal test (seven, for the spread of the parameters), and
* one fit per band tension (0 lb: one test; 30 lb: five tests together; 36 lb: one test),

minimising the squared force error at the measured samples (``l2``), every evaluation in the run store
``benchmarks/results/friction_damper.sqlite`` (a stopped study resumes). The Kocaeli earthquake profile is then
simulated, without refitting, with each band tension's parameters. NRMSE = RMS(F_sim - F_meas) / RMS(F_meas).

    PYTHONPATH=src python benchmarks/friction_damper.py [--quick]

writes ``benchmarks/results/friction_damper.md``, ``friction_damper.png`` and ``friction_damper.summary.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

import mechcalib as mc
from mechcalib.core.data import Curve, read_table
from mechcalib.core.problem import Problem
from mechcalib.models.hysteresis.conventions import opensees_to_boucwen
from mechcalib.models.hysteresis.protocol import DisplacementProtocol
from mechcalib.objectives.curves import L2
from mechcalib.optimizers import make_optimizer

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "friction_damper" / "data"
RESULTS = ROOT / "benchmarks" / "results"
SINES = {  # file stem -> band tension [lb]
    "sine_1Hz_0lb_1in": 0,
    "sine_0.5Hz_30lb_1in": 30,
    "sine_1Hz_30lb_0.5in": 30,
    "sine_1Hz_30lb_1in": 30,
    "sine_1Hz_30lb_1.5in": 30,
    "sine_2Hz_30lb_0.5in": 30,
    "sine_1Hz_36lb_1in": 36,
}
QUAKE = "earthquake_KocaeliDBE"

_F0 = {"F0": {"bounds": (-1.0, 1.0)}}
_BW = {
    "alpha": {"bounds": (-0.2, 0.5)},
    "ko": {"bounds": (0.1, 10.0, "log")},  # with beta + gamma near 1, |z| <= about 1: (1 - alpha) ko ~ slip force
    "n": {"bounds": (0.5, 5.0)},
    "gamma": {"bounds": (-0.45, 0.5)},
    "beta": {"fixed": 0.5},  # fixes the scale of z (ko, Ao, beta, gamma are redundant by one factor)
    "Ao": {"bounds": (1.0, 1000.0, "log"), "fixed": None},  # initial stiffness / ko [1/in]
}
#: law name -> (model options, parameter settings for the measured scale (in, kip), evaluation budget)
LAWS: dict[str, tuple[dict[str, Any], dict[str, dict[str, Any]], int]] = {
    "coulomb": ({"law": "coulomb"}, {"Fc": {"bounds": (0.1, 6.0)}, **_F0}, 60),
    "bilinear_kinematic": (
        {"law": "bilinear_kinematic"},
        {"a1": {"bounds": (1.0, 1000.0, "log")}, "a2": {"bounds": (-2.0, 5.0)}, "a3": {"bounds": (0.1, 6.0)}, **_F0},
        200,
    ),
    "bilinear_equal": (
        {"law": "bilinear_equal"},
        {
            "a1": {"bounds": (1.0, 1000.0, "log")},
            "a2": {"bounds": (1.0, 1000.0, "log")},
            "a3": {"bounds": (0.1, 6.0)},
            **_F0,
        },
        200,
    ),
    "boucwen": (
        {"law": "boucwen_opensees"},
        {**_BW, **{d: {"fixed": 0.0} for d in ("deltaA", "deltaNu", "deltaEta")}, **_F0},  # no degradation
        300,
    ),
    "bwbn": (
        {"law": "bwbn"},
        {
            **_BW,
            "q": {"bounds": (0.0, 0.5)},
            "zetas": {"bounds": (0.0, 0.95)},
            "p": {"bounds": (0.01, 10.0, "log")},
            "Shi": {"bounds": (0.02, 2.0, "log")},
            "deltaShi": {"fixed": 0.0},
            "lambda": {"bounds": (0.02, 2.0, "log")},
            **_F0,
        },
        500,
    ),
}


def load(stem: str) -> mc.Experiment:
    """A record as an experiment: the force channel against time, the displacement as the model's condition."""
    table, _ = read_table(DATA / f"{stem}.csv")
    t, u, f = table["time"], table["displacement"], table["force"]
    force = Curve(t, f, t=t, x_name="time", y_name="force", x_unit="s", y_unit="kip")
    return mc.Experiment({"force": force}, conditions={"displacement": {"t": t, "u": u}}, name=stem)


def build(law: str) -> tuple[DisplacementProtocol, mc.ParameterSpace]:
    options, settings, _ = LAWS[law]
    model = DisplacementProtocol(**options, offset=True, force_unit="kip", displacement_unit="in")
    return model, model.space.with_settings(**settings)


def nrmse(model: DisplacementProtocol, theta: np.ndarray, exp: mc.Experiment) -> tuple[float, np.ndarray]:
    (resp,) = model.simulate(theta[None], exp.conditions)
    f = exp["force"].y
    sim = resp["force"].y
    return float(np.sqrt(np.mean((sim - f) ** 2)) / np.sqrt(np.mean(f**2))), sim


def calibrate(law: str, exps: list[mc.Experiment], run_name: str, budget: int, store: Path) -> dict[str, Any]:
    model, space = build(law)
    prob = Problem(model, exps, L2(), space=space)
    t0 = time.perf_counter()
    res = mc.calibrate(
        prob,
        make_optimizer("auto", seed=0),
        max_evals=budget,
        store=store,
        run_name=run_name,
    )
    theta = space.to_full(res.best_x[None])[0]
    return {
        "law": law,
        "tests": [e.name for e in exps],
        "params": dict(zip(space.names, map(float, theta), strict=True)),
        "free": list(space.free_names),
        "n_evals": int(res.n_evals),
        "seconds": time.perf_counter() - t0,
        "nrmse": {e.name: nrmse(model, theta, e)[0] for e in exps},
    }


def run(quick: bool) -> dict[str, Any]:
    store = RESULTS / ("friction_damper.quick.sqlite" if quick else "friction_damper.sqlite")
    exps = {s: load(s) for s in SINES}
    quake = load(QUAKE)
    out: dict[str, Any] = {"per_test": {}, "per_tension": {}, "validation": {}}
    for law, (_, _, budget) in LAWS.items():
        budget = min(budget, 40) if quick else budget
        logging.info("law %s", law)
        out["per_test"][law] = {s: calibrate(law, [e], f"{law}:{s}", budget, store) for s, e in exps.items()}
        out["per_tension"][law] = {}
        for tension in sorted(set(SINES.values())):
            group = [exps[s] for s, lb in SINES.items() if lb == tension]
            if len(group) == 1:  # one test: its own fit
                out["per_tension"][law][tension] = out["per_test"][law][group[0].name]
            else:
                out["per_tension"][law][tension] = calibrate(law, group, f"{law}:{tension}lb", budget, store)
        model, space = build(law)
        val = {}
        for tension, fit in out["per_tension"][law].items():
            theta = np.array([fit["params"][n] for n in space.names])
            val[f"{tension} lb"] = nrmse(model, theta, quake)[0]
        spread = []
        for fit in out["per_test"][law].values():
            theta = np.array([fit["params"][n] for n in space.names])
            spread.append(nrmse(model, theta, quake)[0])
        val["per-test fits (min-max)"] = [min(spread), max(spread)]
        out["validation"][law] = val
    return out


# -- report -----------------------------------------------------------------------------------------------------
def figure(out: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    best = best_law(out)
    fig, axes = plt.subplots(2, 4, figsize=(16, 7.5))
    stems = [*SINES, QUAKE]
    for ax, stem in zip(axes.flat, stems, strict=True):
        exp = load(stem)
        u = exp.conditions["displacement"]["u"]
        ax.plot(u, exp["force"].y, color="0.6", lw=1.0, label="measured")
        for law, color in ((best, "C3"), ("coulomb", "C0")):
            model, space = build(law)
            fit = out["per_test"][law][stem] if stem in SINES else out["per_tension"][law][36]
            theta = np.array([fit["params"][n] for n in space.names])
            e, sim = nrmse(model, theta, exp)
            ax.plot(u, sim, color=color, lw=0.9, label=f"{law} (NRMSE {e:.3f})")
        title = stem if stem in SINES else f"{stem}: validation, 36 lb parameters"
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("displacement [in]")
        ax.set_ylabel("friction force [kip]")
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def best_law(out: dict[str, Any]) -> str:
    hyst = [law for law in LAWS if law != "coulomb"]
    return min(hyst, key=lambda law: np.mean([f["nrmse"][s] for s, f in out["per_test"][law].items()]))


def report(out: dict[str, Any], quick: bool) -> str:
    laws = list(LAWS)
    best = best_law(out)
    lines = [
        "# Friction damper: hysteretic laws calibrated on measured sinusoidal tests, checked on an earthquake record",
        "",
        "Generated by `benchmarks/friction_damper.py`"
        + (" --quick (small budgets: NOT the study)" if quick else "")
        + ". Data: the banded rotary friction device of Coble et al. (2022) (CC BY-SA 4.0), decimated to 128 Hz "
        "with an anti-aliasing FIR filter (examples/friction_damper/prepare_data.py). Displacement imposed, "
        "friction force measured [kip]. Method: mechcalib `auto` (Sobol design, least-squares polishing), loss "
        "`l2` on the force at every sample, every evaluation in the run store. NRMSE = RMS(F_sim - F_meas) / "
        "RMS(F_meas). Each law has a force offset F0.",
        "",
        "## Fit: one calibration per test (NRMSE of the force)",
        "",
        "| test | " + " | ".join(laws) + " |",
        "|---" * (len(laws) + 1) + "|",
    ]
    for s in SINES:
        lines.append(f"| {s} | " + " | ".join(f"{out['per_test'][law][s]['nrmse'][s]:.3f}" for law in laws) + " |")
    lines += ["", "## Fit: one calibration per band tension (NRMSE of each test under its tension's parameters)", ""]
    lines += ["| test | " + " | ".join(laws) + " |", "|---" * (len(laws) + 1) + "|"]
    for s, lb in SINES.items():
        lines.append(f"| {s} | " + " | ".join(f"{out['per_tension'][law][lb]['nrmse'][s]:.3f}" for law in laws) + " |")
    lines += [
        "",
        "## Validation: the Kocaeli DBE earthquake profile, no refit (NRMSE of the force)",
        "",
        "The band tension of this record is not stated in the file. The original repository's data README says "
        "its Dataset 2 (which the sinusoidal files' folder name, `characterization datasets`, points to) ran the "
        "earthquake profiles at 36 lb, and its Dataset 3 repeated them at 30 lb in a folder of the same name; so "
        "36 lb is likely but not certain, and the table shows both, with the spread over the seven per-test "
        "parameter sets.",
        "",
        "| law | 36 lb parameters | 30 lb parameters | 0 lb parameters | per-test fits (min-max) |",
        "|---|---|---|---|---|",
    ]
    for law in laws:
        v = out["validation"][law]
        lo, hi = v["per-test fits (min-max)"]
        lines.append(f"| {law} | {v['36 lb']:.3f} | {v['30 lb']:.3f} | {v['0 lb']:.3f} | {lo:.3f}-{hi:.3f} |")
    lines += [
        "",
        "**The validation is an extrapolation.** The earthquake record's displacements stay within -0.16 to "
        "0.18 in, where every sinusoidal test reaches 0.5-1.5 in: it lives in the regime where the device's "
        "backlash (a gap before the band grips, visible as the flat segments of the loops at each reversal) "
        "dominates, which the calibration tests barely sample.",
        "",
        "## Pass level",
        "",
    ]
    ok_fit = [out["per_test"][best][s]["nrmse"][s] < out["per_test"]["coulomb"][s]["nrmse"][s] for s in SINES]
    ok_val = out["validation"][best]["36 lb"] < out["validation"]["coulomb"]["36 lb"]
    lines.append(
        f"Best hysteretic law (lowest mean per-test NRMSE): **{best}**. Beats the Coulomb baseline on "
        f"{sum(ok_fit)} of {len(ok_fit)} sinusoidal tests and {'does' if ok_val else 'does not'} beat it on the "
        "earthquake record (36 lb parameters)."
    )
    val36 = {law: out["validation"][law]["36 lb"] for law in laws}
    worse_than_zero = [law for law in laws if val36[law] >= 1.0]
    best30 = min(out["validation"][law]["30 lb"] for law in laws)
    lines += [
        "",
        "Reading the validation. "
        + (
            f"With the 36 lb parameters, {', '.join(worse_than_zero)} reach an NRMSE of 1 or more on the earthquake: "
            "worse than predicting zero force. "
            if worse_than_zero
            else ""
        )
        + "Three reasons, visible in the figure: (1) the record lies in the backlash regime the fits barely "
        "sample (above); (2) its measured force is biased upwards (+0.19 kip on average, up to +3.4 kip at +0.18 "
        "in but only down to -2.2 kip at -0.16 in), while the 36 lb test's loop is biased downwards (-5.0 to +3.6 "
        "kip, mean -0.54), so that test's fitted offset F0 (-0.4 to -0.56 kip for every law) has the wrong sign "
        "for this record; (3) its band tension is not "
        f"certain: with the 30 lb parameters the best law reaches {best30:.3f}. The Coulomb baseline does worst "
        "because it switches to the full friction force at every small reversal of the earthquake's "
        "displacement, where the device sticks; on the sinusoidal tests it misses the gradual transition after "
        "each reversal (about 0.2-0.3 in), which every hysteretic law models.",
    ]
    lines += ["", "## Identified parameters (per-test fits: median, min-max over the seven tests)", ""]
    for law in laws:
        fits = list(out["per_test"][law].values())
        free = fits[0]["free"]
        model, space = build(law)
        at_bound = sorted(
            {
                n
                for f in fits
                for n in free
                if min(abs(f["params"][n] - space[n].lower), abs(f["params"][n] - space[n].upper))
                < 1e-3 * (space[n].upper - space[n].lower)
            }
        )
        lines.append(
            f"**{law}**: "
            + "; ".join(
                f"{n} = {np.median([f['params'][n] for f in fits]):.4g} "
                f"({min(f['params'][n] for f in fits):.4g} to {max(f['params'][n] for f in fits):.4g})"
                for n in free
            )
            + (
                f". At a bound of the box in at least one fit (weakly identified there, or wanting a wider box): "
                f"{', '.join(at_bound)}."
                if at_bound
                else ""
            )
        )
        lines.append("")
    bw = out["per_tension"]["boucwen"]
    lines.append(
        "Bouc-Wen per band tension in Ding et al. (2021)'s a1..a4 (models/hysteresis/conventions.py), "
        "with the parallel stiffness k = alpha ko [kip/in]:"
    )
    lines.append("")
    for lb, fit in bw.items():
        a = opensees_to_boucwen(fit["params"])
        lines.append(f"- {lb} lb: " + ", ".join(f"{k} = {v:.4g}" for k, v in a.items()))
    lines += [
        "",
        "## Simulations per calibration",
        "",
        "| law | per test (min-max) | 30 lb joint fit | seconds per fit (mean) |",
        "|---|---|---|---|",
    ]
    for law in laws:
        n = [f["n_evals"] for f in out["per_test"][law].values()]
        sec = [f["seconds"] for f in out["per_test"][law].values()]
        lines.append(f"| {law} | {min(n)}-{max(n)} | {out['per_tension'][law][30]['n_evals']} | {np.mean(sec):.1f} |")
    lines += [
        "",
        "Seconds are wall-clock on a 2-core machine shared with other jobs (load about 25), at `nice 10`: they "
        "measure the machine's load more than the method. Each law's budget: "
        + ", ".join(f"{law} {b}" for law, (_, _, b) in LAWS.items())
        + " simulations per fit (the 30 lb fit simulates five tests per evaluation).",
        "",
        "![loops](friction_damper.png)",
        "",
        "Figure: measured loops (grey) with the best hysteretic law and the Coulomb baseline, per-test fits; "
        "the last panel is the validation with the 36 lb parameters.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small budgets (a smoke run, not the study)")
    ap.add_argument("--report-only", action="store_true", help="rewrite the report and figure from the summary")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("mechcalib").setLevel(logging.WARNING)
    suffix = ".quick" if args.quick else ""
    if args.report_only:
        out = json.loads((RESULTS / f"friction_damper{suffix}.summary.json").read_text())
        out["per_tension"] = {law: {int(k): v for k, v in d.items()} for law, d in out["per_tension"].items()}
        figure(out, RESULTS / f"friction_damper{suffix}.png")
        (RESULTS / f"friction_damper{suffix}.md").write_text(report(out, args.quick))
        return
    out = run(args.quick)
    from mechcalib.storage import RunStore

    store = RunStore(RESULTS / f"friction_damper{suffix}.sqlite")
    for r in store.runs():  # keep each run's record and improving evaluations (the summary holds the results)
        store.compact_run(r.name)
    store.vacuum()
    (RESULTS / f"friction_damper{suffix}.summary.json").write_text(json.dumps(out, indent=1, default=float))
    figure(out, RESULTS / f"friction_damper{suffix}.png")
    (RESULTS / f"friction_damper{suffix}.md").write_text(report(out, args.quick))


if __name__ == "__main__":
    main()
