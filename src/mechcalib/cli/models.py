"""Commands about the built-in models and optimisers: ``models``, ``optimizers``, ``demo``, ``simulate``,
``warmup``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from .common import EXIT_FAILED, ProgressBar, console, echo_plain, errors, fail, is_quiet, parse_assignments


def models(
    name: str = typer.Argument(None, help="A model to show in full (parameters, conditions, options, channels)."),
) -> None:
    """List the built-in models, or show one (NAME) in full: every parameter, condition and option it takes,
    with units and defaults."""
    from rich.table import Table

    from ..errors import ConfigurationError
    from ..models import MODELS, get_model

    if name is not None:
        try:
            MODELS.resolve(name)
        except ConfigurationError as exc:
            raise typer.BadParameter(str(exc), param_hint="NAME") from None
        with errors():
            show_model(get_model(name))
        return
    t = Table(title="models (mechcalib models NAME shows one in full)", title_justify="left")
    t.add_column("model", no_wrap=True)
    t.add_column("parameters (default bounds in NAME)")
    t.add_column("description")
    for key in MODELS:
        m = get_model(key)
        t.add_row(key, ", ".join(m.space.names), m.description)
    console.print(t)


def show_model(m: Any) -> None:
    """Print one model in full: parameters with bounds, units and presets; conditions with defaults; the
    constructor's options with defaults; channels with units."""
    import inspect

    from rich.markup import escape
    from rich.table import Table

    def table(title: str, *cols: str) -> Table:
        t = Table(title=escape(title), title_justify="left")
        for c in cols:
            t.add_column(escape(c), overflow="fold")
        return t

    def row(t: Table, *cells: str) -> None:
        t.add_row(*(escape(str(c)) for c in cells))

    console.print(f"[bold]{escape(m.name)}[/]: {escape(m.description)}")
    t = table("parameters", "name", "unit", "lower", "upper", "scale", "fixed", "description")
    for p in m.space:
        fixed = "" if p.fixed is None else f"{p.fixed:g}"
        row(t, p.name, p.unit, f"{p.lower:g}", f"{p.upper:g}", p.scale, fixed, p.description)
    console.print(t)
    for key, values in m.presets.items():
        console.print(escape(f"preset {key}: " + ", ".join(f"{k}={v:g}" for k, v in values.items())))
    t = table("conditions (per experiment: [experiments.conditions])", "condition", "default", "meaning [unit]")
    help_ = m.condition_help
    for k, v in m.default_conditions.items():
        row(t, k, repr(v), help_.get(k, ""))
    console.print(t)
    t = table("options (constructor keywords: [model.options])", "option", "default")
    for p in inspect.signature(type(m).__init__).parameters.values():
        if p.name == "self" or p.kind is p.VAR_POSITIONAL:
            continue
        if p.kind is p.VAR_KEYWORD:
            row(t, f"**{p.name}", "see below")
        else:
            row(t, p.name, "(required)" if p.default is p.empty else repr(p.default))
    console.print(t)
    for cls in type(m).__mro__:  # the first docstring that explains the options
        doc = inspect.getdoc(cls) if "__doc__" in vars(cls) else None
        if doc and "Args:" in doc:
            console.print(escape(doc[doc.index("Args:") :]), highlight=False)
            break
    t = table("channels", "channel", "y [unit]", "against x [unit]", "description")
    for c in m.channels:
        row(t, c.name, f"{c.y_name} [{c.y_unit}]", f"{c.x_name} [{c.x_unit}]", c.description)
    console.print(t)


def optimizers() -> None:
    """List the optimisers with their default settings and presets, each preset with its source."""
    from rich.table import Table

    from ..optimizers import OPTIMIZERS, get_optimizer

    t = Table()
    for col in ("name", "class", "presets (source)", "settings"):
        t.add_column(col)
    for name in OPTIMIZERS:
        try:
            cls = get_optimizer(name)
        except (ImportError, AttributeError):  # an optimiser whose optional extra is not installed
            continue
        s = {k: v for k, v in cls().settings().items() if k != "seed"}
        presets = "\n".join(
            f"{p.name} ({p.source}{'; formerly ' + ', '.join(p.aliases) if p.aliases else ''})"
            for p in cls.setting_presets.values()
        )
        t.add_row(name, cls.__name__, presets, ", ".join(f"{k}={v}" for k, v in s.items()))
    console.print(t)


def methods() -> None:
    """List every identification method: the optimisers (ask/tell, driven by `mechcalib run`), the surrogate
    strategies and the inverse networks (fit on a dataset, then identify); all give one Identification."""
    from rich.table import Table

    from ..inverse import NETWORKS
    from ..optimizers import OPTIMIZERS
    from ..surrogates import MARES2016_STRATEGIES

    t = Table()
    for col in ("family", "name", "interface", "how to run it"):
        t.add_column(col)
    for name in OPTIMIZERS:
        t.add_row("optimizer", name, "ask/tell", f"[optimizer] name = {name!r} in a config; mechcalib run")
    for name in MARES2016_STRATEGIES:
        t.add_row("surrogate strategy", name, "fit/identify", "Python API: mechcalib.surrogates (Mareš et al. 2016)")
    for name in NETWORKS:
        t.add_row("inverse network", name, "fit/identify", "mechcalib inverse train / identify (Hu et al. 2024)")
    console.print(t)


