"""Command line: a thin layer over the Python API (the ``mechcalib`` console script is :data:`app`).

One module per command group, each adding its commands to :data:`app` through its ``register`` function (or, for
a sub-command group, a typer application of its own); what they share (the error handler and its exit-code
policy, the ``NAME=VALUE`` option parser, console and progress output) is in :mod:`mechcalib.cli.common`. A
command module imports ``common`` alone, never another command module nor this package, so that no import cycle
can form. Heavy imports (numpy models, torch) happen inside the commands, when they run.
"""

from __future__ import annotations

import logging
import sys

import typer

from . import dashboard, inverse, models, run
from .models import write_response_csv

__all__ = ["app", "write_response_csv"]

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Calibrate mechanical simulation models against measured curves."
)


@app.callback()
def main(
    ctx: typer.Context, quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only results and errors.")
) -> None:
    _configure_logging(logging.WARNING if quiet else logging.INFO)
    # the commands draw their own progress bars and result lines: the calibration loop's start and end lines
    # (logged for Python users) would repeat them
    logging.getLogger("mechcalib.calibrate.run").setLevel(logging.WARNING)
    ctx.obj = {"quiet": quiet}


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the ``sys.stderr`` of the moment: a command run in-process after another (a test's
    ``CliRunner``, a notebook) must not write to the stream an earlier command was given and closed."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))

    @property  # type: ignore[override]
    def stream(self):  # noqa: D102
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def _configure_logging(level: int) -> None:
    """The library's log lines on stderr as plain messages (as ``logging.basicConfig`` would, once: a root
    logger that already has handlers, e.g. under pytest, is left alone), at ``level`` for this command."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(_Stderr())
    if any(isinstance(h, _Stderr) for h in root.handlers):
        root.setLevel(level)


models.register(app)
run.register(app)
dashboard.register(app)
app.add_typer(inverse.app, name="inverse")
