"""Scalers of the inverse networks: :class:`SequenceScaler` standardises the input sequences (per feature, or per
time step and feature); :class:`ParameterScaler` maps every parameter linearly to ``[0, 1]`` by its search bounds
when known, else by the training data's range. The network learns and is scored in these scaled units."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DataError


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
