"""Ding et al.'s (2021) SDOF and MDOF hysteretic systems: setup, accuracy of the integration, linear limits,
batching, failures and parameter recovery."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares

import mechcalib as mc
from mechcalib.core.problem import experiment_from_model
from mechcalib.errors import ConfigurationError
from mechcalib.models import SimulationFailure, get_model
from mechcalib.models.hysteresis import FrameMDOF, HystereticSDOF, build_frame
from mechcalib.models.hysteresis.laws import LAWS
from mechcalib.models.hysteresis.opensees import boucwen_material, build_sdof

SDOF_NAMES = {
    "sdof_bilinear_kinematic": "bilinear_kinematic",
    "sdof_bilinear_equal": "bilinear_equal",
    "sdof_boucwen": "boucwen",
    "sdof_degradation": "degradation",
    "sdof_pinching": "pinching",
}
ACC = ["acceleration_node5", "acceleration_node7", "acceleration_node13", "acceleration_node19"]


def rel_err(x: np.ndarray, ref: np.ndarray) -> float:
    """Largest absolute error over the reference's RMS."""
    return float(np.max(np.abs(x - ref)) / np.sqrt(np.mean(ref**2)))


@pytest.fixture(scope="module")
def models():
    return {name: get_model(name) for name in (*SDOF_NAMES, "mdof_frame")}


# --------------------------------------------------------------------------------------------
# Setup: the paper's test cases
# --------------------------------------------------------------------------------------------
def test_registry_presets_and_bounds(models):
    for name, key in SDOF_NAMES.items():
        m = models[name]
        spec = LAWS[key]
        assert isinstance(m, HystereticSDOF) and m.name == name
        assert m.space.free_names == spec.names
        assert m.preset() == {**dict(zip(spec.names, spec.paper, strict=True)), "m": 1.0, "c": 0.2, "k": 1.0}
        for p, v in zip(m.space.free, spec.paper, strict=True):
            assert (p.lower, p.upper) == (0.5 * v, 2.0 * v)
        assert {"displacement", "velocity", "acceleration", "restoring_force"} <= set(m.channel_names)
    f = models["mdof_frame"]
    assert f.preset() == {"a11": 0.75, "a12": 0.5, "a13": 0.2, "a21": 0.75, "a22": 0.5, "a23": 0.4}
    assert set(ACC) <= set(f.channel_names)
    assert {"restoring_force_1", "restoring_force_2", "hysteretic_displacement_1", "hysteretic_displacement_2"} <= set(
        f.channel_names
    )


def test_sdof_paper_case(models):
    m = models["sdof_boucwen"]
    (resp,) = m.simulate(m.full_vector()[None])
    acc = resp["acceleration"]
    assert len(acc) == 20001 and acc.x[-1] == pytest.approx(20.0) and acc.x[1] == pytest.approx(1e-3)
    loop = resp["restoring_force"]
    assert np.array_equal(loop.x, resp["displacement"].y) and np.array_equal(loop.t, acc.x)
    # equation of motion at the samples: m a + c v + k u + r = 5 sin t
    u, v, r = resp["displacement"].y, resp["velocity"].y, loop.y
    assert np.max(np.abs(acc.y + 0.2 * v + u + r - 5 * np.sin(acc.x))) < 1e-12


def test_mdof_paper_case(models):
    f = models["mdof_frame"]
    (resp,) = f.simulate(f.full_vector()[None])
    a5 = resp["acceleration_node5"]
    assert len(a5) == 1001 and a5.x[1] == pytest.approx(1 / 200)
    y1 = resp["hysteretic_displacement_1"].y
    r1 = resp["restoring_force_1"].y
    k1, k2, f0 = 2.0e6, 0.5e6, 200.0  # a1 = [0.75, 0.5, 0.2] in kN/mm, kN
    assert np.max(np.abs(y1)) > 3 * f0 / (k1 - k2)  # both components yield well beyond the elastic range
    assert np.max(np.abs(resp["hysteretic_displacement_2"].y)) > 3 * 400.0 / (k1 - k2)
    # bilinear kinematic bounds: |r - k2 y| <= F0
    assert np.max(np.abs(r1 - k2 * y1)) <= f0 * (1 + 1e-9)
    assert np.max(np.abs(r1 - k2 * y1)) == pytest.approx(f0, rel=1e-9)


