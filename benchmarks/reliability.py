"""Reliability benchmark (on demand): what users' machines do to runs, repeated at scale.

Scenarios (each trial on the cheap Duffing and linear models):

* ``kill``: a run (serial, or a pool of 2 workers) SIGKILLed at a random moment, then resumed.
* ``wal``: a run killed, its write-ahead log (``-wal``, ``-shm``) deleted, then resumed; in half the trials
  a reader held a snapshot (a notebook, ``show`` in a loop), so the checkpoints could not fold the log in.
  Held: nothing stored was lost, or ``resume`` refused before simulating anything and named a count covering
  every lost evaluation (then ``--accept-loss`` ends as the reference). A stored evaluation simulated again
  without a word is a failure.
* ``walcopy``: the same, the folder copied without its ``-wal`` file after the kill, the copy resumed.
* ``emptied``: a finished run's store emptied (0 bytes) or replaced by a fresh one: ``show`` and ``resume``
  must say how many evaluations are gone, and ``--accept-loss`` end as the reference.
* ``concurrency``: ``run duffing.toml`` and ``run linear.toml`` started together into one folder.
* ``corruption``: a copy of a finished store truncated, one page garbled, the header garbled, or one JSON
  cell garbled; then ``show``, ``repair`` and ``resume`` of the salvage.
* ``disk full``: a run into a small tmpfs that fills up, then resumed after space is freed.
* ``read-only``: a finished run in a read-only bind mount: ``show``, ``export``, ``report``,
  ``compact --dry-run``, ``resume``.
* ``external``: a simulator whose grandchild leaves its session (half of them orphaned by a double fork) and
  outlives the timeout, which must leave no process behind; a simulator writing 4 MiB, whose logs must be
  capped with their tail kept. Folder pruning and failures of the machine are tested once
  (``tests/test_external_containment.py``), not repeated (:func:`external_scenarios`).

"Held" means: no data lost, a clear message (no traceback), integrity ok and a result
identical to an uninterrupted run; for a store whose data was destroyed, a clear message, a salvage count
and a resume from the salvage that completes (and, since the lost evaluations are simulated again, a result
identical to the uninterrupted run). The processes of a trial are forked from this one (the CLI's own
``app`` called in the child), so a trial does not pay for importing the package again; the disk-full and
read-only scenarios run in a private mount namespace (``unshare -rm``) and are skipped where there is none.

    nice -n 10 python benchmarks/reliability.py              # writes benchmarks/results/reliability.md
    python benchmarks/reliability.py --trials 3 --no-write   # a quick pass

Also measured: the cost of the per-batch sync (counts file + ``PRAGMA wal_checkpoint(PASSIVE)``) on
``benchmarks/engine.py``'s null model.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "reliability.md"
STATE = HERE / "results" / "reliability.json"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from mechcalib.runs import RESULT_FILE, STORE_FILE  # noqa: E402
from mechcalib.storage import RunStore  # noqa: E402
from reliability_cases import (  # noqa: E402
    Case,
    concurrency,
    corruption,
    disk_full,
    emptied,
    external_chatty,
    external_detached,
    external_scenarios,
    fork_cli,
    kill_and_resume,
    read_only,
    same,
    until,
    wait,
    wal_copy,
    wal_deleted,
)

DUFFING = """
name = "duff"
seed = {seed}
[model]
name = "duffing"
preset = "default"
[[experiments]]
kind = "synthetic"
name = "synth"
noise = 0.02
seed = 7
conditions = {{ t_end = 10.0, fs = 50.0 }}
[objective]
name = "overlap_rss"
options = {{ n_points = 50 }}
[optimizer]
name = "pso"
settings = {{ swarm_size = 6 }}
[budget]
max_evals = {budget}
[evaluator]
kind = "serial"
[output]
plots = false
"""

LINEAR = """
name = "lin"
seed = 2
[model]
name = "linear"
[[experiments]]
path = "{data}"
name = "linear"
[experiments.channels]
y = ["x", "y_measured"]
[objective]
name = "f1"
[optimizer]
name = "de"
settings = {{ pop_size = 10 }}
[budget]
max_evals = 60
[output]
plots = false
"""


# ------------------------------------------------------------------------------------------------------
# The cost of the per-batch sync
# ------------------------------------------------------------------------------------------------------
def sync_cost(n: int, repeats: int) -> list[list[float]]:
    """``[batch size, ms per evaluation without the sync, with it after every batch (the default), at most
    once a second]`` on the engine benchmark's null model, serial evaluator, store ``durability="process"``; the
    best of ``repeats``."""
    from engine import NullProblem, timed_run
    from mechcalib.execution import SerialEvaluator

    real, real_expect = RunStore.sync, RunStore.expect
    rows = []
    for batch in (1, 10):
        best = [float("inf")] * 3
        for r in range(repeats):
            for k, kw in enumerate(({}, {}, {"sync_seconds": 1.0})):
                if k == 0:  # neither the record before a batch's first commit nor the sync after it
                    RunStore.sync = lambda self, run_id, n_evals, force=False: None  # type: ignore[method-assign]
                    RunStore.expect = lambda self, run_id, n_evals, expected: None  # type: ignore[method-assign]
                try:
                    with tempfile.TemporaryDirectory() as d:
                        per = timed_run(NullProblem(), SerialEvaluator(), n, batch, Path(d) / "s.sqlite", r, **kw)
                finally:
                    RunStore.sync, RunStore.expect = real, real_expect  # type: ignore[method-assign]
                best[k] = min(best[k], per * 1e3)
        rows.append([batch, *best])
    return rows


def sync_share(delay: float, n: int, batch: int = 1) -> list[float]:
    """``[model seconds, batch size, evaluations, run seconds, seconds inside the store's expect() and sync(),
    their share in %]``: the default store on a model of ``delay`` seconds per simulation, timed from inside."""
    from engine import SleepProblem, timed_run
    from mechcalib.execution import SerialEvaluator

    real_sync, real_expect = RunStore.sync, RunStore.expect
    spent = [0.0]

    def timed(fn):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - t0

        return wrapper

    RunStore.sync, RunStore.expect = timed(real_sync), timed(real_expect)  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as d:
            total = n * timed_run(SleepProblem(delay), SerialEvaluator(), n, batch, Path(d) / "s.sqlite", 0)
    finally:
        RunStore.sync, RunStore.expect = real_sync, real_expect  # type: ignore[method-assign]
    return [delay, batch, n, round(total, 3), round(spent[0], 4), round(100 * spent[0] / total, 3)]


# ------------------------------------------------------------------------------------------------------
def reference(cfg: Path, out: Path, log: Path, *extra: str) -> tuple[dict, float]:
    """An uninterrupted run: its ``result.json`` and its duration from the store's creation to its end."""
    pid = fork_cli(["run", cfg, "--out", out, "-q", *extra], log)
    until((out / STORE_FILE).exists, pid)
    t0 = time.time()
    code = wait(pid)
    assert code == 0, log.read_text()
    return json.loads((out / RESULT_FILE).read_text()), time.time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--trials",
        type=int,
        default=24,
        help="trials per scenario (pool, wal, walcopy, emptied: half; full: a quarter)",
    )
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated: kill,pool,wal,walcopy,emptied,concurrency,corruption,full,ro,external,cost",
    )
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))

    def want(s: str) -> bool:
        return not only or s in only

    os.environ.setdefault("COLUMNS", "200")  # the CLI's messages on one line each
    t_start = time.time()
    load = os.getloadavg()
    cases: list[Case] = []
    costs: list[list[float]] = []
    share: list[float] = []
    work = Path(tempfile.mkdtemp(prefix="mechcalib-reliability-"))
    log = work / "log.txt"
    n, half = args.trials, max(args.trials // 2, 1)
    try:
        cfg = work / "duffing.toml"
        cfg.write_text(DUFFING.format(seed=1, budget=120))
        lin = work / "linear.toml"
        lin.write_text(LINEAR.format(data=ROOT / "examples" / "data" / "linear_measured.csv"))
        ref, duration = reference(cfg, work / "ref", log)
        if want("kill"):
            case = Case("kill -9 at a random moment, resume (serial)")
            for i in range(n):
                kill_and_resume(work, cfg, ref, duration, None, case, i)
            cases.append(case)
        if want("pool"):
            ref_pool, d_pool = reference(cfg, work / "ref_pool", log, "--workers", "2")
            assert not same(ref_pool, ref), "the pool's run differs from the serial one"
            case = Case("kill -9 at a random moment, resume (pool of 2 workers)")
            for i in range(half):
                kill_and_resume(work, cfg, ref, d_pool, 2, case, i)
            cases.append(case)
        if want("wal"):
            case = Case("kill -9, -wal and -shm deleted, resume")
            for i in range(half):
                wal_deleted(work, cfg, ref, duration, case, i)
            cases.append(case)
        if want("walcopy"):
            case = Case("kill -9, folder copied without its -wal, resume the copy")
            for i in range(half):
                wal_copy(work, cfg, ref, duration, case, i)
            cases.append(case)
        if want("emptied"):
            case = Case("finished run's store emptied (0 bytes) or replaced, resume")
            for i in range(half):
                emptied(work, work / "ref", ref, case, i)
            cases.append(case)
        if want("concurrency"):
            case = Case("two `run`s into one folder started together")
            for i in range(n):
                concurrency(work, cfg, lin, case, i)
            cases.append(case)
        if want("corruption"):
            for kind in ("truncated", "page", "header", "json cell"):
                case = Case(f"damaged store: {kind}")
                for i in range(max(n // 2, 1)):
                    corruption(work, work / "ref", ref, kind, case, i)
                cases.append(case)
        mount = (
            shutil.which("unshare") is not None
            and subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0
        )
        if want("full"):
            case = Case("disk full (16 MiB tmpfs), resume after freeing space")
            if mount:
                big = work / "big.toml"
                big.write_text(
                    DUFFING.format(seed=1, budget=120).replace("plots = false", "plots = false\nkeep_responses = true")
                )
                ref_big, _ = reference(big, work / "ref_big", log)
                for i in range(max(n // 4, 1)):
                    disk_full(work, big, ref_big, case, i)
            else:
                case.notes.append("not run: no private mount namespace here")
            cases.append(case)
        if want("ro"):
            case = Case("read-only run folder (bind mount)")
            if mount:
                for i in range(max(n // 8, 1)):
                    read_only(work, work / "ref", case, i)
            else:
                case.notes.append("not run: no private mount namespace here")
            cases.append(case)
        if want("external"):
            case = Case("external simulator: a detached grandchild outlives the timeout")
            for i in range(max(n // 2, 1)):
                external_detached(work, case, i)
            case.notes += external_scenarios()
            cases.append(case)
            case = Case("external simulator: 4 MiB of output, logs capped at 64 KiB")
            for i in range(max(n // 4, 1)):
                external_chatty(work, case, i)
            cases.append(case)
        if want("cost"):
            costs = sync_cost(500, 2)
            share = sync_share(0.1, 400)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stamp = {
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load": [round(x, 1) for x in load],
        "pass_minutes": round((time.time() - t_start) / 60, 1),
        "reference_seconds": round(duration, 2),
    }
    data = json.loads(STATE.read_text()) if STATE.is_file() and not args.no_write else {}
    data.setdefault("cases", {})
    for c in cases:
        data["cases"][c.scenario] = {
            "trials": c.trials,
            "held": c.held,
            "failures": c.failures,
            "notes": c.notes,
            "minutes": round(c.seconds / 60, 1),
            **stamp,
        }
    if costs:
        data["costs"] = {"rows": costs, "share": share, **stamp}
    data.setdefault("passes", []).append({"only": sorted(only) or "all", **stamp})
    lines = report(data)
    print("\n".join(lines))
    if not args.no_write:
        STATE.write_text(json.dumps(data, indent=1) + "\n")
        RESULTS.write_text("\n".join(lines) + "\n")
        print(f"wrote {RESULTS} and {STATE}")


ORDER = (
    "kill -9 at a random moment, resume (serial)",
    "kill -9 at a random moment, resume (pool of 2 workers)",
    "kill -9, -wal and -shm deleted, resume",
    "kill -9, folder copied without its -wal, resume the copy",
    "finished run's store emptied (0 bytes) or replaced, resume",
    "two `run`s into one folder started together",
    "damaged store: truncated",
    "damaged store: page",
    "damaged store: header",
    "damaged store: json cell",
    "disk full (16 MiB tmpfs), resume after freeing space",
    "read-only run folder (bind mount)",
    "external simulator: a detached grandchild outlives the timeout",
    "external simulator: 4 MiB of output, logs capped at 64 KiB",
)


def report(data: dict) -> list[str]:
    cases = data["cases"]
    names = [k for k in ORDER if k in cases] + [k for k in cases if k not in ORDER]
    out = [
        "# Reliability benchmark",
        "",
        "`nice -n 10 python benchmarks/reliability.py` (passes: "
        + "; ".join(f"`--only {','.join(p['only']) if isinstance(p['only'], list) else p['only']}` {p['when']}, "
                    f"{p['pass_minutes']} min, load {p['load'][0]}" for p in data["passes"])
        + f"); Python {platform.python_version()}, {os.cpu_count()} CPUs shared with other work (times are "
        "indicative). Regenerated from `benchmarks/results/reliability.json`, which each pass updates: a later "
        "pass of a scenario replaces its row (passes ran on successive commits of one branch).",
        "",
        "Runs: Duffing (PSO, swarm 6, 120 evaluations, t_end 10 s at 50 Hz) and the linear model (DE, 60 "
        "evaluations). Held means: no data lost, a clear message (no traceback), integrity "
        "ok and a result (best parameters and loss, evaluation count, stop reason, seed, model) identical to "
        "an uninterrupted run; for a damaged store, a clear message, a salvage count and a resume from the "
        "salvage that completes (and ends as the uninterrupted run: what was lost is simulated again).",
        "",
        "| case | trials | held | failures | minutes |",
        "|---|---:|---:|---|---:|",
    ]  # fmt: skip
    for k in names:
        c = cases[k]
        fails = "; ".join(c["failures"][:2]) + (f" (+{len(c['failures']) - 2} more)" if len(c["failures"]) > 2 else "")
        fails = fails.replace("|", "/").replace("\n", " ")
        out.append(f"| {k} | {c['trials']} | {c['held']} | {fails or '-'} | {c['minutes']} |")
    out += ["", "## Details", ""]
    for k in names:
        c = cases[k]
        if c["notes"] or c["failures"]:
            out.append(f"**{k}**")
            out += [f"- {x}" for x in c["notes"][:40]]
            out += [f"- not held: {x}".replace("\n", " ") for x in c["failures"]]
            out.append("")
    if "costs" in data:
        out += [
            "## Cost of the per-batch sync",
            "",
            "Before a batch's first evaluation is committed, the store records in `store.sqlite.counts.json` "
            '(overwritten in place by one write, which a killed process cannot tear; with `durability="power"` '
            "a new file synced and renamed over the old) the run's evaluation count and the count expected after "
            "the batch; "
            "after the batch it records the count again and folds the write-ahead log into the file (`PRAGMA "
            "wal_checkpoint(PASSIVE)`, which syncs it to disk; a `TRUNCATE` waiting for readers at most 1 % of "
            "the batch's time when one kept frames in the log), never sooner after the last than 399 times what "
            "that one took, so that it takes at most about 0.25 % of a run's time. `RunStore(sync_seconds=1.0)` does "
            "the second at most once a second (and at the end of the run); the first is made every "
            "batch. Null model of `benchmarks/engine.py`, serial evaluator, "
            f"`RandomSearch`, 500 evaluations, best of 2 ({data['costs']['when']}, load {data['costs']['load'][0]}"
            " on 2 shared CPUs: an fsync is slow here):",
            "",
            "| batch size | no sync | sync after every batch (default) | at most once a second |",
            "|---:|---:|---:|---:|",
        ]
        for batch, off, every, default in data["costs"]["rows"]:
            out.append(f"| {batch} | {off:.3f} ms | {every:.3f} ms | {default:.3f} ms |")
        share = data["costs"].get("share")
        if share:
            delay, batch, n, total, spent, pct = share
            out += [
                "",
                f"On a model of {delay} s per simulation (it sleeps), in batches of {batch} (the worst case: a sync "
                f"per evaluation), {n} evaluations took {total:.2f} s, of which {spent:.3f} s inside the store's "
                f"record before each batch and sync after it (timed from inside): **{pct:.2f} %** of the run.",
            ]
    return out


if __name__ == "__main__":
    main()
