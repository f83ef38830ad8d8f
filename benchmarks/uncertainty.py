"""How well mechcalib's uncertainty is calibrated: coverage of the 95 % intervals on synthetic noisy replicates,
the cost of a converged posterior, the hysteresis study's noisy cases with posterior intervals, and the
figures of docs/uncertainty.md (not part of the test suite).

Coverage
    ``duffing``: the Duffing oscillator (``c, k, k3``; truth: its default preset), the displacement channel,
    5 % noise (Ding et al. (2021) eq. 36: ``y + 0.05 std(y) N(0, 1)``). ``sdof``: the SDOF Bouc-Wen of the
    hysteresis study (``benchmarks/hysteresis_iabc.py``, case ``boucwen/n05``: the acceleration, 5 % noise).
    Replicate ``r`` draws the noise with seed ``r + 1``, is calibrated by least squares (``lsq``, two
    Latin-hypercube starts, seeded ``r``), then ``mechcalib.uncertainty`` gives the Laplace intervals (noise
    estimated per channel) and, with ``--posterior``, an emcee chain (walkers ``4 d``, seed ``r``) extended
    until it is at least 20 autocorrelation times long. A replicate covers a parameter when its 95 % interval
    holds the true value.
Cost (``--cost``)
    one SDOF Bouc-Wen replicate (5 % noise) sampled until the chain is at least 50 tau long: simulations and
    wall time.
Hysteresis (``--hysteresis``)
    the noisy SDOF cases of Tables 1, 4 and 5 (Bouc-Wen, degradation, pinching at 5 and 10 %; noise seed 1, as
    the study's seed-1 runs) and Table 7's M3, M4 (= M5, M7 data): the least-squares optimum with its Laplace
    and, as far as time allows, posterior intervals, beside the paper's point errors.
Run store
    every posterior analysis (polish, Jacobian, chain) goes through ``benchmarks/results/uncertainty.sqlite`` (not in the
    repository; ``--store`` names another, e.g. one per concurrent process: ``uncertainty.sdof.sqlite``), so a
    stopped pass resumes where it stopped; each finished replicate is written to
    ``benchmarks/results/uncertainty.summary.json`` (in the repository), which the report reads and a later
    pass skips. The least-squares calibration of a replicate is redone in memory (cheap, and a store would
    keep every channel of every response), and a local-only analysis runs in memory.

    python benchmarks/uncertainty.py --case duffing --replicates 0-99 --posterior --max-minutes 50
    python benchmarks/uncertainty.py --case sdof --replicates 0-99 --max-minutes 20      # local intervals
    python benchmarks/uncertainty.py --cost
    python benchmarks/uncertainty.py --hysteresis --max-minutes 30
    python benchmarks/uncertainty.py --figures       # docs/uncertainty.md's corner plot and band
    python benchmarks/uncertainty.py --sdof-figures  # docs/img/sdof_boucwen_*.png (about a minute)
    python benchmarks/uncertainty.py --report-only
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import mechcalib as mc
from mechcalib.models import get_model
from mechcalib.optimizers.least_squares import LeastSquares
from mechcalib.storage import MemoryStore, RunStore
from mechcalib.uncertainty import uncertainty

HERE = Path(__file__).parent
ROOT = HERE.parent
RESULTS = HERE / "results"
STORE = RESULTS / "uncertainty.sqlite"
SUMMARY = RESULTS / "uncertainty.summary.json"
REPORT = RESULTS / "uncertainty.md"
MIN_TAU_COVERAGE = 20
MIN_TAU_COST = 50


# -- problems ---------------------------------------------------------------------------------------------
def duffing_problem(seed: int) -> mc.Problem:
    model = get_model("duffing")
    data = mc.experiment_from_model(model, noise=0.05, seed=seed, name="duffing")
    data = mc.Experiment({"displacement": data["displacement"]}, name="duffing")
    return mc.Problem(model, data, mc.L2())


def hysteresis_problem(case: str, seed: int) -> mc.Problem:
    sys.path.insert(0, str(HERE))
    import hysteresis_iabc as h

    return h.build_problem(case, seed)


def problem_of(case: str, seed: int) -> mc.Problem:
    if case == "duffing":
        return duffing_problem(seed)
    if case == "sdof":
        return hysteresis_problem("boucwen/n05", seed)
    return hysteresis_problem(case, seed)


def truth_of(problem: mc.Problem) -> np.ndarray:
    model = problem.model
    return problem.space.free_from_full(model.full_vector(None, "default")[None, :])[0]


# -- one analysis -----------------------------------------------------------------------------------------
def analyse(
    case: str, seed: int, store: RunStore, *, posterior: bool, min_tau: int, budget: int, max_steps: int
) -> dict[str, Any]:
    """Calibrate replicate ``seed`` of ``case`` and analyse it; the row of the summary."""
    t0 = time.perf_counter()
    prob = problem_of(case, seed)
    truth = truth_of(prob)
    name = f"{case}/s{seed:03d}"
    opt = LeastSquares(n_starts=2, restart=False, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the calibration itself is cheap to redo and keeps every channel of each response: not stored; the
        # analysis (polish, Jacobian, chain) goes through the run store, a local-only one in memory
        res = mc.calibrate(prob, opt, max_evals=budget, run_name=None)
        res.run_name = name
        if not posterior:
            store = MemoryStore()
        d = prob.space.dim
        steps = 650 if case == "duffing" else 600  # about 20 tau at once (a longer chain replays the first)
        while True:
            u = uncertainty(
                res, problem=prob, store=store, posterior=posterior, walkers=4 * d + (4 * d) % 2, steps=steps,
                seed=seed, force=True,
            )  # fmt: skip
            if not posterior or u.posterior is None:
                break
            need = math.ceil(min_tau * 1.1 * float(np.max(u.posterior.tau)))
            if steps >= need or steps >= max_steps:
                break
            steps = min(max(need, int(steps * 1.5)), max_steps)
    names = list(u.names)
    row: dict[str, Any] = {
        "case": case,
        "seed": seed,
        "names": names,
        "truth": truth.tolist(),
        "best": [u.best[n] for n in names],
        "converged": u.converged,
        "calibration_evals": res.n_evals,
        "local_lower": u.local.lower.tolist(),
        "local_upper": u.local.upper.tolist(),
        "local_std": [float(s) if math.isfinite(s) else None for s in u.local.std],
        "condition": u.local.condition if math.isfinite(u.local.condition) else None,
        "weakest": u.local.weakest,
        "wall": time.perf_counter() - t0,
    }
    if u.posterior is not None:
        p = u.posterior
        row |= {
            "post_lower": p.lower.tolist(),
            "post_upper": p.upper.tolist(),
            "post_std": p.std.tolist(),
            "prior_box": list(p.prior_box),
            "tau": p.tau.tolist(),
            "steps": p.steps,
            "walkers": p.walkers,
            "chain_over_tau": p.n_taus,
            "chain_evals": p.n_evals,
            "acceptance": p.acceptance,
            "ess_min": float(np.min(p.ess)),
        }
    return row


# -- summary ----------------------------------------------------------------------------------------------
def load_summary() -> dict[str, Any]:
    if SUMMARY.is_file():
        return json.loads(SUMMARY.read_text())
    return {"coverage": {}, "cost": None, "hysteresis": {}}


def save_summary(s: dict[str, Any]) -> None:
    tmp = SUMMARY.with_suffix(".tmp")
    tmp.write_text(json.dumps(s, indent=1) + "\n")
    os.replace(tmp, SUMMARY)


def key(case: str, seed: int, posterior: bool) -> str:
    return f"{case}/s{seed:03d}/{'posterior' if posterior else 'local'}"


def coverage_pass(case: str, seeds: list[int], posterior: bool, deadline: float | None) -> None:
    s = load_summary()
    budget = 400 if case == "duffing" else 800
    with RunStore(STORE) as store:
        for seed in seeds:
            k = key(case, seed, posterior)
            if k in s["coverage"]:
                continue
            if deadline is not None and time.time() > deadline:
                print(f"time is up before {k}; run again to continue", flush=True)
                return
            row = analyse(
                case, seed, store, posterior=posterior, min_tau=MIN_TAU_COVERAGE, budget=budget, max_steps=4000
            )
            s = load_summary()
            s["coverage"][k] = row
            save_summary(s)
            extra = f", chain {row['steps']} steps = {row['chain_over_tau']:.1f} tau" if posterior else ""
            print(f"{k}: {row['wall']:.1f} s{extra}", flush=True)


def cost_pass(move: str = "stretch", max_steps: int = 8000) -> None:
    """One SDOF Bouc-Wen replicate sampled to >= 50 tau (steps extended as needed, up to ``max_steps``) with
    emcee's ``move`` (``stretch``: summary key ``cost``; another: ``cost_<move>``)."""
    s = load_summary()
    with RunStore(STORE) as store:
        prob = problem_of("sdof", 1)
        d = prob.space.dim
        key, run = ("cost", "cost") if move == "stretch" else (f"cost_{move}", f"cost_{move}")
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = mc.calibrate(prob, LeastSquares(n_starts=2, restart=False, seed=1), max_evals=800)
            steps, walkers = 1000, 4 * d
            while True:
                u = uncertainty(res, problem=prob, store=store, run=run, posterior=True, walkers=walkers,
                                steps=steps, seed=1, move=move)  # fmt: skip
                p = u.posterior
                assert p is not None
                need = math.ceil(MIN_TAU_COST * 1.05 * float(np.max(p.tau)))
                if steps >= need or steps >= max_steps:
                    break
                steps = min(need, max_steps)
        timing = store.timing(f"{run}.posterior")
    s = load_summary()
    s[key] = {
        "move": move,
        "walkers": walkers,
        "steps": p.steps,
        "tau": p.tau.tolist(),
        "chain_over_tau": p.n_taus,
        "chain_evals": p.n_evals,
        "polish_jacobian_sims": u.n_simulated - p.n_simulated if p.n_simulated else None,
        "acceptance": p.acceptance,
        "ess": p.ess.tolist(),
        "wall_last_call": time.perf_counter() - t0,
        "simulation_seconds": float(timing["seconds"]),
        "names": list(u.names),
        "lower": p.lower.tolist(),
        "upper": p.upper.tolist(),
        "truth": truth_of(prob).tolist(),
    }
    save_summary(s)
    print(json.dumps(s[key], indent=1))


