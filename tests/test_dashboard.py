"""The dashboard (``mechcalib dashboard``) and the static report (``mechcalib report --html``): what the page
reads from a run folder, the command line's errors, and the page itself in a real browser (headless Chromium
driven by Playwright), live on a running calibration and static from a file with no network."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from mechcalib.cli import app
from mechcalib.storage import MemoryStore, RunStore
from mechcalib.storage.base import Store

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def _browser_missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright; .ci/run installs it)"
    if not Path(CHROMIUM).is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install -y chromium; .ci/run installs it)"
    return None


needs_browser = pytest.mark.skipif(_browser_missing() is not None, reason=str(_browser_missing()))


# ------------------------------------------------------------------------------------------------------
# Run folders
# ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The linear example run briefly (``plain``), and a copy with ``mechcalib uncertainty`` (``unc``)."""
    from mechcalib.runs import folder_uncertainty, run_config

    base = tmp_path_factory.mktemp("runs")
    plain = base / "plain"
    run_config(ROOT / "examples" / "linear.toml", plain, budget=60, plots=False)
    unc = base / "unc"
    shutil.copytree(plain, unc)
    folder_uncertainty(unc)
    return {"plain": plain, "unc": unc}


def _store_numbers(folder: Path) -> dict[str, Any]:
    with RunStore(folder / "store.sqlite", readonly=True) as st:
        name = json.loads((folder / "run.json").read_text())["run_name"]
        info = st.run(name)
        best = st.best(name)
    assert best is not None
    return {"n_evaluations": info.n_evals, "n_failed": info.n_failed, "best_loss": best.loss, "best": best.params}


def test_payload_equals_the_store(runs: dict[str, Path]) -> None:
    from mechcalib.dashboard import Dashboard

    data = Dashboard([runs["unc"], runs["plain"]]).payload()
    unc, plain = data["runs"]
    truth = _store_numbers(runs["unc"])
    assert unc["ok"] and unc["n_evaluations"] == truth["n_evaluations"] == 60
    assert unc["best_loss"] == truth["best_loss"] and unc["best"] == truth["best"]
    # the best-so-far curve ends at the best loss; every evaluation is drawn in a run this small
    assert unc["history"]["best_loss"][-1] == truth["best_loss"] and len(unc["history"]["idx"]) == 60
    # intervals from uncertainty.json, corner and band once it ran, the fit with its residuals always
    saved = json.loads((runs["unc"] / "uncertainty.json").read_text())["parameters"]
    assert unc["intervals"]["parameters"]["a"]["lower"] == saved["a"]["lower"]
    assert unc["corner"]["names"] == ["a", "b"] and len(unc["corner"]["samples"][0]) > 100
    assert unc["bands"] and unc["bands"][0]["channel"] == "y"
    (ch,) = unc["fit"][0]["channels"]
    measured, residual = np.array(ch["measured"]), np.array(ch["residual"])
    sim = np.interp(measured[0], *np.array(ch["simulated"]))
    np.testing.assert_allclose(residual[1], measured[1] - sim, rtol=1e-9, atol=1e-9)
    assert plain["corner"] is None and "mechcalib uncertainty" in plain["uncertainty_note"]
    json.dumps(data, allow_nan=False)  # strict JSON: what the browser parses


def _fill(store: Store, n: int, seed: int = 0) -> None:
    from mechcalib.storage.rows import EvaluationRow, RunSpec

    space = [{"name": k, "lower": 0.0, "upper": 1.0, "scale": "linear", "unit": "m", "fixed": None} for k in "ab"]
    spec = RunSpec(
        optimizer="random", settings={}, seed=0, termination={"max_evals": n}, evaluator={}, space=space,
        fingerprint=None, config=None, versions={},
    )  # fmt: skip
    rid = store.create_run("r", spec)
    rng = np.random.default_rng(seed)
    for i in range(n):
        u = rng.random(2)
        failed = i % 7 == 3
        loss = float("inf") if failed else float(((u - 0.3) ** 2).sum())
        store.add_evaluation(
            rid,
            EvaluationRow(
                idx=i, batch=i, pos=0, key=f"k{i}", params=json.dumps({"a": u[0], "b": u[1]}), u=json.dumps(list(u)),
                loss=loss, raw_loss=float("nan") if failed else loss, status="failed" if failed else "ok",
                error="boom" if failed else None, started=float(i), finished=i + 0.5, worker="w",
            ),
        )  # fmt: skip


