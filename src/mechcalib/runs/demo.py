"""``mechcalib demo``: the built-in Duffing oscillator calibrated against noisy synthetic data with known
parameters, as a run folder that ``show``, ``report``, ``uncertainty`` and ``resume`` open like any other."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..config import RunConfig
from .execute import ProgressHook, RunRecord, run_config
from .folder import STORE_FILE

__all__ = ["DEMO_FOLDER", "demo_config", "demo_folder", "run_demo"]

#: the demo's run folder when none is given (``runs/demo``, then ``runs/demo-2``... when it holds a run)
DEMO_FOLDER = Path("runs") / "demo"


def demo_config(*, optimizer: str = "auto", evals: int = 400, noise: float = 0.02, seed: int = 0) -> RunConfig:
    """The demo's configuration: ``duffing`` at its ``default`` preset (the truth) with Ding et al.'s (2021)
    eq. 36 noise of level ``noise`` (seeded by ``seed``), Kibriya et al.'s (2023) overlap objective, the
    optimiser ``optimizer`` seeded by ``seed``, ``evals`` evaluations, serial, no plots."""
    data: dict[str, Any] = {
        "name": "demo",
        "description": "Duffing oscillator against noisy synthetic data with known parameters (mechcalib demo)",
        "seed": seed,
        "model": {"name": "duffing", "preset": "default"},
        "experiments": [{"kind": "synthetic", "name": "synthetic_duffing", "noise": noise, "seed": seed}],
        "objective": {"name": "overlap_rss"},
        "optimizer": {"name": optimizer},
        "budget": {"max_evals": evals},
        "evaluator": {"kind": "serial"},
        "output": {"directory": str(DEMO_FOLDER.parent), "plots": False},
    }
    return RunConfig.from_dict(data)


def demo_folder(out: str | os.PathLike[str] | None = None) -> Path:
    """``out`` when given; else the first of ``runs/demo``, ``runs/demo-2``, ... that holds no run yet."""
    if out is not None:
        return Path(out)
    folder, i = DEMO_FOLDER, 1
    while (folder / STORE_FILE).exists():
        i += 1
        folder = DEMO_FOLDER.with_name(f"{DEMO_FOLDER.name}-{i}")
    return folder


def run_demo(
    out: str | os.PathLike[str] | None = None,
    *,
    optimizer: str = "auto",
    evals: int = 400,
    noise: float = 0.02,
    seed: int = 0,
    plots: bool = False,
    progress: ProgressHook | None = None,
) -> RunRecord:
    """Run the demo (:func:`demo_config`) into the run folder ``out`` (default :func:`demo_folder`)."""
    cfg = demo_config(optimizer=optimizer, evals=evals, noise=noise, seed=seed)
    return run_config(cfg, demo_folder(out), progress=progress, plots=plots)
