"""What an external model is made of (:class:`ExternalSpec`, one record shared by the ``[model.external]``
section of a configuration and :class:`~mechcalib.models.external.ExternalModel`) and the checks that turn
it into the model's settings, one function per group of settings (see :mod:`mechcalib.models.external`)."""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..core.data import Curve
from ..core.model import Channel
from ..core.parameters import ParameterSpace
from ..errors import ConfigurationError
from .external_files import (
    PLACEHOLDER_RE,
    PYTHON_TOKEN,
    SINGLE_TOKEN_RE,
    ExternalSetupError,
    format_number,
    load_callable,
    placeholders,
    positive_int,
    relative_name,
    template_target,
)
from .external_process import DEFAULT_MAX_FAILED_BYTES, DEFAULT_MAX_FAILED_DIRS, DEFAULT_OUTPUT_LIMIT

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


@dataclass(frozen=True, kw_only=True)
class ExternalSpec:
    """The definition of an external simulator, as the ``[model.external]`` section of a configuration
    gives it; :class:`~mechcalib.models.external.ExternalModel` checks it against the parameter space.

    Args:
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
        max_workers: runs of one batch executed at the same time (threads waiting on processes).
        conditions: default numeric conditions, usable as placeholders; experiments override them.
        presets: ``{preset: {parameter: value}}``; default: the bounds' midpoints (geometric for log scale)
            and the fixed values.
        name: label used in messages and working-directory names.
        env: extra environment variables for the program.
        output_limit: bytes of each of stdout and stderr kept in the logs (the last ones; default 1 MiB).
        max_failed_dirs: failed working directories kept at most (the oldest are deleted first; default 20).
        max_failed_bytes: total size of the failed working directories kept (default 1 GiB).
    """

    command: Sequence[str]
    templates: Mapping[str, str | os.PathLike] | None = None
    files: Sequence[str | os.PathLike] = ()
    outputs: Mapping[str, CsvOutput] | None = None
    parser: Parser | str | None = None
    channels: Sequence[str] | None = None
    timeout: float | None = None
    workdir_root: str | os.PathLike | None = None
    keep: Keep = "failed"
    max_workers: int = 1
    conditions: Mapping[str, float] | None = None
    presets: Mapping[str, Mapping[str, float]] | None = None
    name: str = "external"
    env: Mapping[str, str] | None = None
    output_limit: int = DEFAULT_OUTPUT_LIMIT
    max_failed_dirs: int = DEFAULT_MAX_FAILED_DIRS
    max_failed_bytes: int = DEFAULT_MAX_FAILED_BYTES


# -- the checks, in the order the model runs them (the first broken rule is the one reported) ---------------
def check_name(name: Any) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ExternalSetupError("name", "letters, digits, '_', '.' or '-'", repr(name))
    return name


def check_conditions(conditions: Mapping[str, Any] | None, space: ParameterSpace) -> dict[str, float]:
    """The default conditions as floats: identifiers, not parameter names, finite numbers."""
    out = {}
    for k, v in (conditions or {}).items():
        if not str(k).isidentifier():
            raise ExternalSetupError(("conditions", k), "an identifier as condition name", repr(k))
        if k in space.names:
            raise ExternalSetupError(("conditions", k), "a name that is not also a parameter", repr(k))
        try:
            format_number(v, f"condition {k!r}")
        except ConfigurationError:
            raise ExternalSetupError(("conditions", k), "a finite number", repr(v)) from None
        out[k] = float(v)
    return out


def check_command(command: Any, known: set[str]) -> tuple[str, ...]:
    """The argument list: non-empty strings whose placeholders name ``known`` values, with no other token
    than a whole argument ``{python}`` (never a shell string)."""
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
    return tuple(cmd)


