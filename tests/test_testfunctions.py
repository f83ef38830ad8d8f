"""The SciPy global-optimisation test functions: values at the known minima, vectorisation, dimensions, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import rosen

from conftest import shared_path
from mechcalib.errors import ConfigurationError
from mechcalib.testing.functions import FUNCTIONS, TestFunction, benchmark_table, get_function

NAMES = sorted(FUNCTIONS)
RESIZABLE = sorted(n for n, f in FUNCTIONS.items() if f.change_dim)


def test_table_is_the_whole_scipy_set_and_enough_functions_are_implemented():
    table = benchmark_table()
    assert len(table) == 195
    assert set(FUNCTIONS) <= set(table)
    assert len(FUNCTIONS) >= 25
    for required in ("Sphere", "Rosenbrock", "Rastrigin", "Ackley01", "Griewank"):
        assert required in FUNCTIONS
    row = table["Branin01"]
    assert (row.dim, row.lower, row.upper) == (2, (-5.0, 0.0), (10.0, 15.0))
    assert row.fglob == pytest.approx(0.39788735772973816)
    assert not table["Csendes"].consistent and table["Rastrigin"].consistent


def test_packaged_table_equals_the_shared_reference_and_ships_its_licence():
    from importlib import resources

    data = resources.files("mechcalib").joinpath("data")
    packaged = data.joinpath("go_benchmark_functions.csv").read_text("utf-8")
    licence = data.joinpath("go_benchmark_functions.LICENSE.txt").read_text("utf-8")
    assert "SciPy Developers" in licence and "Redistribution and use" in licence
    ref = shared_path("data", "optimization", "scipy_go_benchmark_functions.csv")
    assert packaged == ref.read_text("utf-8")


@pytest.mark.parametrize("name", NAMES)
def test_value_at_x_opt_is_fglob(name):
    row = benchmark_table()[name]
    if not row.consistent:  # the table itself marks f(x_opt) != fglob for these
        pytest.skip(f"{name}: the SciPy table marks x_opt/fglob as inconsistent")
    f = FUNCTIONS[name]
    assert isinstance(f, TestFunction)
    assert f.dim == row.dim == f.x_opt.shape[0] == f.lower.shape[0] == f.upper.shape[0]
    assert np.all(f.lower < f.upper)
    assert np.all((f.x_opt >= f.lower) & (f.x_opt <= f.upper))
    assert abs(f(f.x_opt) - f.fglob) < 1e-4
    # and the value SciPy's own code gives there (recorded in the table) to far tighter precision
    assert f(f.x_opt) == pytest.approx(row.f_at_xopt, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_minimum_is_not_undercut_by_random_points(name):
    f = FUNCTIONS[name]
    rng = np.random.default_rng(0)
    X = f.lower + (f.upper - f.lower) * rng.random((2000, f.dim))
    assert f(X).min() > f.fglob - 1e-4


@pytest.mark.parametrize("name", NAMES)
def test_batch_equals_row_by_row(name):
    f = FUNCTIONS[name]
    rng = np.random.default_rng(1)
    X = f.lower + (f.upper - f.lower) * rng.random((7, f.dim))
    batch = f(X)
    assert batch.shape == (7,)
    rows = np.array([f(x) for x in X])
    assert all(isinstance(f(x), float) for x in X)
    np.testing.assert_allclose(batch, rows, rtol=1e-12, atol=1e-12)
    # any leading shape works: (2, 7, d) -> (2, 7)
    np.testing.assert_allclose(f(np.stack([X, X[::-1]])), np.stack([batch, batch[::-1]]), rtol=1e-12)


@pytest.mark.parametrize("name", RESIZABLE)
@pytest.mark.parametrize("dim", [3, 7, 10])
def test_changed_dimension_keeps_the_minimum(name, dim):
    base = FUNCTIONS[name]
    if name == "Trid" and dim > 8:
        with pytest.raises(ConfigurationError, match="<= 8"):
            get_function(name, dim)
        return
    f = get_function(name, dim)
    assert f.dim == dim and f.change_dim
    assert f.x_opt.shape == f.lower.shape == f.upper.shape == (dim,)
    np.testing.assert_array_equal(f.lower, np.full(dim, base.lower[0]))
    np.testing.assert_array_equal(f.upper, np.full(dim, base.upper[0]))
    assert np.all((f.x_opt >= f.lower) & (f.x_opt <= f.upper))
    assert abs(f(f.x_opt) - f.fglob) < 1e-4
    rng = np.random.default_rng(dim)
    X = f.lower + (f.upper - f.lower) * rng.random((500, dim))
    assert f(X).min() > f.fglob - 1e-4


def test_dimension_dependent_optima():
    assert get_function("Trid", 8).fglob == pytest.approx(-112.0)  # -d (d + 4) (d - 1) / 6
    np.testing.assert_allclose(get_function("Trid", 4).x_opt, [4, 6, 6, 4])  # i (d + 1 - i)
    assert get_function("StyblinskiTang", 5).fglob == pytest.approx(-195.830829, abs=1e-5)
    np.testing.assert_allclose(get_function("Qing", 3).x_opt, np.sqrt([1, 2, 3]))
    np.testing.assert_allclose(get_function("DixonPrice", 3).x_opt, [1.0, 2**-0.5, 2**-0.75])


def _rastrigin(x):
    return 10 * len(x) + sum(v * v - 10 * math.cos(2 * math.pi * v) for v in x)


def _ackley(x):
    n = len(x)
    s = math.sqrt(sum(v * v for v in x) / n)
    c = sum(math.cos(2 * math.pi * v) for v in x) / n
    return -20 * math.exp(-0.2 * s) - math.exp(c) + 20 + math.e


def _griewank(x):
    p = 1.0
    for i, v in enumerate(x, start=1):
        p *= math.cos(v / math.sqrt(i))
    return 1 + sum(v * v for v in x) / 4000 - p


@pytest.mark.parametrize(
    ("name", "reference"),
    [
        ("Sphere", lambda x: sum(v * v for v in x)),
        ("Rosenbrock", rosen),
        ("Rastrigin", _rastrigin),
        ("Ackley01", _ackley),
        ("Griewank", _griewank),
    ],
)
def test_core_functions_match_scalar_references_away_from_the_minimum(name, reference):
    f = get_function(name, 6)
    rng = np.random.default_rng(3)
    X = f.lower + (f.upper - f.lower) * rng.random((20, 6))
    np.testing.assert_allclose(f(X), [reference(list(x)) for x in X], rtol=1e-12)


def test_hand_computed_values():
    assert get_function("Rastrigin")([0.5, 0.5]) == pytest.approx(40.5)  # 2 * (0.25 + 10) + 20
    assert get_function("Rosenbrock")([0.0, 0.0]) == pytest.approx(1.0)
    assert get_function("Beale")([0.0, 0.0]) == pytest.approx(1.5**2 + 2.25**2 + 2.625**2)
    assert get_function("Matyas")([1.0, 1.0]) == pytest.approx(0.04)
    assert get_function("GoldsteinPrice")([0.0, 0.0]) == pytest.approx(600.0)
    assert get_function("Sphere", 3)([1.0, 2.0, 3.0]) == pytest.approx(14.0)
    assert get_function("Zacharov", 2)([1.0, 1.0]) == pytest.approx(2 + 1.5**2 + 1.5**4)


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(ConfigurationError, match="valid names are") as e:
        get_function("NoSuchFunction")
    assert "Rastrigin" in str(e.value) and "Sphere" in str(e.value)
    with pytest.raises(ConfigurationError, match="not implemented here"):
        get_function("Csendes")  # in the SciPy table, not implemented
    assert get_function("rastrigin").name == "Rastrigin"  # case-insensitive


def test_bad_dimensions_are_refused():
    with pytest.raises(ConfigurationError, match="dim must be 2 .it is defined in 2 dimensions only"):
        get_function("Beale", 3)
    with pytest.raises(ConfigurationError, match="not known in other dimensions"):
        get_function("EggHolder", 4)  # SciPy lets it change dimension, but no minimum is known there
    with pytest.raises(ConfigurationError, match="integer >= 2"):
        get_function("Sphere", 1)
    with pytest.raises(ConfigurationError, match="integer >= 2"):
        get_function("Sphere", "3")
    assert get_function("Beale", 2).dim == 2  # the table's own dimension is always accepted


def test_points_of_the_wrong_dimension_are_refused():
    f = get_function("Sphere", 3)
    with pytest.raises(ConfigurationError, match="3 coordinates"):
        f(np.zeros((4, 2)))


def test_registry_arrays_are_read_only():
    f = FUNCTIONS["Sphere"]
    with pytest.raises(ValueError):
        f.lower[0] = 0.0


def test_bounds_and_error_helpers():
    f = get_function("Branin01")
    np.testing.assert_array_equal(f.bounds, [[-5.0, 10.0], [0.0, 15.0]])
    assert f.error(f.fglob + 0.5) == pytest.approx(0.5)
    np.testing.assert_allclose(f.error(np.array([f.fglob, f.fglob - 1])), [0.0, 1.0])
