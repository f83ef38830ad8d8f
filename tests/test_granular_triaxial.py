"""The ``eepa_triaxial`` model on the ``tiny`` specimen (a 12 mm cylinder, about 80 clumps) at a modulus
scaled by 0.01: the specimen cache, the displacement programme and sampling, the shape of the load-unload
curve (loading nonlinearity, stiffer unloading), presets and errors (the batch and the model contract:
test_model_conformance.py)."""

from __future__ import annotations

import numpy as np
import pytest

from mechcalib.errors import ConfigurationError
from mechcalib.models import SimulationFailure, get_model
from mechcalib.models.granular import dem, specimen
from mechcalib.models.granular.triaxial import TABLE3, EEPATriaxial, interaction_tables

ES = 0.01  # softened contacts: ten times the time step
COND = {"E_scale": ES}


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return get_model("eepa_triaxial", specimen="tiny", cache_dir=tmp_path_factory.mktemp("granular_cache"))


@pytest.fixture(scope="module")
def base_run(model):
    (r,) = model.run(model.full_vector()[None], COND)
    return r


def test_specimen_is_poured_trimmed_and_cached(model):
    info = model.specimen_info(ES)
    s = model.specimen(ES)
    assert info["n_particles"] == s.n_particles and 40 <= s.n_particles < info["n_inserted"]
    m1, _, _ = dem.clump_mass_properties(1e-3, 0.405e-3, 2000.0)
    assert info["mass_g"] == pytest.approx(s.n_particles * m1 * 1e3)
    assert 10.0 < info["height_mm"] <= 12.0 + 1e-9 and s.top <= 12e-3 + 1e-12  # filled to the height
    assert 0.25 < info["solid_fraction"] < 0.65
    r = np.hypot(*specimen.sphere_positions(s.particles, s.pos, s.quat)[:, :2].T)
    assert np.all(r + 1e-3 <= 6e-3 * 1.01)  # inside the cylinder (small overlaps)
    assert s.path is not None and s.path.exists()
    again = EEPATriaxial(specimen="tiny", cache_dir=s.path.parent).specimen(ES)  # read back, not regenerated
    np.testing.assert_array_equal(again.pos, s.pos)
    assert again.info == s.info


def test_load_unload_programme_and_curve_shape(model, base_run):
    r = base_run
    assert r.status == dem.OK and r.preload_steady
    assert r.preload_force == pytest.approx(1.82, rel=0.05)
    # 2000 Hz over 0.06 s: 121 samples; piston down 50 mm/s to 0.04 s, up 20 mm/s to 0.06 s
    assert r.time.size == 121 and r.time[-1] == pytest.approx(0.06)
    np.testing.assert_allclose(
        r.displacement, np.where(r.time <= 0.04, 50 * r.time, 2.0 - 20 * (r.time - 0.04)), atol=1e-9
    )
    fd = r.response["force_displacement"]
    assert len(fd) == 99 and fd.t[-1] == pytest.approx(0.06) and fd.x.max() == pytest.approx(2.0, abs=0.02)
    f = r.force
    i_peak = int(np.argmax(f))
    assert r.time[i_peak] == pytest.approx(0.04, abs=1e-3)  # peak at the end of loading
    assert f[0] == pytest.approx(1.82, rel=0.5) and f[i_peak] > 10 * f[0]
    # loading nonlinearity: the secant stiffness grows (from the preload, F rises more than twice as much
    # over the first mm as over the first half mm)
    fa, fb = (np.interp(x, r.displacement[:81], f[:81]) for x in (0.5, 1.0))
    assert fb - f[0] > 2.2 * (fa - f[0])
    # stiffer unloading: the force falls faster per mm on the way back than it rose on average
    unload = r.time > 0.04
    k_unload = (f[i_peak] - f[unload][2]) / (r.displacement[i_peak] - r.displacement[unload][2])
    assert k_unload > 2 * f[i_peak] / 2.0
    assert f[-1] < 0.5 * f[i_peak]  # most of the force gone after 0.4 mm of unloading
    # the cylinder carries part of the load through wall friction while loading
    assert 0 < r.wall_force[i_peak] < f[i_peak]


def test_parameters_presets_and_errors(model):
    assert model.space.free_names == ("lambda_p", "f_ss", "f_sa")
    assert model.full_vector()[:3].tolist() == [0.575, 0.520, 0.347]
    assert model.preset("case9")["lambda_p"] == TABLE3[8][0] == 0.680
    assert EEPATriaxial(free=("dgamma", "f0")).space.free_names == ("lambda_p", "f_ss", "f_sa", "dgamma", "f0")
    with pytest.raises(ConfigurationError, match="free may name"):
        EEPATriaxial(free=("E",))
    with pytest.raises(ConfigurationError, match="specimen must be"):
        EEPATriaxial(specimen="huge")
    with pytest.raises(ConfigurationError, match="t_load"):
        model.run(model.full_vector()[None], {"t_load": 0.1, "E_scale": ES})
    bad = model.full_vector({"lambda_p": 1.2})
    out = model.simulate(bad[None], COND)
    assert isinstance(out[0], SimulationFailure) and "lambda_p" in out[0].message
    tab = interaction_tables(model.full_vector()[None])[0]
    assert tab[0, dem.I_MU] == 0.52 and tab[1, dem.I_MU] == 0.347 and tab[2, dem.I_MU] == 0.5
    assert tab[0, dem.I_LAM] == tab[1, dem.I_LAM] == tab[2, dem.I_LAM] == 0.575
    assert tab[0, dem.I_FMINC] == pytest.approx(-1.5 * np.pi * 1.64) and tab[2, dem.I_MUR] == 0.0
