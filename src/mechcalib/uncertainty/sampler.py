"""emcee's affine-invariant ensemble moves (Goodman & Weare 2010; Foreman-Mackey et al. 2013) as an ask/tell
"optimiser", so that a posterior chain runs through :func:`~mechcalib.calibrate`: every batch of walker
proposals goes to the evaluator and into the run store, and a killed chain resumes exactly.

How emcee is driven. A move's ``propose(model, state)`` splits the ensemble in two halves and asks the
log-probabilities of one half's proposals, then of the other's (the second half's proposals depend on the
first half's accepted moves). :class:`EnsembleSampler` runs ``propose`` with a log-probability function
that answers from a table of told values and stops at the first half whose values it lacks: those
proposals (inside the unit cube; one outside has log-probability ``-inf`` and costs no simulation) are the
batch asked. After the tell the step is re-run from its start with the same random state, so each step is
one or two batches. The chain lives in the unit cube, where the prior from the bounds is uniform (uniform in
a linear parameter, log-uniform in a log-scaled one); the loss told is the negative log-likelihood, so
``log p = -loss`` inside the box.

Resume. The sampler is a pure function of its seed and the losses told: calibrate replays a killed chain
from the start, answering every ask from the store (``checkpoint_every=None``: a chain's state grows with
its length, so it is not checkpointed), and simulates only what is missing.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..errors import ConfigurationError, SettingError
from ..optimizers._base import Optimizer, SeedLike, check_choice, check_positive_int


class _Need(Exception):
    def __init__(self, points: np.ndarray) -> None:
        super().__init__(len(points))
        self.points = points


def _move(name: str, cov: np.ndarray | None, d: int) -> Any:
    import emcee

    if name == "stretch":
        return emcee.moves.StretchMove()
    if name == "de":
        return emcee.moves.DEMove()
    if cov is None:
        raise ConfigurationError(
            "the 'gauss' move proposes from the Gauss-Newton covariance, and none was given (init_cov=None); "
            "give init_cov or use move='stretch'"
        )
    return emcee.moves.GaussianMove(capped(cov) * 2.38**2 / d)  # Roberts & Rosenthal's (2001) scaling


def capped(cov: np.ndarray, cap: float = 0.1) -> np.ndarray:
    """``cov`` with each coordinate's standard deviation capped at ``cap`` of the box (an unidentifiable
    direction must not throw walkers across it) and a tiny ridge, so that it is positive definite."""
    C = np.where(np.isfinite(cov), np.asarray(cov, float), 0.0)
    sd = np.sqrt(np.maximum(np.diag(C), 1e-12))
    f = np.minimum(sd, cap) / sd
    return C * np.outer(f, f) + np.eye(C.shape[0]) * 1e-12


def initial_walkers(
    rng: np.random.Generator, x0: np.ndarray, cov: np.ndarray | None, n: int, spread: float = 1.0
) -> np.ndarray:
    """``n`` starting points in the unit cube drawn around ``x0`` from ``N(x0, spread^2 cov)`` (each
    coordinate's standard deviation capped at 0.1 of the box: an unidentifiable direction must not throw
    walkers across it), redrawn where outside the cube; a tiny ball (1e-3) without ``cov``."""
    d = x0.shape[0]
    C = np.eye(d) * 1e-6 if cov is None else capped(np.asarray(cov, float) * spread**2)
    out = np.empty((n, d))
    for i in range(n):
        for _ in range(1000):
            p = rng.multivariate_normal(x0, C, method="eigh")
            if np.all((p >= 0) & (p <= 1)):
                break
        else:
            p = np.clip(p, 0.0, 1.0)
        out[i] = p
    return out


class EnsembleSampler(Optimizer):
    """An emcee ensemble chain over the unit cube, driven by ask/tell (module docstring).

    Args:
        walkers: the ensemble size (even, at least ``2 d``).
        move: ``"stretch"`` (emcee's default, Goodman & Weare 2010), ``"de"`` (differential evolution,
            ter Braak & Vrugt 2008) or ``"gauss"``: a Metropolis move of every walker at once (one batch per
            step) proposing from the Gauss-Newton covariance ``init_cov`` scaled by ``2.38^2 / d`` (Roberts &
            Rosenthal 2001), the preconditioned sampler for a near-Gaussian posterior.
        x0: the unit-cube point the walkers start around (the polished optimum).
        init_cov: the unit-cube covariance ``(d, d)`` they are drawn with (the Gauss-Newton one); ``None``:
            a tiny ball.
        steps: the chain length to reach (not a setting: a stored chain resumes with a longer one).
        seed: fixes the starting walkers and every move.
    """

    name: ClassVar[str] = "emcee"

    def __init__(
        self,
        *,
        walkers: int = 32,
        move: str = "stretch",
        x0: list[float] | None = None,
        init_cov: list[list[float]] | None = None,
        steps: int = 1000,
        seed: SeedLike = None,
    ) -> None:
        super().__init__(seed=seed)
        self.walkers = check_positive_int(self.name, "walkers", walkers, 4)
        if self.walkers % 2:
            raise SettingError(self.name, "walkers", "an even number of walkers (two halves)", walkers)
        self.move = check_choice(self.name, "move", move, ("stretch", "de", "gauss"))
        self.x0 = None if x0 is None else [float(v) for v in x0]
        self.init_cov = None if init_cov is None else [[float(v) for v in row] for row in init_cov]
        self._steps = check_positive_int(self.name, "steps", steps)
        self._chain: list[np.ndarray] = []  # the positions after each step (reset by setup)

    # -- chain --------------------------------------------------------------------------------------------
    @property
    def n_steps(self) -> int:
        """Steps completed."""
        return len(self._chain)

    @property
    def chain(self) -> np.ndarray:
        """The walkers' unit-cube positions after each step ``(steps, walkers, d)``."""
        return np.array(self._chain) if self._chain else np.zeros((0, self.walkers, self.dim or 0))

    @property
    def log_prob(self) -> np.ndarray:
        """Their log-probabilities ``(steps, walkers)``."""
        return np.array(self._lp) if self._lp else np.zeros((0, self.walkers))

    @property
    def acceptance_fraction(self) -> np.ndarray:
        """Each walker's fraction of accepted moves ``(walkers,)``."""
        return self._accepted / max(self.n_steps, 1)

    @property
    def initial(self) -> np.ndarray:
        return self._p0.copy()

    def set_steps(self, steps: int) -> None:
        self._steps = check_positive_int(self.name, "steps", steps)

    @property
    def converged(self) -> bool:
        return self.dim is not None and self.n_steps >= self._steps

    # -- ask/tell ----------------------------------------------------------------------------------------
    def _init_state(self) -> None:
        d = self.dim
        assert d is not None
        if self.walkers < 2 * d:
            raise ConfigurationError(
                f"emcee's ensemble moves need at least twice as many walkers as free parameters, got walkers="
                f"{self.walkers} for {d} parameters; give walkers >= {2 * d + (2 * d) % 2}"
            )
        x0 = np.full(d, 0.5) if self.x0 is None else np.asarray(self.x0, float)
        if x0.shape != (d,):
            raise ConfigurationError(f"{self.name}: x0 has {x0.shape[0]} coordinates, the problem {d}")
        cov = None if self.init_cov is None else np.asarray(self.init_cov, float)
        self._p0 = initial_walkers(self.rng, x0, cov, self.walkers)
        self._random = np.random.RandomState(int(self.rng.integers(2**32)))  # emcee's moves draw from it
        self._moves = _move(self.move, cov, d)
        self._coords: np.ndarray | None = None
        self._logp: np.ndarray | None = None
        self._table: dict[bytes, float] = {}
        self._chain = []
        self._lp: list[np.ndarray] = []
        self._accepted = np.zeros(self.walkers)
        self._want: np.ndarray | None = None
        self._advance()

    def _lookup(self, q: np.ndarray) -> tuple[np.ndarray, None]:
        inside = np.all((q >= 0.0) & (q <= 1.0), axis=1)
        missing = [p for p, ok in zip(q, inside, strict=True) if ok and p.tobytes() not in self._table]
        if missing:
            raise _Need(np.array(missing))
        return np.array([self._table[p.tobytes()] if ok else -np.inf for p, ok in zip(q, inside, strict=True)]), None

    def _advance(self) -> None:
        """Run steps with the told values until one lacks some (its points: the next batch) or the chain
        has ``steps`` steps."""
        from emcee.model import Model
        from emcee.state import State

        self._want = None
        if self._coords is None:
            try:
                lp, _ = self._lookup(self._p0)
            except _Need as need:
                self._want = need.points
                return
            self._coords, self._logp, self._table = self._p0.copy(), lp, {}
        model = Model(None, self._lookup, map, self._random)
        while self.n_steps < self._steps:
            snapshot = self._random.get_state()
            try:
                state, accepted = self._moves.propose(model, State(self._coords.copy(), log_prob=self._logp.copy()))
            except _Need as need:
                self._random.set_state(snapshot)  # the step re-runs from its start after the tell
                self._want = need.points
                return
            self._coords, self._logp, self._table = state.coords, state.log_prob, {}
            self._chain.append(self._coords.copy())
            self._lp.append(self._logp.copy())
            self._accepted += accepted

    def _ask(self) -> np.ndarray:
        if self._want is None:
            self._advance()
        if self._want is None:
            raise ConfigurationError(f"{self.name}: the chain has its {self._steps} steps; raise steps to go on")
        return self._want

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        for x, fi in zip(X, f, strict=True):
            self._table[x.tobytes()] = -float(fi) if np.isfinite(fi) else -np.inf
        self._advance()

    def _next_batch_size(self) -> int:
        if self._want is None:
            self._advance()
        return 0 if self._want is None else int(self._want.shape[0])
