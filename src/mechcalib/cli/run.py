"""Commands about runs kept in a folder (see :mod:`mechcalib.runs`): ``check``, ``run``, ``resume``, ``show``,
``export``, ``report``, ``compact``, ``repair``, ``archive``, ``uncertainty`` (:mod:`mechcalib.uncertainty`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from .common import (
    EXIT_FAILED,
    ProgressBar,
    console,
    dataset_progress,
    echo_generation,
    echo_plain,
    errors,
    fail,
    finish_generation,
    is_quiet,
    start_progress,
)

_ONE_EVALUATOR = "give either --workers (a local process pool) or --scheduler (a dask cluster), not both"


def check(config: Path = typer.Argument(..., help="Run configuration (TOML).")) -> None:
    """Validate a run configuration: build its problem, optimiser and budget, and summarise them."""
    from rich.table import Table

    from ..config import load_config

    with errors():
        cfg = load_config(config)
        problem = cfg.build_problem()
        opt = cfg.build_optimizer()
        term = cfg.build_termination()
    t = Table(
        title=f"{cfg.name}: model {problem.model.name}, {problem.space.dim} free parameter(s)", title_justify="left"
    )
    for col in ("parameter", "unit", "lower", "upper", "scale", "fixed"):
        t.add_column(col)
    for p in problem.space:
        fixed = "" if p.fixed is None else f"{p.fixed:g}"
        t.add_row(p.name, p.unit, f"{p.lower:g}", f"{p.upper:g}", p.scale, fixed)
    console.print(t)
    steps = _step_reports(problem, opt, term)
    for e in problem.experiments:
        chans = ", ".join(f"{k} ({len(c)} points)" for k, c in e.channels.items())
        echo_plain(f"experiment {e.name!r} (weight {e.weight:g}): {chans}")
        for r in steps.get(e.name, ()):
            at = ", ".join(f"{k}={v:.4g}" for k, v in r.at.items())
            where = "judged at the run's first design points, inside the box; this one at"
            typer.echo(f"  {'' if r.ok else 'warning: '}{r.message} ({where} {at})")  # unwrapped
    echo_plain(f"objective {problem.objective.name}; optimizer {opt.name} {opt.settings()}")
    rules = {k: v for k, v in vars(term).items() if v is not None and not (k == "min_delta" and v == 0)}
    echo_plain(f"budget {rules}; evaluator {cfg.evaluator.kind}; seed {cfg.seed}")


def _step_reports(problem: Any, opt: Any, term: Any) -> dict[str, list[Any]]:
    """The model's time-integration step check at the first points the run will simulate (inside the box),
    by experiment (:mod:`mechcalib.runs.steps`)."""
    from ..runs.steps import design_points, step_reports

    try:
        thetas = design_points(opt, term, problem.space)
    except Exception:  # noqa: BLE001 - a method that cannot look ahead: nothing to judge here, the run checks
        return {}
    with errors():  # a record the model cannot read is the configuration's error
        reports = step_reports(problem.model, problem.experiments, thetas, problem.space.names)
    out: dict[str, list[Any]] = {}
    for r in reports:
        out.setdefault(r.experiment, []).append(r)
    return out


def _stop_line(summary: dict, folder: Path) -> str:
    """The summary's stop note with its `mechcalib resume RUN` naming this folder."""
    return (summary.get("stop") or "").replace("resume RUN", f"resume {folder}")


def _print_result(rec: Any, quiet: bool) -> None:
    """The result line (and, unless quiet, the best parameters and files written); status 1 when the run
    ended without one successful evaluation."""
    s = rec.summary
    loss = "-" if s["best_loss"] is None else f"{s['best_loss']:.6g}"
    line = (
        f"run {s['run_name']!r} {s['status']} ({s['stop_reason']}): best loss {loss} after {s['n_evaluations']} "
        f"evaluations ({s['n_failed']} failed; {s['n_simulated']} simulated now)"
    )
    stop = _stop_line(s, rec.out_dir)
    if quiet:
        typer.echo(f"{line}; {rec.result_path}")
    else:
        echo_plain(line)
        if stop:
            echo_plain(f"  {stop}")
        if s["best"]:
            _print_best(s["best"], s.get("bounds"))
        echo_plain(f"wrote {rec.result_path} and {rec.out_dir / 'store.sqlite'}")
        for p in rec.plots:
            echo_plain(f"wrote {p}")
    _warn_bounds(s)
    if s["best_loss"] is None:
        counts = ", ".join(f"{n} {k}" for k, n in (s.get("failures") or {}).items()) or f"{s['n_failed']} failed"
        why = f"; the last error: {s['last_error']}" if s.get("last_error") else ""
        fail(
            f"no evaluation of the run succeeded ({counts}){why}; `mechcalib show {rec.out_dir}` lists the "
            "failures: check the bounds, conditions and model",
            EXIT_FAILED,
        )


