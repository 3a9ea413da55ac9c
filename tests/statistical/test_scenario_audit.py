"""The whole-scenario audit (alpha = 0.05, seeded): raw's view gives a large bound, DP scenarios stay under their claim."""

from __future__ import annotations

import math

import pytest

from protocols.errors import ConfigError
from scenarios.scenario_audit import NOT_AUDITABLE, audit_scenario

ALPHA = 0.05
RUNS = 25
DATASET = {"name": "adult", "protected": "race", "audit_size": 20, "train_size": 100}


def _largest_bound(runs: int, alpha: float) -> float:
    """The bound of a view that always tells the two neighbours apart: ln(p_low / q_high), Clopper-Pearson."""
    return math.log((alpha / 4) ** (1 / runs) / (1 - (alpha / 4) ** (1 / runs)))


def test_raw_scenario_gives_the_largest_bound_the_runs_allow():
    audit = audit_scenario({"name": "raw"}, DATASET, runs=RUNS, alpha=ALPHA, seed=3)
    assert audit.claimed_epsilon is None  # raw spends no budget: no claim
    assert (audit.p, audit.p_prime) == (1.0, 0.0)  # the answer tells the neighbours apart in every run
    assert audit.epsilon_lower == pytest.approx(_largest_bound(RUNS, ALPHA), rel=1e-6)
    assert audit.epsilon_lower > 1.5


@pytest.mark.parametrize("protocol", [{"name": "laplace", "epsilon": 1.0}, {"name": "rr-release", "epsilon": 1.0}])
def test_dp_scenario_bound_stays_at_or_below_what_the_ledger_charged(protocol):
    audit = audit_scenario(protocol, DATASET, runs=RUNS, alpha=ALPHA, seed=3)
    assert audit.claimed_epsilon == pytest.approx(protocol["epsilon"])  # one query / one release about the person
    assert audit.epsilon_lower <= audit.claimed_epsilon


def test_exchanges_without_a_per_person_output_are_refused():
    with pytest.raises(ConfigError, match=NOT_AUDITABLE.split("{")[0]):
        audit_scenario({"name": "cov-threshold", "rho": 0.1}, DATASET, runs=2, alpha=ALPHA, seed=0)
