"""A stand-in for a 3DEC run of the dry-joint masonry arch of Kibriya et al. (2023) (section 2), for the external-model
example. It reads a parameter file, computes a force-displacement curve with a closed-form "arch-like"
law and writes it as CSV, as a discrete-element run would through its own scripting.

Usage: python arch_sim.py PARAMETER_FILE RESULT_CSV

The parameter file holds ``name = value`` lines (``#`` starts a comment): the contact normal stiffness
``kn`` and shear stiffness ``ks`` [Pa/m], the friction angle ``phi`` [deg] and the final vertical
displacement of the loading plate ``w_max`` [mm]. The law (not mechanics, only a curve of the right shape):

    K0 = 0.5 * kn / 1e9                      initial stiffness [kN/mm]: the contact normal stiffness
    Fp = 2.4 * tan(phi)                      peak force [kN]: friction caps the load
    wc = 1.2 * sqrt(ks / 1e9)                softening length [mm]: shear stiffness delays the hinge
    F(w) = Fp * tanh(K0 w / Fp) / (1 + (w / wc)^2)

Exit status 2 with a message on stderr for unusable input, as a solver would refuse a model.
"""

from __future__ import annotations

import math
import sys

N_STEPS = 81


def read_parameters(path: str) -> dict[str, float]:
    values = {}
    with open(path) as fh:
        for n, line in enumerate(fh, start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            key, sep, value = line.partition("=")
            if not sep:
                raise ValueError(f"{path}:{n}: expected 'name = value', got {line!r}")
            values[key.strip()] = float(value)
    return values


def force(w: float, kn: float, ks: float, phi: float) -> float:
    k0 = 0.5 * kn / 1e9
    fp = 2.4 * math.tan(math.radians(phi))
    wc = 1.2 * math.sqrt(ks / 1e9)
    return fp * math.tanh(k0 * w / fp) / (1.0 + (w / wc) ** 2)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: arch_sim.py PARAMETER_FILE RESULT_CSV", file=sys.stderr)
        return 2
    try:
        p = read_parameters(argv[1])
        kn, ks, phi, w_max = p["kn"], p["ks"], p["phi"], p["w_max"]
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: cannot read the parameters: {exc!r}", file=sys.stderr)
        return 2
    if not (kn > 0 and ks > 0 and 0 < phi < 90 and w_max > 0):
        print(f"error: non-physical input kn={kn}, ks={ks}, phi={phi}, w_max={w_max}", file=sys.stderr)
        return 2
    print(f"arch: kn={kn:g} Pa/m, ks={ks:g} Pa/m, phi={phi:g} deg, {N_STEPS} load steps to {w_max:g} mm")
    with open(argv[2], "w") as out:
        out.write("step,displacement [mm],force [kN]\n")
        for i in range(N_STEPS):
            w = w_max * i / (N_STEPS - 1)
            out.write(f"{i},{w!r},{force(w, kn, ks, phi)!r}\n")
    print("arch: done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