def test_frame_assembly_hand_checks():
    # one-bay, one-storey portal (h = L = 1 m, fixed bases, axially rigid members): slope-deflection gives
    # k = 24 EI/h^3 - 72 (EI/h^2)^2 / (4 EI/h + 6 EI/L) = 618240 N/m for EI = 6.9e10 * 0.1 * 0.04^3 / 12;
    # the columns' axial shortening under the overturning moment softens it by 0.08 %
    portal = build_frame(n_spans=1, n_storeys=1)
    assert portal.K[0, 0] == pytest.approx(618240.0, rel=1e-3)
    assert portal.K[0, 0] < 618240.0
    fr = build_frame()
    assert np.allclose(fr.K, fr.K.T) and np.all(np.linalg.eigvalsh(fr.K) > 0)
    # level masses: 10.8 kg/m of aluminium; 3 m of beams + 4 m of columns per level, 2 m of columns at the top
    assert np.allclose(fr.M, [75.6, 75.6, 75.6, 54.0])
    # node numbering: column by column from the ground, 5 levels per column
    assert tuple(fr.coords[5 - 1]) == (0.0, 4.0) and tuple(fr.coords[7 - 1]) == (1.0, 1.0)
    assert tuple(fr.coords[13 - 1]) == (2.0, 2.0) and tuple(fr.coords[19 - 1]) == (3.0, 3.0)
    f = FrameMDOF()
    w = f.omegas[:2]
    assert np.allclose(f.alpha / (2 * w) + f.beta * w / 2, 0.02)  # Rayleigh: 2 % in modes 1 and 2
    assert np.allclose(f.T, [[1, 0, 0, 0], [-1, 1, 0, 0]])


# --------------------------------------------------------------------------------------------
# Accuracy of the integration
# --------------------------------------------------------------------------------------------
def _within_bounds(m, n: int, seed: int) -> np.ndarray:
    """The paper's set and ``n - 1`` random sets inside the law's bounds (full vectors)."""
    theta = np.tile(m.full_vector(), (n, 1))
    na = len(m.law.paper)
    lo, hi = np.asarray(m.space.lower)[:na], np.asarray(m.space.upper)[:na]
    theta[1:, :na] = lo + np.random.default_rng(seed).random((n - 1, na)) * (hi - lo)
    return theta


@pytest.mark.parametrize("name", sorted(SDOF_NAMES))
def test_sdof_default_step_converged(name, models):
    m = models[name]
    assert m.samples_per_step == (2 if name == "sdof_pinching" else 4)
    theta = _within_bounds(m, 4, seed=7)
    ref = type(m)(substeps=16).integrate(theta)
    res = m.integrate(theta)
    assert np.all(res["status"] == 0)
    for key in ("a", "u", "v", "r"):
        for i in range(len(theta)):
            assert rel_err(res[key][i], ref[key][i]) < 1e-4  # requirement: 1e-3 of the RMS


@pytest.mark.parametrize("name", sorted(SDOF_NAMES))
def test_scalar_kernel_is_the_general_scheme(name, models, monkeypatch):
    # the scalar SDOF kernel repeats the array kernel's scheme operation for operation: equal bit for bit,
    # located switches included, for both the located and the literal right-hand side
    from mechcalib.models.hysteresis import _common, integrate

    theta = _within_bounds(models[name], 3, seed=3)
    for located in (True, False):
        m = type(models[name])(samples_per_step=1, locate_events=located)
        scalar = m.integrate(theta)
        assert (scalar["events"] > 0).all() == located  # switches were located (reversals happen in every law)
        monkeypatch.setattr(
            _common, "integrate_batch", lambda *a, **k: integrate.integrate_batch(*a, **{**k, "general": True})
        )
        general = m.integrate(theta)
        monkeypatch.undo()
        for key in ("u", "v", "a", "r", "eps", "events"):
            assert np.array_equal(scalar[key], general[key]), key


