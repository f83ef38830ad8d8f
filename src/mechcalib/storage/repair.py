"""Salvage of a damaged run store (``mechcalib repair``): every readable row copied, row by row, into a new
store, with a count of what was lost, so that ``mechcalib resume`` continues from the salvage (what was
lost is simulated again, and a seeded run still ends as an uninterrupted one would).

Python's ``sqlite3`` has no binding for SQLite's recovery extension, so the baseline is a copy through
SQLite itself: each table is read in rowid order in chunks; where a chunk hits a damaged page, the rows are
fetched one rowid at a time, so a damaged page costs the rows it holds and no more. Text is decoded and
JSON parsed per cell: a garbled cell costs its row (a garbled response costs the response only, the
evaluation is kept). A file whose 100-byte header is garbled is read through a copy with a rebuilt header.
Damage to the b-tree pages that lead to the rows (an interior page, the schema on page 1) makes the rows
below them unreachable this way; they are reported lost.
"""

from __future__ import annotations

import json
import logging
import pickle
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from .codec import decode_response
from .integrity import StoreDamagedError, recorded_counts

log = logging.getLogger(__name__)

_MAGIC = b"SQLite format 3\x00"
_CHUNK = 256
_PROBE_GAP = 4096  # rowids probed past the last readable one before a table is taken as ended

_RUN_COLS = (
    "id, name, status, stop_reason, error, optimizer, settings, seed, termination, evaluator, space, fingerprint, "
    "config, versions, host, pid, n_batches, created, updated"
)
_RUN_JSON = range(6, 14)  # settings ... versions: JSON text
_EVAL_COLS = (
    "id, run_id, idx, batch, pos, key, params, u, loss, raw_loss, status, error, started, finished, worker, source, "
    "cached_from, response"
)
_CKPT_COLS = "rowid, run_id, batch, n_evals, state, created"
_COMP_COLS = (
    "run_id, n_evals, n_ok, n_failed, n_live, last_idx, seconds, first_started, last_finished, active_seconds, "
    "n_dropped, created"
)


@dataclass
class RunSalvage:
    """One run's part of a :class:`RepairReport`: ``recorded`` is the evaluation count the counts file
    recorded (``None`` without one), ``expected`` the count the run had at least (the recorded one, else one
    past the highest index read), ``salvaged`` the evaluations copied, ``lost`` those missing."""

    id: int
    name: str
    status: str
    recorded: int | None
    expected: int
    salvaged: int
    lost: int
    responses_dropped: int = 0


@dataclass
class RepairReport:
    """What :func:`repair_store` copied and lost (rows counted per table)."""

    source: Path
    target: Path
    header_rebuilt: bool = False
    runs: list[RunSalvage] = field(default_factory=list)
    runs_lost: int = 0
    evaluations: int = 0
    evaluations_lost: int = 0
    orphans: int = 0  # readable evaluations of a run whose own row was lost
    checkpoints: int = 0
    checkpoints_lost: int = 0
    compactions: int = 0

    def lines(self) -> list[str]:
        """The report in words, one line each."""
        out = [
            f"salvaged {self.evaluations} evaluations of {len(self.runs)} runs from {self.source} into {self.target}"
        ]
        if self.header_rebuilt:
            out.append("the file's header was garbled and was rebuilt to read it")
        for r in self.runs:
            rec = f"{r.recorded} recorded" if r.recorded is not None else f"at least {r.expected}"
            drop = f"; {r.responses_dropped} garbled responses dropped" if r.responses_dropped else ""
            out.append(f"run {r.name!r} ({r.status}): {r.salvaged} of {rec} evaluations kept, {r.lost} lost{drop}")
        lost = [
            (self.runs_lost, "runs lost (their record unreadable)"),
            (self.orphans, "evaluations of lost runs"),
            (self.evaluations_lost, "evaluation rows (or row ids) unreadable"),
            (self.checkpoints_lost, "optimiser checkpoints unreadable (resume replays instead)"),
        ]
        out += [f"{n} {what}" for n, what in lost if n]
        out.append(f"{self.checkpoints} checkpoints, {self.compactions} compaction records kept")
        return out


