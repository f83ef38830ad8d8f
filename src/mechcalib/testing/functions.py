"""Global-optimisation test functions of the SciPy benchmark set, vectorised.

The set, its bounds, known minima ``fglob`` and their locations ``x_opt`` are read from the packaged
table ``data/go_benchmark_functions.csv`` (exported from SciPy's ``benchmarks/go_benchmark_functions``,
BSD-3-Clause, see ``data/go_benchmark_functions.LICENSE.txt``). The functions themselves are this
module's own vectorised implementations: each maps points ``X`` of shape ``(n, d)`` (or any ``(..., d)``)
to values of shape ``(n,)``; a single point ``(d,)`` gives a float through :class:`TestFunction`.

    >>> f = get_function("Rastrigin", dim=5)
    >>> f(np.zeros((3, 5)))
    array([0., 0., 0.])

Only some functions may change dimension: those whose table row allows it *and* whose minimum is known
in closed form in any dimension (``x_opt``/``fglob`` are then computed for the requested ``dim``, and the
bounds are the table's per-dimension bound repeated, as SciPy does).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType

import numpy as np

from ..errors import ConfigurationError

_PI = np.pi

# ---------------------------------------------------------------------------------------------------
# Implementations: X (..., d) -> (...). Each follows the SciPy definition of the same name.
# ---------------------------------------------------------------------------------------------------


def _idx(X: np.ndarray) -> np.ndarray:
    """1-based coordinate indices ``i = 1..d`` broadcastable against ``X``."""
    return np.arange(1, X.shape[-1] + 1, dtype=float)


def sphere(X):
    return np.sum(X**2, axis=-1)


def rosenbrock(X):
    return np.sum(100.0 * (X[..., 1:] - X[..., :-1] ** 2) ** 2 + (1.0 - X[..., :-1]) ** 2, axis=-1)


def rastrigin(X):
    d = X.shape[-1]
    return 10.0 * d + np.sum(X**2 - 10.0 * np.cos(2.0 * _PI * X), axis=-1)


def ackley01(X):
    d = X.shape[-1]
    r = np.sqrt(np.sum(X**2, axis=-1) / d)
    c = np.sum(np.cos(2.0 * _PI * X), axis=-1) / d
    return -20.0 * np.exp(-0.2 * r) - np.exp(c) + 20.0 + np.e


def griewank(X):
    return np.sum(X**2, axis=-1) / 4000.0 - np.prod(np.cos(X / np.sqrt(_idx(X))), axis=-1) + 1.0


def alpine01(X):
    return np.sum(np.abs(X * np.sin(X) + 0.1 * X), axis=-1)


def alpine02(X):
    # SciPy minimises the plain product (its fglob is negative).
    return np.prod(np.sqrt(X) * np.sin(X), axis=-1)


def salomon(X):
    r = np.sqrt(np.sum(X**2, axis=-1))
    return 1.0 - np.cos(2.0 * _PI * r) + 0.1 * r


def schwefel01(X):
    return np.sum(X**2, axis=-1) ** np.sqrt(_PI)


def schwefel02(X):
    return np.sum(np.cumsum(X, axis=-1) ** 2, axis=-1)


def schwefel04(X):
    return np.sum((X - 1.0) ** 2 + (X[..., :1] - X**2) ** 2, axis=-1)


def schwefel20(X):
    return np.sum(np.abs(X), axis=-1)


def schwefel21(X):
    return np.max(np.abs(X), axis=-1)


def schwefel22(X):
    return np.sum(np.abs(X), axis=-1) + np.prod(np.abs(X), axis=-1)


def schwefel26(X):
    # SciPy's constant 418.982887 per dimension (so fglob = 0 holds to about 1e-5 per dimension).
    return 418.982887 * X.shape[-1] - np.sum(X * np.sin(np.sqrt(np.abs(X))), axis=-1)


def styblinski_tang(X):
    return 0.5 * np.sum(X**4 - 16.0 * X**2 + 5.0 * X, axis=-1)


def zacharov(X):
    s = 0.5 * np.sum(_idx(X) * X, axis=-1)
    return np.sum(X**2, axis=-1) + s**2 + s**4


def dixon_price(X):
    i = _idx(X)[1:]
    return (X[..., 0] - 1.0) ** 2 + np.sum(i * (2.0 * X[..., 1:] ** 2 - X[..., :-1]) ** 2, axis=-1)


def qing(X):
    return np.sum((X**2 - _idx(X)) ** 2, axis=-1)


def trid(X):
    return np.sum((X - 1.0) ** 2, axis=-1) - np.sum(X[..., 1:] * X[..., :-1], axis=-1)


def deb01(X):
    return -np.mean(np.sin(5.0 * _PI * X) ** 6, axis=-1)


def exponential(X):
    return -np.exp(-0.5 * np.sum(X**2, axis=-1))


def cigar(X):
    return X[..., 0] ** 2 + 1e6 * np.sum(X[..., 1:] ** 2, axis=-1)


def levy03(X):
    y = 1.0 + (X - 1.0) / 4.0
    body = np.sum((y[..., :-1] - 1.0) ** 2 * (1.0 + 10.0 * np.sin(_PI * y[..., 1:]) ** 2), axis=-1)
    return np.sin(_PI * y[..., 0]) ** 2 + body + (y[..., -1] - 1.0) ** 2


def michalewicz(X, m: int = 10):
    return -np.sum(np.sin(X) * np.sin(_idx(X) * X**2 / _PI) ** (2 * m), axis=-1)


def eggholder(X):
    a, b = X[..., :-1], X[..., 1:]
    v = -(b + 47.0) * np.sin(np.sqrt(np.abs(b + a / 2.0 + 47.0))) - a * np.sin(np.sqrt(np.abs(a - (b + 47.0))))
    return np.sum(v, axis=-1)


def shubert01(X):
    j = np.arange(1.0, 6.0)
    # (..., d, 5): j * cos((j + 1) x + j), summed over j, multiplied over dimensions.
    t = j * np.cos((j + 1.0) * X[..., None] + j)
    return np.prod(np.sum(t, axis=-1), axis=-1)


# -- fixed-dimension functions (two coordinates x, y unless stated) ------------------------------------


def _xy(X):
    return X[..., 0], X[..., 1]


def ackley03(X):
    x, y = _xy(X)
    return -200.0 * np.exp(-0.02 * np.sqrt(x**2 + y**2)) + 5.0 * np.exp(np.cos(3.0 * x) + np.sin(3.0 * y))


def adjiman(X):
    x, y = _xy(X)
    return np.cos(x) * np.sin(y) - x / (y**2 + 1.0)


def beale(X):
    x, y = _xy(X)
    return (1.5 - x + x * y) ** 2 + (2.25 - x + x * y**2) ** 2 + (2.625 - x + x * y**3) ** 2


def bird(X):
    x, y = _xy(X)
    return np.sin(x) * np.exp((1.0 - np.cos(y)) ** 2) + np.cos(y) * np.exp((1.0 - np.sin(x)) ** 2) + (x - y) ** 2


def bohachevsky1(X):
    x, y = _xy(X)
    return x**2 + 2.0 * y**2 - 0.3 * np.cos(3.0 * _PI * x) - 0.4 * np.cos(4.0 * _PI * y) + 0.7


def bohachevsky2(X):
    x, y = _xy(X)
    return x**2 + 2.0 * y**2 - 0.3 * np.cos(3.0 * _PI * x) * np.cos(4.0 * _PI * y) + 0.3


def bohachevsky3(X):
    x, y = _xy(X)
    return x**2 + 2.0 * y**2 - 0.3 * np.cos(3.0 * _PI * x + 4.0 * _PI * y) + 0.3


def branin01(X):
    x, y = _xy(X)
    return (
        (y - 5.1 / (4.0 * _PI**2) * x**2 + 5.0 * x / _PI - 6.0) ** 2
        + 10.0 * (1.0 - 1.0 / (8.0 * _PI)) * np.cos(x)
        + 10.0
    )


def colville(X):
    x1, x2, x3, x4 = (X[..., k] for k in range(4))
    return (
        100.0 * (x1 - x2**2) ** 2
        + (1.0 - x1) ** 2
        + (1.0 - x3) ** 2
        + 90.0 * (x4 - x3**2) ** 2
        + 10.1 * ((x2 - 1.0) ** 2 + (x4 - 1.0) ** 2)
        + 19.8 * (x2 - 1.0) * (x4 - 1.0)
    )


def cross_in_tray(X):
    x, y = _xy(X)
    g = np.abs(np.sin(x) * np.sin(y) * np.exp(np.abs(100.0 - np.sqrt(x**2 + y**2) / _PI)))
    return -0.0001 * (g + 1.0) ** 0.1


def drop_wave(X):
    r2 = np.sum(X**2, axis=-1)
    return -(1.0 + np.cos(12.0 * np.sqrt(r2))) / (0.5 * r2 + 2.0)


def easom(X):
    x, y = _xy(X)
    return -np.cos(x) * np.cos(y) * np.exp(-((x - _PI) ** 2) - (y - _PI) ** 2)


def goldstein_price(X):
    x, y = _xy(X)
    a = 1.0 + (x + y + 1.0) ** 2 * (19.0 - 14.0 * x + 3.0 * x**2 - 14.0 * y + 6.0 * x * y + 3.0 * y**2)
    b = 30.0 + (2.0 * x - 3.0 * y) ** 2 * (18.0 - 32.0 * x + 12.0 * x**2 + 48.0 * y - 36.0 * x * y + 27.0 * y**2)
    return a * b


_H3_A = np.array([[3.0, 10.0, 30.0], [0.1, 10.0, 35.0], [3.0, 10.0, 30.0], [0.1, 10.0, 35.0]])
_H3_P = np.array(
    [[0.3689, 0.1170, 0.2673], [0.4699, 0.4387, 0.7470], [0.1091, 0.8732, 0.5547], [0.03815, 0.5743, 0.8828]]
)
_H6_A = np.array(
    [
        [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
        [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
        [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
        [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
    ]
)
_H6_P = np.array(
    [
        [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
        [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
        [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
        [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
    ]
)
_H_C = np.array([1.0, 1.2, 3.0, 3.2])


def _hartmann(X, A, P):
    # (..., 1, d) against (4, d) -> (..., 4) exponents.
    e = np.sum(A * (X[..., None, :] - P) ** 2, axis=-1)
    return -np.sum(_H_C * np.exp(-e), axis=-1)


def hartmann3(X):
    return _hartmann(X, _H3_A, _H3_P)


def hartmann6(X):
    return _hartmann(X, _H6_A, _H6_P)


def himmelblau(X):
    x, y = _xy(X)
    return (x**2 + y - 11.0) ** 2 + (x + y**2 - 7.0) ** 2


def holder_table(X):
    x, y = _xy(X)
    return -np.abs(np.sin(x) * np.cos(y) * np.exp(np.abs(1.0 - np.sqrt(x**2 + y**2) / _PI)))


def leon(X):
    x, y = _xy(X)
    return 100.0 * (y - x**2) ** 2 + (1.0 - x) ** 2


def levy05(X):
    x, y = _xy(X)
    i = np.arange(1.0, 6.0)
    a = np.sum(i * np.cos((i - 1.0) * x[..., None] + i), axis=-1)
    b = np.sum(i * np.cos((i + 1.0) * y[..., None] + i), axis=-1)
    return a * b + (x + 1.42513) ** 2 + (y + 0.80032) ** 2


def levy13(X):
    x, y = _xy(X)
    return (
        np.sin(3.0 * _PI * x) ** 2
        + (x - 1.0) ** 2 * (1.0 + np.sin(3.0 * _PI * y) ** 2)
        + (y - 1.0) ** 2 * (1.0 + np.sin(2.0 * _PI * y) ** 2)
    )


def matyas(X):
    x, y = _xy(X)
    return 0.26 * (x**2 + y**2) - 0.48 * x * y


def mccormick(X):
    x, y = _xy(X)
    return np.sin(x + y) + (x - y) ** 2 - 1.5 * x + 2.5 * y + 1.0


def powell(X):
    x1, x2, x3, x4 = (X[..., k] for k in range(4))
    return (x1 + 10.0 * x2) ** 2 + 5.0 * (x3 - x4) ** 2 + (x2 - 2.0 * x3) ** 4 + 10.0 * (x1 - x4) ** 4


def schaffer01(X):
    u = np.sum(X**2, axis=-1)
    return 0.5 + (np.sin(u) ** 2 - 0.5) / (1.0 + 0.001 * u) ** 2


def schaffer02(X):
    x, y = _xy(X)
    return 0.5 + (np.sin(x**2 - y**2) ** 2 - 0.5) / (1.0 + 0.001 * (x**2 + y**2)) ** 2


def schaffer04(X):
    x, y = _xy(X)
    return 0.5 + (np.cos(np.sin(np.abs(x**2 - y**2))) ** 2 - 0.5) / (1.0 + 0.001 * (x**2 + y**2)) ** 2


_SHEKEL_A = np.array(
    [
        [4.0, 4.0, 4.0, 4.0],
        [1.0, 1.0, 1.0, 1.0],
        [8.0, 8.0, 8.0, 8.0],
        [6.0, 6.0, 6.0, 6.0],
        [3.0, 7.0, 3.0, 7.0],
        [2.0, 9.0, 2.0, 9.0],
        [5.0, 5.0, 3.0, 3.0],
        [8.0, 1.0, 8.0, 1.0],
        [6.0, 2.0, 6.0, 2.0],
        [7.0, 3.6, 7.0, 3.6],
    ]
)
_SHEKEL_C = np.array([0.1, 0.2, 0.2, 0.4, 0.4, 0.6, 0.3, 0.7, 0.5, 0.5])


def _shekel(X, m: int):
    s = np.sum((X[..., None, :] - _SHEKEL_A[:m]) ** 2, axis=-1)  # (..., m)
    return -np.sum(1.0 / (s + _SHEKEL_C[:m]), axis=-1)


def shekel05(X):
    return _shekel(X, 5)


def shekel07(X):
    return _shekel(X, 7)


def shekel10(X):
    return _shekel(X, 10)


def six_hump_camel(X):
    x, y = _xy(X)
    return 4.0 * x**2 + x * y - 4.0 * y**2 - 2.1 * x**4 + 4.0 * y**4 + x**6 / 3.0


def three_hump_camel(X):
    x, y = _xy(X)
    return 2.0 * x**2 - 1.05 * x**4 + x**6 / 6.0 + x * y + y**2


def zirilli(X):
    x, y = _xy(X)
    return 0.25 * x**4 - 0.5 * x**2 + 0.1 * x + 0.5 * y**2


# ---------------------------------------------------------------------------------------------------
# Optima in any dimension d, for the functions whose dimension may change: d -> (x_opt (d,), fglob).
# ---------------------------------------------------------------------------------------------------


def _const(value: float, fglob: float = 0.0) -> Callable[[int], tuple[np.ndarray, float]]:
    return lambda d: (np.full(d, value), fglob)


_OPTIMA: dict[str, Callable[[int], tuple[np.ndarray, float]]] = {
    "Sphere": _const(0.0),
    "Rosenbrock": _const(1.0),
    "Rastrigin": _const(0.0),
    "Ackley01": _const(0.0),
    "Griewank": _const(0.0),
    "Alpine01": _const(0.0),
    "Salomon": _const(0.0),
    "Schwefel01": _const(0.0),
    "Schwefel02": _const(0.0),
    "Schwefel04": _const(1.0),
    "Schwefel20": _const(0.0),
    "Schwefel21": _const(0.0),
    "Schwefel22": _const(0.0),
    "Schwefel26": _const(420.968746),
    "StyblinskiTang": lambda d: (np.full(d, -2.903534018), -39.16616570377142 * d),
    "Zacharov": _const(0.0),
    "DixonPrice": lambda d: (2.0 ** (-(2.0 ** np.arange(1, d + 1) - 2.0) / 2.0 ** np.arange(1, d + 1)), 0.0),
    "Qing": lambda d: (np.sqrt(np.arange(1.0, d + 1.0)), 0.0),
    "Trid": lambda d: (np.arange(1.0, d + 1.0) * (d + 1.0 - np.arange(1.0, d + 1.0)), -d * (d + 4.0) * (d - 1.0) / 6.0),
    "Deb01": _const(0.3, -1.0),
    "Exponential": _const(0.0, -1.0),
    "Cigar": _const(0.0),
}

# SciPy keeps Trid's bounds at [-20, 20]; its optimum x_i = i (d + 1 - i) leaves them beyond d = 8.
_MAX_DIM = {"Trid": 8}

_IMPLEMENTATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Ackley01": ackley01,
    "Ackley03": ackley03,
    "Adjiman": adjiman,
    "Alpine01": alpine01,
    "Alpine02": alpine02,
    "Beale": beale,
    "Bird": bird,
    "Bohachevsky1": bohachevsky1,
    "Bohachevsky2": bohachevsky2,
    "Bohachevsky3": bohachevsky3,
    "Branin01": branin01,
    "Cigar": cigar,
    "Colville": colville,
    "CrossInTray": cross_in_tray,
    "Deb01": deb01,
    "DixonPrice": dixon_price,
    "DropWave": drop_wave,
    "Easom": easom,
    "EggHolder": eggholder,
    "Exponential": exponential,
    "GoldsteinPrice": goldstein_price,
    "Griewank": griewank,
    "Hartmann3": hartmann3,
    "Hartmann6": hartmann6,
    "HimmelBlau": himmelblau,
    "HolderTable": holder_table,
    "Leon": leon,
    "Levy03": levy03,
    "Levy05": levy05,
    "Levy13": levy13,
    "Matyas": matyas,
    "McCormick": mccormick,
    "Michalewicz": michalewicz,
    "Powell": powell,
    "Qing": qing,
    "Rastrigin": rastrigin,
    "Rosenbrock": rosenbrock,
    "Salomon": salomon,
    "Schaffer01": schaffer01,
    "Schaffer02": schaffer02,
    "Schaffer04": schaffer04,
    "Schwefel01": schwefel01,
    "Schwefel02": schwefel02,
    "Schwefel04": schwefel04,
    "Schwefel20": schwefel20,
    "Schwefel21": schwefel21,
    "Schwefel22": schwefel22,
    "Schwefel26": schwefel26,
    "Shekel05": shekel05,
    "Shekel07": shekel07,
    "Shekel10": shekel10,
    "Shubert01": shubert01,
    "SixHumpCamel": six_hump_camel,
    "Sphere": sphere,
    "StyblinskiTang": styblinski_tang,
    "ThreeHumpCamel": three_hump_camel,
    "Trid": trid,
    "Zacharov": zacharov,
    "Zirilli": zirilli,
}


# ---------------------------------------------------------------------------------------------------
# The table and the registry
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchmarkRow:
    """One row of the packaged SciPy table (every function of the set, implemented here or not)."""

    name: str
    dim: int
    change_dim: bool
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    fglob: float
    x_opt: tuple[float, ...]
    f_at_xopt: float
    consistent: bool
    module: str


def _floats(s: str) -> tuple[float, ...]:
    return tuple(float(v) for v in s.split(";") if v.strip())


@cache
def benchmark_table() -> Mapping[str, BenchmarkRow]:
    """All rows of ``data/go_benchmark_functions.csv`` by function name (195 functions)."""
    text = resources.files("mechcalib").joinpath("data", "go_benchmark_functions.csv").read_text("utf-8")
    rows = {}
    for r in csv.DictReader(text.splitlines()):
        rows[r["name"]] = BenchmarkRow(
            name=r["name"],
            dim=int(r["N"]),
            change_dim=r["change_dim"] == "True",
            lower=_floats(r["lb"]),
            upper=_floats(r["ub"]),
            fglob=float(r["fglob"]),
            x_opt=_floats(r["x_opt"]),
            f_at_xopt=float(r["f_at_xopt"]),
            consistent=r["consistent"] == "True",
            module=r["module"],
        )
    return MappingProxyType(rows)


@dataclass(frozen=True, eq=False)
class TestFunction:
    """A test function on a box, with its known global minimum.

    Calling it evaluates ``fn``: ``(n, dim)`` points give ``(n,)`` values, one point ``(dim,)`` a float.

    Attributes:
        name: the SciPy benchmark name (``"Rastrigin"``).
        fn: the vectorised implementation, ``(..., dim) -> (...)``.
        dim: the dimension.
        lower, upper: bounds, each ``(dim,)``.
        fglob: the known global minimum value.
        x_opt: a location of the global minimum, ``(dim,)``.
        change_dim: whether :func:`get_function` accepts other dimensions for this function.
    """

    __test__ = False  # not a pytest test class despite the name

    name: str
    fn: Callable[[np.ndarray], np.ndarray]
    dim: int
    lower: np.ndarray
    upper: np.ndarray
    fglob: float
    x_opt: np.ndarray
    change_dim: bool

    def __call__(self, X) -> np.ndarray | float:
        X = np.asarray(X, dtype=float)
        if X.shape[-1:] != (self.dim,):
            raise ConfigurationError(
                f"{self.name}: points must have {self.dim} coordinates in the last axis, got shape {X.shape}"
            )
        out = self.fn(X)
        return float(out) if X.ndim == 1 else out

    @property
    def bounds(self) -> np.ndarray:
        """``(dim, 2)`` array of ``(lower, upper)`` pairs (the form SciPy's optimisers take)."""
        return np.column_stack([self.lower, self.upper])

    def error(self, f) -> np.ndarray | float:
        """``|f - fglob|``, the distance to the known minimum used in success criteria."""
        return np.abs(np.asarray(f, dtype=float) - self.fglob) if np.ndim(f) else abs(float(f) - self.fglob)

    def __repr__(self) -> str:
        return f"TestFunction({self.name!r}, dim={self.dim}, fglob={self.fglob:.10g})"


def _frozen(a) -> np.ndarray:
    """A read-only float copy (the registry's instances are shared)."""
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


def _build(name: str, dim: int | None) -> TestFunction:
    row = benchmark_table()[name]
    fn = _IMPLEMENTATIONS[name]
    may_change = row.change_dim and name in _OPTIMA
    if dim is None or dim == row.dim:
        return TestFunction(
            name, fn, row.dim, _frozen(row.lower), _frozen(row.upper), row.fglob, _frozen(row.x_opt), may_change
        )
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 2:
        raise ConfigurationError(f"{name}: dim must be an integer >= 2, got {dim!r}")
    if not may_change:
        why = (
            "SciPy lets its dimension change, but its minimum is not known in other dimensions"
            if row.change_dim
            else f"it is defined in {row.dim} dimensions only"
        )
        resizable = sorted(n for n in FUNCTIONS if FUNCTIONS[n].change_dim)
        raise ConfigurationError(
            f"{name}: dim must be {row.dim} ({why}), got dim={dim}; functions that accept any dim: {resizable}"
        )
    dim = int(dim)
    if dim > _MAX_DIM.get(name, dim):
        raise ConfigurationError(
            f"{name}: dim must be <= {_MAX_DIM[name]} (beyond it the minimum lies outside the SciPy bounds), "
            f"got dim={dim}"
        )
    x_opt, fglob = _OPTIMA[name](dim)
    return TestFunction(
        name,
        fn,
        dim,
        _frozen(np.full(dim, row.lower[0])),
        _frozen(np.full(dim, row.upper[0])),
        float(fglob),
        _frozen(x_opt),
        True,
    )


FUNCTIONS: Mapping[str, TestFunction] = MappingProxyType({n: _build(n, None) for n in sorted(_IMPLEMENTATIONS)})
"""The implemented functions by SciPy name, each in the table's default dimension."""


def get_function(name: str, dim: int | None = None) -> TestFunction:
    """The test function ``name`` (exact SciPy spelling, case-insensitive), optionally in ``dim`` dimensions.

    Raises:
        ConfigurationError: an unknown name (the message lists the implemented ones) or a dimension the
            function does not support.
    """
    key = {n.lower(): n for n in FUNCTIONS}.get(str(name).lower())
    if key is None:
        hint = " (in the SciPy table but not implemented here)" if name in benchmark_table() else ""
        raise ConfigurationError(f"unknown test function {name!r}{hint}; valid names are {sorted(FUNCTIONS)}")
    return _build(key, dim)


__all__ = ["FUNCTIONS", "BenchmarkRow", "TestFunction", "benchmark_table", "get_function"]
