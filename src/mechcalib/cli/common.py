"""What every command shares: the error handler, the ``NAME=VALUE`` option parser, console and progress output.

Exit status of every ``mechcalib`` command (one policy, applied by :func:`errors` and :func:`fail`):

* ``0``: success.
* ``1``: the command's work ran and failed: a run that ended without one successful evaluation, a simulation that
  failed, a dataset generation that finished without one successful simulation, an evaluator that cannot work
  (its workers do not start), the operating system refusing a file (:class:`OSError`), or the machine failing
  a simulation (:class:`~mechcalib.errors.InfrastructureError`: the run stopped and says how to continue).
* ``2``: bad input or usage: an unknown or malformed option (typer/click usage errors, :func:`parse_assignments`),
  a configuration or data file that breaks a rule (:class:`~mechcalib.errors.MechcalibError`: configuration,
  data, a missing optional extra), a run folder or store that does not hold what the command needs.
* ``130``: interrupted (Ctrl-C); a run says how to continue it.

An exception of any other type is a bug: it is not caught, so that its traceback reaches the user.

Command modules import from here and never from one another, nor from the package's ``__init__``.
"""

from __future__ import annotations

import errno
import logging
import math
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, Self

import typer
from rich.console import Console

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

console = Console()


# ------------------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------------------
def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print ``error: MESSAGE`` on stderr and leave with ``code`` (default: usage error)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@contextmanager
def errors(resume: str | Path | None = None) -> Iterator[None]:
    """Turn the package's errors into one message on stderr and the exit status of the module's policy.

    ``resume``: the arguments of the ``mechcalib resume`` that continues the command's work after an
    interruption (named in the message); ``None`` for a command that has nothing to continue.
    """
    import sqlite3

    from ..config import ConfigFileError
    from ..errors import InfrastructureError, MechcalibError
    from ..execution import EvaluatorError
    from ..storage.integrity import DECODE_ERRORS, StoreError, free_space

    try:
        yield
    except ConfigFileError as exc:  # its message is a headed list of every broken rule
        typer.echo(str(exc), err=True)
        raise typer.Exit(EXIT_USAGE) from None
    except InfrastructureError as exc:  # the machine, not the input: stopped, to be resumed once fixed
        hint = f"; continue with `mechcalib resume {resume}`" if resume is not None else ""
        fail(f"{exc}{hint}", EXIT_FAILED)
    except StoreError as exc:  # a damaged, read-only or full store: the message says what to do
        fail(str(exc), exc.exit_code)
    except MechcalibError as exc:
        fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            hint = _space_hint(resume)
            where = (
                f"writing {exc.filename} ({free_space(exc.filename)} on its disk)"
                if exc.filename is not None
                else f"writing a file the system did not name ({free_space('.')} on the current folder's disk)"
            )
            fail(f"no space left on the disk {where}{hint}", EXIT_FAILED)
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            fail(
                f"cannot write {exc.filename} ({exc.strerror}): the folder is read-only; write elsewhere "
                "(--out), or copy the run folder to a writable place",
                EXIT_FAILED,
            )
        fail(f"{type(exc).__name__}: {exc}", EXIT_FAILED)
    except EvaluatorError as exc:
        fail(f"{type(exc).__name__}: {exc}", EXIT_FAILED)
    except sqlite3.DatabaseError as exc:  # SQLite outside the store's own methods: still the store's file
        if isinstance(exc, sqlite3.IntegrityError | sqlite3.ProgrammingError | sqlite3.InterfaceError):
            raise
        fail(
            f"a run store could not be read ({type(exc).__name__}: {exc}); it is probably damaged: salvage it "
            "with `mechcalib repair STORE`",
            EXIT_USAGE,
        )
    except DECODE_ERRORS as exc:  # a decoder's error no reader named a file for: not the store's (its own say so)
        fail(
            f"a file the command reads could not be decoded ({type(exc).__name__}: {exc}); check the files it "
            "names: the configuration, its experiment and record files, and the run folder's JSON files",
            EXIT_USAGE,
        )
    except KeyboardInterrupt:
        hint = f"; continue with `mechcalib resume {resume}`" if resume is not None else ""
        typer.echo(f"interrupted{hint}", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _space_hint(resume: str | Path | None) -> str:
    """What to do once space is freed: resume a run folder that holds something, else run again."""
    if resume is None:
        return ""
    folder = Path(resume)
    if folder.is_dir() and not (folder / "run.json").exists() and not (folder / "store.sqlite").exists():
        return "; free some space and run the command again (nothing was stored yet)"
    return f"; free some space and continue with `mechcalib resume {resume}`"


# ------------------------------------------------------------------------------------------------------
# Repeated NAME=VALUE options
# ------------------------------------------------------------------------------------------------------
_INTEGER = re.compile(r"[+-]?[0-9]+")
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("is not a number") from None
    if not math.isfinite(value):
        raise ValueError("is not a finite number")
    return value


def _integer(text: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise ValueError("is not an integer")
    return int(text)


def _number(text: str) -> int | float:
    return int(text) if _INTEGER.fullmatch(text) else _finite(text)


def _boolean(text: str) -> bool:
    low = text.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError("is not a boolean")


def _auto(text: str) -> bool | int | float | str:
    """The TOML reading of a bare word: true/false, an integer, a finite number, else the text itself."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        value = float(text)
    except ValueError:
        return text
    if not math.isfinite(value):  # nan or inf is a mistake rather than a word
        raise ValueError("is not a finite number")
    return int(text) if _INTEGER.fullmatch(text) else value


#: Value kinds of :func:`parse_assignments`: converter and the expected form named in its error message.
VALUE_KINDS: dict[str, tuple[Callable[[str], Any], str]] = {
    "int": (_integer, "an integer such as 3"),
    "float": (_finite, "a finite number such as 1.5 or 2e-3"),
    "number": (_number, "a finite number such as 3 or 1.5 (an integer stays an integer)"),
    "bool": (_boolean, "true or false (also yes/no, on/off, 1/0)"),
    "str": (str, "any text"),
    "auto": (_auto, "true, false, an integer, a finite number or text"),
}


def parse_assignments(
    items: Sequence[str], option: str, kinds: Mapping[str, str] | str, *, what: str = "name"
) -> dict[str, Any]:
    """``["k=1.5", "n=3"]`` given by a repeated option -> ``{"k": 1.5, "n": 3}``, converted by value kind.

    ``option``: the option's flag (``--set``), named in every error. ``kinds``: one kind of
    :data:`VALUE_KINDS` for every name, or ``{name: kind}`` listing the only names accepted (in the order the
    error lists them), ``what`` saying what a name is (``parameter``, ``condition``). A name given twice keeps
    its last value. A malformed item is a usage error (exit status 2) naming the option, the text received
    and the form expected.
    """
    out: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name or not text:
            raise typer.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint=option)
        if isinstance(kinds, str):
            kind = kinds
        elif name in kinds:
            kind = kinds[name]
        else:
            raise typer.BadParameter(f"unknown {what} {name!r}; valid names are {list(kinds)}", param_hint=option)
        convert, form = VALUE_KINDS[kind]
        try:
            out[name] = convert(text)
        except ValueError as exc:  # the converter's reason: "is not a number", "is not a boolean", ...
            raise typer.BadParameter(f"{name}: {text!r} {exc}; expected {form}", param_hint=option) from None
    return out


# ------------------------------------------------------------------------------------------------------
# Console and progress
# ------------------------------------------------------------------------------------------------------
def is_quiet(ctx: typer.Context, quiet: bool) -> bool:
    """A command's ``--quiet`` or the application's ``mechcalib --quiet COMMAND``."""
    return quiet or bool((ctx.obj or {}).get("quiet"))


def echo_plain(text: str) -> None:
    """One line on the console without rich markup or highlighting (paths and reprs print as they are)."""
    console.print(text, markup=False, highlight=False)


def start_progress(unit: str, *, best: bool = False) -> Any:
    """A started rich progress bar on stderr, one line per task: its description, the bar, ``done/total unit``,
    the task's field ``best`` when ``best`` is set, and the time elapsed. Stop it with ``.stop()``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn

    columns: list[ProgressColumn] = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    columns.append(TextColumn(unit))
    if best:
        columns.append(TextColumn("best {task.fields[best]}"))
    columns.append(TimeElapsedColumn())
    progress = Progress(*columns, console=Console(stderr=True))
    progress.start()
    return progress


class ProgressBar:
    """A rich progress bar on stderr fed by :data:`mechcalib.runs.ProgressHook` calls; nothing when quiet.
    Quiet also holds the package's log messages below warnings for the command's duration."""

    def __init__(self, label: str, quiet: bool, folder: Path | None = None) -> None:
        self.label = label
        self.quiet = quiet
        self.progress: Any = None
        self.task: Any = None
        self._level: int | None = None
        self.folder = folder  # a run folder: its cluster events (lost workers...) join the label
        self._events: tuple[float, str] = (-math.inf, "")

    def _description(self) -> str:
        """The label, with the run's cluster events read again at most every 2 seconds."""
        if self.folder is None:
            return self.label
        t, text = self._events
        if time.monotonic() - t > 2.0:
            from ..execution.dask_backend import event_counts
            from ..runs import cluster_note

            note = cluster_note(event_counts(self.folder)) if self.folder.is_dir() else None
            text = f" ({note})" if note else ""
            self._events = (time.monotonic(), text)
        return self.label + text

    def __enter__(self) -> Self:
        if self.quiet:
            logger = logging.getLogger("mechcalib")
            self._level = logger.level
            logger.setLevel(logging.WARNING)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()
        if self._level is not None:
            logging.getLogger("mechcalib").setLevel(self._level)

    def __call__(self, done: int, total: int | None, best: float) -> None:
        if self.quiet:
            return
        text = f"{best:.6g}" if math.isfinite(best) else "-"
        if self.progress is None:  # started on the first report, so that an early error prints no bar
            self.progress = start_progress("evaluations", best=True)
            self.task = self.progress.add_task(self._description(), total=total, completed=done, best=text)
        else:
            self.progress.update(self.task, completed=done, best=text, description=self._description())


class EpochBar:
    """A rich progress bar on stderr over a network's training epochs, fed by its ``on_epoch(epoch, epochs,
    scores)`` calls: the epoch, the last epoch's training loss and, with validation, its loss and R²; nothing
    when quiet. The bar ends at the epoch training stopped (early stopping ends it short of the maximum)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet, self.progress, self.task = quiet, None, None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def __call__(self, epoch: int, epochs: int, scores: Mapping[str, float]) -> None:
        if self.quiet:
            return
        text = f"train loss {scores['train_loss']:.4g}"
        if "val_loss" in scores:
            text += f", validation loss {scores['val_loss']:.4g}"
        if "val_R2" in scores:
            text += f", validation R2 {scores['val_R2']:.3f}"
        if self.progress is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            out = Console(stderr=True)
            if not out.is_terminal:  # a log file: room for the whole last line
                out = Console(stderr=True, width=max(out.width, 140))
            self.progress = Progress(
                TextColumn("epoch"),
                MofNCompleteColumn(),
                BarColumn(bar_width=20),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                console=out,
            )
            self.progress.start()
            self.task = self.progress.add_task("", total=epochs)
        self.progress.update(self.task, completed=epoch, description=text)


def dataset_progress(quiet: bool, n: int | None = None) -> Callable[[int, int, Any], None] | None:
    """The per-simulation progress line of a dataset generation (``None`` when quiet)."""
    if quiet:
        return None

    def progress(idx: int, batch: int, o: Any) -> None:
        if o.source == "live":
            what = "ok" if o.ok else f"{o.status}: {o.error}"
            typer.echo(f"set {idx + 1}{f'/{n}' if n else ''}: {what} ({o.seconds:.1f} s, {o.worker})")

    return progress


def echo_generation(g: Any, store: Path) -> None:
    """The count line of a dataset generation (stored, simulated now, read back, failed)."""
    typer.echo(
        f"run {g.run_name!r} in {store}: {g.done} of {g.n} sets stored ({g.simulated} simulated now, "
        f"{g.done - g.simulated} read back), {g.failed} failed"
    )


def finish_generation(g: Any, out: Path) -> Path | None:
    """Write a generation's dataset to ``out`` and say so; without one successful simulation write nothing,
    and leave with status 1 when the generation has ended (0 while sets are still to simulate)."""
    if g.dataset is None:
        typer.echo("no successful simulation yet: no dataset written")
        if g.complete:
            raise typer.Exit(EXIT_FAILED)
        return None
    path = g.dataset.save_npz(out)
    ds = g.dataset
    state = "complete" if g.complete else f"partial ({g.done} of {g.n}; run the same command to continue)"
    typer.echo(
        f"wrote {path}: {len(ds)} sequences of {ds.length} x {len(ds.features)} ({', '.join(ds.features)}); "
        f"parameters {', '.join(ds.names)}; {state}"
    )
    return path
