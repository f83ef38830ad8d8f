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
import os
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..core.data import Curve, read_table
from ..core.model import Model, Response, SimulationFailure
from ..core.parameters import ParameterSpace
from ..errors import ConfigurationError, DataError, InfrastructureError
from .external_files import (
    PARAMS_JSON,
    PYTHON_TOKEN,
    STDERR_LOG,
    STDOUT_LOG,
    ExternalSetupError,
    fill_template,
    format_number,
    load_callable,
    placeholders,
)
from .external_process import (
    FAILURE_TXT,
    disk_full,
    log_tail,
    prune_failed,
    run_contained,
)
from .external_spec import (
    CsvOutput,
    ExternalSpec,
    Keep,
    Parser,
    check_command,
    check_conditions,
    check_files,
    check_keep,
    check_limits,
    check_name,
    check_outputs,
    check_parser,
    check_timeout,
    make_channels,
    make_presets,
    read_templates,
    workdir_root,
)

log = logging.getLogger(__name__)

# Re-exported: they were defined here before the definition's checks moved to external_spec.py.
__all__ = [
    "CsvOutput",
    "ExternalModel",
    "ExternalSetupError",
    "ExternalSpec",
    "Keep",
    "Parser",
    "fill_template",
    "format_number",
    "placeholders",
]


class ExternalModel(Model):
    """A simulator run as a separate program that exchanges files with mechcalib.

    Args:
        space: the parameters (names, bounds, fixed values); every one may appear in templates.
        command: the simulator's :class:`~mechcalib.models.external_spec.ExternalSpec`; or its ``command``
            with the spec's other fields as keywords (``ExternalModel(space, ["{python}", "sim.py"],
            templates=..., outputs=...)``), see :class:`~mechcalib.models.external_spec.ExternalSpec`.
    """

    description = "external simulator driven through template files and a command"

    def __init__(self, space: ParameterSpace, command: ExternalSpec | Sequence[str], **settings: Any) -> None:
        if isinstance(command, ExternalSpec):
            if settings:
                raise ConfigurationError(
                    f"ExternalModel: give the settings {sorted(settings)} in the ExternalSpec, not beside it"
                )
            spec = command
        else:
            spec = ExternalSpec(command=command, **settings)
        if not isinstance(space, ParameterSpace):
            raise ExternalSetupError("space", "a ParameterSpace", type(space).__name__)
        self.name = check_name(spec.name)  # instance attribute: each external model carries its own label
        self.space = space
        self.default_conditions = check_conditions(spec.conditions, space)
        known = set(space.names) | set(self.default_conditions)
        self.command = check_command(spec.command, known)
        self.templates, self._template_text = read_templates(spec.templates, known)
        self.files = check_files(spec.files, self.templates)
        self.outputs = check_outputs(spec.outputs)
        self.parser_spec, self._parser = check_parser(spec.parser, self.outputs)
        self.channels = make_channels(spec.channels, spec.parser, self.outputs)
        self.timeout = check_timeout(spec.timeout)
        self.keep: Keep = check_keep(spec.keep)
        self.output_limit, self.max_failed_dirs, self.max_failed_bytes, self.max_workers = check_limits(spec)
        self.workdir_root = workdir_root(spec.workdir_root)
        self.env = {str(k): str(v) for k, v in (spec.env or {}).items()}
        self.presets = make_presets(spec.presets, space)

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