def test_samples_inside_steps_are_fourth_order():
    # steps of 1, 2 and 4 ms with the samples between interpolated: the error falls about 11x per halving
    # (16x for a smooth fourth-order solution; the located reversals cost a little)
    theta = get_model("sdof_boucwen").full_vector()[None]
    ref = HystereticSDOF("boucwen", substeps=16).integrate(theta)["a"]
    e = [rel_err(HystereticSDOF("boucwen", samples_per_step=k).integrate(theta)["a"], ref) for k in (1, 2, 4)]
    assert e[2] / e[1] > 8 and e[1] / e[0] > 8
    # a located yield or reversal inside a step: the samples after it are read off the later piece
    m = HystereticSDOF("bilinear_kinematic", samples_per_step=5)
    ref = HystereticSDOF("bilinear_kinematic", substeps=16).integrate(m.full_vector()[None])
    res = m.integrate(m.full_vector()[None])
    assert res["events"][0] > 5 and rel_err(res["a"], ref["a"]) < 1e-6


def test_step_settings_are_checked():
    with pytest.raises(ConfigurationError, match="samples_per_step must be a positive integer"):
        HystereticSDOF("boucwen", samples_per_step=0)
    with pytest.raises(ConfigurationError, match="not both"):
        HystereticSDOF("boucwen", substeps=2, samples_per_step=2)
    assert HystereticSDOF("boucwen", substeps=2).samples_per_step == 1
    assert HystereticSDOF("boucwen", locate_events=False).samples_per_step == 1


def test_mdof_default_step_converged_fourth_order(models):
    f = models["mdof_frame"]
    theta = f.full_vector()[None]
    ref = FrameMDOF(substeps=100).integrate(theta)
    res = f.integrate(theta)
    for key in ("a", "r", "y"):
        assert rel_err(res[key], ref[key]) < 1e-3
    e = [rel_err(FrameMDOF(substeps=s).integrate(theta)["a"], ref["a"]) for s in (5, 10)]
    assert e[0] / e[1] > 10  # RK4's order survives the switches (16 for order 4)


def test_located_switches_match_the_literal_law_at_fine_steps():
    # the literal eq. 4 (sign functions evaluated at every stage) converges at first order to the
    # located-switch solution: an independent check of the event logic
    theta = get_model("sdof_bilinear_kinematic").full_vector()[None]
    ref = get_model("sdof_bilinear_kinematic").integrate(theta)
    errs = [
        rel_err(HystereticSDOF("bilinear_kinematic", substeps=s, locate_events=False).integrate(theta)["a"], ref["a"])
        for s in (4, 64)
    ]
    assert errs[1] < 5e-5 and errs[1] < errs[0] / 4


def test_boucwen_against_scipy_dop853(models):
    m = models["sdof_boucwen"]
    res = m.integrate(m.full_vector()[None])

    def rhs(t, x):
        u, v, r = x
        rd = 2.0 * v - (1.0 * r * abs(r) * abs(v) + 0.5 * r * r * v)
        return [v, 5 * np.sin(t) - 0.2 * v - u - r, rd]

    sol = solve_ivp(rhs, (0, 20), [0, 0, 0], method="DOP853", rtol=1e-11, atol=1e-12, t_eval=res["t"])
    u, v, r = sol.y
    assert rel_err(res["u"][0], u) < 1e-6
    assert rel_err(res["r"][0], r) < 1e-5
    assert rel_err(res["a"][0], 5 * np.sin(sol.t) - 0.2 * v - u - r) < 1e-6