def rebuild_header(data: bytearray) -> bool:
    """Rewrite a garbled 100-byte SQLite header in place (a page size the file's first page fits, legacy
    journal, UTF-8, size from the file); ``False`` when the header is intact or no page size fits."""
    if data[:16] == _MAGIC or len(data) < 512:
        return False
    for ps in (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512):
        if len(data) % ps or data[100] not in (0x05, 0x0D):
            continue
        n_cells = int.from_bytes(data[103:105], "big")
        start = 112 if data[100] == 0x05 else 108
        ptrs = [int.from_bytes(data[start + 2 * i : start + 2 * i + 2], "big") for i in range(min(n_cells, 500))]
        if not all(100 < p < ps for p in ptrs):
            continue
        h = bytearray(100)
        h[:16] = _MAGIC
        h[16:18] = (1 if ps == 65536 else ps).to_bytes(2, "big")
        h[18], h[19], h[20], h[21], h[22], h[23] = 1, 1, 0, 64, 32, 32
        h[24:28] = (1).to_bytes(4, "big")  # change counter; the size field is not valid for it: size from file
        h[40:44] = (1).to_bytes(4, "big")  # schema cookie
        h[44:48] = (4).to_bytes(4, "big")  # schema format
        h[56:60] = (1).to_bytes(4, "big")  # UTF-8
        h[96:100] = (3040001).to_bytes(4, "big")
        data[:100] = h
        return True
    return False


