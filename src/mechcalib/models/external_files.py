"""Templates, file names and parser specs of external models (see :mod:`mechcalib.models.external`): the
placeholder syntax, the numbers written into files, and the rules a definition's names follow."""

from __future__ import annotations

import importlib
import importlib.util
import math
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import numpy as np

from ..errors import ConfigurationError
from .external_process import FAILURE_TXT

PLACEHOLDER_RE = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
SINGLE_TOKEN_RE = re.compile(r"(?<!\{)\{([^{}]*)\}(?!\})")
_NUMBER_RE = re.compile(r"^-?\d+(\.\d+)?(e[+-]\d+)?$")
PYTHON_TOKEN = "{python}"
STDOUT_LOG, STDERR_LOG, PARAMS_JSON = "stdout.log", "stderr.log", "parameters.json"
RESERVED_NAMES = (STDOUT_LOG, STDERR_LOG, PARAMS_JSON, FAILURE_TXT)  # files mechcalib writes in a working directory


class ExternalSetupError(ConfigurationError):
    """A definition of an external model breaks a rule. ``field`` is the offending setting (a dotted
    path below the model, such as ``templates.params.txt``), ``expected`` and ``found`` say why."""

    def __init__(self, field: str | tuple, expected: str, found: str):
        self.parts = field if isinstance(field, tuple) else (field,)
        self.field = ".".join(map(str, self.parts))
        self.expected, self.found = expected, found
        super().__init__(f"external model: `{self.field}`: expected {expected}; got {found}")


def format_number(value: Any, what: str) -> str:
    """``repr(float(value))``; refuses anything that is not a finite real number.

    ``repr`` of a Python float round-trips exactly and is only digits, a sign, a point and an exponent,
    so nothing but a number can reach a template or an argument."""
    if isinstance(value, bool | str | bytes) or value is None:
        raise ConfigurationError(f"{what} must be a finite number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigurationError(f"{what} must be a finite number, got {value!r}") from None
    if not math.isfinite(v):
        raise ConfigurationError(f"{what} must be a finite number, got {v!r}; non-finite values are not written")
    text = repr(v)
    if not _NUMBER_RE.match(text):  # pragma: no cover - repr(float) always matches
        raise ConfigurationError(f"{what}: {text!r} is not a plain number")
    return text


def placeholders(text: str) -> list[str]:
    """The placeholder names of a template text, stripped, in order of appearance (with repeats)."""
    return [m.group(1).strip() for m in PLACEHOLDER_RE.finditer(text)]


def fill_template(text: str, values: Mapping[str, Any], *, where: str = "template") -> str:
    """Replace every ``{{ name }}`` by ``repr(float(values[name]))``.

    Raises :class:`ConfigurationError` for a placeholder that ``values`` does not name, and for a value
    that is not a finite number."""
    formatted: dict[str, str] = {}

    def sub(m: re.Match) -> str:
        name = m.group(1).strip()
        if name not in values:
            raise ConfigurationError(
                f"{where}: placeholder {m.group(0)!r} names no parameter or condition; valid names are {sorted(values)}"
            )
        if name not in formatted:
            formatted[name] = format_number(values[name], f"{where}: value of {name!r}")
        return formatted[name]

    return PLACEHOLDER_RE.sub(sub, text)


def relative_name(name: str, field: str | tuple) -> str:
    """A file name that stays inside the working directory (no absolute path, no ``..``)."""
    if not isinstance(name, str) or not name.strip():
        raise ExternalSetupError(field, "a file name relative to the working directory", repr(name))
    for pure in (PurePosixPath(name), PureWindowsPath(name)):
        if pure.is_absolute() or pure.drive or ".." in pure.parts:
            raise ExternalSetupError(
                field, "a file name relative to the working directory (no absolute path, no '..')", repr(name)
            )
    return name


def template_target(name: str, field: tuple) -> str:
    """A template's target: a file name inside the working directory, not ``"."``, a folder or a file
    mechcalib writes itself."""
    relative_name(name, field)
    last = re.split(r"[\\/]", name)[-1]
    if last in ("", ".", ".."):
        raise ExternalSetupError(
            field,
            "the name of the file the template is written to, such as 'params.txt' (a folder or '.' is not a file)",
            repr(name),
        )
    if name in RESERVED_NAMES:
        raise ExternalSetupError(field, f"a file name other than mechcalib's own {list(RESERVED_NAMES)}", repr(name))
    return name


def positive_int(value: Any, field: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ExternalSetupError(field, f"an integer >= {minimum}", repr(value))
    return int(value)


def load_callable(spec: str) -> Callable:
    """``"module.sub:function"`` or ``"/path/to/file.py:function"`` -> the function."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ConfigurationError(
            f"a parser is given as 'package.module:function' or 'path/to/file.py:function', got {spec!r}"
        )
    target, _, func = spec.rpartition(":")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise ConfigurationError(f"parser file {str(path)!r} does not exist (from {spec!r})")
        mod_name = f"_mechcalib_parser_{abs(hash(str(path.resolve())))}"
        module = sys.modules.get(mod_name)
        if module is None:
            s = importlib.util.spec_from_file_location(mod_name, path)
            if s is None or s.loader is None:  # pragma: no cover - a .py file always has a loader
                raise ConfigurationError(f"cannot import parser file {str(path)!r}")
            module = importlib.util.module_from_spec(s)
            s.loader.exec_module(module)
            sys.modules[mod_name] = module
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise ConfigurationError(f"cannot import parser module {target!r} (from {spec!r}): {exc}") from None
    fn = getattr(module, func, None)
    if not callable(fn):
        raise ConfigurationError(f"parser {spec!r}: {target!r} has no function {func!r}")
    return fn
