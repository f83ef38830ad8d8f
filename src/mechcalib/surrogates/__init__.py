"""Surrogate-based calibration (Mareš et al. (2016)): designs of experiments, sensitivity analysis, neural networks
and the identification strategies of Table 2."""

from __future__ import annotations

from ..core.dataset import Dataset
from ..core.identification import Identification, Method, Provenance
from .doe import CurveDataset, as_curves, lhs_md, md_discrepancy, random_design, simulate_dataset
from .mlp import (
    MLP,
    CVSettings,
    fit_mlp,
    fit_mlp_product,
    fit_mlps,
    mrp_error,
    pe_ratio,
)
from .sensitivity import PCA, sobol, spearman
from .strategies import (
    MARES2016_STEPS,
    MARES2016_STRATEGIES,
    PAPER_STEPS,
    PAPER_STRATEGIES,
    Direct,
    ErrorF,
    ForwardComplex,
    ForwardSplit,
    InverseExpert,
    InversePCA,
    Strategy,
    curve_on_grid,
    relative_errors,
    response_error,
)

__all__ = [
    "MLP",
    "MARES2016_STEPS",
    "MARES2016_STRATEGIES",
    "PAPER_STEPS",
    "PAPER_STRATEGIES",
    "PCA",
    "CVSettings",
    "CurveDataset",
    "Dataset",
    "Direct",
    "ErrorF",
    "ForwardComplex",
    "ForwardSplit",
    "Identification",
    "InverseExpert",
    "InversePCA",
    "Method",
    "Provenance",
    "Strategy",
    "as_curves",
    "curve_on_grid",
    "fit_mlp",
    "fit_mlp_product",
    "fit_mlps",
    "lhs_md",
    "md_discrepancy",
    "mrp_error",
    "pe_ratio",
    "random_design",
    "relative_errors",
    "response_error",
    "simulate_dataset",
    "sobol",
    "spearman",
]
