"""External simulators driven through files (Kibriya et al. (2023) section 3.5: Python writes the parameters, 3DEC
runs, Python reads the result file back).

Per parameter set :class:`ExternalModel`

1. creates a fresh working directory ``<workdir_root>/<name>-XXXXXXXX`` (``tempfile.mkdtemp``, so runs in
   threads, processes or on several hosts sharing the root never collide);
2. copies the support ``files`` into it and writes each template with its placeholders filled in;
3. runs ``command``, an argument list (never a shell string: ``shell=False``), in a session of its own
   with an optional timeout, through a supervisor process that keeps at most ``output_limit`` bytes of its
   output in ``stdout.log`` and ``stderr.log`` (the tail; a note says what was cut) and kills every process
   the run left behind, even one that started its own session (see :mod:`.external_process`);
4. reads the output channels from named CSV columns, or with a user ``parse(workdir) -> {channel: Curve}``.

Template syntax
---------------
A placeholder is ``{{ name }}`` (spaces inside the braces optional), where ``name`` is a parameter of the
model's space or one of its numeric conditions. It is replaced by ``repr(float(value))`` (for example
``4000000000.0`` or ``1e-05``), so the text written is always a number: values are floats, never strings,
and non-finite values are refused. Every ``{{ ... }}`` in a template is a placeholder; one whose name is
not a parameter or a condition is refused when the model is built. The same placeholders may appear
inside command arguments; the only other token is the whole argument ``{python}``, replaced by the
running interpreter (``sys.executable``).

A failed run (non-zero exit status, timeout, a missing or garbled output file, a parser that raises) gives a
:class:`~mechcalib.models.SimulationFailure` whose message names the working directory and its logs and ends
with the last lines of the program's output; ``simulate`` does not raise for it. Its working directory is kept
(``keep="failed"``) with a ``failure.txt``; the oldest failed ones are deleted beyond ``max_failed_dirs``
folders or ``max_failed_bytes`` bytes in all.

A failure of the machine rather than of the parameter set raises
:class:`~mechcalib.errors.InfrastructureError` instead: the program cannot start (not found, not executable,
no process slot or memory), a working directory or a log cannot be written, the kernel's out-of-memory killer
ended it, or the file system of the working directory is full when a run fails. The calibration then stops
with every evaluation so far stored; resuming it, once the cause is fixed, evaluates that set again.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..core.data import Curve, read_table
from ..core.model import Channel, Model, Response, SimulationFailure
from ..core.parameters import ParameterSpace
from ..errors import ConfigurationError, DataError, InfrastructureError
from .external_files import (
    PARAMS_JSON,
    PLACEHOLDER_RE,
    PYTHON_TOKEN,
    SINGLE_TOKEN_RE,
    STDERR_LOG,
    STDOUT_LOG,
    ExternalSetupError,
    fill_template,
    format_number,
    load_callable,
    placeholders,
    positive_int,
    relative_name,
    template_target,
)
from .external_process import (
    DEFAULT_MAX_FAILED_BYTES,
    DEFAULT_MAX_FAILED_DIRS,
    DEFAULT_OUTPUT_LIMIT,
    FAILURE_TXT,
    disk_full,
    log_tail,
    prune_failed,
    run_contained,
)

log = logging.getLogger(__name__)

Keep = Literal["all", "failed", "none"]
Parser = Callable[[Path], Mapping[str, Curve]]


@dataclass(frozen=True)
class CsvOutput:
    """One output channel read from a CSV file the simulator writes in its working directory.

    Args:
        file: file name relative to the working directory.
        x, y: column names (without the bracketed unit); ``t`` an optional progress column.
        x_unit, y_unit: unit labels; default the bracketed units of the header.
    """

    file: str
    x: str
    y: str
    t: str | None = None
    x_unit: str | None = None
    y_unit: str | None = None


class ExternalModel(Model):
    """A simulator run as a separate program that exchanges files with mechcalib.

    Args:
        space: the parameters (names, bounds, fixed values); every one may appear in templates.
        command: the program and its arguments as a list (``["{python}", "sim.py", "params.txt"]``);
            arguments may hold ``{{ name }}`` placeholders, and ``{python}`` as a whole argument.
        templates: ``{file name in the working directory: template path}``.
        files: support files copied into each working directory (scripts, meshes).
        outputs: ``{channel: CsvOutput}``; or give ``parser`` (and ``channels``).
        parser: ``parse(workdir) -> {channel: Curve}``, or its spec ``"module:function"`` /
            ``"path/file.py:function"`` (loaded lazily, so the model pickles for process pools).
        channels: channel names a parser returns (default: the keys of ``outputs``).
        timeout: seconds a run may take before it is killed and counted as failed.
        workdir_root: folder for the working directories (default ``<tmp>/mechcalib-external``).
        keep: keep working directories of ``"all"`` runs, only ``"failed"`` ones (default) or ``"none"``.
        output_limit: bytes of each of stdout and stderr kept in the logs (the last ones; default 1 MiB).
        max_failed_dirs: failed working directories kept at most (the oldest are deleted first; default 20).
        max_failed_bytes: total size of the failed working directories kept (default 1 GiB).
        max_workers: runs of one batch executed at the same time (threads waiting on processes).
        conditions: default numeric conditions, usable as placeholders; experiments override them.
        presets: ``{preset: {parameter: value}}``; default: the bounds' midpoints (geometric for log scale)
            and the fixed values.
        name: label used in messages and working-directory names.
        env: extra environment variables for the program.
    """

    description = "external simulator driven through template files and a command"

    def __init__(
        self,
        space: ParameterSpace,
        command: Sequence[str],
        *,
        templates: Mapping[str, str | os.PathLike] | None = None,
        files: Sequence[str | os.PathLike] = (),
        outputs: Mapping[str, CsvOutput] | None = None,
        parser: Parser | str | None = None,
        channels: Sequence[str] | None = None,
        timeout: float | None = None,
        workdir_root: str | os.PathLike | None = None,
        keep: Keep = "failed",
        max_workers: int = 1,
        conditions: Mapping[str, float] | None = None,
        presets: Mapping[str, Mapping[str, float]] | None = None,
        name: str = "external",
        env: Mapping[str, str] | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        max_failed_dirs: int = DEFAULT_MAX_FAILED_DIRS,
        max_failed_bytes: int = DEFAULT_MAX_FAILED_BYTES,
    ) -> None:
        if not isinstance(space, ParameterSpace):
            raise ExternalSetupError("space", "a ParameterSpace", type(space).__name__)
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise ExternalSetupError("name", "letters, digits, '_', '.' or '-'", repr(name))
        self.name = name  # instance attribute: each external model carries its own label
        self.space = space
        self.default_conditions = {}
        for k, v in (conditions or {}).items():
            if not str(k).isidentifier():
                raise ExternalSetupError(("conditions", k), "an identifier as condition name", repr(k))
            if k in space.names:
                raise ExternalSetupError(("conditions", k), "a name that is not also a parameter", repr(k))
            try:
                format_number(v, f"condition {k!r}")
            except ConfigurationError:
                raise ExternalSetupError(("conditions", k), "a finite number", repr(v)) from None
            self.default_conditions[k] = float(v)
        known = set(space.names) | set(self.default_conditions)

        # -- command ----------------------------------------------------------------------------------
        if isinstance(command, str | bytes) or not isinstance(command, Sequence) or not command:
            raise ExternalSetupError(
                "command", "a non-empty list of arguments (a shell string is not accepted)", repr(command)
            )
        cmd = []
        for i, arg in enumerate(command):
            if not isinstance(arg, str) or not arg:
                raise ExternalSetupError(("command", i), "a non-empty string", repr(arg))
            for p in placeholders(arg):
                if p not in known:
                    raise ExternalSetupError(
                        ("command", i),
                        f"placeholders naming parameters or conditions {sorted(known)}",
                        f"{{{{{p}}}}} in {arg!r}",
                    )
            stripped = PLACEHOLDER_RE.sub("", arg)
            for tok in SINGLE_TOKEN_RE.findall(stripped):
                if not (arg == PYTHON_TOKEN and tok == "python"):
                    raise ExternalSetupError(
                        ("command", i),
                        "no other token than a whole argument '{python}' and {{ name }} placeholders",
                        repr(arg),
                    )
            cmd.append(arg)
        self.command = tuple(cmd)

        # -- templates and files -------------------------------------------------------------------------
        self.templates: dict[str, str] = {}
        self._template_text: dict[str, str] = {}
        for target, src in (templates or {}).items():
            field = ("templates", target)
            template_target(target, field)
            path = Path(src)
            if not path.is_file():
                raise ExternalSetupError(field, "an existing template file", f"{str(path)!r} (not found)")
            try:
                text = path.read_text()
            except (OSError, UnicodeDecodeError) as exc:
                raise ExternalSetupError(field, "a readable text file", f"{str(path)!r} ({exc})") from None
            unknown = sorted({p for p in placeholders(text) if p not in known})
            if unknown:
                raise ExternalSetupError(
                    field,
                    f"placeholders naming parameters or conditions {sorted(known)}",
                    f"{', '.join('{{' + u + '}}' for u in unknown)} in {str(path)!r}",
                )
            self.templates[target] = str(path)
            self._template_text[target] = text
        self.files: tuple[str, ...] = ()
        fs = []
        for i, f in enumerate(files):
            p = Path(f)
            if not p.exists():
                raise ExternalSetupError(("files", i), "an existing file or folder", f"{str(p)!r} (not found)")
            if p.name in self.templates:
                raise ExternalSetupError(("files", i), "a name no template writes", repr(p.name))
            fs.append(str(p))
        self.files = tuple(fs)

        # -- outputs --------------------------------------------------------------------------------------
        self.outputs: dict[str, CsvOutput] = {}
        for ch, spec in (outputs or {}).items():
            if not isinstance(spec, CsvOutput):
                raise ExternalSetupError(("outputs", ch), "a CsvOutput", type(spec).__name__)
            relative_name(spec.file, ("outputs", ch, "file"))
            self.outputs[ch] = spec
        if parser is not None and self.outputs:
            raise ExternalSetupError("parser", "either outputs (CSV columns) or a parser, not both", "both")
        if parser is None and not self.outputs:
            raise ExternalSetupError("outputs", "at least one output channel, or a parser", "neither")
        self.parser_spec: str | None = parser if isinstance(parser, str) else None
        self._parser: Parser | None = None if isinstance(parser, str) else parser
        if self.parser_spec is not None:
            try:
                self._parser = load_callable(self.parser_spec)
            except ConfigurationError as exc:
                raise ExternalSetupError(
                    "parser",
                    "an importable function 'module:function' or 'file.py:function'",
                    f"{self.parser_spec!r} ({exc})",
                ) from None
        if parser is not None and self._parser is not None and not callable(self._parser):
            raise ExternalSetupError("parser", "a callable parse(workdir) -> {channel: Curve}", repr(parser))
        if channels is None:
            if parser is not None:
                raise ExternalSetupError("channels", "the channel names the parser returns", "nothing")
            channels = list(self.outputs)
        elif self.outputs and list(channels) != list(self.outputs):
            raise ExternalSetupError(
                "channels", f"the output channels {list(self.outputs)} or nothing", repr(list(channels))
            )
        if not channels or len(set(channels)) != len(channels):
            raise ExternalSetupError("channels", "a non-empty list of distinct channel names", repr(list(channels)))
        self.channels = tuple(
            Channel(
                ch,
                self.outputs[ch].x if ch in self.outputs else "x",
                self.outputs[ch].y if ch in self.outputs else ch,
                (self.outputs[ch].x_unit or "") if ch in self.outputs else "",
                (self.outputs[ch].y_unit or "") if ch in self.outputs else "",
            )
            for ch in channels
        )

        # -- run settings ---------------------------------------------------------------------------------
        if timeout is not None:
            try:
                ok = not isinstance(timeout, bool) and math.isfinite(float(timeout)) and float(timeout) > 0
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise ExternalSetupError("timeout", "a positive number of seconds or None", repr(timeout))
        self.timeout = None if timeout is None else float(timeout)
        if keep not in ("all", "failed", "none"):
            raise ExternalSetupError("keep", "one of 'all', 'failed', 'none'", repr(keep))
        self.keep: Keep = keep
        self.output_limit = positive_int(output_limit, "output_limit", 1024)
        self.max_failed_dirs = positive_int(max_failed_dirs, "max_failed_dirs", 0)
        self.max_failed_bytes = positive_int(max_failed_bytes, "max_failed_bytes", 0)
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise ExternalSetupError("max_workers", "an integer >= 1", repr(max_workers))
        self.max_workers = max_workers
        root = Path(workdir_root) if workdir_root is not None else Path(tempfile.gettempdir()) / "mechcalib-external"
        self.workdir_root = str(root)
        self.env = {str(k): str(v) for k, v in (env or {}).items()}

        # -- presets --------------------------------------------------------------------------------------
        self.presets = {}
        for pname, vals in (presets or {}).items():
            unknown = sorted(set(vals) - set(space.names))
            if unknown:
                raise ExternalSetupError(
                    ("presets", pname), f"values for parameters {list(space.names)}", f"unknown {unknown}"
                )
            self.presets[pname] = {k: float(v) for k, v in vals.items()}
        centre = {p.name: p.fixed if p.is_fixed else float(p.from_unit(0.5)) for p in space}
        for pname in list(self.presets):
            self.presets[pname] = {**centre, **self.presets[pname]}
        self.presets.setdefault("default", centre)

    # -- pickling: a parser given by spec is re-imported in the receiving process --------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self.parser_spec is not None:
            state["_parser"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def parser(self) -> Parser | None:
        if self._parser is None and self.parser_spec is not None:
            self._parser = load_callable(self.parser_spec)
        return self._parser

    # -- Model protocol -------------------------------------------------------------------------------------
    def conditions(self, conditions: Mapping[str, Any] | None) -> dict[str, Any]:
        """The merged conditions, each a finite number (what :meth:`validate_conditions` returns too: the
        templates take numbers only, and every run checks them again before writing a file)."""
        out = super().conditions(conditions)
        for k, v in out.items():
            format_number(v, f"model {self.name!r}: condition {k!r}")
        return out

    def simulate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None
    ) -> list[Response | SimulationFailure]:
        """Run the program once per row of ``theta`` ``(n, len(space))``; up to ``max_workers`` at a time."""
        theta = self.check_theta(theta)
        cond = self.validate_conditions(conditions, n_sets=theta.shape[0])
        rows = [dict(zip(self.space.names, map(float, row), strict=True)) for row in theta]
        if self.max_workers == 1 or len(rows) == 1:
            return [self.run_one(r, cond) for r in rows]
        with ThreadPoolExecutor(max_workers=min(self.max_workers, len(rows))) as pool:
            return list(pool.map(lambda r: self.run_one(r, cond), rows))

    # -- one run ------------------------------------------------------------------------------------------
    def make_workdir(self, values: Mapping[str, float], conditions: Mapping[str, Any] | None = None) -> Path:
        """Create a working directory holding the filled templates and the support files; returns it."""
        cond = self.conditions(conditions)
        unknown = sorted(set(values) - set(self.space.names))
        missing = [n for n in self.space.names if n not in values]
        if unknown or missing:
            raise ConfigurationError(
                f"model {self.name!r} needs a value for each parameter {list(self.space.names)}; "
                f"missing {missing}, unknown {unknown}"
            )
        # Numbers only: a string, a boolean or a non-finite value is refused here, before any file is written.
        subst = {**cond, **{k: float(format_number(v, f"parameter {k!r}")) for k, v in values.items()}}
        filled = {
            t: fill_template(txt, subst, where=f"template {self.templates[t]!r}")
            for t, txt in self._template_text.items()
        }
        args = self.arguments(subst)
        root = Path(self.workdir_root)
        root.mkdir(parents=True, exist_ok=True)
        wd = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=root))
        try:
            for f in self.files:
                src = Path(f)
                if src.is_dir():
                    shutil.copytree(src, wd / src.name)
                else:
                    shutil.copy2(src, wd / src.name)
            for target, text in filled.items():
                dest = wd / target
                dest.parent.mkdir(parents=True, exist_ok=True)
                _write_text(dest, text)
            record = {"parameters": {k: subst[k] for k in values}, "conditions": cond, "command": args}
            _write_text(wd / PARAMS_JSON, json.dumps(record, indent=1))
        except OSError:  # a half-prepared folder is of no use (and may be what filled the disk)
            shutil.rmtree(wd, ignore_errors=True)
            raise
        return wd

    def arguments(self, values: Mapping[str, float]) -> list[str]:
        """The argument list of one run: ``{python}`` and ``{{ name }}`` replaced by numbers."""
        return [
            sys.executable if a == PYTHON_TOKEN else fill_template(a, values, where="command argument")
            for a in self.command
        ]

    def run_one(
        self, values: Mapping[str, float], conditions: Mapping[str, Any] | None = None
    ) -> Response | SimulationFailure:
        """Prepare, run and parse one parameter set; failures come back as :class:`SimulationFailure`, a
        failure of the machine raises :class:`~mechcalib.errors.InfrastructureError`."""
        try:
            wd = self.make_workdir(values, conditions)
        except ConfigurationError as exc:
            return SimulationFailure(f"{self.name}: {exc}")
        except OSError as exc:
            raise self._machine(f"cannot prepare a working directory under {self.workdir_root!r} ({exc})") from exc
        try:
            result = self._execute(wd, {**self.conditions(conditions), **{k: float(v) for k, v in values.items()}})
        except InfrastructureError:
            if self.keep != "all":
                shutil.rmtree(wd, ignore_errors=True)
            raise
        if not isinstance(result, SimulationFailure):
            if self.keep != "all":
                shutil.rmtree(wd, ignore_errors=True)
            return result
        if self.keep == "none":
            shutil.rmtree(wd, ignore_errors=True)
            return SimulationFailure(
                result.message + "\n(working directory deleted; set keep='failed' to keep its logs)"
            )
        try:
            _write_text(wd / FAILURE_TXT, result.message + "\n")
        except OSError:  # a folder that cannot be marked could not be pruned later: do not keep it
            shutil.rmtree(wd, ignore_errors=True)
            return SimulationFailure(result.message + "\n(working directory deleted: it could not be marked)")
        removed = prune_failed(Path(self.workdir_root), f"{self.name}-", self.max_failed_dirs, self.max_failed_bytes)
        if wd in removed:
            return SimulationFailure(
                result.message + f"\n(working directory deleted: failed ones are kept up to max_failed_dirs = "
                f"{self.max_failed_dirs} folders and max_failed_bytes = {self.max_failed_bytes} bytes)"
            )
        return result

    def _machine(self, what: str) -> InfrastructureError:
        return InfrastructureError(
            f"{self.name}: {what}. The machine failed, not the parameter set: the evaluation is not recorded and "
            "the run stops with every evaluation so far stored; fix the cause and resume the run (this parameter "
            "set is then evaluated again)"
        )

    def _execute(self, wd: Path, subst: Mapping[str, float]) -> Response | SimulationFailure:
        args = self.arguments(subst)
        out_log, err_log = wd / STDOUT_LOG, wd / STDERR_LOG
        where = f"working directory {str(wd)!r}"
        env = {**os.environ, **self.env} if self.env else None
        try:
            rep = run_contained(
                args, wd, stdout=out_log, stderr=err_log, timeout=self.timeout, env=env, output_limit=self.output_limit
            )
        except OSError as exc:
            raise self._machine(f"cannot start a process to run {args[0]!r} ({exc})") from exc
        if rep.supervisor_error is not None:
            raise self._machine(f"the process supervising {args[0]!r} failed ({rep.supervisor_error})")
        if rep.start_error is not None:
            raise self._machine(
                f"cannot start {args[0]!r} ({rep.start_error[1]}); check `command` (the program must exist and be "
                "executable) and that the machine has free memory and process slots"
            )
        if rep.log_error is not None:
            raise self._machine(f"cannot write the program's output in {where} ({rep.log_error[1]})")
        if rep.oom:
            raise self._machine(f"{args[0]!r} was killed by the kernel's out-of-memory killer; {where}")
        if rep.stopped and not rep.timed_out:
            raise self._machine(
                f"the run of {args[0]!r} was stopped from outside (its supervisor got SIGTERM); {where}"
            )
        if rep.leftovers:
            log.warning("%s: killed %d process(es) the program left running; %s", self.name, rep.leftovers, where)
        logs = f"logs {str(out_log)!r}, {str(err_log)!r}"
        failure: str | None = None
        resp: Response | None = None
        if rep.timed_out:
            failure = f"timed out after {self.timeout:g} s and was killed with every process it started; {logs}"
        elif rep.rc is not None and rep.rc < 0:
            failure = f"was killed by signal {_signal_name(-rep.rc)}; {logs}"
        elif rep.rc != 0:
            failure = f"exited with status {rep.rc}; see {str(err_log)!r}"
        else:
            try:
                resp = self._read_outputs(wd)
            except Exception as exc:
                detail = str(exc) if isinstance(exc, DataError | ConfigurationError) else f"{type(exc).__name__}: {exc}"
                if not isinstance(exc, DataError | ConfigurationError):
                    detail += " [" + traceback.format_exc(limit=2).strip().splitlines()[-1] + "]"
                failure = f"unusable output ({detail}); {where}, {logs}"
        if failure is None:
            return resp  # type: ignore[return-value]
        free = disk_full(wd)
        if free is not None:
            raise self._machine(f"the file system of {where} is full ({free} bytes free) and the run failed: {failure}")
        return SimulationFailure(f"{self.name}: {failure}{_output_note(out_log, err_log, rep.bytes)}")

    def _read_outputs(self, wd: Path) -> dict[str, Curve]:
        if self.parser is not None:
            resp = self.parser(wd)
            if not isinstance(resp, Mapping):
                raise DataError(f"the parser must return {{channel: Curve}}, got {type(resp).__name__}")
            missing = [c for c in self.channel_names if c not in resp]
            if missing:
                raise DataError(f"the parser returned channels {sorted(resp)}, missing {missing}")
            for k, c in resp.items():
                if not isinstance(c, Curve):
                    raise DataError(f"the parser returned {type(c).__name__} for channel {k!r}, expected a Curve")
            return {c: resp[c] for c in self.channel_names}
        tables: dict[str, tuple[dict[str, np.ndarray], dict[str, str]]] = {}
        out = {}
        for ch, spec in self.outputs.items():
            path = wd / spec.file
            if spec.file not in tables:
                if not path.is_file():
                    raise DataError(f"output file {str(path)!r} was not written")
                tables[spec.file] = read_table(path)
            cols, units = tables[spec.file]
            for role in ("x", "y", "t"):
                col = getattr(spec, role)
                if col is not None and col not in cols:
                    raise DataError(f"{str(path)!r}: channel {ch!r} needs column {col!r}, the columns are {list(cols)}")
            out[ch] = Curve(
                cols[spec.x],
                cols[spec.y],
                None if spec.t is None else cols[spec.t],
                x_name=spec.x,
                y_name=spec.y,
                x_unit=spec.x_unit if spec.x_unit is not None else units[spec.x],
                y_unit=spec.y_unit if spec.y_unit is not None else units[spec.y],
            )
        return out


def _write_text(path: Path, text: str) -> None:
    path.write_text(text)


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return str(num)


def _output_note(out_log: Path, err_log: Path, written: Mapping[str, int]) -> str:
    """The last lines of stderr (or of stdout when stderr is empty) for a failure's message."""
    for name, path in (("stderr", err_log), ("stdout", out_log)):
        tail = log_tail(path)
        if tail:
            return f"\n--- last lines of {name} ({written.get(name, 0)} bytes written) ---\n{tail}"
    return ""