# --------------------------------------------------------------------------------------------
# Linear limits against scipy.signal.lsim
# --------------------------------------------------------------------------------------------
LINEAR_CASES = {  # parameters that make the component linear, and its stiffness
    "sdof_boucwen": ([2.0, 0.0, 0.0, 2.0], 2.0),
    "sdof_bilinear_kinematic": ([1.0, 2.0, 1e9], 4.0),  # never yields: k1 = 2 a1 + a2
    "sdof_bilinear_equal": ([3.0, 1.0, 1e9], 4.0),  # k1 = a1 + a2
    "sdof_degradation": ([0.0, 0.0, 2.0, 0.0, 0.0, 0.0], 1.0),  # A0 = 1
    "sdof_pinching": ([10.0, 0.0, 0.0, 2.0, 0.0, 2.0], 10.0),
}


@pytest.mark.parametrize("name", sorted(LINEAR_CASES))
def test_sdof_linear_limit(name, models):
    m = models[name]
    a, kh = LINEAR_CASES[name]
    theta = np.r_[a, 1.0, 0.2, 1.0][None]
    res = m.integrate(theta)
    t = res["t"]
    k = 1.0 + kh
    sys = scipy.signal.StateSpace([[0, 1], [-k, -0.2]], [[0], [1]], [[1, 0], [-k, -0.2]], [[0], [1]])
    _, y, _ = scipy.signal.lsim(sys, 5 * np.sin(t), t)
    assert rel_err(res["u"][0], y[:, 0]) < 1e-5
    assert rel_err(res["a"][0], y[:, 1]) < 1e-5
    assert rel_err(res["r"][0], kh * y[:, 0]) < 1e-5


def test_mdof_linear_limit(models):
    f = models["mdof_frame"]
    theta = np.array([[0.75, 0.5, 1e9, 0.75, 0.5, 1e9]])  # components never yield: k1 = 2 kN/mm
    K = f.frame.K + f.T.T @ np.diag([2e6, 2e6]) @ f.T
    Minv = np.diag(1 / f.frame.M)
    n = len(f.frame.M)
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-Minv @ K, -Minv @ f.C]])
    B = np.r_[np.zeros(n), Minv[:, 3]][:, None]  # node 5 is on level 4
    C = np.block([[np.eye(n), np.zeros((n, n))], [-Minv @ K, -Minv @ f.C]])
    D = np.r_[np.zeros(n), Minv[:, 3]][:, None]
    t = np.arange(0, 4001) / 4000.0  # 0.25 ms grid for lsim's linear-input assumption; compare every 20th
    _, y, _ = scipy.signal.lsim(scipy.signal.StateSpace(A, B, C, D), 1000 * np.sin(2 * np.pi * 4 * t), t)
    sim = f.integrate(theta, {"t_end": 1.0})
    assert rel_err(sim["u"][0], y[::20, :n]) < 2e-5
    assert rel_err(sim["a"][0], y[::20, n:]) < 2e-4
    assert rel_err(sim["r"][0], 2e6 * sim["y"][0]) < 1e-12  # elastic all along


# --------------------------------------------------------------------------------------------
# Loading, failures, problems (batches: test_model_conformance.py)
# --------------------------------------------------------------------------------------------
def test_force_from_file_and_arrays(tmp_path, models):
    m = models["sdof_bilinear_kinematic"]
    theta = m.full_vector()[None]
    sine = m.integrate(theta)
    t = sine["t"]
    csv = tmp_path / "force.csv"
    np.savetxt(csv, np.c_[t, 5 * np.sin(t)], delimiter=",", header="time [s],force [N]", comments="")
    from_file = m.integrate(theta, {"force": str(csv)})
    assert from_file["t"][-1] == pytest.approx(20.0)  # t_end defaults to the table's end
    assert rel_err(from_file["a"], sine["a"]) < 1e-5  # linear interpolation of the sine between 1 ms samples
    pair = m.integrate(theta, {"force": (t, 5 * np.sin(t)), "t_end": 10.0})
    assert np.array_equal(pair["a"][0], from_file["a"][0, :10001])
    mapping = m.integrate(theta, {"force": {"t": t, "force": 5 * np.sin(t)}})
    assert np.array_equal(mapping["a"], from_file["a"])
    with pytest.raises(ConfigurationError, match="increase"):
        m.integrate(theta, {"force": (t[::-1], t)})
    with pytest.raises(ConfigurationError, match="no condition"):
        m.integrate(theta, {"forcing": 1.0})