# -- the hysteresis study's noisy cases --------------------------------------------------------------------
HYST_CASES = (
    "boucwen/n05", "boucwen/n10", "degradation/n05", "degradation/n10", "pinching/n05", "pinching/n10",
    "frame/M3", "frame/M4",
)  # fmt: skip


def hysteresis_pass(cases: list[str], posterior: bool, deadline: float | None) -> None:
    with RunStore(STORE) as store:
        for case in cases:
            k = f"{case}/{'posterior' if posterior else 'local'}"
            if k in load_summary()["hysteresis"]:
                continue
            if deadline is not None and time.time() > deadline:
                print(f"time is up before {k}; run again to continue", flush=True)
                return
            budget = 1500 if case.startswith("frame") else 800
            row = analyse(case, 1, store, posterior=posterior, min_tau=MIN_TAU_COVERAGE, budget=budget, max_steps=3000)
            s = load_summary()
            s["hysteresis"][k] = row
            save_summary(s)
            print(f"{k}: {row['wall']:.1f} s", flush=True)


# -- report -----------------------------------------------------------------------------------------------
def _cov_rows(rows: list[dict], lo: str, hi: str) -> np.ndarray:
    return np.array([[a <= t <= b for t, a, b in zip(r["truth"], r[lo], r[hi], strict=True)] for r in rows])


