"""ABC and I-ABC (Ding et al. (2021) eqs. 28-35): kernels against hand-computed values, the ask/tell cycle, presets
and recovery checks."""

from __future__ import annotations

import numpy as np
import pytest

import mechcalib as mc
from mechcalib.errors import ConfigurationError
from mechcalib.optimizers import get_optimizer
from mechcalib.optimizers.abc import (
    ABC,
    IABC,
    abc_candidates,
    abc_fitness,
    draw_parents,
    draw_partners,
    greedy_select,
    iabc_candidates,
    roulette_probabilities,
    select_scouts,
    tournament_probabilities,
    tournament_scores,
)

# -- kernels ------------------------------------------------------------------------------------------


def test_fitness_eq32_negative_and_failed_losses():
    g = np.array([0.0, 1.0, 3.0, -2.0, -0.5, np.inf])
    np.testing.assert_allclose(abc_fitness(g), [1.0, 0.5, 0.25, 3.0, 1.5, 0.0])


def test_roulette_eq31_and_all_failed_is_uniform():
    np.testing.assert_allclose(roulette_probabilities([0.0, 1.0, 3.0, np.inf]), [4 / 7, 2 / 7, 1 / 7, 0.0])
    np.testing.assert_allclose(roulette_probabilities([np.inf] * 4), [0.25] * 4)
    # -inf (fitness +inf) takes the whole probability rather than producing NaN
    np.testing.assert_allclose(roulette_probabilities([1.0, -np.inf, 2.0]), [0.0, 1.0, 0.0])


def test_tournament_eq35_four_sources_by_hand():
    # source 0 (-2) beats all three: 3; source 1 (5) loses to 0 and 2, ties 3: 0.5;
    # source 2 (0) loses to 0, beats 1 and 3: 2; source 3 (5): 0.5. Sum = 4 * 3 / 2 = 6.
    g = np.array([-2.0, 5.0, 0.0, 5.0])
    np.testing.assert_allclose(tournament_scores(g), [3.0, 0.5, 2.0, 0.5])
    np.testing.assert_allclose(tournament_probabilities(g), [0.5, 1 / 12, 1 / 3, 1 / 12])
    # failed sources lose to every finite one and tie among themselves
    np.testing.assert_allclose(tournament_scores([3.0, 1.0, 3.0, np.inf]), [1.5, 3.0, 1.5, 0.0])
    np.testing.assert_allclose(tournament_probabilities([np.inf] * 3), [1 / 3] * 3)
    # a single source has no opponent: score 0, chosen with probability 1
    np.testing.assert_allclose(tournament_scores([4.0]), [0.0])
    np.testing.assert_allclose(tournament_probabilities([4.0]), [1.0])


X3 = np.array([[0.2, 0.4, 0.6], [0.5, 0.1, 0.9], [0.3, 0.3, 0.3]])


def test_eq29_one_dimension_step_by_hand():
    V = abc_candidates(X3, idx=[0, 2], k=[1, 0], phi=[0.5, -1.0], j=[2, 1])
    # row 0: x_0^2 = 0.6 + 0.5 (0.6 - 0.9) = 0.45; row 1: x_2^1 = 0.3 - 1.0 (0.3 - 0.4) = 0.4
    np.testing.assert_allclose(V, [[0.2, 0.4, 0.45], [0.3, 0.4, 0.3]])


def test_eq29_all_dimensions_and_vector_step_by_hand():
    V = abc_candidates(X3, idx=[1], k=[0], phi=[[1.0, -0.5, 0.25]])
    np.testing.assert_allclose(V, [[0.5 + 0.3, 0.1 + 0.15, 0.9 + 0.075]])
    V = abc_candidates(X3, idx=[1], k=[2], phi=[[0.5]])  # one number shared by every coordinate
    np.testing.assert_allclose(V, [[0.6, 0.0, 1.2]], atol=1e-15)


