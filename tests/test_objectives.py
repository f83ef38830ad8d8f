"""Objectives against hand-computed values."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from mechcalib import (
    F1,
    F2,
    L2,
    ConfigurationError,
    Curve,
    DataError,
    Experiment,
    OverlapRSS,
    make_objective,
)
from mechcalib.objectives import (
    Objective,
    ObjectiveRegistry,
    overlap_bounds,
    overlap_rss,
    progress_rss,
    sum_abs,
    sum_squares,
)


def test_overlap_bounds_eqs_16_17():
    assert overlap_bounds(np.array([0.0, 12.0]), np.array([0.5, 10.0])) == (0.5, 10.0)


def test_overlap_rss_by_hand():
    # overlap [0.5, 2]; 4 points 0.5, 1, 1.5, 2; exp = x, sim = 1 -> diffs -0.5, 0, 0.5, 1
    f = overlap_rss([0, 1, 2], [0, 1, 2], [0.5, 1.5, 2.5], [1, 1, 1], n_points=4)
    assert f == pytest.approx(math.sqrt(1.5))


def test_overlap_rss_decreasing_abscissa_is_monotonic_too():
    f = overlap_rss([2, 1, 0], [2, 1, 0], [0.5, 1.5, 2.5], [1, 1, 1], n_points=4)
    assert f == pytest.approx(math.sqrt(1.5))


def test_overlap_rss_default_200_points_and_sum_over_curves_eq20():
    e = Experiment({"ver": Curve([0, 12], [0, 12]), "hor": Curve([0, 1], [0, 2])})
    s = {"ver": Curve([0, 12], [1, 13]), "hor": Curve([0, 1], [0, 2])}
    # ver: constant difference 1 at 200 points -> sqrt(200); hor: 0
    assert OverlapRSS()(s, e) == pytest.approx(math.sqrt(200))
    assert OverlapRSS(weights={"ver": 0.5})(s, e) == pytest.approx(0.5 * math.sqrt(200))
    assert OverlapRSS().breakdown(s, e) == pytest.approx({"ver": math.sqrt(200), "hor": 0.0})


def test_non_monotonic_abscissa_pairs_by_progress():
    exp = Curve([0, 1, 0], [0, 2, 0], t=[0, 1, 2])
    sim = Curve([0, 2, 0], [0, 1, 0], t=[0, 1, 2])
    # t = 0, 1, 2: dy = 0, 1, 0; dx = 0, -1, 0; s = ptp(F_exp)/ptp(w_exp) = 2 -> sqrt(1 + 4)
    assert progress_rss(exp, sim, n_points=3) == pytest.approx(math.sqrt(5))
    e = Experiment({"hor": exp})
    assert OverlapRSS(n_points=3)({"hor": sim}, e) == pytest.approx(math.sqrt(5))
    with pytest.raises(DataError, match="not monotonic"):
        OverlapRSS(n_points=3, pairing="abscissa")({"hor": sim}, e)


def test_progress_pairing_without_t_uses_load_steps():
    exp = Curve([0, 1, 0], [0, 2, 0])
    sim = Curve([0, 1, 0], [0, 2, 0])
    assert progress_rss(exp, sim) == 0.0
    with pytest.raises(DataError, match="on both curves or on neither"):
        progress_rss(Curve([0, 1], [0, 1], t=[0, 1]), sim)


def test_no_overlap_is_an_error():
    with pytest.raises(DataError, match="do not overlap"):
        overlap_rss([0, 1], [0, 1], [2, 3], [0, 1])


def test_f1_f2_l2_by_hand():
    assert sum_squares([1, 2, 3], [1, 1, 1]) == 5.0
    assert sum_abs([1, 2, 3], [1, 1, 1]) == 3.0
    with pytest.raises(DataError, match="same shape"):
        sum_squares([1, 2], [1, 2, 3])
    exp = Experiment({"a": Curve([0.5, 1.5], [5, 16])})
    sim = {"a": Curve([0, 1, 2], [0, 10, 20])}  # at 0.5, 1.5: 5, 15
    assert F1()(sim, exp) == pytest.approx(1.0)
    assert F2()(sim, exp) == pytest.approx(1.0)
    assert L2()(sim, exp) == pytest.approx(1.0)
    sim_same_grid = {"a": Curve([0.5, 1.5], [7, 13])}
    assert F1()(sim_same_grid, exp) == pytest.approx(4 + 9)
    assert F2()(sim_same_grid, exp) == pytest.approx(2 + 3)


def test_pointwise_objectives_refuse_extrapolation():
    exp = Experiment({"a": Curve([0, 3], [0, 3])})
    with pytest.raises(DataError, match="simulate the whole measured range"):
        F1()({"a": Curve([0, 2], [0, 2])}, exp)


def test_channel_weights_and_missing_channels():
    exp = Experiment({"a": Curve([0, 1], [0, 0]), "b": Curve([0, 1], [0, 0])})
    sim = {"a": Curve([0, 1], [1, 1]), "b": Curve([0, 1], [2, 2])}
    assert F1(weights={"a": 2.0, "b": 0.5})(sim, exp) == pytest.approx(2 * 2 + 0.5 * 8)
    assert F1(channels=("a",))(sim, exp) == pytest.approx(2)
    with pytest.raises(DataError, match="no channel 'b'"):
        F1()({"a": sim["a"]}, exp)
    with pytest.raises(ConfigurationError, match="weight for 'a'"):
        F1(weights={"a": -1.0})


def test_registry():
    assert isinstance(make_objective("overlap_rss", n_points=50), OverlapRSS)
    with pytest.raises(ConfigurationError, match="valid names"):
        make_objective("rmse")


def test_registry_resolves_objective_two_lazily():
    # A fresh interpreter: listing and checking names must not import the smoother; looking it up does.
    code = (
        "import sys, mechcalib as mc\n"
        "names = sorted(mc.OBJECTIVES)\n"
        "assert 'smoothed_overlap_rss' in names and 'smoothed_overlap_rss' in mc.OBJECTIVES, names\n"
        "assert len(mc.OBJECTIVES) == 5, len(mc.OBJECTIVES)\n"
        "assert 'mechcalib.objectives.smoothing' not in sys.modules\n"
        "cls = mc.OBJECTIVES['smoothed_overlap_rss']\n"
        "from mechcalib.objectives.smoothing import SmoothedOverlapRSS\n"
        "assert cls is SmoothedOverlapRSS\n"
        "assert isinstance(mc.make_objective('smoothed_overlap_rss', smooth_steps=5), SmoothedOverlapRSS)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)


def test_registry_reads_and_writes_like_a_mapping():
    reg = ObjectiveRegistry("objective", base=Objective, entries={"f1": F1, "l2": "mechcalib.objectives:L2"})
    assert list(reg) == ["f1", "l2"] and len(reg) == 2 and "l2" in reg and "x" not in reg
    assert reg["l2"] is L2 and list(reg) == ["f1", "l2"] and len(reg) == 2  # resolving does not duplicate
    reg["f2"] = F2
    del reg["f1"]
    assert sorted(reg) == ["f2", "l2"]
    with pytest.raises(KeyError):
        reg["f1"]
    with pytest.raises(KeyError):
        del reg["f1"]
    with pytest.raises(ConfigurationError, match="must be a subclass of"):
        reg["curve"] = Curve