def coverage_section(s: dict[str, Any]) -> list[str]:
    L = [
        "## Coverage of the 95 % intervals (5 % noise)",
        "",
        "The share of replicates whose 95 % interval holds the true value (target for the posterior: 88-99 %); "
        "with n replicates its own sampling error is about sqrt(0.95 * 0.05 / n) (2 % at 100, 4.5 % at 23). "
        "Half-widths are relative to the truth.",
        "",
    ]
    for case, title in (("duffing", "Duffing oscillator"), ("sdof", "SDOF Bouc-Wen (hysteresis study)")):
        loc = [r for k, r in sorted(s["coverage"].items()) if k.startswith(case + "/") and k.endswith("/local")]
        post = [r for k, r in sorted(s["coverage"].items()) if k.startswith(case + "/") and k.endswith("/posterior")]
        by_seed = {r["seed"]: r for r in loc} | {r["seed"]: r for r in post}  # one row per replicate
        rows_all = [by_seed[k] for k in sorted(by_seed)]
        if not rows_all:
            L += [f"### {title}", "", "Not run yet.", ""]
            continue
        names = rows_all[0]["names"]
        L += [f"### {title}", ""]
        L.append(
            f"Replicates complete: {len(rows_all)} of 100 with local intervals "
            f"({len(post)} of them also with a posterior chain)."
        )
        L += ["", "| parameter | truth | local: coverage | local: mean half-width | posterior: coverage | "
              "posterior: mean half-width |", "|---|---|---|---|---|---|"]  # fmt: skip
        lc = _cov_rows(rows_all, "local_lower", "local_upper")
        pc = _cov_rows(post, "post_lower", "post_upper") if post else None
        for i, n in enumerate(names):
            t = rows_all[0]["truth"][i]
            lw = np.mean([(r["local_upper"][i] - r["local_lower"][i]) / 2 / abs(t) for r in rows_all])
            pcs = f"{100 * pc[:, i].mean():.0f} % ({int(pc[:, i].sum())}/{len(post)})" if pc is not None else "-"
            pw = (
                f"{100 * np.mean([(r['post_upper'][i] - r['post_lower'][i]) / 2 / abs(t) for r in post]):.2g} %"
                if post
                else "-"
            )
            L.append(
                f"| {n} | {t:g} | {100 * lc[:, i].mean():.0f} % ({int(lc[:, i].sum())}/{len(rows_all)}) | "
                f"{100 * lw:.2g} % | {pcs} | {pw} |"
            )
        conv = sum(r["converged"] for r in rows_all)
        L += ["", f"Polish converged in {conv} of {len(rows_all)} replicates (the rest analysed with force)."]
        if post:
            taus = [r["chain_over_tau"] for r in post]
            L.append(
                f"Chains: {post[0]['walkers']} walkers, {min(r['steps'] for r in post)}-{max(r['steps'] for r in post)} "
                f"steps, {min(taus):.1f}-{max(taus):.1f} tau long (the rule: >= {MIN_TAU_COVERAGE}); acceptance "
                f"{np.mean([r['acceptance'] for r in post]):.2f}; {np.mean([r['chain_evals'] for r in post]):.0f} "
                "simulations per chain on average."
            )
        L.append("")
    return L


