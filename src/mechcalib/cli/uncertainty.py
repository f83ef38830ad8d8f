"""The ``uncertainty`` command: local intervals and, with ``--posterior``, an emcee posterior of a stored run
(see :mod:`mechcalib.uncertainty`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from .common import console, echo_plain, errors, is_quiet


class _StepBar:
    """A rich progress bar over the chain's steps on stderr; nothing when quiet."""

    def __init__(self, quiet: bool) -> None:
        self.quiet, self.progress, self.task = quiet, None, None

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        if self.progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("posterior"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("steps"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
            )
            self.progress.start()
            self.task = self.progress.add_task("chain", total=total)
        self.progress.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _noise(values: list[str] | None) -> Any:
    """``--noise 0.01`` (every channel) or ``--noise y=0.01 --noise z=0.2``."""
    if not values:
        return None
    if len(values) == 1 and "=" not in values[0]:
        return _num(values[0])
    out = {}
    for v in values:
        name, sep, val = v.partition("=")
        if not sep:
            raise typer.BadParameter(f"give one number or CHANNEL=SIGMA pairs, got {v!r}", param_hint="--noise")
        out[name.strip()] = _num(val)
    return out


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise typer.BadParameter(f"expected a number, got {text!r}", param_hint="--noise") from None


def uncertainty(
    ctx: typer.Context,
    directory: Path = typer.Argument(..., metavar="RUN", help="Run folder (or run store file)."),
    posterior: bool = typer.Option(False, "--posterior", help="Also sample the posterior with emcee."),
    walkers: int = typer.Option(None, "--walkers", min=4, help="Walkers of the ensemble (default max(16, 4 d))."),
    steps: int = typer.Option(None, "--steps", min=1, help="Chain length in steps (default 2000)."),
    noise: list[str] = typer.Option(
        None, "--noise", help="Noise standard deviation: one number, or CHANNEL=SIGMA (repeat). Default: estimated."
    ),
    seed: int = typer.Option(None, "--seed", min=0, help="Seed of the chain (default: drawn and recorded)."),
    force: bool = typer.Option(False, "--force", help="Go on when the polish did not converge or J is singular."),
    profile: list[str] = typer.Option(
        None, "--profile", help="Profile likelihood of this parameter (repeat once for a second)."
    ),
    run_name: str = typer.Option(None, "--run", help="Run name in the store (default: the folder's run)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (for scripts)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Parameter uncertainty of a run: a least-squares polish of its best point, then standard errors, 95 %
    intervals, correlations and the least identifiable direction (Laplace); with --posterior an emcee chain
    through the run store (resumable: run the command again). Writes RUN/uncertainty.json, and with a
    posterior RUN/samples.csv and RUN/samples.npz; `mechcalib report RUN` draws the corner plot and bands."""
    import warnings

    from ..uncertainty.folder import folder_uncertainty

    bar = _StepBar(is_quiet(ctx, quiet) or as_json)
    with errors(directory), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reported below from the result
        try:
            res, written = folder_uncertainty(
                directory,
                run=run_name,
                progress=bar,
                posterior=posterior,
                walkers=walkers,
                steps=steps,
                noise=_noise(noise),
                seed=seed,
                force=force,
                profile=tuple(profile or ()),
            )
        finally:
            bar.close()
    if as_json:
        data = res.to_json()
        typer.echo(json.dumps({k: data[k] for k in ("run_name", "method", "converged", "parameters", "warnings")}))
        return
    from rich.table import Table

    t = Table(title=f"run {res.run_name!r}: {'posterior (emcee)' if res.posterior else 'Laplace'} 95 % intervals")
    for col in ("parameter", "best", "lower", "upper", "std", "note"):
        t.add_column(col)
    for n, p in res.parameters().items():
        note = (
            "prior box"
            if p.get("posterior", {}).get("prior_box")
            else ("unidentifiable" if p["unidentifiable"] else "")
        )
        std = "inf" if p["std"] is None else f"{p['std']:.4g}"
        t.add_row(n, f"{p['best']:.6g}", f"{p['lower']:.6g}", f"{p['upper']:.6g}", std, note)
    console.print(t)
    loc = res.local
    echo_plain(f"least identifiable: {loc.weakest}")
    echo_plain(f"condition number (relative coordinates): {loc.condition:.3g}")
    if res.posterior is not None:
        p = res.posterior
        echo_plain(
            f"chain: {p.walkers} walkers x {p.steps} steps ({p.n_evals} evaluations, {p.n_simulated} simulated now); "
            f"tau max {max(p.tau):.1f} steps, chain = {p.n_taus:.1f} tau; acceptance {p.acceptance:.2f}; "
            f"ESS min {min(p.ess):.0f}"
        )
    for n, pr in res.profiles.items():
        lo = "open" if pr.lower is None else f"{pr.lower:.6g}"
        hi = "open" if pr.upper is None else f"{pr.upper:.6g}"
        echo_plain(f"profile likelihood of {n}: 95 % interval [{lo}, {hi}] ({len(pr.values)} re-fits)")
    for w in res.warnings:
        typer.echo(f"warning: {w}", err=True)
    for f in written:
        echo_plain(f"wrote {f}")


def register(app: typer.Typer) -> None:
    """Add this group's commands to the top-level application."""
    app.command()(uncertainty)