def read_templates(
    templates: Mapping[str, str | os.PathLike] | None, known: set[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """``({target: template path}, {target: template text})``: readable text files whose placeholders name
    ``known`` values."""
    paths: dict[str, str] = {}
    texts: dict[str, str] = {}
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
        paths[target] = str(path)
        texts[target] = text
    return paths, texts


def check_files(files: Sequence[str | os.PathLike], templates: Mapping[str, str]) -> tuple[str, ...]:
    """The support files: existing, and not named as a template's target."""
    fs = []
    for i, f in enumerate(files):
        p = Path(f)
        if not p.exists():
            raise ExternalSetupError(("files", i), "an existing file or folder", f"{str(p)!r} (not found)")
        if p.name in templates:
            raise ExternalSetupError(("files", i), "a name no template writes", repr(p.name))
        fs.append(str(p))
    return tuple(fs)


def check_outputs(outputs: Mapping[str, Any] | None) -> dict[str, CsvOutput]:
    out: dict[str, CsvOutput] = {}
    for ch, spec in (outputs or {}).items():
        if not isinstance(spec, CsvOutput):
            raise ExternalSetupError(("outputs", ch), "a CsvOutput", type(spec).__name__)
        relative_name(spec.file, ("outputs", ch, "file"))
        out[ch] = spec
    return out


def check_parser(parser: Parser | str | None, outputs: Mapping[str, CsvOutput]) -> tuple[str | None, Parser | None]:
    """``(parser spec, parser)``: either CSV outputs or a parser; a spec is imported now to check it."""
    if parser is not None and outputs:
        raise ExternalSetupError("parser", "either outputs (CSV columns) or a parser, not both", "both")
    if parser is None and not outputs:
        raise ExternalSetupError("outputs", "at least one output channel, or a parser", "neither")
    parser_spec = parser if isinstance(parser, str) else None
    loaded: Parser | None = None if isinstance(parser, str) else parser
    if parser_spec is not None:
        try:
            loaded = load_callable(parser_spec)
        except ConfigurationError as exc:
            raise ExternalSetupError(
                "parser",
                "an importable function 'module:function' or 'file.py:function'",
                f"{parser_spec!r} ({exc})",
            ) from None
    if parser is not None and loaded is not None and not callable(loaded):
        raise ExternalSetupError("parser", "a callable parse(workdir) -> {channel: Curve}", repr(parser))
    return parser_spec, loaded


def make_channels(
    channels: Sequence[str] | None, parser: Parser | str | None, outputs: Mapping[str, CsvOutput]
) -> tuple[Channel, ...]:
    """The model's channels: those a parser returns, or the CSV outputs (labelled by their columns)."""
    if channels is None:
        if parser is not None:
            raise ExternalSetupError("channels", "the channel names the parser returns", "nothing")
        channels = list(outputs)
    elif outputs and list(channels) != list(outputs):
        raise ExternalSetupError("channels", f"the output channels {list(outputs)} or nothing", repr(list(channels)))
    if not channels or len(set(channels)) != len(channels):
        raise ExternalSetupError("channels", "a non-empty list of distinct channel names", repr(list(channels)))
    return tuple(
        Channel(
            ch,
            outputs[ch].x if ch in outputs else "x",
            outputs[ch].y if ch in outputs else ch,
            (outputs[ch].x_unit or "") if ch in outputs else "",
            (outputs[ch].y_unit or "") if ch in outputs else "",
        )
        for ch in channels
    )


def check_timeout(timeout: Any) -> float | None:
    if timeout is not None:
        try:
            ok = not isinstance(timeout, bool) and math.isfinite(float(timeout)) and float(timeout) > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ExternalSetupError("timeout", "a positive number of seconds or None", repr(timeout))
    return None if timeout is None else float(timeout)


def check_keep(keep: Any) -> Keep:
    if keep not in ("all", "failed", "none"):
        raise ExternalSetupError("keep", "one of 'all', 'failed', 'none'", repr(keep))
    return keep


def check_limits(spec: ExternalSpec) -> tuple[int, int, int, int]:
    """``(output_limit, max_failed_dirs, max_failed_bytes, max_workers)``."""
    output_limit = positive_int(spec.output_limit, "output_limit", 1024)
    max_failed_dirs = positive_int(spec.max_failed_dirs, "max_failed_dirs", 0)
    max_failed_bytes = positive_int(spec.max_failed_bytes, "max_failed_bytes", 0)
    workers = spec.max_workers
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ExternalSetupError("max_workers", "an integer >= 1", repr(workers))
    return output_limit, max_failed_dirs, max_failed_bytes, workers


def workdir_root(root: str | os.PathLike | None) -> str:
    return str(Path(root) if root is not None else Path(tempfile.gettempdir()) / "mechcalib-external")


def make_presets(
    presets: Mapping[str, Mapping[str, float]] | None, space: ParameterSpace
) -> dict[str, dict[str, float]]:
    """The presets completed with the centre of the space (the bounds' midpoints, geometric for a log
    scale, and the fixed values), which is also the ``default`` preset unless one is given."""
    out = {}
    for pname, vals in (presets or {}).items():
        unknown = sorted(set(vals) - set(space.names))
        if unknown:
            raise ExternalSetupError(
                ("presets", pname), f"values for parameters {list(space.names)}", f"unknown {unknown}"
            )
        out[pname] = {k: float(v) for k, v in vals.items()}
    centre = {p.name: p.fixed if p.is_fixed else float(p.from_unit(0.5)) for p in space}
    for pname in list(out):
        out[pname] = {**centre, **out[pname]}
    out.setdefault("default", centre)
    return out
