"""Is the ensemble of ``eki`` an uncertainty? Coverage of its spread on the Duffing coverage study, beside the
Laplace and posterior intervals of ``benchmarks/uncertainty.py`` on the same replicates.

The study: the Duffing oscillator's displacement with 5 % noise, replicate ``r`` drawn with seed ``r``
(``uncertainty.duffing_problem``), truth ``c = 0.2, k = 1, k3 = 0.5``. Each replicate is calibrated by ``eki``
(default ensemble, seed ``r``, at most 600 simulations); its final ensemble, mapped to the physical
parameters, gives two 95 % intervals per parameter: ``mean +- 1.96 std`` and the ensemble's 2.5-97.5 %
percentiles. A replicate covers a parameter when the interval holds the truth. The Laplace ("local") and
posterior intervals are read from ``benchmarks/results/uncertainty.summary.json`` for the same seeds (the
study's least-squares optimum, Laplace covariance and emcee chain of at least 20 autocorrelation times).
``eki``'s optimum is compared with the study's least-squares optimum: "at the optimum" when every parameter
is within the Laplace half-width of it. The spread is offered as an uncertainty only where its coverage is at
least 90 % on every parameter; otherwise it is a spread, not an interval.

    python benchmarks/eki_coverage.py                 # seeds 1-100, about 3 minutes on one core
    python benchmarks/eki_coverage.py --seeds 1-30
Each finished replicate is a line of ``benchmarks/results/eki_coverage.jsonl`` (a rerun skips them);
writes ``benchmarks/results/eki_coverage.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import mechcalib as mc
from mechcalib.optimizers.eki import EKI

HERE = Path(__file__).parent
RESULTS = HERE / "results"
ROWS = RESULTS / "eki_coverage.jsonl"
REPORT = RESULTS / "eki_coverage.md"
STUDY = RESULTS / "uncertainty.summary.json"
BUDGET = 600
Z95 = 1.959963984540054


def replicate(seed: int) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    from uncertainty import duffing_problem, truth_of

    prob = duffing_problem(seed)
    t0 = time.perf_counter()
    opt = EKI(seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = mc.calibrate(prob, opt, max_evals=BUDGET)
    E = prob.space.from_unit(opt.ensemble)
    conv = [c for c in res.choices if c["choice"] == "converged"]
    return {
        "seed": seed,
        "names": list(prob.space.free_names),
        "truth": truth_of(prob).tolist(),
        "best": [res.best_params[n] for n in prob.space.free_names],
        "best_loss": res.best_loss,
        "mean": E.mean(axis=0).tolist(),
        "std": E.std(axis=0, ddof=1).tolist(),
        "p025": np.percentile(E, 2.5, axis=0).tolist(),
        "p975": np.percentile(E, 97.5, axis=0).tolist(),
        "members": int(E.shape[0]),
        "evals": res.n_evals,
        "rounds": res.n_batches,
        "stop": res.stop_reason,
        "rule": conv[0]["rule"] if conv else None,
        "wall": time.perf_counter() - t0,
    }


def load_rows() -> dict[int, dict[str, Any]]:
    if not ROWS.exists():
        return {}
    rows = [json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()]
    return {r["seed"]: r for r in rows}


def _share(hits: np.ndarray) -> str:
    return f"{100 * hits.mean():.0f} % ({int(hits.sum())}/{hits.size})"


def report(rows: dict[int, dict[str, Any]], command: str) -> str:
    study = json.loads(STUDY.read_text())["coverage"]
    seeds = sorted(rows)
    loc = [study.get(f"duffing/s{s:03d}/local") for s in seeds]
    post = [study.get(f"duffing/s{s:03d}/posterior") for s in seeds]
    both = [i for i in range(len(seeds)) if loc[i] is not None and post[i] is not None]
    R = [rows[seeds[i]] for i in both]
    names, truth = R[0]["names"], np.array(R[0]["truth"])
    mean, std = np.array([r["mean"] for r in R]), np.array([r["std"] for r in R])
    lo, hi = mean - Z95 * std, mean + Z95 * std
    plo, phi = np.array([r["p025"] for r in R]), np.array([r["p975"] for r in R])
    llo, lhi = np.array([loc[i]["local_lower"] for i in both]), np.array([loc[i]["local_upper"] for i in both])
    qlo, qhi = np.array([post[i]["post_lower"] for i in both]), np.array([post[i]["post_upper"] for i in both])
    lsq = np.array([loc[i]["best"] for i in both])
    best = np.array([r["best"] for r in R])
    at_opt = np.all(np.abs(best - lsq) <= (lhi - llo) / 2, axis=1)
    cover = {k: (a <= truth) & (truth <= b) for k, (a, b) in {"ens": (lo, hi), "pct": (plo, phi), "loc": (llo, lhi), "post": (qlo, qhi)}.items()}  # fmt: skip
    width = {k: np.mean((b - a) / 2 / np.abs(truth), axis=0) for k, (a, b) in {"ens": (lo, hi), "loc": (llo, lhi), "post": (qlo, qhi)}.items()}  # fmt: skip
    ok = bool(np.all(cover["ens"].mean(axis=0) >= 0.9))
    verdict = "an interval" if ok else "a spread, not an interval"
    L = [
        "# Ensemble Kalman inversion: is the ensemble an uncertainty?",
        "",
        "Written by `benchmarks/eki_coverage.py` (module docstring: the study and the rules). Machine: 2 cores shared "
        "with other work.",
        "",
        f"Last command: `{command}`",
        "",
        f"Replicates: {len(R)} (seeds {seeds[both[0]]}-{seeds[both[-1]]}, each with the study's Laplace and posterior "
        f"intervals); `eki` with its default ensemble ({R[0]['members']} members for 3 parameters), at most {BUDGET} "
        "simulations.",
        "",
        "## Coverage of the 95 % intervals",
        "",
        "| parameter | truth | eki mean +- 1.96 std | eki 2.5-97.5 % | Laplace (local) | posterior | "
        "half-width: eki / local / posterior |",
        "|---|---|---|---|---|---|---|",
    ]
    for j, n in enumerate(names):
        L.append(
            f"| {n} | {truth[j]:g} | {_share(cover['ens'][:, j])} | {_share(cover['pct'][:, j])} | "
            f"{_share(cover['loc'][:, j])} | {_share(cover['post'][:, j])} | {100 * width['ens'][j]:.2g} % / "
            f"{100 * width['loc'][j]:.2g} % / {100 * width['post'][j]:.2g} % |"
        )
    rounds = np.array([r["rounds"] for r in R])
    evals = np.array([r["evals"] for r in R])
    rules = {k: sum(r["rule"] == k for r in R) for k in ("time", "collapsed", "stalled", None)}
    L += [
        "",
        f"Verdict: the ensemble's spread is **{verdict}** (the rule: at least 90 % coverage on every parameter).",
        "",
        "## The optimisation itself",
        "",
        f"- at the least-squares optimum (every parameter within the Laplace half-width of it): {_share(at_opt)}",
        f"- rounds: median {np.median(rounds):.0f}, range {rounds.min()}-{rounds.max()}; simulations: median "
        f"{np.median(evals):.0f}, range {evals.min()}-{evals.max()}",
        f"- the study's least squares on the same replicates (`lsq`, 2 starts, no restarts; one simulation per batch "
        f"or a Jacobian of 3): median {np.median([loc[i]['calibration_evals'] for i in both]):.0f} simulations",
        f"- stop: controller's time {rules['time']}, collapsed {rules['collapsed']}, stalled {rules['stalled']}, "
        f"budget {rules[None]}",
        "- coverage of the mean +- 1.96 std among the replicates at the optimum: "
        + ", ".join(f"{n} {_share(cover['ens'][at_opt, j])}" for j, n in enumerate(names)),
        "",
    ]
    return "\n".join(L)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-100", help="replicates, as FIRST-LAST")
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args()
    first, last = (int(x) for x in a.seeds.split("-"))
    rows = load_rows()
    if not a.report_only:
        for seed in range(first, last + 1):
            if seed in rows:
                continue
            rows[seed] = replicate(seed)
            with ROWS.open("a") as fh:
                fh.write(json.dumps(rows[seed]) + "\n")
            r = rows[seed]
            print(f"seed {seed}: {r['rounds']} rounds, {r['evals']} sims, stop {r['stop']}/{r['rule']}", flush=True)
    rows = {s: r for s, r in rows.items() if first <= s <= last}
    REPORT.write_text(report(rows, "python benchmarks/eki_coverage.py " + " ".join(sys.argv[1:])))
    print(REPORT.read_text())


if __name__ == "__main__":
    main()
