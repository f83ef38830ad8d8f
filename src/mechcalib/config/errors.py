"""Configuration errors: issue records, and the translation of pydantic's and the package's errors into them.

Every issue names the key path, what was expected and what was found. Settings checks elsewhere in the package
raise :class:`~mechcalib.errors.SettingError` with those fields, so that an issue lands on the setting's own key
without reading the message text.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import BaseModel, Tag, ValidationError
from pydantic_core import PydanticCustomError

from ..errors import ConfigurationError, SettingError

__all__ = ["ConfigFileError", "ConfigIssue", "issue_from_error"]


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in a configuration: the key path, what was expected and what was found."""

    key: str
    expected: str
    found: str

    def __str__(self) -> str:
        return f"`{self.key}`: expected {self.expected}; got {self.found}"


class ConfigFileError(ConfigurationError):
    """A configuration breaks one or more rules; ``issues`` lists them, ``source`` names the file."""

    def __init__(self, issues: list[ConfigIssue], source: str | Path | None = None):
        self.issues = list(issues)
        self.source = None if source is None else str(source)
        head = f"invalid configuration {self.source}" if self.source else "invalid configuration"
        super().__init__(head + ":\n" + "\n".join(f"  - {i}" for i in self.issues))


def _found(value: Any) -> str:
    """A TOML-worded description of a value."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, int):
        return f"{value} (an integer)"
    if isinstance(value, float):
        return f"{value!r} (a float)"
    if isinstance(value, str):
        return f"{value!r} (a string)"
    if isinstance(value, Mapping):
        return f"a table with keys {sorted(map(str, value))}"
    if isinstance(value, list | tuple):
        text = repr(list(value))
        return f"an array {text if len(text) <= 80 else text[:77] + '...'}"
    return f"{value!r} (a {type(value).__name__})"


def _key(*parts: Any) -> str:
    """``("experiments", 0, "channels", "force")`` -> ``experiments[0].channels.force``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            p = str(p)
            seg = p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else f'"{p}"'
            out += seg if not out else "." + seg
    return out


def issue_from_error(
    exc: ConfigurationError, prefix: tuple, given: Mapping[str, Any], fallback_key: tuple
) -> ConfigIssue:
    """An issue from a component's constructor error: on the setting's key when a :class:`SettingError`
    names a setting the file gives, else on ``fallback_key`` with the whole message."""
    if isinstance(exc, SettingError) and exc.name in given:
        return ConfigIssue(_key(*prefix, exc.name), exc.expected, _found(exc.got))
    return ConfigIssue(_key(*fallback_key), "a valid setting", str(exc))


_EXPECTED = {
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "list_type": "an array",
    "tuple_type": "an array",
    "missing": "a value (the key is required)",
    "greater_than": "a value > {gt}",
    "greater_than_equal": "a value >= {ge}",
    "less_than": "a value < {lt}",
    "less_than_equal": "a value <= {le}",
    "literal_error": "one of {expected}",
    "too_short": "at least {min_length} item(s)",
    "too_long": "at most {max_length} item(s)",
    "union_tag_invalid": "`kind` one of {expected_tags}",
    "union_tag_not_found": "a `kind` key",
}


def _unwrap(tp: Any) -> Any:
    """Strip Annotated and Optional; a discriminated union becomes ``{tag: model}``."""
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tagged = {}
            for a in args:
                if typing.get_origin(a) is Annotated:
                    for meta in typing.get_args(a)[1:]:
                        if isinstance(meta, Tag):
                            tagged[meta.tag] = typing.get_args(a)[0]
            if tagged:
                return tagged
            if len(args) == 1:
                tp = args[0]
                continue
        return tp


def _walk(root: type[BaseModel], loc: tuple) -> tuple[tuple, type[BaseModel] | None]:
    """Clean a pydantic ``loc`` (drop union tags) and find the model holding its last key."""
    tp: Any = root
    parts: list[Any] = []
    parent = None
    for item in loc:
        tp = _unwrap(tp)
        if isinstance(tp, dict):
            if item in tp:
                tp = tp[item]
                continue
            tp = None
        if isinstance(item, int):
            parts.append(item)
            args = typing.get_args(tp) if tp is not None else ()
            tp = args[0] if args else None
            continue
        parts.append(item)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            parent = tp
            f = tp.model_fields.get(item)
            tp = f.annotation if f is not None else None
        elif typing.get_origin(tp) in (dict, Mapping):
            parent = None
            tp = typing.get_args(tp)[1]
        else:
            parent = None
            tp = None
    return tuple(parts), parent


def _issues_from_validation(exc: ValidationError, root: type[BaseModel], prefix: tuple = ()) -> list[ConfigIssue]:
    out = []
    for e in exc.errors():
        loc, parent = _walk(root, tuple(e["loc"]))
        ctx = e.get("ctx") or {}
        if e["type"] == "config":
            key = _key(*prefix, *loc, *ctx.get("key", ()))
            out.append(ConfigIssue(key, ctx["expected"], ctx["found"]))
            continue
        if e["type"] == "extra_forbidden":
            valid = sorted(parent.model_fields) if parent is not None else []
            out.append(ConfigIssue(_key(*prefix, *loc), f"one of the known keys {valid}", f"unknown key {loc[-1]!r}"))
            continue
        if e["type"] in ("value_error", "assertion_error"):
            expected = str(ctx.get("error", e["msg"]))
        else:
            template = _EXPECTED.get(e["type"])
            try:
                expected = template.format(**ctx) if template else e["msg"]
            except (KeyError, IndexError):
                expected = e["msg"]
        found = "nothing" if e["type"] == "missing" else _found(e.get("input"))
        if e["type"] in ("union_tag_invalid", "union_tag_not_found") and isinstance(e.get("input"), Mapping):
            found = _found(e["input"].get("kind"))
        out.append(ConfigIssue(_key(*prefix, *loc), expected, found))
    return out


def _fail(expected: str, found: str, key: tuple = ()) -> PydanticCustomError:
    return PydanticCustomError(
        "config", "expected {expected}; got {found}", {"expected": expected, "found": found, "key": key}
    )
