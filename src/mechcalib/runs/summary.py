"""What a run folder says of its run: ``result.json`` when a run ends (:func:`result_summary`), the state of a
stored run while it may still be running (:func:`run_summary`, the ``show`` command) and the intervals of
``mechcalib uncertainty`` in the short form both carry (:func:`uncertainty_brief`)."""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from ..calibrate import Result
from ..config import RunConfig
from ..core.parameters import ParameterSpace, bound_warnings, bounds_report
from ..errors import ConfigurationError
from ..execution import Evaluator
from ..execution.dask_backend import event_counts
from ..storage import RunStore, Store
from ..storage.integrity import EvaluationsLostError
from .folder import (
    RESULT_FILE,
    STORE_FILE,
    UNCERTAINTY_FILE,
    json_clean,
    now,
    read_uncertainty,
    run_name_in,
    store_path,
)
from .loss import folder_loss

__all__ = [
    "apply_polished_best",
    "bounds_note",
    "cluster_note",
    "folder_uncertainty_brief",
    "polished_best",
    "result_summary",
    "run_summary",
    "uncertainty_brief",
]


def bounds_note(summary: dict[str, Any]) -> list[str]:
    """The warnings of a ``result.json`` or ``show`` summary about parameters that end at a bound (one line each,
    with the advice to widen the box); ``[]`` when none does."""
    return bound_warnings(summary.get("bounds") or {}, summary.get("best"))


def result_summary(
    result: Result, cfg: RunConfig, store: Store, evaluator: Evaluator, *, wall: float
) -> dict[str, Any]:
    """The ``result.json`` content.

    Keys: ``run_name``, ``status``, ``name`` (the configuration's), ``model``, ``optimizer``, ``settings``,
    ``seed`` (the seed the run used, drawn and recorded when the configuration gives none), ``best``
    (every parameter by name, fixed ones included; ``null`` when every evaluation failed), ``bounds`` (per
    free parameter its ``lower`` and ``upper`` bound and ``at_bound``: ``"lower"``/``"upper"`` when the best ends
    within 1 % of the range of that bound, else ``null``; :func:`bounds_note`), ``best_loss``
    (``null`` when every evaluation failed), ``last_error`` (the last failure's message, ``null`` without),
    ``n_evaluations``, ``n_failed``, ``failures`` (count by status), ``n_batches``, ``stop_reason``
    (``converged``, ``budget``, ``target``, ``patience``, ...), ``stop`` (:func:`stop_note`), ``alternatives`` (``[{"params", "loss"}]``, best first), ``choices`` (the method's recorded decisions,
    e.g. ``auto``'s design, starts, fallback rule and phase boundaries; ``[]`` for methods that record none),
    ``n_simulated``/``n_cached``/``n_replayed``
    (of the last invocation: a resume that recomputes nothing has ``n_simulated == 0``), ``budget``,
    ``evaluator``, ``timings`` (``wall_seconds`` and ``calibrate_seconds`` of the last invocation,
    ``simulation_seconds`` summed over the simulation calls of the run (sets simulated together count once), ``mean_simulation_seconds``,
    ``created``/``updated`` of the run), ``config_path``, ``store``, ``versions``, ``written``; ``uncertainty``
    (added by the caller: the intervals of ``mechcalib uncertainty``, ``stale`` once the best has moved).
    """
    if result.run_name is None:
        raise ConfigurationError("result_summary needs a Result recorded in a store (its run_name is None)")
    info = store.run(result.run_name)
    # totals from the store's exact counters, right for a compacted run too (failures are always kept)
    fails = store.failures(info.id)
    timing = store.timing(info.id)
    n_live = int(timing["n_live"])
    # without one successful evaluation the optimiser's best is a failure's penalty, not a result
    none_ok = info.n_failed >= info.n_evals
    model = cfg.model.name
    if model is None and cfg.model.external is not None:
        model = cfg.model.external.name
    return {
        "run_name": result.run_name,
        "status": info.status,
        "name": cfg.name,
        "model": model,
        "optimizer": result.optimizer,
        "settings": result.settings,
        "seed": info.seed,
        "best": None if none_ok else result.best_params,
        "bounds": {} if none_ok else bounds_report(info.space, result.best_params),
        "best_loss": None if none_ok or not math.isfinite(result.best_loss) else result.best_loss,
        "last_error": fails[-1].error if fails else None,
        "n_evaluations": result.n_evals,
        "n_failed": result.n_failed,
        "failures": dict(Counter(r.status for r in fails)),
        "n_batches": result.n_batches,
        "stop_reason": result.stop_reason,
        "stop": stop_note(result.stop_reason, result.choices, result.n_evals, cfg.budget.max_evals),
        "alternatives": [{"params": p, "loss": f} for p, f in result.alternatives],
        "choices": result.choices,
        **_spread_entry(info.space, result.choices),
        "n_simulated": result.n_simulated,
        "n_cached": result.n_cached,
        "n_replayed": result.n_replayed,
        "budget": cfg.budget.model_dump(),
        "evaluator": evaluator.describe(),
        "timings": {
            "wall_seconds": wall,
            "calibrate_seconds": result.seconds,
            "simulation_seconds": float(timing["seconds"]),
            "mean_simulation_seconds": float(timing["seconds"]) / n_live if n_live else None,
            "created": info.created,
            "updated": info.updated,
        },
        "config_path": cfg.source,
        "store": STORE_FILE,
        "versions": info.versions,
        "written": now(),
    }


