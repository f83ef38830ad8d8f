"""One dataset type for every method that learns from simulations: parameter sets and their responses.

A :class:`Dataset` holds ``n`` parameter sets ``theta`` ``(n, d)`` (physical values of the free parameters, with
their ``names``) and the simulated responses as arrays on a common abscissa per channel: ``responses[key]``
``(n, m_key)`` with ``abscissa[key]`` ``(m_key,)``. Two layouts come out of a simulation or a run store:

* curves on a shared grid (a hydration degree ``alpha`` at the grid times): one key per channel, the abscissa
  the channel's ``x``; the surrogate strategies of Mareš et al. (2016) read one such channel;
* resampled sequences (a loop ``r(u)`` whose abscissa differs between sets): each channel resampled to ``length``
  points equally spaced in its progress coordinate, one key per feature ``"<channel>.x"`` / ``"<channel>.y"``,
  the abscissa the sample index; the inverse networks (PartsNet and its family) read them as ``(n, L, C)``.

Sources: :meth:`Dataset.from_store` (a stored run, through :meth:`mechcalib.storage.RunStore.dataset`),
:meth:`Dataset.from_arrays` (that export's arrays, or a file of them), :meth:`Dataset.load` (a file written by
:meth:`Dataset.save`), and the simulators of :mod:`mechcalib.surrogates` and :mod:`mechcalib.inverse`.
numpy only.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError, DataError
from .parameters import ParameterSpace

SeedLike = int | np.random.Generator | None

FORMAT = "mechcalib.dataset/1"

CurveArrays = tuple[np.ndarray, np.ndarray, "np.ndarray | None"]


# ------------------------------------------------------------------------------------------------------
# Splits and resampling
# ------------------------------------------------------------------------------------------------------
def train_val_split(n: int, val_fraction: float = 0.2, seed: SeedLike = None) -> tuple[np.ndarray, np.ndarray]:
    """Random split of ``range(n)``: ``(train indices, validation indices)``, both sorted.

    ``round(val_fraction * n)`` samples (at least one when ``val_fraction > 0``) go to validation; the training
    part keeps at least one sample.
    """
    if not 0.0 <= val_fraction < 1.0:
        raise ConfigurationError(f"val_fraction must lie in [0, 1), got {val_fraction!r}")
    if n < 1:
        raise DataError(f"cannot split an empty dataset (n = {n})")
    n_val = 0 if val_fraction == 0 else min(max(1, round(val_fraction * n)), n - 1)
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def resample_on_progress(values: np.ndarray, progress: np.ndarray | None, length: int) -> np.ndarray:
    """Resample ``values`` ``(N, C)`` (or ``(N,)``) to ``length`` points equally spaced in ``progress``.

    ``progress`` is a non-decreasing coordinate (time, load step) of the ``N`` samples; ``None`` uses the sample
    index. Repeated progress values keep their first sample. Linear interpolation.
    """
    V = np.asarray(values, dtype=float)
    one = V.ndim == 1
    if one:
        V = V[:, None]
    N = V.shape[0]
    if N < 2 or int(length) < 2:
        raise DataError(f"resampling needs at least 2 samples and length >= 2, got {N} samples, length {length}")
    p = np.arange(N, dtype=float) if progress is None else np.asarray(progress, dtype=float)
    if p.shape != (N,):
        raise DataError(f"the progress coordinate has {p.size} samples, the values {N}")
    if np.any(np.diff(p) < 0):
        raise DataError("the progress coordinate must be non-decreasing (sort the rows by time or step)")
    keep = np.concatenate([[True], np.diff(p) > 0])
    p, V = p[keep], V[keep]
    if p.size < 2:
        raise DataError("the progress coordinate must span an interval (it is constant)")
    grid = np.linspace(p[0], p[-1], int(length))
    out = np.column_stack([np.interp(grid, p, V[:, j]) for j in range(V.shape[1])])
    return out[:, 0] if one else out


def _progress(x: np.ndarray, t: np.ndarray | None) -> np.ndarray | None:
    if t is not None:
        return t
    return x if np.all(np.diff(x) >= 0) else None


def is_loop(x: np.ndarray, t: np.ndarray | None) -> bool:
    """A channel whose abscissa is not its progress coordinate (a hysteresis loop): both x and y are features."""
    return bool((t is not None and not np.array_equal(x, t)) or (t is None and np.any(np.diff(x) < 0)))


def expand_features(spec: Sequence[str], curves: Mapping[str, CurveArrays]) -> list[str]:
    """Feature names ``"<channel>.x|y"`` from a spec that may name whole channels: a loop channel gives both, any
    other its ordinate alone."""
    out: list[str] = []
    for f in spec:
        if f.endswith((".x", ".y")):
            ch = f[:-2]
            if ch not in curves:
                raise DataError(f"feature {f!r} names channel {ch!r}, but the channels are {sorted(curves)}")
            out.append(f)
            continue
        if f not in curves:
            raise DataError(f"unknown channel {f!r}; the channels are {sorted(curves)}")
        x, _, t = curves[f]
        out += [f + ".x", f + ".y"] if is_loop(x, t) else [f + ".y"]
    if not out:
        raise DataError("no features: name at least one channel")
    return out


def sequence_from_curves(curves: Mapping[str, CurveArrays], features: Sequence[str], length: int) -> np.ndarray:
    """``(length, C)`` sequence of the named features, each channel resampled on its progress coordinate."""
    cols = []
    for f in features:
        ch, axis = f[:-2], f[-1]
        x, y, t = curves[ch]
        cols.append(resample_on_progress(x if axis == "x" else y, _progress(x, t), length))
    return np.column_stack(cols)


def default_channels(curves: Mapping[str, CurveArrays]) -> list[str]:
    """The loop channels, else every channel."""
    loops = [k for k, (x, _, t) in curves.items() if is_loop(x, t)]
    return loops or list(curves)


class _Export:
    """Row access to the response arrays of a dataset export (``response/<exp>/<channel>/<x|y|t>``)."""

    def __init__(self, data: Mapping[str, np.ndarray], source: str) -> None:
        self.data = data
        self.exps = sorted({k.split("/")[1] for k in data if k.startswith("response/")})
        if not self.exps:
            raise DataError(
                f"{source}: the dataset holds no responses; the run must keep them "
                "(output.keep_responses = true) before `mechcalib export --dataset`"
            )

    def key(self, e: str, ch: str) -> str:
        return ch if len(self.exps) == 1 else f"{e}/{ch}"

    def paths(self) -> list[tuple[str, str]]:
        return [
            (e, ch)
            for e in self.exps
            for ch in sorted({k.split("/")[2] for k in self.data if k.startswith(f"response/{e}/")})
        ]

    def get(self, p: str, row: int) -> np.ndarray | None:
        a = self.data.get("response/" + p)
        if a is None:
            return None
        ln = self.data.get("response_len/" + p)
        v = a[row]
        return v[: int(ln[row])] if ln is not None else v

    def curves(self, row: int) -> dict[str, CurveArrays]:
        out = {}
        for e, ch in self.paths():
            x, y, t = (self.get(f"{e}/{ch}/{a}", row) for a in "xyt")
            if x is None or y is None:
                continue
            tt = None if t is None else np.asarray(t, float)
            out[self.key(e, ch)] = (np.asarray(x, float), np.asarray(y, float), tt)
        return out

    def common(self, source: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Channels whose rows share one abscissa: ``(responses, abscissa)``."""
        responses, abscissa = {}, {}
        for e, ch in self.paths():
            p = f"{e}/{ch}"
            x, y = self.data.get(f"response/{p}/x"), self.data.get(f"response/{p}/y")
            if x is None or y is None:
                continue
            x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
            ragged = f"response_len/{p}/x" in self.data or f"response_len/{p}/y" in self.data
            if ragged or x.shape != y.shape or not np.all(x == x[:1]):
                raise DataError(
                    f"{source}: channel {self.key(e, ch)!r} has no abscissa common to every set (a loop, or curves of "
                    "different lengths); give length=L to resample every channel on its progress coordinate"
                )
            responses[self.key(e, ch)], abscissa[self.key(e, ch)] = y, x[0].copy()
        return responses, abscissa


