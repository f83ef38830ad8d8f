"""The README's dashboard screenshots (on demand): ``docs/img/dashboard_live.png`` and ``docs/img/report_html.png``.

The SDOF Bouc-Wen example (``examples/hysteresis_boucwen.toml``) is run twice: once to 400 evaluations, then
``mechcalib uncertainty --posterior`` on it (the static report of that folder: fit, loop, corner, band); and once
with the example's budget (25 000), photographed by the live dashboard while it runs, beside the finished one. Headless
Chromium through Playwright; the PNGs are reduced to a palette so that each stays under about 300 KB.

    python benchmarks/dashboard_screenshots.py [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mechcalib.dashboard import Dashboard, make_server  # noqa: E402
from mechcalib.storage import RunStore  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
IMG = ROOT / "docs" / "img"
EXAMPLE = ROOT / "examples" / "hysteresis_boucwen.toml"


def cli(*args: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.Popen([sys.executable, "-m", "mechcalib.cli", "-q", *args], env=env)


def evaluations(folder: Path) -> int:
    try:
        with RunStore(folder / "store.sqlite", readonly=True, check=False) as st:
            return st.runs()[0].n_evals if st.runs() else 0
    except Exception:  # noqa: BLE001 - not created yet
        return 0


def shrink(path: Path, width: int = 1100, colors: int = 128) -> None:
    from PIL import Image

    img = Image.open(path).convert("RGB")
    if img.width > width:
        img = img.resize((width, round(img.height * width / img.width)), Image.Resampling.LANCZOS)
    img.quantize(colors=colors, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=None, help="Folder for the runs (default: a temporary one).")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp())
    done, live = work / "bw_done", work / "bw_live"
    if not (done / "samples.npz").is_file():
        assert cli("run", str(EXAMPLE), "--out", str(done), "--budget", "400").wait() == 0
        assert cli("uncertainty", str(done), "--posterior", "--steps", "150").wait() == 0
    assert cli("report", str(done), "--html", str(work / "report.html")).wait() == 0
    proc = cli("run", str(EXAMPLE), "--out", str(live), "--budget", "25000")
    from playwright.sync_api import sync_playwright

    try:
        while evaluations(live) < 600 and proc.poll() is None:
            time.sleep(0.5)
        dash = Dashboard([live, done], refresh=1.0)
        server = make_server(dash, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1900})
            page.goto(f"http://127.0.0.1:{server.server_port}/")
            page.wait_for_selector("body[data-rendered]", timeout=120_000)
            page.wait_for_function("document.body.dataset.rendered > 2", timeout=60_000)  # refreshed while running
            page.screenshot(path=str(IMG / "dashboard_live.png"))
            page = browser.new_page(viewport={"width": 1000, "height": 2600})
            page.goto((work / "report.html").as_uri())
            page.wait_for_selector("body[data-rendered]", timeout=120_000)
            page.evaluate("document.getElementById('fig-fit-0-0').scrollIntoView()")
            page.screenshot(path=str(IMG / "report_html.png"), full_page=True)
            browser.close()
        server.shutdown()
    finally:
        proc.kill()
        proc.wait()
    for name in ("dashboard_live.png", "report_html.png"):
        shrink(IMG / name)
        print(f"wrote {IMG / name} ({(IMG / name).stat().st_size / 1024:.0f} KB)")


if __name__ == "__main__":
    main()
