"""The fairness-certificate protocol, the baseline adversaries' helpers and the Sec. V-B estimate."""

from __future__ import annotations

import numpy as np
import pytest

from parley import protocols
from parley.parties.attacks.reconstruction_correction.attack import NO_CERTIFICATE, certificate_constraint
from parley.parties.attacks.reconstruction_correction.baseline_adversary import (
    NO_EXPONENTS,
    BaselineGuess,
    choose_exponent,
    estimate_constraint,
    weights,
)
from parley.protocols.base import AuditSet
from parley.protocols.errors import AttackError, QueryError
from parley.protocols.group_gaps import unfairness
from parley.protocols.mechanisms.fairness_certificate import NO_TRAIN, NOT_CERTIFIED, ONE_MODEL

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


def test_tolerance_certificate_or_refusal(holdings):
    a = holdings["train"].a
    fair = np.zeros(200)  # accepts nobody: every gap is 0
    reply = _protocol(release="tolerance", tolerance=0.05).respond(KIND, _payload(fair), holdings, None)
    assert reply == {**{k: reply[k] for k in ("definition", "slices", "n")}, "metric": "sp", "tolerance": 0.05}
    unfair = a.astype(np.float64)  # accepts exactly the a=1 group
    value = unfairness("sp", unfair, a)
    with pytest.raises(QueryError) as info:
        _protocol(release="tolerance", tolerance=0.05).respond(KIND, _payload(unfair), holdings, None)
    assert str(info.value) == NOT_CERTIFIED.format(metric="sp", value=value, tolerance=0.05)


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
