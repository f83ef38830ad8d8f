"""Rounds to target: what a user with W workers waits for, beside the simulations.

A *round* is one batch of at most W simulations run at once: a batch of n points asked by a method costs
``ceil(n / W)`` rounds. *Rounds to target* is the number of rounds up to and including the one that holds
the first evaluation meeting the problem's target (``efficiency_problems.target_fn``; within a batch larger
than W, the points run W at a time in order). For each problem,
method, W in {1, 8, 32, 128} and seed, one in-process run (no store, cache off) stops at its target (auto runs
until it stops itself and is also judged at its end) or at its budget. Methods: ``auto`` with
``batch_size = W`` (its budget 3x its own ``max_evals`` of efficiency.md, at least W: the total the issue
allows it at W > 1; at W = 1 its ``max_evals``), ``eki`` with an ensemble of W (where the registry has it),
CMA-ES with a population of W (pycma's default at W = 1), DE with a population of W (its default at W < 4),
and multi-start least squares (``lsq``: TRF from 5 Latin-hypercube starts, ``batch_size = W``: at W > 1 its
starts in lockstep, ``W // (d + 1)`` at once (at most the 5), with the Jacobians at their trial points asked ahead).

``--success`` runs auto alone at W = 1 over the seeds (its success rate within its ``max_evals``).

Every finished case is a line of ``results/efficiency_rounds.jsonl`` (the file is resumable: a case already
in it is skipped). ``--tag`` names the code measured (``main``: today's code, run with ``PYTHONPATH`` on a
checkout of main, whose ``auto`` has no ``batch_size`` and runs its batches as they come).

    python benchmarks/efficiency_rounds.py --problems duffing,sdof --methods auto --workers 1,8,32,128 --seeds 1-5
    python benchmarks/efficiency_rounds.py --success --seeds 1-20
    python benchmarks/efficiency_rounds.py --report      # the section of efficiency.md, printed
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import efficiency_problems as ep  # noqa: E402
import mechcalib as mc  # noqa: E402
from mechcalib.optimizers import OPTIMIZERS, make_optimizer  # noqa: E402

OUT = ep.RESULTS / "efficiency_rounds.jsonl"
WORKERS = (1, 8, 32, 128)
METHODS = ("auto", "eki", "cmaes", "de", "lsq")
PROBLEMS = ("duffing", "sdof", "sdof5", "calorimetry", "sdof7", "frame", "arch")
SMOOTH = ("duffing", "sdof", "sdof5", "calorimetry", "frame")
#: problems on which auto too stops at its target (rounds to target only; its success is in efficiency.md)
EXPENSIVE = ("arch",)
#: budgets of the others (efficiency.md's are 3000; the rounds table stops at the target, far below)
META_BUDGET = 3000


def done_keys() -> set[tuple]:
    if not OUT.exists():
        return set()
    return {_key(json.loads(line)) for line in OUT.read_text().splitlines() if line.strip()}


def _key(r: dict[str, Any]) -> tuple:
    return (r["tag"], r["mode"], r["problem"], r["method"], r["W"], r["seed"])


#: settings given to auto on top of its defaults (``--auto-option``; a run with any is best given its own tag)
AUTO_OPTIONS: dict[str, Any] = {}
#: auto's budget instead of its problem's (``--auto-budget``, with ``--success``; tag ``b<N>``)
AUTO_BUDGET: int | None = None
#: and to ``lsq`` (``--lsq-option``, e.g. ``trials_ahead=4``, tag ``trials``)
LSQ_OPTIONS: dict[str, Any] = {}


def make(method: str, key: str, W: int, seed: int, mode: str) -> tuple[Any, int] | None:
    """The optimiser and its budget; ``None`` where the method is not available here."""
    case = ep.CASES[key]
    if method == "auto":
        from mechcalib.optimizers.auto import Auto

        budget = case.auto_budget if W == 1 or mode == "success" else max(3 * case.auto_budget, W)
        budget = AUTO_BUDGET or budget
        try:
            return Auto(seed=seed, batch_size=W, **AUTO_OPTIONS), budget
        except TypeError:  # today's auto: no batch_size (a misspelt --auto-option must not land here)
            if AUTO_OPTIONS:
                raise
            return Auto(seed=seed), budget
    if method == "eki":
        if "eki" not in OPTIMIZERS:
            return None
        return make_optimizer("eki", seed=seed, ensemble_size=max(W, len(ep.problem(key).space.free_names) + 1)), (
            META_BUDGET
        )
    if method == "cmaes":
        return make_optimizer("cmaes", seed=seed, popsize=W if W >= 2 else None), META_BUDGET
    if method == "de":
        return make_optimizer("de", seed=seed, pop_size=W if W >= 4 else None), META_BUDGET
    if method == "lsq":
        return make_optimizer("lsq", seed=seed, batch_size=W, **LSQ_OPTIONS), case.lsq_budget
    raise ValueError(method)


def run_case(tag: str, mode: str, key: str, method: str, W: int, seed: int, refs: dict[str, Any]) -> dict | None:
    made = make(method, key, W, seed, mode)
    if made is None:
        return None
    opt, budget = made
    prob = ep.problem(key)
    met, _ = ep.target_fn(key, refs)
    space = prob.space
    first: list[int] = []

    def callback(_b: int, _opt: Any, hist: mc.History) -> bool:
        if not first:
            for i in range(hist.n_evals - (hist.evals_per_batch[-1] if hist.evals_per_batch else 0), hist.n_evals):
                if math.isfinite(hist.losses[i]) and met(space.as_dict(space.to_full(hist.X[i])[0]), hist.losses[i]):
                    first.append(i)
                    break
        return bool(first) and (method != "auto" or key in EXPENSIVE)

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = mc.calibrate(prob, opt, max_evals=budget, callback=callback, n_alternatives=0)
    sizes = np.bincount(np.asarray(res.history.batch, int))
    rounds = None
    if first:
        b = int(res.history.batch[first[0]])
        pos = first[0] - int(sizes[:b].sum())  # its place in its batch, run W at a time in order
        rounds = int(sum(math.ceil(n / W) for n in sizes[:b])) + pos // W + 1
    end_ok = bool(met(res.best_params, res.best_loss))
    return {
        "tag": tag,
        "mode": mode,
        "problem": key,
        "method": method,
        "W": W,
        "seed": seed,
        "budget": budget,
        "sims_to_target": None if not first else first[0] + 1,
        "rounds_to_target": rounds,
        "n_evals": int(res.n_evals),
        "rounds": int(sum(math.ceil(n / W) for n in sizes)),
        "end_ok": end_ok,
        "stop": res.stop_reason,
        "rule": next((c["choice"] for c in res.choices if c["choice"] in ("lsq", "cmaes")), None),
        "mismatch": next((c.get("mismatch") for c in res.choices if c["choice"] in ("lsq", "cmaes")), None),
        "converged_at": next((c["at_eval"] for c in res.choices if c["choice"] == "converged"), None),
        # where the rule's second look kept least squares: "noise" (step 1e-4) or "curvature" (the fine step)
        "second_look": next(
            (
                "curvature" if "coarse_mismatch" in c else "noise"
                for c in res.choices
                if c["choice"] == "lsq" and ("coarse_mismatch" in c or "fd_step" in c)
            ),
            None,
        ),
        "wall_s": round(time.perf_counter() - t0, 2),
    }


def _seeds(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tag", default="new")
    ap.add_argument("--problems", default=",".join(PROBLEMS[:5]))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--workers", default=",".join(map(str, WORKERS)))
    ap.add_argument("--seeds", default="1-3")
    ap.add_argument("--success", action="store_true", help="auto alone at W = 1 (success over the seeds)")
    ap.add_argument("--max-minutes", type=float, default=18.0)
    ap.add_argument("--report", action="store_true")
    ap.add_argument(
        "--auto-option",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="a setting of auto, e.g. cmaes_model=false (give such runs their own --tag)",
    )
    ap.add_argument(
        "--lsq-option",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="a setting of lsq, e.g. trials_ahead=4 (give such runs their own --tag)",
    )
    ap.add_argument("--auto-budget", type=int, help="auto's max_evals instead of its problem's (give a tag b<N>)")
    a = ap.parse_args()
    global AUTO_BUDGET
    AUTO_BUDGET = a.auto_budget
    for opt in a.auto_option:
        name, _, value = opt.partition("=")
        AUTO_OPTIONS[name] = json.loads(value)
    for opt in a.lsq_option:
        name, _, value = opt.partition("=")
        LSQ_OPTIONS[name] = json.loads(value)
    if a.report:
        print("\n".join(section()))
        return
    mode = "success" if a.success else "rounds"
    methods = ["auto"] if a.success else a.methods.split(",")
    workers = [1] if a.success else [int(w) for w in a.workers.split(",")]
    keys = a.problems.split(",")
    refs = ep.references(keys)
    have = done_keys()
    t_end = time.time() + 60 * a.max_minutes
    for key in keys:
        for method in methods:
            for W in workers:
                for seed in _seeds(a.seeds):
                    if (a.tag, mode, key, method, W, seed) in have:
                        continue
                    if time.time() > t_end:
                        print("time is up; run again to go on", flush=True)
                        return
                    rec = run_case(a.tag, mode, key, method, W, seed, refs)
                    if rec is None:
                        continue
                    with OUT.open("a") as fh:
                        fh.write(json.dumps(rec) + "\n")
                    print(json.dumps(rec), flush=True)


# --------------------------------------------------------------------------------------------
# Report: the section of efficiency.md
# --------------------------------------------------------------------------------------------
def _records() -> list[dict[str, Any]]:
    if not OUT.exists():
        return []
    return [json.loads(line) for line in OUT.read_text().splitlines() if line.strip()]


def _med(values: list[float]) -> str:
    return "-" if not values else f"{float(np.median(values)):g}"


#: the blocks of 20 seeds of the success table (new code)
_BLOCKS = tuple((lo, lo + 19) for lo in range(1, 140, 20))


def _cell(recs: list[dict[str, Any]]) -> str:
    """``median rounds (median simulations to target; total simulations) ok/n``."""
    if not recs:
        return "-"
    hit = [r for r in recs if r["rounds_to_target"] is not None]
    ok = sum(r["rounds_to_target"] is not None and (r["method"] != "auto" or r["end_ok"]) for r in recs)
    rounds = _med([r["rounds_to_target"] for r in hit])
    sims = _med([r["sims_to_target"] for r in hit])
    return f"{rounds} ({sims}; {_med([r['n_evals'] for r in recs])}) {ok}/{len(recs)}"


def section() -> list[str]:
    recs = _records()
    if not recs:
        return []
    keys = [k for k in PROBLEMS if any(r["problem"] == k for r in recs)]
    lines = ["## auto over 20 seeds, and rounds to target", ""]
    lines += [
        "Generated by `benchmarks/efficiency_rounds.py` (resumable: `results/efficiency_rounds.jsonl`, one line per "
        "finished run, in-process, no store, cache off). *today*: the code before rounds (main at the start of the "
        "work, run with `PYTHONPATH` on its checkout; the frame was added later and has none); *new*: this code "
        "(auto stops at its first converged start, `confirm = 1`, and polishes at most 3 starts at once). `sdof7` is the seven-parameter problem "
        "(the SDOF with the Baber-Wen degrading law under a broadband force, 5 % noise; see "
        "`efficiency_problems.py`), built from `examples/hysteresis_sdof7.toml`, a configuration without `[optimizer]` "
        "(so `auto`).",
        "",
        "### auto's success over seeds (one worker, its `max_evals`)",
        "",
        "*previous*: the code of an earlier stop (tag `s41`); *new*: this code, whose one-slot polishing takes secant "
        "(Broyden) Jacobians, confirms an end on a face of the box by a second start and hands an LM start creeping "
        "along a face to TRF. Seeds 1-20 were measured while auto was built; the misses of seeds 21-60 (all of them "
        "with the previous code: the noise-free SDOF cut by its budget, the frame in basins on a face of its box) "
        "prompted this code's changes, and those of seeds 61-80 (the frame's first start spending its budget in "
        "a face basin, its secant TRF shrinking its step until `xtol`) the rule that a third trial on a secant "
        "Jacobian is not asked, and the frame's seed 64 (a secant TRF restarted on difference Jacobians run after "
        "run along a face, each lowering the loss by less than 1e-3) the rule that two such runs in a row end the "
        "start, and the frame's misses of seeds 1-140 (first starts walking a face basin for most of the budget) "
        "the cap of `10 (d + 1)` points on a start; so seeds 1-140 were all looked at, and no seeds were run "
        "after the last change. Every row of this code was run on one machine (AMD EPYC, 2 cores): on the machine of the "
        "stop before (tag `s42`, the same code at one worker) the frame took other paths on 12 of seeds 1-25, "
        "its simulations differing in the last bits (its linear algebra), and missed seed 64 where this machine "
        "did not. Simulations are medians over the seeds measured. The arch's path (CMA-ES) did not change; its "
        "rows are the previous code's, and seeds 1 and 27 rerun with this code (tag `check`) gave the same runs.",
        "",
        "| problem | max_evals | today: seeds 1-20 | previous: seeds 1-20 | previous: seeds 21-40 "
        "| previous: seeds 41-60 | "
        + " | ".join(f"new: seeds {lo}-{hi}" for lo, hi in _BLOCKS)
        + " | new: simulations to target | new: simulations used | previous: simulations used "
        "| new: rule least squares / CMA-ES |",
        "|---|---|---|---|---|---|" + "---|" * len(_BLOCKS) + "---|---|---|---|",
    ]

    def rate(rs: list[dict[str, Any]]) -> str:
        if not rs:
            return "not measured"
        bad = [r["seed"] for r in rs if not r["end_ok"]]
        return f"{len(rs) - len(bad)}/{len(rs)}" + (f" (missed: {', '.join(map(str, bad))})" if bad else "")

    def block(rs: list[dict[str, Any]], lo: int, hi: int) -> list[dict[str, Any]]:
        return [r for r in rs if lo <= r["seed"] <= hi]

    for k in keys:
        old = [r for r in recs if r["tag"] == "main" and r["mode"] == "success" and r["problem"] == k]
        new = [r for r in recs if r["tag"] == "new" and r["mode"] == "success" and r["problem"] == k]
        prev = [r for r in recs if r["tag"] == "s41" and r["mode"] == "success" and r["problem"] == k]
        if k == "arch":  # its path did not change: the previous code's rows (tag new) stand for both
            prev = new
        if not new and not old:
            continue
        rule = f"{sum(r.get('rule') == 'lsq' for r in new)} / {sum(r.get('rule') == 'cmaes' for r in new)}"
        cells = [rate(block(prev, lo, hi)) for lo, hi in ((1, 20), (21, 40), (41, 60))]
        cells += [rate(block(new, lo, hi)) for lo, hi in _BLOCKS]
        lines.append(
            f"| {k} | {ep.CASES[k].auto_budget} | {rate(old)} | {' | '.join(cells)} | "
            f"{_med([r['sims_to_target'] for r in new if r['sims_to_target']])} | "
            f"{_med([r['n_evals'] for r in new])} | {_med([r['n_evals'] for r in prev])} | {rule} |"
        )
    more = sorted({r["budget"] for r in recs if r["tag"].startswith("b") and r["mode"] == "success"})
    for b in more:
        cells = []
        for k in keys:
            rs = [r for r in recs if r["tag"] == f"b{b}" and r["mode"] == "success" and r["problem"] == k]
            if rs:
                cells.append(f"`{k}` {rate(rs)}, simulations used {_med([r['n_evals'] for r in rs])}")
        lines += [
            "",
            f"With `max_evals = {b}` (`--success --tag b{b} --auto-budget {b}`, seeds 1-40): {'; '.join(cells)}.",
        ]
    looks = [r for r in recs if r["tag"] == "new" and r["mode"] == "success" and r.get("second_look")]
    if looks:
        said = "; ".join(f"`{r['problem']}` seed {r['seed']}: {r['second_look']}" for r in looks)
        lines += ["", f"Runs where the rule's second look kept least squares (new): {said}."]
    lines += [
        "",
        "### Rounds to target",
        "",
        "A round is one batch of at most W simulations at once (a batch of n costs ceil(n / W) rounds; inside a "
        "batch the points run W at a time in order). Each cell: median rounds to target (median simulations to "
        "target; median simulations in all) and the runs that reached it (auto: that also ended at it). auto "
        "runs with `batch_size = W` and a budget of 3x its `max_evals` (at least W) for W > 1; CMA-ES with a "
        "population of W (pycma's default at W = 1), DE with a population of W (its default at W = 1), `lsq` "
        "multi-start TRF with `batch_size = W` (one start at a time at W = 1; at W > 1 `W // (d + 1)` starts, at most "
        "the 5, in lockstep, each round their requests and the Jacobians at their trial points), `eki` with an ensemble of "
        "W (at least the free parameters + 1; its default stop rules, no target set for it). At W > 1 auto's "
        "polishing starts within `lead = 2` times the best start's loss take difference Jacobians asked ahead, "
        "the others secant ones at one simulation a round. auto's rows were run on the machine of the success "
        "table; the other methods' (code unchanged) and auto's before `lead` (tags `s42`, `heldout-s42`, "
        "`fresh-s42`) on earlier machines, and `lsq` at W = 32, seeds 1-5, rerun here gave the same runs.",
        "",
    ]
    workers = sorted({r["W"] for r in recs if r["mode"] == "rounds"})
    lines.append("| problem | method | " + " | ".join(f"W = {w}" for w in workers) + " |")
    lines.append("|---|---|" + "---|" * len(workers))
    for k in keys:
        for tag, method in [("main", "auto"), ("new", "auto"), *[("new", m) for m in METHODS if m != "auto"]]:
            rs = [r for r in recs if r["tag"] == tag and r["mode"] == "rounds" and r["problem"] == k]
            rs = [r for r in rs if r["method"] == method]
            label = f"{method} (today)" if tag == "main" else method
            if not rs and method != "eki":
                continue
            cells = [_cell([r for r in rs if r["W"] == w]) for w in workers]
            lines.append(f"| {k} | {label} | " + " | ".join(cells) + " |")
    lines += ["", *targets(recs, keys), ""]
    return lines


def targets(recs: list[dict[str, Any]], keys: list[str]) -> list[str]:
    """The issue's targets for auto at W = 32, each with its measured value."""
    out = ["### auto's targets at W = 32", ""]
    for k in keys:
        r32 = [r for r in recs if r["tag"] == "new" and r["mode"] == "rounds" and r["problem"] == k]
        r32 = [r for r in r32 if r["method"] == "auto" and r["W"] == 32]
        r1 = [r for r in recs if r["tag"] == "new" and r["mode"] == "rounds" and r["problem"] == k]
        r1 = [r for r in r1 if r["method"] == "auto" and r["W"] == 1]
        t32 = [r for r in recs if r["tag"] == "main" and r["mode"] == "rounds" and r["problem"] == k]
        t32 = [r for r in t32 if r["method"] == "auto" and r["W"] == 32]
        if not r32:
            continue
        med = float(np.median([r["rounds_to_target"] or math.inf for r in r32]))
        if k == "arch":  # its target is half of today's rounds; its W = 1 runs are efficiency.md's
            today = float(np.median([r["rounds_to_target"] or math.inf for r in t32])) if t32 else math.nan
            out.append(
                f"- `arch`: median rounds to target {med:g} over {len(r32)} seeds (target <= half of today's "
                f"{today:g}: {'met' if med <= today / 2 else 'missed'}); simulations to target, median "
                f"{_med([r['sims_to_target'] for r in r32 if r['sims_to_target']])} (today "
                f"{_med([r['sims_to_target'] for r in t32 if r['sims_to_target']])}): CMA-ES with a population of 32."
            )
            every = [r for r in recs if r["tag"] in ("new", "heldout", "fresh") and r["mode"] == "rounds"]
            every = [r["rounds_to_target"] or math.inf for r in every if r["problem"] == k and r["W"] == 32
                     and r["method"] == "auto"]  # fmt: skip
            if len(every) > len(r32):
                all_med = float(np.median(every))
                out.append(
                    f"  Over every seed measured with this code ({len(every)}: the seeds above and the held-out and "
                    f"fresh ones below): median {all_med:g} ({'met' if all_med <= today / 2 else 'missed'})."
                )
            continue
        if not r1:
            continue
        limit = 25 if k == "sdof7" else 10
        tot32, tot1 = float(np.median([r["n_evals"] for r in r32])), float(np.median([r["n_evals"] for r in r1]))
        today = float(np.median([r["rounds_to_target"] or math.inf for r in t32])) if t32 else math.nan
        p32 = [r for r in recs if r["tag"] == "s42" and r["mode"] == "rounds" and r["problem"] == k]
        p32 = [r for r in p32 if r["method"] == "auto" and r["W"] == 32]
        before = (
            f" Before `lead` (tag `s42`): {float(np.median([r['rounds_to_target'] or math.inf for r in p32])):g} "
            f"rounds, {float(np.median([r['n_evals'] for r in p32])):g} simulations in all."
            if p32
            else ""
        )
        out.append(
            f"- `{k}`: median rounds to target {med:g} (target <= {limit}: {'met' if med <= limit else 'missed'}; "
            f"{'today ' + format(today, 'g') if t32 else 'today not measured'}); simulations in all {tot32:g} against {tot1:g} at W = 1 "
            f"({tot32 / tot1:.2f}x; target <= 3x: {'met' if tot32 <= 3 * tot1 else 'missed'}).{before}"
        )
    out += _ratios(recs, keys)
    held = _held_out(recs, keys)
    return out + (["", *held] if held else []) + _trials_ahead(recs, keys)


