"""rr-release protocol, its compliance-party exchange, the estimators' algebra, LP (13) and the Bayes adversary."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parley.parties.attacks import AttackerView
from parley.parties.attacks.randomized_response.rr_inference import RRBayesAttack, bayes_guess, posterior
from parley.parties.compliance import Compliance
from parley.parties.learners.two_step import WITHHELD_UNSUPPORTED, post_process, release_of
from parley.protocols import get_protocol
from parley.protocols.base import AuditSet
from parley.protocols.budget import PureDP
from parley.protocols.errors import ConfigError, QueryError
from parley.protocols.estimators.rr_estimators import (
    BAD_EPSILON,
    BAD_NOTION,
    debias_joint,
    group_rates,
    privacy_penalty,
    privatize,
    rr_keep_probability,
    rr_matrix,
)
from parley.protocols.mechanisms.randomized_response import RELEASED_BEFORE, UNKNOWN_SET
from parley.scenarios.spec import LEARNER_FLOW, Scenario
from tests.fixed_secrets import party_secret


def _protocol(**params):
    cls = get_protocol("rr-release")
    return cls(cls.Params(**params))


def _holdings(n=50, seed=0):
    rng = np.random.default_rng(seed)
    a = (rng.random(n) < 0.4).astype(np.int8)
    y = (rng.random(n) < 0.5).astype(np.int8)
    return {"audit": AuditSet(a=a, y=y), "train": AuditSet(a=a[::-1].copy(), y=y)}


def test_mechanism_constants_follow_sec_3():
    assert rr_keep_probability(1.0, 2) == pytest.approx(math.e / (1 + math.e))
    assert rr_keep_probability(2.0, 4) == pytest.approx(math.exp(2) / (3 + math.exp(2)))
    Pi = rr_matrix(0.5, 3)
    assert np.allclose(Pi.sum(axis=0), 1) and np.allclose(Pi, Pi.T)
    assert privacy_penalty(1.0, 2) == pytest.approx(math.e / (math.e - 1))
    with pytest.raises(QueryError, match="epsilon must be a finite number"):
        rr_keep_probability(0.0, 2)
    assert BAD_EPSILON.startswith("epsilon")


def test_debiasing_inverts_the_mechanism_exactly_on_expected_counts():
    Pi = rr_matrix(0.3, 3)
    joint_a = np.array([[0.1, 0.2, 0.05], [0.3, 0.15, 0.2]])
    assert np.allclose(debias_joint(joint_a @ Pi.T, 0.3, 3), joint_a)


def test_group_rates_with_huge_epsilon_equal_the_plain_rates_and_reject_bad_input():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2, 400)
    y = rng.integers(0, 2, 400)
    yhat = rng.integers(0, 2, 400).astype(float)
    rates = group_rates("demographic_parity", yhat, y, a, 700.0, 2)
    assert np.allclose(rates.debiased, [[yhat[a == 0].mean(), yhat[a == 1].mean()]])
    assert np.allclose(rates.debiased, rates.naive)
    with pytest.raises(QueryError, match="notion must be one of"):
        group_rates("calibration", yhat, y, a, 1.0, 2)
    with pytest.raises(QueryError, match="integer codes"):
        group_rates("equalized_odds", yhat, y, a + 5, 1.0, 2)
    assert "notion" in BAD_NOTION


def test_protocol_prices_each_release_and_refuses_unknown_sets_and_repeats():
    protocol, holdings = _protocol(epsilon=0.5), _holdings()
    assert protocol.request_cost("release-request", {"set": "audit"}, holdings) == PureDP(epsilon=0.5)
    with pytest.raises(QueryError) as err:
        protocol.request_cost("release-request", {"set": "test"}, holdings)
    assert str(err.value) == UNKNOWN_SET.format(value="test", held="audit, train")
    earlier = [{"set": "audit", "z": np.zeros(3)}]
    protocol.admit("release-request", {"set": "train"}, earlier)        # another set: fine
    with pytest.raises(QueryError) as err:
        protocol.admit("release-request", {"set": "audit"}, earlier)
    assert str(err.value) == RELEASED_BEFORE.format(name="audit", count=1, limit=1)
    _protocol(releases=2).admit("release-request", {"set": "audit"}, earlier)  # repeats allowed: they compose


def test_release_withholds_at_the_reporting_rate():
    z = _protocol(epsilon=1.0, report_probability=0.25).respond(
        "release-request", {"set": "audit"}, _holdings(4000), np.random.default_rng(2))["z"]
    assert z.dtype == np.int8 and set(np.unique(z)) <= {-1, 0, 1}
    assert abs((z == -1).mean() - 0.75) < 0.03   # 4000 draws: sd 0.007


def _party(identities, keyring, protocol, holdings):
    return Compliance(identities["compliance"], keyring, holdings["audit"], protocol, ["data-center"],
                      party_secret(3), train=holdings["train"])


def _request(identities, name, query_id):
    return identities["data-center"].seal("compliance", "release-request", "rr-release",
                                          {"set": name, "query_id": query_id})


def test_compliance_releases_once_per_set_charges_the_ledger_and_keeps_serving(identities, keyring):
    party = _party(identities, keyring, _protocol(epsilon=0.8), _holdings())
    first = party.receive(_request(identities, "audit", "r1"))
    assert first.kind == "attribute-release" and first.payload["set"] == "audit"
    retry = party.receive(_request(identities, "audit", "r1"))          # same query id: replayed, same Z
    assert retry.kind == "attribute-release" and np.array_equal(retry.payload["z"], first.payload["z"])
    second = party.receive(_request(identities, "audit", "r2"))         # a fresh release of the same set
    assert second.kind == "refusal" and second.payload["reason"] == "invalid-query"
    assert "released 1 time(s) already" in second.payload["detail"]
    other = party.receive(_request(identities, "train", "r3"))          # still serving
    assert other.kind == "attribute-release"
    metric = identities["data-center"].seal("compliance", "metric-query", "rr-release",
                                            {"metric": "sp", "predictions": np.zeros((1, 50)), "query_id": "m"})
    refused = party.receive(metric)                                      # no metric answers under this protocol
    assert refused.kind == "refusal" and "answers only no metric" in refused.payload["detail"]
    stats = party.stats()
    assert stats["epsilon_spent"]["data-center"] == pytest.approx(1.6)  # two releases, no charge for replay/refusal
    assert stats["answers_replayed"] == 1


def test_allowed_repeats_compose_in_the_ledger(identities, keyring):
    party = _party(identities, keyring, _protocol(epsilon=0.5, releases=3), _holdings())
    zs = [party.receive(_request(identities, "audit", f"q{i}")).payload["z"] for i in range(3)]
    assert not np.array_equal(zs[0], zs[1])                              # fresh randomization each time
    assert party.stats()["epsilon_spent"]["data-center"] == pytest.approx(1.5)
    assert party.receive(_request(identities, "audit", "q3")).kind == "refusal"


def _population(n, rng):
    a = (rng.random(n) < 0.35).astype(np.int8)
    y = (rng.random(n) < np.where(a == 1, 0.45, 0.2)).astype(np.int8)
    # A step-1 predictor that discriminates: higher TPR and FPR for a = 1.
    s = np.clip(np.where(y == 1, 0.55 + 0.3 * a, 0.1 + 0.15 * a) + rng.normal(0, 0.05, n), 0, 1)
    return a, y, s


def _true_eo(p, s, y, a, z):
    soft = s * p[1, z] + (1 - s) * p[0, z]
    rates = np.array([[soft[(y == yy) & (a == g)].mean() for g in (0, 1)] for yy in (0, 1)])
    return float(np.abs(rates[:, 1] - rates[:, 0]).max()), float(np.mean(np.where(y == 1, soft, 1 - soft)))


def test_post_processing_lp_removes_discrimination_with_respect_to_the_true_attribute():
    rng = np.random.default_rng(4)
    a, y, s = _population(40_000, rng)
    z = privatize(a, 1.0, 2, rng)
    derived = post_process(s, y, z, 1.0, 2, "equalized_odds", alpha=0.0)
    assert derived.p.shape == (2, 2) and ((derived.p >= 0) & (derived.p <= 1)).all()
    gap_before = group_rates("equalized_odds", s, y, a, 700.0, 2).naive_gap
    gap_after, accuracy = _true_eo(derived.p, s, y, a, z)
    assert gap_before > 0.2
    assert gap_after < 0.05          # sampling error of the debiased rates at n = 40,000, eps = 1
    # The naive Hardt et al. post-processing (Z read as A, eps -> infinity) leaves discrimination w.r.t. A.
    naive = post_process(s, y, z, 700.0, 2, "equalized_odds", alpha=0.0)
    assert _true_eo(naive.p, s, y, a, z)[0] > gap_after + 0.05
    assert accuracy > 0.5


def test_bayes_posterior_and_rules():
    z = np.array([0, 1, -1])
    post = posterior(z, math.log(3.0), 2, np.array([0.5, 0.5]))
    assert np.allclose(post, [[0.75, 0.25], [0.25, 0.75], [0.5, 0.5]])
    skewed = posterior(np.array([1]), 0.1, 2, np.array([0.8, 0.2]))
    assert bayes_guess(skewed)[0] == 0                                   # MAP follows the majority at small eps
    assert bayes_guess(skewed, np.array([0.8, 0.2]))[0] == 1             # the balanced rule follows Z
    attack = RRBayesAttack(RRBayesAttack.Params(auxiliary=10), AttackerView(n=3), np.random.default_rng(0))
    with pytest.raises(Exception, match="needs auxiliary features"):
        attack.infer(z, 1.0, 2)


def test_learner_refuses_withheld_entries_and_missing_releases():
    replies = [("attribute-release", {"set": "train", "z": np.array([0, -1, 1], dtype=np.int8)})]
    with pytest.raises(QueryError) as err:
        release_of(replies, "train")
    assert str(err.value) == WITHHELD_UNSUPPORTED.format(name="train", count=1)
    with pytest.raises(ConfigError, match="holds no attribute-release of the 'audit' set"):
        release_of(replies, "audit")


def test_spec_ties_learner_and_attack_to_the_rr_release_flow():
    base = {"dataset": {"name": "adult", "protected": "sex"}, "attack": {"name": "rr-bayes"},
            "protocol": {"name": "rr-release", "epsilon": 2.0}, "learner": {"name": "two-step", "max_iter": 5}}
    scenario = Scenario.from_dict(base)
    assert scenario.learner.params.max_iter == 5 and scenario.protocol.params.epsilon == 2.0
    with pytest.raises(ConfigError, match="reads rr-release exchanges"):
        Scenario.from_dict({**base, "protocol": {"name": "raw"}, "learner": None})
    with pytest.raises(ConfigError) as err:
        Scenario.from_dict({**base, "attack": {"name": "double-query"}})
    assert "rr-bayes" in str(err.value)
    assert "learner" in LEARNER_FLOW
