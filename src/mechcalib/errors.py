"""Package exceptions. Each subclasses a builtin so callers may catch ``ValueError``/``TypeError``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


class MechcalibError(Exception):
    """Base class of every mechcalib error."""


class ConfigurationError(MechcalibError, ValueError):
    """A definition (parameter, experiment, objective, optimiser setting) breaks a rule.

    Messages follow the pattern: the rule, the value received, how to fix it.
    """


class SettingError(ConfigurationError):
    """One setting of a component (an optimiser, an objective, a model option) breaks its rule.

    ``owner`` names the component, ``name`` the setting, ``expected`` what it must be (worded to follow
    "expected", e.g. "an integer >= 1") and ``got`` the value received; configuration files report it on the
    setting's own key from these fields. ``message`` replaces the default text
    ``"owner: name must be expected, got got!r"``.
    """

    def __init__(self, owner: str, name: str, expected: str, got: object, *, message: str | None = None) -> None:
        self.owner, self.name, self.expected, self.got = owner, name, expected, got
        if message is None:
            message = f"{owner + ': ' if owner else ''}{name} must be {expected}, got {got!r}"
        self.message = message
        super().__init__(message)

    def __reduce__(self):  # pickles across worker processes despite the keyword-only message
        return (_setting_error, (self.owner, self.name, self.expected, self.got, self.message))


def _setting_error(owner: str, name: str, expected: str, got: object, message: str) -> SettingError:
    return SettingError(owner, name, expected, got, message=message)


class DataError(MechcalibError, ValueError):
    """Measured or simulated data cannot be used as given (NaN, too short, mismatched lengths...)."""


class InfrastructureError(MechcalibError, RuntimeError):
    """The machine, not the parameter set, made an evaluation fail: a full disk, no memory, a program that
    cannot start. It is not recorded against the parameter set: the run stops with every evaluation done so
    far stored, and resuming it (once the cause is fixed) evaluates that set again."""


class MissingExtraError(MechcalibError, ImportError):
    """An optional dependency is needed; the message names the extra to install."""


def require(module: str, extra: str):
    """Import an optional dependency lazily, or say which extra provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(
            f"this feature needs the optional package {module!r}; install it with `pip install 'mechcalib[{extra}]'`"
        ) from exc


@contextlib.contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Name ``path`` on an ``OSError`` raised while writing it. A failed ``write`` (a full disk, a quota)
    raises an error with no file name, so the message could name neither the file nor its disk."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno), os.fspath(path)) from exc
        raise
