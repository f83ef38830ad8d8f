"""One registry of named classes, extensible by plug-ins.

A :class:`Registry` maps names to classes (models, optimisers, objectives, evaluators, inverse networks).
Built-in entries are ``"package.module:Class"`` strings imported on first lookup, so that listing names
imports nothing heavy. Installed distributions add entries through ``importlib.metadata`` entry points
(for example the group ``mechcalib.models``), discovered on the first listing or on a lookup the built-in
names do not answer, and each imported only when looked up. :meth:`Registry.resolve` also accepts a
``"package.module:Class"`` target that is not registered, which is how a configuration file names a
user's own class.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar, overload

from .errors import ConfigurationError

T = TypeVar("T")

__all__ = ["Registry", "UnknownNameError", "import_target"]


class UnknownNameError(ConfigurationError, KeyError):
    """A name no registry entry answers; a :class:`KeyError` too, so that mapping-style lookups keep working."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def _is_target(text: str) -> bool:
    module, sep, attr = text.partition(":")
    return bool(sep and module and attr)


def import_target(target: str, *, kind: str = "object", base: type | None = None) -> Any:
    """Import ``"package.module:Attr"`` (``Attr`` may be dotted); each failure says what to fix."""
    module_name, sep, attr = target.partition(":")
    if not (sep and module_name and attr):
        raise ConfigurationError(f"a {kind} target must read 'package.module:Class', got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name != exc.name and not module_name.startswith(exc.name + "."):
            # the module exists but one of its own imports is missing: that error is the user's to see
            raise ConfigurationError(
                f"the {kind} target {target!r}: importing module {module_name!r} failed: {exc}"
            ) from exc
        raise ConfigurationError(
            f"the {kind} target {target!r}: no module named {module_name!r}; install the package that provides it "
            "or put its folder on the Python path (PYTHONPATH)"
        ) from exc
    except Exception as exc:
        raise ConfigurationError(
            f"the {kind} target {target!r}: importing module {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            public = sorted(n for n in dir(module) if not n.startswith("_"))
            raise ConfigurationError(
                f"the {kind} target {target!r}: module {module_name!r} has no attribute {attr!r}; it defines {public}"
            ) from None
    _check_base(obj, base, kind, f"the {kind} target {target!r}")
    return obj


def _check_base(obj: Any, base: type | None, kind: str, what: str) -> None:
    if base is None:
        return
    if not (isinstance(obj, type) and issubclass(obj, base)):
        got = (
            f"class {obj.__module__}.{obj.__qualname__}"
            if isinstance(obj, type)
            else f"{obj!r} (a {type(obj).__name__})"
        )
        raise ConfigurationError(
            f"{what} must be a subclass of {base.__module__}.{base.__qualname__}, got {got}; "
            f"a {kind} class derives from {base.__qualname__}"
        )


class Registry(Generic[T]):
    """Names of one kind of class (``kind``: "model", "optimizer", ...), each a subclass of ``base``.

    Args:
        kind: the word used in messages.
        base: every entry must be a subclass of it (``None``: no check).
        entries: ``{name: class or "package.module:Class"}``, the built-in entries in listing order.
        group: the entry-point group that installed distributions extend it through.
        case_insensitive: names are looked up in lower case (optimisers, evaluators).
    """

    def __init__(
        self,
        kind: str,
        *,
        base: type | None = None,
        entries: Mapping[str, T | str] | None = None,
        group: str | None = None,
        case_insensitive: bool = False,
    ) -> None:
        self.kind, self.base, self.group, self.case_insensitive = kind, base, group, case_insensitive
        self._entries: dict[str, T | str] = {}  # built-in and registered: a class, or a target not yet imported
        self._plugins: dict[str, EntryPoint] | None = None  # None until the entry points are read
        self._loaded: dict[str, T] = {}  # plug-ins already imported
        for name, obj in (entries or {}).items():
            self.register(name, obj)

    # -- registration -----------------------------------------------------------------------------------
    def _key(self, name: str) -> str:
        return name.lower() if self.case_insensitive else name

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, obj: T | str) -> T | str: ...

    def register(self, name: str, obj: Any = None) -> Any:
        """Register a class (or a lazy ``"module:Class"`` target) under ``name``; without ``obj``, a decorator."""
        if obj is None:
            return lambda cls: self.register(name, cls)
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        if isinstance(obj, str):
            if not _is_target(obj):
                raise ConfigurationError(f"a lazy {self.kind} entry must read 'package.module:Class', got {obj!r}")
        else:
            _check_base(obj, self.base, self.kind, f"the {self.kind} registered as {name!r}")
        self._entries[self._key(name)] = obj
        return obj

    def unregister(self, name: str) -> None:
        key = self._key(name)
        if key not in self._entries:
            raise UnknownNameError(
                f"no {self.kind} {name!r} is registered; registered names are {sorted(self._entries)}"
            )
        del self._entries[key]

    def refresh(self) -> None:
        """Forget the entry points read so far (after installing a distribution, or in tests)."""
        self._plugins = None
        self._loaded.clear()

    # -- plug-ins ---------------------------------------------------------------------------------------
    def _read_plugins(self) -> dict[str, EntryPoint]:
        if self._plugins is None:
            found: dict[str, EntryPoint] = {}
            for ep in entry_points(group=self.group) if self.group else ():
                key = self._key(ep.name)
                if key in self._entries:
                    warnings.warn(
                        f"{_origin(ep)} declares the {self.kind} {ep.name!r}, which is already a built-in "
                        f"name; the built-in one is kept (rename the entry point)",
                        stacklevel=3,
                    )
                    continue
                found.setdefault(key, ep)
            self._plugins = found
        return self._plugins

    def _load_plugin(self, key: str, ep: EntryPoint) -> T:
        if key not in self._loaded:
            try:
                obj = ep.load()
            except Exception as exc:
                raise ConfigurationError(
                    f"the {self.kind} {ep.name!r} declared by {_origin(ep)} cannot be loaded: {type(exc).__name__}: "
                    f"{exc}; fix that distribution or uninstall it"
                ) from exc
            _check_base(obj, self.base, self.kind, f"the {self.kind} {ep.name!r} declared by {_origin(ep)}")
            self._loaded[key] = obj
        return self._loaded[key]

    # -- lookup -----------------------------------------------------------------------------------------
    def names(self) -> tuple[str, ...]:
        """Every name: the built-in ones in registration order, then the plug-ins'."""
        return (*self._entries, *(k for k in self._read_plugins() if k not in self._entries))

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        key = self._key(name)
        return key in self._entries or key in self._read_plugins()

    def get(self, name: str) -> T:
        """The class registered as ``name``; an unknown name raises :class:`UnknownNameError` listing the valid ones."""
        key = self._key(name) if isinstance(name, str) else name
        if key in self._entries:
            obj = self._entries[key]
            if isinstance(obj, str):
                obj = import_target(obj, kind=self.kind, base=self.base)
                self._entries[key] = obj
            return obj
        ep = self._read_plugins().get(key) if isinstance(key, str) else None
        if ep is not None:
            return self._load_plugin(key, ep)
        raise UnknownNameError(f"unknown {self.kind} {name!r}; valid names are {sorted(self.names())}")

    __getitem__ = get

    def __setitem__(self, name: str, obj: T | str) -> None:
        self.register(name, obj)

    def __delitem__(self, name: str) -> None:
        self.unregister(name)

    def resolve(self, name_or_target: str | T) -> T:
        """A registered name, a ``"package.module:Class"`` target (registered or not), or a class itself."""
        if isinstance(name_or_target, str):
            if name_or_target in self or not _is_target(name_or_target):
                return self.get(name_or_target)
            return import_target(name_or_target, kind=self.kind, base=self.base)
        _check_base(name_or_target, self.base, self.kind, f"the {self.kind} {name_or_target!r}")
        return name_or_target

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, names={list(self._entries)}, group={self.group!r})"


def _origin(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    who = f"distribution {dist.name!r} {dist.version}" if dist is not None else "an installed distribution"
    return f"{who} (entry point {ep.name} = {ep.value!r} in group {ep.group!r})"
