"""compas-cov-threshold end to end (in-process parties): result keys, the referee's checks, observer = insider."""

from __future__ import annotations

import json

import pytest

from parley.parties.transcript import read_transcript, verify_transcript
from parley.protocols.errors import ConfigError
from parley.scenarios.catalog import scenario_path
from parley.scenarios.cli import main
from parley.scenarios.runner import run
from parley.scenarios.spec import LEARNER_FLOW, Scenario

SMALL = ["backend=local", "dataset.train_size=300", "dataset.audit_size=300", "learner.hypotheses=60"]


@pytest.fixture(scope="module")
def base():
    return Scenario.from_toml(scenario_path("compas-cov-threshold")).with_overrides(SMALL)


def test_run_writes_the_table_ii_metrics_accept_count_and_leakage(tmp_path):
    assert main(["run", "compas-cov-threshold", "--out", str(tmp_path), *[f"--set={s}" for s in SMALL]]) == 0
    record = json.loads((tmp_path / "result.json").read_text())
    m = record["metrics"]
    for key in ("statistical_parity", "normed_disparate", "error", "error_parity", "error_disparate",
                "accepted", "hypotheses", "leakage"):
        assert m[key] is not None, key
    assert m["hypotheses"] == 60 and 0 < m["accepted"] < 60 and m["learner_access"] == "accept-set"
    assert m["messages"] == 2 and m["attacked"] == 300
    envelopes = read_transcript(tmp_path / "transcript.jsonl")
    assert [e.kind for e in envelopes] == ["hypothesis-query", "accept-set"]
    assert verify_transcript(tmp_path / "transcript.jsonl") == 2
    # the referee's recount: the accept set is exactly the rho-fair rows, under the stated rho
    assert len(envelopes[1].payload["accepted"]) == m["accepted"]


@pytest.mark.system  # more runs of the scenario (the default tier keeps the first test)
def test_span_rank_of_the_accepted_hypotheses_against_every_linear_model(base, tmp_path):
    # Standard COMPAS encoding: a dozen accepted random directions span every linear model on the features.
    standard = run(base, out=tmp_path / "standard").metrics
    assert standard["span_rank"] == standard["linear_rank"] <= standard["features"] == 12
    assert standard["accepted"] > standard["linear_rank"]
    # Expanded encoding (binned one-hot + pairwise crosses): the accepted hypotheses span a proper subspace,
    # one dimension per accepted hypothesis.
    expanded = run(base.with_overrides(["dataset.features=expanded"]), out=tmp_path / "expanded").metrics
    assert 0 < expanded["span_rank"] == expanded["accepted"] < expanded["linear_rank"] <= expanded["features"]


@pytest.mark.system  # more runs of the scenario (the default tier keeps the first test)
def test_a_passive_observer_learns_what_the_curious_data_center_learns(base, tmp_path):
    insider = run(base, tmp_path / "dc").metrics
    observer = run(base.with_values({"threat_model": "passive-observer"}), tmp_path / "obs").metrics
    assert observer["accepted"] == insider["accepted"] and observer["leakage"] == insider["leakage"]


@pytest.mark.system  # more runs of the scenario (the default tier keeps the first test)
def test_probes_of_a_curious_data_center_travel_as_a_second_signed_query(base, tmp_path):
    result = run(base.with_values({"attack.probes": 50}), tmp_path)
    assert result.metrics["messages"] == 4 and result.metrics["attack_hypotheses_seen"] == 110


@pytest.mark.system  # more runs of the scenario (the default tier keeps the first test)
def test_baselines_are_fitted_by_the_referee_with_s(base, tmp_path):
    m = run(base.with_values({"learner.name": "frr", "learner.lam": 1e4}), tmp_path).metrics
    # a strong mean-difference penalty leaves (almost) no covariance between f(x) and s on the training set
    assert m["learner_access"] == "attribute" and abs(m["model_cov"]) < 1e-4


def test_a_learner_of_another_flow_is_refused(base):
    with pytest.raises(ConfigError) as info:
        base.with_values({"protocol.name": "raw", "attack.name": "double-query"})
    assert str(info.value) == LEARNER_FLOW.format(name="dfrr", flows="cov-threshold", protocol="raw",
                                                  flow="metric-query")
