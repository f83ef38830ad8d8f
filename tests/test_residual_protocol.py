"""The declared residual protocol (ResidualOptimizer, ProblemBase's residual capability), the planned next
batch of least squares, and settings read from the constructors."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import mechcalib as mc
from engine_helpers import CountingProblem, linear_problem
from mechcalib.calibrate import Persistence
from mechcalib.core.problem import FunctionProblem, ProblemBase, residual_problem, residual_source
from mechcalib.errors import ConfigurationError
from mechcalib.optimizers import get_optimizer
from mechcalib.optimizers.auto import Auto
from mechcalib.optimizers.cmaes import CMAES
from mechcalib.optimizers.least_squares import LeastSquares, LeastSquaresLM, LeastSquaresTRF
from mechcalib.optimizers.residual import ResidualOptimizer
from mechcalib.uncertainty.engine import JacobianDriver

TARGET = np.array([0.3, 0.7, 0.55])


def _residuals(U: np.ndarray) -> np.ndarray:
    return np.hstack([U - TARGET, 0.5 * (U[:, :1] - TARGET[0]) ** 2])


def test_the_residual_methods_share_one_declared_base():
    for cls in (Auto, LeastSquares, LeastSquaresTRF, LeastSquaresLM, JacobianDriver):
        assert issubclass(cls, ResidualOptimizer)
    assert not issubclass(CMAES, ResidualOptimizer)
    for cls in (Auto, LeastSquares, JacobianDriver):  # the hooks are declared once, on the base
        assert "tell" not in vars(cls)
        assert not hasattr(cls, "needs_residuals")


def test_the_problem_declares_its_residual_capability():
    prob = linear_problem(keep_responses=False)
    assert residual_problem(prob) is prob and residual_source(prob) == prob.objective.name
    kept = prob.keeping_responses("measured")
    assert kept is not prob and kept.keep_responses == "measured"
    assert kept.keeping_responses(True) is kept  # already keeping: unchanged
    fn = FunctionProblem.from_bounds(lambda x: np.sum(x**2, axis=1), [0.0], [1.0])
    assert not fn.has_residuals and residual_problem(fn) is None and fn.keeping_responses(True) is fn
    with pytest.raises(ConfigurationError, match="no residual vectors"):
        fn.residuals_from_responses([None])
    assert residual_problem(CountingProblem()) is None  # ProblemLike only: no residuals
    assert residual_source(CountingProblem()) == "CountingProblem"
    assert isinstance(fn, ProblemBase)


def test_prepare_problem_keeps_the_measured_channels():
    prob = linear_problem(keep_responses=False)
    for opt in (Auto(seed=0), LeastSquaresTRF(seed=0)):
        assert opt.prepare_problem(prob, max_evals=100).keep_responses == "measured"
    assert JacobianDriver(x0=[0.5, 0.5]).prepare_problem(prob, max_evals=None).keep_responses is True
    with pytest.raises(ConfigurationError, match="raise max_evals"):
        LeastSquaresTRF(seed=0).prepare_problem(prob, max_evals=2)


def _drive(opt: ResidualOptimizer, batches: int, peek: bool) -> tuple[list, list]:
    opt.setup(3)
    asked, flags = [], []
    for _ in range(batches):
        n = opt.next_batch_size if peek else None  # planned before `converged` is read
        if peek:
            assert opt.next_batch_size == n  # idempotent
        flags.append(opt.converged)
        if opt.converged:
            break
        U = opt.ask()
        assert n is None or U.shape[0] == n
        R = _residuals(U)
        opt.tell(U, np.sum(R**2, axis=1), residuals=R)
        asked.append(U.copy())
    return asked, flags


@pytest.mark.parametrize(
    "make",
    [
        lambda: LeastSquaresTRF(seed=3),
        lambda: LeastSquaresLM(seed=3),
        lambda: LeastSquares(n_starts=2, restart=False, seed=3),
        lambda: LeastSquares(n_starts=1, restart=True, max_nfev=3, seed=3),
        lambda: Auto(seed=3),
    ],
)
def test_next_batch_size_leaves_the_run_unchanged(make):
    plain, plain_flags = _drive(make(), 40, peek=False)
    peeked, peeked_flags = _drive(make(), 40, peek=True)
    assert plain_flags == peeked_flags
    assert len(plain) == len(peeked)
    for a, b in zip(plain, peeked, strict=True):
        assert np.array_equal(a, b)


def test_withdraw_forgets_the_asked_batch():
    opt = LeastSquaresTRF(seed=0).setup(3)
    U = opt.ask()
    opt.withdraw()
    with pytest.raises(ConfigurationError, match="without a pending"):
        opt.tell(U, np.zeros(len(U)))
    assert opt.ask().shape[1] == 3


def test_settings_are_the_constructor_parameters():
    opt = CMAES(seed=1)
    before = opt.settings()
    opt.note = "not a setting"  # a public attribute that is no constructor parameter
    assert opt.settings() == before
    for name in ("ga", "pso", "tbpso", "abc", "tsa", "bmo", "de", "grade", "cmaes", "random", "lsq", "auto"):
        cls = get_optimizer(name)
        params = set()
        for klass in cls.__mro__:
            if "__init__" in vars(klass) and klass is not object:
                params |= set(list(inspect.signature(klass.__init__).parameters)[1:])
        assert set(cls(seed=0).settings()) <= params


def test_persistence_checks_checkpoint_every():
    with pytest.raises(ConfigurationError, match="checkpoint_every"):
        Persistence(checkpoint_every=-1)
    prob = FunctionProblem.from_bounds(lambda x: np.sum(x**2, axis=1), [0.0], [1.0])
    with pytest.raises(ConfigurationError, match="checkpoint_every"):
        mc.calibrate(prob, CMAES(seed=0), max_evals=10, checkpoint_every=True)
