"""Hysteretic laws of Ding et al. (2021) (eqs. 1-23) as compiled kernels.

Every law is written in the rate form of eq. 1, ``r' = f(r, u, u', a)``, with the paper's *effective*
parameters ``a``. All five laws are rate-independent: ``f`` is ``u'`` times a tangent stiffness

    ``r' = k_t(r, u, s, eps, p; a) * u'``,   ``eps' = r * u'`` (eq. 14),

where ``s = sgn(u')`` (eq. 5, ``sgn(0) = 1``), ``eps`` the dissipated-energy measure of eq. 14 and ``p``
the branch of a bilinear law (0 elastic, 1 yielding). :func:`tangent` evaluates ``k_t`` with ``s`` and
``p`` given (the integrators freeze them between located switching events); :func:`rate` is the literal
right-hand side of eqs. 4, 8, 11, 12 and 19-21, with the sign functions evaluated at the state.

==========  ===================================  ========================================================
law id      law (registry key)                   ``a`` (Ding et al. (2021))
==========  ===================================  ========================================================
0           bilinear, kinematic hardening        eqs. 2-4: ``[(k1 - k2)/2, k2, F0]``
            (``"bilinear_kinematic"``)
1           bilinear, equal yielding force       eqs. 6-8: ``[(k1 + k2)/2, (k1 - k2)/2, Fy]``
            (``"bilinear_equal"``)
2           Bouc-Wen (``"boucwen"``)             eqs. 9-11: ``[A/eta, nu beta/eta, nu gamma/eta, n]``
3           Baber-Wen degradation                eqs. 12-18: ``[beta, gamma, n, dA, dnu, deta]``
            (``"degradation"``)
4           Baber-Noori pinching (``"pinching"``)  eqs. 19-23: ``[A, beta, gamma, n, ds/sigma, 1/(2 sigma^2)]``
5           Bouc-Wen with degradation, OpenSees  ``[alpha ko, (1-alpha) ko, n, gamma, beta, Ao, deltaA, deltaNu,
            ``BoucWen`` material                 deltaEta]`` (Haukaas's BoucWenMaterial; user names
            (``"boucwen_opensees"``)              ``alpha, ko, n, gamma, beta, Ao, deltaA, deltaNu, deltaEta``)
6           Bouc-Wen-Baber-Noori, OpenSees       ``[alpha ko, (1-alpha) ko, n, gamma, beta, Ao, q, zetas, p, Shi,
            ``BWBN`` material (``"bwbn"``)       deltaShi, lambda]`` (Foliente (1995))
==========  ===================================  ========================================================

Parameter arrays passed to the kernels have ``MAX_PARAMS`` = 12 entries; a law reads its first ones. A law's
user parameters map onto its kernel row through :meth:`LawSpec.padded` (the identity, padded, for laws 0-4).

Laws 5 and 6 keep OpenSees' parameter names and equations: the force is the *total* material stress
``r = alpha ko u + (1 - alpha) ko z`` with the dimensionless ``z`` recovered from the state as
``z = (r - alpha ko u) / ((1 - alpha) ko)`` (so they start unloaded at ``u = 0``), ``z' = dz/du u'`` with

* BoucWen: ``dz/du = (A - nu |z|^n (gamma + beta sgn(u' z))) / eta``, ``A = Ao - deltaA e``,
  ``nu = 1 + deltaNu e``, ``eta = 1 + deltaEta e``;
* BWBN: ``dz/du = h (Ao - |z|^n (gamma + beta sgn(u' z)))``, ``h = 1 - zeta1 exp(-(z sgn(u') - q zu)^2 / zeta2^2)``,
  ``zeta1 = zetas (1 - exp(-p e))``, ``zeta2 = (Shi + deltaShi e)(lambda + zeta1)``, ``zu = (beta + gamma)^(-1/n)``;

and OpenSees' energy ``e = int (1 - alpha) ko z du = eps - alpha ko u^2 / 2``. ``beta`` multiplies the
direction-dependent term and ``gamma`` the constant one (Wen's convention; docs/hysteresis_protocols.md lists
the mapping to Ding et al.'s ``a1..a4``). OpenSees integrates them by backward Euler per strain step; here RK4.

Conventions the paper leaves open, fixed here:

* Bilinear, kinematic hardening (eq. 4): the yield function is ``g = (r - a2 u) s - a3``, so ``F0 = a3`` is
  the intercept of the hardening lines ``r = k2 u +- F0`` (the yield force on first loading is
  ``F0 k1 / (k1 - k2)``). Elastic slope ``k1 = 2 a1 + a2``, hardening slope ``k2 = a2``.
* Bilinear, equal yielding force (eq. 8): ``g = r s - a3``; elastic slope ``k1 = a1 + a2``, post-yield slope
  ``k2 = a1 - a2``. Where ``k2 < 0`` the literal eq. 8 chatters on ``g = 0`` (softening takes the state back
  inside, the elastic slope out again); its limit (Filippov) is sliding with ``r' = 0``, which
  :func:`tangent` returns on the yielding branch.
* Degradation (eq. 12): ``A(t) = 1 - dA eps``, ``nu = 1 + dnu eps``, ``eta = 1 + deta eps`` (eqs. 15-17) with
  ``A0 = 1`` as printed; eq. 13's ``omega0^2`` only rescales ``eps`` and is absorbed into the deltas.
* Pinching (eqs. 19-22): eq. 19's ``z`` is ``r``. With ``u = u1 + u2`` (eq. 21) and
  ``u2' = h r'`` (eq. 20, ``h = sqrt(2/pi) (ds/sigma) eps exp(-r^2/(2 sigma^2))``) the rate is explicit:
  ``r' = u' psi / (1 + h psi)`` with ``psi = A - |r|^n (beta s sgn(r) + gamma)``, because ``u1'`` has the
  sign of ``u'`` whenever ``1 + h psi > 0`` (always inside the loop's bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

BILINEAR_KINEMATIC = 0
BILINEAR_EQUAL = 1
BOUC_WEN = 2
DEGRADATION = 3
PINCHING = 4
BOUC_WEN_OPENSEES = 5
BWBN = 6
MAX_PARAMS = 12

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


# --------------------------------------------------------------------------------------------
# Scalar kernels
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True, inline="always")
def sgn(x: float) -> float:
    """Eq. 5: ``-1`` if ``x < 0`` else ``1``."""
    return -1.0 if x < 0.0 else 1.0


@nb.njit(cache=True, inline="always")
def _abs_pow(x: float, n: float) -> float:
    """``x ** n`` for ``x >= 0``, ``n > 0`` as ``exp(n log x)`` (about 10 % cheaper than a general ``pow``)."""
    return math.exp(n * math.log(x)) if x > 0.0 else 0.0


@nb.njit(cache=True, inline="always")
def is_bilinear(law: int) -> bool:
    return law in (BILINEAR_KINEMATIC, BILINEAR_EQUAL)


@nb.njit(cache=True, inline="always")
def yield_function(law: int, a: np.ndarray, c: int, r: float, u: float, s: float) -> float:
    """The argument of the outer ``sgn`` in eq. 4 (``(r - a2 u) s - a3``) or eq. 8 (``r s - a3``).

    ``>= 0`` means yielding. Laws without a yield surface return ``-1``.
    """
    if law == BILINEAR_KINEMATIC:
        return (r - a[c, 1] * u) * s - a[c, 2]
    if law == BILINEAR_EQUAL:
        return r * s - a[c, 2]
    return -1.0


@nb.njit(cache=True, inline="always")
def yield_function_rate(law: int, a: np.ndarray, c: int, rdot: float, udot: float, s: float) -> float:
    """Time derivative of :func:`yield_function` at frozen ``s``."""
    if law == BILINEAR_KINEMATIC:
        return (rdot - a[c, 1] * udot) * s
    if law == BILINEAR_EQUAL:
        return rdot * s
    return 0.0


@nb.njit(cache=True, inline="always")
def on_yield_surface(law: int, a: np.ndarray, c: int, u: float, s: float) -> float:
    """The restoring force on the yield surface ``g = 0`` at displacement ``u`` moving in direction ``s``."""
    if law == BILINEAR_KINEMATIC:
        return a[c, 1] * u + a[c, 2] * s
    return a[c, 2] * s


@nb.njit(cache=True, inline="always")
def tangent_row(law: int, a: np.ndarray, c: int, r: float, u: float, s: float, eps: float, p: int) -> float:
    """Tangent stiffness ``k_t = r'/u'`` with the motion direction ``s`` and the bilinear branch ``p`` given.

    Args:
        law: law id (module constants).
        a, c: ``a[c]`` holds the component's ``MAX_PARAMS`` effective parameters of Ding et al. (2021) (a row index
            rather than a row view keeps the integrators' inner loops free of reference counting).
        r, u: restoring force and displacement of the component.
        s: ``sgn(u')`` (``+-1``).
        eps: eq. 14's energy measure ``int r u' dt``.
        p: bilinear branch, 0 elastic, 1 yielding (ignored by the smooth laws).
    """
    if law == BILINEAR_KINEMATIC:  # eq. 4
        return a[c, 1] if p == 1 else 2.0 * a[c, 0] + a[c, 1]
    if law == BILINEAR_EQUAL:  # eq. 8; Filippov sliding when the post-yield slope is negative
        if p == 1:
            k2 = a[c, 0] - a[c, 1]
            return k2 if k2 > 0.0 else 0.0
        return a[c, 0] + a[c, 1]
    ar = abs(r)
    sr = sgn(r)
    if law == BOUC_WEN:  # eq. 11
        return a[c, 0] - _abs_pow(ar, a[c, 3]) * (a[c, 1] * s * sr + a[c, 2])
    if law == DEGRADATION:  # eqs. 12, 15-17 with a = [beta, gamma, n, dA, dnu, deta]
        big_a = 1.0 - a[c, 3] * eps
        nu = 1.0 + a[c, 4] * eps
        eta = 1.0 + a[c, 5] * eps
        return (big_a - nu * _abs_pow(ar, a[c, 2]) * (a[c, 0] * s * sr + a[c, 1])) / eta
    if law == PINCHING:  # eqs. 19-23 with a = [A, beta, gamma, n, ds/sigma, 1/(2 sigma^2)]
        psi = a[c, 0] - _abs_pow(ar, a[c, 3]) * (a[c, 1] * s * sr + a[c, 2])
        h = _SQRT_2_OVER_PI * a[c, 4] * eps * math.exp(-a[c, 5] * r * r)
        return psi / (1.0 + h * psi)
    if law in (BOUC_WEN_OPENSEES, BWBN):
        return _opensees_tangent(law, a, c, r, u, s, eps)
    return math.nan


# Not inlined: the integrators inline tangent_row at every stage of every scheme, and these two laws' bodies
# would multiply their compile time; one call per stage costs them nothing measurable.
@nb.njit(cache=True)
def _opensees_tangent(law: int, a: np.ndarray, c: int, r: float, u: float, s: float, eps: float) -> float:
    """``dr/du`` of laws 5 and 6 (OpenSees' BoucWen and BWBN), ``a[c] = [alpha ko, (1 - alpha) ko, n, gamma,
    beta, Ao, ...]``; see the module docstring."""
    kp, kh = a[c, 0], a[c, 1]
    z = (r - kp * u) / kh
    e = eps - 0.5 * kp * u * u
    az = _abs_pow(abs(z), a[c, 2])
    psi = a[c, 3] + a[c, 4] * s * sgn(z)
    if law == BOUC_WEN_OPENSEES:  # a[c, 5:9] = Ao, deltaA, deltaNu, deltaEta
        big_a = a[c, 5] - a[c, 6] * e
        nu = 1.0 + a[c, 7] * e
        eta = 1.0 + a[c, 8] * e
        return kp + kh * (big_a - az * psi * nu) / eta
    # BWBN, a[c, 5:12] = Ao, q, zetas, p, Shi, deltaShi, lambda
    zeta1 = a[c, 7] * (1.0 - math.exp(-a[c, 8] * e))
    h = 1.0
    if zeta1 != 0.0:
        zeta2 = (a[c, 9] + a[c, 10] * e) * (a[c, 11] + zeta1)
        zu = math.exp(-math.log(a[c, 4] + a[c, 3]) / a[c, 2])
        d = z * s - a[c, 6] * zu
        h = 1.0 - zeta1 * math.exp(-d * d / (zeta2 * zeta2))
    return kp + kh * h * (a[c, 5] - az * psi)


# Not inlined: only the literal right-hand side calls it, and inlining it beside tangent_row into every RK4
# stage doubled the integrators' compile time (about 80 s of an empty numba cache) for no speed in the default.
@nb.njit(cache=True)
def rate_row(law: int, a: np.ndarray, c: int, r: float, u: float, udot: float, eps: float) -> float:
    """Literal eq. 1, ``r' = f(r, u, u', a[c])``, with every sign function evaluated at the state (eq. 5)."""
    s = sgn(udot)
    p = 0
    if is_bilinear(law) and yield_function(law, a, c, r, u, s) >= 0.0:
        p = 1
    if law == BILINEAR_EQUAL and p == 1:  # the printed eq. 8, without the sliding limit of `tangent`
        return (a[c, 0] - a[c, 1]) * udot
    return tangent_row(law, a, c, r, u, s, eps, p) * udot


@nb.njit(cache=True)
def tangent(law: int, a: np.ndarray, r: float, u: float, s: float, eps: float, p: int) -> float:
    """:func:`tangent_row` of one component, ``a`` its ``(MAX_PARAMS,)`` parameters."""
    return tangent_row(law, a.reshape((1, a.size)), 0, r, u, s, eps, p)


@nb.njit(cache=True)
def rate(law: int, a: np.ndarray, r: float, u: float, udot: float, eps: float) -> float:
    """:func:`rate_row` of one component, ``a`` its ``(MAX_PARAMS,)`` parameters."""
    return rate_row(law, a.reshape((1, a.size)), 0, r, u, udot, eps)


# --------------------------------------------------------------------------------------------
# Displacement-driven loops (quasi-static tests of a law)
# --------------------------------------------------------------------------------------------
@nb.njit(cache=True)
def _drive_one(
    law: int, a: np.ndarray, c: int, path: np.ndarray, substeps: int, r_out: np.ndarray, e_out: np.ndarray
) -> None:
    r, e, p = 0.0, 0.0, 0
    s = 1.0
    r_out[0] = 0.0
    e_out[0] = 0.0
    for k in range(path.size - 1):
        du_seg = path[k + 1] - path[k]
        if du_seg != 0.0:
            s_new = sgn(du_seg)
            if s_new != s:
                p = 0  # a reversal leaves the yield surface (eqs. 4, 8)
            s = s_new
        u = path[k]
        h = du_seg / substeps
        for _ in range(substeps):
            if p == 0 and is_bilinear(law):
                # elastic branch: r is linear in u, so the yield point is found exactly
                kt = tangent_row(law, a, c, r, u, s, e, 0)
                g0 = yield_function(law, a, c, r, u, s)
                r1 = r + kt * h
                g1 = yield_function(law, a, c, r1, u + h, s)
                if g1 >= 0.0 and g0 < 0.0:
                    th = g0 / (g0 - g1)
                    ue = u + th * h
                    re = on_yield_surface(law, a, c, ue, s)
                    e += 0.5 * (r + re) * th * h
                    p = 1
                    k2 = tangent_row(law, a, c, re, ue, s, e, 1)
                    r1 = re + k2 * (1.0 - th) * h
                    e += 0.5 * (re + r1) * (1.0 - th) * h
                else:
                    if g0 >= 0.0:
                        p = 1
                        r1 = r + tangent_row(law, a, c, r, u, s, e, 1) * h
                    e += 0.5 * (r + r1) * h
                r = r1
            else:
                # RK4 in u for (r, eps): dr/du = k_t, deps/du = r
                k1r = tangent_row(law, a, c, r, u, s, e, p)
                k1e = r
                k2r = tangent_row(law, a, c, r + 0.5 * h * k1r, u + 0.5 * h, s, e + 0.5 * h * k1e, p)
                k2e = r + 0.5 * h * k1r
                k3r = tangent_row(law, a, c, r + 0.5 * h * k2r, u + 0.5 * h, s, e + 0.5 * h * k2e, p)
                k3e = r + 0.5 * h * k2r
                k4r = tangent_row(law, a, c, r + h * k3r, u + h, s, e + h * k3e, p)
                k4e = r + h * k3r
                r += h / 6.0 * (k1r + 2.0 * k2r + 2.0 * k3r + k4r)
                e += h / 6.0 * (k1e + 2.0 * k2e + 2.0 * k3e + k4e)
            u += h
        r_out[k + 1] = r
        e_out[k + 1] = e


@nb.njit(parallel=True, cache=True)
def drive(law: int, a: np.ndarray, path: np.ndarray, substeps: int) -> tuple[np.ndarray, np.ndarray]:
    """Restoring force along a prescribed displacement path, for a batch of parameter sets.

    The path is piecewise linear between its points (each segment monotonic); each segment is split into
    ``substeps`` RK4 steps in ``u`` (the laws are rate-independent, so time plays no role), and a
    bilinear law's yield point is located exactly. Starts from ``r = eps = 0``.

    Args:
        law: law id.
        a: ``(n, MAX_PARAMS)`` effective parameters.
        path: ``(K,)`` displacements, ``path[0]`` the start.
        substeps: RK4 steps per path segment.

    Returns:
        ``r`` and ``eps`` (eq. 14), each ``(n, K)``.
    """
    n = a.shape[0]
    r = np.empty((n, path.size))
    e = np.empty((n, path.size))
    for i in nb.prange(n):
        _drive_one(law, a, i, path, substeps, r[i], e[i])
    return r, e


# --------------------------------------------------------------------------------------------
# Descriptions used by the models
# --------------------------------------------------------------------------------------------
def _opensees_row(a: np.ndarray) -> np.ndarray:
    """OpenSees ``(alpha, ko, n, gamma, beta, rest...)`` -> kernel ``(alpha ko, (1 - alpha) ko, n, gamma, beta,
    rest...)`` (laws 5 and 6)."""
    out = a.copy()
    out[:, 0] = a[:, 0] * a[:, 1]
    out[:, 1] = (1.0 - a[:, 0]) * a[:, 1]
    return out


@dataclass(frozen=True)
class LawSpec:
    """A law's id, its user parameters (names, meaning, unit), reference values and default search bounds.

    ``paper`` holds the reference values (Ding et al. (2021)'s test values for laws 0-4, a unit-scale OpenSees
    example for laws 5 and 6). ``default_bounds`` are a *starting point* at that toy scale, stated here and in
    docs/hysteresis_protocols.md, never derived from a user's values: laws 0-4 search 0.5x to 2x the paper's values (the
    paper's own box), laws 5 and 6 the boxes written below. Set a measured specimen's bounds with
    ``space.with_bounds(...)`` or ``[parameters.NAME] bounds = [lo, hi]``. ``fixed_by_default`` names parameters
    fixed at their reference value (OpenSees' ``Ao`` only rescales ``z`` together with ``ko``, ``beta``,
    ``gamma``, so a calibration fixes it at 1)."""

    key: str
    law_id: int
    title: str
    equations: str
    meanings: tuple[str, ...]
    units: tuple[str, ...]
    paper: tuple[float, ...]
    param_names: tuple[str, ...] = ()
    given_bounds: tuple[tuple[float, float], ...] = ()
    fixed_by_default: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return self.param_names or tuple(f"a{i + 1}" for i in range(len(self.paper)))

    @property
    def bounds(self) -> tuple[tuple[float, float], ...]:
        return self.given_bounds or tuple((0.5 * v, 2.0 * v) for v in self.paper)

    @property
    def opensees_named(self) -> bool:
        return self.law_id in (BOUC_WEN_OPENSEES, BWBN)

    def padded(self, a: np.ndarray) -> np.ndarray:
        """``(n, len(paper))`` user parameters -> ``(n, MAX_PARAMS)`` kernel rows."""
        a = np.atleast_2d(np.asarray(a, dtype=float))
        if self.opensees_named:
            a = _opensees_row(a)
        out = np.zeros((a.shape[0], MAX_PARAMS))
        out[:, : a.shape[1]] = a
        return out


_BW_UNIT = "1/(m N^(n-1))"
_OS_MEANINGS = (
    "alpha: post-yield to initial stiffness ratio",
    "ko: initial stiffness",
    "n: exponent",
    "gamma: constant shape term",
    "beta: direction-dependent shape term (sgn(u' z))",
    "Ao: initial A (redundant with ko; fixed at 1 by default)",
)
_OS_UNITS = ("-", "N/m", "-", "-", "-", "-")
#: default boxes of the OpenSees-named laws at the unit scale of their reference values (a starting point)
_OS_BOUNDS = ((0.0, 0.5), (0.5, 8.0), (1.0, 4.0), (-1.0, 1.0), (0.05, 4.0), (0.5, 2.0))
LAWS: dict[str, LawSpec] = {
    spec.key: spec
    for spec in (
        # key, id, title, equations, meanings of a, units of a, the paper's test values of a
        LawSpec(
            "bilinear_kinematic",
            BILINEAR_KINEMATIC,
            "bilinear, kinematic hardening",
            "Ding et al. (2021) eqs. 2-5",
            ("(k1 - k2)/2", "k2: hardening stiffness", "F0: intercept of the hardening lines"),
            ("N/m", "N/m", "N"),
            (1.0, 2.0, 1.0),
        ),
        LawSpec(
            "bilinear_equal",
            BILINEAR_EQUAL,
            "bilinear, equal yielding force",
            "Ding et al. (2021) eqs. 5-8",
            ("(k1 + k2)/2", "(k1 - k2)/2", "Fy: yielding force"),
            ("N/m", "N/m", "N"),
            (3.0, 1.0, 1.0),
        ),
        LawSpec(
            "boucwen",
            BOUC_WEN,
            "Bouc-Wen",
            "Ding et al. (2021) eqs. 9-11",
            ("A/eta", "nu beta/eta", "nu gamma/eta", "n: exponent"),
            ("N/m", _BW_UNIT, _BW_UNIT, "-"),
            (2.0, 1.0, 0.5, 2.0),
        ),
        LawSpec(
            "degradation",
            DEGRADATION,
            "Baber-Wen degradation",
            "Ding et al. (2021) eqs. 12-18",
            ("beta", "gamma", "n: exponent", "delta_A", "delta_nu", "delta_eta"),
            (_BW_UNIT, _BW_UNIT, "-", "1/J", "1/J", "1/J"),
            (2.0, 1.0, 2.0, 0.02, 0.02, 0.02),
        ),
        LawSpec(
            "pinching",
            PINCHING,
            "Baber-Noori pinching",
            "Ding et al. (2021) eqs. 19-23",
            ("A", "beta", "gamma", "n: exponent", "delta_s/sigma", "1/(2 sigma^2)"),
            ("N/m", _BW_UNIT, _BW_UNIT, "-", "m/(N J)", "1/N^2"),
            (10.0, 5.0, 5.0, 2.0, 2.0, 2.0),
        ),
        LawSpec(
            "boucwen_opensees",
            BOUC_WEN_OPENSEES,
            "Bouc-Wen with degradation (OpenSees BoucWen)",
            "Haukaas's OpenSees BoucWenMaterial; Baber and Wen (1981)",
            _OS_MEANINGS
            + ("deltaA: A degradation", "deltaNu: strength degradation", "deltaEta: stiffness degradation"),
            _OS_UNITS + ("1/J", "1/J", "1/J"),
            (0.1, 2.0, 2.0, 0.5, 1.0, 1.0, 0.0, 0.0, 0.0),
            ("alpha", "ko", "n", "gamma", "beta", "Ao", "deltaA", "deltaNu", "deltaEta"),
            _OS_BOUNDS + ((0.0, 0.1), (0.0, 0.1), (0.0, 0.1)),
            ("Ao",),
        ),
        LawSpec(
            "bwbn",
            BWBN,
            "Bouc-Wen-Baber-Noori pinching (OpenSees BWBN)",
            "OpenSees BWBN material; Baber and Noori (1986), Foliente (1995)",
            _OS_MEANINGS
            + (
                "q: pinching onset (fraction of zu)",
                "zetas: pinching severity",
                "p: pinching growth rate",
                "Shi: pinching spread",
                "deltaShi: spread growth",
                "lambda: spread-severity coupling",
            ),
            _OS_UNITS + ("-", "-", "1/J", "-", "1/J", "-"),
            (0.1, 2.0, 2.0, 0.5, 1.0, 1.0, 0.1, 0.5, 1.0, 0.2, 0.0, 0.5),
            ("alpha", "ko", "n", "gamma", "beta", "Ao", "q", "zetas", "p", "Shi", "deltaShi", "lambda"),
            _OS_BOUNDS + ((0.0, 0.5), (0.0, 0.99), (0.0, 10.0), (0.01, 2.0), (0.0, 0.5), (0.01, 2.0)),
            ("Ao",),
        ),
    )
}


def law_spec(key: str) -> LawSpec:
    from ...errors import ConfigurationError

    try:
        return LAWS[key]
    except KeyError:
        raise ConfigurationError(f"unknown hysteretic law {key!r}; valid laws are {sorted(LAWS)}") from None


def hysteresis_loop(law: str, a, path, substeps: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Restoring force ``r`` and energy measure ``eps`` of one or several parameter sets along a
    prescribed displacement ``path`` (see :func:`drive`); ``a`` is ``(len(a),)`` or ``(n, len(a))``, the
    law's user parameters (OpenSees' names for ``"boucwen_opensees"`` and ``"bwbn"``, whose ``r`` is the
    material's total stress and whose path should start at ``u = 0``, as an OpenSees material does).
    Returns arrays of shape ``(K,)`` for one set, ``(n, K)`` for several."""
    spec = law_spec(law)
    a_arr = np.asarray(a, dtype=float)
    single = a_arr.ndim == 1
    r, e = drive(spec.law_id, spec.padded(a_arr), np.ascontiguousarray(path, dtype=float), int(substeps))
    return (r[0], e[0]) if single else (r, e)
