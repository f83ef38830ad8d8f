"""Imposed-displacement tests of the hysteretic laws (models/hysteresis/protocol.py): every law against its own
force-driven form (the SDOF integrator) and against OpenSees where OpenSees has it (Steel01, BoucWen, BWBN),
the Bouc-Wen parameterisations (a round trip and an equal response), the energy per cycle against closed
forms, the recovery of known parameters from a synthetic lab record with 2 % noise, and bad inputs."""

from __future__ import annotations

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.core.problem import Problem, experiment_from_model
from mechcalib.errors import ConfigurationError, DataError
from mechcalib.models import get_model
from mechcalib.models.hysteresis.conventions import (
    boucwen_to_opensees,
    degradation_to_opensees,
    opensees_args,
    opensees_to_boucwen,
)
from mechcalib.models.hysteresis.laws import LAWS, hysteresis_loop
from mechcalib.models.hysteresis.protocol import DisplacementProtocol, cycle_ends, cyclic_protocol
from mechcalib.models.hysteresis.sdof import HystereticSDOF
from mechcalib.objectives.curves import L2
from mechcalib.optimizers import make_optimizer

BW_OS = {"alpha": 0.1, "ko": 2.0, "n": 2.0, "gamma": 0.5, "beta": 1.0, "Ao": 1.0}
BW_OS_DEG = {**BW_OS, "deltaA": 0.05, "deltaNu": 0.02, "deltaEta": 0.03}
BWBN_OS = {**BW_OS, "q": 0.1, "zetas": 0.5, "p": 1.0, "Shi": 0.2, "deltaShi": 0.01, "lambda": 0.5}


def rel_max(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / np.sqrt(np.mean(b**2)))


def opensees_stress(material: str, args: list[float], u: np.ndarray, refine: int = 1) -> np.ndarray:
    """OpenSees' material stress along ``u`` (``testUniaxialMaterial``/``setStrain``), each segment split
    into ``refine`` strain steps (OpenSees integrates BoucWen/BWBN by one backward-Euler step per strain step)."""
    ops = pytest.importorskip("openseespy.opensees")
    ops.wipe()
    ops.uniaxialMaterial(material, 1, *args)
    ops.testUniaxialMaterial(1)
    fine = np.interp(np.arange((u.size - 1) * refine + 1) / refine, np.arange(u.size), u)
    out = np.empty(fine.size)
    for i, x in enumerate(fine):
        ops.setStrain(float(x))
        out[i] = ops.getStress()
    ops.wipe()
    return out[::refine]


# -- against the force-driven form ------------------------------------------------------------------------------
@pytest.mark.parametrize("law", sorted(LAWS))
def test_every_law_imposed_equals_its_force_driven_sdof(law):
    """Impose the SDOF's own displacement on the law: the force is the SDOF's restoring force."""
    sdof = HystereticSDOF(law, substeps=4)
    amp = {"pinching": 20.0, "bilinear_equal": 3.0}.get(law, 5.0)
    res = sdof.integrate(sdof.full_vector()[None], {"amplitude": amp, "t_end": 12.0, "fs": 200.0})
    u, r = res["u"][0], res["r"][0]
    proto = DisplacementProtocol(law, substeps=8)
    theta = np.array([[sdof.full_vector()[i] for i in range(len(sdof.law.paper))]])
    F, ok = proto.forces(theta, u)
    assert ok[0]
    assert rel_max(F[0], r) < 2e-3, law  # the path is linear between the 5 ms samples


# -- against OpenSees -------------------------------------------------------------------------------------------
U_OS = 1.6 * np.linspace(0.0, 1.0, 1201) * np.sin(2 * np.pi * 3 * np.linspace(0.0, 1.0, 1201))


def test_bilinear_kinematic_equals_steel01():
    a = [1.0, 0.5, 1.0]  # k1 = 2 a1 + a2 = 2.5, k2 = 0.5, first yield at F0 k1 / (k1 - k2)
    r, _ = hysteresis_loop("bilinear_kinematic", a, U_OS, substeps=1)
    k1, k2 = 2 * a[0] + a[1], a[1]
    ref = opensees_stress("Steel01", [a[2] * k1 / (k1 - k2), k1, k2 / k1], U_OS)
    assert rel_max(r, ref) < 1e-12