def demo(
    ctx: typer.Context,
    optimizer: str = typer.Option("auto", help="Optimiser registry name (see `mechcalib optimizers`)."),
    evals: int = typer.Option(400, min=1, help="Evaluation budget."),
    noise: float = typer.Option(
        0.02, min=0.0, help="Measurement noise level of Ding et al. (2021) eq. 36 added to the synthetic data."
    ),
    seed: int = typer.Option(0, min=0, help="Seed of the noise and of the optimiser."),
    out: Path = typer.Option(
        None, "--out", "-o", help="Run folder (created; default runs/demo, or runs/demo-2... when it holds a run)."
    ),
    plots: bool = typer.Option(False, "--plots/--no-plots", help="Write the fit and convergence plots too."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Calibrate the built-in Duffing oscillator against noisy synthetic data with known parameters, into a run
    folder that `mechcalib show`, `report`, `uncertainty` and `resume` then open."""
    from rich.table import Table

    from ..models import get_model
    from ..optimizers import make_optimizer
    from ..runs import run_demo

    with errors():
        make_optimizer(optimizer, seed=seed)  # an unknown name fails before anything is written
    truth = get_model("duffing").preset("default")
    console.print(f"calibrating [bold]duffing[/] {list(truth)} with [bold]{optimizer}[/], {evals} evaluations")
    with errors(), ProgressBar("demo", is_quiet(ctx, quiet)) as bar:
        rec = run_demo(out, optimizer=optimizer, evals=evals, noise=noise, seed=seed, plots=plots, progress=bar)
    s = rec.summary
    loss = "-" if s["best_loss"] is None else f"{s['best_loss']:.4g}"
    console.print(f"best loss {loss} after {s['n_evaluations']} evaluations ({rec.result.seconds:.1f} s)")
    t = Table()
    for col in ("parameter", "true", "identified", "error %"):
        t.add_column(col)
    for k, v in (s["best"] or {}).items():
        t.add_row(k, f"{truth[k]:.4g}", f"{v:.4g}", f"{100 * abs(v - truth[k]) / abs(truth[k]):.2f}")
    console.print(t)
    for p in rec.plots:
        echo_plain(f"wrote {p}")
    d = rec.out_dir
    typer.echo(f"the run is in {d}; next:")  # unwrapped, to copy
    for cmd, what in (("show", "state, best parameters"), ("report", "plots"), ("uncertainty", "95 % intervals")):
        typer.echo(f"  mechcalib {cmd} {d}".ljust(30 + len(str(d))) + f"# {what}")


def write_response_csv(
    response: Any, path: Path, comment: str | None = None
) -> list[tuple[Path, dict[str, tuple[str, ...]]]]:
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
            header += [
                f"{ch}.x [{c.x_unit}]" if c.x_unit else f"{ch}.x",
                f"{ch}.y [{c.y_unit}]" if c.y_unit else f"{ch}.y",
            ]
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


def simulate(
    model: str = typer.Argument(
        ..., help='Model: a registered name (see `mechcalib models`; plug-ins included) or a "package.module:Class".'
    ),
    preset: str = typer.Option("default", "--preset", help="Parameter preset the --set values override."),
    set_: list[str] = typer.Option([], "--set", help="Parameter value NAME=VALUE (repeatable)."),
    condition: list[str] = typer.Option(
        [],
        "--condition",
        help="Model condition NAME=VALUE (repeatable): a number, true/false, or text; a file condition (a measured "
        "force...) takes a record's path, read against the current folder.",
    ),
    conditions_file: Path = typer.Option(
        None,
        "--conditions",
        help="TOML file of conditions, written as a configuration's experiment writes them "
        '(force = { path = "rec.csv", column = "F", units = { F = "kN" } }); its paths read against its folder; '
        "--condition overrides it.",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="CSV file to write."),
) -> None:
    """Run one simulation of a model and write its channels as CSV; conditions, measured records included,
    are built as a configuration builds its experiments' conditions.

    Columns per channel: <channel>.x and <channel>.y, each with its unit in brackets, and <channel>.t when the
    channel has a progress coordinate. Experiment.from_csv(FILE, {channel: ("<channel>.x", "<channel>.y",
    "<channel>.t")}) reads it back.
    """
    from ..errors import ConfigurationError
    from ..models import MODELS, SimulationFailure, get_model

    try:  # a registered name, a plug-in's, or a "package.module:Class" target
        MODELS.resolve(model)
    except ConfigurationError as exc:
        raise typer.BadParameter(str(exc), param_hint="MODEL") from None
    m = get_model(model)
    if preset not in m.presets:
        raise typer.BadParameter(
            f"model {model!r} has no preset {preset!r}; presets are {sorted(m.presets)}", param_hint="--preset"
        )
    values = parse_assignments(set_, "--set", dict.fromkeys(m.space.names, "float"), what="parameter")
    given = parse_assignments(
        condition, "--condition", dict.fromkeys(sorted(m.default_conditions), "auto"), what="condition"
    )
    conds = _simulate_conditions(m, given, conditions_file)
    try:
        theta = m.full_vector(values, preset)
        (resp,) = m.simulate(theta[None, :], conds)
    except ConfigurationError as exc:  # the model's check of its conditions
        raise typer.BadParameter(str(exc), param_hint="--condition") from None
    if isinstance(resp, SimulationFailure):
        fail(f"the simulation failed: {resp.message}", EXIT_FAILED)
    params = ", ".join(f"{k}={v!r}" for k, v in zip(m.space.names, map(float, theta), strict=True))
    cond_text = ", ".join(f"{k}={v!r}" for k, v in m.conditions(conds).items())
    with errors():
        files = write_response_csv(
            resp, out, comment=f"mechcalib simulate {model}: preset {preset}; {params}; conditions {cond_text}"
        )
    for path, mapping in files:
        typer.echo(f"wrote {path} (channels {', '.join(f'{k}={list(v)}' for k, v in mapping.items())})")


def _simulate_conditions(model: Any, given: dict[str, Any], path: Path | None) -> dict[str, Any]:
    """The conditions of ``simulate``: the ``--conditions`` file's (paths against its folder) overridden by
    ``--condition`` (paths against the current folder), built and checked as a configuration's experiments'
    (:func:`mechcalib.config.model_conditions`)."""
    import tomllib

    from ..config import model_conditions, resolve_file_conditions

    conds: dict[str, Any] = {}
    if path is not None:
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            fail(f"--conditions {str(path)!r} is not a readable TOML file of conditions: {exc}")
        table = table.get("conditions", table)  # a bare table, or one under [conditions]
        conds = resolve_file_conditions(table, model.file_conditions, path.resolve().parent)
    conds.update(given)
    source = "--conditions and --condition" if path is not None and given else ("--condition" if given else str(path))
    with errors():
        return model_conditions(model, conds, None, source=source)  # paths of --condition: the current folder


# a model whose default simulation is itself a study (it pours its specimen first)
_NO_WARMUP = ("eepa_triaxial",)


def warmup(
    names: list[str] = typer.Argument(
        None,
        metavar="[MODEL]...",
        help="Models to compile (default: every built-in one but eepa_triaxial, which pours a specimen first).",
    ),
    jobs: int = typer.Option(
        None, "--jobs", "-j", min=1, help="Models compiled at once, each in a process of its own (default: the CPUs)."
    ),
) -> None:
    """Compile the models' numba kernels into numba's cache on disk once, after installing, so that a run's
    first simulation starts at once instead of compiling (minutes for the hysteretic family on a small
    machine). Simulates each model's default preset as a batch of two, under its default conditions; models
    compile in parallel processes (numba compiles on one core), and each one's wall and CPU time is said."""
    import multiprocessing
    import os
    import time
    from concurrent.futures import ProcessPoolExecutor

    from ..errors import ConfigurationError
    from ..models import MODELS

    chosen = list(names or [n for n in MODELS.names() if n not in _NO_WARMUP])
    for name in chosen:
        try:
            MODELS.resolve(name)
        except ConfigurationError as exc:
            raise typer.BadParameter(str(exc), param_hint="MODEL") from None
    n_jobs = min(jobs or os.cpu_count() or 1, len(chosen))
    failed = []
    t0 = time.perf_counter()
    with errors():
        if n_jobs > 1:
            # spawned, not forked: a fork would copy numba's threading layer if a kernel had already run
            with ProcessPoolExecutor(n_jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
                done = pool.map(_warm_one, chosen)
                for name, line, ok in done:
                    typer.echo(line, err=True)
                    if not ok:
                        failed.append(name)
        else:
            for name in chosen:
                name, line, ok = _warm_one(name)
                typer.echo(line, err=True)
                if not ok:
                    failed.append(name)
    typer.echo(f"compiled {len(chosen)} models in {time.perf_counter() - t0:.1f} s ({n_jobs} at once)", err=True)
    if failed:
        fail(
            f"the default simulation of {', '.join(failed)} failed; its kernels may be compiled all the same",
            EXIT_FAILED,
        )


def _warm_one(name: str) -> tuple[str, str, bool]:
    """Simulate model ``name``'s default preset as a batch of two (compiling its kernels into the cache);
    returns the name, the line to print (wall and CPU seconds) and whether it succeeded."""
    import time

    import numpy as np

    from ..models import SimulationFailure, get_model

    t0, c0 = time.perf_counter(), time.process_time()
    model = get_model(name)
    theta = model.full_vector()
    out = model.simulate(np.stack([theta, theta]))
    bad = [r for r in out if isinstance(r, SimulationFailure)]
    note = f"; failed: {bad[0].message}" if bad else ""
    return name, f"{name}: {time.perf_counter() - t0:.1f} s ({time.process_time() - c0:.1f} CPU s){note}", not bad


def register(app: typer.Typer) -> None:
    """Add this group's commands to the top-level application."""
    for command in (models, optimizers, methods, demo, simulate, warmup):
        app.command()(command)
