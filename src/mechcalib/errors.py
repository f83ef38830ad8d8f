"""Package exceptions. Each subclasses a builtin so callers may catch ``ValueError``/``TypeError``."""

from __future__ import annotations


class MechcalibError(Exception):
    """Base class of every mechcalib error."""


class ConfigurationError(MechcalibError, ValueError):
    """A definition (parameter, experiment, objective, optimiser setting) breaks a rule.

    Messages follow the pattern: the rule, the value received, how to fix it.
    """


class DataError(MechcalibError, ValueError):
    """Measured or simulated data cannot be used as given (NaN, too short, mismatched lengths...)."""


class MissingExtraError(MechcalibError, ImportError):
    """An optional dependency is needed; the message names the extra to install."""


def require(module: str, extra: str):
    """Import an optional dependency lazily, or say which extra provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(
            f"this feature needs the optional package {module!r}; install it with "
            f"`pip install 'mechcalib[{extra}]'`"
        ) from exc
