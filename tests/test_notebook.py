"""`mc.calibrate` in a notebook: examples/calibrate.ipynb executed in a Jupyter kernel (nbclient) shows the
run's progress bar, the result as an HTML table, the evaluations as a DataFrame and the fit figure inline.
Needs the ``notebook`` extra (nbclient, nbformat, ipykernel); skipped with the reason without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook extra (nbformat) is not installed")
nbclient = pytest.importorskip("nbclient", reason="the notebook extra (nbclient) is not installed")
pytest.importorskip("ipykernel", reason="the notebook extra (ipykernel) is not installed")

EXAMPLE = Path(__file__).parents[1] / "examples" / "calibrate.ipynb"
SRC = Path(__file__).parents[1] / "src"


def _outputs(cell) -> list[dict]:
    return [dict(o) for o in cell.get("outputs", [])]


def test_the_example_notebook_shows_progress_and_an_inline_result_table(monkeypatch):
    # the kernel imports this checkout's mechcalib, as the test process does
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.read(EXAMPLE, as_version=4)
    nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": EXAMPLE.parent}}
    ).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in _outputs(c) if o["output_type"] == "error"]
    assert not errors, errors
    run = _outputs(code[1])
    bars = [o for o in run if o["output_type"] == "display_data"]
    assert len(bars) == 1  # one bar, updated in place
    assert '<progress value="300" max="300">' in bars[0]["data"]["text/html"]
    assert "calibrate: 300/300 evaluations, best loss" in bars[0]["data"]["text/plain"]
    assert "stopped: budget" in bars[0]["data"]["text/plain"]
    (table,) = [o for o in run if o["output_type"] == "execute_result"]
    html = table["data"]["text/html"]
    assert '<div class="mechcalib-result">' in html and "<td>a</td>" in html and "<td>b</td>" in html
    assert "budget" in html and "300 (0 failed)" in html
    (frame,) = [o for o in _outputs(code[2]) if o["output_type"] == "execute_result"]
    assert "<table" in frame["data"]["text/html"] and "loss" in frame["data"]["text/html"]
    figures = [o for o in _outputs(code[3]) if "image/png" in o.get("data", {})]
    assert len(figures) == 1  # the fit with its residual panel, inline, once