def _ratios(recs: list[dict[str, Any]], keys: list[str]) -> list[str]:
    """auto's simulations at W = 32 against W = 1 seed by seed set, the W = 1 runs those of the success table
    (the same runs: one worker, the same budget)."""
    one = {(r["problem"], r["seed"]): r["n_evals"] for r in recs if r["tag"] == "new" and r["mode"] == "success"}
    rows = []
    for k in [k for k in keys if k not in EXPENSIVE]:  # the arch stops at its target: no total to compare
        cells = []
        for tags in (("new", "heldout", "fresh"), ("fresh2",)):  # seeds 1-25, 26-45
            rs = [r for r in recs if r["tag"] in tags and r["mode"] == "rounds" and r["problem"] == k]
            rs = [r for r in rs if r["method"] == "auto" and r["W"] == 32 and (k, r["seed"]) in one]
            if not rs:
                cells.append("-")
                continue
            m32 = float(np.median([r["n_evals"] for r in rs]))
            m1 = float(np.median([one[(k, r["seed"])] for r in rs]))
            cells.append(f"{m32:g} / {m1:g} = {m32 / m1:.2f}x")
        if any(c != "-" for c in cells):
            rows.append(f"| {k} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return [
        "",
        "Simulations in all at W = 32 against one worker over more seeds (medians of the same seeds; seeds 26-45 "
        "`--tag fresh2`):",
        "",
        "| problem | seeds 1-25 | seeds 26-45 |",
        "|---|---|---|",
        *rows,
    ]