def _warn_bounds(summary: dict[str, Any]) -> None:
    """A warning on stderr per parameter that ends at a bound (``result.json``'s or ``show``'s ``bounds``)."""
    from ..runs import bounds_note

    for line in bounds_note(summary):
        typer.echo(f"warning: {line}", err=True)


def _print_best(best: dict[str, float], bounds: dict[str, Any] | None = None) -> None:
    from rich.table import Table

    notes = {k: _bound_note(b.get("at_bound")) for k, b in (bounds or {}).items()}
    t = Table()
    t.add_column("parameter")
    t.add_column("best")
    if any(notes.values()):
        t.add_column("note")
    for k, v in best.items():
        t.add_row(k, f"{v:.6g}", *([notes.get(k, "")] if any(notes.values()) else []))
    console.print(t)


def _bound_note(side: str | None, cut: str | None = None) -> str:
    """The table note of a parameter at a bound, and of an interval the box cuts."""
    if side is None:
        return "" if cut is None else f"cut at {cut}"
    return f"at {side} bound" + ("" if cut is None else (", cut" if cut == side else f", cut at {cut}"))


_CUT_LEGEND = "cut: the 95 % interval ends at a bound of the search box, which cuts it; widen the box to see it whole"


def _legend(rows: list[str]) -> None:
    if any("cut" in r for r in rows):
        echo_plain(_CUT_LEGEND)


def _print_intervals(unc: dict[str, Any]) -> None:
    """The best parameters with the 95 % intervals of `mechcalib uncertainty`."""
    from rich.table import Table

    t = Table(title=f"95 % intervals ({unc['method']}, {unc['file']})", title_justify="left")
    for col in ("parameter", "best", "lower", "upper", "std", "note"):
        t.add_column(col)
    notes: list[str] = []
    for k, p in unc["parameters"].items():
        std = "inf" if p["std"] is None else f"{p['std']:.4g}"
        notes.append(_bound_note(p.get("at_bound"), p.get("cut")))
        t.add_row(k, f"{p['best']:.6g}", f"{p['lower']:.6g}", f"{p['upper']:.6g}", std, notes[-1])
    console.print(t)
    _legend(notes)
    if unc.get("least_identifiable"):
        echo_plain(f"least identifiable: {unc['least_identifiable']}")
    if unc.get("stale"):
        echo_plain(f"stale: {unc['note']}")


def run(
    ctx: typer.Context,
    config: Path = typer.Argument(..., help="Run configuration (TOML)."),
    out: Path = typer.Option(None, "--out", "-o", help="Run folder (created; default <output.directory>/<name>)."),
    workers: int = typer.Option(None, "--workers", min=1, help="Evaluate in a local process pool of N workers."),
    scheduler: str = typer.Option(None, "--scheduler", help="Evaluate on the dask cluster of this scheduler address."),
    budget: int = typer.Option(
        None, "--budget", min=1, help="Maximum number of evaluations (overrides budget.max_evals)."
    ),
    seed: int = typer.Option(None, "--seed", min=0, help="Optimiser seed (overrides seed)."),
    plots: bool = typer.Option(
        None, "--plots/--no-plots", help="Write the report plots at the end (default: output.plots)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar; print only the result line."),
) -> None:
    """Run a calibration; store every evaluation in OUT/store.sqlite and the result in OUT/result.json."""
    from ..runs import run_config

    if workers is not None and scheduler is not None:
        fail(_ONE_EVALUATOR)
    q = is_quiet(ctx, quiet)
    with errors(out), ProgressBar("run", q, out) as bar:
        rec = run_config(
            config, out, workers=workers, scheduler=scheduler, budget=budget, seed=seed, progress=bar, plots=plots
        )
    _print_result(rec, q)


