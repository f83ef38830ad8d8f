from __future__ import annotations

import math

import numpy as np
import pytest

from mechcalib import ConfigurationError, Parameter, ParameterSpace


def test_linear_and_log_maps_roundtrip():
    s = ParameterSpace([Parameter("kn", 1e8, 1e10, scale="log", unit="Pa/m"), Parameter("phi", 20, 40, unit="deg")])
    u = np.array([[0.0, 0.0], [0.5, 0.25], [1.0, 1.0]])
    x = s.from_unit(u)
    # log: the midpoint of the unit interval is the geometric mean
    assert x[1, 0] == pytest.approx(1e9)
    assert x[1, 1] == pytest.approx(25.0)
    assert np.allclose(x[[0, 2]], [[1e8, 20], [1e10, 40]])
    assert np.allclose(s.to_unit(x), u)


def test_fixed_parameters_are_inserted_and_not_searched():
    s = ParameterSpace([Parameter("a", 0, 1), Parameter("b", 0, 2), Parameter("c", 0, 3)]).with_fixed(b=1.5)
    assert s.dim == 2 and s.free_names == ("a", "c")
    full = s.full_from_unit(np.array([[0.5, 1.0]]))
    assert np.allclose(full, [[0.5, 1.5, 3.0]])
    assert s.as_dict(full[0]) == {"a": 0.5, "b": 1.5, "c": 3.0}
    assert np.allclose(s.free_from_full(full), [[0.5, 3.0]])


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (
            dict(name="kn", lower=5e9, upper=1e8),
            r"'kn': `lower < upper` must hold, got lower=5000000000.0, upper=100000000.0",
        ),
        (dict(name="kn", lower=1.0, upper=1.0), r"lower=1.0, upper=1.0"),
        (dict(name="kn", lower=-math.inf, upper=1.0), r"'kn'.*finite.*lower=-inf"),
        (dict(name="kn", lower=math.nan, upper=1.0), r"'kn'.*finite"),
        (dict(name="B2", lower=0.0, upper=1.0, scale="log"), r"'B2'.*log scale needs a positive range.*lower=0.0"),
        (dict(name="B2", lower=1.0, upper=2.0, scale="ln"), r"'B2'.*scale must be 'linear' or 'log'"),
        (dict(name="2x", lower=0.0, upper=1.0), r"valid identifier.*'2x'"),
    ],
)
def test_bad_parameter_definitions_say_rule_and_values(kwargs, pattern):
    with pytest.raises(ConfigurationError, match=pattern):
        Parameter(**kwargs)


def test_duplicate_names_are_rejected_with_positions():
    with pytest.raises(ConfigurationError, match=r"unique.*'a' at positions 0 and 2"):
        ParameterSpace([Parameter("a", 0, 1), Parameter("b", 0, 1), Parameter("a", 0, 2)])


def test_errors_are_value_errors_and_unknown_names_listed():
    s = ParameterSpace.from_bounds([0, 0], [1, 1], ["p", "q"])
    with pytest.raises(ValueError, match=r"valid names are \['p', 'q'\]"):
        s.with_fixed(r=1.0)
    with pytest.raises(ConfigurationError, match=r"shape \(n, 2\)"):
        s.from_unit(np.zeros((3, 3)))
    with pytest.raises(ConfigurationError, match="missing"):
        s.from_dict({"p": 0.3})
    assert np.allclose(s.from_dict({"p": 0.3, "q": 0.4}), [0.3, 0.4])


def test_contains():
    s = ParameterSpace.from_bounds([0, -1], [1, 1])
    assert s.contains(np.array([[0.5, 0.0], [1.0, -1.0], [1.1, 0.0]])).tolist() == [True, True, False]


def test_a_stored_record_rebuilds_the_same_unit_cube_map():
    # the record a run stores keeps no sign: a negative log-scaled parameter must still map as it did
    from mechcalib.storage.session import space_record

    space = ParameterSpace(
        [
            Parameter("a", 0.1, 10.0, scale="log", unit="MPa"),
            Parameter("b", -100.0, -0.01, scale="log", sign="negative"),
            Parameter("c", -1.0, 2.0),
            Parameter("d", 0.0, 1.0, fixed=0.5),
        ]
    )
    back = ParameterSpace.from_record(space_record(space))
    assert back.names == space.names and back.free_names == ("a", "b", "c") and back["a"].unit == "MPa"
    U = np.random.default_rng(0).random((7, 3))
    np.testing.assert_array_equal(back.from_unit(U), space.from_unit(U))
    assert np.all(back.from_unit(U)[:, 1] < 0)
