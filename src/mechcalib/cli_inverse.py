"""``mechcalib inverse ...``: deep inverse calibration from the command line (seed 001, PartsNet).

* ``dataset MODEL --n 200 --out data.npz``: simulate a Latin hypercube of a built-in model and write its
  sequences in the layout of a run's dataset export;
* ``train DATA.npz --out net.pt``: train one of Table 4's networks on a dataset export (``mechcalib export DIR
  --dataset FILE.npz`` of a run that kept its responses, or ``inverse dataset``), Table 1's settings by default;
* ``identify net.pt MEASURED.csv``: the parameters of a measured sequence in one forward pass.

``train`` and ``identify`` need the extra ``mechcalib[deep]`` (torch), imported only when they run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

inverse_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Deep inverse calibration (seed 001): learn sequence -> parameters, identify from a measured sequence.",
)


@contextmanager
def _errors() -> Iterator[None]:
    """Package errors as one line on stderr with exit status 2 (usage, data, missing extra)."""
    from .errors import MechcalibError

    try:
        yield
    except MechcalibError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        typer.echo(f"error: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(1) from None


@inverse_app.command("dataset")
def dataset_cmd(
    model: str = typer.Argument(..., help="Built-in model (see `mechcalib models`)."),
    out: Path = typer.Option(..., "--out", "-o", help="Dataset file (.npz) to write."),
    n: int = typer.Option(200, "--n", min=2, help="Number of Latin-hypercube samples."),
    feature: list[str] = typer.Option([], "--feature", help="Channel or CHANNEL.x / CHANNEL.y (repeatable; default: "
                                      "the model's loop channels, else all)."),
    length: int = typer.Option(99, "--length", min=2, help="Points per resampled sequence (Table 1: 99)."),
    condition: list[str] = typer.Option([], "--condition", help="Model condition NAME=VALUE (repeatable)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the Latin hypercube."),
) -> None:
    """Simulate N Latin-hypercube parameter sets of MODEL's search space and write their sequences."""
    from .cli import _parse_assignments
    from .inverse.data import from_model
    from .models import MODELS, get_model

    if model not in MODELS:
        raise typer.BadParameter(f"unknown model {model!r}; valid names are {sorted(MODELS)}", param_hint="MODEL")
    m = get_model(model)
    conds = _parse_assignments(condition, "--condition", "condition", sorted(m.default_conditions), integers=True)
    with _errors():
        ds = from_model(m, n, features=feature or None, length=length, conditions=conds, seed=seed)
        path = ds.save_npz(out)
    typer.echo(f"wrote {path}: {len(ds)} sequences of {ds.length} x {len(ds.features)} ({', '.join(ds.features)}); "
               f"parameters {', '.join(ds.names)}; {ds.meta['failed']} failed simulation(s) dropped")


@inverse_app.command("train")
def train_cmd(
    data: Path = typer.Argument(..., help="Dataset export (.npz)."),
    out: Path = typer.Option(..., "--out", "-o", help="Network file to write (.pt)."),
    variant: str = typer.Option("PartsNet", "--variant", help="Network of Table 4: RNN, GRU, RNN+A, GRU+A, RNN+TransE, "
                                "GRU+TransE, RNN+STE, PartsNet."),
    feature: list[str] = typer.Option([], "--feature", help="Input channel or CHANNEL.x / CHANNEL.y (repeatable)."),
    target: list[str] = typer.Option([], "--target", help="Parameter to learn (repeatable; default: all)."),
    length: int = typer.Option(99, "--length", min=2, help="Points per resampled sequence (Table 1: 99)."),
    epochs: int = typer.Option(600, "--epochs", min=1, help="Training epochs (Table 1: 600)."),
    batch_size: int = typer.Option(40, "--batch-size", min=1, help="Minibatch size (Table 1: 40)."),
    lr: float = typer.Option(5.6e-4, "--lr", min=0.0, help="Adam learning rate (Table 1: 5.6e-4)."),
    hidden: int = typer.Option(72, "--hidden", min=1, help="Hidden size (Table 1: 72)."),
    heads: int = typer.Option(4, "--heads", min=1, help="Attention heads (Table 1: 4)."),
    layers: int = typer.Option(1, "--layers", min=1, help="Recurrent layers and attention blocks (Table 1: 1)."),
    sparsity: float = typer.Option(0.49, "--sparsity", min=0.0, max=0.999, help="Fraction of attention scores dropped "
                                   "per query (Table 1: 0.49)."),
    val_fraction: float = typer.Option(0.2, "--val-fraction", min=0.0, max=0.9, help="Share held out for validation."),
    patience: int = typer.Option(None, "--patience", min=1, help="Stop after this many epochs without validation gain."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of initialisation, split and minibatch order."),
    threads: int = typer.Option(None, "--threads", min=1, help="torch CPU threads while training."),
) -> None:
    """Train a network on a dataset export; print the validation metrics of Appendix A and save it."""
    with _errors():
        from .inverse.data import from_npz
        from .inverse.network import VARIANTS

        if variant not in VARIANTS:
            raise typer.BadParameter(f"unknown network {variant!r}; the variants are {list(VARIANTS)}",
                                     param_hint="--variant")
        from .inverse.train import InverseCalibrator, TrainConfig

        ds = from_npz(data, features=feature or None, length=length, targets=target or None)
        tc = TrainConfig.paper_001(epochs=epochs, batch_size=batch_size, lr=lr, val_fraction=val_fraction,
                                   patience=patience, restore_best=patience is not None, seed=seed, threads=threads)
        cal = InverseCalibrator(variant, tc, hidden=hidden, heads=heads, num_layers=layers, sparsity=sparsity).fit(ds)
        path = cal.save(out)
    h = cal.history
    typer.echo(f"trained {variant} on {len(ds)} sequences of {ds.length} x {len(ds.features)} "
               f"({', '.join(ds.features)}) -> {', '.join(ds.names)}: {cal.epochs_run} epochs, {cal.train_seconds:.1f} s")
    if "val_loss" in h:
        last = {k[4:]: v[-1] for k, v in h.items() if k.startswith("val_") and k != "val_loss"}
        typer.echo("validation (parameters scaled to [0, 1]): " + ", ".join(f"{k} {v:.4g}" for k, v in last.items()))
    typer.echo(f"wrote {path}")


@inverse_app.command("identify")
def identify_cmd(
    network: Path = typer.Argument(..., help="Network file written by `mechcalib inverse train`."),
    measured: Path = typer.Argument(..., help="Measured sequence: CSV with a header row."),
    columns: str = typer.Option(None, "--columns", help="Comma-separated columns in the network's feature order "
                                "(default: columns named like the features, else every column but --progress)."),
    progress: str = typer.Option(None, "--progress", help="Time or step column to resample on (default: row order)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Identify the parameters of a measured sequence in one forward pass."""
    with _errors():
        from .data import read_table
        from .inverse.data import read_sequence_csv
        from .inverse.train import InverseCalibrator

        cal = InverseCalibrator.load(network)
        if columns:
            cols = [c.strip() for c in columns.split(",") if c.strip()]
        else:
            table, _ = read_table(measured)
            cols = list(cal.features) if all(f in table for f in cal.features) else None
        seq, used = read_sequence_csv(measured, cols, length=cal.length, progress=progress)
        params = cal.identify(seq)
    if as_json:
        typer.echo(json.dumps({"network": cal.variant, "columns": used, "parameters": params}))
        return
    typer.echo(f"{cal.variant} on {measured} (columns {', '.join(used)} as {', '.join(cal.features)}):")
    for k, v in params.items():
        typer.echo(f"  {k} = {v:.6g}")
