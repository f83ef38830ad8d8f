"""The 3-span, 4-storey frame with two bilinear hysteretic components (Ding et al. (2021), "MDOF system with bilinear
hysteresis", eqs. 24-26).

The paper gives the material (``E = 6.9e10 Pa``), the section (``b x h = 0.1 m x 0.04 m``), the component
law (bilinear with kinematic hardening, ``a1 = [0.75, 0.5, 0.2]``, ``a2 = [0.75, 0.5, 0.4]``), a horizontal
sinusoidal force at node 5, zero initial state and horizontal accelerations at nodes 5, 7, 13 and 19
sampled at 200 Hz. Everything else is chosen here and documented in docs/hysteresis.md:

* spans 1.0 m, storey heights 1.0 m; nodes numbered column by column from the ground (node
  ``col * 5 + level + 1``, columns 0-3 left to right, levels 0-4 bottom to top), the four ground nodes fixed;
* Euler-Bernoulli frame elements (axial and bending stiffness, ``I = b h^3 / 12``), one per member;
* mass: aluminium density 2700 kg/m^3, each member's mass lumped half to each end node, horizontal
  inertia only (vertical and rotational inertia neglected, as is usual for lateral response);
* floors rigid in their plane: the beams' axial stiffness ``EA/L = 2.76e8 N/m`` is over 80 times the
  frame's largest lateral stiffness coefficient, so the nodes of a level share one horizontal displacement;
  the massless vertical and rotational degrees of freedom are condensed out statically. The result is a
  4-DOF lateral model (the levels' horizontal displacements) with a full stiffness matrix;
* Rayleigh damping, 2 % in the bare frame's first two modes;
* component 1 acts between the ground and level 1, component 2 between levels 1 and 2 (chevron-brace
  dampers in the middle bay): ``y1 = U1``, ``y2 = U2 - U1`` (the rows of ``T``);
* the components' parameters are read in kN/mm (``a_k1``, ``a_k2``) and kN (``a_k3``): in N/m their stiffness
  would be a millionth of the frame's and invisible in the response;
* force ``F(t) = 1000 N * sin(2 pi 4 Hz t)`` at node 5 (top left), 5 s of response.

Parameters ``a11, a12, a13, a21, a22, a23`` (Table 7's names), bounds 0.5x to 2x the paper's values.

Channels (against time, sampled at ``fs``): ``acceleration_node5``, ``acceleration_node7``,
``acceleration_node13``, ``acceleration_node19`` [m/s^2]; ``restoring_force_1/2`` [N] and
``hysteretic_displacement_1/2`` [m] (scenario M1's measurements); ``hysteresis_loop_1/2`` (restoring force
against hysteretic displacement, time as progress coordinate).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import scipy.linalg

from ...core.data import Curve
from ...core.model import Channel, Response
from ...core.parameters import Parameter, ParameterSpace
from ...errors import ConfigurationError
from . import _common
from .laws import BILINEAR_KINEMATIC, MAX_PARAMS

#: RK4 steps per 5 ms output sample (h = 0.5 ms); the largest response error is then below 2e-4 of its RMS
#: (docs/hysteresis.md, tests/test_hysteresis_models.py).
DEFAULT_SUBSTEPS = 10
KN_PER_MM = 1e6  # N/m
KN = 1e3  # N
#: geometry and material keywords of :func:`build_frame` that :class:`FrameMDOF` passes on
GEOMETRY = ("span", "storey_height", "E", "b", "h", "density")


@dataclass(frozen=True)
class FrameModel:
    """Matrices of the plane frame reduced to the levels' horizontal displacements.

    ``coords``: ``(n_nodes, 2)`` node coordinates [m] (node ``i + 1`` in row ``i``); ``elements``: member end
    nodes (0-based); ``level``: level of each node (0 = ground); ``K_full``: ``(3 n_nodes, 3 n_nodes)``
    assembled stiffness [N/m, N, N m] (DOFs ``3i, 3i+1, 3i+2`` = x, y, rotation of node ``i + 1``);
    ``K``: ``(n_levels, n_levels)`` condensed lateral stiffness [N/m]; ``M``: ``(n_levels,)`` level masses [kg].
    """

    coords: np.ndarray
    elements: tuple[tuple[int, int], ...]
    level: np.ndarray
    K_full: np.ndarray
    K: np.ndarray
    M: np.ndarray


def frame_element_stiffness(E: float, A: float, I: float, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """Global ``(6, 6)`` stiffness of a 2-D Euler-Bernoulli frame element between points ``x1`` and ``x2``
    (DOFs ``u1, v1, theta1, u2, v2, theta2``)."""
    d = np.asarray(x2, float) - np.asarray(x1, float)
    L = float(np.hypot(*d))
    c, s = d / L
    ea, ei = E * A / L, E * I
    k = np.zeros((6, 6))
    k[np.ix_([0, 3], [0, 3])] = ea * np.array([[1.0, -1.0], [-1.0, 1.0]])
    kb = (
        ei
        / L**3
        * np.array(
            [
                [12, 6 * L, -12, 6 * L],
                [6 * L, 4 * L * L, -6 * L, 2 * L * L],
                [-12, -6 * L, 12, -6 * L],
                [6 * L, 2 * L * L, -6 * L, 4 * L * L],
            ]
        )
    )
    k[np.ix_([1, 2, 4, 5], [1, 2, 4, 5])] = kb
    rot = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    Tr = np.zeros((6, 6))
    Tr[:3, :3] = rot
    Tr[3:, 3:] = rot
    return Tr.T @ k @ Tr


def build_frame(
    *,
    n_spans: int = 3,
    n_storeys: int = 4,
    span: float = 1.0,
    storey_height: float = 1.0,
    E: float = 6.9e10,
    b: float = 0.1,
    h: float = 0.04,
    density: float = 2700.0,
) -> FrameModel:
    """Assemble the plane frame and reduce it to one horizontal DOF per level (see the module docstring)."""
    n_lev = n_storeys + 1
    n_col = n_spans + 1
    coords = np.array([[c * span, lv * storey_height] for c in range(n_col) for lv in range(n_lev)])
    level = np.array([lv for _ in range(n_col) for lv in range(n_lev)])
    elements = [(c * n_lev + lv, c * n_lev + lv + 1) for c in range(n_col) for lv in range(n_storeys)]
    elements += [(c * n_lev + lv, (c + 1) * n_lev + lv) for lv in range(1, n_lev) for c in range(n_spans)]
    A, I = b * h, b * h**3 / 12.0
    nn = len(coords)
    K = np.zeros((3 * nn, 3 * nn))
    mass = np.zeros(nn)
    for i, j in elements:
        dofs = [3 * i, 3 * i + 1, 3 * i + 2, 3 * j, 3 * j + 1, 3 * j + 2]
        K[np.ix_(dofs, dofs)] += frame_element_stiffness(E, A, I, coords[i], coords[j])
        half = 0.5 * density * A * float(np.hypot(*(coords[j] - coords[i])))
        mass[i] += half
        mass[j] += half
    free = [i for i in range(nn) if level[i] > 0]
    nf = len(free)
    # q = [level displacements (n_storeys), vertical (nf), rotations (nf)]
    G = np.zeros((3 * nn, n_storeys + 2 * nf))
    for k, node in enumerate(free):
        G[3 * node, level[node] - 1] = 1.0
        G[3 * node + 1, n_storeys + k] = 1.0
        G[3 * node + 2, n_storeys + nf + k] = 1.0
    Kq = G.T @ K @ G
    ns = n_storeys
    K_lat = Kq[:ns, :ns] - Kq[:ns, ns:] @ np.linalg.solve(Kq[ns:, ns:], Kq[ns:, :ns])
    K_lat = 0.5 * (K_lat + K_lat.T)
    M_lat = np.array([mass[level == lv].sum() for lv in range(1, n_lev)])
    return FrameModel(coords, tuple(elements), level, K, K_lat, M_lat)


def rayleigh(
    K: np.ndarray, M: np.ndarray, zeta: float, modes: tuple[int, int] = (1, 2)
) -> tuple[float, float, np.ndarray]:
    """Rayleigh coefficients ``(alpha, beta)`` giving damping ratio ``zeta`` in the two given modes
    (1-based) of ``(K, diag(M))``, and the circular frequencies [rad/s] of all modes."""
    w = np.sqrt(scipy.linalg.eigh(K, np.diag(M), eigvals_only=True))
    w1, w2 = w[modes[0] - 1], w[modes[1] - 1]
    return 2.0 * zeta * w1 * w2 / (w1 + w2), 2.0 * zeta / (w1 + w2), w


class FrameMDOF(_common.BatchedModel):
    """Ding et al.'s (2021) frame with two bilinear kinematic-hardening components (see the module docstring).

    Args:
        damping_ratio: Rayleigh damping ratio in the bare frame's first two modes.
        component_storeys: storey (1 = ground to level 1) of each component; each one acts on that
            storey's drift.
        measured_nodes: nodes whose horizontal accelerations are channels.
        load_node: node of the horizontal force.
        substeps: RK4 steps per output sample (``None``: 10 under the sine, under a measured ``force`` or
            ``ground_acceleration`` the rule of :mod:`.steps`). locate_events: see :mod:`.integrate`.
        geometry: any of :func:`build_frame`'s ``span``, ``storey_height`` [m], ``E`` [Pa], ``b``, ``h``
            (section width and depth [m]) and ``density`` [kg/m^3] (defaults there).
    """

    name = "mdof_frame"
    description = "3-span, 4-storey frame with two bilinear hysteretic components (Ding et al. (2021) eqs. 24-26)"
    default_t_end = 5.0

    def __init__(
        self,
        *,
        damping_ratio: float = 0.02,
        component_storeys: Sequence[int] = (1, 2),
        measured_nodes: Sequence[int] = (5, 7, 13, 19),
        load_node: int = 5,
        substeps: int | None = None,
        locate_events: bool = True,
        **geometry: float,
    ) -> None:
        bad = sorted(set(geometry) - set(GEOMETRY))
        if bad:
            raise ConfigurationError(f"unknown frame options {bad}; the geometry and material keywords are {GEOMETRY}")
        for nm, v in geometry.items():
            if not (np.isfinite(v) and v > 0):
                raise ConfigurationError(f"{nm} must be a positive number, got {v!r}")
        if not 0 <= damping_ratio < 1:
            raise ConfigurationError(f"damping_ratio must be in [0, 1), got {damping_ratio!r}")
        self.frame = build_frame(**geometry)
        n_nodes = len(self.frame.coords)
        n = len(self.frame.M)
        for node in (*measured_nodes, load_node):
            if not 1 <= node <= n_nodes or self.frame.level[node - 1] == 0:
                raise ConfigurationError(
                    f"nodes must be above the ground, numbered 1-{n_nodes} (see docs/hysteresis.md), got {node!r}"
                )
        for st in component_storeys:
            if not 1 <= st <= n:
                raise ConfigurationError(f"component storeys must be in 1-{n}, got {st!r}")
        self.auto_steps = substeps is None
        self.substeps = _common.check_substeps(DEFAULT_SUBSTEPS if substeps is None else substeps)
        self.locate_events = bool(locate_events)
        self.measured_nodes = tuple(int(x) for x in measured_nodes)
        self.load_node = int(load_node)
        self.alpha, self.beta, self.omegas = rayleigh(self.frame.K, self.frame.M, damping_ratio)
        M = self.frame.M
        C = self.alpha * np.diag(M) + self.beta * self.frame.K
        self.C = C
        T = np.zeros((len(component_storeys), n))
        for c, st in enumerate(component_storeys):
            T[c, st - 1] = 1.0
            if st > 1:
                T[c, st - 2] = -1.0
        self.T = T
        p = np.zeros(n)
        p[self.frame.level[self.load_node - 1] - 1] = 1.0
        self._MK = self.frame.K / M[:, None]
        self._MC = C / M[:, None]
        self._Mp = p / M
        self._MT = T.T / M[:, None]
        m = T.shape[0]
        names, params = [], []
        paper = {1: (0.75, 0.5, 0.2), 2: (0.75, 0.5, 0.4)}
        for c in range(1, m + 1):
            vals = paper.get(c, paper[1])
            for j, (v, unit, what) in enumerate(
                zip(
                    vals,
                    ("kN/mm", "kN/mm", "kN"),
                    ("(k1 - k2)/2", "k2: hardening stiffness", "F0: intercept of the hardening lines"),
                ),
                start=1,
            ):
                nm = f"a{c}{j}"
                names.append((nm, v))
                params.append(
                    Parameter(
                        nm,
                        0.5 * v,
                        2.0 * v,
                        unit=unit,
                        description=f"component {c}: {what} (Ding et al. (2021) eqs. 2-4)",
                    )
                )
        self.space = ParameterSpace(params)
        self.presets = {"default": dict(names)}
        ch = [
            Channel(f"acceleration_node{nd}", "time", "horizontal acceleration", "s", "m/s^2")
            for nd in self.measured_nodes
        ]
        for c in range(1, m + 1):
            ch += [
                Channel(f"restoring_force_{c}", "time", "restoring force", "s", "N", f"component {c}"),
                Channel(f"hysteretic_displacement_{c}", "time", "hysteretic displacement", "s", "m", f"component {c}"),
                Channel(
                    f"hysteresis_loop_{c}",
                    "hysteretic displacement",
                    "restoring force",
                    "m",
                    "N",
                    f"component {c}, t = time",
                ),
            ]
        self.channels = tuple(ch)
        self.default_conditions = {
            "amplitude": 1000.0,
            "omega": 2 * np.pi * 4.0,
            "force": None,
            "ground_acceleration": None,
            "t_end": 5.0,
            "fs": 200.0,
        }

    def natural_frequencies(self) -> np.ndarray:
        pre = self.presets["default"]
        m = self.T.shape[0]
        kh = np.array([2.0 * pre[f"a{c}1"] + pre[f"a{c}2"] for c in range(1, m + 1)]) * KN_PER_MM  # eq. 4: k1
        K = self.frame.K + self.T.T @ np.diag(kh) @ self.T
        w2 = scipy.linalg.eigh(K, np.diag(self.frame.M), eigvals_only=True)
        return np.sqrt(np.maximum(w2, 0.0)) / (2.0 * np.pi)

    def explicit_steps(self) -> tuple[int, int] | None:
        return None if self.auto_steps else (self.substeps, 1)

    def sine_steps(self) -> tuple[int, int]:
        return (self.substeps, 1)

    def _pattern(self, node: int | None) -> np.ndarray:
        """``M^-1 p`` of a horizontal force at ``node`` (``None``: the model's ``load_node``)."""
        nd = self.load_node if node is None else int(node)
        if not 1 <= nd <= len(self.frame.coords) or self.frame.level[nd - 1] == 0:
            raise ConfigurationError(
                f"{self.name}: the force's node must be above the ground, numbered 1-{len(self.frame.coords)} "
                f"(see docs/hysteresis.md), got {nd!r}"
            )
        p = np.zeros(len(self.frame.M))
        p[self.frame.level[nd - 1] - 1] = 1.0
        return p / self.frame.M

    def integrate(
        self, theta: np.ndarray, conditions: Mapping[str, Any] | None = None, *, steps: tuple[int, int] | None = None
    ) -> dict[str, np.ndarray]:
        """Raw arrays: ``t`` ``(n_out,)``; ``u, v, a`` ``(n, n_out, levels)``; ``r, y, eps``
        ``(n, n_out, components)``; ``status``, ``events`` ``(n,)``. ``steps``: ``(substeps, 1)`` instead of the
        model's choice. Under a ``ground_acceleration`` ``u``, ``v`` are relative to the ground, ``a`` absolute;
        a measured force acts at its record's ``node`` (default ``load_node``)."""
        theta = self.check_theta(theta)
        N = theta.shape[0]
        m, n = self.T.shape
        ok = np.all(np.isfinite(theta), axis=1)
        a = np.where(ok[:, None], theta, 0.0).reshape(N, m, 3)
        A = np.zeros((N, m, MAX_PARAMS))
        A[:, :, :3] = a * np.array([KN_PER_MM, KN_PER_MM, KN])
        plan = self.plan(conditions, n_sets=N, steps=steps)
        exc = plan.load.exc
        if plan.load.ground:
            pattern = -np.ones(n)  # M^-1 (-M 1): every level moves with the ground
        else:
            pattern = self._Mp if exc is None or exc.node is None else self._pattern(exc.node)
        t, (U, V, Acc, R, E, status, events) = _common.run_batch(
            np.full(m, BILINEAR_KINEMATIC, dtype=np.int64),
            A,
            np.broadcast_to(self._MK, (N, n, n)),
            np.broadcast_to(self._MC, (N, n, n)),
            np.broadcast_to(pattern, (N, n)),
            np.broadcast_to(self._MT, (N, n, m)),
            self.T,
            plan,
            self.locate_events,
        )
        return {
            "t": t,
            "u": U,
            "v": V,
            "a": Acc,
            "r": R,
            "y": np.einsum("cj,ikj->ikc", self.T, U),
            "eps": E,
            "status": np.where(ok, status, -1),
            "events": events,
        }

    def floats_per_sample(self) -> int:
        m, n = self.T.shape
        return 3 * n + 3 * m  # u, v, a per level; r, y, eps per component

    def response_at(self, res: Mapping[str, np.ndarray], i: int) -> Response:
        t = res["t"]
        make: dict[str, Callable[[], Curve]] = {}
        for nd in self.measured_nodes:
            acc = res["a"][i, :, self.frame.level[nd - 1] - 1]
            make[f"acceleration_node{nd}"] = partial(_common.time_curve, t, acc, "horizontal acceleration", "m/s^2")
        for c in range(self.T.shape[0]):
            r, y = res["r"][i, :, c], res["y"][i, :, c]
            make[f"restoring_force_{c + 1}"] = partial(_common.time_curve, t, r, "restoring force", "N")
            make[f"hysteretic_displacement_{c + 1}"] = partial(_common.time_curve, t, y, "hysteretic displacement", "m")
            make[f"hysteresis_loop_{c + 1}"] = partial(
                Curve, y, r, t=t, x_name="hysteretic displacement", y_name="restoring force", x_unit="m", y_unit="N"
            )
        return _common.LazyResponse(make)
