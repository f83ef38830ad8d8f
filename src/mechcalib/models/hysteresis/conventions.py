"""The Bouc-Wen family in two parameterisations: Ding et al. (2021)'s effective ``a1..a4`` (eq. 11) and
OpenSees' ``BoucWen`` material (``alpha, ko, n, gamma, beta, Ao, deltaA, deltaNu, deltaEta``).

Both write Wen's equation with ``beta`` on the direction-dependent term and ``gamma`` on the constant one:

* Ding et al. (2021) eq. 11: ``r' = (a1 - |r|^a4 (a2 sgn(u') sgn(r) + a3)) u'``, ``r`` the hysteretic force
  [N], in parallel with a linear spring ``k u`` of the structure.
* OpenSees ``BoucWen``: ``F = alpha ko u + (1 - alpha) ko z``,
  ``z' = (A - nu |z|^n (gamma + beta sgn(u' z))) u' / eta`` with ``z`` dimensionless.

With ``r = (1 - alpha) ko z`` and no degradation they are the same law:

====================  ==============================================================================
Ding et al. (2021)    from OpenSees
====================  ==============================================================================
``a1``                ``(1 - alpha) ko Ao``
``a2``                ``beta ((1 - alpha) ko)^(1 - n)``
``a3``                ``gamma ((1 - alpha) ko)^(1 - n)``
``a4``                ``n``
``k`` (parallel)      ``alpha ko``
====================  ==============================================================================

and back, with ``Ao = 1`` (``ko``, ``Ao``, ``beta`` and ``gamma`` are redundant by one scale of ``z``):
``ko = a1 + k``, ``alpha = k / ko``, ``beta = a2 a1^(a4 - 1)``, ``gamma = a3 a1^(a4 - 1)``, ``n = a4``.

Other authors swap the letters (``gamma`` on the sign term in e.g. Baber and Wen (1981)'s notation of some
reprints) or write ``A`` as a stiffness; compare the *term* a letter multiplies, not the letter. Ding et al.'s
degradation law (eqs. 12-18, ``[beta, gamma, n, dA, dnu, deta]``, ``A0 = 1``) is OpenSees' ``BoucWen`` with
``alpha = 0``, ``ko = Ao = 1`` and the same deltas: :func:`degradation_to_opensees`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...errors import ConfigurationError

OPENSEES_BOUCWEN = ("alpha", "ko", "n", "gamma", "beta", "Ao", "deltaA", "deltaNu", "deltaEta")


def _need(values: Mapping[str, float], names: tuple[str, ...], what: str) -> dict[str, float]:
    missing = [n for n in names if n not in values]
    if missing:
        raise ConfigurationError(f"{what} needs the parameters {list(names)}; missing {missing}")
    return {n: float(values[n]) for n in names}


def opensees_to_boucwen(values: Mapping[str, float]) -> dict[str, float]:
    """OpenSees ``BoucWen`` (``alpha, ko, n, gamma, beta, Ao``; deltas absent or 0) -> Ding et al. (2021)
    ``a1..a4`` and the parallel stiffness ``k``."""
    v = _need(values, OPENSEES_BOUCWEN[:6], "the OpenSees BoucWen -> a1..a4 mapping")
    deltas = {n: float(values.get(n, 0.0)) for n in OPENSEES_BOUCWEN[6:]}
    if any(deltas.values()):
        raise ConfigurationError(
            f"a1..a4 (Ding et al. (2021) eq. 11) has no degradation, got {deltas}; use the law 'boucwen_opensees' "
            "(or 'degradation' with alpha = 0, ko = Ao = 1) for a degrading law"
        )
    kh = (1.0 - v["alpha"]) * v["ko"]
    if not (kh > 0 and v["n"] > 0):
        raise ConfigurationError(
            f"the mapping needs (1 - alpha) ko > 0 and n > 0, got alpha={v['alpha']!r}, ko={v['ko']!r}, n={v['n']!r}"
        )
    scale = kh ** (1.0 - v["n"])
    return {
        "a1": kh * v["Ao"],
        "a2": v["beta"] * scale,
        "a3": v["gamma"] * scale,
        "a4": v["n"],
        "k": v["alpha"] * v["ko"],
    }


def boucwen_to_opensees(values: Mapping[str, float]) -> dict[str, float]:
    """Ding et al. (2021) ``a1..a4`` and the parallel stiffness ``k`` (0 when absent) -> OpenSees ``BoucWen``
    with ``Ao = 1`` and no degradation (the inverse of :func:`opensees_to_boucwen`)."""
    v = _need(values, ("a1", "a2", "a3", "a4"), "the a1..a4 -> OpenSees BoucWen mapping")
    k = float(values.get("k", 0.0))
    if not (v["a1"] > 0 and v["a4"] > 0 and k >= 0):
        raise ConfigurationError(
            f"the mapping needs a1 > 0, a4 > 0 and k >= 0, got a1={v['a1']!r}, a4={v['a4']!r}, k={k!r}"
        )
    ko = v["a1"] + k
    scale = v["a1"] ** (v["a4"] - 1.0)
    return {
        "alpha": k / ko,
        "ko": ko,
        "n": v["a4"],
        "gamma": v["a3"] * scale,
        "beta": v["a2"] * scale,
        "Ao": 1.0,
        "deltaA": 0.0,
        "deltaNu": 0.0,
        "deltaEta": 0.0,
    }


def degradation_to_opensees(a: np.ndarray | list[float]) -> dict[str, float]:
    """Ding et al. (2021)'s degradation law ``[beta, gamma, n, dA, dnu, deta]`` -> OpenSees ``BoucWen``
    (``alpha = 0``, ``ko = Ao = 1``)."""
    b, g, n, da, dn, de = (float(x) for x in a)
    return {
        "alpha": 0.0,
        "ko": 1.0,
        "n": n,
        "gamma": g,
        "beta": b,
        "Ao": 1.0,
        "deltaA": da,
        "deltaNu": dn,
        "deltaEta": de,
    }


def opensees_args(law: str, values: Mapping[str, float]) -> tuple[str, list[float]]:
    """The OpenSees material type and its ``uniaxialMaterial`` arguments after the tag, for a law of
    :mod:`.laws` with OpenSees names: ``"boucwen_opensees"`` -> ``BoucWen``, ``"bwbn"`` -> ``BWBN``."""
    from .laws import law_spec

    spec = law_spec(law)
    if not spec.opensees_named:
        raise ConfigurationError(f"law {law!r} has no OpenSees parameterisation; laws with one: boucwen_opensees, bwbn")
    v = _need(values, spec.names, f"law {law!r}")
    return ("BoucWen" if law == "boucwen_opensees" else "BWBN"), [v[n] for n in spec.names]
