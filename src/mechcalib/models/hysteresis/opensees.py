"""The paper's SDOF system (Ding et al. (2021)) in OpenSees, for cross-checks and speed comparisons (extra "opensees").

A zeroLength element carries ``Elastic(k = 1) || material || Viscous(c = 0.2)``, mass 1, load ``5 sin t``,
Newmark average acceleration. The parameter mapping of each law is written in docs/hysteresis.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import require


def import_opensees() -> Any:
    """``openseespy.opensees``, or the error of :func:`mechcalib.errors.require` naming the extra (openseespy
    also needs Debian's libblas3 and liblapack3)."""
    return require("openseespy.opensees", "opensees")


def boucwen_material(a1: float, a2: float, a3: float, n: float) -> list:
    """OpenSees ``BoucWen`` arguments for Ding et al. (2021) eq. 11 with ``r = ko z``: ``ko = a1``, ``Ao = 1``,
    ``beta = a2 a1^(n-1)``, ``gamma = a3 a1^(n-1)``, no degradation."""
    return ["BoucWen", 0.0, a1, n, a3 * a1 ** (n - 1), a2 * a1 ** (n - 1), 1.0, 0.0, 0.0, 0.0, 1e-12, 50]


def build_sdof(material: list) -> Any:
    """Wipe OpenSees and build the paper's SDOF with ``material`` (``[type, *args]``) as the hysteretic part,
    ready for ``analyze``. Returns the ``openseespy.opensees`` module. Node 2 is the mass; element 1's
    material stress is ``k u + r``."""
    ops = import_opensees()
    ops.wipe()
    ops.model("basic", "-ndm", 1, "-ndf", 1)
    ops.node(1, 0.0)
    ops.node(2, 0.0)
    ops.fix(1, 1)
    ops.mass(2, 1.0)
    ops.uniaxialMaterial("Elastic", 1, 1.0)
    ops.uniaxialMaterial("Viscous", 2, 0.2, 1.0)
    ops.uniaxialMaterial(material[0], 3, *material[1:])
    ops.uniaxialMaterial("Parallel", 4, 1, 3)
    ops.element("zeroLength", 1, 1, 2, "-mat", 4, 2, "-dir", 1, 1)
    ops.timeSeries("Trig", 1, 0.0, 1e6, 2 * np.pi, "-factor", 5.0)
    ops.pattern("Plain", 1, 1)
    ops.load(2, 1.0)
    ops.constraints("Plain")
    ops.numberer("Plain")
    ops.system("BandGen")
    ops.test("NormDispIncr", 1e-12, 50)
    ops.algorithm("Newton")
    ops.integrator("Newmark", 0.5, 0.25)
    ops.analysis("Transient")
    return ops
