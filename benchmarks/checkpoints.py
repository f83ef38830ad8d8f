"""What a checkpoint after every batch costs a residual method (on demand, not part of the test suite).

The SDOF Bouc-Wen of the efficiency study (``efficiency_problems.problem("sdof")``: 20 001 residuals per
simulation) calibrated by ``auto`` with ``max_evals = 50``, through a fresh SQLite run store, with no
checkpoints and with one after every batch, interleaved ``--repeats`` times. Reported: the wall time of
``calibrate``, the store's size on disk, the number of checkpoints and their largest pickled state. A checkpoint
of ``auto`` or least squares holds the points told and their losses, not their residual vectors (those are
recomputed from the stored responses on resume: :meth:`~mechcalib.optimizers.Optimizer.restore_told`).

    python benchmarks/checkpoints.py        # writes benchmarks/results/checkpoints.md
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import efficiency_problems as ep  # noqa: E402
import mechcalib as mc  # noqa: E402
from mechcalib.optimizers.auto import Auto  # noqa: E402
from mechcalib.storage import RunStore  # noqa: E402

RESULTS = HERE / "results" / "checkpoints.md"


def one(prob, every: int | None, budget: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "s.sqlite"
        with RunStore(path) as store:
            t0 = time.perf_counter()
            res = mc.calibrate(prob, Auto(seed=3), max_evals=budget, store=store, run_name="r", checkpoint_every=every)
            wall = time.perf_counter() - t0
            blobs = [len(b) for _, _, b in store.iter_checkpoints(store.run("r").id)]
        size = sum(f.stat().st_size for f in Path(d).iterdir() if f.name.startswith("s.sqlite"))
    return {"wall": wall, "mb": size / 1e6, "n": len(blobs), "largest": max(blobs, default=0), "loss": res.best_loss}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=int, default=50)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    prob = ep.problem("sdof")
    mid = prob.space.from_unit(np.full((1, prob.space.dim), 0.5))[0]
    m = np.atleast_2d(prob.residuals(mid)).shape[-1]  # residuals per simulation
    one(prob, None, a.budget)  # warm-up: numba kernels loaded
    rows: dict[str, list[dict]] = {"none": [], "every batch": []}
    for _ in range(a.repeats):
        for label, every in (("none", None), ("every batch", 1)):
            rows[label].append(one(prob, every, a.budget))
    load = os.getloadavg()[0]
    L = [
        "# Checkpoint cost of a residual method",
        "",
        f"Written by `python benchmarks/checkpoints.py` on {datetime.now(UTC):%Y-%m-%d %H:%M UTC} (module docstring: "
        f"the setting). SDOF Bouc-Wen, {m} residuals per simulation, `auto` with `max_evals = {a.budget}`, "
        f"{a.repeats} interleaved repeats, load average {load:.2f} on a shared 2-core machine. Median wall time.",
        "",
        "| checkpoints | wall time [s] | store [MB] | checkpoints stored | largest checkpoint [bytes] | "
        "one residual vector [bytes] |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, rs in rows.items():
        L.append(
            f"| {label} | {np.median([r['wall'] for r in rs]):.2f} | {np.median([r['mb'] for r in rs]):.1f} | "
            f"{rs[0]['n']} | {rs[0]['largest']} | {8 * m} |"
        )
    same = len({r["loss"] for rs in rows.values() for r in rs}) == 1
    L += ["", f"Every run ended at the same loss: {'yes' if same else 'no'}.", ""]
    RESULTS.write_text("\n".join(L) + "\n")
    print("\n".join(L))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
