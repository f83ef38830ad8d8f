"""Make this example's data from the raw records of the rotary friction damper (Coble et al. (2022), CC BY-SA 4.0).

Reads the eight gzipped CSV files of ``../shared/data/hysteresis/friction_damper_arts`` (or ``--raw DIR``),
keeps time, imposed displacement and friction force, low-pass filters and decimates them from 1024 Hz to
128 Hz (``scipy.signal.decimate``, an order-30 FIR filter run forwards and backwards, so no phase shift; the
sinusoidal tests are 0.5-2 Hz and the earthquake profile's content lies below 10 Hz) and writes one CSV per
test with units in the header: ``time [s], displacement [in], force [kip]``. Run from anywhere:

    python examples/friction_damper/prepare_data.py [--raw DIR]
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import numpy as np
from scipy.signal import decimate

HERE = Path(__file__).resolve().parent
RAW = HERE.parents[1].parent / "shared" / "data" / "hysteresis" / "friction_damper_arts"
FACTOR = 8  # 1024 Hz -> 128 Hz

#: example file stem -> raw file name (band tension, frequency, amplitude in the raw name)
TESTS = {
    "sine_0.5Hz_30lb_1in": "characterization_datasets__0.5Hz30lbtension1amplitude.csv.gz",
    "sine_1Hz_0lb_1in": "characterization_datasets__1Hz0lbtension1amplitude.csv.gz",
    "sine_1Hz_30lb_0.5in": "characterization_datasets__1Hz30lbtension0.5amplitude.csv.gz",
    "sine_1Hz_30lb_1.5in": "characterization_datasets__1Hz30lbtension1.5amplitude.csv.gz",
    "sine_1Hz_30lb_1in": "characterization_datasets__1Hz30lbtension1amplitude.csv.gz",
    "sine_1Hz_36lb_1in": "characterization_datasets__1Hz36lbtension1amplitude.csv.gz",
    "sine_2Hz_30lb_0.5in": "characterization_datasets__2Hz30lbtension0.5amplitude.csv.gz",
    "earthquake_KocaeliDBE": "earthquake_profiles__KocaeliDBE.csv.gz",
}


def read_raw(path: Path) -> dict[str, np.ndarray]:
    """The raw columns time_s, displacement_in, friction_force_kip (the others are not used)."""
    with gzip.open(path, "rt") as f:
        header = f.readline().strip().split(",")
        data = np.loadtxt(f, delimiter=",")
    cols = {h: data[:, i] for i, h in enumerate(header)}
    return {k: cols[k] for k in ("time_s", "displacement_in", "friction_force_kip")}


def decimated(raw: dict[str, np.ndarray], factor: int = FACTOR) -> np.ndarray:
    """``(m, 3)`` rows of time, displacement, force at ``1/factor`` of the raw rate, anti-aliased."""
    t = raw["time_s"][::factor]
    u = decimate(raw["displacement_in"], factor, ftype="fir", zero_phase=True)
    f = decimate(raw["friction_force_kip"], factor, ftype="fir", zero_phase=True)
    m = min(t.size, u.size, f.size)
    return np.column_stack([t[:m], u[:m], f[:m]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raw", type=Path, default=RAW, help="folder of the raw .csv.gz files")
    args = ap.parse_args()
    out = HERE / "data"
    out.mkdir(exist_ok=True)
    for stem, name in TESTS.items():
        rows = decimated(read_raw(args.raw / name))
        np.savetxt(
            out / f"{stem}.csv",
            rows,
            delimiter=",",
            fmt=("%.6f", "%.6f", "%.6f"),
            header="time [s],displacement [in],force [kip]",
            comments="",
        )
        print(f"{stem}: {rows.shape[0]} rows")


if __name__ == "__main__":
    main()
