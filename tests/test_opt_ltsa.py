"""Tree-seed algorithm with Lévy-flight steps: Mantegna's step by hand, one iteration by hand, quality."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechcalib.errors import ConfigurationError
from mechcalib.optimizers import LevyTSA, get_optimizer
from mechcalib.optimizers.ltsa import levy_steps, mantegna_sigma
from mechcalib.optimizers.tsa import draw_other_trees, seed_counts


def test_mantegna_sigma_by_hand():
    # beta = 1.5: Gamma(2.5) sin(0.75 pi) / (Gamma(1.25) 1.5 2^0.25), to the power 1/1.5
    num = 1.329340388179137 * math.sin(0.75 * math.pi)
    den = 0.906402477055477 * 1.5 * 2**0.25
    assert mantegna_sigma(1.5) == pytest.approx((num / den) ** (1 / 1.5), rel=1e-12)
    assert mantegna_sigma(1.5) == pytest.approx(0.6966, abs=1e-4)
    assert mantegna_sigma(1.0) == pytest.approx(1.0)  # Cauchy: sin(pi/2) Gamma(2) / (Gamma(1) 1 2^0)


def test_levy_steps_by_hand():
    # u = 1, v = -4, beta = 1.5: sigma * 1 / 4^(2/3)
    s = levy_steps(np.array([1.0, -2.0]), np.array([-4.0, 1.0]), 1.5, scale=2.0)
    np.testing.assert_allclose(s, [2 * 0.696574502557 / 4 ** (2 / 3), 2 * 0.696574502557 * -2.0], rtol=1e-9)


def test_one_iteration_against_a_hand_computation():
    """The first seeds follow Kiran's eqs. 3-4 with the Lévy step replayed from the same random stream."""
    opt = LevyTSA(n_trees=4, seed=7).setup(2)
    T = opt.ask()
    fT = np.array([3.0, 1.0, 2.0, 4.0])
    opt.tell(T, fT)
    S = opt.ask()
    # replay the draws of _prepare from a copy of the generator state before the ask
    rng = np.random.default_rng(7)
    rng.random((4, 2))  # the initial trees
    ns = seed_counts(rng.random(4), *opt.seed_range)
    owner = np.repeat(np.arange(4), ns)
    other = draw_other_trees(owner, rng.random(owner.size), 4)
    u = rng.standard_normal((owner.size, 2))
    v = rng.standard_normal((owner.size, 2))
    use_best = rng.random((owner.size, 2)) < 0.1
    L = 0.6965745025576967 * u / np.abs(v) ** (1 / 1.5)
    expected = np.empty((owner.size, 2))
    for s, (i, r) in enumerate(zip(owner, other, strict=True)):
        for j in range(2):
            ref = T[1, j] if use_best[s, j] else T[i, j]  # tree 1 is the best (loss 1.0)
            expected[s, j] = min(max(T[i, j] + L[s, j] * (ref - T[r, j]), 0.0), 1.0)
    np.testing.assert_allclose(S, expected, rtol=1e-12, atol=1e-15)


def test_registered_and_settings_checked():
    assert get_optimizer("ltsa") is LevyTSA
    with pytest.raises(ConfigurationError):
        LevyTSA(beta=2.5)
    with pytest.raises(ConfigurationError):
        LevyTSA(levy_scale=0.0)
    assert LevyTSA(beta=1.2).copy(seed=3).beta == 1.2


def test_reaches_the_sphere_minimum():
    opt = LevyTSA(seed=0).setup(3)
    while opt.n_evals < 3000:
        U = opt.ask()
        opt.tell(U, np.sum((U - 0.3) ** 2, axis=1))
    assert opt.best_f < 1e-8
