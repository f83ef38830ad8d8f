"""Sequence datasets for inverse networks: (parameters, response sequence) pairs, scalers and splits.

A :class:`SequenceDataset` holds ``n`` simulated responses resampled to ``L`` points of their progress coordinate
(time, load step) with ``C`` features each, ``X`` ``(n, L, C)``, and the parameters that produced them, ``Y``
``(n, d)`` in physical units. Seed 001 feeds PartsNet the triaxial test's force and displacement at ``L = 99``
samples, ``99 x 2``; the same shape comes from any built-in model with a loop channel (a hysteresis loop
``r(u)`` of ``sdof_boucwen``, the Duffing restoring force against displacement) or time histories.

Features are named ``"<channel>.x"`` / ``"<channel>.y"`` (the abscissa and ordinate of a channel's curve), or
``"<channel>"`` for both when the channel's abscissa is not its progress coordinate (a loop) and its ordinate
alone otherwise (a time history). With several experiments in a stored run, prefix ``"<experiment>/"``.

Sources:

* :func:`from_model`: a Latin hypercube (or given unit-cube points) of a model's parameter space, simulated in
  memory in one batch;
* :func:`generate_dataset`: the same Latin hypercube through the run engine (:func:`mechcalib.calibrate` with
  the ``lhs`` optimiser on a :class:`SamplingProblem`, whose loss is 0, and a run store): each simulation is
  committed as it finishes, failed ones are recorded, a pool runs them in parallel, and calling it again resumes
  a killed generation; :func:`dataset_from_store` reads the dataset of a stored run;
* :func:`from_npz`: a run store's dataset export (``mechcalib export DIR --dataset FILE.npz``, see
  :meth:`mechcalib.storage.RunStore.dataset`) or a file written by :meth:`SequenceDataset.save_npz`, which uses
  the same layout;
* :func:`read_sequence_csv`: a measured sequence from a CSV table, resampled like the training data.

Scaling: :class:`SequenceScaler` standardises every feature (mean and standard deviation over samples and
time, or per time step over samples); :class:`ParameterScaler` maps every parameter linearly to ``[0, 1]`` by
its search bounds when known, else by the training data's range. The network learns and is scored in these scaled units.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import qmc

from ..core.data import read_table
from ..errors import ConfigurationError, DataError
from ..core.model import Model, SimulationFailure
from ..core.parameters import ParameterSpace

SeedLike = int | np.random.Generator | None

#: Table 1: sequence length of the triaxial test.
PAPER_LENGTH = 99

SIM_EXPERIMENT = "sim"  # experiment name used by files written by SequenceDataset.save_npz


# ------------------------------------------------------------------------------------------------------
# Resampling
# ------------------------------------------------------------------------------------------------------
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


def _curve_arrays(get, prefix: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    x, y = get(prefix + "/x"), get(prefix + "/y")
    if x is None or y is None:
        raise KeyError(prefix)
    return np.asarray(x, float), np.asarray(y, float), (None if get(prefix + "/t") is None else np.asarray(get(prefix + "/t"), float))


def _progress(x: np.ndarray, t: np.ndarray | None) -> np.ndarray | None:
    if t is not None:
        return t
    return x if np.all(np.diff(x) >= 0) else None


def _is_loop(x: np.ndarray, t: np.ndarray | None) -> bool:
    """A channel whose abscissa is not its progress coordinate (a hysteresis loop): both x and y are features."""
    return bool((t is not None and not np.array_equal(x, t)) or (t is None and np.any(np.diff(x) < 0)))


def expand_features(spec: Sequence[str], curves: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]]) -> list[str]:
    """Feature names ``"<channel>.x|y"`` from a spec that may name whole channels (see the module docstring)."""
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
        out += [f + ".x", f + ".y"] if _is_loop(x, t) else [f + ".y"]
    if not out:
        raise DataError("no features: name at least one channel")
    return out


def sequence_from_curves(
    curves: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]], features: Sequence[str], length: int
) -> np.ndarray:
    """``(length, C)`` sequence of the named features, each channel resampled on its progress coordinate."""
    cols = []
    for f in features:
        ch, axis = f[:-2], f[-1]
        x, y, t = curves[ch]
        cols.append(resample_on_progress(x if axis == "x" else y, _progress(x, t), length))
    return np.column_stack(cols)


# ------------------------------------------------------------------------------------------------------
# Scalers
# ------------------------------------------------------------------------------------------------------
@dataclass
class SequenceScaler:
    """Standardises the sequences: ``(X - mean) / std``.

    Two kinds (:meth:`fit`): per feature, with statistics over samples and time (``mean``, ``std`` of shape
    ``(C,)``), or per time step and feature, over samples only (shape ``(L, C)``). The second shows a network how
    each sample differs from the others at every step; it matters when the curves share one shape and differ
    by a few per cent (the EEPA triaxial dataset, 600 epochs: a GRU's validation R² 0.72 per feature, 0.98
    per step; benchmarks/results/partsnet_eepa.md and partsnet_eepa_step.md).

    Attributes:
        mean, std: ``(C,)`` or ``(L, C)``; a constant feature gets ``std = 1``.
    """

    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray, per_step: bool = False, floor: float = 1e-3) -> SequenceScaler:
        """Statistics of training sequences ``X`` ``(n, L, C)``.

        Args:
            per_step: statistics per time step and feature (over samples) instead of per feature.
            floor: with ``per_step``, the smallest standard deviation of a step, as a fraction of the feature's
                standard deviation over samples and time: a channel that is the same in every sample up to
                rounding (a prescribed displacement) must not be blown up into noise.
        """
        X = np.asarray(X, dtype=float)
        if X.ndim != 3:
            raise DataError(f"sequences must have shape (n, L, C), got {X.shape}")
        flat = X.reshape(-1, X.shape[2])
        std = flat.std(axis=0)
        std = np.where(std > 0, std, 1.0)
        if not per_step:
            return cls(flat.mean(axis=0), std)
        if not (0.0 < floor <= 1.0):
            raise DataError(f"SequenceScaler.fit: floor must lie in (0, 1], got {floor!r}")
        return cls(X.mean(axis=0), np.maximum(X.std(axis=0), floor * std))

    def transform(self, X: np.ndarray) -> np.ndarray:
        return (np.asarray(X, dtype=float) - self.mean) / self.std

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        return np.asarray(Z, dtype=float) * self.std + self.mean

    def to_dict(self) -> dict[str, list[float]]:
        return {"mean": self.mean.tolist(), "std": self.std.tolist()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SequenceScaler:
        return cls(np.asarray(d["mean"], dtype=float), np.asarray(d["std"], dtype=float))


@dataclass
class ParameterScaler:
    """Maps parameters linearly to ``[0, 1]``: ``(Y - lower) / (upper - lower)`` per column.

    Attributes:
        lower, upper: ``(d,)``; a column with ``upper == lower`` is mapped by a unit span.
    """

    lower: np.ndarray
    upper: np.ndarray

    @classmethod
    def fit(cls, Y: np.ndarray, lower: np.ndarray | None = None, upper: np.ndarray | None = None) -> ParameterScaler:
        """By the bounds when given (the search space: the network then works in unit-cube coordinates), else by
        the data's range."""
        Y = np.asarray(Y, dtype=float)
        lo = Y.min(axis=0) if lower is None else np.asarray(lower, dtype=float)
        hi = Y.max(axis=0) if upper is None else np.asarray(upper, dtype=float)
        return cls(lo, hi)

    @property
    def span(self) -> np.ndarray:
        s = self.upper - self.lower
        return np.where(s > 0, s, 1.0)

    def transform(self, Y: np.ndarray) -> np.ndarray:
        return (np.asarray(Y, dtype=float) - self.lower) / self.span

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        return np.asarray(Z, dtype=float) * self.span + self.lower

    def to_dict(self) -> dict[str, list[float]]:
        return {"lower": self.lower.tolist(), "upper": self.upper.tolist()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ParameterScaler:
        return cls(np.asarray(d["lower"], dtype=float), np.asarray(d["upper"], dtype=float))


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


# ------------------------------------------------------------------------------------------------------
# Datasets
# ------------------------------------------------------------------------------------------------------
@dataclass
class SequenceDataset:
    """Parameters and their response sequences.

    Attributes:
        X: ``(n, L, C)`` sequences (physical units).
        Y: ``(n, d)`` parameters (physical units).
        names: the ``d`` parameter names.
        features: the ``C`` feature names (``"<channel>.x|y"``).
        lower, upper: ``(d,)`` parameter search bounds, when known (the output scaling uses them).
        meta: free information (model, conditions, failures dropped).
    """

    X: np.ndarray
    Y: np.ndarray
    names: tuple[str, ...]
    features: tuple[str, ...]
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.X = np.asarray(self.X, dtype=float)
        self.Y = np.atleast_2d(np.asarray(self.Y, dtype=float))
        self.names, self.features = tuple(self.names), tuple(self.features)
        if self.X.ndim != 3:
            raise DataError(f"X must have shape (n, L, C), got {self.X.shape}")
        if self.X.shape[0] != self.Y.shape[0]:
            raise DataError(f"X and Y need the same number of rows, got {self.X.shape[0]} and {self.Y.shape[0]}")
        if len(self.names) != self.Y.shape[1]:
            raise DataError(f"{len(self.names)} parameter names for {self.Y.shape[1]} columns of Y")
        if len(self.features) != self.X.shape[2]:
            raise DataError(f"{len(self.features)} feature names for {self.X.shape[2]} features of X")
        if not (np.all(np.isfinite(self.X)) and np.all(np.isfinite(self.Y))):
            raise DataError("the dataset holds NaN or inf values; drop those samples first")
        for k in ("lower", "upper"):
            v = getattr(self, k)
            if v is not None:
                v = np.asarray(v, dtype=float)
                if v.shape != (self.Y.shape[1],):
                    raise DataError(f"{k} must have shape ({self.Y.shape[1]},), got {v.shape}")
                setattr(self, k, v)

    def __len__(self) -> int:
        return int(self.X.shape[0])

    @property
    def length(self) -> int:
        return int(self.X.shape[1])

    def subset(self, idx: np.ndarray) -> SequenceDataset:
        return SequenceDataset(self.X[idx], self.Y[idx], self.names, self.features, self.lower, self.upper, dict(self.meta))

    def split(self, val_fraction: float = 0.2, seed: SeedLike = None) -> tuple[SequenceDataset, SequenceDataset]:
        tr, va = train_val_split(len(self), val_fraction, seed)
        return self.subset(tr), self.subset(va)

    def select(self, names: Sequence[str]) -> SequenceDataset:
        """Keep only the named parameters as targets (for instance those GDR-Net ranks first)."""
        idx = [self.names.index(n) if n in self.names else _missing(n, self.names) for n in names]
        sl = (lambda a: None if a is None else a[idx])
        return SequenceDataset(self.X, self.Y[:, idx], tuple(names), self.features, sl(self.lower), sl(self.upper), dict(self.meta))

    def unit(self) -> np.ndarray:
        """``(n, d)`` parameters in ``[0, 1]`` coordinates of the bounds (of the data's range without bounds)."""
        return ParameterScaler.fit(self.Y, self.lower, self.upper).transform(self.Y)

    def save_npz(self, path: str | os.PathLike[str]) -> Path:
        """Write the dataset in the layout of a run store's dataset export (``response/sim/<channel>/x|y|t``
        with the resampled sequences and a sample-index progress ``t``), readable by :func:`from_npz`."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {"names": np.array(self.names), "X": self.Y, "feature_names": np.array(self.features)}
        if self.lower is not None and self.upper is not None:
            arrays["lower"], arrays["upper"] = self.lower, self.upper
        L = self.length
        grid = np.broadcast_to(np.arange(L, dtype=float), (len(self), L))
        for j, f in enumerate(self.features):
            ch, axis = f[:-2], f[-1]
            arrays[f"response/{SIM_EXPERIMENT}/{ch}/{axis}"] = self.X[:, :, j]
            arrays[f"response/{SIM_EXPERIMENT}/{ch}/t"] = grid
        for ch in {f[:-2] for f in self.features}:  # a channel with only y gets the index as its x
            arrays.setdefault(f"response/{SIM_EXPERIMENT}/{ch}/x", grid)
        np.savez_compressed(path, **arrays)
        return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


def _missing(name: str, names: Sequence[str]) -> int:
    raise DataError(f"unknown parameter {name!r}; the dataset's parameters are {list(names)}")


def _lhs(n: int, d: int, seed: SeedLike) -> np.ndarray:
    return qmc.LatinHypercube(d, rng=np.random.default_rng(seed)).random(int(n))


def default_features(response: Mapping[str, Any]) -> list[str]:
    """The loop channels of a response (abscissa not the progress coordinate), else all its channels."""
    curves = {k: (c.x, c.y, c.t) for k, c in response.items()}
    loops = [k for k, v in curves.items() if _is_loop(*v[::2])]
    return loops or list(curves)


def simulate_sequences(
    model: Model,
    U: np.ndarray,
    *,
    features: Sequence[str] | None = None,
    length: int = PAPER_LENGTH,
    space: ParameterSpace | None = None,
    conditions: Mapping[str, Any] | None = None,
) -> tuple[SequenceDataset, np.ndarray]:
    """Simulate unit-cube points ``U`` ``(n, dim)`` of ``space`` (default: the model's; points may lie outside
    ``[0, 1]`` to extrapolate) and build a dataset of their sequences.

    Returns:
        ``(dataset, ok)``: the dataset of the simulations that succeeded and the ``(n,)`` mask of those.
    """
    space = space or model.space
    U = np.atleast_2d(np.asarray(U, dtype=float))
    if U.shape[1] != space.dim:
        raise ConfigurationError(f"U must have {space.dim} columns ({list(space.free_names)}), got {U.shape[1]}")
    theta = space.full_from_unit(U)
    sims = [_checked(s) for s in model.simulate(theta, conditions)]
    ok = np.array([not isinstance(s, SimulationFailure) for s in sims])
    if not ok.any():
        first = next(s for s in sims if isinstance(s, SimulationFailure))
        raise DataError(f"every simulation failed, the first with: {first.message}")
    good = [s for s in sims if not isinstance(s, SimulationFailure)]
    curves0 = {k: (c.x, c.y, c.t) for k, c in good[0].items()}
    feats = expand_features(list(features) if features else default_features(good[0]), curves0)
    X = np.stack([sequence_from_curves({k: (c.x, c.y, c.t) for k, c in s.items()}, feats, length) for s in good])
    ds = SequenceDataset(
        X, space.from_unit(U[ok]), space.free_names, feats, space.lower, space.upper,
        {"model": model.name, "conditions": dict(conditions or {}), "failed": int((~ok).sum())},
    )
    return ds, ok


def _checked(sim: Any) -> Any:
    """A response with non-finite values becomes a failure: it cannot enter a dataset."""
    if isinstance(sim, SimulationFailure):
        return sim
    for k, c in sim.items():
        if not (np.all(np.isfinite(c.x)) and np.all(np.isfinite(c.y))):
            return SimulationFailure(f"channel {k!r} of the response holds NaN or inf values")
    return sim


def from_model(
    model: Model,
    n: int,
    *,
    features: Sequence[str] | None = None,
    length: int = PAPER_LENGTH,
    space: ParameterSpace | None = None,
    conditions: Mapping[str, Any] | None = None,
    seed: SeedLike = None,
) -> SequenceDataset:
    """A dataset of ``n`` Latin-hypercube points of ``space`` (default: the model's free parameters) simulated by
    ``model``; failed simulations are dropped (their count is ``meta["failed"]``)."""
    space = space or model.space
    if int(n) < 2:
        raise ConfigurationError(f"a dataset needs n >= 2 samples, got {n!r}")
    ds, _ = simulate_sequences(model, _lhs(n, space.dim, seed), features=features, length=length, space=space,
                               conditions=conditions)
    return ds


def from_npz(
    path: str | os.PathLike[str],
    *,
    features: Sequence[str] | None = None,
    length: int = PAPER_LENGTH,
    targets: Sequence[str] | None = None,
) -> SequenceDataset:
    """A dataset from a run store's dataset export or a :meth:`SequenceDataset.save_npz` file.

    Args:
        features: feature spec (module docstring); default: the loop channels of the stored responses, else all.
        length: points per resampled sequence.
        targets: parameters to learn (default: every free parameter, ``names``).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"dataset file {str(path)!r} does not exist")
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    return from_arrays(data, features=features, length=length, targets=targets, source=str(path))


def from_arrays(
    data: Mapping[str, np.ndarray],
    *,
    features: Sequence[str] | None = None,
    length: int = PAPER_LENGTH,
    targets: Sequence[str] | None = None,
    source: str = "arrays",
) -> SequenceDataset:
    """A dataset from the arrays of a dataset export (:meth:`mechcalib.storage.RunStore.dataset`, or the
    contents of a file :func:`from_npz` reads); arguments as :func:`from_npz`."""
    path = source
    for k in ("names", "X"):
        if k not in data:
            raise DataError(f"{path}: not a dataset export (no {k!r} array); write one with "
                            "`mechcalib export DIR --dataset FILE.npz` or `mechcalib inverse dataset`")
    names = [str(s) for s in data["names"]]
    Y = np.asarray(data["X"], dtype=float)
    if Y.shape[0] == 0:
        raise DataError(f"{path}: the dataset holds no successful simulation")
    exps = sorted({k.split("/")[1] for k in data if k.startswith("response/")})
    if not exps:
        raise DataError(f"{path}: the dataset holds no responses; the run must keep them "
                        "(output.keep_responses = true) before `mechcalib export --dataset`")

    def channels_of(row: int) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
        out = {}
        for e in exps:
            for ch in sorted({k.split("/")[2] for k in data if k.startswith(f"response/{e}/")}):
                key = ch if len(exps) == 1 else f"{e}/{ch}"

                def get(p: str, row=row) -> np.ndarray | None:
                    a = data.get("response/" + p)
                    if a is None:
                        return None
                    ln = data.get("response_len/" + p)
                    v = a[row]
                    return v[: int(ln[row])] if ln is not None else v

                try:
                    out[key] = _curve_arrays(get, f"{e}/{ch}")
                except KeyError:
                    continue
        return out

    c0 = channels_of(0)
    if features is None and "feature_names" in data:
        feats = [str(s) for s in data["feature_names"]]
    else:
        feats = expand_features(list(features) if features else _default_from_curves(c0), c0)
    X = np.stack([sequence_from_curves(channels_of(i), feats, length) for i in range(Y.shape[0])])
    lower = data.get("lower")
    upper = data.get("upper")
    ds = SequenceDataset(X, Y, names, feats, lower, upper, {"source": str(path)})
    return ds.select(list(targets)) if targets else ds


def _default_from_curves(curves: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]]) -> list[str]:
    loops = [k for k, (x, _, t) in curves.items() if _is_loop(x, t)]
    return loops or list(curves)