def cost_section(s: dict[str, Any]) -> list[str]:
    c = s.get("cost")
    L = [f"## Cost of a posterior of the SDOF Bouc-Wen (chain >= {MIN_TAU_COST} tau)", ""]
    if not c:
        return L + ["Not run yet (`--cost`).", ""]
    tau = max(c["tau"])
    L += [
        f"One replicate (5 % noise, seed 1), emcee stretch move, {c['walkers']} walkers: {c['steps']} steps, "
        f"tau up to {tau:.1f} steps, so the chain is {c['chain_over_tau']:.1f} tau long; "
        f"**{c['chain_evals']} simulations** for the chain (target <= 60 000), "
        f"{c['simulation_seconds']:.0f} s of simulation; acceptance {c['acceptance']:.2f}, ESS min "
        f"{min(c['ess']):.0f}.",
        "",
        "| parameter | truth | 95 % posterior interval |",
        "|---|---|---|",
    ]
    for n, t, a, b in zip(c["names"], c["truth"], c["lower"], c["upper"], strict=True):
        L.append(f"| {n} | {t:g} | [{a:.4g}, {b:.4g}] |")
    g = s.get("cost_gauss")
    if g:
        reached = (
            f"it reached {MIN_TAU_COST} tau"
            if g["chain_over_tau"] >= MIN_TAU_COST
            else f"it stopped at its cap of {g['steps']} steps, short of {MIN_TAU_COST} tau"
        )
        L += [
            "",
            f"The same replicate with the `gauss` move (Metropolis proposals from the Gauss-Newton covariance, one "
            f"batch of {g['walkers']} walkers per step): {g['steps']} steps, tau up to {max(g['tau']):.1f}, the chain "
            f"{g['chain_over_tau']:.1f} tau long ({reached}); {g['chain_evals']} simulations, acceptance "
            f"{g['acceptance']:.3f}, ESS min {min(g['ess']):.0f}. Intervals: "
            + ", ".join(f"{n} [{a:.4g}, {b:.4g}]" for n, a, b in zip(g["names"], g["lower"], g["upper"], strict=True))
            + ".",
        ]
    return L + [""]


