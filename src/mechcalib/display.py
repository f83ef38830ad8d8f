"""What a calibration shows outside the command line: a live progress display while :func:`mechcalib.calibrate`
runs (a rich bar on a terminal's stderr; in a Jupyter notebook an HTML bar updated in place, which needs
nothing beyond IPython) and the HTML table of a result (``Result._repr_html_``).

The command line draws its own bars (:mod:`mechcalib.cli.common`) and turns this one off.
"""

from __future__ import annotations

import html
import math
import sys
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["LiveProgress", "interactive", "result_html"]


def interactive() -> str | None:
    """``"notebook"`` inside a Jupyter kernel, ``"terminal"`` when stderr is a terminal, else ``None`` (a
    script's output redirected to a file, a test run: no display)."""
    ipython = sys.modules.get("IPython")
    if ipython is not None:
        shell = ipython.get_ipython()
        if shell is not None and getattr(shell, "kernel", None) is not None:
            return "notebook"
    try:
        return "terminal" if sys.stderr.isatty() else None
    except (AttributeError, ValueError):  # a replaced or closed stderr
        return None


def _number(v: float) -> str:
    return f"{v:.6g}" if math.isfinite(v) else "-"


class _Bar:
    """The notebook's progress line: HTML for the notebook, plain text for anything else reading the output."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        self.state = dict(state)

    def text(self) -> str:
        s = self.state
        total = f"/{s['total']}" if s["total"] else ""
        failed = f", {s['failed']} failed" if s["failed"] else ""
        end = f"; {s['end']}" if s.get("end") else ""
        return (
            f"{s['label']}: {s['done']}{total} evaluations, best loss {_number(s['best'])}{failed}, "
            f"{s['seconds']:.1f} s{end}"
        )

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        s = self.state
        bar = f'<progress value="{s["done"]}" max="{s["total"]}"></progress> ' if s["total"] else ""
        return f'<div class="mechcalib-progress">{bar}<code>{html.escape(self.text())}</code></div>'


class LiveProgress:
    """An ``on_evaluation`` hook that shows the evaluations done, the budget, the best loss and the failures so
    far, on ``where`` (``"terminal"`` or ``"notebook"``, :func:`interactive`); :meth:`close` draws the last state.
    Notebook updates are spaced by ``every`` seconds."""

    def __init__(self, total: int | None, where: str, *, label: str = "calibrate", every: float = 0.25) -> None:
        self.where, self.every = where, every
        self.state: dict[str, Any] = {
            "label": label, "total": total, "done": 0, "failed": 0, "best": math.inf, "seconds": 0.0, "end": None
        }  # fmt: skip
        self.t0 = time.perf_counter()
        self.last = -math.inf
        self.handle: Any = None
        self.progress: Any = None
        self.task: Any = None

    def __call__(self, idx: int, batch: int, outcome: Any) -> None:
        s = self.state
        s["done"] = max(s["done"], idx + 1)
        if getattr(outcome, "ok", False) and math.isfinite(outcome.loss):
            s["best"] = min(s["best"], float(outcome.loss))
        elif not getattr(outcome, "ok", False):
            s["failed"] += 1
        now = time.perf_counter()
        s["seconds"] = now - self.t0
        if self.where == "terminal" or now - self.last >= self.every:
            self.last = now
            self._draw()

    def _draw(self) -> None:
        s = self.state
        if self.where == "notebook":
            if self.handle is None:
                from IPython.display import display  # present wherever a notebook runs

                self.handle = display(_Bar(s), display_id=True)
            else:
                self.handle.update(_Bar(s))
            return
        if self.progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("evaluations, best {task.fields[best]}"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
            )
            self.progress.start()
            self.task = self.progress.add_task(s["label"], total=s["total"], best="-")
        self.progress.update(self.task, completed=s["done"], best=_number(s["best"]))

    def close(self, end: str | None = None) -> None:
        """Draw the last state (``end``: the stop reason, shown in a notebook) and stop the display."""
        self.state["end"] = end
        self.state["seconds"] = time.perf_counter() - self.t0
        if self.state["done"] or self.handle is not None:
            self._draw()
        if self.progress is not None:
            self.progress.stop()


def result_html(result: Any) -> str:
    """The HTML table of a :class:`~mechcalib.calibrate.Result`: the best point parameter by parameter, the best
    loss, the counts (evaluations, failed, batches, simulated, cached, replayed), the stop reason, the method
    and, with a store, the run's name."""
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(str(k))}</td><td>{e(_number(float(v)))}</td></tr>" for k, v in result.best_params.items()
    )
    facts = [
        ("best loss", _number(result.best_loss)),
        ("stop reason", result.stop_reason),
        ("evaluations", f"{result.n_evals} ({result.n_failed} failed) in {result.n_batches} batches"),
        ("simulated / cached / replayed", f"{result.n_simulated} / {result.n_cached} / {result.n_replayed}"),
        ("method", result.optimizer),
        ("time", f"{result.seconds:.2f} s"),
    ]
    if result.run_name is not None:
        facts.append(("run", result.run_name))
    info = "".join(f"<tr><th style='text-align:left'>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in facts)
    return (
        '<div class="mechcalib-result"><table><thead><tr><th>parameter</th><th>best</th></tr></thead>'
        f"<tbody>{rows}</tbody></table><table>{info}</table></div>"
    )