def test_failures_stay_per_set():
    m = HystereticSDOF("boucwen", free=("k",))
    good = m.full_vector()
    bad = good.copy()
    bad[-1] = -1000.0  # k < 0: exponential growth beyond 1e100
    nan = good.copy()
    nan[0] = np.nan
    out = m.simulate(np.array([bad, good, nan]))
    assert list(m.integrate(np.array([bad, good, nan]))["status"]) == [1, 0, -1]  # also from the parallel kernel
    assert isinstance(out[0], SimulationFailure) and "diverged" in out[0].message
    assert not isinstance(out[1], SimulationFailure)
    assert isinstance(out[2], SimulationFailure)


def test_structural_constants_can_be_free():
    m = HystereticSDOF("boucwen", c=0.3, free=("c", "k"))
    assert m.space.free_names == ("a1", "a2", "a3", "a4", "c", "k")
    assert m.space["m"].fixed == 1.0 and (m.space["c"].lower, m.space["c"].upper) == (0.15, 0.6)
    with pytest.raises(ConfigurationError):
        HystereticSDOF("boucwen", free=("mass",))
    with pytest.raises(ConfigurationError):
        get_model("sdof_boucwen", substeps=0)


def test_problem_with_l2(models):
    m = models["sdof_pinching"]
    exp = experiment_from_model(m)
    exp = mc.Experiment({"acceleration": exp["acceleration"]}, name="acc")
    problem = mc.Problem(m, exp, mc.L2())
    truth = m.space.from_dict({k: v for k, v in m.preset().items() if k in m.space.free_names})
    batch = problem.evaluate(np.array([truth, 1.05 * truth]))
    assert batch.losses[0] == 0.0 and batch.losses[1] > 1.0


# --------------------------------------------------------------------------------------------
# Recovery of the true parameters on noise-free data
# --------------------------------------------------------------------------------------------
def recover(model, channels, start_factor=1.1, conditions=None):
    names = model.space.free_names
    truth = np.array([model.preset()[n] for n in names])

    def sim(x):
        out = model.simulate(model.space.to_full(np.atleast_2d(x)), conditions)
        return np.array([np.concatenate([r[c].y for c in channels]) for r in out])

    data = sim(truth)[0]
    scale = np.sqrt(np.mean(data**2))

    def residual(x):
        return (sim(x)[0] - data) / scale

    def jacobian(x):  # forward differences, evaluated as one batch
        h = 1e-6 * np.abs(x)
        return ((sim(x[None, :] + np.diag(h)) - sim(x)) / scale / h[:, None]).T

    fit = least_squares(
        residual, start_factor * truth, jac=jacobian, x_scale=truth, xtol=1e-10, ftol=1e-12, max_nfev=30
    )
    return fit.x / truth - 1.0


@pytest.mark.parametrize("name", sorted(SDOF_NAMES))
def test_sdof_recovery_from_acceleration(name, models):
    assert np.max(np.abs(recover(models[name], ["acceleration"]))) < 0.01


def test_mdof_recovery_from_accelerations(models):
    assert np.max(np.abs(recover(models["mdof_frame"], ACC))) < 0.01


@pytest.mark.slow
def test_iabc_identifies_boucwen_from_acceleration(models):
    """Ding et al.'s (2021) I-ABC (eq. 29 as printed), 100 of its 500 cycles from a uniform start in the default 0.5x-2x
    bounds, finds the Bouc-Wen parameters of noise-free acceleration data within 1 % (seeds 0-2 measured:
    0.03 / 0.05 / 0.004 % at worst)."""
    from mechcalib.optimizers import IABC

    model = models["sdof_boucwen"]
    data = experiment_from_model(model)
    problem = mc.Problem(model, mc.Experiment({"acceleration": data["acceleration"]}), mc.L2())
    res = mc.calibrate(problem, IABC.ding2021(seed=0), max_evals=5000)
    truth = np.array([model.preset()[n] for n in model.space.free_names])
    assert res.n_evals == 5000 and np.max(np.abs(res.best_x / truth - 1)) < 0.01, res.best_x