def read_sequence_csv(
    path: str | os.PathLike[str],
    columns: Sequence[str] | None = None,
    *,
    length: int = PAPER_LENGTH,
    progress: str | None = None,
) -> tuple[np.ndarray, list[str]]:
    """A measured sequence from a CSV table (header row; units in brackets allowed).

    Args:
        columns: the columns giving the network's features, in its feature order (default: every column but
            ``progress``).
        length: points of the resampled sequence (the network's ``L``).
        progress: a time or step column to resample on (default: the row index).

    Returns:
        ``((length, C) sequence, column names used)``.
    """
    table, _ = read_table(path)
    cols = list(columns) if columns else [c for c in table if c != progress]
    for c in [*cols, *([progress] if progress else [])]:
        if c not in table:
            raise DataError(f"{path}: no column {c!r}; the columns are {list(table)}")
    V = np.column_stack([table[c] for c in cols])
    return resample_on_progress(V, table[progress] if progress else None, length), cols


# ------------------------------------------------------------------------------------------------------
# Dataset generation through the run engine
# ------------------------------------------------------------------------------------------------------
@dataclass
class SamplingProblem:
    """A problem without an experiment: every successful simulation scores 0, so that an optimiser that
    ignores its losses (the Latin hypercube) turns :func:`mechcalib.calibrate` into a durable sampler.

    Each simulation's response is kept under the experiment name ``"sim"`` (the layout of
    :meth:`SequenceDataset.save_npz` and of a run store's dataset export), and a failed simulation, or one whose
    response holds NaN or inf, is a failed evaluation with its reason, recorded like any other.

    Args:
        model: the forward model.
        space: the sampled parameter space (default: the model's).
        conditions: the model's conditions for every simulation.
        failure_loss: the loss recorded for a failed simulation.
    """

    model: Model
    space: ParameterSpace | None = None
    conditions: Mapping[str, Any] | None = None
    failure_loss: float = float("inf")
    keep_responses: bool = True

    def __post_init__(self) -> None:
        if self.space is None:
            self.space = self.model.space
        if self.space.names != self.model.space.names:
            raise ConfigurationError(
                f"the sampled space must list the model's parameters in order {list(self.model.space.names)}, "
                f"got {list(self.space.names)}")
        self.conditions = dict(self.conditions or {})
        self.model.validate_conditions(self.conditions)  # bad conditions fail here, before any simulation

    def fingerprint(self) -> str:
        """The model (its pickled state: class, constructor settings), the conditions, the space and the
        penalty; the store's cache serves identical parameter sets of an identical problem only."""
        import hashlib
        import pickle

        from .. import __version__
        from ..storage.codec import dumps
        from ..storage.session import space_record

        h = hashlib.blake2b(digest_size=16)
        h.update(pickle.dumps(self.model, protocol=4))
        h.update(dumps({"conditions": self.conditions, "space": space_record(self.space),
                        "failure_loss": self.failure_loss, "version": __version__}).encode())
        return "dataset:" + h.hexdigest()

    def evaluate(self, x_free: np.ndarray) -> Any:
        import time

        from ..core.problem import FAILED, OK, EvaluationBatch

        t0 = time.perf_counter()
        x_free = np.atleast_2d(np.asarray(x_free, dtype=float))
        sims = _simulate_batch(self.model, self.space.to_full(x_free), self.conditions)
        errors: list[str | None] = [s.message if isinstance(s, SimulationFailure) else None for s in sims]
        status = [OK if e is None else FAILED for e in errors]
        ok = np.array([e is None for e in errors])
        raw = np.where(ok, 0.0, np.nan)
        losses = np.where(ok, 0.0, self.failure_loss)
        responses = [None if e is not None else {SIM_EXPERIMENT: s} for s, e in zip(sims, errors, strict=True)]
        return EvaluationBatch(losses, raw, status, errors, responses if self.keep_responses else [],
                               time.perf_counter() - t0)