def resume(
    ctx: typer.Context,
    directory: Path = typer.Argument(
        ...,
        metavar="DIR",
        help="Run folder written by `mechcalib run`, or the run "
        "store (SQLite file) of `mechcalib inverse dataset --store`.",
    ),
    budget: int = typer.Option(None, "--budget", min=1, help="New maximum number of evaluations (the total)."),
    workers: int = typer.Option(None, "--workers", min=1, help="Evaluate in a local process pool of N workers."),
    scheduler: str = typer.Option(None, "--scheduler", help="Evaluate on the dask cluster of this scheduler address."),
    config: Path = typer.Option(None, "--config", help="Configuration file to use instead of the stored one."),
    run_name: str = typer.Option(None, "--run", help="Run name in the store (default: the folder's run)."),
    plots: bool = typer.Option(
        None, "--plots/--no-plots", help="Write the report plots at the end (default: output.plots)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar; print only the result line."),
    out: Path = typer.Option(None, "--out", "-o", help="For a dataset run: the dataset file (.npz) to write."),
    timeout: float = typer.Option(None, "--timeout", min=0.0, help="For a dataset run: seconds per simulation."),
    accept_loss: bool = typer.Option(
        False,
        "--accept-loss",
        help="Resume even though the store lost evaluations it had stored (a deleted write-ahead log, an "
        "emptied or replaced store): they are simulated again.",
    ),
) -> None:
    """Continue a run (interrupted, killed or finished) without simulating a stored evaluation again, and
    rewrite DIR/result.json. --budget extends it. A store that lost evaluations it had stored is refused, with
    their count, unless --accept-loss. Given a store file instead, continue its dataset run and write the
    dataset to --out."""
    from ..runs import resume_run

    if directory.is_file():
        return _resume_dataset(directory, run_name, out, workers, budget, timeout, is_quiet(ctx, quiet))
    if out is not None or timeout is not None:
        fail("--out and --timeout apply to a dataset run (DIR a store file)")
    if workers is not None and scheduler is not None:
        fail(_ONE_EVALUATOR)
    q = is_quiet(ctx, quiet)
    with errors(directory), ProgressBar("resume", q, directory) as bar:
        rec = resume_run(
            directory,
            budget=budget,
            workers=workers,
            scheduler=scheduler,
            run=run_name,
            config=config,
            progress=bar,
            plots=plots,
            accept_loss=accept_loss,
        )
    _print_result(rec, q)


def _resume_dataset(
    store: Path,
    run: str | None,
    out: Path | None,
    workers: int | None,
    budget: int | None,
    timeout: float | None,
    quiet: bool,
) -> None:
    from ..inverse.data import resume_dataset

    if out is None:
        fail("a dataset run needs --out FILE.npz for the dataset")
    with errors(f"{store} --out {out}"):
        g = resume_dataset(
            store, run, workers=workers, budget=budget, timeout=timeout, on_evaluation=dataset_progress(quiet)
        )
        echo_generation(g, store)
        finish_generation(g, out)


