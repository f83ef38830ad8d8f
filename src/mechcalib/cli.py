"""Command line: a thin layer over the Python API."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Calibrate mechanical simulation models against measured curves.")
console = Console()


@app.callback()
def main(quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only results and errors.")) -> None:
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format="%(message)s")


@app.command()
def models() -> None:
    """List the built-in models with their parameters, default bounds and presets."""
    from .models import MODELS, get_model

    for name in MODELS:
        m = get_model(name)
        t = Table(title=f"{name}: {m.description}", title_justify="left")
        for col in ("parameter", "unit", "lower", "upper", "scale", *m.presets):
            t.add_column(col)
        for p in m.space:
            t.add_row(p.name, p.unit, f"{p.lower:g}", f"{p.upper:g}", p.scale, *(f"{m.presets[k].get(p.name, float('nan')):g}" for k in m.presets))
        console.print(t)
        console.print("channels: " + ", ".join(f"{c.name} ({c.y_name} vs {c.x_name})" for c in m.channels))


@app.command()
def optimizers() -> None:
    """List the optimisers with their default settings and presets."""
    from .optimizers import OPTIMIZERS, get_optimizer, presets_of

    t = Table()
    for col in ("name", "class", "presets", "settings"):
        t.add_column(col)
    for name in OPTIMIZERS:
        try:
            cls = get_optimizer(name)
        except (ImportError, AttributeError):
            continue
        s = {k: v for k, v in cls().settings().items() if k != "seed"}
        t.add_row(name, cls.__name__, ", ".join(presets_of(cls)), ", ".join(f"{k}={v}" for k, v in s.items()))
    console.print(t)


@app.command()
def demo(
    optimizer: str = typer.Option("tbpso", help="Optimiser registry name (see `mechcalib optimizers`)."),
    evals: int = typer.Option(400, help="Evaluation budget."),
    noise: float = typer.Option(0.02, help="Measurement noise level of seed 002 eq. 36 added to the synthetic data."),
    seed: int = typer.Option(0, help="Seed of the noise and of the optimiser."),
    out: Path = typer.Option(None, help="Folder for a plot of the fit (PNG)."),
) -> None:
    """Calibrate the built-in Duffing oscillator against noisy synthetic data with known parameters."""
    from . import OverlapRSS, Problem, calibrate, experiment_from_model
    from .models import get_model
    from .optimizers import make_optimizer

    model = get_model("duffing")
    truth = model.preset("default")
    exp = experiment_from_model(model, truth, noise=noise, seed=seed, name="synthetic Duffing")
    problem = Problem(model, exp, OverlapRSS())
    opt = make_optimizer(optimizer, seed=seed)
    console.print(f"calibrating [bold]{model.name}[/] {list(model.space.free_names)} with [bold]{opt.name}[/], {evals} evaluations")
    res = calibrate(problem, opt, max_evals=evals)
    t = Table(title=f"best loss {res.best_loss:.4g} after {res.n_evals} evaluations ({res.seconds:.1f} s)")
    for col in ("parameter", "true", "identified", "error %"):
        t.add_column(col)
    for k, v in res.best_params.items():
        t.add_row(k, f"{truth[k]:.4g}", f"{v:.4g}", f"{100 * abs(v - truth[k]) / abs(truth[k]):.2f}")
    console.print(t)
    if out is not None:
        from .reporting import plot_fit

        out.mkdir(parents=True, exist_ok=True)
        path = plot_fit(problem, np.asarray(res.best_x), out / "demo_fit.png")
        console.print(f"plot written to {path}")


if __name__ == "__main__":  # pragma: no cover
    app()