def _simulate_batch(model: Model, theta: np.ndarray, conditions: Mapping[str, Any]) -> list:
    """Simulate a batch; a batch that raises is retried one set at a time, so a bad set fails alone."""
    import traceback

    try:
        sims = model.simulate(theta, conditions)
        if len(sims) != theta.shape[0]:
            raise RuntimeError(f"model returned {len(sims)} responses for {theta.shape[0]} parameter sets")
        return [_checked(s) for s in sims]
    except Exception:  # noqa: BLE001 - any error of a model's code fails its sets, never the run
        if theta.shape[0] == 1:
            return [SimulationFailure(traceback.format_exc(limit=3).strip().splitlines()[-1])]
        return [s for i in range(theta.shape[0]) for s in _simulate_batch(model, theta[i : i + 1], conditions)]


def dataset_run_name(model: Model, n: int, seed: int) -> str:
    """The default run name of :func:`generate_dataset`: the same command resumes the same run."""
    return f"dataset-{model.name}-n{int(n)}-seed{int(seed)}"


def resume_dataset(
    store: Any,
    run: str | None = None,
    *,
    workers: int | None = None,
    budget: int | None = None,
    timeout: float | None = None,
    on_evaluation: Any = None,
) -> GenerationResult:
    """Continue a stored dataset run of :func:`generate_dataset` from its record alone: the model (built-in,
    rebuilt with its recorded constructor options), ``n``, seed, conditions and sequence layout come from the
    run's configuration. ``run``: its name (default: the store's only dataset run). Stored sets are read
    back, the rest simulated; the problem fingerprint guards against a model that changed since."""
    from ..models import MODELS, get_model
    from ..storage import RunStore

    own = not isinstance(store, RunStore)
    if own and not Path(store).is_file():
        raise ConfigurationError(f"no run store at {str(store)!r}; give the SQLite file a dataset run was stored in")
    st = RunStore(store) if own else store
    try:
        runs = [i for i in st.runs() if (i.config or {}).get("kind") == "dataset"]
        if run is None:
            if len(runs) != 1:
                raise ConfigurationError(
                    f"{st.path} holds {len(runs)} dataset runs ({', '.join(i.name for i in runs) or 'none'}); name "
                    "one with run=..."
                )
            info = runs[0]
        else:
            info = st.run(run)
            if (info.config or {}).get("kind") != "dataset":
                raise ConfigurationError(
                    f"run {run!r} is not a dataset run (its configuration has no kind = 'dataset'); dataset runs "
                    f"here: {', '.join(i.name for i in runs) or 'none'}"
                )
        cfg = info.config
        if cfg["model"] not in MODELS:
            raise ConfigurationError(f"run {info.name!r} used the model {cfg['model']!r}, which is not built in")
        opts = cfg.get("model_options") or {}
        model = get_model(cfg["model"], **opts)
        return generate_dataset(
            model, cfg["n"], st, run_name=info.name, seed=cfg["seed"], workers=workers, budget=budget,
            timeout=timeout, features=cfg.get("features"), length=cfg.get("length", PAPER_LENGTH),
            conditions=cfg.get("conditions"), on_evaluation=on_evaluation, model_options=opts,
        )
    finally:
        if own:
            st.close()