@pytest.mark.parametrize("every", [1, 7, 50])
def test_thinned_table_keeps_every_improvement(tmp_path: Path, every: int) -> None:
    """SQLite's thinning (a window query) equals the plain rule on the memory store, and keeps the exact
    best-so-far curve: every improvement is there."""
    with RunStore(tmp_path / "s.sqlite") as st:
        _fill(st, 400)
        fast = st.evaluation_table("r", every=every)
        idx, best = st.trace("r")
    mem = MemoryStore()
    _fill(mem, 400)
    slow = Store.evaluation_table(mem, "r", every=every)
    for k in ("idx", "status"):
        np.testing.assert_array_equal(fast[k], slow[k])
    np.testing.assert_array_equal(fast["loss"], slow["loss"])
    np.testing.assert_array_equal(fast["X"], slow["X"])
    ok = fast["status"] == "ok"
    steps = np.minimum.accumulate(np.where(ok, fast["loss"], np.inf))
    full = np.full(idx.size, np.inf)
    full[fast["idx"]] = steps
    np.testing.assert_array_equal(np.minimum.accumulate(full), best)  # the thinned curve is the exact one
    if every > 1:
        assert fast["idx"].size < 400


def test_damaged_store_is_a_message_on_the_page(runs: dict[str, Path], tmp_path: Path) -> None:
    from mechcalib.dashboard import Dashboard

    bad = tmp_path / "bad"
    shutil.copytree(runs["plain"], bad)
    path = bad / "store.sqlite"
    raw = bytearray(path.read_bytes())
    raw[100 : len(raw)] = b"\x17" * (len(raw) - 100)  # every page after the header garbled
    path.write_bytes(bytes(raw))
    notrun = tmp_path / "empty"
    notrun.mkdir()
    data = Dashboard([bad, notrun, runs["plain"]]).payload()
    damaged, empty, good = data["runs"]
    assert not damaged["ok"] and "repair" in damaged["message"], damaged["message"]
    assert not empty["ok"] and "holds no run store" in empty["message"]
    assert good["ok"]


# ------------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------------
def _one_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln]
    assert len(lines) == 1, text
    return lines[0]


def test_cli_not_a_run_and_port_in_use(runs: dict[str, Path], tmp_path: Path) -> None:
    import socket

    res = CliRunner().invoke(app, ["dashboard", str(tmp_path)])
    assert res.exit_code == 2 and "holds no run store" in _one_line(res.output)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = CliRunner().invoke(app, ["dashboard", str(runs["plain"]), "--port", str(port)])
    assert res.exit_code == 1 and f"port {port} on 127.0.0.1 is in use" in _one_line(res.output)


def test_report_html_needs_no_plotly_package(
    runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """plotly.js ships inside mechcalib: the page is written where the plotly Python package is absent, and it
    holds the shipped bundle, whose licence ships beside it."""
    from importlib import resources

    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly raises ImportError
    out = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["report", str(runs["plain"]), "--html", str(out)])
    assert res.exit_code == 0, res.output
    static = resources.files("mechcalib.dashboard").joinpath("static")
    assert "plotly.js (cartesian - minified) v4.1.1" in out.read_text(encoding="utf-8")
    assert "MIT License" in static.joinpath("plotly-LICENSE.txt").read_text(encoding="utf-8")