def ensemble_spread(space: list[dict[str, Any]], choices: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The final ensemble of an ensemble method (``eki``'s ``spread`` choice) in the parameters' units: per free
    parameter the members' ``mean``, ``std``, ``min`` and ``max``, with a ``note`` that it is a spread, not an
    interval; ``None`` for other methods (or a run recorded before the members were kept)."""
    spread = next((c for c in reversed(choices) if c.get("choice") == "spread" and "members" in c), None)
    if spread is None:
        return None
    ps = ParameterSpace.from_record(space)
    U = np.asarray(spread["members"], dtype=float)
    if U.ndim != 2 or U.shape[1] != ps.dim:
        return None
    X = ps.from_unit(U)
    out = {name: {"mean": float(x.mean()), "std": float(x.std(ddof=1)), "min": float(x.min()), "max": float(x.max())}
           for name, x in zip(ps.free_names, X.T, strict=True)}  # fmt: skip
    reason = str(spread.get("reason", "a spread, not an interval"))
    note = reason.replace("the final ensemble's spread (unit cube)", f"the final ensemble of {U.shape[0]} members")
    return {"parameters": out, "note": note}


def _spread_entry(space: list[dict[str, Any]], choices: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"ensemble_spread": ...}`` for a run with an ensemble, else nothing (other methods' files unchanged)."""
    spread = ensemble_spread(space, choices)
    return {} if spread is None else {"ensemble_spread": spread}


def stop_note(reason: str | None, choices: list[dict[str, Any]], n_evals: int, max_evals: int | None) -> str | None:
    """Why a finished run stopped, in words, with what to do next: ``converged`` at which evaluation by which
    rule, or stopped by the ``budget`` before converging (continue it with ``resume --budget``)."""
    if reason is None:
        return None
    if reason == "converged":
        rule = next((c for c in reversed(choices) if c.get("choice") == "converged"), None)
        if rule is None:
            return "converged: the method's own stopping rule fired"
        return (
            f"converged at evaluation {rule['at_eval']}: {rule['reason']}; to search further, run again with a "
            "larger `confirm` (auto) or another method"
        )
    if reason in ("budget", "max_evals"):  # max_evals: the name runs recorded before
        cut = next((c for c in reversed(choices) if c.get("choice") == "stop"), None)
        why = f" ({cut['reason']})" if cut is not None else ""
        more = 2 * max_evals if max_evals else 2 * n_evals
        return (
            f"stopped by the budget of {max_evals if max_evals else n_evals} evaluations before converging{why}; "
            f"continue with `mechcalib resume RUN --budget {more}`"
        )
    return None


def run_summary(out_dir: str | os.PathLike[str], *, run: str | None = None, n_failures: int = 5) -> dict[str, Any]:
    """A stored run's state, read while it may still be running (the store is opened read-only).

    Keys: ``run_name``, ``status`` (``running``, ``finished``, ``interrupted``, ``failed``), ``stop_reason``,
    ``stop`` (:func:`stop_note`, for a finished run), ``error``, ``optimizer``, ``seed``, ``n_evaluations``, ``n_failed``, ``failures`` (count by status),
    ``recent_failures`` (the last ``n_failures``: ``idx``, ``status``, ``error``), ``best`` (every parameter
    of the best ok evaluation by name, ``null`` when none succeeded), ``bounds`` (as in ``result.json``:
    :func:`result_summary`), ``best_loss``, ``best_index``,
    ``budget`` (the termination rules), ``n_batches``, ``created``, ``updated``, ``store``, ``result``
    (the ``result.json`` path when written), ``damage`` (the integrity check's complaints: ``[]`` when the
    store is sound, ``null`` when it was too large to check quickly), ``lost`` (``null``, or the evaluations
    the counts file or ``result.json`` record as stored that the store lacks: ``evaluations``, ``possibly``
    and a ``note`` in words; :mod:`.loss`), ``uncertainty`` (per parameter ``best``,
    ``lower``, ``upper``, ``std``, ``method`` after ``mechcalib uncertainty``; ``null`` before), ``cluster``
    (the events of a run on dask workers, :func:`cluster_note`: ``lost_worker``, ``walltime``, ``resubmitted``).
    """
    out = Path(out_dir)
    spath = store_path(out)
    loss = folder_loss(out, run)
    with RunStore(spath, readonly=True) as store:
        if loss is not None and not store.runs():
            raise EvaluationsLostError(
                f"{loss.describe()}; put the original {spath.name} back, or simulate them again with "
                f"`mechcalib resume {out} --accept-loss`"
            )
        name = run_name_in(store, out, run)
        info = store.run(name)
        fails = store.failures(name)
        best = store.best(name)
        damage = store.damage
    params = None
    if best is not None:
        params = {p["name"]: (p["fixed"] if p.get("fixed") is not None else best.params[p["name"]]) for p in info.space}
    summary: dict[str, Any] = json_clean(
        {
            "run_name": info.name,
            "status": info.status,
            "stop_reason": info.stop_reason,
            "stop": stop_note(
                info.stop_reason if info.status == "finished" else None,
                info.choices,
                info.n_evals,
                (info.termination or {}).get("max_evals"),
            ),
            "error": info.error,
            "optimizer": info.optimizer,
            "seed": info.seed,
            "n_evaluations": info.n_evals,
            "n_failed": info.n_failed,
            "failures": dict(Counter(r.status for r in fails)),
            "recent_failures": [{"idx": r.idx, "status": r.status, "error": r.error} for r in fails[-n_failures:]]
            if n_failures
            else [],
            "best": params,
            "bounds": {} if params is None else bounds_report(info.space, params),
            "best_loss": best.loss if best is not None else None,
            "best_index": best.idx if best is not None else None,
            "budget": info.termination,
            "n_batches": info.n_batches,
            "created": info.created,
            "updated": info.updated,
            "store": str(spath),
            "result": str(out / RESULT_FILE) if (out / RESULT_FILE).is_file() else None,
            "damage": damage,
            "lost": None
            if loss is None
            else {"evaluations": loss.definite, "possibly": loss.possible, "note": loss.describe()},
            "uncertainty": folder_uncertainty_brief(out, best.idx if best is not None else None),
            "best_source": None if best is None else f"evaluation {best.idx}",
            "cluster": event_counts(out) if out.is_dir() else {},
            "ensemble_spread": ensemble_spread(info.space, info.choices),
        }
    )
    apply_polished_best(summary, read_uncertainty(out), summary["best_index"])
    return summary


def cluster_note(counts: dict[str, int]) -> str | None:
    """The cluster events of a run in words (``None`` without any): workers lost, jobs ended at their walltime,
    simulations submitted again (each written in the folder's run.log)."""
    words = (
        ("lost_worker", "worker lost", "workers lost"),
        ("walltime", "job ended at its walltime", "jobs ended at their walltime"),
        ("resubmitted", "simulation resubmitted", "simulations resubmitted"),
    )
    parts = [f"{counts[k]} {one if counts[k] == 1 else many}" for k, one, many in words if counts.get(k)]
    return ", ".join(parts) if parts else None


def uncertainty_brief(data: dict[str, Any], *, best_index: int | None = None) -> dict[str, Any]:
    """The ``result.json`` / ``show`` form of an ``uncertainty.json``: the method and per parameter ``best``,
    ``lower``, ``upper``, ``std``, ``method``, ``at_bound`` and ``cut`` (the interval's ends cut by the box). Given the run's present ``best_index``, ``stale`` says whether the
    run has found a better point since the intervals were computed (``None`` when the file does not say)."""
    keys = ("best", "lower", "upper", "std", "method", "at_bound", "cut")
    source = data.get("source") or {}
    stale = None
    if best_index is not None and source.get("best_index") is not None:
        stale = int(source["best_index"]) != int(best_index)
    out = {
        "method": data.get("method"),
        "converged": data.get("converged"),
        "parameters": {n: {k: p.get(k) for k in keys} for n, p in (data.get("parameters") or {}).items()},
        "least_identifiable": (data.get("local") or {}).get("least_identifiable"),
        "file": UNCERTAINTY_FILE,
        "stale": stale,
    }
    if stale:
        out["note"] = (
            f"computed at evaluation {source['best_index']}, but the run's best is now evaluation {best_index}; "
            "run `mechcalib uncertainty` on the run folder again to bring the intervals up to date"
        )
    return out


def folder_uncertainty_brief(out: Path, best_index: int | None) -> dict[str, Any] | None:
    """The intervals of ``mechcalib uncertainty`` when it was run in the folder (``uncertainty.json``)."""
    data = read_uncertainty(out)
    return None if data is None else uncertainty_brief(data, best_index=best_index)


def polished_best(
    data: dict[str, Any] | None, best_index: int | None, best_loss: float | None
) -> tuple[dict[str, float], float, str] | None:
    """The optimum ``mechcalib uncertainty`` polished from the run's best evaluation (``uncertainty.json``'s
    ``parameters[*].best`` and ``best_loss``), with the words saying where it came from: ``None`` without an
    analysis, when the run has found a better evaluation since (stale), or when the polish did not lower the
    loss. Only the free parameters; the fixed ones are the evaluation's."""
    if not data or best_index is None or best_loss is None:
        return None
    source = data.get("source") or {}
    loss = data.get("best_loss")
    params = {n: p.get("best") for n, p in (data.get("parameters") or {}).items()}
    if source.get("best_index") is None or int(source["best_index"]) != int(best_index):
        return None
    if not isinstance(loss, int | float) or not math.isfinite(loss) or loss > best_loss:
        return None
    if not params or not all(isinstance(v, int | float) and math.isfinite(v) for v in params.values()):
        return None
    return params, float(loss), f"polished by `mechcalib uncertainty` from evaluation {best_index} ({UNCERTAINTY_FILE})"


def apply_polished_best(summary: dict[str, Any], data: dict[str, Any] | None, best_index: int | None) -> None:
    """Make ``best`` and ``best_loss`` of a ``result.json`` or ``show`` summary the polished optimum when
    :func:`polished_best` gives one, keeping the run's best evaluation under ``best_evaluated``; ``best_source``
    says which one ``best`` is (set only where an analysis exists or the summary already names it)."""
    evaluated = summary.pop("best_evaluated", None)  # a summary polished before: from its evaluation again
    if evaluated is not None:
        summary["best"], summary["best_loss"] = evaluated["params"], evaluated["loss"]
    if data is None and "best_source" not in summary:
        return
    found = polished_best(data, best_index, summary.get("best_loss"))
    if found is None:
        if summary.get("best") is not None and best_index is not None:
            summary["best_source"] = f"evaluation {best_index}"
        return
    params, loss, words = found
    summary["best_evaluated"] = {"params": summary["best"], "loss": summary["best_loss"], "index": best_index}
    summary["best"] = {**summary["best"], **params}
    summary["best_loss"] = loss
    summary["best_source"] = words
