"""Deep inverse calibration (Hu et al. (2024)): PartsNet, its ablation family, GDR-Net, metrics and error quantification.

Given simulated ``(parameters, response sequence)`` pairs, learn sequence -> parameters and then calibrate from a
measured sequence in one forward pass.

* :mod:`.sequences`: sequence datasets (a view of :class:`mechcalib.core.dataset.Dataset`) from a model (Latin
  hypercube) or a run store's export, measured sequences from CSV; :mod:`.scalers`; :mod:`.data`: generation
  through the run engine, and every name of the other two (numpy only);
* :mod:`.metrics`: Appendix A's MSE, MAE, RMSE, MedAE, quantile loss and R², and section 4.2's adaptive
  difference, systematic error and standard error (numpy only);
* :mod:`.gdr`: GDR-Net, the quality label γ (eqs. 1-3, numpy) and the VAE with its quality head and parameter
  weights (eqs. 4-6, torch);
* :mod:`.network`: Encoder-Net and Decoder-Net, one configurable :class:`InverseNet` covering Table 4's eight
  networks (torch);
* :mod:`.train`: :class:`InverseCalibrator` (training with Table 1's settings, prediction, save/load; torch), a
  :class:`mechcalib.core.identification.Method` whose ``identify`` answers an ``Identification``.

The torch parts need the extra ``mechcalib[deep]``; they load on first use, so ``import mechcalib.inverse`` works
without torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..registry import Registry
from .data import (
    PAPER_LENGTH,
    ParameterScaler,
    SequenceDataset,
    SequenceScaler,
    from_model,
    from_npz,
    read_sequence_csv,
    resample_on_progress,
    simulate_sequences,
    train_val_split,
)
from .gdr import cross_correlation, gamma_label, quality_labels
from .metrics import (
    METRIC_NAMES,
    adaptive_difference,
    mae,
    medae,
    mse,
    pearson,
    quantile_loss,
    r2,
    regression_metrics,
    rmse,
    standard_error,
    systematic_error,
)

_LAZY = {
    "GDRNet": "gdr",
    "InverseNet": "network",
    "NetConfig": "network",
    "VARIANTS": "network",
    "sparse_mask": "network",
    "InverseCalibrator": "train",
    "InverseAccuracyWarning": "train",
    "TrainConfig": "train",
    "PAPER_001": "train",
    "train_variants": "train",
}

#: The inverse networks by name: ``partsnet`` trains any of Table 4's eight networks (its ``net`` argument takes
#: the variant name of :data:`VARIANTS`), ``gdr`` is GDR-Net. Both need torch, which loads on lookup.
NETWORKS: Registry[type] = Registry(
    "inverse network",
    entries={"partsnet": "mechcalib.inverse:InverseCalibrator", "gdr": "mechcalib.inverse.gdr:GDRNet"},
)

__all__ = [
    "METRIC_NAMES",
    "NETWORKS",
    "PAPER_001",
    "PAPER_LENGTH",
    "VARIANTS",
    "GDRNet",
    "InverseAccuracyWarning",
    "InverseCalibrator",
    "InverseNet",
    "NetConfig",
    "ParameterScaler",
    "SequenceDataset",
    "SequenceScaler",
    "TrainConfig",
    "adaptive_difference",
    "cross_correlation",
    "from_model",
    "from_npz",
    "gamma_label",
    "mae",
    "medae",
    "mse",
    "pearson",
    "quality_labels",
    "quantile_loss",
    "r2",
    "read_sequence_csv",
    "regression_metrics",
    "resample_on_progress",
    "rmse",
    "simulate_sequences",
    "sparse_mask",
    "standard_error",
    "systematic_error",
    "train_val_split",
    "train_variants",
]


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if mod in ("network", "train"):
        from ..errors import require

        require("torch", "deep")
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)