def _open_copy(source: Path, tmp: Path) -> tuple[sqlite3.Connection, bool]:
    """A connection to a copy of ``source`` (with its write-ahead log), the header rebuilt if garbled."""
    copy = tmp / "damaged.sqlite"
    data = bytearray(source.read_bytes())
    rebuilt = rebuild_header(data)
    if data[:16] == _MAGIC:  # a truncated file: zero pages up to its recorded size, so the schema still reads
        ps = int.from_bytes(data[16:18], "big")
        ps = 65536 if ps == 1 else ps or 4096
        pages = max(-(-len(data) // ps), int.from_bytes(data[28:32], "big"))
        data += bytes(pages * ps - len(data))
    copy.write_bytes(bytes(data))
    wal = source.with_name(source.name + "-wal")
    if wal.is_file() and not rebuilt:
        shutil.copyfile(wal, tmp / "damaged.sqlite-wal")
    con = sqlite3.connect(copy, isolation_level=None)
    con.text_factory = bytes  # decoded per cell, so that a garbled text costs its row only
    con.execute("PRAGMA writable_schema=ON")  # an index whose root page is lost must not hide the tables
    try:
        con.execute("SELECT name FROM sqlite_master").fetchall()
    except sqlite3.DatabaseError as exc:
        con.close()
        raise StoreDamagedError(
            f"nothing can be salvaged from {source}: SQLite cannot read its schema ({exc}); the evaluations are "
            "lost: start the run again (`mechcalib run CONFIG --out NEW`)"
        ) from None
    return con, rebuilt


def _scan(con: sqlite3.Connection, table: str, cols: str, key: str) -> tuple[list[tuple], int]:
    """Every readable row of ``table`` in ``key`` (rowid) order, and the count of rowids that could not be
    read; chunks first, one rowid at a time across a damaged stretch."""
    rows: list[tuple] = []
    bad = 0
    last = -(2**63)
    try:
        top = con.execute("SELECT seq FROM sqlite_sequence WHERE name=?", (table,)).fetchone()
        top = int(top[0]) if top else None
    except sqlite3.DatabaseError:
        top = None
    while True:
        try:
            chunk = con.execute(
                f"SELECT {cols} FROM {table} WHERE {key} > ? ORDER BY {key} LIMIT {_CHUNK}", (last,)
            ).fetchall()
        except sqlite3.DatabaseError:
            chunk = None
        if chunk is not None:
            if not chunk:
                return rows, bad
            rows += chunk
            last = int(chunk[-1][0])
            continue
        start = last + 1 if last > -(2**63) else 1  # rowids of these tables start at 1
        found, failed = False, 0
        for rid in range(start, start + _PROBE_GAP):
            if top is not None and rid > top:
                return rows, bad + failed  # the rowids up to the table's last one were all in use
            try:
                r = con.execute(f"SELECT {cols} FROM {table} WHERE {key}=?", (rid,)).fetchone()
            except sqlite3.DatabaseError:
                failed += 1
                continue
            if r is not None:
                rows.append(r)
                last, found, bad = rid, True, bad + failed
                break
        if not found:  # past the last readable row, how many were lost is unknown here (the counts file says)
            return rows, bad


def _text(v: Any) -> Any:
    return v.decode("utf-8") if isinstance(v, bytes) else v


def _run_row(r: tuple) -> tuple | None:
    """A run row with its text decoded and its JSON checked, ``None`` when garbled."""
    try:
        out = tuple(_text(v) if i not in (15, 16) else v for i, v in enumerate(r))
        for i in _RUN_JSON:
            if out[i] is not None:
                json.loads(out[i])
        return out
    except (UnicodeDecodeError, ValueError):
        return None


def _eval_row(r: tuple) -> tuple[tuple | None, bool]:
    """An evaluation row decoded and checked (``None`` when garbled) and whether its response was dropped."""
    try:
        out = list(r)
        for i in (5, 6, 7, 10, 11, 14, 15):
            out[i] = _text(out[i])
        json.loads(out[6])
        json.loads(out[7])
        if not isinstance(out[2], int) or out[10] not in ("ok", "failed", "timeout", "crashed"):
            return None, False
    except (UnicodeDecodeError, ValueError):
        return None, False
    dropped = False
    if out[17] is not None:
        try:
            decode_response(out[17])
        except Exception:  # noqa: BLE001 - any failure to decode is a garbled response
            out[17], dropped = None, True
    return tuple(out), dropped


def repair_store(source: str | Path, target: str | Path) -> RepairReport:
    """Copy every readable run, evaluation, checkpoint and compaction record of ``source`` into a new store
    at ``target`` (which must not exist) and report what was lost. Runs left ``running`` are marked
    ``interrupted``. The source is only read (through a copy)."""
    from .sqlite import RunStore

    source, target = Path(source), Path(target)
    if not source.is_file():
        raise ConfigurationError(f"repair: no store file at {source}; give a store file or a run folder")
    if target.exists():
        raise ConfigurationError(f"repair: {target} exists; give a new path with --out")
    report = RepairReport(source, target)
    with tempfile.TemporaryDirectory(prefix="mechcalib-repair-") as tmp:
        con, report.header_rebuilt = _open_copy(source, Path(tmp))
        try:
            runs, bad_runs = _scan(con, "runs", _RUN_COLS, "id")
            evals, bad_evals = _scan(con, "evaluations", _EVAL_COLS, "id")
            ckpts, bad_ckpts = _scan(con, "checkpoints", _CKPT_COLS, "rowid")
            try:
                comps, _ = _scan(con, "compactions", _COMP_COLS, "run_id")
            except sqlite3.DatabaseError:
                comps = []
        finally:
            con.close()
    good_runs = {}
    for r in runs:
        row = _run_row(r)
        if row is None:
            report.runs_lost += 1
        else:
            good_runs[int(row[0])] = row
    report.runs_lost += bad_runs
    kept: dict[int, list[tuple]] = {rid: [] for rid in good_runs}
    dropped: dict[int, int] = dict.fromkeys(good_runs, 0)
    for r in evals:
        row, resp_dropped = _eval_row(r)
        if row is None:
            report.evaluations_lost += 1
        elif int(row[1]) not in kept:
            report.orphans += 1
        else:
            kept[int(row[1])].append(row)
            dropped[int(row[1])] += resp_dropped
    report.evaluations_lost += bad_evals
    recorded = recorded_counts(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    with RunStore(target) as out, out._tx() as tx:
        for row in good_runs.values():
            status = "interrupted" if row[2] == "running" else row[2]
            tx.execute(f"INSERT INTO runs ({_RUN_COLS}) VALUES ({','.join('?' * 19)})", (*row[:2], status, *row[3:]))
        for rid, rows in kept.items():
            tx.executemany(f"INSERT INTO evaluations ({_EVAL_COLS}) VALUES ({','.join('?' * 18)})", rows)
            report.evaluations += len(rows)
            rec = recorded.get(str(rid), {}).get("n_evals")
            rec = rec if isinstance(rec, int) else None
            top = max((int(r[2]) for r in rows), default=-1) + 1
            expected = max(top, rec or 0)
            name, status = good_runs[rid][1], good_runs[rid][2]
            report.runs.append(
                RunSalvage(rid, name, status, rec, expected, len(rows), expected - len(rows), dropped[rid])
            )
        for r in ckpts:
            try:
                pickle.loads(r[4])
                if int(r[1]) not in good_runs:
                    raise ValueError
                tx.execute(
                    "INSERT INTO checkpoints (run_id, batch, n_evals, state, created) VALUES (?,?,?,?,?)",
                    (r[1], r[2], r[3], r[4], _text(r[5])),
                )
                report.checkpoints += 1
            except Exception:  # noqa: BLE001 - an unreadable checkpoint: resume replays instead
                report.checkpoints_lost += 1
        report.checkpoints_lost += bad_ckpts
        for r in comps:
            if int(r[0]) in good_runs:
                tx.execute(
                    f"INSERT INTO compactions ({_COMP_COLS}) VALUES ({','.join('?' * 12)})", r[:11] + (_text(r[11]),)
                )
                report.compactions += 1
    log.debug("\n".join(report.lines()))
    return report
