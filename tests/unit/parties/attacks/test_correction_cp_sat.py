"""CP-SAT corrector: agrees with the exact solvers, exact integer rows and weights, and the exponent tie-break."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from parley.parties.attacks.base import AttackerView
from parley.parties.attacks.reconstruction_correction.attack import (
    DECLINED_STATUS,
    BlackBoxKnowledge,
    ReconstructionCorrection,
    ReconstructionCorrectionParams,
)
from parley.parties.attacks.reconstruction_correction.baseline_adversary import BaselineGuess, choose_exponent
from parley.parties.attacks.solvers.correction import (
    BAD_BACKEND,
    BAD_BITS,
    BAD_HINT,
    INFEASIBLE,
    OPTIMAL,
    SLACK,
    FairnessConstraint,
    correct,
    integer_weights,
    rational_tolerance,
    solve_efficient,
    solve_enumeration,
    solve_general,
)
from parley.protocols.errors import AttackError
from parley.protocols.group_gaps import unfairness

METRICS = ("sp", "pe", "eo", "eodds")


def _instance(rng: np.random.Generator, n: int, groups: int = 2):
    return rng.integers(0, groups, n), rng.random(n), rng.integers(0, 2, n), rng.integers(0, 2, n)


def _brute_force(a0, w, yhat, y, constraint, groups):
    """The exact optimum over every assignment (tiny n): the referee of all solvers."""
    best = np.inf
    for bits in itertools.product(range(groups), repeat=a0.size):
        a = np.array(bits)
        if any(np.sum(mask & (a == g)) == 0 for mask in _slice_masks(constraint.metric, y) for g in range(groups)):
            continue  # constraints (7)-(8): every group non-empty on every slice
        if unfairness(constraint.metric, yhat, a, y, groups) <= constraint.tolerance + SLACK:
            best = min(best, float(w[a != a0].sum()))
    return best


def _slice_masks(metric, y):
    return {"sp": [np.ones(y.size, bool)], "pe": [y == 0], "eo": [y == 1], "eodds": [y == 0, y == 1]}[metric]


@pytest.mark.parametrize("metric", METRICS)
def test_cp_sat_agrees_with_enumeration_and_highs_binary(metric):
    """Both CP-SAT models, HiGHS and the enumeration: same status, same optimum (within CP-SAT's bound)."""
    rng = np.random.default_rng(21 + METRICS.index(metric))
    optimal = infeasible = 0
    for trial in range(12):
        a0, w, yhat, y = _instance(rng, int(rng.integers(6, 50)))
        tolerance = (0.0, 0.02, 0.1, unfairness(metric, yhat, rng.integers(0, 2, a0.size), y))[trial % 4]
        constraint = FairnessConstraint(metric, tolerance)
        exact = solve_enumeration(a0, w, yhat, constraint, y)
        others = [solve_efficient(a0, w, yhat, constraint, y), solve_general(a0, w, yhat, constraint, y),
                  solve_general(a0, w, yhat, constraint, y, backend="cp-sat"),
                  solve_efficient(a0, w, yhat, constraint, y, backend="cp-sat")]
        for other in others:
            assert other.status == exact.status
            if exact.status == OPTIMAL:
                assert abs(other.objective - exact.objective) <= other.bound + 1e-9
                assert unfairness(metric, yhat, other.a, y) <= tolerance + 1e-9
        optimal += exact.status == OPTIMAL
        infeasible += exact.status == INFEASIBLE
    assert optimal >= 6 and infeasible >= 1  # both outcomes are compared


@pytest.mark.parametrize("groups", [2, 3])
def test_cp_sat_matches_brute_force(groups):
    """Tiny instances, every assignment tried: CP-SAT's optimum is the true one, K = 2 and K = 3, tolerance 0 incl."""
    rng = np.random.default_rng(40 + groups)
    feasible = infeasible = 0
    for trial in range(10):
        a0, w, yhat, y = _instance(rng, 7 if groups == 3 else 10, groups)
        metric = METRICS[trial % 4]
        tolerance = (0.0, 0.05, unfairness(metric, yhat, rng.integers(0, groups, a0.size), y, groups))[trial % 3]
        constraint = FairnessConstraint(metric, tolerance)
        best = _brute_force(a0, w, yhat, y, constraint, groups)
        for fixed in (solve_general(a0, w, yhat, constraint, y, groups, backend="cp-sat"),
                      solve_efficient(a0, w, yhat, constraint, y, groups, backend="cp-sat"),
                      correct(a0, w, yhat, constraint, y, groups)):
            if np.isinf(best):
                assert fixed.status == INFEASIBLE and np.array_equal(fixed.a, a0)
            else:
                assert fixed.status == OPTIMAL and abs(fixed.objective - best) <= fixed.bound + 1e-12
        feasible += not np.isinf(best)
        infeasible += bool(np.isinf(best))
    assert feasible >= 3 and infeasible >= 1


def test_cp_sat_solves_three_groups_at_tolerance_zero_where_highs_stops():
    """K = 3, tolerance 0: CP-SAT (the default) proves an optimum and it meets exact parity."""
    rng = np.random.default_rng(7)
    n = 300
    a0, w, yhat, y = _instance(rng, n, 3)
    fixed = correct(a0, w, yhat, FairnessConstraint("sp", 0.0), y, groups=3)
    assert fixed.status == OPTIMAL and unfairness("sp", yhat, fixed.a, y, 3) <= 1e-12
    general = solve_general(a0, w, yhat, FairnessConstraint("sp", 0.0), y, 3, backend="cp-sat", time_limit=120)
    assert general.status == OPTIMAL and abs(general.objective - fixed.objective) <= 1e-9


@pytest.mark.parametrize("groups", [2, 3])
def test_general_model_variants_keep_the_plain_models_optimum(groups):
    """Cell-count rows, dominance, the tuned parameters and a hint: each variant of the CP-SAT general model
    reaches exactly the optimum of the plain model (rows over the examples, no dominance, CP-SAT defaults).

    Weights are multiples of 1/1024, so the integer weights are exact and the objectives compare bit for bit.
    """
    rng = np.random.default_rng(70 + groups)
    optimal = infeasible = 0
    for trial in range(12):
        n = int(rng.integers(12, 40 if groups == 2 else 24))
        a0, _, yhat, y = _instance(rng, n, groups)
        w = rng.integers(1, 1025, n) / 1024.0
        metric = METRICS[trial % 4]
        tolerance = (0.0, 0.05, unfairness(metric, yhat, rng.integers(0, groups, n), y, groups))[trial % 3]
        constraint = FairnessConstraint(metric, tolerance)
        plain = solve_general(a0, w, yhat, constraint, y, groups, backend="cp-sat", dominance=False,
                              cell_counts=False, parameters={})
        variants = [
            solve_general(a0, w, yhat, constraint, y, groups, backend="cp-sat"),  # the defaults: all levers on
            solve_general(a0, w, yhat, constraint, y, groups, backend="cp-sat", dominance=False),
            solve_general(a0, w, yhat, constraint, y, groups, backend="cp-sat", cell_counts=False),
            solve_general(a0, w, yhat, constraint, y, groups, backend="cp-sat", parameters={}),
            solve_general(a0, w, yhat, constraint, y, groups, backend="cp-sat", hint=a0),  # a poor warm start
            solve_general(a0, w, yhat, constraint, y, groups, backend="cp-sat", workers=2),
        ]
        for fixed in variants:
            assert fixed.status == plain.status
            if plain.status == OPTIMAL:
                assert fixed.bound == 0.0 and fixed.objective == plain.objective
                assert unfairness(metric, yhat, fixed.a, y, groups) <= tolerance + SLACK
        optimal += plain.status == OPTIMAL
        infeasible += plain.status == INFEASIBLE
    assert optimal >= 6 and infeasible >= 1  # both outcomes are compared


@pytest.mark.parametrize("N, P", [(7, 3), (12, 5), (10, 0), (9, 9), (30, 11), (17, 8)])
def test_rational_tolerance_admits_exactly_what_the_real_tolerance_admits(N, P):
    """Every count pair (N_g, P_g): |N P_g - P N_g| <= q N N_g iff it holds with e = tolerance + SLACK, exactly."""
    # Tolerances sitting on, just below and just above attainable gaps, where a rounding would show.
    gaps = sorted({Fraction(abs(N * p - P * m), N * m) for m in range(1, N) for p in range(m + 1)})
    tolerances = [0.0, 0.013, 0.25, 1.0]
    for gap in gaps[:6] + gaps[-3:]:
        tolerances += [float(gap), float(gap) - SLACK, float(gap) - 2 * SLACK, float(gap) + 1e-12]
    for tolerance in (t for t in tolerances if t >= 0):
        q = rational_tolerance(N, P, tolerance)
        e = Fraction(tolerance) + Fraction(SLACK)
        for m in range(1, N):
            for p in range(m + 1):
                assert (abs(N * p - P * m) <= q * N * m) == (abs(N * p - P * m) <= e * N * m), (tolerance, m, p)
        assert q.denominator <= N * N  # small integer rows


def test_rational_tolerance_zero_is_exact_parity_until_the_slack_admits_a_gap():
    assert rational_tolerance(15_000, 4_500, 0.0) == 0
    # N = 40,000: 1 / (N (N - 1)) < 1e-9, so the slack admits |N P_g - P N_g| = 1 at the largest groups,
    # as the floating-point models do; q admits exactly that.
    N, P = 40_000, 12_001
    q, e = rational_tolerance(N, P, 0.0), Fraction(SLACK)
    assert q > 0  # some non-zero gap is admitted, as with the real slack
    admitted = 0
    # Group sizes with |N P_g - P N_g| = 1 (P m = -+1 mod N) and the smallest ones: the slack reaches the former.
    ones = [(-pow(P, -1, N)) % N, pow(P, -1, N) % N]
    assert any(m * N * e >= 1 for m in ones)
    for m in [*range(1, 500), *(k for one in ones for k in range(one - 50, one + 50) if 1 <= k < N)]:
        for p in ((P * m) // N - 1, (P * m) // N, (P * m) // N + 1, (P * m) // N + 2):  # the smallest gaps
            if 0 <= p <= m:
                gap = abs(N * p - P * m)
                assert (gap <= q * N * m) == (gap <= e * N * m)
                admitted += 0 < gap <= e * N * m
    assert admitted > 0


def test_integer_weights_are_exact_on_dyadic_weights():
    """Weights k / 1024: the scaling is exact (bound 0) and CP-SAT's objective equals the enumeration's bit for bit."""
    rng = np.random.default_rng(3)
    for _ in range(6):
        a0, _, yhat, y = _instance(rng, 60)
        w = rng.integers(1, 1025, 60) / 1024.0
        W, scale, bound = integer_weights(w)
        assert bound == 0.0 and np.array_equal(W / scale, w)
        constraint = FairnessConstraint("sp", 0.0)
        exact = solve_enumeration(a0, w, yhat, constraint, y)
        for fixed in (solve_general(a0, w, yhat, constraint, y, backend="cp-sat"),
                      solve_efficient(a0, w, yhat, constraint, y, backend="cp-sat")):
            assert fixed.status == exact.status
            assert fixed.status != OPTIMAL or (fixed.bound == 0.0 and fixed.objective == exact.objective)


def test_coarse_integer_weights_stay_within_the_stated_bound():
    """With 3 bits the rounding changes which solution is cheapest; the real cost stays within ``bound``."""
    rng = np.random.default_rng(9)
    above = 0
    for _ in range(40):
        a0, w, yhat, y = _instance(rng, 30)
        constraint = FairnessConstraint("sp", 0.0)
        exact = solve_enumeration(a0, w, yhat, constraint, y)
        coarse = solve_general(a0, w, yhat, constraint, y, backend="cp-sat", weight_bits=3)
        assert coarse.status == exact.status
        if exact.status == OPTIMAL:
            assert coarse.bound > 0 and exact.objective - 1e-12 <= coarse.objective <= exact.objective + coarse.bound
            above += coarse.objective > exact.objective + 1e-9
    assert above >= 1  # the bound is needed: rounding did pick a worse solution


def test_integer_weights_bound_is_the_rounding_error():
    w = np.array([1.0, 0.3, 0.7, 1e-30])
    W, scale, bound = integer_weights(w, bits=8)
    assert scale == 2.0**7 and W.tolist() == [128, 38, 90, 0]  # 1.0 -> 2**7: the top lies in [2**7, 2**8)
    assert bound == pytest.approx(abs(0.3 - 38 / 128) + abs(0.7 - 90 / 128) + 1e-30, rel=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda: solve_general(np.zeros(2), np.ones(2), np.ones(2), FairnessConstraint("sp", 0.1), backend="cplex"),
     BAD_BACKEND.format(known="highs, cp-sat", backend="cplex")),
    (lambda: solve_efficient(np.zeros(2), np.ones(2), np.ones(2), FairnessConstraint("sp", 0.1), backend="cp-sat",
                             weight_bits=0), BAD_BITS.format(top=60, bits=0)),
    (lambda: solve_general(np.zeros(3), np.ones(3), np.ones(3), FairnessConstraint("sp", 0.1), backend="cp-sat",
                           hint=np.array([0, 2, 1])), BAD_HINT.format(n=3, top=1, shape=(3,))),
    (lambda: solve_general(np.zeros(3), np.ones(3), np.ones(3), FairnessConstraint("sp", 0.1), backend="cp-sat",
                           hint=np.zeros(2, dtype=int)), BAD_HINT.format(n=3, top=1, shape=(2,))),
])
def test_bad_backend_input_is_named(call, message):
    with pytest.raises(AttackError) as info:
        call()
    assert str(info.value) == message


