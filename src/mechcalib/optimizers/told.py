"""Residual vectors left out of a checkpoint and put back on resume: a least-squares method's checkpoint keeps
the keys of the points it was told, each residual vector replaced by :data:`TOLD`, and the resume fills them
in again from the stored responses (:meth:`~mechcalib.optimizers._base.Optimizer.restore_told`), so a
checkpoint stays small however long the curves."""

from __future__ import annotations

from typing import Any

import numpy as np

TOLD = "told"  # in a checkpoint, a residual vector left out (restore_told puts it back)


def refill(table: dict[bytes, Any], U: np.ndarray, R: np.ndarray, owner: str, put: Any = None) -> dict[bytes, Any]:
    """``table`` with each value holding :data:`TOLD` (the value itself, or a tuple's last element) at the key
    of a row of ``U`` replaced by ``put(value, residuals)`` (default: the residuals; ``None`` for a failed row);
    raises ``ValueError`` when a :data:`TOLD` value is left."""
    rows = {u.tobytes(): r for u, r in zip(np.asarray(U, dtype=float), np.asarray(R, dtype=float), strict=True)}
    out = {}
    for k, v in table.items():
        if isinstance(v, str) or (isinstance(v, tuple) and isinstance(v[-1], str)):
            r = rows.get(k)
            if r is None:
                raise ValueError(f"{owner}: the checkpoint's residuals of a point are not among the stored ones")
            r = r.copy() if np.all(np.isfinite(r)) else None
            v = r if put is None else put(v, r)
        out[k] = v
    return out


def memo_checkpoint(memo: dict[bytes, tuple[float, np.ndarray | None]]) -> dict[bytes, tuple[float, Any]]:
    """A memory of ``(loss, residuals or None)`` for a checkpoint: each told residual vector left out
    (:data:`TOLD`), put back by :func:`memo_refilled`."""
    return {k: (f, None if r is None else TOLD) for k, (f, r) in memo.items()}


def memo_refilled(memo: dict[bytes, tuple[float, Any]], U: np.ndarray, R: np.ndarray, owner: str) -> dict:
    """:func:`memo_checkpoint`'s memory with its residual vectors put back from the stored ``U``, ``R``."""
    return refill(memo, U, R, owner, put=lambda v, r: (v[0], r))
