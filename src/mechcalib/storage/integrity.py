"""What the SQLite store does when the machine is not kind to it: a read-only folder, a damaged file, a
full disk, a deleted write-ahead log.

* :func:`connect_readonly` opens a store for queries wherever it lies: ``mode=ro``, and ``immutable=1`` only
  when SQLite cannot open it so (a read-only folder, where the shared-memory file cannot be created) and no
  ``-wal`` file exists, since an immutable open would ignore the last rows of a killed run kept there.
* :func:`quick_check` runs ``PRAGMA quick_check`` capped in time, so that opening a large store stays quick.
* :func:`guarded` turns SQLite's and the decoders' exceptions into a :class:`StoreError` that names the file,
  what happened and what to do (``mechcalib repair``, free space, copy the folder); a subclass of
  :class:`GuardedMethods` has it applied to every public method and its constructor when the class is made.
* :func:`write_counts` / :func:`recorded_counts`: the number of evaluations each run has stored, kept in a
  JSON file beside the store (``<store>.counts.json``) and replaced atomically after each batch, so that a
  resume notices when the store holds fewer (its write-ahead log was deleted) and says how many will be
  simulated again.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import pickle
import secrets
import shutil
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from ..errors import MechcalibError

#: seconds :func:`quick_check` may take on open before it gives up (a large store is checked partly)
CHECK_SECONDS = 1.0

F = TypeVar("F", bound=Callable[..., Any])


class StoreError(MechcalibError, RuntimeError):
    """A run store cannot be read or written as asked; the message names the file and what to do.
    ``exit_code``: the command line's exit status for it."""

    exit_code = 2


class StoreDamagedError(StoreError):
    """The store file is damaged (truncated, garbled page, header or cell)."""


class StoreReadOnlyError(StoreError):
    """The store (or its folder) cannot be written."""

    exit_code = 1


class StoreFullError(StoreError):
    """The disk holding the store is full: the run stopped, what was stored is kept."""

    exit_code = 1


def repair_hint(path: Path | str) -> str:
    return (
        f"salvage its readable evaluations with `mechcalib repair {path}` (writes a repaired copy beside it) "
        "and resume from the copy"
    )


def free_space(path: Path | str) -> str:
    """The free space of the file system holding ``path``, in words."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        free = shutil.disk_usage(p).free
    except OSError:
        return "unknown free space"
    return f"{free / 2**20:.1f} MiB free"


def store_error(path: Path | str, exc: BaseException, action: str) -> StoreError:
    """The :class:`StoreError` for an exception raised by SQLite or a decoder while ``action`` (words)."""
    text = str(exc)
    low = text.lower()
    if isinstance(exc, sqlite3.OperationalError) and ("disk is full" in low or "database or disk is full" in low):
        return StoreFullError(
            f"the disk holding the run store {path} is full ({free_space(path)}; {action}): the run stopped; "
            f"every evaluation stored before is kept. Free some space, then continue with `mechcalib resume "
            f"{Path(path).parent}` (nothing stored is simulated again)"
        )
    if isinstance(exc, sqlite3.OperationalError) and (
        "readonly" in low or "read-only" in low or "unable to open" in low
    ):
        return StoreReadOnlyError(
            f"the run store {path} cannot be written ({text}; {action}): its folder or file is read-only. "
            "Copy the run folder to a writable place and work on the copy (`mechcalib resume COPY` continues a run)"
        )
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in low or "busy" in low):
        return StoreError(
            f"the run store {path} is locked by another process ({text}; {action}); wait until that "
            "process ends and try again"
        )
    what = f"{type(exc).__name__}: {text}" if not isinstance(exc, sqlite3.Error) else f"sqlite: {text}"
    return StoreDamagedError(f"the run store {path} is damaged ({what}, {action}); {repair_hint(path)}")


#: exceptions a damaged cell raises when it is decoded (JSON text, zlib-compressed responses, pickles)
DECODE_ERRORS: tuple[type[BaseException], ...] = (
    sqlite3.DatabaseError,
    json.JSONDecodeError,
    UnicodeDecodeError,
    zlib.error,
    pickle.UnpicklingError,
)


#: set on a method :func:`guarded` wrapped, so that a subclass does not wrap it again
_GUARD_MARK = "__store_guarded__"


@contextlib.contextmanager
def _translating(store: Any, action: str) -> Iterator[None]:
    try:
        yield
    except StoreError:
        raise
    except (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError):
        raise  # a rule of the schema or a closed connection: the caller's mistake, not the file's
    except DECODE_ERRORS as exc:
        raise store_error(store.path, exc, action) from exc


def guarded(fn: F) -> F:
    """Wrap a store method so that SQLite's and the decoders' errors become :class:`StoreError` naming the
    store (``self.path``) and the method (for a generator, also those raised while it is iterated)."""
    action = "on open" if fn.__name__ == "__init__" else f"in {fn.__name__}()"
    wrapper: Callable[..., Any]
    if inspect.isgeneratorfunction(fn):

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            with _translating(self, action):
                yield from fn(self, *args, **kwargs)

    else:

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            with _translating(self, action):
                return fn(self, *args, **kwargs)

    wrapper = functools.wraps(fn)(wrapper)
    setattr(wrapper, _GUARD_MARK, True)
    return wrapper  # type: ignore[return-value]


def is_guarded(fn: Any) -> bool:
    """Whether ``fn`` is a method :func:`guarded` wrapped."""
    return bool(getattr(fn, _GUARD_MARK, False))


def guard_public_methods(cls: type) -> None:
    """Wrap in :func:`guarded` each public method of ``cls``, inherited ones included, and its
    ``__init__``, unless wrapped already. Private helpers (``_name``) are left alone: they run inside a
    public method, which translates their errors once."""
    for name in dir(cls):
        if name.startswith("_") and name != "__init__":
            continue
        method = inspect.getattr_static(cls, name)
        if inspect.isfunction(method) and not is_guarded(method):
            setattr(cls, name, guarded(method))


class GuardedMethods:
    """A base for stores whose errors are translated by construction: when a subclass is created, every
    public method it has (defined, overridden or inherited) and its constructor are wrapped in
    :func:`guarded`, so a method added later cannot be left out."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        guard_public_methods(cls)


