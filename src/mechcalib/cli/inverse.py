"""``mechcalib inverse ...``: deep inverse calibration from the command line (Hu et al. (2024), PartsNet).

* ``dataset MODEL --n 200 --out data.npz [--store S.sqlite --workers 2]``: simulate a Latin hypercube of a
  model (registered, a plug-in's, or a ``package.module:Class`` target) and write its sequences in the layout of a run's dataset export; with ``--store`` through the
  run engine (durable, parallel, resumed by the same command);
* ``train DATA.npz --out net.pt``: train one of Table 4's networks on a dataset export (``mechcalib export DIR
  --dataset FILE.npz`` of a run that kept its responses, or ``inverse dataset``), Table 1's settings by default;
* ``identify net.pt MEASURED.csv``: the parameters of a measured sequence in one forward pass.

``train`` and ``identify`` need the extra ``mechcalib[deep]`` (torch), imported only when they run.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from .common import (
    EpochBar,
    dataset_progress,
    echo_generation,
    errors,
    finish_generation,
    parse_assignments,
)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Deep inverse calibration (Hu et al. (2024)): learn sequence -> parameters, identify from a measured sequence.",
)


@app.command("dataset")
def dataset_cmd(
    model: str = typer.Argument(
        ...,
        help='Model: a registered name (see `mechcalib models`; plug-ins included) or a "package.module:Class" target.',
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Dataset file (.npz) to write."),
    n: int = typer.Option(200, "--n", min=2, help="Number of Latin-hypercube samples."),
    feature: list[str] = typer.Option(
        [],
        "--feature",
        help="Channel or CHANNEL.x / CHANNEL.y (repeatable; default: the model's loop channels, else all).",
    ),
    length: int = typer.Option(99, "--length", min=2, help="Points per resampled sequence (Table 1: 99)."),
    condition: list[str] = typer.Option([], "--condition", help="Model condition NAME=VALUE (repeatable)."),
    option: list[str] = typer.Option(
        [],
        "--option",
        help="Model constructor option NAME=VALUE (repeatable), for example specimen=paper for eepa_triaxial.",
    ),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the Latin hypercube."),
    store: Path = typer.Option(
        None,
        "--store",
        help="Run store (SQLite file): simulate through the run engine, "
        "every simulation committed as it ends; the same command resumes a killed generation.",
    ),
    workers: int = typer.Option(
        None,
        "--workers",
        min=1,
        help="With --store: process-pool workers (default: one set at a time in this process).",
    ),
    run_name: str = typer.Option(
        None, "--run-name", help="With --store: the run's name (default dataset-MODEL-nN-seedS)."
    ),
    budget: int = typer.Option(
        None,
        "--budget",
        min=1,
        help="With --store: stop once this many sets are stored (continue later with a larger or no budget).",
    ),
    timeout: float = typer.Option(
        None, "--timeout", min=0.0, help="With --store: seconds per simulation before it is recorded as a timeout."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress line per simulation."),
) -> None:
    """Simulate N Latin-hypercube parameter sets of MODEL's search space and write their sequences.

    Without --store the sets are simulated in memory in one batch. With --store they run through the run engine
    (a sampling run of the `lhs` optimiser whose loss is 0): stored as they finish, in parallel with --workers,
    failed sets recorded and left out, and resumed by running the same command again.
    """
    from ..errors import ConfigurationError
    from ..models import MODELS, get_model

    try:  # a registered name, a plug-in's, or a "package.module:Class" target
        MODELS.resolve(model)
    except ConfigurationError as exc:
        raise typer.BadParameter(str(exc), param_hint="MODEL") from None
    if store is None:
        extra = [
            k
            for k, v in (("--workers", workers), ("--run-name", run_name), ("--budget", budget), ("--timeout", timeout))
            if v is not None
        ]
        if extra:
            raise typer.BadParameter(
                f"{', '.join(extra)} need(s) --store FILE.sqlite (the run engine)", param_hint="--store"
            )
    opts = parse_assignments(option, "--option", "auto")
    with errors(None if store is None else f"{store} --out {out}"):
        try:
            m = get_model(model, **opts)
        except TypeError as exc:
            raise typer.BadParameter(
                f"model {model!r} does not take these options: {exc}", param_hint="--option"
            ) from None
        conds = parse_assignments(
            condition, "--condition", dict.fromkeys(sorted(m.default_conditions), "number"), what="condition"
        )
        if store is None:
            from ..inverse.data import from_model

            ds = from_model(m, n, features=feature or None, length=length, conditions=conds, seed=seed)
            path = ds.save_npz(out)
            typer.echo(
                f"wrote {path}: {len(ds)} sequences of {ds.length} x {len(ds.features)} "
                f"({', '.join(ds.features)}); parameters {', '.join(ds.names)}; {ds.meta['failed']} failed "
                "simulation(s) dropped"
            )
            return
        from ..inverse.data import generate_dataset

        g = generate_dataset(
            m,
            n,
            store,
            run_name=run_name,
            seed=seed,
            workers=workers,
            budget=budget,
            timeout=timeout,
            features=feature or None,
            length=length,
            conditions=conds,
            on_evaluation=dataset_progress(quiet, n),
            model_options=opts,
        )
        echo_generation(g, store)
        finish_generation(g, out)


@app.command("train")
def train_cmd(
    data: Path = typer.Argument(..., help="Dataset export (.npz)."),
    out: Path = typer.Option(..., "--out", "-o", help="Network file to write (.pt)."),
    variant: str = typer.Option(
        "PartsNet",
        "--variant",
        help="Network of Table 4: RNN, GRU, RNN+A, GRU+A, RNN+TransE, GRU+TransE, RNN+STE, PartsNet.",
    ),
    feature: list[str] = typer.Option([], "--feature", help="Input channel or CHANNEL.x / CHANNEL.y (repeatable)."),
    target: list[str] = typer.Option([], "--target", help="Parameter to learn (repeatable; default: all)."),
    length: int = typer.Option(99, "--length", min=2, help="Points per resampled sequence (Table 1: 99)."),
    epochs: int = typer.Option(600, "--epochs", min=1, help="Training epochs (Table 1: 600)."),
    batch_size: int = typer.Option(40, "--batch-size", min=1, help="Minibatch size (Table 1: 40)."),
    lr: float = typer.Option(5.6e-4, "--lr", min=0.0, help="Adam learning rate (Table 1: 5.6e-4)."),
    hidden: int = typer.Option(72, "--hidden", min=1, help="Hidden size (Table 1: 72)."),
    heads: int = typer.Option(4, "--heads", min=1, help="Attention heads (Table 1: 4)."),
    layers: int = typer.Option(1, "--layers", min=1, help="Recurrent layers and attention blocks (Table 1: 1)."),
    sparsity: float = typer.Option(
        0.49, "--sparsity", min=0.0, max=0.999, help="Fraction of attention scores dropped per query (Table 1: 0.49)."
    ),
    val_fraction: float = typer.Option(0.2, "--val-fraction", min=0.0, max=0.9, help="Share held out for validation."),
    patience: int = typer.Option(
        None, "--patience", min=1, help="Stop after this many epochs without validation gain."
    ),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of initialisation, split and minibatch order."),
    threads: int = typer.Option(None, "--threads", min=1, help="torch CPU threads while training."),
    x_scaling: str = typer.Option(
        "feature",
        "--x-scaling",
        help="Input standardisation: 'feature' (over samples "
        "and time) or 'step' (per time step over samples; far better when the curves "
        "share one shape, e.g. the EEPA triaxial dataset).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Train a network on a dataset export; print the validation metrics of Appendix A and save it.

    A progress bar on stderr shows the epoch and the last epoch's training and validation losses (and R²)."""
    with errors():
        from ..inverse.data import from_npz
        from ..inverse.network import VARIANTS

        if variant not in VARIANTS:
            raise typer.BadParameter(
                f"unknown network {variant!r}; the variants are {list(VARIANTS)}", param_hint="--variant"
            )
        from ..inverse.train import InverseCalibrator, TrainConfig

        ds = from_npz(data, features=feature or None, length=length, targets=target or None)
        tc = TrainConfig.hu2024(
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            val_fraction=val_fraction,
            patience=patience,
            restore_best=patience is not None,
            seed=seed,
            threads=threads,
            x_scaling=x_scaling,
        )
        cal = InverseCalibrator(variant, tc, hidden=hidden, heads=heads, num_layers=layers, sparsity=sparsity)
        with EpochBar(quiet) as bar:
            cal.fit(ds, on_epoch=bar)
        path = cal.save(out)
    h = cal.history
    typer.echo(
        f"trained {variant} on {len(ds)} sequences of {ds.length} x {len(ds.features)} "
        f"({', '.join(ds.features)}) -> {', '.join(ds.names)}: {cal.epochs_run} epochs, {cal.train_seconds:.1f} s"
    )
    if "val_loss" in h:
        last = {k[4:]: v[-1] for k, v in h.items() if k.startswith("val_") and k != "val_loss"}
        typer.echo("validation (parameters scaled to [0, 1]): " + ", ".join(f"{k} {v:.4g}" for k, v in last.items()))
    typer.echo(f"wrote {path}")