def test_exponent_ties_with_the_baseline_decline_the_correction():
    """The measured failure: the validation guess already meets its constraint, every exponent leaves it as it
    is and ties with the baseline. The earlier rule then corrected the training set with exponent 1; now the
    correction declines."""
    rng = np.random.default_rng(12)
    n = 400
    a, y = rng.integers(0, 2, n), rng.integers(0, 2, n)
    yhat = rng.integers(0, 2, n)
    # Mistakes in pairs that swap a positive of each group: the guess has the true group counts.
    guess = a.copy()
    pos1, pos0 = np.flatnonzero((yhat == 1) & (a == 1))[:15], np.flatnonzero((yhat == 1) & (a == 0))[:15]
    guess[pos1], guess[pos0] = 0, 1
    assert unfairness("sp", yhat, guess) == pytest.approx(unfairness("sp", yhat, a))
    choice = choose_exponent(BaselineGuess(guess, 0.5 + 0.5 * rng.random(n)), a, yhat, y, "sp", (1.0, 2.0, 8.0))
    assert set(choice.scores.values()) == {choice.baseline} and set(choice.changed.values()) == {0}
    assert choice.declined and choice.exponent is None


def test_chosen_exponent_never_lowers_validation_accuracy():
    """Over random guesses: an exponent is chosen only when its validation accuracy beats the baseline."""
    rng = np.random.default_rng(13)
    chosen = declined = 0
    for _ in range(30):
        n = int(rng.integers(60, 300))
        a, y, yhat = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 2, n)
        base = BaselineGuess(np.where(rng.random(n) < 0.25, 1 - a, a), 0.5 + 0.5 * rng.random(n))
        choice = choose_exponent(base, a, yhat, y, str(rng.choice(METRICS)), (1.0, 4.0, 16.0))
        if choice.declined:
            declined += 1
            assert max(choice.scores.values()) <= choice.baseline
        else:
            chosen += 1
            assert choice.exponent is not None and choice.scores[choice.exponent] > choice.baseline
            ties = [e for e, s in choice.scores.items() if s == choice.scores[choice.exponent]]
            assert choice.changed[choice.exponent] == min(choice.changed[e] for e in ties)
    assert chosen >= 3 and declined >= 3


