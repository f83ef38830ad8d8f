"""The shipped synthetic reference of the masonry-arch calibrations (mechcalib/data/arch_reference.csv)."""

from __future__ import annotations

import numpy as np
import pytest

from mechcalib import Problem
from mechcalib.models.masonry import reference_experiment
from mechcalib.models.masonry.arch import PULATSU, MasonryArch
from mechcalib.models.masonry.reference import COLUMNS, REFERENCE, reference_path
from mechcalib.objectives import OverlapRSS


def test_file_is_shipped_and_says_it_is_simulated():
    path = reference_path()
    head = path.read_text().splitlines()[:8]
    assert "SIMULATED, NOT MEASURED" in head[0]
    assert any("0.5 mm/s" in ln for ln in head) and any("kn = 4e+09 Pa/m" in ln for ln in head)
    readme = path.with_name("arch_reference.README.md").read_text()
    assert "Simulated, not measured" in readme and "30.5 deg" in readme
    assert REFERENCE == {"contacts": "pulatsu", "velocity": 0.5, "max_displacement": 12.0, "n_samples": 241,
                         "kn": PULATSU["kn"], "ks": PULATSU["ks"], "phi": PULATSU["phi"]}


def test_loader_returns_the_arch_channels():
    exp = reference_experiment()
    assert exp.channel_names == ("vertical", "horizontal")
    assert exp.conditions == {"velocity": 10.0, "max_displacement": 12.0}  # the fit's model conditions
    v, h = exp["vertical"], exp["horizontal"]
    assert len(v) == len(h) == 241
    assert np.allclose(v.x, np.linspace(0.0, 12.0, 241)) and np.array_equal(v.t, v.x) and np.array_equal(h.t, v.x)
    assert np.array_equal(v.y, h.y)  # one plate force, two displacements
    assert (v.x_unit, v.y_unit, h.x_unit) == ("mm", "kN", "mm")
    assert h.x_name == COLUMNS[1]
    # the documented features: a plateau near 2.94 kN, softening to 1.79 kN, 2.85 mm at the abutment
    assert 2.90 < np.median(v.y[(v.x >= 2.0) & (v.x <= 3.0)]) < 2.96
    assert v.y[-1] == pytest.approx(1.789, abs=0.002)
    assert h.x.max() == pytest.approx(2.854, abs=0.002)
    assert reference_experiment(velocity=0.5).conditions["velocity"] == 0.5


def test_reference_feeds_a_calibration_problem():
    model = MasonryArch(contacts="pulatsu")
    prob = Problem(model, reference_experiment(), OverlapRSS())
    batch = prob.evaluate(np.array([[PULATSU["kn"], PULATSU["ks"], PULATSU["phi"]], [3e9, 3e9, 30.0]]))
    assert batch.status == ["ok", "ok"]
    # the 10 mm/s model does not reproduce its own 0.5 mm/s curve: the rate effect the calibration absorbs
    assert 5.0 < batch.losses[0] < 30.0


def test_reference_reproduces_from_the_model():
    """The file is what the DEM gives at 0.5 mm/s (regenerate with benchmarks/make_arch_reference.py).
    Loose tolerances: a different CPU or numba version may move single stick-slip samples."""
    model = MasonryArch(contacts=REFERENCE["contacts"])
    cond = {k: REFERENCE[k] for k in ("velocity", "max_displacement", "n_samples")}
    (resp,) = model.simulate(np.array([[REFERENCE["kn"], REFERENCE["ks"], REFERENCE["phi"]]]), cond)
    exp = reference_experiment()
    for ch in ("vertical", "horizontal"):
        d = np.abs(resp[ch].y - exp[ch].y)
        assert np.median(d) < 1e-3 and np.max(np.abs(resp[ch].x - exp[ch].x)) < 0.05
    assert OverlapRSS()(resp, exp) < 0.5
