"""The fairness-certificate protocol, the baseline adversaries' helpers and the Sec. V-B estimate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parley import protocols
from parley.parties.attacks.reconstruction_correction.attack import NO_CERTIFICATE, certificate_constraint
from parley.parties.attacks.reconstruction_correction.baseline_adversary import (
    NO_EXPONENTS,
    BaselineGuess,
    choose_exponent,
    estimate_constraint,
    fit_forest,
    weights,
)
from parley.protocols.base import AuditSet
from parley.protocols.budget import PureDP
from parley.protocols.errors import AttackError, QueryError
from parley.protocols.group_gaps import unfairness
from parley.protocols.mechanisms.fairness_certificate import NO_TRAIN, ONE_MODEL, bounded_unfairness, threshold_margin

KIND = "certificate-request"


@pytest.fixture
def holdings():
    rng = np.random.default_rng(0)
    n = 200
    a, y = rng.integers(0, 2, n).astype(np.int8), rng.integers(0, 2, n).astype(np.int8)
    return {"audit": AuditSet(a=a[:50], y=y[:50]), "train": AuditSet(a=a, y=y)}


def _protocol(**params):
    cls = protocols.get_protocol("fairness-certificate")
    return cls(cls.Params(**params))


def _payload(yhat):
    return {"predictions": np.asarray(yhat, dtype=np.float64)[None, :], "query_id": "q1"}


def test_protocol_is_registered_for_its_flow():
    cls = protocols.get_protocol("fairness-certificate")
    assert cls.flow == "fairness-certificate" and cls.holds == ("audit", "train")
    assert cls.requests == {KIND: "fairness-certificate"}


@pytest.mark.parametrize("metric", ["sp", "pe", "eo", "eodds"])
def test_value_certificate_states_the_training_unfairness(holdings, metric):
    yhat = np.random.default_rng(1).integers(0, 2, 200)
    reply = _protocol(metric=metric).respond(KIND, _payload(yhat), holdings, np.random.default_rng(0))
    train = holdings["train"]
    assert reply["metric"] == metric and reply["value"] == unfairness(metric, yhat, train.a, train.y)
    assert reply["n"] == 200


def test_rounded_value_is_rounded_up(holdings):
    yhat = np.random.default_rng(2).integers(0, 2, 200)
    exact = unfairness("sp", yhat, holdings["train"].a)
    reply = _protocol(decimals=2).respond(KIND, _payload(yhat), holdings, np.random.default_rng(0))
    assert exact <= reply["value"] < exact + 0.01 and round(reply["value"], 2) == reply["value"]


def test_tolerance_decision_is_a_priced_reply_never_a_value(holdings):
    a = holdings["train"].a
    precise = dict(release="tolerance", tolerance=0.05, epsilon=1e9, min_group=10)  # noise far below any gap
    fair = np.zeros(200)  # accepts nobody: every gap is 0
    reply = _protocol(**precise).respond(KIND, _payload(fair), holdings, np.random.default_rng(0))
    assert reply["certified"] is True and reply["tolerance"] == 0.05 and "value" not in reply
    unfair = a.astype(np.float64)  # accepts exactly the a=1 group
    reply = _protocol(**precise).respond(KIND, _payload(unfair), holdings, np.random.default_rng(0))
    assert reply["certified"] is False and "value" not in reply
    # The two replies carry the same fields: only the decision differs, and it is priced.
    protocol = _protocol(**precise)
    assert protocol.charges() and protocol.request_cost(KIND, _payload(fair), holdings) == PureDP(epsilon=1e9)
    assert not _protocol().charges() and _protocol().request_cost(KIND, _payload(fair), holdings) is None


def test_bounded_unfairness_is_the_unfairness_on_large_groups_and_has_sensitivity_one_over_k():
    rng = np.random.default_rng(5)
    n = 400
    a, y, yhat = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 2, n).astype(np.float64)
    for metric in ("sp", "pe", "eo", "eodds"):
        assert bounded_unfairness(metric, yhat, a, y, 50) == pytest.approx(unfairness(metric, yhat, a, y), abs=1e-12)
    # Every neighbour (one person's A flipped) of small sets, tiny groups included: |U_k(a) - U_k(a')| <= 1/k.
    worst = 0.0
    for trial in range(200):
        m = int(rng.integers(2, 12))
        a, y, yhat = rng.integers(0, 2, m), rng.integers(0, 2, m), rng.integers(0, 2, m).astype(np.float64)
        k = int(rng.integers(1, 6))
        metric = ("sp", "pe", "eo", "eodds")[trial % 4]
        base = bounded_unfairness(metric, yhat, a, y, k)
        for j in range(m):
            b = a.copy()
            b[j] = 1 - b[j]
            worst = max(worst, k * abs(bounded_unfairness(metric, yhat, b, y, k) - base))
    assert worst <= 1.0 + 1e-12 and worst > 0.5  # the bound holds and is nearly reached


def test_tolerance_decision_is_epsilon_dp_and_rarely_false():
    """P(certified) = F_Lap(tolerance - margin - U_k): its ratio between neighbours is at most e^epsilon."""
    from scipy.stats import laplace

    epsilon, k, tolerance, beta = 0.5, 20, 0.05, 0.05
    scale, margin = 1 / (k * epsilon), threshold_margin(epsilon, k, beta)
    rng = np.random.default_rng(6)
    n = 120
    a, y, yhat = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 2, n).astype(np.float64)
    base = bounded_unfairness("sp", yhat, a, y, k)
    for j in range(n):
        b = a.copy()
        b[j] = 1 - b[j]
        neighbour = bounded_unfairness("sp", yhat, b, y, k)
        p, q = (laplace.cdf(tolerance - margin - u, scale=scale) for u in (base, neighbour))
        assert max(p / q, q / p, (1 - p) / (1 - q), (1 - q) / (1 - p)) <= math.exp(epsilon) * (1 + 1e-9)
    # A model just above the tolerance is certified at most a beta share of the time (binomial test, alpha = 0.01).
    from scipy.stats import binomtest

    groups = np.repeat([0, 1], 500)
    slightly_unfair = np.where(groups == 1, np.arange(1000) % 100 < 28, np.arange(1000) % 100 < 17).astype(float)
    assert unfairness("sp", slightly_unfair, groups) == pytest.approx(0.055)
    protocol = _protocol(release="tolerance", tolerance=0.05, epsilon=epsilon, min_group=k, false_certificate=beta)
    train = {"train": AuditSet(a=groups, y=np.zeros(1000, dtype=int))}
    draws = np.random.default_rng(7)
    certified = sum(protocol.respond(KIND, _payload(slightly_unfair), train, draws)["certified"] for _ in range(2000))
    assert binomtest(certified, 2000, beta, alternative="greater").pvalue > 0.01, certified


def test_bad_requests_are_refused(holdings):
    protocol = _protocol()
    with pytest.raises(QueryError, match="n=3 columns"):
        protocol.respond(KIND, _payload([1, 0, 1]), holdings, None)
    with pytest.raises(QueryError) as info:
        protocol.respond(KIND, {"predictions": np.zeros((2, 200)), "query_id": "q"}, holdings, None)
    assert str(info.value) == ONE_MODEL.format(m=2)
    with pytest.raises(QueryError) as info:
        protocol.respond(KIND, _payload(np.zeros(50)), {"audit": holdings["audit"]}, None)
    assert str(info.value) == NO_TRAIN
    with pytest.raises(QueryError, match="lacks 'predictions'"):
        protocol.respond(KIND, {"query_id": "q"}, holdings, None)


def test_certificate_constraint_reads_value_or_tolerance():
    assert certificate_constraint({"metric": "pe", "value": 0.01}).tolerance == 0.01
    assert certificate_constraint({"metric": "eo", "tolerance": 0.2}).metric == "eo"
    with pytest.raises(AttackError) as info:
        certificate_constraint(None)
    assert str(info.value) == NO_CERTIFICATE


def test_estimate_picks_the_smallest_measured_unfairness():
    rng = np.random.default_rng(3)
    n = 2000
    a, y = rng.integers(0, 2, n), rng.integers(0, 2, n)
    # Fair on the negatives (PE = 0 by construction: accepts a fixed share in both groups), unfair on positives.
    yhat = np.where(y == 0, rng.random(n) < 0.2, rng.random(n) < 0.4 + 0.4 * a).astype(int)
    yhat[(y == 0)] = 0
    estimate = estimate_constraint(yhat, a, y)
    assert estimate.metric == "pe" and estimate.tolerance == 0.0


def test_weights_normalise_then_widen():
    w = weights(np.array([0.5, 0.75, 1.0]), 2.0)
    assert np.allclose(w, [0.25, 0.5625, 1.0])


def test_choose_exponent_reports_every_exponent_and_rejects_none():
    rng = np.random.default_rng(4)
    n = 300
    a, y, yhat = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 2, n)
    base = BaselineGuess(a=np.where(rng.random(n) < 0.2, 1 - a, a), confidence=0.5 + 0.5 * rng.random(n))
    choice = choose_exponent(base, a, yhat, y, "sp", (4.0, 1.0))
    assert set(choice.scores) == {1.0, 4.0} and set(choice.changed) == {1.0, 4.0}
    assert choice.declined or choice.scores[choice.exponent] == max(choice.scores.values()) > choice.baseline
    with pytest.raises(AttackError) as info:
        choose_exponent(base, a, yhat, y, "sp", ())
    assert str(info.value) == NO_EXPONENTS.format(exponents=[])
    with pytest.raises(AttackError) as info:
        choose_exponent(base, a, yhat, y, "sp", (1.0, -1.0))
    assert str(info.value) == NO_EXPONENTS.format(exponents=[1.0, -1.0])


def test_exponent_zero_is_the_unweighted_correction():
    # The authors search exponents 0..99: 0 gives every guess weight 1.
    rng = np.random.default_rng(5)
    n = 300
    a, y, yhat = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 2, n)
    base = BaselineGuess(a=np.where(rng.random(n) < 0.2, 1 - a, a), confidence=0.5 + 0.5 * rng.random(n))
    np.testing.assert_array_equal(weights(base.confidence, 0.0), np.ones(n))
    choice = choose_exponent(base, a, yhat, y, "sp", (0.0, 1.0))
    assert set(choice.scores) == {0.0, 1.0} and choice.changed[0.0] > 0


def test_forest_settings_reach_the_forest():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(400, 5))
    a = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    forest = fit_forest(X, a, rng, 20, max_depth=3, min_samples_split=10, min_samples_leaf=1)
    assert forest.max_depth == 3 and forest.min_samples_split == 10 and forest.min_samples_leaf == 1
    assert max(tree.get_depth() for tree in forest.estimators_) <= 3
