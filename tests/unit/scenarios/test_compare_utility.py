"""The comparison's metric-query utility: the honest audit answer's error over K seeded releases (no Ray)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from parley.parties.adversary import exchanges_from
from parley.parties.transcript import iter_transcript
from parley.protocols.errors import ConfigError
from parley.scenarios.catalog import scenario_path
from parley.scenarios.compare.plan import plan
from parley.scenarios.compare.run import frontier, matrix
from parley.scenarios.compare.utility import (
    BAD_RELEASES,
    UTILITY_LABEL,
    honest_audit,
    honest_utility,
    release_errors,
    utilities,
)
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario

#: The benchmark's figure (tests/benchmarks/bench_count_dp.py, 400 releases, seed 1): median |SP error| of
#: dp-counts at epsilon 1 on the honest base model of adult-observer-honest (Adult, race, n = 1,000).
BENCH_DP_COUNTS_EPS1 = 0.00787
ALPHA = 0.01
SMALL = {"backend": "local", "dataset.audit_size": 200, "dataset.train_size": 1000}


def _honest(protocol: dict, **values) -> Scenario:
    base = Scenario.from_toml(scenario_path("adult-observer-honest")).to_dict()
    return Scenario.from_dict({**base, "protocol": protocol}).with_values({**SMALL, **values})


def test_the_honest_query_is_the_one_a_run_sends(tmp_path):
    """The utility mirrors the run: same audit set, same base model, same predictions on the wire."""
    scenario = _honest({"name": "raw"}, seed=5)
    run(scenario, tmp_path / "run")
    sent = {e.metric: e.predictions for e in exchanges_from(iter_transcript(tmp_path / "run" / "transcript.jsonl",
                                                                            verify=False))}
    honest = honest_audit(scenario)
    assert sorted(sent) == sorted(honest.queries) == ["eo", "pe", "sp"]
    for metric, query in honest.queries.items():
        np.testing.assert_array_equal(query.predictions, sent[metric])
    other = honest_audit(scenario.with_values({"seed": 6}))  # another seed: another split or model
    assert not np.array_equal(other.queries["sp"].predictions, honest.queries["sp"].predictions) \
        or not np.array_equal(other.audit.a, honest.audit.a)


def test_utility_is_reproducible_from_its_seed():
    scenario = _honest({"name": "laplace", "epsilon": 1.0})
    honest = honest_audit(scenario)
    first = honest_utility(scenario, releases=30, seed=3, honest=honest)
    assert first == honest_utility(scenario, releases=30, seed=3)  # rebuilt from scratch: the same figures
    assert first != honest_utility(scenario, releases=30, seed=4, honest=honest)
    assert [r["metric"] for r in first] == ["sp", "eo", "pe"] and all(r["releases"] == 30 for r in first)
    assert all(0 < r["median_error"] < r["p90_error"] for r in first)


def test_bad_release_counts_are_config_errors():
    scenario = _honest({"name": "raw"})
    honest = honest_audit(scenario)
    with pytest.raises(ConfigError, match=BAD_RELEASES.split("{")[0]):
        release_errors(None, honest.queries["sp"], honest.audit, 0, 1)


def test_dp_counts_at_epsilon_one_matches_the_benchmark_within_sampling_error():
    """Fresh releases (seed 7, not the benchmark's) of dp-counts at epsilon 1 on the benchmark's input.

    If the benchmark's median is the median of this error, each release's error falls below it with
    probability 1/2: a two-sided binomial test at ALPHA on 200 independent releases.
    """
    scenario = Scenario.from_toml(scenario_path("adult-observer-honest")).with_values({"audit_metrics": ["sp"]})
    scenario = Scenario.from_dict({**scenario.to_dict(), "protocol": {"name": "dp-counts", "epsilon": 1.0}})
    honest = honest_audit(scenario)
    from parley import protocols

    protocol = protocols.get_protocol("dp-counts")(scenario.protocol.params)
    errors = release_errors(protocol, honest.queries["sp"], honest.audit, 200, 7).ravel()
    below = int((errors < BENCH_DP_COUNTS_EPS1).sum())
    assert binomtest(below, errors.size, 0.5).pvalue > ALPHA, (below, float(np.median(errors)))
    # And the test can fail: the benchmark's laplace figure (0.354) is far from this median.
    assert binomtest(int((errors < 0.354).sum()), errors.size, 0.5).pvalue < ALPHA


def test_the_frontier_takes_the_metric_query_utility_from_the_releases():
    rows = ("laplace ε=1", "smooth-cauchy ε=1", "dp-counts ε=1")
    p = plan("adult", quick=True, rows=rows, attacks=("differencing",))
    utility = utilities(p, releases=25)
    assert list(utility["protocol"]) == list(rows) and (utility["releases"] == 25).all()
    # Runs whose few honest answers say the opposite of the releases: laplace lucky, dp-counts unlucky.
    results = pd.DataFrame([{"row": label, "column": "differencing [passive-observer]", "status": "ok",
                             "threat_model": "passive-observer", "leakage": None, "attacked": 0, "failure": None,
                             "median_query_error": run_error}
                            for label, run_error in zip(rows, (0.001, 0.2, 0.5), strict=True)])
    long = matrix(p, results)
    by_runs = frontier(p, results, long).set_index("protocol")
    front = frontier(p, results, long, utility).set_index("protocol")
    assert by_runs.loc["laplace ε=1", "utility"] == 0.001
    assert by_runs["on_frontier"].to_dict() == {"laplace ε=1": True, "smooth-cauchy ε=1": False,
                                                "dp-counts ε=1": False}
    for label in rows:
        assert front.loc[label, "utility"] == utility.set_index("protocol").loc[label, "median_error"]
        assert front.loc[label, "utility_label"] == UTILITY_LABEL.format(releases=25)
    assert front.loc["dp-counts ε=1", "utility"] < front.loc["laplace ε=1", "utility"]
    # All leak at chance: dp-counts dominates laplace once the releases measure their error.
    assert front["on_frontier"].to_dict() == {"laplace ε=1": False, "smooth-cauchy ε=1": False,
                                              "dp-counts ε=1": True}
