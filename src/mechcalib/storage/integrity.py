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
  JSON file beside the store (``<store>.counts.json``) and replaced atomically. Before the first evaluation
  of a batch is committed, it records the count confirmed so far (``n_evals``: every earlier batch) and the
  count the store will hold after the batch (``expected``); after the batch's sync, the confirmed count.
  :func:`evaluation_loss` compares them with what a store holds: evaluations below the confirmed count that
  are missing were committed and are gone (a deleted write-ahead log, a copy made without it, an emptied or
  replaced file); those between the confirmed and the expected count may have been (one batch at most).
"""

from __future__ import annotations

import contextlib
import errno
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from ..errors import MechcalibError, writing

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


class EvaluationsLostError(StoreError):
    """Evaluations recorded as stored are missing from the store (see :class:`EvaluationLoss`)."""

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
    for attempt in range(3):  # a writer overwrites it in place: a read during the write may see a mix
        try:
            data = json.loads(counts_path(path).read_text())
            break
        except (OSError, ValueError):
            if attempt == 2:
                return {}
            time.sleep(0.002)
    runs = data.get("runs") if isinstance(data, dict) else None
    return runs if isinstance(runs, dict) else {}


def write_counts(
    path: Path, run_id: int, name: str, n_evals: int, expected: int | None = None, *, fsync: bool = False
) -> None:
    """Record that run ``run_id`` has ``n_evals`` evaluations stored and, with ``expected``, that the store
    is about to hold ``expected`` (a batch is being committed). Call inside the store's write transaction,
    which serialises the processes that share the store. ``fsync``: replaced atomically (a new file renamed
    over the old) and on disk before this returns, so a power cut keeps it too. Without: overwritten in place
    by one ``write`` (which a killed process cannot tear), padded with spaces to the old length: renaming a
    new file over the old makes ext4 flush it, some milliseconds per batch."""
    runs = recorded_counts(path)
    entry: dict[str, Any] = {"name": name, "n_evals": int(n_evals), "written": time.time()}
    if expected is not None and expected > n_evals:
        entry["expected"] = int(expected)
    runs[str(run_id)] = entry
    text = (json.dumps({"store": path.name, "runs": runs}, indent=1) + "\n").encode()
    target = counts_path(path)
    if not fsync and _overwrite(target, text):
        return
    tmp = target.with_name(f"{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with writing(target), open(tmp, "wb") as fh:
            fh.write(text)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _overwrite(target: Path, text: bytes) -> bool:
    """Write ``text`` over an existing file in place, in one ``pwrite``, padded with spaces to the file's
    length (JSON allows trailing white space); ``False`` when there is no file yet."""
    try:
        fd = os.open(target, os.O_WRONLY)
    except FileNotFoundError:
        return False
    try:
        with writing(target):
            size = os.fstat(fd).st_size
            if len(text) < size:
                text = text[:-1] + b" " * (size - len(text)) + b"\n"
            if os.pwrite(fd, text, 0) != len(text):
                raise OSError(errno.EIO, "short write", str(target))
    finally:
        os.close(fd)
    return True


def forget_counts(path: Path, name: str) -> None:
    """Drop the counts file's records of run ``name`` (a loss accepted: the run counts again from what the
    store holds)."""
    runs = recorded_counts(path)
    keep = {k: v for k, v in runs.items() if not (isinstance(v, dict) and v.get("name") == name)}
    if keep != runs:
        target = counts_path(path)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        with writing(target):
            tmp.write_text(json.dumps({"store": path.name, "runs": keep}, indent=1) + "\n")
        os.replace(tmp, target)


def wal_has_frames(path: Path) -> bool:
    """Whether the store's write-ahead log exists and is not empty (look before SQLite opens the store: a
    read-only open creates an empty one)."""
    try:
        return path.with_name(path.name + "-wal").stat().st_size > 0
    except OSError:
        return False


@dataclass(frozen=True)
class EvaluationLoss:
    """Evaluations of run ``run`` recorded as stored that the store ``store`` does not hold.

    ``held``: the store holds that many; ``recorded``: that many were confirmed stored (by ``source``, the
    counts file or ``result.json``); ``expected``: the counts file recorded a batch as being committed, up
    to that many; ``wal_missing``: the write-ahead log was missing or empty when the store was opened.
    ``definite`` evaluations were committed and are gone; up to ``possible`` more (the batch being committed
    when the run stopped) may have been, which cannot be told apart from a batch that was never committed.
    """

    store: Path
    run: str
    held: int
    recorded: int
    expected: int
    wal_missing: bool
    source: str

    @property
    def definite(self) -> int:
        return max(0, self.recorded - self.held)

    @property
    def possible(self) -> int:
        if not self.wal_missing:
            return 0  # SQLite replays every committed batch from the log: what is missing was never committed
        return max(0, self.expected - max(self.held, self.recorded))

    @property
    def total(self) -> int:
        return self.definite + self.possible

    def describe(self) -> str:
        wal = f"{self.store.name}-wal"
        why = (
            f"its write-ahead log {wal} is missing or empty (deleted after the run stopped, or the folder was "
            "copied without it)"
            if self.wal_missing
            else "the store was emptied, replaced or rolled back"
        )
        if self.held == 0 and self.definite:
            why = "the store was emptied or replaced (it holds no evaluation of the run)"
        unsure = (
            "whether they were committed cannot be told (they were not if the run was killed before that batch "
            "stored its first evaluation, or if another program closed the store since)"
        )
        parts = []
        if self.definite:
            parts.append(
                f"{self.definite} evaluations of run {self.run!r} that {self.source} records as stored "
                f"({self.recorded}) are gone from {self.store} (it holds {self.held}): {why}"
            )
            if self.possible:
                parts.append(
                    f"up to {self.possible} more, of the batch being stored when the run stopped ({self.expected} "
                    f"expected after it), may be lost too: {unsure}"
                )
        elif self.possible:
            parts.append(
                f"up to {self.possible} evaluations of run {self.run!r} in {self.store}, of the batch being stored "
                f"when the run stopped, may be lost ({self.held} held, {self.expected} expected after that batch): "
                f"{why}; {unsure}"
            )
        return "; ".join(parts)


def evaluation_loss(
    path: Path,
    run: str,
    held: int,
    *,
    wal_found: bool,
    run_id: int | None = None,
    counts: dict[str, dict[str, Any]] | None = None,
    result_n: int | None = None,
) -> EvaluationLoss | None:
    """What run ``run`` (id ``run_id`` when known; else matched by name) lost, by the counts file (read
    before the store is counted: ``counts``) and ``result_n`` (the count ``result.json`` records), given
    that the store holds ``held`` evaluations of it; ``None``: nothing lost."""
    counts = recorded_counts(path) if counts is None else counts
    entries = [counts[str(run_id)]] if run_id is not None and str(run_id) in counts else []
    if not entries:
        named = [e for e in counts.values() if isinstance(e, dict) and e.get("name") == run]
        entries = sorted(named, key=lambda e: e.get("written") or 0)[-1:]
    entry = entries[0] if entries else {}
    n, e = entry.get("n_evals"), entry.get("expected")
    rec = n if isinstance(n, int) else 0
    exp = e if isinstance(e, int) else rec
    source = counts_path(path).name
    if result_n is not None and result_n > rec:
        rec, source = result_n, "result.json"
    loss = EvaluationLoss(Path(path), run, int(held), int(rec), int(max(exp, rec)), not wal_found, source)
    return loss if loss.total else None
