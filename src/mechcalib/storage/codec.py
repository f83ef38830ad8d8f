"""Encodings used by the run store: JSON of settings, compressed responses, fingerprints, cache keys."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import pickle
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core.data import Curve
from ..version import __version__


def to_jsonable(v: Any) -> Any:
    """Settings and configs -> JSON-compatible values (numpy scalars and arrays, tuples, paths...)."""
    if isinstance(v, Mapping):
        return {str(k): to_jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [to_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return to_jsonable(v.tolist())
    if isinstance(v, np.generic):
        return v.item()
    if v is None or isinstance(v, bool | int | float | str):
        return v
    return repr(v)


def dumps(v: Any) -> str:
    """Canonical JSON (sorted keys; floats round-trip exactly; inf/NaN allowed as in Python's json)."""
    return json.dumps(to_jsonable(v), sort_keys=True)


# -- responses ----------------------------------------------------------------------------------
_CURVE_FIELDS = ("x_name", "y_name", "x_unit", "y_unit")


def encode_response(resp: Any, level: int = 6) -> bytes | None:
    """A response (``{experiment: {channel: Curve}}``, arrays, nested mappings) -> a zlib-compressed
    ``numpy.savez`` archive. Curves keep their labels; values that are neither mappings, curves nor
    array-like are pickled. ``None`` -> ``None``."""
    if resp is None:
        return None
    arrays: dict[str, np.ndarray] = {}
    meta: dict[str, Any] = {}

    def walk(v: Any, path: str) -> None:
        if isinstance(v, Curve):
            arrays[path + "/x"], arrays[path + "/y"] = v.x, v.y
            if v.t is not None:
                arrays[path + "/t"] = v.t
            meta[path] = {"kind": "curve", **{f: getattr(v, f) for f in _CURVE_FIELDS}, "t": v.t is not None}
        elif isinstance(v, Mapping):
            meta[path] = {"kind": "dict", "keys": [str(k) for k in v]}
            for k, x in v.items():
                walk(x, f"{path}/{k}" if path else str(k))
        else:
            try:
                a = np.asarray(v)
                if a.dtype == object:
                    raise TypeError
                arrays[path or "value"] = a
                meta[path or "value"] = {"kind": "array"}
            except (TypeError, ValueError):
                arrays[path or "value"] = np.frombuffer(pickle.dumps(v), dtype=np.uint8)
                meta[path or "value"] = {"kind": "pickle"}

    walk(resp, "")
    buf = io.BytesIO()
    np.savez(buf, __meta__=np.array(json.dumps(meta)), **arrays)  # type: ignore[arg-type]  # numpy stub
    return zlib.compress(buf.getvalue(), level)


def decode_response(blob: bytes | None) -> Any:
    """Inverse of :func:`encode_response`."""
    if blob is None:
        return None
    with np.load(io.BytesIO(zlib.decompress(blob)), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("__meta__")))

    def build(path: str) -> Any:
        m = meta[path]
        kind = m["kind"]
        if kind == "curve":
            return Curve(
                arrays[path + "/x"],
                arrays[path + "/y"],
                t=arrays.get(path + "/t") if m["t"] else None,
                **{f: m[f] for f in _CURVE_FIELDS},
            )
        if kind == "dict":
            return {k: build(f"{path}/{k}" if path else k) for k in m["keys"]}
        if kind == "pickle":
            return pickle.loads(arrays[path].tobytes())
        return arrays[path]

    return build("value" if "value" in meta and "" not in meta else "")


def flatten_response(resp: Any, prefix: str = "") -> dict[str, np.ndarray]:
    """``{"exp/channel/y": array, ...}``: the arrays of a response by path (for dataset exports)."""
    out: dict[str, np.ndarray] = {}
    if isinstance(resp, Curve):
        out[prefix + "/x"], out[prefix + "/y"] = resp.x, resp.y
        if resp.t is not None:
            out[prefix + "/t"] = resp.t
    elif isinstance(resp, Mapping):
        for k, v in resp.items():
            out.update(flatten_response(v, f"{prefix}/{k}" if prefix else str(k)))
    elif resp is not None:
        a = np.asarray(resp)
        if a.dtype != object:
            out[prefix or "value"] = a
    return out