def dataset_from_store(
    store: Any,
    run: str,
    *,
    features: Sequence[str] | None = None,
    length: int = PAPER_LENGTH,
) -> SequenceDataset:
    """The sequence dataset of a stored dataset run (or of any run that kept its responses): its successful
    evaluations in run order, with the bounds of its free parameters; ``meta["failed"]`` counts the failed
    ones."""
    from ..storage import RunStore

    own = not isinstance(store, RunStore)
    st = RunStore(store, readonly=True) if own else store
    try:
        info = st.run(run)
        data = st.dataset(run)
        n_failed = st.n_evaluations(info.id) - st.n_evaluations(info.id, status="ok")
    finally:
        if own:
            st.close()
    free = [p for p in info.space if p.get("fixed") is None]
    arrays = dict(data)
    arrays["lower"] = np.array([p["lower"] for p in free], dtype=float)
    arrays["upper"] = np.array([p["upper"] for p in free], dtype=float)
    ds = from_arrays(arrays, features=features, length=length, source=f"{st.path}:{run}")
    ds.meta.update({"run": run, "failed": int(n_failed)})
    cfg = info.config or {}
    if cfg.get("kind") == "dataset":
        ds.meta.update({"model": cfg.get("model"), "conditions": cfg.get("conditions", {})})
    return ds


