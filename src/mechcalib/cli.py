"""Command line: a thin layer over the Python API."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self

import numpy as np
import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from .cli_inverse import inverse_app

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Calibrate mechanical simulation models against measured curves.")
console = Console()


@app.callback()
def main(ctx: typer.Context, quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only results and errors.")) -> None:
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format="%(message)s")
    ctx.obj = {"quiet": quiet}


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
    console.print(f"best loss {res.best_loss:.4g} after {res.n_evals} evaluations ({res.seconds:.1f} s)")
    t = Table()
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


def _parse_assignments(items: list[str], option: str, what: str, valid: list[str], *, integers: bool = False) -> dict[str, float]:
    """``["k=1.5", ...]`` -> ``{"k": 1.5}``; a bad item is a usage error (exit status 2)."""
    import math

    out: dict[str, float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name or not text:
            raise typer.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint=option)
        if name not in valid:
            raise typer.BadParameter(f"unknown {what} {name!r}; valid names are {valid}", param_hint=option)
        try:
            value: float = int(text) if integers and text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise typer.BadParameter(f"{name}: {text!r} is not a number", param_hint=option) from None
        if not math.isfinite(value):
            raise typer.BadParameter(f"{name}: {text!r} is not a finite number", param_hint=option)
        out[name] = value
    return out


def write_response_csv(response, path: Path, comment: str | None = None) -> list[tuple[Path, dict[str, tuple[str, ...]]]]:
    """Write simulated channels as CSV with a header row; returns ``[(file, channel mapping)]``.

    Layout: one column group per channel, ``<channel>.x [x unit]``, ``<channel>.y [y unit]`` and, when the
    curve has a progress coordinate, ``<channel>.t``. Values are written with ``repr`` (exact round trip).
    ``Experiment.from_csv(file, mapping)`` reads the curves back. Channels of unequal length cannot share
    rows: each then goes to its own file ``<stem>.<channel><suffix>`` in the same layout.
    """
    chans = dict(response)
    lengths = {len(c) for c in chans.values()}
    groups = [chans] if len(lengths) == 1 else [{k: c} for k, c in chans.items()]
    written = []
    for group in groups:
        target = path if len(groups) == 1 else path.with_name(f"{path.stem}.{next(iter(group))}{path.suffix or '.csv'}")
        header, columns, mapping = [], [], {}
        for ch, c in group.items():
            names = [f"{ch}.x", f"{ch}.y"] + ([f"{ch}.t"] if c.t is not None else [])
            header += [f"{ch}.x [{c.x_unit}]" if c.x_unit else f"{ch}.x", f"{ch}.y [{c.y_unit}]" if c.y_unit else f"{ch}.y"]
            columns += [c.x, c.y]
            if c.t is not None:
                header.append(f"{ch}.t")
                columns.append(c.t)
            mapping[ch] = tuple(names)
        lines = [f"# {comment}"] if comment else []
        lines.append(",".join(header))
        lines += [",".join(repr(float(v)) for v in row) for row in zip(*columns, strict=True)]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines) + "\n")
        written.append((target, mapping))
    return written


@app.command()
def simulate(
    model: str = typer.Argument(..., help="Built-in model (see `mechcalib models`)."),
    preset: str = typer.Option("default", "--preset", help="Parameter preset the --set values override."),
    set_: list[str] = typer.Option([], "--set", help="Parameter value NAME=VALUE (repeatable)."),
    condition: list[str] = typer.Option([], "--condition", help="Model condition NAME=VALUE (repeatable)."),
    out: Path = typer.Option(..., "--out", "-o", help="CSV file to write."),
) -> None:
    """Run one simulation of a built-in model and write its channels as CSV.

    Columns per channel: <channel>.x and <channel>.y, each with its unit in brackets, and <channel>.t when the
    channel has a progress coordinate. Experiment.from_csv(FILE, {channel: ("<channel>.x", "<channel>.y",
    "<channel>.t")}) reads it back.
    """
    from .errors import ConfigurationError
    from .models import MODELS, SimulationFailure, get_model

    if model not in MODELS:
        raise typer.BadParameter(f"unknown model {model!r}; valid names are {sorted(MODELS)}", param_hint="MODEL")
    m = get_model(model)
    if preset not in m.presets:
        raise typer.BadParameter(f"model {model!r} has no preset {preset!r}; presets are {sorted(m.presets)}",
                                 param_hint="--preset")
    values = _parse_assignments(set_, "--set", "parameter", list(m.space.names))
    conds = _parse_assignments(condition, "--condition", "condition", sorted(m.default_conditions), integers=True)
    try:
        theta = m.full_vector(values, preset)
        (resp,) = m.simulate(theta[None, :], conds)
    except ConfigurationError as exc:
        raise typer.BadParameter(str(exc), param_hint="--condition") from None
    if isinstance(resp, SimulationFailure):
        typer.echo(f"error: the simulation failed: {resp.message}", err=True)
        raise typer.Exit(1)
    params = ", ".join(f"{k}={v!r}" for k, v in zip(m.space.names, map(float, theta), strict=True))
    cond_text = ", ".join(f"{k}={v!r}" for k, v in m.conditions(conds).items())
    files = write_response_csv(resp, out, comment=f"mechcalib simulate {model}: preset {preset}; {params}; conditions {cond_text}")
    for path, mapping in files:
        typer.echo(f"wrote {path} (channels {', '.join(f'{k}={list(v)}' for k, v in mapping.items())})")


@app.command()
def check(config: Path = typer.Argument(..., help="Run configuration (TOML).")) -> None:
    """Validate a run configuration: build its problem, optimiser and budget, and summarise them."""
    from .config import load_config

    with _errors():
        cfg = load_config(config)
        problem = cfg.build_problem()
        opt = cfg.build_optimizer()
        term = cfg.build_termination()
    t = Table(title=f"{cfg.name}: model {problem.model.name}, {problem.space.dim} free parameter(s)", title_justify="left")
    for col in ("parameter", "unit", "lower", "upper", "scale", "fixed"):
        t.add_column(col)
    for p in problem.space:
        fixed = "" if p.fixed is None else f"{p.fixed:g}"
        t.add_row(p.name, p.unit, f"{p.lower:g}", f"{p.upper:g}", p.scale, fixed)
    console.print(t)
    for e in problem.experiments:
        chans = ", ".join(f"{k} ({len(c)} points)" for k, c in e.channels.items())
        console.print(f"experiment {e.name!r} (weight {e.weight:g}): {chans}", markup=False, highlight=False)
    console.print(f"objective {problem.objective.name}; optimizer {opt.name} {opt.settings()}", markup=False, highlight=False)
    rules = {k: v for k, v in vars(term).items() if v is not None and not (k == "min_delta" and v == 0)}
    console.print(f"budget {rules}; evaluator {cfg.evaluator.kind}; seed {cfg.seed}", markup=False, highlight=False)


# ------------------------------------------------------------------------------------------------------
# Runs kept in a folder (see mechcalib.runs)
# ------------------------------------------------------------------------------------------------------
def _quiet(ctx: typer.Context, quiet: bool) -> bool:
    return quiet or bool((ctx.obj or {}).get("quiet"))


@contextmanager
def _errors(out: Path | None = None) -> Iterator[None]:
    """Package errors as one message on stderr: usage and configuration errors exit with status 2, a run
    that breaks while running with 1, an interrupted one with 130."""
    from .config import ConfigFileError
    from .errors import MechcalibError
    from .execution import EvaluatorError

    try:
        yield
    except ConfigFileError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    except MechcalibError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except (EvaluatorError, OSError) as exc:
        typer.echo(f"error: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        hint = f"; continue with `mechcalib resume {out}`" if out is not None else ""
        typer.echo(f"interrupted{hint}", err=True)
        raise typer.Exit(130) from None


class _Bar:
    """A rich progress bar on stderr fed by :data:`mechcalib.runs.ProgressHook` calls; nothing when quiet.
    Quiet also holds the package's log messages below warnings for the command's duration."""

    def __init__(self, label: str, quiet: bool) -> None:
        self.label = label
        self.quiet = quiet
        self.progress: Progress | None = None
        self.task = None
        self._level: int | None = None

    def __enter__(self) -> Self:
        if self.quiet:
            logger = logging.getLogger("mechcalib")
            self._level = logger.level
            logger.setLevel(logging.WARNING)
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()
        if self._level is not None:
            logging.getLogger("mechcalib").setLevel(self._level)

    def __call__(self, done: int, total: int | None, best: float) -> None:
        if self.quiet:
            return
        text = f"{best:.6g}" if math.isfinite(best) else "-"
        if self.progress is None:  # started on the first report, so that an early error prints no bar
            self.progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("evaluations"),
                TextColumn("best {task.fields[best]}"), TimeElapsedColumn(), console=Console(stderr=True),
            )
            self.progress.start()
            self.task = self.progress.add_task(self.label, total=total, completed=done, best=text)
        else:
            self.progress.update(self.task, completed=done, best=text)


def _print_result(rec, quiet: bool) -> None:
    s = rec.summary
    loss = "-" if s["best_loss"] is None else f"{s['best_loss']:.6g}"
    line = (f"run {s['run_name']!r} {s['status']} ({s['stop_reason']}): best loss {loss} after {s['n_evaluations']} "
            f"evaluations ({s['n_failed']} failed; {s['n_simulated']} simulated now)")
    if quiet:
        typer.echo(f"{line}; {rec.result_path}")
        return
    console.print(line, markup=False, highlight=False)
    t = Table()
    t.add_column("parameter")
    t.add_column("best")
    for k, v in s["best"].items():
        t.add_row(k, f"{v:.6g}")
    if s["best"]:
        console.print(t)
    console.print(f"wrote {rec.result_path} and {rec.out_dir / 'store.sqlite'}", markup=False, highlight=False)
    for p in rec.plots:
        console.print(f"wrote {p}", markup=False, highlight=False)


@app.command()
def run(
    ctx: typer.Context,
    config: Path = typer.Argument(..., help="Run configuration (TOML)."),
    out: Path = typer.Option(None, "--out", "-o", help="Run folder (created; default <output.directory>/<name>)."),
    workers: int = typer.Option(None, "--workers", min=1, help="Evaluate in a local process pool of N workers."),
    scheduler: str = typer.Option(None, "--scheduler", help="Evaluate on the dask cluster of this scheduler address."),
    budget: int = typer.Option(None, "--budget", min=1, help="Maximum number of evaluations (overrides budget.max_evals)."),
    seed: int = typer.Option(None, "--seed", min=0, help="Optimiser seed (overrides seed)."),
    plots: bool = typer.Option(None, "--plots/--no-plots", help="Write the report plots at the end (default: output.plots)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar; print only the result line."),
) -> None:
    """Run a calibration; store every evaluation in OUT/store.sqlite and the result in OUT/result.json."""
    from .runs import run_config

    if workers is not None and scheduler is not None:
        typer.echo("error: give either --workers (a local process pool) or --scheduler (a dask cluster), not both",
                   err=True)
        raise typer.Exit(2)
    q = _quiet(ctx, quiet)
    with _errors(out), _Bar("run", q) as bar:
        rec = run_config(config, out, workers=workers, scheduler=scheduler, budget=budget, seed=seed, progress=bar,
                         plots=plots)
    _print_result(rec, q)


@app.command()
def resume(
    ctx: typer.Context,
    directory: Path = typer.Argument(..., metavar="DIR", help="Run folder written by `mechcalib run`, or the run "
                                     "store (SQLite file) of `mechcalib inverse dataset --store`."),
    budget: int = typer.Option(None, "--budget", min=1, help="New maximum number of evaluations (the total)."),
    workers: int = typer.Option(None, "--workers", min=1, help="Evaluate in a local process pool of N workers."),
    scheduler: str = typer.Option(None, "--scheduler", help="Evaluate on the dask cluster of this scheduler address."),
    config: Path = typer.Option(None, "--config", help="Configuration file to use instead of the stored one."),
    run_name: str = typer.Option(None, "--run", help="Run name in the store (default: the folder's run)."),
    plots: bool = typer.Option(None, "--plots/--no-plots", help="Write the report plots at the end (default: output.plots)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar; print only the result line."),
    out: Path = typer.Option(None, "--out", "-o", help="For a dataset run: the dataset file (.npz) to write."),
    timeout: float = typer.Option(None, "--timeout", min=0.0, help="For a dataset run: seconds per simulation."),
) -> None:
    """Continue a run (interrupted, killed or finished) without simulating a stored evaluation again, and
    rewrite DIR/result.json. --budget extends it. Given a store file instead, continue its dataset run and
    write the dataset to --out."""
    from .runs import resume_run

    if directory.is_file():
        return _resume_dataset(directory, run_name, out, workers, budget, timeout, _quiet(ctx, quiet))
    if out is not None or timeout is not None:
        typer.echo("error: --out and --timeout apply to a dataset run (DIR a store file)", err=True)
        raise typer.Exit(2)

    if workers is not None and scheduler is not None:
        typer.echo("error: give either --workers (a local process pool) or --scheduler (a dask cluster), not both",
                   err=True)
        raise typer.Exit(2)
    q = _quiet(ctx, quiet)
    with _errors(directory), _Bar("resume", q) as bar:
        rec = resume_run(directory, budget=budget, workers=workers, scheduler=scheduler, run=run_name, config=config,
                         progress=bar, plots=plots)
    _print_result(rec, q)


def _resume_dataset(store: Path, run: str | None, out: Path | None, workers: int | None, budget: int | None,
                    timeout: float | None, quiet: bool) -> None:
    from .cli_inverse import dataset_progress, echo_generation
    from .inverse.data import resume_dataset

    if out is None:
        typer.echo("error: a dataset run needs --out FILE.npz for the dataset", err=True)
        raise typer.Exit(2)

    with _errors():
        g = resume_dataset(store, run, workers=workers, budget=budget, timeout=timeout,
                           on_evaluation=dataset_progress(quiet))
        echo_generation(g, store)
        if g.dataset is None:
            typer.echo("no successful simulation yet: no dataset written")
            return
        path = g.dataset.save_npz(out)
    state = "complete" if g.complete else f"partial ({g.done} of {g.n})"
    typer.echo(f"wrote {path}: {len(g.dataset)} sequences; {state}")


@app.command()
def show(
    directory: Path = typer.Argument(..., metavar="DIR", help="Run folder."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (for scripts)."),
    run_name: str = typer.Option(None, "--run", help="Run name in the store (default: the folder's run)."),
) -> None:
    """Status, evaluations done, failures and best parameters so far (also while the run is going on)."""
    from .runs import run_summary

    with _errors():
        s = run_summary(directory, run=run_name)
    if as_json:
        typer.echo(json.dumps(s, allow_nan=False))
        return
    budget = s["budget"].get("max_evals") if s["budget"] else None
    done = f"{s['n_evaluations']}" + (f" / {budget}" if budget else "")
    reason = f" ({s['stop_reason']})" if s["stop_reason"] else ""
    lines = [
        f"run {s['run_name']!r}: {s['status']}{reason}; optimizer {s['optimizer']}, seed {s['seed']}",
        f"evaluations: {done}; failed: {s['n_failed']}"
        + (f" ({', '.join(f'{k} {v}' for k, v in s['failures'].items())})" if s["failures"] else ""),
        f"best loss: {'-' if s['best_loss'] is None else format(s['best_loss'], '.6g')}"
        + (f" (evaluation {s['best_index']})" if s["best_index"] is not None else ""),
    ]
    if s["error"]:
        lines.append(f"error: {s['error']}")
    for ln in lines:
        console.print(ln, markup=False, highlight=False)
    if s["best"]:
        t = Table()
        t.add_column("parameter")
        t.add_column("best")
        for k, v in s["best"].items():
            t.add_row(k, f"{v:.6g}")
        console.print(t)
    for f in s["recent_failures"]:
        console.print(f"failed evaluation {f['idx']} ({f['status']}): {f['error']}", markup=False, highlight=False)


@app.command()
def export(
    directory: Path = typer.Argument(..., metavar="DIR", help="Run folder."),
    fmt: str = typer.Option("csv", "--format", help="Table format: csv or parquet (needs pandas and pyarrow)."),
    out: Path = typer.Option(None, "--out", "-o", help="Table file (default DIR/evaluations.csv or .parquet)."),
    dataset: Path = typer.Option(None, "--dataset", help="Also write parameters, losses and responses as .npz."),
    include_failed: bool = typer.Option(False, "--include-failed", help="Keep failed evaluations in the dataset."),
    run_name: str = typer.Option(None, "--run", help="Run name in the store (default: the folder's run)."),
) -> None:
    """Write a run's evaluations as a table, and a dataset for surrogate training."""
    from .runs import export_run

    if fmt not in ("csv", "parquet"):
        raise typer.BadParameter(f"expected csv or parquet, got {fmt!r}", param_hint="--format")
    with _errors():
        res = export_run(directory, path=out, fmt=fmt, dataset=dataset, include_failed=include_failed, run=run_name)
    typer.echo(f"wrote {res['table']} ({res['rows']} evaluations)")
    if res["dataset"] is not None:
        typer.echo(f"wrote {res['dataset']} ({res['dataset_rows']} parameter sets, {len(res['responses'])} response arrays)")
        if not res["responses"]:
            typer.echo("note: the run kept no responses; set output.keep_responses = true in the configuration to "
                       "include them", err=True)