X6 = np.array([[0.1, 0.2], [0.3, 0.5], [0.6, 0.4], [0.9, 0.8], [0.2, 0.7], [0.5, 0.5]])


def test_eq34_both_branches_by_hand():
    parents = np.array([[1, 2, 3, 4, 5], [5, 4, 3, 2, 0]] + [[0, 0, 0, 0, 0]] * 4)
    k = np.array([3, 2, 0, 0, 0, 0])
    phi = np.zeros((6, 2))
    phi[0] = [0.9, -0.5]
    phi[1] = [0.25, 0.9]
    mask = np.zeros((6, 2), dtype=bool)
    mask[0] = [True, False]
    mask[1] = [False, True]
    V = iabc_candidates(X6, parents, k, phi, mask, F=0.5)
    # source 0, j = 0, DE/rand/2: 0.3 + 0.5 (0.6 - 0.9) + 0.5 (0.2 - 0.5) = 0.0
    # source 0, j = 1, local:     0.2 - 0.5 (0.2 - 0.8) = 0.5
    # source 1, j = 0, local:     0.3 + 0.25 (0.3 - 0.6) = 0.225
    # source 1, j = 1, DE/rand/2: 0.5 + 0.5 (0.7 - 0.8) + 0.5 (0.4 - 0.2) = 0.55
    np.testing.assert_allclose(V[0], [0.0, 0.5], atol=1e-15)
    np.testing.assert_allclose(V[1], [0.225, 0.55])
    np.testing.assert_allclose(V[2:], X6[2:])  # local branch with phi = 0 keeps the source
    # CR = 1 everywhere: pure DE/rand/2 rows
    V = iabc_candidates(X6, parents, k, phi, np.ones((6, 2), dtype=bool), F=0.5)
    np.testing.assert_allclose(V[1], [0.4, 0.55])


@pytest.mark.parametrize("sn", [1, 2, 3, 4, 5, 6, 9])
def test_parents_distinct_where_possible(sn):
    rng = np.random.default_rng(3)
    for _ in range(20):
        P = draw_parents(rng, sn)
        assert P.shape == (sn, 5) and P.min() >= 0 and P.max() < sn
        for i, row in enumerate(P):
            if sn >= 6:
                assert len(set(row)) == 5 and i not in row
            elif sn == 5:
                assert len(set(row)) == 5 and row[4] == i
            elif sn >= 2:
                assert row[1] != row[2] and row[3] != row[4]


def test_partners_differ_from_source():
    rng = np.random.default_rng(0)
    idx = rng.integers(4, size=500)
    k = draw_partners(rng, idx, 4)
    assert np.all(k != idx) and k.min() == 0 and k.max() == 3
    assert set(np.unique(k[idx == 2])) == {0, 1, 3}


def test_greedy_selection_eq30_and_trial_counters():
    X = np.array([[0.1], [0.2], [0.3]])
    f = np.array([1.0, 2.0, np.inf])
    trials = np.array([0, 4, 2])
    idx = np.array([0, 1, 1, 2, 0])
    V = np.array([[0.5], [0.6], [0.7], [0.8], [0.9]])
    fV = np.array([1.0, 1.5, 1.7, np.inf, 0.5])
    X2, f2, t2 = greedy_select(X, f, trials, idx, V, fV)
    # source 0: tie keeps the old (trial 1), then 0.5 wins (reset); source 1: 1.5 wins (reset), 1.7 loses
    # to the updated 1.5 (trial 1); source 2: inf does not beat inf (trial 3)
    np.testing.assert_allclose(X2, [[0.9], [0.6], [0.3]])
    np.testing.assert_allclose(f2, [0.5, 1.5, np.inf])
    np.testing.assert_array_equal(t2, [0, 1, 3])
    np.testing.assert_array_equal(trials, [0, 4, 2])  # inputs untouched