# ------------------------------------------------------------------------------------------------------
# The dataset
# ------------------------------------------------------------------------------------------------------
class Dataset:
    """Parameter sets and their simulated responses (module docstring).

    Args:
        theta: ``(n, d)`` physical values of the free parameters.
        responses: ``{key: (n, m_key)}`` response arrays.
        names: the ``d`` parameter names (default ``p1 ... pd``).
        abscissa: ``{key: (m_key,)}`` the common abscissa of each key (default: the sample index).
        lower, upper: ``(d,)`` search bounds, when known.
        space: the parameter space, when known (maps unit-cube coordinates; not saved, its bounds are).
        unit: ``(n, d)`` the sets' unit-cube coordinates when they are known exactly (a design, a store's ``U``).
        meta: free information (model, conditions, source).
    """

    def __init__(
        self,
        theta: np.ndarray,
        responses: Mapping[str, np.ndarray],
        *,
        names: Sequence[str] | None = None,
        abscissa: Mapping[str, np.ndarray] | None = None,
        lower: np.ndarray | Sequence[float] | None = None,
        upper: np.ndarray | Sequence[float] | None = None,
        space: ParameterSpace | None = None,
        unit: np.ndarray | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        theta = np.atleast_2d(np.asarray(theta, dtype=float))
        if theta.ndim != 2:
            raise DataError(f"theta must have shape (n, d), got {theta.shape}")
        n, d = theta.shape
        names = tuple(str(s) for s in names) if names else tuple(f"p{i + 1}" for i in range(d))
        if len(names) != d:
            raise DataError(f"{len(names)} parameter names for {d} columns of theta")
        resp: dict[str, np.ndarray] = {}
        for k, a in responses.items():
            a = np.asarray(a, dtype=float)
            a = a[:, None] if a.ndim == 1 else a
            if a.ndim != 2 or a.shape[0] != n:
                raise DataError(f"response {k!r} must have shape (n, m) with n = {n} sets, got {a.shape}")
            resp[str(k)] = a
        absc: dict[str, np.ndarray] = {}
        for k, a in resp.items():
            x = np.asarray((abscissa or {}).get(k, np.arange(a.shape[1], dtype=float)), dtype=float)
            if x.shape != (a.shape[1],):
                raise DataError(f"response {k!r} has {a.shape[1]} points but its abscissa {x.size}")
            absc[k] = x
        self.theta, self.names, self.responses, self.abscissa = theta, names, resp, absc
        self.lower = None if lower is None else np.asarray(lower, dtype=float)
        self.upper = None if upper is None else np.asarray(upper, dtype=float)
        for k in ("lower", "upper"):
            v = getattr(self, k)
            if v is not None and v.shape != (d,):
                raise DataError(f"{k} must have shape ({d},), got {v.shape}")
        if space is not None and space.dim != d:
            raise DataError(f"the space has {space.dim} free parameters, theta {d} columns")
        self.space = space
        self._unit = None if unit is None else np.atleast_2d(np.asarray(unit, dtype=float))
        if self._unit is not None and self._unit.shape != theta.shape:
            raise DataError(f"unit must have theta's shape {theta.shape}, got {self._unit.shape}")
        self.meta: dict[str, Any] = dict(meta or {})

    # -- shape --------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.theta.shape[0])

    @property
    def dim(self) -> int:
        return int(self.theta.shape[1])

    @property
    def keys(self) -> tuple[str, ...]:
        """The response keys (channels or features), in order."""
        return tuple(self.responses)

    def __repr__(self) -> str:
        r = ", ".join(f"{k} {a.shape[1]}" for k, a in self.responses.items())
        return f"{type(self).__name__}(n={len(self)}, parameters {list(self.names)}, responses [{r}])"

    # -- parameters -----------------------------------------------------------------------------------------
    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        lo = self.theta.min(axis=0) if self.lower is None else self.lower
        hi = self.theta.max(axis=0) if self.upper is None else self.upper
        span = hi - lo
        return lo, np.where(span > 0, span, 1.0)

    def unit(self) -> np.ndarray:
        """``(n, d)`` unit-cube coordinates: as given, else by the space, else linear in the bounds (the data's range
        without bounds)."""
        if self._unit is not None:
            return self._unit
        if self.space is not None:
            return self.space.to_unit(self.theta)
        lo, span = self._bounds()
        return (self.theta - lo) / span

    def from_unit(self, U: np.ndarray) -> np.ndarray:
        """Unit-cube coordinates ``(k, d)`` -> physical values, the inverse of :meth:`unit`'s map. With neither space
        nor bounds and exact unit coordinates given, the coordinates are the parameters."""
        U = np.atleast_2d(np.asarray(U, dtype=float))
        if self.space is not None:
            return self.space.from_unit(U)
        if self.lower is None and self._unit is not None and np.array_equal(self._unit, self.theta):
            return U
        lo, span = self._bounds()
        return lo + U * span

    # -- responses ------------------------------------------------------------------------------------------
    def _key(self, channel: str | None) -> str:
        if channel is None:
            channel = self.meta.get("channel") if self.meta.get("channel") in self.responses else None
        if channel is None:
            if len(self.responses) != 1:
                raise ConfigurationError(
                    f"the dataset has the responses {list(self.responses)}; name one (channel=...)"
                )
            return next(iter(self.responses))
        if channel not in self.responses:
            raise ConfigurationError(f"no response {channel!r}; the dataset has {list(self.responses)}")
        return channel

    def curves(self, channel: str | None = None) -> np.ndarray:
        """``(n, m)`` responses of one key (default: the only one, or ``meta["channel"]``)."""
        return self.responses[self._key(channel)]

    def grid(self, channel: str | None = None) -> np.ndarray:
        """``(m,)`` the abscissa of one key."""
        return self.abscissa[self._key(channel)]

    def sequences(self, keys: Sequence[str] | None = None) -> np.ndarray:
        """``(n, L, C)`` the named keys (default: all) stacked as features; they must have one length."""
        keys = list(keys) if keys else list(self.responses)
        lens = {self.responses[k].shape[1] for k in keys if k in self.responses}
        missing = [k for k in keys if k not in self.responses]
        if missing or len(lens) != 1:
            raise DataError(
                f"sequences need responses of one length; asked {keys}, the dataset has "
                f"{ {k: a.shape[1] for k, a in self.responses.items()} }"
            )
        return np.stack([self.responses[k] for k in keys], axis=2)

    # -- subsets --------------------------------------------------------------------------------------------
    def _derived(
        self,
        theta: np.ndarray,
        responses: dict[str, np.ndarray],
        names: tuple[str, ...],
        lower: np.ndarray | None,
        upper: np.ndarray | None,
        unit: np.ndarray | None,
        space: ParameterSpace | None,
    ) -> Dataset:
        """A dataset of this class from new state (subclasses hold no other state than caches)."""
        out = object.__new__(type(self))
        out.theta, out.responses, out.names, out.abscissa = theta, responses, names, dict(self.abscissa)
        out.lower, out.upper, out._unit, out.space, out.meta = lower, upper, unit, space, dict(self.meta)
        return out

    def subset(self, idx: np.ndarray | Sequence[int]) -> Dataset:
        """The sets ``idx`` (indices or a boolean mask)."""
        idx = np.asarray(idx)
        return self._derived(
            self.theta[idx],
            {k: a[idx] for k, a in self.responses.items()},
            self.names,
            self.lower,
            self.upper,
            None if self._unit is None else self._unit[idx],
            self.space,
        )

    def split(self, val_fraction: float = 0.2, seed: SeedLike = None) -> tuple[Dataset, Dataset]:
        """Random ``(train, validation)`` parts (:func:`train_val_split`)."""
        tr, va = train_val_split(len(self), val_fraction, seed)
        return self.subset(tr), self.subset(va)

    def select(self, names: Sequence[str]) -> Dataset:
        """Keep only the named parameters (for instance the targets of an inverse network)."""
        unknown = [n for n in names if n not in self.names]
        if unknown:
            raise DataError(f"unknown parameter {unknown[0]!r}; the dataset's parameters are {list(self.names)}")
        idx = [self.names.index(n) for n in names]
        sl = lambda a: None if a is None else a[..., idx]
        return self._derived(
            self.theta[:, idx], dict(self.responses), tuple(names), sl(self.lower), sl(self.upper), sl(self._unit), None
        )

    # -- identity and files ---------------------------------------------------------------------------------
    def fingerprint(self) -> str:
        """A digest of the names, parameter sets and responses: the provenance of what a method learnt from."""
        h = hashlib.blake2b(digest_size=12)
        h.update(json.dumps([list(self.names), list(self.responses)]).encode())
        for a in (self.theta, *self.responses.values(), *self.abscissa.values()):
            h.update(np.ascontiguousarray(a, dtype=float).tobytes())
        return h.hexdigest()

    def to_arrays(self) -> dict[str, np.ndarray]:
        out = {
            "format": np.array(FORMAT),
            "names": np.array(self.names),
            "theta": self.theta,
            "keys": np.array(list(self.responses)),
            "meta": np.array(json.dumps(self.meta, default=str)),
        }
        for i, k in enumerate(self.responses):
            out[f"response/{i}"], out[f"abscissa/{i}"] = self.responses[k], self.abscissa[k]
        for k, v in (("lower", self.lower), ("upper", self.upper), ("unit", self._unit)):
            if v is not None:
                out[k] = v
        return out

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the dataset to a ``.npz`` file (:meth:`load` reads it back exactly, the space aside)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, **self.to_arrays())  # type: ignore[arg-type]  # numpy stubs type **kwds as bool
        return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")

    @classmethod
    def load(cls, path: str | os.PathLike[str], **kw: Any) -> Dataset:
        """Read a file of :meth:`save`, or a run store's dataset export (then ``kw`` as :meth:`from_arrays`)."""
        path = Path(path)
        if not path.is_file():
            raise DataError(f"dataset file {str(path)!r} does not exist")
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
        if "format" not in data:
            return cls.from_arrays(data, source=str(path), **kw)
        if str(data["format"]) != FORMAT:
            raise DataError(f"{path}: dataset format {str(data['format'])!r}, this version reads {FORMAT!r}")
        keys = [str(k) for k in data["keys"]]
        return cls(
            data["theta"],
            {k: data[f"response/{i}"] for i, k in enumerate(keys)},
            names=[str(s) for s in data["names"]],
            abscissa={k: data[f"abscissa/{i}"] for i, k in enumerate(keys)},
            lower=data.get("lower"),
            upper=data.get("upper"),
            unit=data.get("unit"),
            meta=json.loads(str(data["meta"])),
        )

    @classmethod
    def from_arrays(
        cls,
        data: Mapping[str, np.ndarray],
        *,
        features: Sequence[str] | None = None,
        length: int | None = None,
        targets: Sequence[str] | None = None,
        space: ParameterSpace | None = None,
        source: str = "arrays",
    ) -> Dataset:
        """A dataset from the arrays of a dataset export (:meth:`mechcalib.storage.RunStore.dataset`: ``names``,
        ``X``, ``U``, ``response/<experiment>/<channel>/<x|y|t>``...).

        Args:
            length: ``None``: one key per channel, which must share its abscissa across the sets; an integer: every
                channel resampled to ``length`` points on its progress coordinate, one key per feature.
            features: with ``length``, the feature spec (channel names, or ``"<channel>.x|y"``); default: the loop
                channels, else all (or the file's ``feature_names``).
            targets: parameters to keep (default: every free parameter).
        """
        for k in ("names", "X"):
            if k not in data:
                raise DataError(
                    f"{source}: not a dataset export (no {k!r} array); write one with "
                    "`mechcalib export DIR --dataset FILE.npz` or `mechcalib inverse dataset`"
                )
        names = [str(s) for s in data["names"]]
        theta = np.asarray(data["X"], dtype=float)
        if theta.shape[0] == 0:
            raise DataError(f"{source}: the dataset holds no successful simulation")
        ex = _Export(data, source)
        meta: dict[str, Any] = {"source": str(source)}
        if length is None:
            responses, abscissa = ex.common(source)
        else:
            c0 = ex.curves(0)
            if features is None and "feature_names" in data:
                feats = [str(s) for s in data["feature_names"]]
            else:
                feats = expand_features(list(features) if features else default_channels(c0), c0)
            X = np.stack([sequence_from_curves(ex.curves(i), feats, int(length)) for i in range(theta.shape[0])])
            responses = {f: X[:, :, j] for j, f in enumerate(feats)}
            abscissa = {f: np.arange(int(length), dtype=float) for f in feats}
        U = data.get("U")
        ds = cls(
            theta,
            responses,
            names=names,
            abscissa=abscissa,
            lower=data.get("lower"),
            upper=data.get("upper"),
            space=space,
            unit=None if U is None or space is not None else U,
            meta=meta,
        )
        return ds.select(list(targets)) if targets else ds

    @classmethod
    def from_store(
        cls,
        store: Any,
        run: str | int,
        *,
        features: Sequence[str] | None = None,
        length: int | None = None,
        targets: Sequence[str] | None = None,
    ) -> Dataset:
        """The dataset of a stored run that kept its responses (a :class:`~mechcalib.storage.RunStore`, or any
        store with ``run(run)`` and ``dataset(run)``): its successful evaluations in run order, one row per
        distinct parameter set, the space rebuilt from the run's record. ``length``, ``features``, ``targets``:
        as :meth:`from_arrays`."""
        info = store.run(run)
        data = dict(store.dataset(run))
        space = ParameterSpace.from_record(info.space)
        data["lower"], data["upper"] = space.lower, space.upper
        path = getattr(store, "path", "store")
        ds = cls.from_arrays(
            data,
            features=features,
            length=length,
            targets=targets,
            space=None if targets else space,
            source=f"{path}:{info.name}",
        )
        ds.meta.update({"run": info.name})
        if (info.config or {}).get("kind") == "dataset":
            ds.meta.update({"model": info.config.get("model"), "conditions": info.config.get("conditions", {})})
        return ds
