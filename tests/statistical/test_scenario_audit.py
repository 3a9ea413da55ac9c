"""The whole-scenario audit (alpha = 0.05, seeded): raw's and cov-threshold's views give large bounds, DP scenarios
stay under their claim."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parley.protocols.errors import ConfigError
from parley.scenarios.compare.audit import NOT_AUDITABLE, RANDOMIZED_COV_THRESHOLD, audit_scenario, cov_threshold_pair
from tests.fixed_secrets import run_secrets

ALPHA = 0.05
RUNS = 25
DATASET = {"name": "adult", "protected": "race", "audit_size": 20, "train_size": 100}


def _largest_bound(runs: int, alpha: float) -> float:
    """The bound of a view that always tells the two neighbours apart: ln(p_low / q_high), Clopper-Pearson."""
    return math.log((alpha / 4) ** (1 / runs) / (1 - (alpha / 4) ** (1 / runs)))


@pytest.mark.system  # 100 scenario runs that each attack in full: about 20 CPU-s
def test_raw_scenario_gives_the_largest_bound_the_runs_allow():
    audit = audit_scenario({"name": "raw"}, DATASET, runs=RUNS, alpha=ALPHA, seed=3)
    assert audit.claimed_epsilon is None  # raw spends no budget: no claim
    assert (audit.p, audit.p_prime) == (1.0, 0.0)  # the answer tells the neighbours apart in every run
    assert audit.epsilon_lower == pytest.approx(_largest_bound(RUNS, ALPHA), rel=1e-6)
    assert audit.epsilon_lower > 1.5


@pytest.mark.parametrize("protocol", [{"name": "laplace", "epsilon": 1.0},
                                      pytest.param({"name": "rr-release", "epsilon": 1.0}, marks=pytest.mark.system)])
def test_dp_scenario_bound_stays_at_or_below_what_the_ledger_charged(protocol):
    # fixed secrets: the runs' noise replays exactly, so the bound cannot pass by luck (seeded test)
    audit = audit_scenario(protocol, DATASET, runs=RUNS, alpha=ALPHA, seed=3, secrets=run_secrets(3))
    assert audit.claimed_epsilon == pytest.approx(protocol["epsilon"])  # one query / one release about the person
    assert audit.epsilon_lower <= audit.claimed_epsilon


def test_exchanges_the_audit_does_not_read_are_refused():
    with pytest.raises(ConfigError, match=NOT_AUDITABLE.split("{")[0]):
        audit_scenario({"name": "fairness-certificate", "metric": "sp", "release": "value"}, DATASET, runs=2,
                       alpha=ALPHA, seed=0)


def test_cov_threshold_pair_lets_one_person_decide_one_hypothesis():
    rng = np.random.default_rng(0)
    P = rng.normal(size=(30, 200))
    a = (rng.random(200) < 0.3).astype(np.int64)
    rho = 0.02
    s, person, t = cov_threshold_pair(P, a, rho)
    s_prime = s.copy()
    s_prime[person] = 1 - s_prime[person]
    cov = lambda v: float(np.mean(P[t] * v) - P[t].mean() * v.mean())  # noqa: E731 (the protocol's 1/n covariance)
    assert (abs(cov(s)) <= rho) != (abs(cov(s_prime)) <= rho)
    assert 0 < s.sum() < s.size and 0 < s_prime.sum() < s.size


@pytest.mark.system  # each of its 100 runs fits the DFRR learner's hypotheses
def test_cov_threshold_scenario_bound_is_what_no_small_epsilon_could_give():
    """The accept set is a deterministic function of A under the hard policy: the pair chosen at the threshold
    tells the neighbours apart in every run, and the bound is the largest the runs allow, above epsilon = 1.5."""
    audit = audit_scenario({"name": "cov-threshold", "rho": 0.1}, DATASET, runs=RUNS, alpha=ALPHA, seed=3,
                           learner={"name": "dfrr", "hypotheses": 50})
    assert audit.claimed_epsilon is None  # the protocol spends no budget: no claim
    assert (audit.p, audit.p_prime) == (1.0, 0.0)
    assert audit.epsilon_lower == pytest.approx(_largest_bound(RUNS, ALPHA), rel=1e-6)
    assert audit.epsilon_lower > 1.5


def test_randomized_cov_threshold_is_refused_rather_than_audited_with_frozen_noise():
    with pytest.raises(ConfigError, match=RANDOMIZED_COV_THRESHOLD.split("{")[0]):
        audit_scenario({"name": "cov-threshold", "rho": 0.1, "noise": 0.01}, DATASET, runs=2, alpha=ALPHA, seed=0)