def test_select_scouts():
    t = np.array([3, 5, 5, 1])
    np.testing.assert_array_equal(select_scouts(t, 5, "one"), [1])
    np.testing.assert_array_equal(select_scouts(t, 5, "all"), [1, 2])
    assert select_scouts(t, 6, "one").size == 0 and select_scouts(t, 6, "all").size == 0


# -- the ask/tell cycle ----------------------------------------------------------------------------------


def test_batches_of_a_cycle_and_one_coordinate_employed_step():
    opt = ABC(group_size=8, seed=1).setup(3)
    assert opt.n_sources == 4 and opt._limit == 12  # eq. 33: GS * D / 2
    assert opt.next_batch_size == 4
    U0 = opt.ask()
    opt.tell(U0, np.arange(4.0))
    assert opt.next_batch_size == 4
    U1 = opt.ask()  # employed: one candidate per source, in source order
    assert np.all(np.sum(U1 != U0, axis=1) <= 1)
    opt.tell(U1, np.full(4, np.inf))
    np.testing.assert_array_equal(opt._trials, [1, 1, 1, 1])
    U2 = opt.ask()  # onlookers
    assert U2.shape == (4, 3)
    src = opt._idx
    assert np.all(np.sum(U2 != U0[src], axis=1) <= 1)
    opt.tell(U2, np.full(4, np.inf))
    np.testing.assert_array_equal(opt._trials, 1 + np.bincount(src, minlength=4))
    assert opt._cycle == 1 and opt.next_batch_size == 4  # no source at the limit: no scout batch


@pytest.mark.parametrize("scouts", ["one", "all"])
def test_scout_replaces_a_source_after_limit_failures(scouts):
    opt = ABC(group_size=6, limit=3, scouts=scouts, seed=4).setup(2)
    U = opt.ask()
    opt.tell(U, np.ones(3))
    for _ in range(20):
        opt.tell(opt.ask(), np.full(3, np.inf))  # employed: every trial fails
        before = opt._trials.copy()
        onl = opt.ask()
        opt.tell(onl, np.full(3, np.inf))  # onlookers fail too
        after = before + np.bincount(opt._idx, minlength=3)
        np.testing.assert_array_equal(opt._trials, after)
        due = np.flatnonzero(after >= 3)
        if scouts == "one":
            due = due[:0] if due.size == 0 else np.array([int(np.argmax(after))])
        if due.size:
            break
    assert due.size  # with every trial failing, a source reaches the limit within a few cycles
    assert opt.next_batch_size == due.size
    np.testing.assert_array_equal(opt._scout_idx, due)
    S = opt.ask()
    opt.tell(S, np.full(due.size, 1e9))  # a scout replaces its source even when worse
    np.testing.assert_array_equal(opt._X[due], S)
    np.testing.assert_array_equal(opt._f[due], 1e9)
    np.testing.assert_array_equal(opt._trials[due], 0)
    assert opt.next_batch_size == 3


def test_iabc_employed_candidates_in_bounds_and_reproducible():
    a = IABC(group_size=12, seed=9).setup(4)
    b = IABC(group_size=12, seed=9).setup(4)
    for opt in (a, b):
        U = opt.ask()
        opt.tell(U, np.sum(U**2, axis=1))
    Ua, Ub = a.ask(), b.ask()
    np.testing.assert_array_equal(Ua, Ub)
    assert Ua.shape == (6, 4) and Ua.min() >= 0 and Ua.max() <= 1


def test_max_cycles_stops_calibrate():
    opt = ABC(group_size=4, max_cycles=3, seed=0)
    res = mc.minimize(lambda X: np.sum(X**2, axis=1), [-1, -1], [1, 1], opt, max_evals=10_000)
    assert res.stop_reason == "converged" and opt._cycle == 3
    # 2 initial points, 3 cycles of 2 + 2 points, plus any scouts
    assert 14 <= res.n_evals <= 17


# -- settings and presets ---------------------------------------------------------------------------------