def _trials_ahead(recs: list[dict[str, Any]], keys: list[str]) -> list[str]:
    """``lsq`` with its trial steps asked ahead (tag ``trials``) against without (``new``), W > 1."""
    rows = []
    for k in keys:
        for W in WORKERS[1:]:
            pair = [
                [
                    r
                    for r in recs
                    if r["tag"] == t
                    and r["mode"] == "rounds"
                    and r["problem"] == k
                    and r["method"] == "lsq"
                    and r["W"] == W
                ]
                for t in ("new", "trials")
            ]
            if all(pair):
                rows.append(f"| {k} | {W} | {_cell(pair[0])} | {_cell(pair[1])} |")
    if not rows:
        return []
    return [
        "",
        "### Trial steps asked ahead",
        "",
        "`lsq` (TRF) with `trials_ahead = 4` (`--tag trials --methods lsq --lsq-option trials_ahead=4`, W = 8, 32, "
        "128): each round's spare room also holds each start's next trial steps should its current one be rejected, "
        "with their Jacobians (exactly the steps scipy's TRF tries next). Cells as above.",
        "",
        "| problem | W | lsq | lsq, trials ahead |",
        "|---|---|---|---|",
        *rows,
    ]


#: the sets of seeds reported besides the main table: tag, heading
_SEED_SETS = (
    (
        "heldout",
        "Seeds not looked at when auto's batch settings (starts at once, `confirm`, the design's cap of two rounds) "
        "were chosen on seeds 1-5 (`--tag heldout`, W = 32). The design of one round, the model injection and the "
        "CMA-ES parents' share (`cmaes_mu_ratio`) were chosen later, after looking at these seeds of the smooth "
        "problems and the arch's seeds 1-8:",
    ),
    (
        "fresh",
        "Seeds looked at for none of the choices before `lead` (`--tag fresh`, W = 32; `lead` was chosen among 1, "
        "2 and 10 on seeds 1-25):",
    ),
    (
        "fresh2",
        "Seeds run after `lead` was chosen (`--tag fresh2`, W = 32; a first form of the rule, which compared the "
        "losses of the round before, ran on them once, and no setting was chosen on them):",
    ),
    (
        "halfmu",
        "The same with pycma's half of the population as parents, as before the parents' share was chosen "
        "(`--tag halfmu --auto-option cmaes_mu_ratio=0.5`, W = 32; these runs were made by the code before "
        "`cmaes_mu_ratio`, which asks the same points as `cmaes_mu_ratio = 0.5`):",
    ),
    (
        "nomodel",
        "With pycma's half as parents and without the CMA-ES model injection (`--tag nomodel --auto-option "
        "cmaes_mu_ratio=0.5 --auto-option cmaes_model=false`, W = 32; made, as `halfmu`, by the code before "
        "`cmaes_mu_ratio`):",
    ),
)


