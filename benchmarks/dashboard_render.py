"""Dashboard time to first render (on demand): a run folder of 100 000 evaluations, opened in headless Chromium.

The store is written through the store API in one transaction (a run of the linear example's two parameters,
its configuration stored with it, so the page rebuilds the problem and draws the fit and its residuals); the
dashboard's server (``mechcalib.dashboard``) serves it from this process. Each trial opens a new browser context
(no HTTP cache, no compiled-script cache: a first visit), navigates to the page and waits for the page's
render-complete marker (``body[data-rendered]``, set once plotly has drawn every figure), checking that every
figure carries it. The server's caches are emptied before each trial, so every trial reads the store again.
Reported: the median of the trials, each trial, the load average before and after, and where the time went
(the page's own performance marks: scripts parsed, data received, figures drawn). A second series reloads the
page in the same context (the browser's caches warm), as a user who opens it again sees it.

    python benchmarks/dashboard_render.py                 # writes benchmarks/results/dashboard_render.md
    python benchmarks/dashboard_render.py --n 20000 --trials 3 --no-write
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mechcalib.config import load_config  # noqa: E402
from mechcalib.dashboard import Dashboard, make_server  # noqa: E402
from mechcalib.dashboard.data import MAX_POINTS  # noqa: E402
from mechcalib.dashboard.page import plotly_js  # noqa: E402
from mechcalib.storage import RunStore  # noqa: E402
from mechcalib.storage.rows import EvaluationRow, RunSpec  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
RESULT = ROOT / "benchmarks" / "results" / "dashboard_render.md"


def make_run(folder: Path, n: int) -> float:
    """A run folder of ``n`` evaluations of the linear example (random points, the loss of its problem's
    shape); returns the seconds it took."""
    t0 = time.perf_counter()
    cfg = load_config(ROOT / "examples" / "linear.toml")
    space = [
        {"name": p.name, "lower": p.lower, "upper": p.upper, "scale": p.scale, "unit": p.unit, "fixed": None}
        for p in cfg.build_problem().space
    ]
    folder.mkdir(parents=True)
    spec = RunSpec(
        optimizer="random",
        settings={},
        seed=0,
        termination={"max_evals": n},
        evaluator={"kind": "serial"},
        space=space,
        fingerprint=None,
        config=cfg.to_dict(),
        versions={},
    )
    rng = np.random.default_rng(0)
    lo, hi = np.array([p["lower"] for p in space]), np.array([p["upper"] for p in space])
    with RunStore(folder / "store.sqlite") as st:
        rid = st.create_run("big", spec)
        st._con.execute("BEGIN")  # one transaction: the benchmark's set-up, not what a run does
        for i in range(n):
            x = lo + (hi - lo) * rng.random(2)
            loss = float(1e3 * ((x - [0.2, 5.0]) ** 2).sum() + 7.0)
            row = EvaluationRow(
                idx=i,
                batch=i // 10,
                pos=i % 10,
                key=f"k{i}",
                params=json.dumps({"a": x[0], "b": x[1]}),
                u=json.dumps(((x - lo) / (hi - lo)).tolist()),
                loss=loss,
                raw_loss=loss,
                status="ok",
                error=None,
                started=float(i),
                finished=i + 0.5,
                worker="w",
            )
            st.add_evaluation(rid, row)
        st._con.execute("COMMIT")
        st.finish_run(rid, status="finished", n_batches=n // 10, stop_reason="max_evals")
    (folder / "run.json").write_text(json.dumps({"run_name": "big"}))
    return time.perf_counter() - t0


def _marks(page: Any) -> dict[str, float]:
    got = page.evaluate(
        "({dom: performance.timing.domContentLoadedEventEnd - performance.timing.navigationStart,"
        " marks: performance.getEntriesByType('mark').map(m => [m.name, m.startTime])})"
    )
    out = {"scripts parsed": float(got["dom"]) / 1e3}
    for name, t in got["marks"]:
        if name.startswith("mc-data-1"):
            out["data received"] = t / 1e3
        if name.startswith("mc-rendered-1"):
            out["figures drawn"] = t / 1e3
    return out


def _wait(page: Any) -> int:
    page.wait_for_selector("body[data-rendered]", timeout=120_000)
    figs = page.eval_on_selector_all(".mc-fig", "els => els.map(e => [e.id, e.dataset.rendered])")
    missing = [f for f, marker in figs if marker is None]
    if missing:
        raise RuntimeError(f"figures without the render-complete marker: {missing}")
    return len(figs)


def bundle_alone(browser: Any, folder: Path, trials: int) -> list[float]:
    """Seconds to load a page holding nothing but plotly's bundle (from a file, a new context each time): the
    floor under any page drawn with plotly on this machine."""
    (folder / "plotly.min.js").write_text(plotly_js())
    page_file = folder / "bundle.html"
    page_file.write_text('<html><body><script src="plotly.min.js"></script></body></html>')
    out = []
    for _ in range(trials):
        context = browser.new_context()
        page = context.new_page()
        t0 = time.perf_counter()
        page.goto(page_file.as_uri())
        out.append(time.perf_counter() - t0)
        context.close()
    return out


def measure(folder: Path, trials: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    dash = Dashboard([folder], refresh=3600)
    server = make_server(dash, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/"
    cold, warm, parts, n_figs = [], [], [], 0
    load_before = os.getloadavg()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        browser.new_page().goto("about:blank")  # the browser process started before the first trial
        for _ in range(trials):
            context = browser.new_context(viewport={"width": 1300, "height": 900})
            page = context.new_page()
            errors: list[str] = []
            page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
            dash.figures.__init__()  # every trial reads the store and rebuilds the fit again
            dash._last = None
            t0 = time.perf_counter()
            page.goto(url)
            n_figs = _wait(page)
            cold.append(time.perf_counter() - t0)
            parts.append(_marks(page))
            dash.figures.__init__()
            dash._last = None
            t0 = time.perf_counter()
            page.reload()
            _wait(page)
            warm.append(time.perf_counter() - t0)
            if errors:
                raise RuntimeError(f"console errors: {errors}")
            context.close()
        bundle = bundle_alone(browser, folder.parent, trials)
        browser.close()
    server.shutdown()
    server.server_close()
    return {
        "cold": cold,
        "warm": warm,
        "parts": parts,
        "figures": n_figs,
        "bundle": bundle,
        "load_before": load_before,
        "load_after": os.getloadavg(),
    }


def report(n: int, setup: float, res: dict[str, Any], trials: int) -> str:
    med = statistics.median(res["cold"])
    part_names = ["scripts parsed", "data received", "figures drawn"]
    part_med = {k: statistics.median(p.get(k, float("nan")) for p in res["parts"]) for k in part_names}
    verdict = "met" if med <= 2.0 else "NOT met"
    lines = [
        "# Dashboard time to first render",
        "",
        "Generated by `python benchmarks/dashboard_render.py`. A run folder of "
        f"{n:,} evaluations (the linear example's two parameters, its configuration stored; written through the "
        f"store API in {setup:.1f} s), served by `mechcalib.dashboard` and opened in headless Chromium "
        f"({CHROMIUM}, `--disable-gpu`: WebGL drawn in software) through Playwright. Time from navigation to the "
        f"render-complete marker on every figure ({res['figures']} figures: convergence, parameter traces, the fit "
        f"with its residuals, drawn from about {MAX_POINTS:,} thinned evaluations plus every improvement; the run has no "
        "`uncertainty.json`, so no corner or band). Each trial a new browser context (no cache: a first visit), the "
        "server's caches emptied (the store read and the fit simulated again).",
        "",
        f"Load average (1, 5, 15 min) before: {', '.join(f'{v:.2f}' for v in res['load_before'])}; after: "
        f"{', '.join(f'{v:.2f}' for v in res['load_after'])} (a machine of {os.cpu_count()} cores shared with "
        "other work).",
        "",
        "| series | median (s) | trials (s) |",
        "|---|---|---|",
        f"| first visit (new context) | {med:.2f} | {', '.join(f'{t:.2f}' for t in res['cold'])} |",
        f"| reload (browser caches warm) | {statistics.median(res['warm']):.2f} | "
        f"{', '.join(f'{t:.2f}' for t in res['warm'])} |",
        f"| plotly's bundle alone, nothing drawn (new context) | {statistics.median(res['bundle']):.2f} | "
        f"{', '.join(f'{t:.2f}' for t in res['bundle'])} |",
        "",
        f"Target at most 2 s (first visit, median of {trials}): **{verdict}**.",
        "",
        "Where the first visit's time went (median over the trials, seconds from navigation; the page asks for "
        "its data before plotly's bundle is parsed, so that the store's read overlaps it):",
        "",
        "| plotly and the page's script parsed | data received | every figure drawn |",
        "|---|---|---|",
        "| " + " | ".join(f"{part_med[k]:.2f}" for k in part_names) + " |",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "big"
        setup = make_run(folder, args.n)
        res = measure(folder, args.trials)
    text = report(args.n, setup, res, args.trials)
    print(text)
    if not args.no_write:
        RESULT.write_text(text)
        print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