@app.command()
def report(
    directory: Path = typer.Argument(..., metavar="DIR", help="Run folder."),
    run_name: str = typer.Option(None, "--run", help="Run name in the store (default: the folder's run)."),
) -> None:
    """Write DIR/convergence.png and DIR/fit_<experiment>.png (best fit against each experiment)."""
    from .runs import write_report

    with _errors():
        paths = write_report(directory, run=run_name)
    for p in paths:
        typer.echo(f"wrote {p}")


def _file_bytes(path: Path) -> int:
    """Size of an SQLite file with its write-ahead log."""
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.is_file())


@app.command()
def compact(
    store: Path = typer.Argument(..., metavar="STORE", help="Run store file (or a run folder holding store.sqlite)."),
    run_names: list[str] = typer.Option([], "--run", help="Run to compact (repeatable); it must be finished or failed."),
    all_finished: bool = typer.Option(False, "--all-finished", help="Compact every run whose status is finished."),
    keep_checkpoints: int = typer.Option(1, "--keep-checkpoints", min=0, help="Latest optimiser checkpoints to keep per run."),
    vacuum: bool = typer.Option(False, "--vacuum", help="Rebuild the file afterwards so that it shrinks."),
) -> None:
    """Shrink finished runs to their record, failures and improving evaluations (counts, best, best-so-far
    trace and timings stay exact; a compacted run can no longer be resumed). Without --vacuum the freed
    space is reused by later runs but the file keeps its size."""
    from .errors import ConfigurationError
    from .runs import STORE_FILE
    from .storage import RunStore

    path = store / STORE_FILE if store.is_dir() else store
    if not path.is_file():
        typer.echo(f"error: no run store at {str(path)!r}; give a store file or a run folder", err=True)
        raise typer.Exit(2)
    if not run_names and not all_finished:
        raise typer.BadParameter("give --run NAME (repeatable) or --all-finished", param_hint="--run")
    with _errors():
        with RunStore(path) as st:
            names = list(dict.fromkeys(run_names))
            for name in names:  # an unknown or unfinished run fails before anything is dropped
                status = st.run(name).status
                if status not in ("finished", "failed"):
                    raise ConfigurationError(
                        f"run {name!r} in {path} is {status}; only a finished or failed run can be compacted: "
                        "finish or resume it first"
                    )
            if all_finished:
                names += [r.name for r in st.runs() if r.status == "finished" and r.name not in names]
            if not names:
                raise ConfigurationError(f"{path} holds no finished run to compact")
            before = _file_bytes(path)
            t = Table()
            for col in ("run", "status", "evaluations", "kept", "dropped", "checkpoints dropped"):
                t.add_column(col)
            for name in names:
                s = st.compact_run(name, keep_checkpoints=keep_checkpoints)
                t.add_row(s.run, st.status(name), str(s.n_evals), str(s.n_kept), str(s.n_dropped),
                          str(s.checkpoints_dropped))
            if vacuum:
                st.vacuum()
        after = _file_bytes(path)
    console.print(t)
    note = "" if vacuum else " (run with --vacuum to shrink the file)"
    console.print(f"{path}: {before / 2**20:.2f} MiB before, {after / 2**20:.2f} MiB after{note}", markup=False,
                  highlight=False)


app.add_typer(inverse_app, name="inverse")

if __name__ == "__main__":  # pragma: no cover
    app()
