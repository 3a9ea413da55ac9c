"""The cov-threshold protocol (Alg. 1 step 4): accept sets, policies, refusals; no Ray."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from parley.protocols import get_protocol
from parley.protocols.base import AuditSet
from parley.protocols.errors import QueryError
from parley.protocols.mechanisms.covariance_threshold import (
    HYPOTHESES_MISSING,
    HYPOTHESES_N,
    HYPOTHESES_NOT_FINITE,
    HYPOTHESES_SHAPE,
    NO_TRAINING_SET,
    CovarianceThreshold,
    CovarianceThresholdParams,
    accept,
)
from tests.fixed_secrets import party_secret


def _holdings(n=50, seed=0):
    rng = np.random.default_rng(seed)
    a = (rng.random(n) < 0.4).astype(np.int8)
    return {"audit": AuditSet(a=a[:10], y=a[:10]), "train": AuditSet(a=a, y=1 - a)}, a


def test_hard_threshold_returns_exactly_the_rho_fair_hypotheses():
    holdings, a = _holdings()
    rng = np.random.default_rng(1)
    P = rng.normal(size=(300, a.size))
    proto = get_protocol("cov-threshold")(CovarianceThresholdParams(rho=0.05))
    reply = proto.respond("hypothesis-query", {"predictions": P}, holdings, rng)
    # brute force: numpy's population covariance, one hypothesis at a time
    expected = [t for t in range(300) if abs(np.cov(P[t], a, bias=True)[0, 1]) <= 0.05]
    assert reply["accepted"].tolist() == expected and reply["m"] == 300
    assert reply["accepted"].dtype == np.int64 and 0 < len(expected) < 300
    assert reply["rho"] == 0.05 and reply["policy"] == "hard"


@pytest.mark.parametrize("payload, holdings_train, message", [
    ({}, True, HYPOTHESES_MISSING),
    ({"predictions": np.ones((2, 49))}, True, HYPOTHESES_N.format(got=49, n=50)),
    ({"predictions": np.ones(50)}, True, HYPOTHESES_SHAPE.format(shape=(50,))),
    ({"predictions": np.full((2, 50), np.nan)}, True, HYPOTHESES_NOT_FINITE.format(count=100, row=0)),
    ({"predictions": np.ones((2, 50))}, False, NO_TRAINING_SET),
])
def test_bad_requests_are_refused_with_a_named_reason(payload, holdings_train, message):
    holdings, _ = _holdings()
    if not holdings_train:
        holdings = {"audit": holdings["audit"]}
    with pytest.raises(QueryError) as info:
        CovarianceThreshold().respond("hypothesis-query", payload, holdings, np.random.default_rng(0))
    assert str(info.value) == message


def test_protocol_answers_about_the_training_set_and_spends_nothing():
    from parley.parties.compliance import has_costs

    assert CovarianceThreshold.holds == ("audit", "train") and CovarianceThreshold.flow == "cov-threshold"
    assert CovarianceThreshold.requests == {"hypothesis-query": "accept-set"}
    assert not has_costs(CovarianceThreshold())


def test_soft_policy_accepts_with_the_gaussian_probability():
    """Seeded goodness of fit, alpha = 1e-3: accept frequencies per covariance bin against exp(-c^2 / 2 rho^2)."""
    rho = 0.1
    cov = np.repeat([0.0, 0.05, 0.1, 0.2], 4000)
    kept = np.zeros(cov.size, bool)
    kept[accept(cov, CovarianceThresholdParams(rho=rho, policy="soft"), np.random.default_rng(3))] = True
    for c in (0.0, 0.05, 0.1, 0.2):
        k = int(kept[cov == c].sum())
        p = np.exp(-0.5 * (c / rho) ** 2)
        if p == 1.0:
            assert k == 4000
        else:
            assert stats.binomtest(k, 4000, p).pvalue > 1e-3


def test_noise_blurs_the_threshold_by_its_gaussian_cdf():
    """With noise sigma a hypothesis at |cov| = rho is accepted with probability ~1/2 (binomial test, alpha = 1e-3)."""
    params = CovarianceThresholdParams(rho=0.1, noise=0.05)
    cov = np.full(4000, 0.1)
    k = accept(cov, params, np.random.default_rng(4)).size
    p = stats.norm.cdf(0.0) - stats.norm.cdf(-0.2 / 0.05)
    assert stats.binomtest(k, 4000, p).pvalue > 1e-3
    assert accept(cov, CovarianceThresholdParams(rho=0.1), np.random.default_rng(4)).size == 4000  # hard: |0.1| <= 0.1


def test_a_retried_request_gets_the_same_random_reply_and_a_reused_id_is_refused(identities, keyring):
    """No ledger here (the protocol is free), yet a retry must not draw fresh noise or fresh coins."""
    from parley.parties.compliance import Compliance
    from parley.parties.party import REFUSAL
    from parley.parties.wire import INVALID_QUERY

    holdings, _ = _holdings(n=60, seed=3)
    params = CovarianceThreshold.Params(rho=0.02, policy="soft", noise=0.05)
    comp = Compliance(identities["compliance"], keyring, holdings["audit"], CovarianceThreshold(params),
                      ["data-center"], party_secret(1), train=holdings["train"])
    P = (np.random.default_rng(4).random((200, 60)) < 0.5).astype(np.float64)
    dc = identities["data-center"]
    ask = lambda payload: comp.receive(dc.seal("compliance", "hypothesis-query", "cov-threshold", payload))  # noqa: E731
    first = ask({"query_id": "q1", "predictions": P})
    retry = ask({"query_id": "q1", "predictions": P})
    fresh = ask({"query_id": "q2", "predictions": P})
    assert first.kind == retry.kind == "accept-set"
    assert np.array_equal(first.payload["accepted"], retry.payload["accepted"])
    # the same hypotheses under a new id are a new draw: soft coins and noise differ (200 hypotheses)
    assert not np.array_equal(first.payload["accepted"], fresh.payload["accepted"])
    reused = ask({"query_id": "q1", "predictions": P[:100]})
    assert reused.kind == REFUSAL and reused.payload["reason"] == INVALID_QUERY
    assert comp.stats()["answers_replayed"] == 1 and comp.stats()["requests_answered"] == 2