@dataclass
class GenerationResult:
    """What :func:`generate_dataset` returns: the dataset of the successful simulations done so far
    (``None`` when there is none yet), the calibration :class:`~mechcalib.calibrate.Result` of the sampling
    run, and the counts: ``n`` planned, ``done`` stored, ``failed`` among them, ``simulated`` by this call."""

    dataset: SequenceDataset | None
    result: Any
    run_name: str
    n: int
    done: int
    failed: int
    simulated: int

    @property
    def complete(self) -> bool:
        return self.done >= self.n


def generate_dataset(
    model: Model,
    n: int,
    store: Any,
    *,
    run_name: str | None = None,
    seed: int = 0,
    workers: int | None = None,
    evaluator: Any = None,
    budget: int | None = None,
    timeout: float | None = None,
    features: Sequence[str] | None = None,
    length: int = PAPER_LENGTH,
    space: ParameterSpace | None = None,
    conditions: Mapping[str, Any] | None = None,
    on_evaluation: Any = None,
    model_options: Mapping[str, Any] | None = None,
) -> GenerationResult:
    """Simulate a Latin hypercube of ``n`` points of ``space`` through :func:`mechcalib.calibrate` and a run
    store, and read the sequence dataset back from the store.

    The design is one Latin hypercube of ``n`` points (the ``lhs`` optimiser, ``batch_size = n``, seeded), the
    problem a :class:`SamplingProblem` (loss 0). So the run engine gives what a long dataset needs: every
    simulation is committed as it finishes, with its response; a killed generation resumes where it stopped when
    called again with the same ``run_name`` (the design is replayed from the seed and every stored point is read
    back, not simulated); failed simulations are recorded with their reason and left out of the dataset; a
    pool of worker processes runs simulations in parallel. With the same ``seed`` the points, and so the
    dataset, equal those of :func:`from_model`.

    Args:
        model: the forward model.
        n: number of Latin-hypercube points (>= 2).
        store: a :class:`~mechcalib.storage.RunStore` or the path of its SQLite file.
        run_name: the run's name in the store (default :func:`dataset_run_name`: model, ``n`` and ``seed``).
        seed: seed of the design.
        workers: simulations run in a process pool of this many workers; ``None`` or 1: in this process, one
            set at a time. Ignored when ``evaluator`` is given.
        evaluator: an :class:`~mechcalib.execution.Evaluator` (for example a dask one), kept open.
        budget: stop once this many points of the design are stored (a partial generation, continued by a later
            call with a larger or no budget); default: all ``n``.
        timeout: per-simulation limit in seconds (a simulation past it is recorded as ``"timeout"``).
        features, length: sequence layout of the returned dataset (see :func:`simulate_sequences`).
        space, conditions: sampled space (default: the model's) and the model's conditions.
        on_evaluation: passed to :func:`mechcalib.calibrate` (progress).
        model_options: the constructor options ``model`` was built with (``get_model(model.name, **options)``),
            recorded with the run so that :func:`resume_dataset` can rebuild it.
    """
    from ..calibrate import calibrate
    from ..optimizers.random_search import LatinHypercube
    from ..storage import RunStore

    n = int(n)
    if n < 2:
        raise ConfigurationError(f"a dataset needs n >= 2 samples, got {n!r}")
    if budget is not None and (isinstance(budget, bool) or int(budget) < 1):
        raise ConfigurationError(f"budget must be a positive number of simulations or None, got {budget!r}")
    if workers is not None and int(workers) < 1:
        raise ConfigurationError(f"workers must be >= 1, got {workers!r}")
    problem = SamplingProblem(model, space, conditions)
    model.prepare_shared(problem.conditions)  # shared set-up (a DEM specimen) made once here, not raced by the workers
    name = run_name or dataset_run_name(model, n, seed)
    own_ev = evaluator is None
    if own_ev:
        from ..execution import PoolEvaluator, SerialEvaluator

        evaluator = (PoolEvaluator(n_workers=int(workers), timeout=timeout) if workers and int(workers) > 1
                     else SerialEvaluator(timeout=timeout, chunk_size=1))
    own_store = not isinstance(store, RunStore)
    st = RunStore(store) if own_store else store
    config = {"kind": "dataset", "model": model.name, "n": n, "seed": int(seed),
              "conditions": dict(problem.conditions), "features": list(features) if features else None,
              "length": int(length), "model_options": dict(model_options or {})}
    live = {"n": 0}

    def hook(idx: int, batch: int, outcome: Any) -> None:
        if outcome.source == "live":
            live["n"] += 1
        if on_evaluation is not None:
            on_evaluation(idx, batch, outcome)

    try:
        res = calibrate(problem, LatinHypercube(batch_size=n, seed=int(seed)),
                        max_evals=min(n, int(budget)) if budget is not None else n,
                        evaluator=evaluator, store=st, run_name=name, config=config, on_evaluation=hook,
                        n_alternatives=0)
        info = st.run(name)
        done = st.n_evaluations(info.id)
        ok = st.n_evaluations(info.id, status="ok")
        ds = dataset_from_store(st, name, features=features, length=length) if ok else None
    finally:
        if own_ev:
            evaluator.close()
        if own_store:
            st.close()
    if ds is not None:
        ds.meta.update({"model": model.name, "conditions": dict(problem.conditions)})
    return GenerationResult(ds, res, name, n, done, done - ok, live["n"])