def hysteresis_section(s: dict[str, Any]) -> list[str]:
    sys.path.insert(0, str(HERE))
    import hysteresis_iabc as h

    L = [
        "## The hysteresis study's noisy cases with intervals",
        "",
        "The least-squares optimum of the seed-1 data (noise seed 1, as the study's first runs) with its 95 % "
        "intervals in percent of the true value, beside the paper's point error (I-ABC; Table 7's M5 = ABC and "
        "M7 = TSA on the M4 data). The search box is 0.5x-2x the truth, i.e. [-50 %, +100 %]: a local interval "
        'reaching both ends, or a posterior interval covering at least 80 % of the box, is marked "prior box" '
        "(the data do not constrain the parameter; its point error is the bounds' choice, not the optimiser's).",
        "",
    ]
    done = s.get("hysteresis") or {}
    if not done:
        return L + ["Not run yet (`--hysteresis`).", ""]
    L += ["| case | parameter | paper's error | LSQ error | local 95 % | posterior 95 % |", "|---|---|---|---|---|---|"]
    for case in HYST_CASES:
        loc, post = done.get(f"{case}/local"), done.get(f"{case}/posterior")
        r = post or loc
        if r is None:
            continue
        model, which = h.parse_case(case)
        if model == "frame":
            rows = [h.PAPER_T7[m][1] for m in ((which,) if which == "M3" else ("M4", "M5", "M7"))]
            label = "M3" if which == "M3" else "M4 / M5 / M7"
        else:
            p = h.PAPER.get((model, which, "iabc"))
            rows = [p[1]] if p else []
            label = f"Table {h.TABLE_NO[model]}, {which} %"
        for i, n in enumerate(r["names"]):
            t = r["truth"][i]

            def pct(lo: float, hi: float, t: float = t, box: bool = False) -> str:
                a, b = 100 * (lo / t - 1), 100 * (hi / t - 1)
                box = box or (a <= -49 and b >= 99)
                return f"[{a:+.3g}, {b:+.3g}] %{' (prior box)' if box else ''}"

            paper = " / ".join(f"{row[i]:g} %" for row in rows) if rows else "-"
            err = 100 * (r["best"][i] / t - 1)
            lw = pct(r["local_lower"][i], r["local_upper"][i])
            # the posterior's rule (PosteriorResult.prior_box): its 95 % interval covers >= 80 % of the search range
            pw = pct(post["post_lower"][i], post["post_upper"][i], box=n in post["prior_box"]) if post else "not run"
            L.append(f"| {label} | {n} | {paper} | {err:+.3g} % | {lw} | {pw} |")
    return L + [""]


