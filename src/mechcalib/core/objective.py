"""The objective contract: a weighted sum over channels of a per-channel misfit between a simulated
response and an experiment. The misfits themselves live in :mod:`mechcalib.objectives`.

An objective whose misfit is built from squares also gives its *residual vector* (``has_residuals``;
``residuals``), the input of Gauss-Newton-type methods: each channel's residuals scaled by the square root
of the channel's weight, concatenated in channel order, of a length fixed by the experiment
(``n_residuals``). ``residual_loss`` states how the loss follows from them: ``"sum_squares"`` (the loss is
``sum(r**2)``) or ``"root_per_channel"`` (each channel's misfit is ``sqrt(sum(r_ch**2))``, so the loss is
``sum_ch sqrt(w_ch) * ||r_ch||`` and ``sum(r**2) = sum_ch w_ch * misfit_ch**2``, the least-squares form of
the same fit: it equals the loss squared for one channel of weight 1).

An objective declares the lowest value it can give (``lower_bound``: ``0.0`` for the built-in sums of squares
and of absolute values; ``-inf``, the default, for one that declares none), so that a problem can refuse a
``failure_loss`` below it: a failed simulation must not beat a real result.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..errors import ConfigurationError, DataError, SettingError
from .data import Curve, Experiment


@dataclass(frozen=True)
class Objective:
    """Base class: a weighted sum over channels of a per-channel misfit.

    Args:
        weights: ``{channel: weight}``; channels not named weigh 1. A channel of the experiment that the
            simulation lacks is an error.
        channels: restrict the objective to these channels (default: every channel of the experiment).
    """

    weights: Mapping[str, float] = field(default_factory=dict)
    channels: tuple[str, ...] | None = None

    name = "objective"
    #: whether ``channel_residuals`` is implemented (the misfit is built from a sum of squares)
    has_residuals = False
    #: how the loss follows from the residuals: ``"sum_squares"`` or ``"root_per_channel"`` (module docstring)
    residual_loss = ""
    #: the lowest value the objective can give (with weights >= 0); ``-inf``: none declared. A problem
    #: refuses a ``failure_loss`` below it (summed over its experiments' weights).
    lower_bound: ClassVar[float] = -math.inf

    def __init_subclass__(cls, **kw: object) -> None:
        super().__init_subclass__(**kw)
        # a subclass that changes the misfit but not the residuals would give residuals of another loss
        own = vars(cls)
        changed = "channel_misfit" in own or "values_many" in own
        if changed and "channel_residuals" not in own and "has_residuals" not in own:
            cls.has_residuals = False
        # nor may it keep a lower bound its parent declared for another misfit
        if (changed or "__call__" in own or "breakdown" in own) and "lower_bound" not in own:
            cls.lower_bound = -math.inf

    def __post_init__(self) -> None:
        for k, w in dict(self.weights).items():
            if not np.isfinite(w) or w < 0:
                raise SettingError(
                    "",
                    "weights",
                    "finite weights >= 0",
                    w,
                    message=f"channel weight for {k!r} must be finite and >= 0, got {w!r}",
                )

    def channel_misfit(self, sim: Curve, exp: Curve) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def channel_residuals(self, sim: Curve, exp: Curve) -> np.ndarray:
        """The unweighted residuals ``(k,)`` of one channel (objectives with ``has_residuals``)."""
        raise ConfigurationError(
            f"objective {self.name!r} has no residual vector (its loss is not a sum of squares); least-squares "
            "methods need one: use an objective with residuals (l2, f1, f2, overlap_rss, smoothed_overlap_rss) or a derivative-free optimizer"
        )

    def channel_residual_count(self, exp: Curve) -> int:
        """The length of :meth:`channel_residuals` for a measured channel ``exp``."""
        raise ConfigurationError(f"objective {self.name!r} has no residual vector")

    def _names(self, experiment: Experiment) -> tuple[str, ...]:
        return self.channels if self.channels is not None else experiment.channel_names

    def n_residuals(self, experiment: Experiment) -> int:
        """The length of :meth:`residuals` against ``experiment`` (fixed by the data, not the simulation)."""
        return sum(self.channel_residual_count(experiment[ch]) for ch in self._names(experiment))

    def residuals(self, simulated: Mapping[str, Curve], experiment: Experiment) -> np.ndarray:
        """The residual vector ``(n_residuals(experiment),)``: each channel's :meth:`channel_residuals` times
        the square root of its weight, in channel order. See the module docstring for its relation to the
        loss (``residual_loss``)."""
        parts = []
        for ch in self._names(experiment):
            if ch not in simulated:
                raise DataError(
                    f"the simulation has no channel {ch!r} measured in experiment {experiment.name!r}; "
                    f"it has {sorted(simulated)}"
                )
            r = np.asarray(self.channel_residuals(simulated[ch], experiment[ch]), dtype=float).reshape(-1)
            k = self.channel_residual_count(experiment[ch])
            if r.shape[0] != k:
                raise DataError(
                    f"objective {self.name!r}: channel {ch!r} gave {r.shape[0]} residuals, expected {k} (the "
                    "residual length is fixed by the experiment); the objective's channel_residuals is inconsistent"
                )
            parts.append(np.sqrt(self.weights.get(ch, 1.0)) * r)
        return np.concatenate(parts) if parts else np.zeros(0)

    def breakdown(self, simulated: Mapping[str, Curve], experiment: Experiment) -> dict[str, float]:
        """Unweighted misfit of each channel."""
        names = self.channels if self.channels is not None else experiment.channel_names
        out = {}
        for ch in names:
            if ch not in simulated:
                raise DataError(
                    f"the simulation has no channel {ch!r} measured in experiment {experiment.name!r}; "
                    f"it has {sorted(simulated)}"
                )
            out[ch] = self.channel_misfit(simulated[ch], experiment[ch])
        return out

    def __call__(self, simulated: Mapping[str, Curve], experiment: Experiment) -> float:
        parts = self.breakdown(simulated, experiment)
        return float(sum(self.weights.get(ch, 1.0) * v for ch, v in parts.items()))

    def values_many(self, simulated: Sequence[Mapping[str, Curve]], experiment: Experiment) -> list[float | Exception]:
        """The objective of each response of a batch against ``experiment``, or the exception that response
        raised (that set fails alone). Response by response here; an objective that gains from seeing the
        whole batch (the neural smoother trains one stacked fit) overrides it with the same values."""
        out: list[float | Exception] = []
        for sim in simulated:
            try:
                out.append(float(self(sim, experiment)))
            except Exception as exc:  # noqa: BLE001 - reported as that set's failure
                out.append(exc)
        return out