def _uri(path: Path, **opts: str) -> str:
    return f"file:{quote(str(path.absolute()))}?" + "&".join(f"{k}={v}" for k, v in opts.items())


def connect_readonly(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection that only reads ``path``, also in a read-only folder (see the module docstring)."""
    kw: dict[str, Any] = {"uri": True, "timeout": timeout, "isolation_level": None, "check_same_thread": False}
    con = sqlite3.connect(_uri(path, mode="ro"), **kw)
    try:
        con.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # opens the file (and its -shm) now
        return con
    except sqlite3.OperationalError as exc:
        con.close()
        if "unable to open" not in str(exc) and "readonly" not in str(exc):
            raise
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise StoreReadOnlyError(
                f"the run store {path} has a write-ahead log ({wal.name}) of a run that was stopped, and it lies "
                f"in a read-only folder, so SQLite cannot read that log ({exc}); copy the run folder to a writable "
                "place and read the copy"
            ) from None
    # no write-ahead log: the file is complete, and nothing else can change it in a read-only folder
    con = sqlite3.connect(_uri(path, mode="ro", immutable="1"), **kw)
    con.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    return con


def quick_check(con: sqlite3.Connection, seconds: float = CHECK_SECONDS) -> list[str] | None:
    """``PRAGMA quick_check``'s complaints and the JSON cells ``json_valid`` rejects (``[]``: the file is
    sound; damage that stops the check itself is its one complaint), ``None`` when it took longer than
    ``seconds`` and was stopped."""
    deadline = time.monotonic() + seconds
    con.set_progress_handler(lambda: time.monotonic() > deadline, 20_000)
    try:
        rows = con.execute("PRAGMA quick_check(20)").fetchall()
        msgs = [str(r[0]) for r in rows]
        msgs = [] if msgs == ["ok"] else msgs
        msgs += _bad_json(con)
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc) or "locked" in str(exc) or "busy" in str(exc):
            return None  # too large to check now, or a writer holds the file
        return [str(exc)]
    except sqlite3.DatabaseError as exc:  # "malformed", "not a database": the queries will say so too
        return [str(exc)]
    finally:
        con.set_progress_handler(None, 0)
    return msgs


def _bad_json(con: sqlite3.Connection) -> list[str]:
    """The cells of JSON text that SQLite's ``json_valid`` rejects (a garbled cell the file check misses)."""
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    def bad(c: str) -> str:  # Python's json writes NaN and Infinity, which json_valid does not know
        return f"({c} IS NOT NULL AND NOT json_valid(replace(replace({c}, 'NaN', '0'), 'Infinity', '0')))"

    out = []
    if "runs" in tables:
        cols = ["settings", "seed", "termination", "evaluator", "space", "fingerprint", "config", "versions"]
        sql = f"SELECT id FROM runs WHERE {' OR '.join(map(bad, cols))} LIMIT 5"
        out += [f"run {r[0]}: a garbled JSON cell" for r in con.execute(sql)]
    if "evaluations" in tables:
        sql = f"SELECT run_id, idx FROM evaluations WHERE {bad('params')} OR {bad('u')} LIMIT 5"
        out += [f"run {r[0]} evaluation {r[1]}: a garbled JSON cell" for r in con.execute(sql)]
    return out


# ------------------------------------------------------------------------------------------------------
# The count of stored evaluations, outside the database
# ------------------------------------------------------------------------------------------------------
def counts_path(path: Path) -> Path:
    """``store.sqlite`` -> ``store.sqlite.counts.json``."""
    return path.with_name(path.name + ".counts.json")


def recorded_counts(path: Path) -> dict[str, dict[str, Any]]:
    """``{run id: {"name", "n_evals", "written"}}`` from the counts file (empty when absent or unreadable)."""
    try:
        data = json.loads(counts_path(path).read_text())
    except (OSError, ValueError):
        return {}
    runs = data.get("runs") if isinstance(data, dict) else None
    return runs if isinstance(runs, dict) else {}


def write_counts(path: Path, run_id: int, name: str, n_evals: int) -> None:
    """Record that run ``run_id`` has ``n_evals`` evaluations stored (call inside the store's write
    transaction, which serialises the processes that share the store). Replaced atomically."""
    runs = recorded_counts(path)
    runs[str(run_id)] = {"name": name, "n_evals": int(n_evals), "written": time.time()}
    target = counts_path(path)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        tmp.write_text(json.dumps({"store": path.name, "runs": runs}, indent=1) + "\n")
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