def _rt(r: dict[str, Any]) -> float:
    return r["rounds_to_target"] or math.inf


def _g(v: float) -> str:
    return "missed" if math.isinf(v) else f"{v:g}"


def _held_out(recs: list[dict[str, Any]], keys: list[str]) -> list[str]:
    """auto at W = 32 on the seed sets of :data:`_SEED_SETS`."""
    out: list[str] = []
    for tag, heading in _SEED_SETS:
        lines = []
        for k in keys:
            rs = [r for r in recs if r["tag"] == tag and r["problem"] == k and r["method"] == "auto" and r["W"] == 32]
            if not rs:
                continue
            rs = sorted(rs, key=lambda r: r["seed"])
            seeds = [r["seed"] for r in rs]
            rounds = [r["rounds_to_target"] or math.inf for r in rs]
            prev = [r for r in recs if r["tag"] == f"{tag}-s42" and r["problem"] == k and r["method"] == "auto"]
            before = (
                f" Before `lead` (tag `{tag}-s42`): median {float(np.median([_rt(r) for r in prev])):g} rounds, "
                f"{float(np.median([r['n_evals'] for r in prev])):g} simulations."
                if prev
                else ""
            )
            lines.append(
                f"- `{k}`, seeds {seeds[0]}-{seeds[-1]}: median rounds to target {float(np.median(rounds)):g} "
                f"(most {_g(max(rounds))}; {', '.join(_g(v) for v in rounds)}), "
                f"{sum(r['rounds_to_target'] is not None for r in rs)}/{len(rs)} reached it; simulations in all, "
                f"median {float(np.median([r['n_evals'] for r in rs])):g}.{before}"
            )
        if lines:
            out += ([""] if out else []) + [heading, "", *lines]
    return out


if __name__ == "__main__":
    main()