def test_cli_host_warns_and_ctrl_c_stops(runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from http.server import ThreadingHTTPServer

    def interrupted(self: Any, *a: Any, **k: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ThreadingHTTPServer, "serve_forever", interrupted)
    res = CliRunner().invoke(app, ["dashboard", str(runs["plain"]), "--host", "0.0.0.0", "--port", "0"])
    assert res.exit_code == 0, res.output
    assert "warning: listening on 0.0.0.0" in res.output and "dashboard stopped" in res.output
    res = CliRunner().invoke(app, ["dashboard", str(runs["plain"]), "--port", "0"])
    assert "warning" not in res.output and "http://127.0.0.1:" in res.output


def test_report_html_without_uncertainty_and_unwritable(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "plain.html"
    res = CliRunner().invoke(app, ["report", str(runs["plain"]), "--html", str(out)])
    assert res.exit_code == 0, res.output
    assert "without uncertainty panels" in res.output and "mechcalib uncertainty" in res.output
    text = out.read_text()
    assert "without uncertainty panels" in text and "window.MC_DATA" in text
    assert "<script src=" not in text and "<link" not in text  # self-contained
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    res = CliRunner().invoke(app, ["report", str(runs["plain"]), "--html", str(blocker / "r.html")])
    assert res.exit_code == 1 and "cannot write the report" in _one_line(res.output)
    res = CliRunner().invoke(app, ["report", str(tmp_path), "--html", str(out)])
    assert res.exit_code == 2 and "holds no run store" in _one_line(res.output)


# ------------------------------------------------------------------------------------------------------
# The page in a browser
# ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _browser_missing()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Served:
    def __init__(self, folders: list[Path], refresh: float) -> None:
        from mechcalib.dashboard import Dashboard, make_server

        self.dash = Dashboard(folders, refresh=refresh)
        self.server = make_server(self.dash, "127.0.0.1", 0)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}/"

    def __enter__(self) -> Served:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _open(browser: Any, url: str) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    return page, errors


def _all_rendered(page: Any, generation: int | None = None) -> int:
    """Wait for the page's render-complete marker; check every figure has it and holds a plotly drawing."""
    page.wait_for_selector("body[data-rendered]", timeout=30_000)
    gen = int(page.eval_on_selector("body", "b => b.dataset.rendered"))
    if generation is not None:
        assert gen >= generation
    figs = page.eval_on_selector_all(
        ".mc-fig", "els => els.map(e => [e.id, e.dataset.rendered, e.querySelectorAll('.main-svg').length])"
    )
    assert figs and int(page.eval_on_selector("body", "b => b.dataset.figures")) == len(figs)
    for fid, marker, svgs in figs:
        assert marker is not None and svgs > 0, (fid, marker, svgs)
    return gen


def _shown(page: Any, field: str, run: int = 0) -> str:
    return str(page.eval_on_selector(f"#run-{run} [data-field='{field}']", "e => e.dataset.value"))


@needs_browser
def test_live_page_shows_the_store(browser: Any, runs: dict[str, Path], tmp_path: Path) -> None:
    folders = [runs["unc"], runs["plain"]]
    before = {p: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in _store_files(folders)}
    files_before = {f: sorted(os.listdir(f)) for f in folders}
    with Served(folders, refresh=0.5) as srv:
        page, errors = _open(browser, srv.url)
        gen = _all_rendered(page)
        ids = page.eval_on_selector_all(".mc-fig", "els => els.map(e => e.id)")
        for kind in ("history", "traces", "fit", "corner", "band"):
            assert any(i.startswith(f"fig-{kind}-0") for i in ids), (kind, ids)
        assert "fig-compare" in ids and not any(i.startswith("fig-corner-1") for i in ids)
        truth = _store_numbers(runs["unc"])
        assert int(_shown(page, "n_evaluations")) == truth["n_evaluations"]
        assert float(_shown(page, "best_loss")) == truth["best_loss"]
        for name, value in truth["best"].items():
            assert float(_shown(page, f"best:{name}")) == value
        page.wait_for_function(f"document.body.dataset.rendered > {gen}", timeout=10_000)  # it refreshes
        page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
        page.close()
    assert not errors, errors
    assert (tmp_path / "dashboard.png").stat().st_size > 10_000
    # a dashboard session changes nothing in the run folders: the stores' bytes and times, the file list
    after = {p: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in _store_files(folders)}
    assert after == before
    for f in folders:  # beside them only what any SQLite reader of a WAL store leaves: its index, an empty log
        new = set(os.listdir(f)) - set(files_before[f])
        assert new <= {"store.sqlite-shm", "store.sqlite-wal"}, new
        assert not (f / "store.sqlite-wal").exists() or (f / "store.sqlite-wal").stat().st_size == 0


def _store_files(folders: list[Path]) -> list[Path]:
    return [f / n for f in folders for n in ("store.sqlite", "store.sqlite.counts.json") if (f / n).exists()]


@needs_browser
def test_static_report_from_file_with_no_network(browser: Any, runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["report", str(runs["unc"]), "--html", str(out)])
    assert res.exit_code == 0, res.output
    context = browser.new_context(offline=True, viewport={"width": 1300, "height": 900})
    asked: list[str] = []

    def refuse(route: Any) -> None:
        if not route.request.url.startswith("file://"):
            asked.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    context.route("**/*", refuse)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri())
    _all_rendered(page)
    truth = _store_numbers(runs["unc"])
    assert int(_shown(page, "n_evaluations")) == truth["n_evaluations"]
    assert page.locator(".mc-fig").count() >= 5  # history, traces, fit, corner, band
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    context.close()
    assert not errors and not asked, (errors, asked)


