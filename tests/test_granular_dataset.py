"""The wet-sand model with the run engine: its pickled form (sent to pool workers, fingerprinted by the store)
does not depend on the specimens loaded, a small dataset of the triaxial test through the run store, and the
triaxial config example validates."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from mechcalib.config import load_config
from mechcalib.inverse.data import SamplingProblem, _lhs, generate_dataset
from mechcalib.models import get_model

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
COND = {"E_scale": 0.01}  # softened contacts, as the tiny-specimen tests of test_granular_triaxial.py


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return get_model("eepa_triaxial", specimen="tiny", cache_dir=tmp_path_factory.mktemp("granular_cache"))


def test_pickle_and_fingerprint_ignore_loaded_specimens(model):
    before = pickle.dumps(model)
    fp = SamplingProblem(model, conditions=COND).fingerprint()
    model.prepare_shared(COND)  # generates (or reads) the tiny specimen at E x 0.01
    assert 0.01 in model._specimens
    assert pickle.dumps(model) == before
    assert SamplingProblem(model, conditions=COND).fingerprint() == fp
    clone = pickle.loads(before)
    assert clone._specimens == {} and clone.spec == model.spec and clone.cache_dir == model.cache_dir
    assert SamplingProblem(model, conditions={"E_scale": 0.1}).fingerprint() != fp


def test_triaxial_dataset_through_the_store(model, tmp_path):
    g = generate_dataset(model, 3, tmp_path / "s.sqlite", seed=0, conditions=COND)
    assert g.complete and g.failed == 0 and g.simulated == 3
    ds = g.dataset
    assert ds.names == ("lambda_p", "f_ss", "f_sa")
    assert ds.features == ("force_displacement.x", "force_displacement.y") and ds.X.shape == (3, 99, 2)
    u, f = ds.X[:, :, 0], ds.X[:, :, 1]
    np.testing.assert_allclose(u[:, 0], 0.0, atol=1e-9)  # from the pre-compressed state
    assert np.all(np.abs(u.max(axis=1) - 2.0) < 0.02)  # 50 mm/s for 0.04 s
    assert np.all(f.max(axis=1) > 10 * f[:, 0])  # loaded well above the 1.82 N preload
    np.testing.assert_array_equal(ds.Y, model.space.from_unit(_lhs(3, 3, 0)))  # the design of from_model
    assert generate_dataset(model, 3, tmp_path / "s.sqlite", seed=0, conditions=COND).simulated == 0


def test_config_example_validates():
    cfg = load_config(EXAMPLES / "granular_triaxial.toml")
    problem = cfg.build_problem()
    assert problem.model.name == "eepa_triaxial" and problem.model.spec.name == "fast"
    assert problem.space.free_names == ("lambda_p", "f_ss", "f_sa")
    np.testing.assert_allclose(problem.space.lower, [0.55, 0.45, 0.30])
    np.testing.assert_allclose(problem.space.upper, [0.75, 0.56, 0.52])
    (exp,) = problem.experiments
    c = exp.channels["force_displacement"]
    assert len(c.x) == 99 and c.t is not None and abs(c.t[-1] - 0.06) < 1e-12
    assert 400 < c.y.max() < 700 and abs(c.x.max() - 2.0) < 0.02  # case 9 on the fast specimen
    assert cfg.build_termination().max_evals == 30 and cfg.build_optimizer().name == "pso"


@pytest.mark.slow
def test_cli_simulate_writes_the_99_sample_sequence(tmp_path):
    """`mechcalib simulate eepa_triaxial` on the default (`fast`) specimen: pours it when not cached (minutes)."""
    from typer.testing import CliRunner

    from mechcalib.cli import app
    from mechcalib.core.data import Experiment

    out = tmp_path / "t.csv"
    r = CliRunner().invoke(app, ["simulate", "eepa_triaxial", "--out", str(out)])
    assert r.exit_code == 0, r.output
    exp = Experiment.from_csv(
        out, {"force_displacement": ("force_displacement.x", "force_displacement.y", "force_displacement.t")}
    )
    c = exp.channels["force_displacement"]
    assert len(c.x) == 99 and abs(c.x.max() - 2.0) < 0.02 and 400 < c.y.max() < 700