# --------------------------------------------------------------------------------------------
# Cross-check against OpenSees (optional extra "opensees")
# --------------------------------------------------------------------------------------------
def opensees_sdof(material: list, t_end: float = 20.0, dt: float = 1e-3, sub: int = 1):
    """The paper's SDOF in OpenSees: a zeroLength element with Elastic(k = 1) || material || Viscous(c = 0.2),
    mass 1, load 5 sin t, Newmark average acceleration with ``sub`` steps per 1 ms sample.
    Returns displacement, acceleration and the hysteretic force ``r`` at the samples."""
    pytest.importorskip(
        "openseespy.opensees",
        reason="openseespy is absent (pip install 'mechcalib[opensees]'; needs libblas3 liblapack3)",
    )
    ops = build_sdof(material)
    n = round(t_end / dt)
    u, a, f = np.zeros(n + 1), np.zeros(n + 1), np.zeros(n + 1)
    for i in range(1, n + 1):
        assert ops.analyze(sub, dt / sub) == 0
        u[i] = ops.nodeDisp(2, 1)
        a[i] = ops.nodeAccel(2, 1)
        f[i] = ops.eleResponse(1, "material", "1", "stress")[0]  # k u + r
    ops.wipe()
    return u, a, f - u


def test_opensees_boucwen_and_degradation(models):
    # BoucWen(alpha=0, ko, n, gamma, beta, Ao, dA, dnu, deta): force = ko z, z' = u' (Ao - |z|^n (gamma + beta
    # sgn(u' z)) nu) / eta. Eq. 11 with r = ko z: ko = a1, Ao = 1, beta = a2 a1^(n-1), gamma = a3 a1^(n-1).
    # Eq. 12 (A0 = 1, eps = int r du = OpenSees' energy): ko = 1, beta = a1, gamma = a2, n = a3, deltas = a4-a6.
    # OpenSees updates z by backward Euler (first order): its error shrinks with its step.
    bw = models["sdof_boucwen"]
    res = bw.integrate(bw.full_vector()[None])
    a1, a2, a3, n = 2.0, 1.0, 0.5, 2.0
    mat = boucwen_material(a1, a2, a3, n)
    errs = []
    for sub in (1, 4):
        u, a, r = opensees_sdof(mat, sub=sub)
        errs.append([rel_err(res["u"][0], u), rel_err(res["a"][0], a), rel_err(res["r"][0], r)])
    errs = np.array(errs)
    assert np.all(errs[0] < [3e-4, 5e-4, 3e-3])
    assert np.all(errs[0] / errs[1] > 3)  # converging to mechcalib's response
    dg = models["sdof_degradation"]
    res = dg.integrate(dg.full_vector()[None])
    u, a, r = opensees_sdof(["BoucWen", 0.0, 1.0, 2.0, 1.0, 2.0, 1.0, 0.02, 0.02, 0.02, 1e-12, 50])
    assert rel_err(res["u"][0], u) < 1e-4 and rel_err(res["a"][0], a) < 2e-4 and rel_err(res["r"][0], r) < 3e-3


def test_opensees_bilinear_kinematic_is_steel01(models):
    # Steel01(Fy, E0, b): k1 = E0 = 2 a1 + a2, b = a2 / k1, Fy = F0 k1 / (k1 - k2) = a3 k1 / (2 a1)
    bk = models["sdof_bilinear_kinematic"]
    res = bk.integrate(bk.full_vector()[None])
    u, a, r = opensees_sdof(["Steel01", 2.0, 4.0, 0.5])
    assert rel_err(res["u"][0], u) < 1e-5
    assert rel_err(res["a"][0], a) < 1e-5
    assert rel_err(res["r"][0], r) < 1e-5