def show(
    directory: Path = typer.Argument(
        ..., metavar="DIR", help="Run folder, or a run store file (SQLite) written from Python."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (for scripts)."),
    run_name: str = typer.Option(None, "--run", help="Run name in the store (default: the folder's run)."),
) -> None:
    """Status, evaluations done, failures and best parameters so far (also while the run is going on)."""
    from ..runs import cluster_note, run_summary

    with errors():
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
        + (f" ({s.get('best_source') or 'evaluation ' + str(s['best_index'])})" if s["best_index"] is not None else ""),
    ]
    events = cluster_note(s.get("cluster") or {})
    if events:
        lines.append(f"cluster: {events} (told in {directory / 'run.log'})")
    if s.get("stop"):
        lines.append(f"  {_stop_line(s, directory)}")
    if s["error"]:
        lines.append(f"error: {s['error']}")
    for ln in lines:
        echo_plain(ln)
    if s.get("uncertainty"):
        _print_intervals(s["uncertainty"])
    elif s["best"]:
        _print_best(s["best"], s.get("bounds"))
    spread = s.get("ensemble_spread")
    if spread:
        cells = ", ".join(f"{k} {v['min']:.4g} to {v['max']:.4g}" for k, v in spread["parameters"].items())
        echo_plain(f"ensemble: {cells} ({spread['note'].split(' (')[0]})")  # the note's head: "..., not an interval"
    _warn_bounds(s)
    for f in s["recent_failures"]:
        echo_plain(f"failed evaluation {f['idx']} ({f['status']}): {f['error']}")
    if s.get("lost"):
        typer.echo(
            f"warning: {s['lost']['note']}; `mechcalib resume {directory} --accept-loss` simulates them again",
            err=True,
        )
    if s["damage"]:
        typer.echo(
            f"warning: the run store {s['store']} is damaged ({'; '.join(s['damage'][:3])}); salvage it with "
            f"`mechcalib repair {directory}` and resume the salvage",
            err=True,
        )


def export(
    directory: Path = typer.Argument(
        ..., metavar="DIR", help="Run folder, or a run store file (SQLite) written from Python."
    ),
    fmt: str = typer.Option("csv", "--format", help="Table format: csv or parquet (needs pandas and pyarrow)."),
    out: Path = typer.Option(
        None,
        "--out",
        "-o",
        help="Table file (default DIR/evaluations.csv or .parquet; evaluations.RUN.csv for another run); with "
        "--all a folder.",
    ),
    dataset: Path = typer.Option(None, "--dataset", help="Also write parameters, losses and responses as .npz."),
    include_failed: bool = typer.Option(False, "--include-failed", help="Keep failed evaluations in the dataset."),
    run_name: str = typer.Option(
        None, "--run", help="Run name in the store (default: the folder's run; e.g. RUN.polish, RUN.posterior)."
    ),
    all_runs: bool = typer.Option(False, "--all", help="Export every run in the store, one table each."),
) -> None:
    """Write a run's evaluations as a table, and a dataset for surrogate training. The store also holds the
    runs made from the folder's run (the polish, Jacobian and posterior of `mechcalib uncertainty`): they are
    listed, and exported with --run NAME or --all."""
    from ..runs import export_run

    if fmt not in ("csv", "parquet"):
        raise typer.BadParameter(f"expected csv or parquet, got {fmt!r}", param_hint="--format")
    with errors():
        res = export_run(
            directory, path=out, fmt=fmt, dataset=dataset, include_failed=include_failed, run=run_name,
            all_runs=all_runs,
        )  # fmt: skip
    for e in res["exports"]:
        typer.echo(f"wrote {e['table']} (run {e['run']!r}: {e['rows']} evaluations)")
        if e["dataset"] is not None:
            typer.echo(
                f"wrote {e['dataset']} ({e['dataset_rows']} parameter sets, {len(e['responses'])} response arrays)"
            )
    if dataset is not None and not any(e["responses"] for e in res["exports"]):
        typer.echo(
            "note: the run kept no responses; set output.keep_responses = true in the configuration to include them",
            err=True,
        )
    if res["other_runs"]:
        typer.echo(f"other runs in this store ({len(res['other_runs'])}):")
        for o in res["other_runs"]:
            typer.echo(f"  {o['name']}  {o['status']}, {o['evaluations']} evaluations")
        typer.echo("export one with --run NAME, or every run with --all")


def report(
    directory: Path = typer.Argument(
        ..., metavar="DIR", help="Run folder, or a run store file (SQLite) written from Python."
    ),
    run_name: str = typer.Option(None, "--run", help="Run name in the store (default: the folder's run)."),
    out: Path = typer.Option(None, "--out", "-o", help="Folder for the plots (default DIR; for a read-only run)."),
    html: Path = typer.Option(
        None, "--html", help="Write the dashboard's page as one self-contained HTML file instead."
    ),
) -> None:
    """Write DIR/convergence.png and DIR/fit_<experiment>.png (best fit against each experiment); with --html
    FILE, the dashboard's page of the run as one file that opens with no network."""
    from ..runs import write_report

    if html is not None:
        return _report_html(directory, html, run_name, out)
    with errors():
        paths = write_report(directory, run=run_name, folder=out)
    for p in paths:
        typer.echo(f"wrote {p}")


