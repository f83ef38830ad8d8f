"""Hu et al.'s (2024) Table 4 on the EEPA wet-sand triaxial dataset: the eight inverse networks trained on the 200 DEM
simulations of ``benchmarks/results/granular.fast_dataset.npz``, and Mareš et al.'s (2016) inverse strategies on the same
split. On demand, outside the test suite. Writes ``benchmarks/results/partsnet_eepa.md`` and
``partsnet_eepa.PROFILE.json``.

Data: the ``fast`` specimen's dataset (``python benchmarks/granular.py``; model ``eepa_triaxial``): 200
Latin-hypercube sets of the three calibrated parameters lambda_p, f_s-s, f_s-a within the paper's ranges, each
sequence the deviator-load-displacement curve at 99 points (99 x 2: displacement and force), as in Table 1.
The same 160 / 40 split (seed 0), network sizes and training settings (Table 1) as ``benchmarks/partsnet.py``,
whose functions train and score the networks (``--work`` keeps every trained network, so a rerun resumes).

Not run here: GDR-Net's selection (it needs simulations of all seven candidate parameters; the dataset varies the
three the paper selected) and Table 3's verification (re-simulating nine cases with each network's calibrated
values: 18 DEM simulations, about 20 min on one core of the development machine).

    python benchmarks/partsnet_eepa.py                       # short profile (150 epochs)
    python benchmarks/partsnet_eepa.py --profile paper --work /tmp/eepa_paper    # Table 1's 600 epochs
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402

from mechcalib.inverse import VARIANTS  # noqa: E402
from mechcalib.inverse.data import from_npz  # noqa: E402
from partsnet import COLS, PAPER_TABLE4, PROFILES, fmt, step_costs, strategies, train_all  # noqa: E402

DATASET = ROOT / "benchmarks" / "results" / "granular.fast_dataset.npz"
PARAM_TEXT = (
    "EEPA contact parameters of Hu et al. (2024): lambda_p the plastic stiffness ratio, f_ss and f_sa the "
    "sand-sand and sand-acrylic static friction"
)


def write(args, res: dict, path: Path) -> None:
    rows, st, names = res["table4"], res["strategies"], res["names"]
    L = ["# PartsNet (Hu et al. (2024)) on the EEPA triaxial dataset\n"]
    L.append(
        f"Written by `{res['command']}` on {datetime.now(UTC):%Y-%m-%d %H:%M UTC}; {platform.machine()} "
        f"{platform.system()}, torch {torch.__version__}, {args.threads} thread(s), profile `{args.profile}` "
        f"({args.epochs} epochs), input scaling `{args.x_scaling}`; {res['seconds'] / 60:.1f} min"
        + (f" (networks {', '.join(args.loaded)} loaded from `--work`)" if args.loaded else "")
        + ".\n"
    )
    L.append(
        f"**Data.** `{Path(args.dataset).name}`: {res['n_train'] + res['n_val']} DEM triaxial simulations of "
        f"the `fast` EEPA specimen (docs/granular.md), parameters {', '.join(names)} ({PARAM_TEXT}) from a "
        f"Latin hypercube over {', '.join(f'{n} [{lo:g}, {hi:g}]' for n, lo, hi in res['bounds'])}; each "
        f"sequence is displacement and deviator force at {res['length']} points. Split {res['n_train']} "
        f"training / {res['n_val']} validation (seed {args.seed}); metrics on the validation set with the "
        "parameters scaled to [0, 1] by their bounds; Time = training wall time [s].\n"
    )
    L.append("## Table 4: ablation\n")
    L.append("| | " + " | ".join(COLS[:-1]) + " | Time |\n|---|" + "---|" * len(COLS))
    for v, ev in rows.items():
        L.append(f"| {v} | " + " | ".join(fmt(ev[c]) for c in COLS[:-1]) + f" | {ev['Time']:.1f} |")
    L.append(
        "\nPer parameter R², bootstrap 90 % interval of R² over the validation sequences, best validation R² "
        "over the epochs (epoch), trainable weights:\n"
    )
    L.append(
        "| | "
        + " | ".join(f"R² {n}" for n in names)
        + " | R² 90 % interval | best R² (epoch) | weights |\n|---|"
        + "---|" * (len(names) + 3)
    )
    for v, ev in rows.items():
        lo, hi = ev["R2_ci"]
        L.append(
            f"| {v} | " + " | ".join(fmt(ev[f"R2_{n}"], 3) for n in names) + f" | {lo:.3f} to {hi:.3f} | "
            f"{ev['best_R2']:.3f} ({ev['best_R2_epoch']}) | {ev['params']} |"
        )
    L.append("\nPaper's Table 4 (EEPA triaxial DEM data from EDEM, 200 sequences, 600 epochs):\n")
    L.append("| | " + " | ".join(COLS) + " |\n|---|" + "---|" * len(COLS))
    for v, vals in PAPER_TABLE4.items():
        L.append(f"| {v} | " + " | ".join(fmt(x) for x in vals) + " |")
    order = sorted(rows, key=lambda v: -rows[v]["R2"])
    paper_order = sorted(PAPER_TABLE4, key=lambda v: -PAPER_TABLE4[v][5])
    L.append(
        "\nRanking by validation R²: "
        + " > ".join(f"{v} ({rows[v]['R2']:.3f})" for v in order)
        + ". Paper: "
        + " > ".join(f"{v} ({PAPER_TABLE4[v][5]:.3f})" for v in paper_order)
        + ".\n"
    )
    sc = res["step_costs"]
    L.append("Cost of one training step (batch 40, forward + backward + Adam), median of 15 interleaved steps:\n")
    L.append("| network | ms per step |\n|---|---|")
    L += [f"| {k} | {1e3 * v:.1f} |" for k, v in sc.items()]
    L.append("\n## Mareš et al.'s (2016) inverse strategies on the same split\n")
    if st:
        L.append("| method | " + " | ".join(COLS) + " | hidden neurons |\n|---|" + "---|" * (len(COLS) + 1))
        for k, ev in st.items():
            L.append(
                f"| {k} | " + " | ".join(fmt(ev[c]) for c in COLS[:-1]) + f" | {ev['Time']:.1f} | "
                f"{', '.join(map(str, ev.get('hidden', []))) or '-'} |"
            )
    else:
        L.append("Not run (`--no-strategies`).")
    L.append(
        "\nGDR-Net's selection (on a seven-parameter dataset) and Table 3's verification (the nine cases "
        "re-simulated) are in `partsnet_dem.md` (`benchmarks/partsnet_dem.py`)."
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(L) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default=str(DATASET), help="dataset npz (default: the fast EEPA dataset)")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="short")
    ap.add_argument("--epochs", type=int, default=None, help="override the profile's training epochs")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated networks of Table 4")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--work", default=None, help="folder keeping trained networks (resume)")
    ap.add_argument("--no-strategies", action="store_true", help="skip Mareš et al.'s (2016) inverse strategies")
    ap.add_argument("--cv", choices=("quick", "mares2016"), default=None)
    ap.add_argument(
        "--x-scaling",
        choices=("feature", "step"),
        default="feature",
        help="input standardisation of the networks (TrainConfig.x_scaling; default: per feature)",
    )
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "partsnet_eepa.md"))
    args = ap.parse_args(argv)
    prof = PROFILES[args.profile]
    args.epochs = args.epochs or prof["epochs"]
    args.cv = args.cv or prof["cv"]
    args.loaded, args.loaded_strategies = [], False
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants {unknown}; valid: {list(VARIANTS)}")
    if not Path(args.dataset).is_file():
        ap.error(
            f"--dataset {args.dataset}: no such file; make it with `python benchmarks/granular.py` (stage "
            "dataset) or `mechcalib inverse dataset eepa_triaxial --n 200 --out FILE.npz`"
        )
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", flush=True)

    data = from_npz(args.dataset)
    with np.load(args.dataset) as z:
        bounds = [(str(n), float(lo), float(hi)) for n, lo, hi in zip(z["names"], z["lower"], z["upper"], strict=True)]
    tr, va = data.split(0.2, seed=args.seed)
    log(
        f"dataset: {len(tr)} training, {len(va)} validation sequences of {data.length} x {len(data.features)} "
        f"({list(data.features)}); parameters {list(data.names)}"
    )
    res: dict = {
        "names": list(data.names),
        "n_train": len(tr),
        "n_val": len(va),
        "length": data.length,
        "features": list(data.features),
        "bounds": bounds,
    }
    res["table4"], _ = train_all(args, tr, va, log)
    res["strategies"] = None if args.no_strategies else strategies(args, tr, va, log)
    res["step_costs"] = step_costs(args, len(data.features), len(data.names))
    res["seconds"] = time.perf_counter() - t0
    res["command"] = " ".join(["python", "benchmarks/partsnet_eepa.py", *(sys.argv[1:] if argv is None else argv)])
    out = Path(args.out)
    write(args, res, out)
    raw = {
        **res,
        "profile": args.profile,
        "epochs": args.epochs,
        "threads": args.threads,
        "loaded": args.loaded,
        "x_scaling": args.x_scaling,
    }
    out.with_name(f"{out.stem}.{args.profile}{'' if args.x_scaling == 'feature' else '.step'}.json").write_text(
        json.dumps(raw, indent=1, default=float) + "\n"
    )
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
