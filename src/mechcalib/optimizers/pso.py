"""Particle swarm optimisation, Kibriya et al. (2023) section 3.2 (eqs. 1-10).

Every velocity rule of the section is a configuration of the one class :class:`PSO`:

======================================  ===========================================================
Kibriya et al. (2023) equation                       settings
======================================  ===========================================================
eq. 1 (original, no inertia)            ``inertia="none", constriction=False``
eq. 4 (constant inertia)                ``inertia="constant", w_const=...``
eq. 4 + eq. 6 (linear inertia)          ``inertia="linear", w_max=0.8, w_min=0.4`` (the default)
eq. 4 + eq. 7 (nonlinear inertia)       ``inertia="nonlinear", w_exponent=n``
eq. 9 (constriction factor, eq. 8)      ``inertia="none", constriction=True``
eq. 10 (inertia and constriction)       ``inertia="constant"|"linear"|"nonlinear", constriction=True``
======================================  ===========================================================

The update equations are the module-level kernels below (pure functions of arrays); the class only
threads the swarm state through them. :mod:`mechcalib.optimizers.tbpso` reuses the same kernels and
state handling.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any

import numpy as np

from ..core.presets import Preset, deprecated_preset, presets_by_name
from ..errors import ConfigurationError, SettingError
from ._base import Optimizer, SeedLike, check_choice, check_positive_int, check_range, reflect

INERTIA_SCHEDULES = ("none", "constant", "linear", "nonlinear")
BOUNDARY_RULES = ("clip", "reflect")


# -- kernels ----------------------------------------------------------------------------------------
def constriction_factor(phi: float) -> float:
    """Clerc's constriction factor, Kibriya et al. (2023) eq. 8: ``K = 2 / |2 - phi - sqrt(phi^2 - 4 phi)|``.

    ``phi`` is the sum of the acceleration weights (``phi1 + phi2`` in PSO, ``phi1 + phi2 + phi3`` in
    TBPSO). ``K = 1`` at ``phi = 4`` and ``K ~ 0.7298`` at ``phi = 4.1``. The formula needs
    ``phi >= 4`` (below, the square root is imaginary): a smaller ``phi`` raises
    :class:`~mechcalib.errors.ConfigurationError`.
    """
    phi = float(phi)
    if not np.isfinite(phi) or phi < 4.0:
        raise ConfigurationError(
            f"constriction factor (Kibriya et al. (2023) eq. 8): phi must be a finite number >= 4, got phi={phi!r}; "
            "raise the acceleration weights or switch the constriction off"
        )
    return 2.0 / abs(2.0 - phi - math.sqrt(phi * phi - 4.0 * phi))


def inertia_weight(
    k: float,
    k_max: int,
    schedule: str = "linear",
    *,
    w_max: float = 0.8,
    w_min: float = 0.4,
    w_const: float = 0.9,
    exponent: float = 1.2,
) -> float:
    """The inertia weight ``w(k)`` of update number ``k`` (``k = 0`` is the first velocity update).

    - ``"none"``: ``w = 1`` (eq. 1 and eq. 9 carry the previous velocity unweighted).
    - ``"constant"``: ``w = w_const`` (eq. 4).
    - ``"linear"``: ``w = w_max - (w_max - w_min) k / k_max`` (eq. 6).
    - ``"nonlinear"``: ``w = w_min + (w_max - w_min) ((k_max - k) / k_max)^exponent``. Eq. 7 as printed
      has ``k_min`` where the iteration number belongs (so it does not depend on ``k``), and with ``k``
      put in its place it would rise from ``w_min`` to ``w_max``; this is the decreasing form of the
      nonlinear schedule it cites (Chatterjee and Siarry).

    Both schedules start at ``w_max`` (``k = 0``) and end at ``w_min`` (``k = k_max``); ``k`` beyond
    ``k_max`` keeps ``w_min`` so that a run longer than planned stays in its final, exploiting regime.
    """
    if schedule == "none":
        return 1.0
    if schedule == "constant":
        return float(w_const)
    frac = min(max(float(k), 0.0), float(k_max)) / float(k_max)
    if schedule == "linear":
        return float(w_max - (w_max - w_min) * frac)
    if schedule == "nonlinear":
        return float(w_min + (w_max - w_min) * (1.0 - frac) ** exponent)
    raise ConfigurationError(f"inertia schedule must be one of {list(INERTIA_SCHEDULES)}, got {schedule!r}")


def pso_velocity(
    V: np.ndarray,
    X: np.ndarray,
    P: np.ndarray,
    g: np.ndarray,
    R1: np.ndarray,
    R2: np.ndarray,
    phi1: float,
    phi2: float,
    w: float = 1.0,
    K: float = 1.0,
) -> np.ndarray:
    """The velocity update ``K [w V + phi1 R1 (P - X) + phi2 R2 (g - X)]`` (Kibriya et al. (2023) eqs. 1, 4, 9, 10).

    Eq. 1 is ``w = K = 1``, eq. 4 ``K = 1``, eq. 9 ``w = 1`` and eq. 10 the general form.

    Shapes: ``V``, ``X``, ``P`` (personal bests), ``R1``, ``R2`` ``(n, dim)``; ``g`` (global best)
    ``(dim,)``. ``R1``/``R2`` hold one uniform number per particle and dimension (the paper's "N random
    scalars ... each corresponding to a dimension"). Returns the new velocities ``(n, dim)``.
    """
    return K * (w * V + phi1 * R1 * (P - X) + phi2 * R2 * (g - X))


def update_personal_best(
    P: np.ndarray, fP: np.ndarray, X: np.ndarray, f: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Personal bests after evaluating ``X`` (``(n, dim)``) with losses ``f`` (``(n,)``).

    A particle's best moves to its current position when that is strictly better (``f < fP``), so a
    failed evaluation (``+inf``) never replaces anything. Returns ``(P, fP, improved)`` as new arrays
    (``(n, dim)``, ``(n,)``, boolean ``(n,)``).
    """
    improved = f < fP
    return np.where(improved[:, None], X, P), np.where(improved, f, fP), improved


def global_best_index(fP: np.ndarray) -> int:
    """Index of the global best, Kibriya et al. (2023) eq. 3: the personal best with the lowest loss (``fP`` ``(n,)``).

    Ties go to the lowest index; when every loss is ``+inf`` this is particle 0.
    """
    return int(np.argmin(fP))


def clamp_velocity(V: np.ndarray, v_max: float | None) -> np.ndarray:
    """Velocities ``(n, dim)`` limited to ``[-v_max, v_max]`` per component (``None``: unchanged).

    The unit cube has range 1 in every dimension, so ``v_max`` is the fraction of each parameter's range.
    """
    return V if v_max is None else np.clip(V, -v_max, v_max)


def move(X: np.ndarray, V: np.ndarray, rule: str = "clip") -> tuple[np.ndarray, np.ndarray]:
    """Position update ``X + V`` (Kibriya et al. (2023) eq. 2) kept inside ``[0, 1]``; returns ``(X, V)``, ``(n, dim)``.

    - ``"clip"``: a component that leaves the cube is put on the wall and its velocity set to zero
      (absorbing wall: the particle does not keep pushing against the bound on the next step).
    - ``"reflect"``: the component is folded back at the wall (:func:`~mechcalib.optimizers._base.reflect`)
      and its velocity reversed.
    """
    Xn = X + V
    out = (Xn < 0.0) | (Xn > 1.0)
    if rule == "clip":
        return np.clip(Xn, 0.0, 1.0), np.where(out, 0.0, V)
    if rule == "reflect":
        return reflect(Xn), np.where(out, -V, V)
    raise ConfigurationError(f"boundary rule must be one of {list(BOUNDARY_RULES)}, got {rule!r}")


# -- optimiser ----------------------------------------------------------------------------------------
class SwarmOptimizer(Optimizer):
    """What every global-best swarm of this package shares (:class:`PSO`, :class:`~.tbpso.TBPSO`): the
    settings of the swarm, the inertia schedule, the constriction check, personal and global bests, the
    velocity clamp and the walls. A subclass sets its weights, calls :meth:`_check_constriction` at the end
    of its constructor, and implements :meth:`_phi_total` and :meth:`_velocity`.

    State (after ``setup``): ``_X`` positions, ``_V`` velocities, ``_P`` personal bests (``(n, dim)``),
    ``_fP`` their losses (``(n,)``), ``_g`` index of the global best, ``_k`` velocity updates done.
    """

    def __init__(
        self,
        *,
        swarm_size: int,
        phi1: float,
        phi2: float,
        inertia: str,
        w_max: float,
        w_min: float,
        w_const: float,
        w_exponent: float,
        constriction: bool,
        max_iter: int,
        init_velocity: float,
        v_max: float | None,
        boundary: str,
        seed: SeedLike,
    ) -> None:
        # A subclass sets its own weights after this call, then runs _check_constriction().
        super().__init__(seed=seed)
        n = self.name
        self.swarm_size = check_positive_int(n, "swarm_size", swarm_size)
        self.phi1 = check_range(n, "phi1", phi1, 0.0, np.inf)
        self.phi2 = check_range(n, "phi2", phi2, 0.0, np.inf)
        self.inertia = check_choice(n, "inertia", inertia, INERTIA_SCHEDULES)
        self.w_max = check_range(n, "w_max", w_max, 0.0, np.inf)
        self.w_min = check_range(n, "w_min", w_min, 0.0, np.inf)
        self.w_const = check_range(n, "w_const", w_const, 0.0, np.inf)
        self.w_exponent = check_range(n, "w_exponent", w_exponent, 0.0, np.inf, lo_open=True)
        if not isinstance(constriction, bool | np.bool_):
            raise SettingError(n, "constriction", "True or False", constriction)
        self.constriction = bool(constriction)
        self.max_iter = check_positive_int(n, "max_iter", max_iter)
        self.init_velocity = check_range(n, "init_velocity", init_velocity, 0.0, 1.0)
        self.v_max = None if v_max is None else check_range(n, "v_max", v_max, 0.0, 1.0, lo_open=True)
        self.boundary = check_choice(n, "boundary", boundary, BOUNDARY_RULES)

    # -- helpers --------------------------------------------------------------------------------------
    def _check_constriction(self) -> None:
        if not self.constriction:
            return
        phi, what = self._phi_total()
        if phi < 4.0:
            raise ConfigurationError(
                f"{self.name}: constriction=True needs phi = {what} >= 4 (Kibriya et al. (2023) eq. 8), got "
                f"{what} = {phi!r}; raise the weights or set constriction=False"
            )

    @property
    def K(self) -> float:
        """The constriction factor in use (1 when ``constriction`` is off)."""
        return constriction_factor(self._phi_total()[0]) if self.constriction else 1.0

    def weight(self, k: int) -> float:
        """The inertia weight of velocity update ``k`` under this configuration."""
        return inertia_weight(
            k,
            self.max_iter,
            self.inertia,
            w_max=self.w_max,
            w_min=self.w_min,
            w_const=self.w_const,
            exponent=self.w_exponent,
        )

    # -- protocol -------------------------------------------------------------------------------------
    def _init_state(self) -> None:
        n, d = self.swarm_size, self.dim
        self._X = self._random_points(n)
        if self.init_velocity > 0.0:
            self._V = self.rng.uniform(-self.init_velocity, self.init_velocity, (n, d))
        else:
            self._V = np.zeros((n, d))
        self._P = self._X.copy()  # p_0 = x_0 (section 3.2)
        self._fP = np.full(n, np.inf)
        self._g = 0
        self._k = 0

    def _ask(self) -> np.ndarray:
        return self._X.copy()

    def _next_batch_size(self) -> int:
        return self.swarm_size

    def _tell(self, X: np.ndarray, f: np.ndarray) -> None:
        self._P, self._fP, _ = update_personal_best(self._P, self._fP, self._X, f)
        self._g = global_best_index(self._fP)
        V = self._velocity(f)
        self._X, self._V = move(self._X, clamp_velocity(V, self.v_max), self.boundary)
        self._k += 1

    @abstractmethod
    def _phi_total(self) -> tuple[float, str]:
        """``phi`` of eq. 8 and how it is made up (for messages)."""

    @abstractmethod
    def _velocity(self, f: np.ndarray) -> np.ndarray:
        """New velocities ``(n, dim)``; ``f`` are the losses of the current swarm. Bests are updated."""


class PSO(SwarmOptimizer):
    """Global-best particle swarm (Kibriya et al. (2023) eqs. 1-10); one ask is the whole swarm.

    The loop: the initial swarm is uniform in the unit cube; after each batch the personal bests and the
    global best (eq. 3) are updated, then every particle's velocity (eqs. 1/4/9/10 with fresh
    per-dimension ``R1``, ``R2``) and position (eq. 2) are updated and the new swarm is the next ask.

    Args:
        swarm_size: particles, i.e. evaluations per batch (Kibriya et al. (2023) section 4: 10).
        phi1, phi2: cognitive and social weights (Kibriya et al. (2023): 2 and 2, so ``phi = 4`` and eq. 8 gives K = 1).
        inertia: ``"none"`` (w = 1), ``"constant"`` (``w_const``), ``"linear"`` (eq. 6) or
            ``"nonlinear"`` (decreasing power law, see :func:`inertia_weight`).
        w_max, w_min: start and end of the linear/nonlinear schedules (Kibriya et al. (2023): 0.8 and 0.4).
        w_const: the weight of ``inertia="constant"`` (eq. 4; Kibriya et al. (2023) quotes Shi and Eberhart's range
            0.9-1.2).
        w_exponent: the exponent ``n`` of the nonlinear schedule (Kibriya et al. (2023) gives no value).
        constriction: multiply the update by Clerc's ``K`` (eq. 8) computed from ``phi = phi1 + phi2``
            (eqs. 9-10); needs ``phi >= 4``.
        max_iter: ``k_max`` of the inertia schedules, the number of velocity updates over which ``w``
            goes from ``w_max`` to ``w_min`` (later updates keep ``w_min``). The matching budget is
            ``swarm_size * (max_iter + 1)`` evaluations (the initial swarm plus ``max_iter`` moves,
            made with ``w(0) ... w(max_iter - 1)``): give :func:`~mechcalib.calibrate` that
            ``max_evals`` (e.g. 510 for ``kibriya2023``), or set ``max_iter`` from the budget you have.
        init_velocity: initial velocities are uniform in ``[-init_velocity, init_velocity]`` (fraction of
            each range); the default 0 starts every particle at rest, so the first move is pure
            attraction and no particle is thrown against a wall before it has been evaluated.
        v_max: velocity clamp, a fraction of each parameter's range (``None``: no clamp; Kibriya et al. (2023) does
            not say whether it used one). The default 0.5 keeps a step within half the range: the
            paper's weights (``phi = 4``, w from 0.8 to 0.4) never satisfy eq. 5 (``w > phi/2 - 1 = 1``).
            The clamp helps the paper's weights on the project's test functions (``docs/optimizers.md``).
        boundary: what happens at the cube's walls: ``"clip"`` (put on the wall, that velocity component
            set to zero; the default) or ``"reflect"`` (folded back, velocity component reversed).
        seed: random seed or generator.

    State (after ``setup``): ``_X`` positions, ``_V`` velocities, ``_P`` personal bests (``(n, dim)``),
    ``_fP`` their losses (``(n,)``), ``_g`` index of the global best, ``_k`` velocity updates done.
    """

    name = "pso"
    setting_presets = presets_by_name(
        Preset(
            name="kibriya2023",
            source="Kibriya et al. (2023), section 4",
            settings=dict(
                swarm_size=10,
                phi1=2.0,
                phi2=2.0,
                inertia="linear",
                w_max=0.8,
                w_min=0.4,
                constriction=False,
                max_iter=50,
            ),
            aliases=("paper_000",),
        ),
        Preset(
            name="original",
            source="Kennedy and Eberhart (1995), eq. 1 of Kibriya et al. (2023)",
            settings=dict(phi1=2.0, phi2=2.0, inertia="none", constriction=False),
        ),
        Preset(
            name="constricted",
            source="Clerc and Kennedy (2002), eq. 9 of Kibriya et al. (2023)",
            settings=dict(phi1=2.05, phi2=2.05, inertia="none", constriction=True),
        ),
    )

    def __init__(
        self,
        *,
        swarm_size: int = 10,
        phi1: float = 2.0,
        phi2: float = 2.0,
        inertia: str = "linear",
        w_max: float = 0.8,
        w_min: float = 0.4,
        w_const: float = 0.9,
        w_exponent: float = 1.2,
        constriction: bool = False,
        max_iter: int = 100,
        init_velocity: float = 0.0,
        v_max: float | None = 0.5,
        boundary: str = "clip",
        seed: SeedLike = None,
    ) -> None:
        super().__init__(
            swarm_size=swarm_size,
            phi1=phi1,
            phi2=phi2,
            inertia=inertia,
            w_max=w_max,
            w_min=w_min,
            w_const=w_const,
            w_exponent=w_exponent,
            constriction=constriction,
            max_iter=max_iter,
            init_velocity=init_velocity,
            v_max=v_max,
            boundary=boundary,
            seed=seed,
        )
        self._check_constriction()

    # -- presets --------------------------------------------------------------------------------------
    @classmethod
    def kibriya2023(cls, *, seed: SeedLike = None, **overrides: Any) -> PSO:
        """Kibriya et al. (2023) section 4: 10 particles, phi1 = phi2 = 2, linear inertia 0.8 -> 0.4, 50 iterations
        (budget ``10 * 51`` evaluations with the initial swarm)."""
        return cls(**cls.setting_presets["kibriya2023"].merged(overrides), seed=seed)

    paper_000 = deprecated_preset("paper_000")

    @classmethod
    def original(cls, *, seed: SeedLike = None, **overrides: Any) -> PSO:
        """Eq. 1, Kennedy and Eberhart's original rule (no inertia, phi1 = phi2 = 2); it relies on the
        velocity clamp (``v_max``) to stay bounded."""
        return cls(**cls.setting_presets["original"].merged(overrides), seed=seed)

    @classmethod
    def constricted(cls, *, seed: SeedLike = None, **overrides: Any) -> PSO:
        """Eq. 9, Clerc's constriction with phi1 = phi2 = 2.05 (phi = 4.1, K ~ 0.7298), no inertia."""
        return cls(**cls.setting_presets["constricted"].merged(overrides), seed=seed)

    def _phi_total(self) -> tuple[float, str]:
        """``phi`` of eq. 8 and how it is made up (for messages)."""
        return self.phi1 + self.phi2, "phi1 + phi2"

    def _velocity(self, f: np.ndarray) -> np.ndarray:
        """New velocities ``(n, dim)`` from the current state; ``f`` are the losses of the current swarm
        (unused here, TBPSO's trust needs them). Personal and global bests are already updated."""
        R1 = self.rng.random(self._X.shape)
        R2 = self.rng.random(self._X.shape)
        return pso_velocity(
            self._V, self._X, self._P, self._P[self._g], R1, R2, self.phi1, self.phi2, self.weight(self._k), self.K
        )