def _report_html(directory: Path, html: Path, run_name: str | None, out: Path | None) -> None:
    """``report --html FILE``: the page of the run folder, or one line and status 1 when FILE cannot be written."""
    from ..dashboard import write_html
    from ..runs.folder import store_path

    if run_name is not None or out is not None:
        fail("--run and --out apply to the PNG plots; --html shows the folder's run in FILE")
    with errors():
        store_path(directory)  # a folder that is not a run: one line, status 2
    try:
        path, notes = write_html([directory], html)
    except OSError as exc:
        fail(f"cannot write the report {html} ({exc.strerror or exc}); give a writable file with --html", EXIT_FAILED)
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    typer.echo(f"wrote {path}")


def archive(
    directory: Path = typer.Argument(..., metavar="RUN", help="Run folder (or a run store file written from Python)."),
    dest: Path = typer.Argument(
        ..., metavar="DEST", help="New folder (or store file), or an archive: a name ending in .tar.gz, .tgz or .zip."
    ),
) -> None:
    """Copy a run folder safely, also while it runs: the store through SQLite's backup API (the evaluations
    still in its write-ahead log included), the counts file and every other file; optionally packed as a
    .tar.gz or .zip archive. The copy shows and resumes like the original."""
    from ..runs import archive_run

    with errors(directory):
        rep = archive_run(directory, dest)
    echo_plain(
        f"copied {rep.source} to {rep.target}: {rep.evaluations} evaluations in {rep.runs} run(s)"
        + (f", {rep.files} other file(s)" if rep.files else "")
    )
    for note in rep.notes:
        typer.echo(f"warning: {note}", err=True)


def cancel_jobs(
    directory: Path = typer.Argument(..., metavar="RUN", help="Run folder of a cluster run (kind = slurm or pbs)."),
) -> None:
    """Cancel the SLURM/PBS jobs that a killed cluster run left behind (recorded in RUN/jobs.json);
    `resume` does the same before it starts. Refused while the run is going."""
    from ..runs import cancel_jobs as cancel

    with errors(directory):
        ids = cancel(directory)
    echo_plain(f"cancelled {len(ids)} job(s): {' '.join(ids)}" if ids else "no job of this run is left to cancel")


def _file_bytes(path: Path) -> int:
    """Size of an SQLite file with its write-ahead log."""
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.is_file())