# -- identities ---------------------------------------------------------------------------------
class _CanonicalPickler(pickle._Pickler):  # the pure-Python pickler (its dict writing can be overridden)
    """A pickler that writes every dict's items sorted by key, so that two equal problems built from
    mappings in another order (a config's ``conditions`` as written, or as stored with sorted keys) give one
    fingerprint. Only hashed, never loaded."""

    def _batch_setitems(self, items: Any, *args: Any) -> None:
        items = list(items)
        with contextlib.suppress(TypeError):  # keys that do not order: keep the insertion order
            items = sorted(items, key=lambda kv: (type(kv[0]).__qualname__, kv[0]))
        super()._batch_setitems(iter(items), *args)  # type: ignore[misc]  # private in the stubs


def _canonical_pickle(obj: Any, *, shared: bool = False) -> bytes:
    """The canonical pickle, with every object written in full where it occurs (the pickler's "fast" mode,
    no memo): an array that two curves share by reference and equal copies of it give the same bytes. That
    sharing is an accident of how a model builds its response (NumPy returns the array itself or a new view
    depending on its dtype object), not a property of the problem. A structure with a cycle cannot be written
    that way; it is written with the memo (``shared=True`` forces that, the form of earlier versions)."""
    if not shared:
        buf = io.BytesIO()
        pickler = _CanonicalPickler(buf, protocol=4)
        pickler.fast = True
        try:
            pickler.dump(obj)
            return buf.getvalue()
        except RecursionError:
            pass
    buf = io.BytesIO()
    _CanonicalPickler(buf, protocol=4).dump(obj)
    return buf.getvalue()


def problem_fingerprint(problem: Any, *, legacy: bool = False) -> str | None:
    """A hash that identifies a problem (model, experiments, objective, space, penalty) for the cache.

    A problem's ``fingerprint()`` (declared by :class:`~mechcalib.core.problem.ProblemLike`) may return a
    string itself; when it returns ``None`` the hash is taken over the problem's canonical pickle (every
    mapping's keys sorted, every object written in full where it occurs; cloudpickle for lambdas) and the
    package version, so neither the order in which a configuration lists its keys nor which arrays happen to
    be shared by reference matters. Code is pickled by reference, so after changing a model's code give the
    run a new name or the problem a ``fingerprint`` that says so. ``None`` when the problem cannot be
    pickled (then the cache only serves the run itself).

    ``legacy=True`` gives the hash of the first versions (the plain pickle, in insertion order);
    :func:`earlier_fingerprints` lists every form earlier versions wrote, which a resumed run accepts.
    """
    return _fingerprint(problem, "legacy" if legacy else "canonical")


def earlier_fingerprints(problem: Any) -> tuple[str, ...]:
    """The hashes earlier versions stored for this problem: the canonical pickle with shared objects written
    once (which depended on how a model aliased its arrays), and the plain pickle in insertion order."""
    found = (_fingerprint(problem, "shared"), _fingerprint(problem, "legacy"))
    return tuple(f for f in found if f is not None)


def _fingerprint(problem: Any, form: str) -> str | None:
    custom = problem.fingerprint()
    if custom is not None:
        return "custom:" + str(custom)
    data: bytes | None = None
    if form != "legacy":
        try:
            data = _canonical_pickle(problem, shared=form == "shared")
        except Exception:
            data = None
    if data is None:
        try:
            data = pickle.dumps(problem, protocol=4)
        except Exception:
            try:
                import cloudpickle

                data = cloudpickle.dumps(problem, protocol=4)
            except Exception:
                return None
    return hashlib.blake2b(data + __version__.encode(), digest_size=16).hexdigest()


def cache_keys(fingerprint: str, X: np.ndarray) -> list[str]:
    """One key per row of ``X`` ``(n, dim)``: hash of the fingerprint and the exact float64 bytes."""
    X = np.ascontiguousarray(np.atleast_2d(X), dtype="<f8")
    fp = fingerprint.encode()
    return [hashlib.blake2b(fp + row.tobytes(), digest_size=16).hexdigest() for row in X]


def versions() -> dict[str, str]:
    """Versions of Python and of the packages that decide a run's numbers."""
    import platform
    import sqlite3
    from importlib import metadata

    out = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for pkg in ("mechcalib", "numpy", "scipy", "numba"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[pkg] = metadata.version(pkg)
    return out


def finite_or_none(v: float) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