def test_a_declined_correction_keeps_the_baseline_and_says_so():
    """A perfect baseline cannot be beaten on the validation part: the attack declines and reports it."""
    rng = np.random.default_rng(5)

    def part(n):
        X = rng.normal(size=(n, 3))
        a = (X[:, 0] > 0).astype(int)
        y = (X[:, 1] > 0).astype(int)
        return X, y, a, ((X[:, 1] + X[:, 2]) > 0).astype(int)

    X_train, y_train, a_train, yhat_train = part(600)
    X_attack, y_attack, a_attack, yhat_attack = part(400)
    attack = ReconstructionCorrection(ReconstructionCorrectionParams(n_estimators=20), AttackerView(n=600),
                                      np.random.default_rng(0))
    outcome = attack.reconstruct(BlackBoxKnowledge(
        X_train, y_train, yhat_train, X_attack, y_attack, a_attack, yhat_attack,
        certificate={"metric": "sp", "value": unfairness("sp", yhat_train, a_train)}))
    assert outcome.info["validation_baseline_accuracy"] == 1.0
    assert outcome.status == DECLINED_STATUS and outcome.info["declined"] is True
    assert np.array_equal(outcome.corrected, outcome.baseline) and outcome.changed == 0
    assert np.isnan(outcome.exponent)