def status_section(s: dict[str, Any]) -> list[str]:
    """What is complete, and the commands that continue the rest (a later pass skips what is done)."""

    def n(case: str, kind: str) -> int:
        return sum(1 for k in s["coverage"] if k.startswith(case + "/") and k.endswith("/" + kind))

    hyst = s.get("hysteresis") or {}
    L = ["## Status", "", "| part | complete |", "|---|---|"]
    L.append(
        f"| Duffing, local intervals | {len({k.split('/')[1] for k in s['coverage'] if k.startswith('duffing/')})} of 100 replicates |"
    )
    L.append(f"| Duffing, posterior (>= {MIN_TAU_COVERAGE} tau) | {n('duffing', 'posterior')} of 100 replicates |")
    L.append(
        f"| SDOF Bouc-Wen, local intervals | {len({k.split('/')[1] for k in s['coverage'] if k.startswith('sdof/')})} of 100 replicates |"
    )
    L.append(f"| SDOF Bouc-Wen, posterior (>= {MIN_TAU_COVERAGE} tau) | {n('sdof', 'posterior')} of 100 replicates |")
    L.append(f"| cost of a >= {MIN_TAU_COST} tau SDOF posterior | {'done' if s.get('cost') else 'not run'} |")
    L.append(
        f"| hysteresis noisy cases, local | {sum(1 for c in HYST_CASES if f'{c}/local' in hyst)} of {len(HYST_CASES)} |"
    )
    L.append(
        f"| hysteresis noisy cases, posterior | {sum(1 for c in HYST_CASES if f'{c}/posterior' in hyst)} of "
        f"{len(HYST_CASES)} |"
    )
    L += [
        "",
        "To continue (each pass skips what the summary holds; `--max-minutes` stops it resumably):",
        "",
        "```",
        "python benchmarks/uncertainty.py --case duffing --replicates 0-99 --posterior",
        "python benchmarks/uncertainty.py --case sdof --replicates 0-99            # local intervals",
        "python benchmarks/uncertainty.py --case sdof --replicates 0-99 --posterior --store "
        "benchmarks/results/uncertainty.sdof.sqlite",
        "python benchmarks/uncertainty.py --hysteresis [--posterior] --store benchmarks/results/uncertainty.sdof.sqlite",
        "```",
        "",
    ]
    return L


def write_report(command: str | None) -> None:
    s = load_summary()
    L = [
        "# Uncertainty: coverage, cost, and the hysteresis study's noisy cases",
        "",
        "Written by `benchmarks/uncertainty.py` (module docstring: the cases, seeds and rules) from "
        "`benchmarks/results/uncertainty.summary.json`. Machine: 2 cores shared with other work, so wall "
        "times are indicative.",
        "",
    ]
    if command:
        L += [f"Last command: `{command}`", ""]
    L += status_section(s) + coverage_section(s) + cost_section(s) + hysteresis_section(s)
    if (RESULTS / "uncertainty.corner.png").is_file():
        L += [
            "## Figures",
            "",
            "Duffing replicate 1 (5 % noise): the posterior's corner plot (`uncertainty.corner.png`) and the fit with "
            "its 95 % band (`uncertainty.band.png`), used by docs/uncertainty.md.",
            "",
        ]
    REPORT.write_text("\n".join(L) + "\n")
    print(f"wrote {REPORT}")


def figures() -> None:
    from mechcalib.uncertainty.plots import corner_plot, predictive_band

    seed = 1
    prob = duffing_problem(seed)
    with RunStore(STORE) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = mc.calibrate(prob, LeastSquares(n_starts=2, restart=False, seed=seed), max_evals=400)
        res.run_name = f"duffing/s{seed:03d}"
        steps = load_summary()["coverage"].get(key("duffing", seed, True), {}).get("steps", 600)
        u = uncertainty(res, problem=prob, store=store, posterior=True, walkers=12, steps=steps, seed=seed)
    p = u.posterior
    assert p is not None
    best = np.array([u.best[n] for n in u.names])
    corner_plot(p.samples, u.names, RESULTS / "uncertainty.corner.png", best=best, truth=truth_of(prob),
                title=f"Duffing, 5 % noise: emcee posterior ({p.walkers} walkers x {p.steps} steps)")  # fmt: skip
    predictive_band(prob, p.samples, best, RESULTS / "uncertainty.band.png", noise=u.local.noise,
                    title="Duffing, 5 % noise: fit and 95 % bands")  # fmt: skip
    print("wrote the figures")