def test_registry_and_subclassing():
    assert get_optimizer("abc") is ABC and get_optimizer("iabc") is IABC
    assert issubclass(IABC, ABC)
    opt = IABC(seed=2)
    assert opt.selection == "tournament" and opt.F == 0.5 and opt.CR == 0.4
    assert opt.copy(CR=0.9).CR == 0.9


def test_paper_presets():
    p = IABC.ding2021(seed=1)
    assert (p.group_size, p.n_sources, p.max_cycles, p.F, p.CR, p.selection) == (50, 25, 500, 0.5, 0.4, "tournament")
    assert p.local_step == "vector"  # eq. 29 as printed: one random number scales a_i - a_k
    assert p.limit is None and p.setup(6)._limit == 150  # eq. 33: 50 * 6 / 2
    assert IABC.ding2021(max_cycles=10).max_cycles == 10
    a = ABC.ding2021()
    assert (a.group_size, a.max_cycles, a.selection, a.local_step) == (50, 500, "roulette", "vector")
    s = IABC.small_group()
    assert 10 <= s.group_size <= 20


@pytest.mark.parametrize(
    "cls, kw, match",
    [
        (ABC, {"group_size": 11}, "even"),
        (ABC, {"group_size": 2}, "group_size"),
        (ABC, {"limit": 0}, "limit"),
        (ABC, {"local_step": "two"}, "local_step"),
        (ABC, {"selection": "rank"}, "selection"),
        (IABC, {"CR": 1.5}, "CR"),
        (IABC, {"F": 0.0}, "F"),
    ],
)
def test_bad_settings_are_rejected(cls, kw, match):
    with pytest.raises(ConfigurationError, match=match):
        cls(**kw)


# -- recovery -----------------------------------------------------------------------------------------------

_XS = np.arange(100.0)
_YS = 0.2 * _XS + 5.0


def _line_rss(P):
    return np.sum((P[:, :1] * _XS + P[:, 1:2] - _YS) ** 2, axis=1)


def _peer_pass(opt) -> bool:
    """GrainLearning's peer test: y = a x + b, both parameters within 1 % in at most 200 evaluations."""
    res = mc.minimize(_line_rss, [0.1, 0.1], [1.0, 10.0], opt, max_evals=200)
    assert res.n_evals <= 200
    return bool(np.all(np.abs(res.best_x - [0.2, 5.0]) / [0.2, 5.0] < 0.01))


def test_peer_linear_fit_iabc_small_group():
    # one seeded run; the pass rate over seeds is about 2 in 3 (next test)
    assert _peer_pass(IABC.small_group(seed=3))


def test_peer_linear_fit_pass_counts_iabc_vs_abc():
    # measured over seeds 0..199: I-ABC small group 127 passes, ABC small group 5; over 0..19: 12 and 1
    iabc = sum(_peer_pass(IABC.small_group(seed=s)) for s in range(20))
    abc = sum(_peer_pass(ABC.small_group(seed=s)) for s in range(20))
    assert iabc >= 10
    assert iabc >= abc + 8


def test_iabc_reaches_1e_6_on_3d_sphere():
    res = mc.minimize(
        lambda X: np.sum((X - 0.7) ** 2, axis=1), [-5.0] * 3, [5.0] * 3, IABC.ding2021(seed=0), max_evals=2500
    )
    assert res.best_loss < 1e-6
    np.testing.assert_allclose(res.best_x, 0.7, atol=1e-3)


def test_failed_evaluations_do_not_stall_selection():
    opt = IABC(group_size=8, seed=0).setup(2)
    U = opt.ask()
    opt.tell(U, np.full(4, np.inf))  # every initial source failed
    for _ in range(12):
        U = opt.ask()
        f = np.sum((U - 0.5) ** 2, axis=1)
        f[::2] = np.nan
        opt.tell(U, f)
    assert np.isfinite(opt.best_f) and np.isfinite(opt._f).any()
