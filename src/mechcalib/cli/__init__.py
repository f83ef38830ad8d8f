"""Command line: a thin layer over the Python API (the ``mechcalib`` console script is :data:`app`).

One module per command group, each adding its commands to :data:`app` through its ``register`` function (or, for
a sub-command group, a typer application of its own); what they share (the error handler and its exit-code
policy, the ``NAME=VALUE`` option parser, console and progress output) is in :mod:`mechcalib.cli.common`. A
command module imports ``common`` alone, never another command module nor this package, so that no import cycle
can form. Heavy imports (numpy models, torch) happen inside the commands, when they run.
"""

from __future__ import annotations

import logging

import typer

from . import inverse, models, run
from .models import write_response_csv

__all__ = ["app", "write_response_csv"]

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Calibrate mechanical simulation models against measured curves."
)


@app.callback()
def main(
    ctx: typer.Context, quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only results and errors.")
) -> None:
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format="%(message)s")
    # the commands draw their own progress bars and result lines: the calibration loop's start and end lines
    # (logged for Python users) would repeat them
    logging.getLogger("mechcalib.calibrate").setLevel(logging.WARNING)
    ctx.obj = {"quiet": quiet}


models.register(app)
run.register(app)
app.add_typer(inverse.app, name="inverse")
