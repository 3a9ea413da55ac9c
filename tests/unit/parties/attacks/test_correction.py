"""Reconstruction correction: Theorem 1 (general = efficient), the slices, multi-valued A, errors."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.attacks.solvers.correction import (
    BAD_CONFIDENCE,
    BAD_GROUPS,
    BAD_METRIC,
    BAD_N1,
    BAD_SHAPES,
    BAD_SOLVER,
    ENUMERATION_BINARY,
    INFEASIBLE,
    NEEDS_LABELS,
    OPTIMAL,
    FairnessConstraint,
    correct,
    solve_efficient,
    solve_enumeration,
    solve_general,
    solve_released_sp,
)
from parley.protocols.errors import AttackError, QueryError
from parley.protocols.group_gaps import BAD_GAP_METRIC, metric_slices, slice_gap, unfairness


def _instance(rng: np.random.Generator, n: int, groups: int = 2):
    return (rng.integers(0, groups, n), rng.random(n), rng.integers(0, 2, n), rng.integers(0, 2, n))


@pytest.mark.parametrize("groups", [2, 3])
def test_theorem1_general_and_efficient_reach_the_same_optimum(groups):
    """Thm. 1: on random small instances both models are infeasible together or share the optimal objective.

    Half the constraints are arbitrary tolerances (binary A, where proving infeasibility is quick), half
    the unfairness under a hidden true A (always feasible, as a certified value is).
    """
    rng = np.random.default_rng(11 + groups)
    optimal = 0
    for trial in range(24):
        a0, w, yhat, y = _instance(rng, int(rng.integers(8, 40)), groups)
        metric = str(rng.choice(["sp", "pe", "eo", "eodds"]))
        if trial % 2 and groups == 2:
            tolerance = float(rng.choice([0.0, 0.03, 0.1, 0.25]))
        else:
            tolerance = unfairness(metric, yhat, rng.integers(0, groups, a0.size), y, groups)
        constraint = FairnessConstraint(metric, tolerance)
        efficient = solve_efficient(a0, w, yhat, constraint, y, groups)
        general = solve_general(a0, w, yhat, constraint, y, groups)
        assert efficient.status == general.status
        if efficient.status == OPTIMAL:
            optimal += 1
            assert efficient.objective == pytest.approx(general.objective, abs=1e-9)
            # Both are fair under the constraint, and the objective is the confidence of what changed.
            for fixed in (efficient, general):
                assert unfairness(constraint.metric, yhat, fixed.a, y, groups) <= constraint.tolerance + 1e-9
                assert fixed.objective == pytest.approx(w[fixed.a != a0].sum(), abs=1e-12)
    assert optimal >= 10  # the comparison is not vacuous


def test_enumeration_solves_the_efficient_model_exactly():
    rng = np.random.default_rng(5)
    for _ in range(40):
        a0, w, yhat, y = _instance(rng, int(rng.integers(5, 60)))
        constraint = FairnessConstraint(str(rng.choice(["sp", "pe", "eo", "eodds"])),
                                        float(rng.choice([0.0, 0.05, 0.2])))
        highs = solve_efficient(a0, w, yhat, constraint, y)
        exact = solve_enumeration(a0, w, yhat, constraint, y)
        assert highs.status == exact.status
        if exact.status == OPTIMAL:
            assert exact.objective == pytest.approx(highs.objective, abs=1e-9)


def test_exact_parity_found_where_it_exists():
    """Tolerance 0 on 2,000 rows: parity needs N_1 a multiple of N / gcd(N, P); the enumeration finds it."""
    rng = np.random.default_rng(0)
    n = 2000
    a0, w, yhat = rng.integers(0, 2, n), rng.random(n), (rng.random(n) < 0.3).astype(int)
    fixed = correct(a0, w, yhat, FairnessConstraint("sp", 0.0))
    assert fixed.status == OPTIMAL
    assert unfairness("sp", yhat, fixed.a) <= 1e-9


def test_the_cheapest_guesses_move_first():
    # Four positives all guessed a=1, four negatives all a=0. Parity: two groups of four with two positives
    # each (cost 0.1 + 0.7 + 0.2 + 0.6 = 1.6) beats sizes 2/6 (1.8) and 6/2 (1.75). The corrector must abandon
    # the two least confident guesses of each cell.
    a0 = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    yhat = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    w = np.array([0.9, 0.1, 0.8, 0.7, 0.95, 0.2, 0.85, 0.6])
    fixed = correct(a0, w, yhat, FairnessConstraint("sp", 0.0))
    assert fixed.status == OPTIMAL and fixed.changed == 4
    assert set(np.flatnonzero(fixed.a != a0)) == {1, 3, 5, 7}
    assert fixed.objective == pytest.approx(1.6)


def test_a_fair_guess_is_left_alone():
    rng = np.random.default_rng(2)
    a0, w, yhat, y = _instance(rng, 300)
    bound = unfairness("eodds", yhat, a0, y)
    fixed = correct(a0, w, yhat, FairnessConstraint("eodds", bound), y)
    assert fixed.status == OPTIMAL and fixed.changed == 0 and fixed.objective == 0.0


def test_slices_touch_only_their_labels():
    rng = np.random.default_rng(3)
    a0, w, yhat, y = _instance(rng, 400)
    for metric, untouched in (("pe", 1), ("eo", 0)):
        fixed = correct(a0, w, yhat, FairnessConstraint(metric, 0.0), y)
        assert fixed.status == OPTIMAL and fixed.changed > 0
        assert np.array_equal(fixed.a[y == untouched], a0[y == untouched])


def test_infeasible_constraint_returns_the_guess():
    # One positive among three rows: exact parity needs a group of size 0 or 3, which (7)-(8) forbid.
    a0, w, yhat = np.array([0, 1, 1]), np.ones(3), np.array([1, 0, 0])
    for solver in ("enumeration", "highs", "cp-sat"):
        fixed = correct(a0, w, yhat, FairnessConstraint("sp", 0.0), solver=solver)
        assert fixed.status == INFEASIBLE and np.array_equal(fixed.a, a0) and fixed.changed == 0


def test_multi_valued_a_meets_the_constraint():
    rng = np.random.default_rng(4)
    a0, w, yhat, y = _instance(rng, 600, groups=3)
    fixed = correct(a0, w, yhat, FairnessConstraint("sp", 0.02), y, groups=3)
    assert fixed.status == OPTIMAL
    assert unfairness("sp", yhat, fixed.a, y, 3) <= 0.02 + 1e-9 < unfairness("sp", yhat, a0, y, 3)


def test_group_gap_is_rate_against_slice_rate():
    yhat, a = np.array([1, 1, 0, 0, 1, 0]), np.array([1, 1, 1, 0, 0, 0])
    assert slice_gap(yhat, a) == pytest.approx(abs(2 / 3 - 1 / 2))
    y = np.array([0, 1, 0, 1, 0, 1])
    assert [m.tolist() for m in metric_slices("eodds", y, 6)] == [(y == 0).tolist(), (y == 1).tolist()]


@pytest.mark.parametrize("call, message", [
    (lambda: FairnessConstraint("dp", 0.1), BAD_METRIC.format(known="sp, pe, eo, eodds", metric="dp")),
    (lambda: correct(np.zeros(3), np.ones(3), np.ones(3), FairnessConstraint("eo", 0.1)),
     NEEDS_LABELS.format(metric="eo")),
    (lambda: correct(np.zeros(3), np.ones(2), np.ones(3), FairnessConstraint("sp", 0.1)),
     BAD_SHAPES.format(shapes=[(3,), (2,), (3,)])),
    (lambda: correct(np.array([0, 2]), np.ones(2), np.ones(2), FairnessConstraint("sp", 0.1)),
     BAD_GROUPS.format(top=1, values=[0, 2])),
    (lambda: correct(np.zeros(2), np.array([1.0, -1.0]), np.ones(2), FairnessConstraint("sp", 0.1)),
     BAD_CONFIDENCE),
    (lambda: correct(np.zeros(2), np.ones(2), np.ones(2), FairnessConstraint("sp", 0.1), solver="cp"),
     BAD_SOLVER.format(known="auto, enumeration, highs, cp-sat", solver="cp")),
    (lambda: correct(np.zeros(2), np.ones(2), np.ones(2), FairnessConstraint("sp", 0.1), groups=3,
                     solver="enumeration"), ENUMERATION_BINARY.format(groups=3)),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(AttackError) as info:
        call()
    assert str(info.value) == message


def test_unknown_gap_metric_is_a_query_error():
    with pytest.raises(QueryError, match="metric must be one of"):
        unfairness("prp", np.ones(2), np.ones(2))
    assert BAD_GAP_METRIC.startswith("metric must be one of")


def test_released_sp_correction_matches_brute_force():
    """Signed SP released for a model, N_1 known: the enumeration finds the brute-force optimum."""
    import itertools

    rng = np.random.default_rng(8)
    feasible = 0
    for _ in range(60):
        n = int(rng.integers(3, 9))
        a0, w, h = rng.integers(0, 2, n), rng.random(n), rng.integers(0, 2, n)
        n1, value, slack = int(rng.integers(1, n)), float(rng.uniform(-0.6, 0.6)), float(rng.choice([0.0, 0.1, 0.3]))
        best = np.inf
        for bits in itertools.product((0, 1), repeat=n):
            a = np.array(bits)
            if a.sum() == n1 and abs(h[a == 1].mean() - h[a == 0].mean() - value) <= slack + 1e-9:
                best = min(best, w[a != a0].sum())
        fixed = solve_released_sp(a0, w, h, value, slack, n1)
        if np.isinf(best):
            assert fixed.status == INFEASIBLE and np.array_equal(fixed.a, a0)
        else:
            feasible += 1
            assert fixed.status == OPTIMAL and fixed.objective == pytest.approx(best, abs=1e-12)
            assert fixed.a.sum() == n1
    assert feasible >= 15
    with pytest.raises(AttackError) as info:
        solve_released_sp(np.zeros(4), np.ones(4), np.ones(4), 0.0, 0.1, 4)
    assert str(info.value) == BAD_N1.format(n1=4, n=4)
