"""Bouc-Wen calibrated on the five 30 lb sinusoidal tests of a rotary friction damper, checked without refitting
on the Kocaeli earthquake profile. Data: Coble et al. (2022), CC BY-SA 4.0 (see README.md).

    PYTHONPATH=src python examples/friction_damper/calibrate.py [--budget 500]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import mechcalib as mc
from mechcalib.core.data import Curve, read_table
from mechcalib.core.problem import Problem
from mechcalib.models.hysteresis.conventions import opensees_to_boucwen
from mechcalib.models.hysteresis.protocol import DisplacementProtocol
from mechcalib.objectives.curves import L2
from mechcalib.optimizers import make_optimizer

DATA = Path(__file__).resolve().parent / "data"
TESTS_30LB = [
    "sine_0.5Hz_30lb_1in",
    "sine_1Hz_30lb_0.5in",
    "sine_1Hz_30lb_1in",
    "sine_1Hz_30lb_1.5in",
    "sine_2Hz_30lb_0.5in",
]


def load(stem: str) -> mc.Experiment:
    """The force against time as the measured channel; the displacement as the model's condition."""
    table, _ = read_table(DATA / f"{stem}.csv")
    t, u, f = table["time"], table["displacement"], table["force"]
    force = Curve(t, f, t=t, x_name="time", y_name="force", x_unit="s", y_unit="kip")
    return mc.Experiment({"force": force}, conditions={"displacement": {"t": t, "u": u}}, name=stem)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--store", default="runs/friction_damper.sqlite")
    args = ap.parse_args()

    model = DisplacementProtocol("boucwen_opensees", offset=True, force_unit="kip", displacement_unit="in")
    space = model.space.with_settings(
        alpha=dict(bounds=(-0.2, 0.5)),
        ko=dict(bounds=(0.1, 10.0), scale="log"),
        n=dict(bounds=(0.5, 5.0)),
        gamma=dict(bounds=(-0.45, 0.5)),
        beta=dict(fixed=0.5),  # fixes the scale of z
        Ao=dict(bounds=(1.0, 1000.0), scale="log", fixed=None),
        deltaA=dict(fixed=0.0),
        deltaNu=dict(fixed=0.0),
        deltaEta=dict(fixed=0.0),
        F0=dict(bounds=(-1.0, 1.0)),
    )
    exps = [load(s) for s in TESTS_30LB]
    problem = Problem(model, exps, L2(), space=space)
    Path(args.store).parent.mkdir(parents=True, exist_ok=True)
    res = mc.calibrate(
        problem, make_optimizer("auto", seed=0), max_evals=args.budget, store=args.store, run_name="boucwen:30lb"
    )
    theta = space.to_full(res.best_x[None])[0]
    params = dict(zip(space.names, theta, strict=True))
    print(f"{res.n_evals} simulations; parameters: " + ", ".join(f"{k} = {v:.4g}" for k, v in params.items()))
    print(
        "as Ding et al. (2021) a1..a4 and k: "
        + ", ".join(f"{k} = {v:.4g}" for k, v in opensees_to_boucwen(params).items())
    )
    for exp in [*exps, load("earthquake_KocaeliDBE")]:
        (resp,) = model.simulate(theta[None], exp.conditions)
        f = exp["force"].y
        e = np.sqrt(np.mean((resp["force"].y - f) ** 2) / np.mean(f**2))
        tag = "fit" if exp.name in TESTS_30LB else "validation (extrapolates into the backlash regime)"
        print(f"{exp.name}: NRMSE {e:.3f} ({tag})")


if __name__ == "__main__":
    main()