@pytest.mark.parametrize(
    ("law", "values"), [("boucwen_opensees", BW_OS_DEG), ("bwbn", BWBN_OS)], ids=["BoucWen", "BWBN"]
)
def test_opensees_named_laws_equal_opensees(law, values):
    spec = LAWS[law]
    full = {n: values.get(n, 0.0) for n in spec.names}
    r, _ = hysteresis_loop(law, [full[n] for n in spec.names], U_OS, substeps=20)
    material, args = opensees_args(law, full)
    coarse = rel_max(r, opensees_stress(material, [*args, 1e-12, 50], U_OS, refine=1))
    fine = rel_max(r, opensees_stress(material, [*args, 1e-12, 50], U_OS, refine=20))
    assert fine < 1e-3 and fine < coarse / 5  # the difference is OpenSees' first-order step, and shrinks with it


# -- the parameterisations --------------------------------------------------------------------------------------
def test_opensees_parameterisation_round_trip_and_equal_response():
    a = opensees_to_boucwen(BW_OS)
    back = boucwen_to_opensees(a)
    for n, v in BW_OS.items():
        assert back[n] == pytest.approx(v, rel=1e-12), n
    # the same law: Ding et al.'s a1..a4 plus the parallel spring k u
    r_os, _ = hysteresis_loop("boucwen_opensees", [*BW_OS.values(), 0.0, 0.0, 0.0], U_OS, substeps=20)
    r_bw, _ = hysteresis_loop("boucwen", [a["a1"], a["a2"], a["a3"], a["a4"]], U_OS, substeps=20)
    assert rel_max(r_bw + a["k"] * U_OS, r_os) < 1e-12
    # the existing SDOF mapping (opensees.boucwen_material) is the same map with alpha = 0
    assert boucwen_to_opensees({"a1": 2.0, "a2": 1.0, "a3": 0.5, "a4": 2.0})["beta"] == pytest.approx(2.0)


def test_degradation_law_is_opensees_boucwen_with_unit_stiffness():
    a = [2.0, 1.0, 2.0, 0.02, 0.03, 0.04]
    os_vals = degradation_to_opensees(a)
    r_d, e_d = hysteresis_loop("degradation", a, U_OS, substeps=20)
    r_os, _ = hysteresis_loop("boucwen_opensees", [os_vals[n] for n in LAWS["boucwen_opensees"].names], U_OS, 20)
    assert rel_max(r_os, r_d) < 1e-12


def test_mapping_refuses_what_it_cannot_map():
    with pytest.raises(ConfigurationError, match="has no degradation"):
        opensees_to_boucwen(BW_OS_DEG)
    with pytest.raises(ConfigurationError, match=r"missing \['beta'\]"):
        opensees_to_boucwen({k: v for k, v in BW_OS.items() if k != "beta"})
    with pytest.raises(ConfigurationError, match="a1 > 0"):
        boucwen_to_opensees({"a1": -1.0, "a2": 1.0, "a3": 0.5, "a4": 2.0})


# -- channels ---------------------------------------------------------------------------------------------------
def test_energy_per_cycle_matches_closed_forms():
    cond = {"protocol": {"amplitudes": [2.0], "cycles": 3, "points_per_cycle": 4000}}
    epp = DisplacementProtocol("bilinear_equal")  # k1 = a1 + a2 = 2, k2 = a1 - a2 = 0: elastic-perfectly plastic
    (resp,) = epp.simulate(np.array([[1.0, 1.0, 0.5]]), cond)
    e = resp["energy_per_cycle"].y
    assert e.size == 3 and e[1] == pytest.approx(4 * 0.5 * (2.0 - 0.5 / 2.0), rel=1e-6)  # 4 Fy (A - Fy / k1)
    (c,) = DisplacementProtocol("coulomb").simulate(np.array([[0.7]]), cond)
    assert c["energy_per_cycle"].y[1] == pytest.approx(4 * 0.7 * 2.0, rel=2e-3)  # 4 Fc A
    assert np.array_equal(c["loop"].x, cyclic_protocol([2.0], 3, 4000))


def test_cycle_ends_ignore_noise_at_a_crossing():
    t = np.linspace(0, 3, 3001)
    u = np.sin(2 * np.pi * t) + 1e-3 * np.random.default_rng(0).standard_normal(t.size)
    assert cycle_ends(u).size == 3 - 1 or cycle_ends(u).size == 3  # one end per period, none from the noise
    assert np.all(np.diff(cycle_ends(u)) > 900)


