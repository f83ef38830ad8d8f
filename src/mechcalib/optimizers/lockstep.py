"""Least-squares starts in lockstep: ``auto``'s polishing, and ``lsq`` with a ``batch_size``.

Several single-start least-squares runs (:class:`~mechcalib.optimizers.least_squares.LeastSquares`, one start
each) advance together: each round is one batch holding every active start's next request (a Jacobian's
columns, a trial step), and, where the batch has room (``batch_size``, the evaluator's slots), the forward
Jacobian at each trial point asked ahead, which the start needs next if scipy accepts the step. A start that
ends is replaced by the next one (the queue of distinct design points, then uniform random points), so
``width`` starts stay active. Every request is answered from ``memo`` (the losses and residuals told so far,
keyed by the exact unit-cube point) when it can be; only the unknown points are asked.

A start within ``FACE`` (0.05) of a face of the unit cube runs TRF instead of LM (:func:`near_face`).

With one slot (``batch_size`` 1) one start runs at a time and nothing is asked ahead: the run asks exactly
what the sequential polishing asked.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .differences import fd_points

if TYPE_CHECKING:
    from .least_squares import LeastSquares

#: ``memo`` values: (loss, residuals or ``None`` when failed)
Memo = dict[bytes, tuple[float, np.ndarray | None]]


class Lockstep:
    """``width`` least-squares starts advancing in rounds (module docstring).

    Args:
        dim: free parameters.
        method: ``"lm"`` or ``"trf"``.
        fd_step: the forward-difference step (unit cube).
        starts: the first starts, in order (unit-cube points).
        width: how many starts run at once.
        batch_size: the round's capacity; requests beyond it are still asked, look-ahead points only within it.
        seed: seed of the random starts after ``starts``.
        restart: after ``starts``, start again from uniform random points (``False``: the run ends with them).
        central: the starts difference centrally (look-ahead Jacobians too).
        options: further settings of each start's :class:`LeastSquares` (tolerances, ``max_nfev``).
        face_trf: an LM start near a face of the cube runs TRF (:func:`near_face`; ``auto``'s choice).
        start_type: the class of a start, :class:`~mechcalib.optimizers.least_squares.LeastSquares` (given, not
            imported here: least squares runs its own starts through this module).
        trials_ahead: with room in the round, the TRF starts' next trial steps should the current one be
            rejected, each with its Jacobian, up to this many per start
            (:meth:`~mechcalib.optimizers.least_squares.LeastSquares.rejected_fork`: exact for TRF). 0: none.
        lead: with secant starts (``options`` ``secant``): each round, the starts whose lowest loss is at most
            ``lead`` times the lowest of all take their Jacobians by differences, asked ahead at their trial
            points (:meth:`~mechcalib.optimizers.least_squares.LeastSquares.set_exact`); the others ask their
            trial points alone (one simulation a round each) and follow their secant models. 0: no lead.
        cap: a start that has been told this many points without ending is cut there, not met
            (:meth:`~mechcalib.optimizers.least_squares.LeastSquares.cut`), and the next start begins. 0: none.
    """

    # A checkpoint from before these settings has none of them: these are its (``auto``'s) values, and
    # ``start_type``, which cannot be imported here, its owner sets again (``auto``)
    start_type: type[LeastSquares] | None = None
    restart = True
    central = False
    face_trf = True
    trials_ahead = 0
    lead = 0.0
    cap = 0
    options: dict[str, Any] = {}  # noqa: RUF012  (read, never changed in place)

    def __init__(
        self,
        *,
        dim: int,
        method: str,
        fd_step: float,
        starts: list[np.ndarray],
        width: int,
        batch_size: int,
        seed: int,
        restart: bool = True,
        central: bool = False,
        options: dict | None = None,
        face_trf: bool = True,
        start_type: type[LeastSquares] | None = None,
        trials_ahead: int = 0,
        lead: float = 0.0,
        cap: int = 0,
    ) -> None:
        self.start_type = start_type
        self.lead, self.cap = lead, cap
        self.trials_ahead = trials_ahead
        self.dim, self.method, self.fd_step = dim, method, fd_step
        self.restart, self.central, self.face_trf = restart, central, face_trf
        self.options = dict(options or {})
        self.width, self.batch_size = max(1, width), max(1, batch_size)
        self.queue = [np.asarray(s, float) for s in starts]
        self.rng = np.random.default_rng(seed)
        self.active: list[LeastSquares] = []
        self.ends: list[tuple[float, bool]] = []  # per finished start: its end loss, scipy met a tolerance
        self.end_at: list[list[float] | None] = []  # and its end point (None: its first simulation failed)
        self.end_points: list[tuple[list[float], float]] = []
        self.n_started = 0
        self.requests: list[np.ndarray] = []  # per active start: the unknown points it waits for

    # -- planning ----------------------------------------------------------------------------------
    def advance(self, memo: Memo) -> bool:
        """Run every active start up to its next unknown points (:attr:`requests`), answering it from ``memo``;
        ``True`` when a start ended meanwhile (it is recorded and removed: check convergence, then call again)."""
        self._fill()
        if self.lead and self.active:
            self._set_leads(memo)
        ended = False
        self.requests = []
        keep = []
        for sub in self.active:
            need = _next_unknown(sub, memo)
            if need is not None and self.cap and len(sub._loss) >= self.cap:
                sub.cut()
                need = None
            if need is None:
                self._end(sub)
                ended = True
                continue
            keep.append(sub)
            self.requests.append(need)
        self.active = keep
        return ended

    def batch(self, memo: Memo, left: float) -> np.ndarray | None:
        """The round's points: the requests, in order, that fit the ``left`` evaluations (a request is asked
        whole or not at all), then look-ahead Jacobians while the batch has room; ``None``: none fits."""
        out: list[np.ndarray] = []
        seen: set[bytes] = set()

        def add(points: list[np.ndarray] | np.ndarray, room: float) -> bool:
            new = [p for p in points if p.tobytes() not in seen and p.tobytes() not in memo]
            if len(new) > room - len(out):
                return False
            for p in new:
                seen.add(p.tobytes())
                out.append(p)
            return True

        for req in self.requests:
            add(req, left)
        if not out:
            return None
        room = min(left, self.batch_size)
        for sub, req in zip(self.active, self.requests, strict=True):
            # a trial step (or a start's first point): its Jacobian comes next if accepted (a secant start's not)
            if req.shape[0] == 1 and sub.exact:
                add(fd_points(req[0], self.fd_step, self.central), room)
        # then, while the round has room, the TRF starts' next trial steps should this one be rejected, each
        # with its Jacobian (a trial without it saves no round): one more per start at a time
        chains = [
            (sub, req[0])
            for sub, req in zip(self.active, self.requests, strict=True)
            if req.shape[0] == 1 and sub.method == "trf"
        ]
        for _ in range(self.trials_ahead):
            if not chains or len(out) >= room:
                break
            alive = []
            for sub, u in chains:
                fork = sub.rejected_fork(u)
                nxt = fork.pending_points()
                if nxt is None or nxt.shape[0] != 1:
                    continue  # it would end, or ask something other than a trial step
                if add(np.vstack([nxt, fd_points(nxt[0], self.fd_step, self.central)]), room):
                    alive.append((fork, nxt[0]))
            chains = alive
        return np.array(out)

    # -- bookkeeping -------------------------------------------------------------------------------
    def _set_leads(self, memo: Memo) -> None:
        """Lead (:attr:`lead`) the starts whose lowest loss, the points just told included, is at most ``lead``
        times the lowest of all; the others follow their secant models."""
        for sub, req in zip(self.active, self.requests, strict=False):  # started since: no request yet
            _record_known(sub, req, memo)
        lows = [min(sub._loss.values(), default=math.inf) for sub in self.active]
        for sub, low in zip(self.active, lows, strict=True):
            sub.set_exact(low <= self.lead * min(lows))

    def _fill(self) -> None:
        while len(self.active) < self.width and (self.queue or self.restart):
            u = self.queue.pop(0) if self.queue else self.rng.random(self.dim)
            u = np.clip(u, 0.0, 1.0)
            method = "trf" if self.face_trf and self.method == "lm" and near_face(u) else self.method
            assert self.start_type is not None, "Lockstep needs start_type (the LeastSquares class)"
            sub = self.start_type(
                method=method,
                x0=[u.tolist()],
                restart=False,
                fd_step=self.fd_step,
                difference="central" if self.central else "forward",
                seed=0,
                **self.options,
            )
            sub.setup(self.dim)
            self.active.append(sub)
            self.n_started += 1

    def _end(self, sub: LeastSquares) -> None:
        (f, met), *_ = sub.finished_starts or [(math.inf, False)]
        self.ends.append((float(f), bool(met)))
        self.end_at.append(sub.end_points[0][0].tolist() if sub.end_points else None)
        for u, fe in sub.end_points:
            self.end_points.append((u.tolist(), float(fe)))
        handover = getattr(sub, "handover", None)
        if handover is not None:  # an LM start crawling along a face: TRF goes on from where it stopped
            self.queue.insert(0, np.asarray(handover, float))

    def checkpoint_copy(self) -> Lockstep:
        """A copy whose starts hold their checkpoint states (told residual vectors left out)."""
        out = Lockstep.__new__(Lockstep)
        out.__dict__ = copy.deepcopy({k: v for k, v in vars(self).items() if k != "active"})
        out.active = [sub.checkpoint_copy() for sub in self.active]  # type: ignore[misc]
        return out

    def restore_told(self, U: np.ndarray, R: np.ndarray) -> None:
        for sub in self.active:
            sub.restore_told(U, R)


#: a start closer than this to a face of the unit cube polishes with TRF, not LM (see :func:`near_face`)
FACE = 0.05


def near_face(u: np.ndarray | list[float], within: float = FACE) -> bool:
    """Whether ``u`` lies within ``within`` of a face of the unit cube (in any coordinate).

    LM searches ``z`` with ``u = (1 - cos(pi z)) / 2``, which is flat at the faces (``u`` grows as ``z**2``
    there): from a start near a face its linear model is poor and it crawls (measured on the Duffing problem,
    seeds 32 and 36 of ``tests/test_auto.py``: from the same best design point, near the faces of k and k3,
    LM took 48 and 56 simulations to the optimum, TRF 20 and 24, so that LM's first start ran out of the
    50-simulation budget). TRF works on ``u`` with its bounds and takes such a start. The distance 0.05 was
    measured on the cheap problems of ``benchmarks/efficiency.py`` (auto over seeds 1-20, one worker): runs
    ending at the target with 0.05 / 0.1 / TRF for every start: SDOF noise-free 19 / 17 / 13 of 20, SDOF 5 %
    noise 19 / 19 / 17 (LM everywhere, as before: 19 and 18); Duffing, calorimetry and the seven-parameter
    problem 20 of 20 with each."""
    a = np.asarray(u, float)
    return bool(np.any(np.minimum(a, 1.0 - a) < within))


def _next_unknown(sub: LeastSquares, memo: Memo) -> np.ndarray | None:
    """``sub``'s next points not in ``memo`` (those in it are recorded into ``sub`` on the way); ``None``: it
    ended."""
    while True:
        P = sub.pending_points()
        if P is None:
            return None
        known = _record_known(sub, P, memo)
        if not known.all():
            return P[~known]


def _record_known(sub: LeastSquares, P: np.ndarray, memo: Memo) -> np.ndarray:
    """Record into ``sub`` the points of ``P`` that ``memo`` answers; which they are (a mask)."""
    known = np.array([p.tobytes() in memo for p in P], dtype=bool)
    if known.any():
        K = P[known]
        sub.record(K, np.array([memo[p.tobytes()][0] for p in K]), _rows(memo, K))
    return known


def _rows(memo: Memo, U: np.ndarray) -> np.ndarray:
    m = next(r.shape[0] for _, r in memo.values() if r is not None)
    out = np.full((U.shape[0], m), np.nan)
    for j, u in enumerate(U):
        r = memo[u.tobytes()][1]
        if r is not None:
            out[j] = r
    return out


#: two least-squares ends confirm one basin when their points are this close (max-norm, unit cube) ...
SAME_POINT = 1e-2
#: ... and their losses within this relative difference (or the losses within 1e-6, wherever the points)
SAME_LOSS = 1e-3


#: an end this close to a face of the unit cube (in any coordinate) lies on the face
AT_FACE = 1e-3


def on_face(u: list[float]) -> bool:
    """Whether the end ``u`` lies on a face of the unit cube (:func:`near_face` within ``AT_FACE``)."""
    return near_face(u, AT_FACE)


def same_basin(f: float, u: list[float] | None, best: float, u_best: list[float] | None) -> bool:
    """Whether an end ``(f, u)`` confirms the best end ``(best, u_best)``: its loss within a relative 1e-6, or its
    point within ``SAME_POINT`` and its loss within a relative ``SAME_LOSS``."""
    tiny = 1e-300
    if f <= best + 1e-6 * abs(best) + tiny:
        return True
    if u is None or u_best is None:
        return False
    near = float(np.max(np.abs(np.subtract(u, u_best)))) <= SAME_POINT
    return near and f <= best + SAME_LOSS * abs(best) + tiny