def sdof_figures() -> None:
    """docs/img/sdof_boucwen_{corner,fit,band,loop}.png: the SDOF Bouc-Wen case (acceleration, 5 % noise, noise
    seed 1) calibrated by least squares, its Laplace intervals, and the report's four figures at the polished
    optimum, the corner plot and the bands over 4000 draws of the Laplace Gaussian (a short run: no chain)."""
    from mechcalib.reporting import _write, fit_figure, layout_problems, loop_figure
    from mechcalib.uncertainty.local import laplace_samples
    from mechcalib.uncertainty.plots import band_figure, corner_figure

    out = ROOT / "docs" / "img"
    prob = problem_of("sdof", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = mc.calibrate(prob, LeastSquares(n_starts=2, restart=False, seed=1), max_evals=400, progress=False)
        res.run_name = "sdof/s001"
        u = uncertainty(res, problem=prob, store=MemoryStore(), force=True)
    best = np.array([u.best[n] for n in u.names])
    samples = laplace_samples(prob.space, u.best_u, u.local.cov_u, 4000, seed=0)
    units = [p.unit for p in prob.space.free]
    how = "SDOF Bouc-Wen, 5 % noise: Laplace (Gauss-Newton) Gaussian"
    figures = {
        "corner": corner_figure(samples, u.names, units=units, best=best, truth=truth_of(prob), title=how),
        "fit": fit_figure(prob, best, title="SDOF Bouc-Wen: polished optimum"),
        "band": band_figure(prob, samples, best, noise=u.local.noise, title=f"{how}: fit and 95 % bands"),
        "loop": loop_figure(prob, best, samples=samples, title="SDOF Bouc-Wen: restoring force against displacement"),
    }
    for name, fig in figures.items():
        problems = layout_problems(fig)  # overlapping tick labels, axes without a unit, legends over axes
        f = _write(fig, out / f"sdof_boucwen_{name}.png")
        print(f"wrote {f} ({f.stat().st_size // 1024} KiB); layout problems: {problems or 'none'}")


def _ints(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", choices=("duffing", "sdof"))
    ap.add_argument("--replicates", default="0-99", help="noise seeds are replicate + 1 (default 0-99)")
    ap.add_argument("--posterior", action="store_true", help="also sample each replicate's posterior")
    ap.add_argument("--cost", action="store_true")
    ap.add_argument("--cost-move", default="stretch", help="--cost with this emcee move (stretch, de, gauss)")
    ap.add_argument("--hysteresis", action="store_true")
    ap.add_argument("--hyst-cases", default=",".join(HYST_CASES))
    ap.add_argument("--figures", action="store_true")
    ap.add_argument("--sdof-figures", action="store_true", help="docs/img's SDOF Bouc-Wen figures, and nothing else")
    ap.add_argument("--max-minutes", type=float, default=None)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--store", default=None, help="the run store (default results/uncertainty.sqlite); one per process")
    a = ap.parse_args(argv)
    if a.store:
        global STORE
        STORE = Path(a.store)
    deadline = None if a.max_minutes is None else time.time() + 60 * a.max_minutes
    if a.sdof_figures:
        sdof_figures()
        return 0
    if not a.report_only:
        if a.case:
            coverage_pass(a.case, [r + 1 for r in _ints(a.replicates)], a.posterior, deadline)
        if a.cost:
            cost_pass(a.cost_move)
        if a.hysteresis:
            hysteresis_pass(a.hyst_cases.split(","), a.posterior, deadline)
        if a.figures:
            figures()
    write_report(" ".join(["python benchmarks/uncertainty.py", *(argv if argv is not None else sys.argv[1:])]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