# -- recovery ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("law", ["boucwen", pytest.param("bilinear_kinematic", marks=pytest.mark.slow)])
def test_recovers_known_parameters_from_a_noisy_lab_record(law):
    """A synthetic quasi-static test (the standard protocol imposed, the force with 2 % noise, Ding et al.
    (2021) eq. 36): least squares through mechcalib.calibrate recovers every parameter within 2 %."""
    model = get_model("hysteresis_protocol", law=law)
    cond = {"protocol": {"amplitudes": [0.5, 1.0, 1.5, 2.0], "cycles": 2, "points_per_cycle": 80}}
    truth = model.full_vector()
    exp = experiment_from_model(model, conditions=cond, noise=0.02, seed=3, name="lab")
    exp = mc.Experiment({"force": exp["force"]}, conditions=cond, name="lab")
    prob = Problem(model, [exp], L2())
    res = mc.calibrate(prob, make_optimizer("lsq", seed=1), max_evals=300)
    err = np.abs(res.best_x / truth - 1.0)
    assert np.all(err < 0.02), dict(zip(model.space.names, err, strict=True))


# -- bad input --------------------------------------------------------------------------------------------------
CSV = "time [s],displacement [m]\n0,0\n0.1,0.5\n0.2,1.0\n"


@pytest.mark.parametrize(
    ("cond", "text"),
    [
        ({"displacement": [0.0, np.nan, 1.0]}, "must be finite, got nan at sample 1"),
        ({"displacement": {"t": [0.0, 0.2, 0.1], "u": [0.0, 1.0, 0.0]}}, "time must increase strictly"),
        ({"displacement": {"t": [0.0, 0.1], "u": [0.0, 1.0, 0.0]}}, "same length, got 2 and 3"),
        ({"displacement": {"x": [0.0, 1.0]}}, "needs the key 'u'"),
        ({"displacement": [1.0]}, "at least 2 samples"),
        (
            {"displacement": "CSV", "column": "disp"},
            "column 'disp' does not exist; the columns are ['time', 'displacement']",
        ),
        ({"displacement": "missing.csv"}, "does not exist"),
        ({"protocol": {"amplitudes": [1.0, -1.0]}}, "positive numbers"),
        ({"protocol": {"amplitudes": [1.0], "points_per_cycle": 10}}, "multiple of 4"),
        ({"protocol": {"amplitude": [1.0]}}, "unknown key(s) ['amplitude']"),
        ({"cycle_band": 1.5}, "'cycle_band'"),
        ({"protocol": {"period": -1.0}}, "period must be a positive number"),
        ({"nope": 1}, "has no condition 'nope'"),
    ],
)
def test_bad_inputs_are_named(tmp_path, cond, text):
    if cond.get("displacement") == "CSV":
        (tmp_path / "d.csv").write_text(CSV)
        cond = {**cond, "displacement": str(tmp_path / "d.csv")}
    model = DisplacementProtocol("boucwen")
    with pytest.raises((ConfigurationError, DataError)) as ei:
        model.simulate(model.full_vector()[None], cond)
    assert text in str(ei.value)
    if "column" in cond:
        assert "d.csv" in str(ei.value)  # the file is named


def test_csv_record_and_unknown_law(tmp_path):
    (tmp_path / "d.csv").write_text(CSV)
    model = DisplacementProtocol("coulomb", offset=True)
    (resp,) = model.simulate(np.array([[1.0, 0.25]]), {"displacement": str(tmp_path / "d.csv")})
    assert resp["force"].x_name == "time" and np.allclose(resp["force"].y, 1.25)
    with pytest.raises(ConfigurationError, match="valid laws are"):
        DisplacementProtocol("bouc")
    (bad,) = model.simulate(np.array([[np.nan, 0.0]]), {"displacement": str(tmp_path / "d.csv")})
    assert not bad and "finite" in bad.message


def test_example_data_are_the_decimated_raw_records():
    """examples/friction_damper/data is prepare_data.py applied to the raw records (needs ../shared)."""
    import importlib.util
    from pathlib import Path

    from conftest import shared_path

    raw = shared_path("data", "hysteresis", "friction_damper_arts")
    here = Path(__file__).resolve().parents[1] / "examples" / "friction_damper"
    spec = importlib.util.spec_from_file_location("prepare_data", here / "prepare_data.py")
    prep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(prep)
    for stem in ("sine_2Hz_30lb_0.5in", "earthquake_KocaeliDBE"):
        rows = prep.decimated(prep.read_raw(raw / prep.TESTS[stem]))
        shipped = np.loadtxt(here / "data" / f"{stem}.csv", delimiter=",", skiprows=1)
        assert np.allclose(rows, shipped, atol=1e-6, rtol=0), stem
