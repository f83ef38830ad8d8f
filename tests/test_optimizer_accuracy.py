"""Accuracy of every optimiser on the classic test functions, and the GrainLearning linear-regression peer test.

Each row of ``TARGETS`` states what an optimiser, with the given preset and settings, reaches on a function
of :mod:`mechcalib.testing.functions` (SciPy bounds) within a budget: the error ``|f_best - fglob|`` after
``budget`` evaluations must be at most ``tol`` -- for every seed of 0-2 ("0-2 max"), or, where the
algorithm is too erratic for a worst-case target that still means something, for the median of seeds 0-4
("0-4 median"). The tolerances come from runs over seeds 0-9 (columns "worst/10" and "median/10": the
largest and the median error among them), with a margin. Weak algorithms get loose targets, but
``test_targets_are_markedly_better_than_random_search`` checks that every target is at most half the
median error of uniform random search with the same budget (20 runs), so an optimiser that searches no
better than random sampling fails its rows. One row is a known shortfall (``KNOWN_SHORT``, marked xfail):
GRADE's median over seeds 0-4 on 5-D Ackley does not reach half the random-search median.

PSO and TBPSO: ``max_iter = budget / swarm_size - 1`` makes the inertia schedule span the budget. TBPSO's
``kibriya2023`` uses ``trust_direction="away"`` (eq. 13 as printed); with ``"toward"``, its earlier setting,
seeds 0-9 gave worst/median 1.5/0.44 (Sphere-10), 7e3/3.4e2 (Rosenbrock-5), 18/11 (Rastrigin-5), 8.7/4.2
(Ackley01-5), 0.96/0.35 (Griewank-5). DE: ``NP = 20`` instead of the default ``10 * dim``, which leaves too
few generations in 2000 evaluations. ABC and I-ABC ``ding2021`` take eq. 29 as printed (one random number
scales ``a_i - a_k``, ``local_step="vector"``); with Karaboga's one-coordinate step, their earlier setting,
seeds 0-9 gave worst/median ABC 0.3/0.1, 63/2.7, 2.4/1.1, 2.4/1.6, 0.2/0.16 and I-ABC 0.88/0.62, 97/42,
4/2.2, 3/1.5, 0.2/0.13 on the five functions: the vector step is better where the variables interact
(I-ABC on Sphere, Rosenbrock, Ackley), worse on the separable Rastrigin, and worse for plain ABC at this
short budget (40 cycles); on Ding et al.'s (2021) hysteresis objectives it is what lets I-ABC reach the truth.

=========  =======================  ==========  ===  ======  =====  ========  =========  ==========
optimiser  preset / settings        function    dim  budget  tol    worst/10  median/10  seeds
=========  =======================  ==========  ===  ======  =====  ========  =========  ==========
ga         kibriya2023              Sphere      10   2000    2      0.48      0.17       0-2 max
ga         kibriya2023              Rosenbrock  5    2000    5e+03  9.9e+02   2.8e+02    0-2 max
ga         kibriya2023              Rastrigin   5    2000    10     3.5       1.8        0-2 max
ga         kibriya2023              Ackley01    5    2000    6.7    4.4       2.6        0-2 max
ga         kibriya2023              Griewank    5    2000    0.56   0.46      0.21       0-2 max
pso        kibriya2023, 199 iters  Sphere      10   2000    0.002  0.00052   0.00017    0-2 max
pso        kibriya2023, 199 iters  Rosenbrock  5    2000    2e+03  5.5e+02   1.9        0-2 max
pso        kibriya2023, 199 iters  Rastrigin   5    2000    10     3         1.5        0-2 max
pso        kibriya2023, 199 iters  Ackley01    5    2000    0.002  0.0006    9.4e-05    0-2 max
pso        kibriya2023, 199 iters  Griewank    5    2000    0.5    0.23      0.13       0-2 max
tbpso      kibriya2023, 199 iters  Sphere      10   2000    5      2.6       1.2        0-2 max
tbpso      kibriya2023, 199 iters  Rosenbrock  5    2000    5e+03  1.6e+03   14         0-2 max
tbpso      kibriya2023, 199 iters  Rastrigin   5    2000    10     17        5.1        0-4 median
tbpso      kibriya2023, 199 iters  Ackley01    5    2000    5      18        2.8        0-4 median
tbpso      kibriya2023, 199 iters  Griewank    5    2000    0.6    0.76      0.37       0-4 median
abc        ding2021                 Sphere      10   2000    5      3.5       1.1        0-2 max
abc        ding2021                 Rosenbrock  5    2000    60     6.8e+03   10         0-4 median
abc        ding2021                 Rastrigin   5    2000    10     8.9       3.6        0-2 max
abc        ding2021                 Ackley01    5    2000    5      9.3       3.3        0-4 median
abc        ding2021                 Griewank    5    2000    0.5    0.37      0.21       0-2 max
iabc       ding2021                 Sphere      10   2000    0.2    0.078     0.0086     0-2 max
iabc       ding2021                 Rosenbrock  5    2000    50     16        4.1        0-2 max
iabc       ding2021                 Rastrigin   5    2000    12     8.9       6.1        0-2 max
iabc       ding2021                 Ackley01    5    2000    1      0.42      0.11       0-2 max
iabc       ding2021                 Griewank    5    2000    0.5    0.31      0.27       0-2 max
tsa        defaults                 Sphere      10   2000    0.02   0.0047    0.0011     0-2 max
tsa        defaults                 Rosenbrock  5    2000    50     7.6       3.4        0-2 max
tsa        defaults                 Rastrigin   5    2000    12     8         4          0-2 max
tsa        defaults                 Ackley01    5    2000    0.2    0.041     0.0012     0-2 max
tsa        defaults                 Griewank    5    2000    0.57   0.38      0.3        0-2 max
de         defaults, pop_size 20    Sphere      10   2000    0.2    0.065     0.0079     0-2 max
de         defaults, pop_size 20    Rosenbrock  5    2000    20     4.9       2.1        0-2 max
de         defaults, pop_size 20    Rastrigin   5    2000    12     11        8          0-2 max
de         defaults, pop_size 20    Ackley01    5    2000    0.02   0.0056    0.0017     0-2 max
de         defaults, pop_size 20    Griewank    5    2000    0.51   0.34      0.24       0-2 max
grade      tight_budget             Sphere      10   2000    9      7.5       4.2        0-2 max
grade      tight_budget             Rosenbrock  5    2000    2e+04  9.7e+03   1.2e+02    0-2 max
grade      tight_budget             Rastrigin   5    2000    12     22        8.7        0-4 median
grade      tight_budget             Ackley01    5    2000    7      13        5.4        0-4 median
grade      tight_budget             Griewank    5    2000    0.61   0.54      0.39       0-2 max
bmo        defaults                 Sphere      10   2000    0.3    0.13      0.04       0-2 max
bmo        defaults                 Rosenbrock  5    2000    100    1.8e+02   3.3        0-2 max
bmo        defaults                 Rastrigin   5    2000    12     10        3.3        0-2 max
bmo        defaults                 Ackley01    5    2000    0.3    0.14      0.052      0-2 max
bmo        defaults                 Griewank    5    2000    0.5    0.25      0.17       0-2 max
ltsa       defaults                 Sphere      10   2000    5      3.3       1.8        0-2 max
ltsa       defaults                 Rosenbrock  5    2000    300    1.6e+02   75         0-2 max
ltsa       defaults                 Rastrigin   5    2000    10     19        9.1        0-4 median
ltsa       defaults                 Ackley01    5    2000    7      20        13         0-4 median
ltsa       defaults                 Griewank    5    2000    0.6    0.54      0.35       0-2 max
=========  =======================  ==========  ===  ======  =====  ========  =========  ==========

BMO (Askarzadeh 2014; 50 birds, its weight schedule over the budget) and the Lévy-flight TSA (Kiran's TSA with
Mantegna's steps at scale 1) were measured on seeds 0-9 when they were added. The Lévy-flight TSA is far
weaker than Kiran's TSA at this budget (Sphere-10 median 1.8 against 0.0011): its heavy-tailed steps of the
uniform step's scale overshoot; at scale 0.5 it reaches 0.02 on Sphere-10 over seeds 0-5, still worse than
Kiran's. Its defaults stay those of docs/optimizers.md (the rows above measure them, not a tuned setting).

Random search with 2000 evaluations (median of 20 runs): Sphere-10 18.8, Rosenbrock-5 6.4e4,
Rastrigin-5 25.7, Ackley01-5 14.1, Griewank-5 1.23.

GrainLearning peer test (its repository's linear case, ../shared/data/granular/grainlearning/README.md):
``y = a x + b`` on ``x = 0..99`` with truth ``(a, b) = (0.2, 5.0)``, bounds ``a in [0.1, 1]``,
``b in [0.1, 10]``; a run passes when both parameters are within 1 % after at most 200 evaluations. The loss
is the sum of squared relative residuals (each residual divided by the observation). Measured over seeds
0-19: PSO (``kibriya2023``, ``max_iter`` 19) 11/20 runs pass, TBPSO (``kibriya2023``, ``max_iter`` 19) 15/20
(9 of seeds 0-9; 14/20 with ``trust_direction="toward"``), I-ABC (``small_group``) 18/20; random search
0/20. The test asks each of the three for at least 5 passes out of seeds 0-9.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import mechcalib as mc
from conftest import shared_path
from mechcalib.optimizers import make_optimizer
from mechcalib.optimizers.random_search import RandomSearch
from mechcalib.testing.functions import get_function


@dataclass(frozen=True)
class Target:
    optimizer: str
    preset: str | None
    settings: dict[str, Any]
    function: str
    dim: int
    budget: int
    tol: float
    stat: str = "max"  # "max": every seed within tol; "median": the median over the seeds
    seeds: tuple[int, ...] = (0, 1, 2)
    worst_of_10: float = field(default=np.nan, compare=False)  # measured over seeds 0-9, documentation
    median_of_10: float = field(default=np.nan, compare=False)

    @property
    def id(self) -> str:
        return f"{self.optimizer}-{self.function}{self.dim}"


B = 2000
_PSO = {"max_iter": B // 10 - 1}
_MEDIAN5: dict[str, Any] = {"stat": "median", "seeds": (0, 1, 2, 3, 4)}

TARGETS: tuple[Target, ...] = (
    Target("ga", "kibriya2023", {}, "Sphere", 10, B, 2, worst_of_10=0.48, median_of_10=0.17),
    Target("ga", "kibriya2023", {}, "Rosenbrock", 5, B, 5e03, worst_of_10=9.9e02, median_of_10=2.8e02),
    Target("ga", "kibriya2023", {}, "Rastrigin", 5, B, 10, worst_of_10=3.5, median_of_10=1.8),
    Target("ga", "kibriya2023", {}, "Ackley01", 5, B, 6.7, worst_of_10=4.4, median_of_10=2.6),
    Target("ga", "kibriya2023", {}, "Griewank", 5, B, 0.56, worst_of_10=0.46, median_of_10=0.21),
    Target("pso", "kibriya2023", _PSO, "Sphere", 10, B, 0.002, worst_of_10=0.00052, median_of_10=0.00017),
    Target("pso", "kibriya2023", _PSO, "Rosenbrock", 5, B, 2e03, worst_of_10=5.5e02, median_of_10=1.9),
    Target("pso", "kibriya2023", _PSO, "Rastrigin", 5, B, 10, worst_of_10=3, median_of_10=1.5),
    Target("pso", "kibriya2023", _PSO, "Ackley01", 5, B, 0.002, worst_of_10=0.0006, median_of_10=9.4e-05),
    Target("pso", "kibriya2023", _PSO, "Griewank", 5, B, 0.5, worst_of_10=0.23, median_of_10=0.13),
    Target("tbpso", "kibriya2023", _PSO, "Sphere", 10, B, 5, worst_of_10=2.6, median_of_10=1.2),
    Target("tbpso", "kibriya2023", _PSO, "Rosenbrock", 5, B, 5e03, worst_of_10=1.6e03, median_of_10=14),
    Target("tbpso", "kibriya2023", _PSO, "Rastrigin", 5, B, 10, **_MEDIAN5, worst_of_10=17, median_of_10=5.1),
    Target("tbpso", "kibriya2023", _PSO, "Ackley01", 5, B, 5, **_MEDIAN5, worst_of_10=18, median_of_10=2.8),
    Target("tbpso", "kibriya2023", _PSO, "Griewank", 5, B, 0.6, **_MEDIAN5, worst_of_10=0.76, median_of_10=0.37),
    Target("abc", "ding2021", {}, "Sphere", 10, B, 5, worst_of_10=3.5, median_of_10=1.1),
    Target("abc", "ding2021", {}, "Rosenbrock", 5, B, 60, **_MEDIAN5, worst_of_10=6.8e03, median_of_10=10),
    Target("abc", "ding2021", {}, "Rastrigin", 5, B, 10, worst_of_10=8.9, median_of_10=3.6),
    Target("abc", "ding2021", {}, "Ackley01", 5, B, 5, **_MEDIAN5, worst_of_10=9.3, median_of_10=3.3),
    Target("abc", "ding2021", {}, "Griewank", 5, B, 0.5, worst_of_10=0.37, median_of_10=0.21),
    Target("iabc", "ding2021", {}, "Sphere", 10, B, 0.2, worst_of_10=0.078, median_of_10=0.0086),
    Target("iabc", "ding2021", {}, "Rosenbrock", 5, B, 50, worst_of_10=16, median_of_10=4.1),
    Target("iabc", "ding2021", {}, "Rastrigin", 5, B, 12, worst_of_10=8.9, median_of_10=6.1),
    Target("iabc", "ding2021", {}, "Ackley01", 5, B, 1, worst_of_10=0.42, median_of_10=0.11),
    Target("iabc", "ding2021", {}, "Griewank", 5, B, 0.5, worst_of_10=0.31, median_of_10=0.27),
    Target("tsa", None, {}, "Sphere", 10, B, 0.02, worst_of_10=0.0047, median_of_10=0.0011),
    Target("tsa", None, {}, "Rosenbrock", 5, B, 50, worst_of_10=7.6, median_of_10=3.4),
    Target("tsa", None, {}, "Rastrigin", 5, B, 12, worst_of_10=8, median_of_10=4),
    Target("tsa", None, {}, "Ackley01", 5, B, 0.2, worst_of_10=0.041, median_of_10=0.0012),
    Target("tsa", None, {}, "Griewank", 5, B, 0.57, worst_of_10=0.38, median_of_10=0.3),
    Target("de", None, {"pop_size": 20}, "Sphere", 10, B, 0.2, worst_of_10=0.065, median_of_10=0.0079),
    Target("de", None, {"pop_size": 20}, "Rosenbrock", 5, B, 20, worst_of_10=4.9, median_of_10=2.1),
    Target("de", None, {"pop_size": 20}, "Rastrigin", 5, B, 12, worst_of_10=11, median_of_10=8),
    Target("de", None, {"pop_size": 20}, "Ackley01", 5, B, 0.02, worst_of_10=0.0056, median_of_10=0.0017),
    Target("de", None, {"pop_size": 20}, "Griewank", 5, B, 0.51, worst_of_10=0.34, median_of_10=0.24),
    Target("grade", "tight_budget", {}, "Sphere", 10, B, 9, worst_of_10=7.5, median_of_10=4.2),
    Target("grade", "tight_budget", {}, "Rosenbrock", 5, B, 2e04, worst_of_10=9.7e03, median_of_10=1.2e02),
    Target("grade", "tight_budget", {}, "Rastrigin", 5, B, 12, **_MEDIAN5, worst_of_10=22, median_of_10=8.7),
    Target("grade", "tight_budget", {}, "Ackley01", 5, B, 7, **_MEDIAN5, worst_of_10=13, median_of_10=5.4),
    Target("grade", "tight_budget", {}, "Griewank", 5, B, 0.61, worst_of_10=0.54, median_of_10=0.39),
    Target("bmo", None, {}, "Sphere", 10, B, 0.3, worst_of_10=0.13, median_of_10=0.04),
    Target("bmo", None, {}, "Rosenbrock", 5, B, 100, worst_of_10=1.8e02, median_of_10=3.3),
    Target("bmo", None, {}, "Rastrigin", 5, B, 12, worst_of_10=10, median_of_10=3.3),
    Target("bmo", None, {}, "Ackley01", 5, B, 0.3, worst_of_10=0.14, median_of_10=0.052),
    Target("bmo", None, {}, "Griewank", 5, B, 0.5, worst_of_10=0.25, median_of_10=0.17),
    Target("ltsa", None, {}, "Sphere", 10, B, 5, worst_of_10=3.3, median_of_10=1.8),
    Target("ltsa", None, {}, "Rosenbrock", 5, B, 300, worst_of_10=1.6e02, median_of_10=75),
    Target("ltsa", None, {}, "Rastrigin", 5, B, 10, **_MEDIAN5, worst_of_10=19, median_of_10=9.1),
    Target("ltsa", None, {}, "Ackley01", 5, B, 7, **_MEDIAN5, worst_of_10=20, median_of_10=13),
    Target("ltsa", None, {}, "Griewank", 5, B, 0.6, worst_of_10=0.54, median_of_10=0.35),
)


def _run(optimizer: str, preset: str | None, settings: dict, function: str, dim: int, budget: int, seed: int):
    f = get_function(function, dim)
    opt = make_optimizer(optimizer, preset, seed=seed, **settings)
    res = mc.minimize(f.fn, f.lower, f.upper, opt, max_evals=budget)
    assert res.n_evals <= budget
    return res, abs(res.best_loss - f.fglob)


# Rows whose stated (reasonable) target is not reached: kept, marked, and reported.
KNOWN_SHORT = {
    "grade-Ackley015": "GRADE tight_budget: median error over seeds 0-4 is 8.4 (worst of 10: 13), above the "
    "target of half the random-search median (7.1) on 5-D Ackley with 2000 evaluations",
}


def _params():
    for t in TARGETS:
        marks = [pytest.mark.xfail(reason=KNOWN_SHORT[t.id], strict=False)] if t.id in KNOWN_SHORT else []
        yield pytest.param(t, id=t.id, marks=marks)


@pytest.mark.parametrize("t", list(_params()))
def test_reaches_the_stated_tolerance(t: Target):
    errors = [_run(t.optimizer, t.preset, t.settings, t.function, t.dim, t.budget, s)[1] for s in t.seeds]
    value = max(errors) if t.stat == "max" else float(np.median(errors))
    assert value <= t.tol, (
        f"{t.optimizer} ({t.preset}, {t.settings}) on {t.function}-{t.dim} with {t.budget} evaluations: "
        f"errors {[f'{e:.3g}' for e in errors]} for seeds {t.seeds}, {t.stat} {value:.3g} > stated tolerance "
        f"{t.tol:g}"
    )


def _random_search_errors(function: str, dim: int, budget: int, n_runs: int = 20) -> np.ndarray:
    f = get_function(function, dim)
    out = []
    for s in range(n_runs):
        res = mc.minimize(f.fn, f.lower, f.upper, RandomSearch(batch_size=budget, seed=1000 + s), max_evals=budget)
        out.append(abs(res.best_loss - f.fglob))
    return np.array(out)


def test_targets_are_markedly_better_than_random_search():
    """Every stated tolerance is at most half the median error of 20 random-search runs at the same budget
    (one batch of ``budget`` uniform points each), so an optimiser no better than random sampling fails."""
    cache: dict[tuple, np.ndarray] = {}
    loose = []
    for t in TARGETS:
        key = (t.function, t.dim, t.budget)
        if key not in cache:
            cache[key] = _random_search_errors(*key)
        half = 0.5 * float(np.median(cache[key]))
        if not t.tol <= half:
            loose.append(f"{t.id}: tol {t.tol:g} > {half:.3g}")
    assert not loose, "targets not markedly better than random search: " + "; ".join(loose)


def test_every_registered_optimiser_has_a_target_on_each_function():
    names = {t.optimizer for t in TARGETS}
    assert names == {"ga", "pso", "tbpso", "abc", "iabc", "tsa", "de", "grade", "bmo", "ltsa"}
    functions = {(t.function, t.dim) for t in TARGETS}
    for name in names:
        assert {(t.function, t.dim) for t in TARGETS if t.optimizer == name} == functions
    assert {f for f, _ in functions} == {"Sphere", "Rosenbrock", "Rastrigin", "Ackley01", "Griewank"}
    assert all(2 <= d <= 10 for _, d in functions)


# -- GrainLearning peer test ----------------------------------------------------------------------------

GL_X = np.arange(100.0)
GL_TRUTH = (0.2, 5.0)
GL_LOWER, GL_UPPER = [0.1, 0.1], [1.0, 10.0]
GL_BUDGET = 200
GL_SEEDS = range(10)


def _gl_data() -> np.ndarray:
    a, b = GL_TRUTH
    return a * GL_X + b


def _gl_loss(y: np.ndarray):
    def loss(P: np.ndarray) -> np.ndarray:  # (n, 2) -> (n,)
        return np.sum(((P[:, :1] * GL_X + P[:, 1:2] - y) / y) ** 2, axis=1)

    return loss


def test_grainlearning_data_is_the_generated_line():
    data = np.loadtxt(shared_path("data", "granular", "grainlearning", "linear_obs.dat"))
    np.testing.assert_allclose(data[:, 0], GL_X)
    np.testing.assert_allclose(data[:, 1], _gl_data(), rtol=1e-12, atol=1e-12)


GL_CASES = [
    ("pso", "kibriya2023", {"max_iter": 19}, 5),  # 10 particles x 20 swarms = 200 evaluations
    ("tbpso", "kibriya2023", {"max_iter": 19}, 5),
    ("iabc", "small_group", {}, 5),
]


@pytest.mark.parametrize(("name", "preset", "settings", "min_pass"), GL_CASES, ids=[c[0] for c in GL_CASES])
def test_grainlearning_linear_regression_within_1_percent_in_200_evaluations(name, preset, settings, min_pass):
    loss = _gl_loss(_gl_data())
    passed = []
    for seed in GL_SEEDS:
        res = mc.minimize(
            loss, GL_LOWER, GL_UPPER, make_optimizer(name, preset, seed=seed, **settings), max_evals=GL_BUDGET
        )
        assert res.n_evals <= GL_BUDGET
        rel = np.abs(res.best_x - GL_TRUTH) / GL_TRUTH
        passed.append(bool(np.all(rel < 0.01)))
    assert sum(passed) >= min_pass, f"{name}: passes by seed {passed}, needed {min_pass} of {len(passed)}"


def test_grainlearning_case_is_out_of_reach_of_random_search():
    loss = _gl_loss(_gl_data())
    for seed in GL_SEEDS:
        res = mc.minimize(loss, GL_LOWER, GL_UPPER, RandomSearch(batch_size=GL_BUDGET, seed=seed), max_evals=GL_BUDGET)
        assert np.any(np.abs(res.best_x - GL_TRUTH) / GL_TRUTH >= 0.01)
