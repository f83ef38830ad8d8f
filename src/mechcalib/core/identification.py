"""One result type and one interface for every identification method.

A method learns from a :class:`~mechcalib.core.dataset.Dataset` once (:meth:`Method.fit`) and then identifies the
parameters of an experiment or a curve (:meth:`Method.identify`), answering an :class:`Identification`: the
parameters by name and as an array, the loss where the method minimises one, and its provenance (method,
settings, the dataset it learnt from). The surrogate strategies of Mareš et al. (2016)
(:mod:`mechcalib.surrogates`) and the inverse networks (:class:`mechcalib.inverse.InverseCalibrator`) implement
it; a calibration by an optimiser converts with :meth:`Identification.from_result`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dataset import Dataset
from .parameters import ParameterSpace

SeedLike = int | np.random.Generator | None


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """Where an identification comes from.

    Attributes:
        method: the method's name (``"forward_split"``, ``"PartsNet"``, ``"GRADE"``...).
        settings: the method's settings, as plain values.
        dataset: fingerprint of the training dataset (:meth:`Dataset.fingerprint`), or the run's name for a
            calibration; ``None`` when unknown.
        n_samples: the training dataset's size (``None`` for a calibration).
    """

    method: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    dataset: str | None = None
    n_samples: int | None = None


@dataclass(kw_only=True)
class Identification:
    """Parameters identified from one experiment or curve.

    Attributes:
        names: the identified parameters.
        values: ``(d,)`` their physical values (the unit-cube coordinates when the method knows no scale).
        loss: the minimised value, ``None`` for a method that minimises nothing (an inverse network).
        provenance: method, settings and dataset.
        unit: ``(d,)`` unit-cube coordinates, when the method works in them (the surrogate strategies: they may
            leave ``[0, 1]`` when a network extrapolates).
        outside: True when the target lies outside the training domain (the result extrapolates).
        notes: what lies outside, in words, or other remarks.
        n_evals: evaluations spent by an optimiser (0 for a one-pass method).
    """

    names: tuple[str, ...]
    values: np.ndarray
    loss: float | None = None
    provenance: Provenance = field(default_factory=lambda: Provenance(method=""))
    unit: np.ndarray | None = None
    outside: bool = False
    notes: list[str] = field(default_factory=list)
    n_evals: int = 0

    def __post_init__(self) -> None:
        self.names = tuple(str(n) for n in self.names)
        self.values = np.asarray(self.values, dtype=float).ravel()
        if self.values.size != len(self.names):
            from ..errors import DataError

            raise DataError(
                f"an identification needs one value per name, got {len(self.names)} names and {self.values.size} values"
            )
        if self.unit is not None:
            self.unit = np.asarray(self.unit, dtype=float).ravel()

    @property
    def parameters(self) -> dict[str, float]:
        """``{name: value}``."""
        return {n: float(v) for n, v in zip(self.names, self.values, strict=True)}

    @property
    def method(self) -> str:
        return self.provenance.method

    @property
    def p(self) -> np.ndarray:
        """The unit-cube coordinates when known, else the values (the surrogate strategies' ``p``)."""
        return self.unit if self.unit is not None else self.values

    def params(self, space: ParameterSpace | None = None) -> dict[str, float]:
        """Physical values by name; with ``space``, every parameter of it (fixed ones inserted) from :attr:`p`
        taken as unit-cube coordinates of that space."""
        if space is None:
            return self.parameters
        return space.as_dict(space.full_from_unit(self.p)[0])

    @classmethod
    def from_result(cls, result: Any, space: ParameterSpace | None = None) -> Identification:
        """A calibration's :class:`~mechcalib.calibrate.Result` as an identification: the best parameters (every
        parameter, fixed ones included), the best loss, the optimiser and its settings, the run's name. With
        ``space`` (the problem's) the free parameters alone, with their unit-cube coordinates."""
        notes = [f"stopped: {result.stop_reason}"]
        if space is not None:
            x = np.asarray(result.best_x, dtype=float)
            names, values, unit = space.free_names, x, space.to_unit(x[None])[0]
        else:
            names, values, unit = tuple(result.best_params), np.array(list(result.best_params.values())), None
        prov = Provenance(method=str(result.optimizer), settings=dict(result.settings or {}), dataset=result.run_name)
        return cls(
            names=names,
            values=values,
            loss=float(result.best_loss),
            provenance=prov,
            unit=unit,
            notes=notes,
            n_evals=int(result.n_evals),
        )


class Method(ABC):
    """An identification method: learn once from a dataset, then identify from experiments or curves.

    Subclasses set :attr:`name` and implement :meth:`fit` and :meth:`identify`; :meth:`describe` (plain values) and
    the fitted dataset feed each result's :class:`Provenance`.
    """

    name: str = "method"

    @abstractmethod
    def fit(self, dataset: Dataset, *, seed: SeedLike = None) -> Method:
        """Learn from ``dataset``; returns ``self``."""

    @abstractmethod
    def identify(self, target: Any, *, seed: SeedLike = None) -> Identification:
        """Identify the parameters of one experiment or curve (the forms a method accepts are in its docs)."""

    def describe(self) -> dict[str, Any]:
        """The method's settings as plain values (for provenance)."""
        return {}

    def provenance(self, dataset: Dataset | None) -> Provenance:
        return Provenance(
            method=self.name,
            settings=self.describe(),
            dataset=dataset.fingerprint() if dataset is not None else None,
            n_samples=len(dataset) if dataset is not None else None,
        )
