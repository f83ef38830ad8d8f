"""The objective contract: a weighted sum over channels of a per-channel misfit between a simulated
response and an experiment. The misfits themselves live in :mod:`mechcalib.objectives`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError, SettingError
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