def compact(
    store: Path = typer.Argument(..., metavar="STORE", help="Run store file (or a run folder holding store.sqlite)."),
    run_names: list[str] = typer.Option(
        [], "--run", help="Run to compact (repeatable); it must be finished or failed."
    ),
    all_finished: bool = typer.Option(False, "--all-finished", help="Compact every run whose status is finished."),
    keep_checkpoints: int = typer.Option(
        1, "--keep-checkpoints", min=0, help="Latest optimiser checkpoints to keep per run."
    ),
    vacuum: bool = typer.Option(False, "--vacuum", help="Rebuild the file afterwards so that it shrinks."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Say what would be dropped, changing nothing (works on a read-only store)."
    ),
) -> None:
    """Shrink finished runs to their record, failures and improving evaluations (counts, best, best-so-far
    trace and timings stay exact; a compacted run can no longer be resumed). Without --vacuum the freed
    space is reused by later runs but the file keeps its size."""
    from rich.table import Table

    from ..errors import ConfigurationError
    from ..runs import STORE_FILE
    from ..storage import RunStore
    from ..storage.compaction import plan_compaction

    path = store / STORE_FILE if store.is_dir() else store
    if not path.is_file():
        fail(f"no run store at {str(path)!r}; give a store file or a run folder")
    if not run_names and not all_finished:
        raise typer.BadParameter("give --run NAME (repeatable) or --all-finished", param_hint="--run")
    with errors():
        with RunStore(path, readonly=dry_run) as st:
            names = list(dict.fromkeys(run_names))
            for name in names:  # an unknown or unfinished run fails before anything is dropped
                status = st.run(name).status
                if status not in ("finished", "failed"):
                    raise ConfigurationError(
                        f"--run {name!r}: the run in {path} is {status}; only a finished or failed run can be "
                        "compacted: finish or resume it first"
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
                if dry_run:
                    p = plan_compaction(st, name, keep_checkpoints)
                    row = (p["n_evals"], p["n_kept"], p["n_dropped"], p["checkpoints_dropped"])
                else:
                    s = st.compact_run(name, keep_checkpoints=keep_checkpoints)
                    row = (s.n_evals, s.n_kept, s.n_dropped, s.checkpoints_dropped)
                t.add_row(name, st.status(name), *map(str, row))
            if vacuum and not dry_run:
                st.vacuum()
        after = _file_bytes(path)
    console.print(t)
    if dry_run:
        echo_plain(f"{path}: {before / 2**20:.2f} MiB; dry run, nothing changed")
        return
    note = "" if vacuum else " (run with --vacuum to shrink the file)"
    echo_plain(f"{path}: {before / 2**20:.2f} MiB before, {after / 2**20:.2f} MiB after{note}")


def repair(
    store: Path = typer.Argument(..., metavar="STORE", help="Run folder or run store file (SQLite) to salvage."),
    out: Path = typer.Option(
        None, "--out", "-o", help="New run folder or store file (default DIR.repaired or STEM.repaired.sqlite)."
    ),
) -> None:
    """Salvage every readable evaluation of a damaged store into a new one and say what was lost; resume the
    salvage to simulate the lost evaluations again."""
    from ..runs import repair_run

    with errors():
        rep = repair_run(store, out)
    for line in rep.lines():
        echo_plain(line)
    if rep.target.is_dir():
        echo_plain(f"continue with `mechcalib resume {rep.target}` (the lost evaluations are simulated again)")


class _StepBar:
    """A rich progress bar over the chain's steps on stderr; nothing when quiet."""

    def __init__(self, quiet: bool) -> None:
        self.quiet, self.progress, self.task = quiet, None, None

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        if self.progress is None:
            self.progress = start_progress("steps")
            self.task = self.progress.add_task("posterior", total=total)
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
    move: str = typer.Option(
        "stretch", "--move", help="emcee move: stretch, de, or gauss (Metropolis from the Gauss-Newton covariance)."
    ),
    force: bool = typer.Option(False, "--force", help="Go on when the polish did not converge or J is singular."),
    profile: list[str] = typer.Option(
        None, "--profile", help="Profile likelihood of this parameter (repeat once for a second)."
    ),
    effective_samples: bool = typer.Option(
        False,
        "--effective-samples",
        help="Scale each channel's likelihood by its effective sample size from the residuals' autocorrelation "
        "(densely sampled records with correlated residuals).",
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

    from ..runs import folder_uncertainty

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
                move=move,
                force=force,
                profile=tuple(profile or ()),
                effective_samples=effective_samples,
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
    all_notes: list[str] = []
    for n, p in res.parameters().items():
        notes = [_bound_note(p.get("at_bound"), p.get("cut"))]
        if p.get("posterior", {}).get("prior_box"):
            notes.append("prior box")
        elif p["unidentifiable"]:
            notes.append("unidentifiable")
        note = "; ".join(n for n in notes if n)
        std = "inf" if p["std"] is None else f"{p['std']:.4g}"
        t.add_row(n, f"{p['best']:.6g}", f"{p['lower']:.6g}", f"{p['upper']:.6g}", std, note)
        all_notes.append(note)
    console.print(t)
    _legend(all_notes)
    loc = res.local
    echo_plain(f"least identifiable: {loc.weakest}")
    echo_plain(f"condition number (relative coordinates): {loc.condition:.3g}")
    if loc.effective_samples:
        sizes = ", ".join(f"{k} {v:.0f}" for k, v in loc.effective_samples.items())
        echo_plain(f"effective sample size per channel (the likelihood scaled by n_eff / n): {sizes}")
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
    for command in (check, run, resume, show, export, report, compact, repair, archive, cancel_jobs, uncertainty):
        app.command()(command)
