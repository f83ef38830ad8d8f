"""``mechcalib dashboard``: a live web page of run folders (:mod:`mechcalib.dashboard`)."""

from __future__ import annotations

import errno
from pathlib import Path

import typer

from .common import EXIT_FAILED, echo_plain, errors, fail


def dashboard(
    directories: list[Path] = typer.Argument(..., metavar="DIR...", help="Run folders (or run store files) to show."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (default this machine only; another exposes the runs)."
    ),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="Port to listen on (0: any free port)."),
    refresh: float = typer.Option(2.0, "--refresh", min=0.2, help="Seconds between two reads of the runs."),
) -> None:
    """Serve a web page that shows the runs and refreshes while they run: status and counts, convergence,
    parameter traces, the best point with its intervals, the fit of every experiment with its residuals, the
    force-displacement loop, the corner plot and predictive band after `mechcalib uncertainty`, the runs
    compared. The stores are only read, in one short read per refresh. Stop with Ctrl-C."""
    from ..dashboard import LOOPBACK, Dashboard, make_server
    from ..runs.folder import store_path

    with errors():  # a folder that is not a run: one line, exit status 2
        for d in directories:
            store_path(d)
    if host not in LOOPBACK:
        typer.echo(
            f"warning: listening on {host}: anyone who can reach this machine on port {port} can read these runs",
            err=True,
        )
    dash = Dashboard(directories, refresh=refresh)
    try:
        server = make_server(dash, host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            fail(f"port {port} on {host} is in use; give another with --port (0 picks a free one)", EXIT_FAILED)
        fail(f"cannot listen on {host}:{port} ({exc.strerror or exc})", EXIT_FAILED)
    shown = f"[{host}]" if ":" in host else host
    echo_plain(
        f"dashboard of {len(directories)} run folder(s) at http://{shown}:{server.server_port}/ (Ctrl-C stops it)"
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        echo_plain("dashboard stopped")
    finally:
        server.server_close()


def register(app: typer.Typer) -> None:
    app.command()(dashboard)