@app.command("identify")
def identify_cmd(
    network: Path = typer.Argument(..., help="Network file written by `mechcalib inverse train`."),
    measured: Path = typer.Argument(..., help="Measured sequence: CSV with a header row."),
    columns: str = typer.Option(
        None,
        "--columns",
        help="Comma-separated columns in the network's feature order "
        "(default: columns named like the features, else every column but --progress).",
    ),
    progress: str = typer.Option(None, "--progress", help="Time or step column to resample on (default: row order)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    min_r2: float = typer.Option(
        0.9, "--min-r2", help="Warn when the network's stored validation R² is below this (scaled parameters)."
    ),
) -> None:
    """Identify the parameters of a measured sequence in one forward pass.

    Warns (on stderr, and under "warnings" with --json) when the network's validation R², stored when it was
    trained, is below --min-r2, or when it was trained without a validation set."""
    import warnings

    with errors():
        from ..core.data import read_table
        from ..inverse.data import read_sequence_csv
        from ..inverse.train import InverseAccuracyWarning, InverseCalibrator

        cal = InverseCalibrator.load(network)
        cols: list[str] | None
        if columns:
            cols = [c.strip() for c in columns.split(",") if c.strip()]
        else:
            table, _ = read_table(measured)
            cols = list(cal.features) if all(f in table for f in cal.features) else None
        seq, used = read_sequence_csv(measured, cols, length=cal.length, progress=progress)
        cal.min_r2 = min_r2
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", InverseAccuracyWarning)
            params = cal.identify(seq).parameters
    notes = [str(w.message) for w in caught if issubclass(w.category, InverseAccuracyWarning)]
    for note in notes:
        typer.echo(f"warning: {note}", err=True)
    if as_json:
        typer.echo(json.dumps({"network": cal.variant, "columns": used, "parameters": params, "warnings": notes}))
        return
    typer.echo(f"{cal.variant} on {measured} (columns {', '.join(used)} as {', '.join(cal.features)}):")
    for k, v in params.items():
        typer.echo(f"  {k} = {v:.6g}")