LIVE_SCRIPT = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    import mechcalib as mc
    from mechcalib.core.problem import FunctionProblem
    from mechcalib.optimizers import make_optimizer

    def f(x):
        time.sleep(float(sys.argv[3]) * len(x))
        return ((x - 0.3) ** 2).sum(axis=1)

    problem = FunctionProblem.from_bounds(f, [0.0, 0.0], [1.0, 1.0])
    mc.calibrate(problem, make_optimizer("random", batch_size=2, seed=0), max_evals=int(sys.argv[2]),
                 store=sys.argv[1], run_name="live")
    """
)


def _start_calibration(store: Path, n: int, seconds: float) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen([sys.executable, "-c", LIVE_SCRIPT, str(store), str(n), str(seconds)], env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until its first evaluations are stored
        if store.is_file():
            try:
                with RunStore(store, readonly=True, check=False) as st:
                    if st.runs() and st.run("live").n_evals > 0:
                        return proc
            except Exception:  # noqa: BLE001 - the store is still being created
                pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the calibration stored nothing in 60 s")


@needs_browser
def test_running_calibration_grows_on_the_page(browser: Any, tmp_path: Path) -> None:
    store = tmp_path / "live.sqlite"
    proc = _start_calibration(store, 4000, 0.01)
    refresh = 1.0
    try:
        with Served([store], refresh=refresh) as srv:
            page, errors = _open(browser, srv.url)
            _all_rendered(page)
            first = int(_shown(page, "n_evaluations"))
            t0 = time.monotonic()
            page.wait_for_function(
                "n => Number(document.querySelector('#run-0 [data-field=n_evaluations]').dataset.value) > n",
                arg=first,
                timeout=int(3 * refresh * 1000),
            )
            grew = time.monotonic() - t0
            second = int(_shown(page, "n_evaluations"))
            assert _shown(page, "status") == "running"
            page.screenshot(path=str(tmp_path / "live.png"), full_page=True)
            page.close()
    finally:
        proc.kill()
        proc.wait()
    assert second > first and grew <= 2 * refresh + 1.0, (first, second, grew)
    assert not errors, errors


def _watch_wal(store: Path, proc: subprocess.Popen[bytes], poll: Any) -> tuple[int, int]:
    """The log's largest size while the run runs, and how many times it restarted from its beginning (after a
    complete checkpoint SQLite writes a new header: its salt changes)."""
    wal = store.with_name(store.name + "-wal")
    biggest, salts = 0, set()
    while proc.poll() is None:
        poll()
        try:
            head = wal.read_bytes()[:32]
        except FileNotFoundError:
            head = b""
        if len(head) == 32:
            salts.add(head[16:24])
        biggest = max(biggest, wal.stat().st_size if wal.exists() else 0)
        time.sleep(0.05)
    return biggest, len(salts) - 1


def test_wal_checkpointed_while_the_dashboard_reads(tmp_path: Path) -> None:
    """A calibration's write-ahead log stays bounded while the dashboard reads its store every 0.1 s (one
    short read each, nothing held between): against the same run beside a reader that holds one snapshot,
    whose log grows with every evaluation."""
    from mechcalib.dashboard import Dashboard

    n = 600
    store = tmp_path / "dash.sqlite"
    proc = _start_calibration(store, n, 0.004)
    dash = Dashboard([store], refresh=0.1)
    views: list[int] = []
    dash_wal, restarts = _watch_wal(
        store, proc, lambda: views.append(dash.payload()["runs"][0].get("n_evaluations", 0))
    )
    assert proc.returncode == 0 and len(views) > 5 and max(views) > 0
    assert restarts >= 2, restarts  # checkpointed, and the log begun again, while the dashboard read

    held_store = tmp_path / "held.sqlite"
    proc = _start_calibration(held_store, n, 0.004)
    con = sqlite3.connect(f"file:{held_store}?mode=ro", uri=True, isolation_level=None)
    con.execute("BEGIN")
    con.execute("SELECT COUNT(*) FROM evaluations").fetchone()  # a snapshot held open
    held_wal, held_restarts = _watch_wal(held_store, proc, lambda: None)
    con.close()
    assert held_wal > 2 * dash_wal and held_restarts < restarts, (dash_wal, restarts, held_wal, held_restarts)


def test_loops_from_a_loop_channel_or_paired_histories() -> None:
    """A channel of force against displacement is a loop (with its measured points when measured); without
    one, a force history is drawn against the displacement history of the same component."""
    from mechcalib.core.data import Curve, Experiment
    from mechcalib.dashboard.figures import _loops

    t = np.linspace(0.0, 1.0, 50)
    u, r = np.sin(6 * t), np.tanh(3 * np.sin(6 * t - 0.3))
    loop = Curve(u, r, t=t, x_name="displacement", y_name="restoring force", x_unit="m", y_unit="N")
    exp = Experiment({"restoring_force": loop}, name="cyclic")
    (got,) = _loops(exp, {"restoring_force": loop, "x": Curve(t, u, x_name="time", y_name="displacement")})
    assert got["x_label"] == "displacement [m]" and got["y_label"] == "restoring force [N]"
    np.testing.assert_allclose(got["measured"][1], r)
    frame = {
        "restoring_force_1": Curve(t, r, x_name="time", y_name="restoring force", x_unit="s", y_unit="N"),
        "hysteretic_displacement_1": Curve(t, u, x_name="time", y_name="hysteretic displacement", y_unit="m"),
        "hysteretic_displacement_2": Curve(t, 2 * u, x_name="time", y_name="hysteretic displacement", y_unit="m"),
    }
    (pair,) = _loops(exp, frame)
    assert pair["channel"] == "restoring_force_1 against hysteretic_displacement_1"
    np.testing.assert_allclose(pair["simulated"], [u, r])
    assert pair["x_label"] == "hysteretic displacement [m]"
    assert _loops(exp, {"y": Curve(t, u, x_name="time", y_name="velocity")}) == []


def test_slow_figures_do_not_hold_the_page(runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A model slow to simulate: the counts come at once with a note, the fit on a later refresh."""
    from mechcalib.dashboard import Dashboard
    from mechcalib.dashboard.figures import FigureCache

    real = FigureCache._figures

    def slow(self: FigureCache, read: Any) -> dict[str, Any]:
        time.sleep(1.0)
        return real(self, read)

    monkeypatch.setattr(FigureCache, "_figures", slow)
    dash = Dashboard([runs["plain"]])
    dash.first_wait = 0.1
    t0 = time.monotonic()
    first = dash.payload()["runs"][0]
    assert time.monotonic() - t0 < 0.9
    assert first["n_evaluations"] == 60 and first["fit"] is None and "being computed" in first["fit_note"]
    time.sleep(1.5)
    later = dash.payload()["runs"][0]
    assert later["fit"] and later["fit"][0]["name"] == "linear"


def test_read_only_store_is_a_message(runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """What a store in a read-only folder with a write-ahead log raises (SQLite cannot read the log there)
    becomes that run's message on the page."""
    from mechcalib.dashboard import Dashboard
    from mechcalib.dashboard import data as data_module
    from mechcalib.storage.integrity import StoreReadOnlyError

    def refuse(path: Any, **kw: Any) -> Any:
        raise StoreReadOnlyError(f"the run store {path} ... lies in a read-only folder; copy the run folder")

    monkeypatch.setattr(data_module, "RunStore", refuse)
    (view,) = Dashboard([runs["plain"]]).payload()["runs"]
    assert not view["ok"] and "read-only folder" in view["message"]
