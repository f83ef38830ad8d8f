"""Calibration runs kept in a folder: what the ``run``, ``resume``, ``show``, ``export``, ``report``,
``repair``, ``archive`` and ``uncertainty`` commands do, callable from Python.

A run folder holds::

    store.sqlite    the run store: every evaluation, optimiser checkpoints, the run's configuration
    store.sqlite-wal  its write-ahead log: the latest evaluations may live only there (copy the folder with
                    `mechcalib archive RUN DEST`, :func:`archive_run`, which cannot leave it behind)
    store.sqlite.counts.json  the evaluations recorded as stored, outside the store (:mod:`.loss`)
    run.json        how the run was started: run name, configuration file, command-line overrides
    result.json     written when the run ends (see :func:`result_summary` for the fields)
    run.lock        locked (``flock``) by the one process running or resuming there (:func:`folder_lock`)
    *.png           plots (:func:`write_report`)
    uncertainty.json, samples.csv, samples.npz   after ``mechcalib uncertainty`` (:mod:`.uncertainty`)

The modules, each above the ones it imports: :mod:`.folder` (file names, the store's path, the run named in
``run.json``, JSON written atomically, the lock), :mod:`.configuration` (command-line overrides, the evaluator,
a stored run's configuration), :mod:`.summary` (``result.json``, ``show``), :mod:`.report` (plots),
:mod:`.loss` (evaluations a folder lost), :mod:`.execute` (run, resume), :mod:`.demo` (``mechcalib demo``), :mod:`.repair`, :mod:`.archive` (a safe copy), :mod:`.export`, :mod:`.uncertainty` (the uncertainty library on
a run folder). Example::

    from mechcalib.runs import run_config, resume_run, run_summary
    rec = run_config("examples/linear.toml", "runs/linear", budget=100, seed=1)
    rec.summary["best"], rec.summary["best_loss"]
    rec = resume_run("runs/linear", budget=200)          # continue to 200 evaluations
    run_summary("runs/linear")["n_evaluations"]          # 200
"""

from __future__ import annotations

from .archive import ArchiveReport, archive_run
from .configuration import apply_overrides, build_evaluator, cli_overrides, load_run_config
from .demo import DEMO_FOLDER, demo_config, run_demo
from .execute import ProgressHook, RunRecord, cancel_jobs, resume_run, run_config
from .export import export_run
from .folder import (
    LOCK_FILE,
    MANIFEST_FILE,
    RESULT_FILE,
    STORE_FILE,
    UNCERTAINTY_FILE,
    RunDirError,
    folder_lock,
    locked_by_another,
)
from .repair import repair_run
from .report import write_report, write_uncertainty_plots
from .summary import bounds_note, cluster_note, result_summary, run_summary
from .uncertainty import folder_uncertainty

__all__ = [
    "cancel_jobs",
    "ArchiveReport",
    "DEMO_FOLDER",
    "LOCK_FILE",
    "MANIFEST_FILE",
    "RESULT_FILE",
    "STORE_FILE",
    "UNCERTAINTY_FILE",
    "ProgressHook",
    "RunDirError",
    "RunRecord",
    "apply_overrides",
    "archive_run",
    "bounds_note",
    "build_evaluator",
    "cli_overrides",
    "cluster_note",
    "demo_config",
    "export_run",
    "folder_lock",
    "folder_uncertainty",
    "load_run_config",
    "locked_by_another",
    "repair_run",
    "result_summary",
    "resume_run",
    "run_demo",
    "run_config",
    "run_summary",
    "write_report",
    "write_uncertainty_plots",
]
