"""Sequence datasets of the inverse networks: ``n`` simulated responses resampled to ``L`` points of their progress
coordinate (time, load step) with ``C`` features each, ``X`` ``(n, L, C)``, and the parameters that produced
them, ``Y`` ``(n, d)`` in physical units.

Wu et al. (2024) feed PartsNet the triaxial test's force and displacement at ``L = 99`` samples, ``99 x 2``; the
same shape comes from any built-in model with a loop channel (a hysteresis loop ``r(u)`` of ``sdof_boucwen``, the
Duffing restoring force against displacement) or time histories. Features are named ``"<channel>.x"`` /
``"<channel>.y"``, or ``"<channel>"`` for both when the channel's abscissa is not its progress coordinate (a loop)
and its ordinate alone otherwise (a time history). With several experiments in a stored run, prefix
``"<experiment>/"``.

Sources: :func:`from_model` (a Latin hypercube of a model's space simulated in memory), :func:`from_npz` (a run
store's dataset export or a :meth:`SequenceDataset.save_npz` file), :func:`read_sequence_csv` (a measured
sequence). :class:`SequenceDataset` is a view of the one :class:`~mechcalib.core.dataset.Dataset`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import qmc

from ..core.data import read_table
from ..core.dataset import Dataset, SeedLike, expand_features, is_loop, resample_on_progress, sequence_from_curves
from ..core.model import Model, SimulationFailure
from ..core.parameters import ParameterSpace
from ..errors import ConfigurationError, DataError
from .scalers import ParameterScaler

#: Table 1: sequence length of the triaxial test.
PAPER_LENGTH = 99

SIM_EXPERIMENT = "sim"  # experiment name used by files written by SequenceDataset.save_npz


class SequenceDataset(Dataset):
    """Parameters and their response sequences: the :class:`~mechcalib.core.dataset.Dataset` layout of resampled
    sequences (one response key per feature, ``length`` points each) read as arrays.

    Attributes:
        X: ``(n, L, C)`` sequences (physical units).
        Y: ``(n, d)`` parameters (physical units; the dataset's ``theta``).
        names: the ``d`` parameter names.
        features: the ``C`` feature names (``"<channel>.x|y"``; the response keys).
        lower, upper: ``(d,)`` parameter search bounds, when known (the output scaling uses them).
        meta: free information (model, conditions, failures dropped).
    """

    def __init__(
        self,
        X: np.ndarray,
        Y: np.ndarray,
        names: Sequence[str],
        features: Sequence[str],
        lower: np.ndarray | Sequence[float] | None = None,
        upper: np.ndarray | Sequence[float] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        X = np.asarray(X, dtype=float)
        Y = np.atleast_2d(np.asarray(Y, dtype=float))
        names, features = tuple(names), tuple(features)
        if X.ndim != 3:
            raise DataError(f"X must have shape (n, L, C), got {X.shape}")
        if X.shape[0] != Y.shape[0]:
            raise DataError(f"X and Y need the same number of rows, got {X.shape[0]} and {Y.shape[0]}")
        if len(names) != Y.shape[1]:
            raise DataError(f"{len(names)} parameter names for {Y.shape[1]} columns of Y")
        if len(features) != X.shape[2]:
            raise DataError(f"{len(features)} feature names for {X.shape[2]} features of X")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Y))):
            raise DataError("the dataset holds NaN or inf values; drop those samples first")
        grid = np.arange(X.shape[1], dtype=float)
        super().__init__(
            Y,
            {f: X[:, :, j] for j, f in enumerate(features)},
            names=names,
            abscissa=dict.fromkeys(features, grid),
            lower=lower,
            upper=upper,
            meta=meta,
        )
        self._X: np.ndarray | None = X

    @classmethod
    def of(cls, data: Dataset, features: Sequence[str] | None = None) -> SequenceDataset:
        """Any dataset as sequences: the named response keys (default: all, which must have one length) as
        features; a key that is a whole channel becomes ``"<key>.y"``. Such curves are taken on their grid as they
        are, while :meth:`InverseCalibrator.identify` resamples an ``Experiment`` to ``L`` points equally spaced in
        its progress coordinate: the two agree on a uniform grid; on another grid, identify from the array on the
        grid."""
        if isinstance(data, SequenceDataset) and features is None:
            return data
        keys = list(features) if features else list(data.keys)
        feats = [k if k.endswith((".x", ".y")) else k + ".y" for k in keys]
        lower, upper = data.lower, data.upper
        if lower is None and data.space is not None:
            lower, upper = data.space.lower, data.space.upper
        return cls(data.sequences(keys), data.theta, data.names, feats, lower, upper, dict(data.meta))

    def _derived(self, *args: Any) -> Dataset:
        out = super()._derived(*args)
        out._X = None
        return out

    @property
    def X(self) -> np.ndarray:
        if self._X is None:
            self._X = np.stack(list(self.responses.values()), axis=2)
        return self._X

    @property
    def Y(self) -> np.ndarray:
        return self.theta

    @property
    def features(self) -> tuple[str, ...]:
        return self.keys

    @property
    def length(self) -> int:
        return int(self.X.shape[1])

    def subset(self, idx: np.ndarray) -> SequenceDataset:
        return super().subset(idx)  # type: ignore[return-value]

    def split(self, val_fraction: float = 0.2, seed: SeedLike = None) -> tuple[SequenceDataset, SequenceDataset]:
        return super().split(val_fraction, seed)  # type: ignore[return-value]

    def select(self, names: Sequence[str]) -> SequenceDataset:
        """Keep only the named parameters as targets (for instance those GDR-Net ranks first)."""
        return super().select(names)  # type: ignore[return-value]

    def unit(self) -> np.ndarray:
        """``(n, d)`` parameters in ``[0, 1]`` coordinates of the bounds (of the data's range without bounds)."""
        return ParameterScaler.fit(self.Y, self.lower, self.upper).transform(self.Y)

    def save_npz(self, path: str | os.PathLike[str]) -> Path:
        """Write the dataset in the layout of a run store's dataset export (``response/sim/<channel>/x|y|t``
        with the resampled sequences and a sample-index progress ``t``), readable by :func:`from_npz`."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {
            "names": np.array(self.names),
            "X": self.Y,
            "feature_names": np.array(self.features),
        }
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


def _lhs(n: int, d: int, seed: SeedLike) -> np.ndarray:
    return qmc.LatinHypercube(d, rng=np.random.default_rng(seed)).random(int(n))


def default_features(response: Mapping[str, Any]) -> list[str]:
    """The loop channels of a response (abscissa not the progress coordinate), else all its channels."""
    curves = {k: (c.x, c.y, c.t) for k, c in response.items()}
    loops = [k for k, v in curves.items() if is_loop(*v[::2])]
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
        X,
        space.from_unit(U[ok]),
        space.free_names,
        feats,
        space.lower,
        space.upper,
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
    ds, _ = simulate_sequences(
        model, _lhs(n, space.dim, seed), features=features, length=length, space=space, conditions=conditions
    )
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
    ds = Dataset.from_arrays(data, features=features, length=int(length), source=source)
    out = SequenceDataset(
        ds.sequences(), ds.theta, ds.names, ds.keys, data.get("lower"), data.get("upper"), {"source": str(source)}
    )
    return out.select(list(targets)) if targets else out


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
