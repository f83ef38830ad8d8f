"""One-line parameter space settings: bounds, scale and sign per parameter from the API and the config, without
rebuilding the space; a box derived from a given value announces itself."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mechcalib import ConfigurationError
from mechcalib.config import ConfigFileError, load_config
from mechcalib.core.parameters import DerivedBoundsWarning, Parameter, ParameterSpace, derived_bounds

SPACE = ParameterSpace([Parameter("k", 1.0, 10.0, unit="N/m"), Parameter("a3", 0.25, 1.0), Parameter("n", 1.0, 3.0)])


def test_with_bounds_sets_a_negative_range_and_keeps_the_rest():
    s = SPACE.with_bounds(a3=(-1.0, 1.0))
    assert (s["a3"].lower, s["a3"].upper, s["a3"].scale) == (-1.0, 1.0, "linear")
    assert s["k"] == SPACE["k"] and s.names == SPACE.names


def test_with_bounds_takes_a_scale_and_with_scale_keeps_bounds():
    s = SPACE.with_bounds(k=(1e-3, 1e3, "log"))
    assert (s["k"].lower, s["k"].upper, s["k"].scale, s["k"].unit) == (1e-3, 1e3, "log", "N/m")
    assert np.allclose(s["k"].from_unit(0.5), 1.0)  # the log midpoint
    s2 = SPACE.with_scale(k="log")
    assert (s2["k"].lower, s2["k"].upper, s2["k"].scale) == (1.0, 10.0, "log")


def test_with_settings_changes_several_things_at_once():
    s = SPACE.with_settings(k=dict(bounds=(1e2, 1e4), scale="log"), n=dict(fixed=2.0), a3=dict(sign="positive"))
    assert s["k"].scale == "log" and s["k"].lower == 1e2 and s["n"].fixed == 2.0 and s["a3"].sign == "positive"
    assert s.free_names == ("k", "a3")
    assert s.with_settings(n=dict(fixed=None)).free_names == ("k", "a3", "n")  # freed, old bounds kept


def test_negative_log_scale_searches_the_magnitude():
    p = Parameter("gamma", -10.0, -0.1, scale="log", sign="negative")
    assert np.allclose(p.from_unit([0.0, 0.5, 1.0]), [-10.0, -1.0, -0.1])
    assert np.allclose(p.to_unit(p.from_unit([0.2, 0.7])), [0.2, 0.7])
    s = SPACE.with_bounds(a3=(-10.0, -0.1)).with_settings(a3=dict(scale="log", sign="negative"))
    assert np.allclose(s["a3"].from_unit(0.5), -1.0)


@pytest.mark.parametrize(
    ("call", "text"),
    [
        (lambda: SPACE.with_bounds(a3=(-1.0, 1.0, "log")), "sign='negative' with bounds below zero"),
        (lambda: SPACE.with_bounds(zz=(0, 1)), "unknown parameter(s) ['zz']"),
        (lambda: SPACE.with_scale(k="log10"), "scale must be 'linear' or 'log'"),
        (lambda: SPACE.with_sign(a3="negative"), "sign='negative' needs upper <= 0"),
        (lambda: SPACE.with_bounds(k=(5.0,)), "bounds must be (lower, upper) or (lower, upper, scale)"),
        (lambda: SPACE.with_settings(k=dict(bounds=(1, 2), lower=0)), "not both"),
        (lambda: SPACE.with_settings(k=dict(bound=(1, 2))), "unknown setting(s) ['bound']"),
        (lambda: SPACE.with_settings(k=(1, 2)), "settings must be a mapping"),
        (lambda: SPACE.with_bounds(k=(1e-3, 1e3, "log"), a3=(2.0, 1.0)), "`lower < upper` must hold"),
    ],
)
def test_bad_settings_are_named(call, text):
    with pytest.raises(ConfigurationError) as ei:
        call()
    assert text in str(ei.value)


def test_derived_bounds_warn_with_the_box_and_the_fix():
    with pytest.warns(DerivedBoundsWarning, match=r"'c' will be searched in \[0.1, 0.4\].*with_bounds\(c="):
        assert derived_bounds("model 'sdof'", "c", 0.2) == (0.1, 0.4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert derived_bounds("m", "x", -2.0) == (-4.0, -1.0)


BASE = """
[model]
name = "linear"
[[experiments]]
kind = "synthetic"
[optimizer]
name = "random"
[budget]
max_evals = 20
"""


def test_config_bounds_scale_sign_and_free(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(BASE + '[parameters.b]\nbounds = [0.5, 50.0]\nscale = "log"\nsign = "positive"\n')
    b = load_config(path).build_space()["b"]
    assert (b.lower, b.upper, b.scale, b.sign) == (0.5, 50.0, "log", "positive")
    # a parameter the model fixes by default (the protocol model's Ao) is searched with free = true
    path.write_text(
        BASE.replace('"linear"', '"hysteresis_protocol"\noptions = { law = "boucwen_opensees" }')
        + '[parameters.Ao]\nbounds = [1.0, 100.0]\nscale = "log"\nfree = true\n'
    )
    space = load_config(path).build_space()
    assert "Ao" in space.free_names and space["Ao"].scale == "log"


@pytest.mark.parametrize(
    ("extra", "text"),
    [
        ("bounds = [0.5, 50.0]\nlower = 1.0\n", "not both"),
        ('bounds = [-5.0, 5.0]\nscale = "log"\n', "parameters.b.scale"),
        ("bounds = [1.0]\n", "parameters.b.bounds"),
        ('sign = "minus"\n', "parameters.b.sign"),
        ("free = true\nfixed = 1.0\n", "not both"),
    ],
)
def test_config_bad_parameter_settings(tmp_path, extra, text):
    path = tmp_path / "run.toml"
    path.write_text(BASE + "[parameters.b]\n" + extra)
    with pytest.raises(ConfigFileError) as ei:
        load_config(path).build_space()
    assert text in str(ei.value)


def test_freeing_a_structural_constant_announces_its_derived_box():
    from mechcalib.core.parameters import DerivedBoundsWarning
    from mechcalib.models.hysteresis.sdof import HystereticSDOF

    with pytest.warns(DerivedBoundsWarning, match=r"'k' will be searched in \[0.5, 2\].*with_bounds"):
        model = HystereticSDOF("boucwen", free=("k",))
    assert (model.space["k"].lower, model.space["k"].upper) == (0.5, 2.0)
    assert model.space["c"].is_fixed
