"""The user's own code on dask workers: found, shipped, and checked before the first batch.

A model (or objective) named by a ``"module:Class"`` target is pickled by reference: a worker rebuilds it by
importing ``module``. :func:`prepare_workers` runs before the problem is sent to the workers:

1. every worker tries to import the modules the problem's classes live in (:func:`user_modules`: not
   mechcalib's, not the standard library's);
2. for the modules some worker cannot import, the module's file (a lone ``.py``) or its top-level package
   (zipped, Python files only) is uploaded to the workers (dask's ``UploadFile`` worker plugin, which the
   workers that join later receive too), unless ``ship`` is off or the package cannot travel (compiled
   extension modules, over :data:`SHIP_LIMIT` bytes);
3. the import is tried again; a worker that still cannot import a module stops the run with
   :class:`WorkerImportError`: a few lines naming the module, the workers and the fix, no traceback through
   ``distributed``. The run is recorded as interrupted, so ``mechcalib resume`` continues it once fixed.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from ..errors import InfrastructureError

log = logging.getLogger(__name__)

#: the most bytes of source shipped for one package
SHIP_LIMIT = 20 * 2**20
#: files that cannot be imported from a zip archive
_COMPILED = (".so", ".pyd", ".dylib", ".dll")
#: workers named in an error before "and N more"
_SHOWN = 3

__all__ = ["SHIP_LIMIT", "WorkerImportError", "prepare_workers", "user_modules"]


class WorkerImportError(InfrastructureError):
    """A dask worker cannot import a module the problem needs (the user's model code)."""


def _is_users(module: str) -> bool:
    top = module.partition(".")[0]
    return top not in ("mechcalib", "__main__", "builtins") and top not in sys.stdlib_module_names


def user_modules(problem: Any) -> dict[str, str]:
    """The modules the problem's model and objective classes are defined in, outside mechcalib and the
    standard library: ``{module: "the model module:Class"}``."""
    found: dict[str, str] = {}
    for role in ("model", "objective"):
        obj = getattr(problem, role, None)
        if obj is None:
            continue
        cls = type(obj)
        if _is_users(cls.__module__):
            found.setdefault(cls.__module__, f"the {role} {cls.__module__}:{cls.__qualname__}")
    return found


def _import_errors(modules: list[str]) -> dict[str, str]:
    """Run on a worker: the modules it cannot import, with the reason in one line."""
    importlib.invalidate_caches()
    bad = {}
    for m in modules:
        try:
            importlib.import_module(m)
        except BaseException as exc:  # noqa: BLE001 - any failure is reported, none may kill the worker
            bad[m] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
    return bad


def _import_errors_here(modules: list[str]) -> tuple[str, dict[str, str]]:
    """As :func:`_import_errors`, as a task: the worker's address with it."""
    from distributed import get_worker

    return get_worker().address, _import_errors(modules)


def _check(client: Any, modules: list[str]) -> dict[str, dict[str, str]]:
    """``{worker: {module: reason}}`` for every worker that cannot import a module; with no worker yet,
    one task is sent (an adaptive cluster starts a job for it) and the worker that runs it answers."""
    try:
        if client.scheduler_info().get("workers"):
            answers = client.run(_import_errors, modules)
        else:
            address, bad = client.submit(_import_errors_here, modules, pure=False).result()
            answers = {address: bad}
    except Exception as exc:  # noqa: BLE001 - the check itself could not run on the workers
        raise WorkerImportError(
            f"the dask workers could not run mechcalib's check of the model's code ({type(exc).__name__}: "
            f"{str(exc)[:200]}); the workers need the same Python and mechcalib version as this process"
        ) from None
    return {w: bad for w, bad in answers.items() if bad}


def _source_of(module: str) -> tuple[Path | None, str]:
    """The file to upload for ``module``: its lone ``.py``, or its top-level package zipped; or ``None`` and
    why it cannot travel."""
    top = module.partition(".")[0]
    mod = sys.modules.get(top)
    file = getattr(mod, "__file__", None)
    if mod is None or file is None:
        return None, f"module {top!r} has no file here"
    path = Path(file)
    if path.name != "__init__.py":
        if path.suffix != ".py":
            return None, f"{path.name} is not a Python source file"
        return path, ""
    files = [p for p in path.parent.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    if any(p.suffix in _COMPILED for p in files):
        return None, f"package {top!r} holds compiled extension modules, which cannot be imported from a zip"
    py = [p for p in files if p.suffix == ".py"]
    if sum(p.stat().st_size for p in py) > SHIP_LIMIT:
        return None, f"package {top!r} is over {SHIP_LIMIT // 2**20} MB of source"
    out = Path(tempfile.mkdtemp(prefix="mechcalib-ship-")) / f"{top}.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for p in py:
            z.write(p, Path(top) / p.relative_to(path.parent))
    return out, ""


def _ship(client: Any, modules: list[str]) -> dict[str, str]:
    """Upload the top-level module or package of each of ``modules``; why each that did not travel did not."""
    from distributed.diagnostics.plugin import UploadFile

    why: dict[str, str] = {}
    for top in dict.fromkeys(m.partition(".")[0] for m in modules):
        source, reason = _source_of(top)
        if source is None:
            why[top] = reason
            continue
        try:  # a worker plugin only (not the scheduler's: it may run in this process, and would reload it here)
            client.register_plugin(UploadFile(os.fspath(source)), name=f"mechcalib-ship-{top}")
        except Exception as exc:  # noqa: BLE001 - the check that follows tells the user
            why[top] = f"the upload failed ({type(exc).__name__}: {str(exc)[:120]})"
            continue
        finally:
            if source.suffix == ".zip":  # the plugin holds the bytes: the zip made for it goes
                shutil.rmtree(source.parent, ignore_errors=True)
        log.info("uploaded %s to the dask workers (module %s)", source.name, top)
    return why


def prepare_workers(client: Any, problem: Any, *, ship: bool = True, fix: str = "") -> None:
    """Make sure every worker imports the problem's own modules, shipping them where needed (module docstring);
    :class:`WorkerImportError` when a worker still cannot. ``fix``: how to put code on this cluster's workers."""
    wanted = user_modules(problem)
    if not wanted:
        return
    bad = _check(client, list(wanted))
    if not bad:
        return
    why = {"": "off (ship_code = false)"}
    if ship:
        why = _ship(client, sorted({m for b in bad.values() for m in b}))
        bad = _check(client, list(wanted))
        if not bad:
            return
    raise WorkerImportError(_message(bad, wanted, why, fix))


def _message(bad: dict[str, dict[str, str]], wanted: dict[str, str], why: dict[str, str], fix: str) -> str:
    """At most 9 lines: the module, what needs it, the workers and their reasons, the fix."""
    module = next(iter(next(iter(bad.values()))))
    workers = [w for w, b in bad.items() if module in b]
    lines = [f"{len(workers)} dask worker(s) cannot import module {module!r} ({wanted.get(module, 'needed')}):"]
    lines += [f"  {w}: {bad[w][module]}" for w in workers[:_SHOWN]]
    if len(workers) > _SHOWN:
        lines.append(f"  and {len(workers) - _SHOWN} more")
    top = module.partition(".")[0]
    shipped = why.get(top, why.get("", "uploaded, and it still fails there (one of its own imports?)"))
    lines.append(f"shipping the code: {shipped}.")
    upload = ", or let mechcalib upload it (ship_code = true)" if "" in why else ""
    lines.append(
        "fix: install the package where the workers run, or put its folder on their PYTHONPATH"
        + (f" ({fix})" if fix else "")
        + upload
        + "; see docs/cluster.md"
    )
    return "\n".join(lines)
