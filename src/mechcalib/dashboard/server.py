"""The live dashboard's server (the standard library's :class:`~http.server.ThreadingHTTPServer`) and the
static report.

Routes: ``/`` the page, ``/plotly.min.js`` plotly.js's bundle shipped in the package, ``/dashboard.js`` the
page's script, ``/api/runs`` the runs as JSON (:meth:`Dashboard.payload`). Every folder is read once per
refresh whatever the number of open pages: an answer younger than half the refresh interval is served again.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ..errors import writing
from .data import read_run
from .figures import FigureCache
from .page import dashboard_js, page_html, plotly_js

log = logging.getLogger(__name__)

__all__ = ["Dashboard", "make_server", "write_html"]

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class Dashboard:
    """The run folders shown and what is cached between refreshes (figures, the last answer)."""

    def __init__(self, folders: Sequence[str | os.PathLike[str]], *, refresh: float = 2.0) -> None:
        self.folders = [Path(f) for f in folders]
        self.refresh = float(refresh)
        self.figures = FigureCache()
        self._lock = threading.Lock()
        self._last: tuple[float, bytes] | None = None
        self._reads: dict[Path, int] = {}
        #: seconds the first read of a folder waits for its figures (a slow model's come on a later refresh)
        self.first_wait = 10.0

    def payload(self, *, report: bool = False) -> dict[str, Any]:
        """``{"generated", "refresh", "runs": [view of each folder]}``: each folder read once, then its figures
        added from the cache or computed. The store's integrity check (up to a second on a large store) runs
        on the second read of a folder, so that the first page comes at once. The first read of a folder
        waits up to :attr:`first_wait` seconds for its figures, a refresh 0.2 s (a slow model's fit comes on a
        later refresh). ``report``: the static report's one read, checked and waiting for every figure."""
        runs = []
        for folder in self.folders:
            n = self._reads.get(folder, 0)
            read = read_run(folder, check=report or n == 1)
            self._reads[folder] = n + 1 if read.view.get("ok") else n
            self.figures.add_figures(read, wait=None if report else (self.first_wait if n == 0 else 0.2))
            runs.append(read.view)
        generated = datetime.now(UTC).isoformat(timespec="seconds")
        return {"generated": generated, "refresh": self.refresh, "runs": runs}

    def payload_bytes(self) -> bytes:
        with self._lock:
            now = time.monotonic()
            if self._last is None or now - self._last[0] >= self.refresh / 2:
                self._last = (now, json.dumps(self.payload(), allow_nan=False).encode())
            return self._last[1]

    def title(self) -> str:
        names = ", ".join(f.name for f in self.folders[:3]) + (" ..." if len(self.folders) > 3 else "")
        return f"mechcalib: {names}"


def _handler(dash: Dashboard) -> type[BaseHTTPRequestHandler]:
    page = page_html(title=dash.title(), refresh=dash.refresh).encode()
    scripts: dict[str, bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            log.debug("%s " + format, self.address_string(), *args)

        def _send(self, status: int, body: bytes, kind: str, *, cache: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "max-age=3600" if cache else "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - the base class's name
            path = self.path.split("?", 1)[0]
            try:
                if path in ("/", "/index.html"):
                    self._send(200, page, "text/html; charset=utf-8")
                elif path in ("/plotly.min.js", "/dashboard.js"):
                    if path not in scripts:
                        scripts[path] = (plotly_js() if path == "/plotly.min.js" else dashboard_js()).encode()
                    self._send(200, scripts[path], "text/javascript; charset=utf-8", cache=True)
                elif path == "/api/runs":
                    self._send(200, dash.payload_bytes(), "application/json")
                elif path == "/favicon.ico":
                    self._send(204, b"", "image/x-icon", cache=True)
                else:
                    self._send(404, b'{"message": "not found"}', "application/json")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the browser went away
            except Exception as exc:  # shown on the page; the server goes on
                log.exception("dashboard request %s failed", path)
                body = json.dumps({"message": f"{type(exc).__name__}: {exc}"}).encode()
                self._send(500, body, "application/json")

    return Handler


def make_server(dash: Dashboard, host: str = "127.0.0.1", port: int = 8765) -> ThreadingHTTPServer:
    """A bound (not yet serving) server of ``dash``; ``port=0`` picks a free port (``server.server_port``).
    Raises :class:`OSError` when the port is in use."""
    server = ThreadingHTTPServer((host, port), _handler(dash))
    server.daemon_threads = True
    return server


def write_html(folders: Sequence[str | os.PathLike[str]], path: str | os.PathLike[str]) -> tuple[Path, list[str]]:
    """The page of ``folders`` as one self-contained HTML file (plotly and the data inlined; opens with no
    network). Returns the file and the notes on what it lacks (no uncertainty panels, and why)."""
    dash = Dashboard(folders)
    data = dash.payload(report=True)
    notes = []
    for r in data["runs"]:
        if not r.get("ok"):
            notes.append(f"{r['folder']}: {r['message']}")
        elif r.get("corner") is None:
            notes.append(f"{r['folder']}: without uncertainty panels: {r.get('uncertainty_note')}")
    title = dash.title().replace("mechcalib:", "mechcalib report:")
    text = page_html(title=title, refresh=0, data=data, note="; ".join(notes) or None)
    out = Path(path)
    with writing(out):
        out.write_text(text, encoding="utf-8")
    return out, notes
