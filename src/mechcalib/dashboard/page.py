"""The dashboard's page: one HTML template for the live page (scripts fetched from the local server) and the
static report (plotly's JavaScript, the page's script and the runs' data inlined: one self-contained file).

plotly.js ships inside this package as its cartesian partial bundle (``static/plotly-cartesian.min.js.gz``, v4.1.1,
MIT, ``static/plotly-LICENSE.txt``): the scatter and histogram traces the page draws, in a third of the full
bundle's 4.8 MB, whose parsing alone took most of the 2 s a first visit may take (benchmarks/dashboard_render.py)."""

from __future__ import annotations

import gzip
import html
import json
from importlib import resources
from typing import Any

__all__ = ["dashboard_js", "page_html", "plotly_js"]

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1em 2em; color: #222; }
header { display: flex; gap: 2em; align-items: baseline; flex-wrap: wrap; }
header h1 { font-size: 1.4em; margin: 0.2em 0; }
#runs { display: grid; grid-template-columns: repeat(var(--columns, 1), minmax(0, 1fr)); gap: 2em; }
section.run, section.compare { border-top: 2px solid #ccc; padding-top: 0.5em; min-width: 0; }
h2 { font-size: 1.15em; margin: 0.3em 0; }
.mc-table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; display: block; overflow-x: auto;
  max-width: 100%; }
.mc-table th, .mc-table td { border: 1px solid #ddd; padding: 0.2em 0.6em; text-align: left; }
.mc-table th { background: #f3f3f3; }
.note { color: #555; font-size: 0.9em; margin: 0.3em 0; }
.folder { color: #777; font-size: 0.85em; font-family: monospace; margin: 0; }
.warning, .message, #banner { color: #a40000; font-weight: 600; }
.mc-fig { width: 100%; min-height: 220px; }
"""


def plotly_js() -> str:
    """plotly.js's cartesian bundle, shipped in this package (no network, no plotly install)."""
    data = resources.files(__package__).joinpath("static", "plotly-cartesian.min.js.gz").read_bytes()
    return gzip.decompress(data).decode("utf-8")  # stored compressed: 0.5 MB in the package, not 1.5


def dashboard_js() -> str:
    """The page's own script (``static/dashboard.js``)."""
    return _static("dashboard.js")


def _static(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def _inline(script: str) -> str:
    """A script's text made safe inside ``<script>``: no ``</script`` can end it early."""
    return script.replace("</", "<\\/")


def page_html(*, title: str, refresh: float, data: dict[str, Any] | None = None, note: str | None = None) -> str:
    """The page. Without ``data``: the live page, which loads ``plotly.min.js`` and ``dashboard.js`` from its
    server and fetches ``api/runs`` every ``refresh`` seconds. With ``data`` (the ``api/runs`` answer): the
    static report, every script and the data inlined; ``note`` is shown under the title."""
    config = json.dumps({"refresh": refresh, "live": data is None})
    if data is None:
        scripts = '<script src="plotly.min.js"></script>\n<script src="dashboard.js"></script>'
        # the first read starts before plotly's bundle is parsed, so that the two overlap
        head_script = (
            f'<script>window.MC_CONFIG = {config}; window.MC_FIRST = fetch("api/runs", {{cache: "no-store"}});</script>'
        )
    else:
        payload = json.dumps(data, allow_nan=False)
        scripts = f"<script>{_inline(plotly_js())}</script>\n<script>{_inline(dashboard_js())}</script>"
        head_script = f"<script>window.MC_CONFIG = {config}; window.MC_DATA = {_inline(payload)};</script>"
    mode = f"refreshed every {refresh:g} s" if data is None else "static report"
    note_html = f'<p class="note" id="report-note">{html.escape(note)}</p>' if note else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>{_CSS}</style>
{head_script}
</head>
<body>
<header><h1>{html.escape(title)}</h1><span class="note">{mode}; data read <span id="generated">-</span></span></header>
{note_html}
<p id="banner" hidden></p>
<div id="comparison"></div>
<div id="runs"></div>
{scripts}
</body>
</html>
"""
