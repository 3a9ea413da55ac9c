"""The Attribute-Reveal catalog scenarios through the Ray actors, on Adult."""

from __future__ import annotations

import pytest

from parley.scenarios.catalog import scenario_path
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario

pytestmark = pytest.mark.ray


def test_precision_probes_reveal_adult_with_at_most_30_queries(ray_session, tmp_path):
    result = run(Scenario.from_toml(scenario_path("adult-reveal-precision")), out=tmp_path)
    m = result.metrics
    assert m["exact_recovery"] and m["attacked"] == 1000 and m["queries"] <= 30
    assert m["attack_probe_max_deviation"] <= 0.1 and m["attack_certified"]
    assert m["queries"] >= m["attack_counting_bound"]
    assert m["bytes"] < 1_000_000  # block probes travel as edits of the kept base model


def test_rounded_answers_cost_more_queries_but_not_the_secret(ray_session, tmp_path):
    scenario = Scenario.from_toml(scenario_path("adult-reveal-precision")).with_values(
        {"protocol.decimals": 6, "dataset.audit_size": 300})
    m = run(scenario, out=tmp_path).metrics
    assert m["exact_recovery"] and m["attack_block_width"] < 37 and m["queries"] >= m["attack_counting_bound"]


def test_compressed_sensing_reveals_adult_with_far_fewer_models_than_n(ray_session, tmp_path):
    m = run(Scenario.from_toml(scenario_path("adult-reveal-cs-iid")), out=tmp_path).metrics
    assert m["exact_recovery"] and m["attack_certified"] and m["attack_decoder"] == "amp"
    assert m["queries"] < 300  # the paper's l1 program needs 400 at this size


def test_paired_alg2_probes_reveal_adult_with_at_most_200_queries(ray_session, tmp_path):
    m = run(Scenario.from_toml(scenario_path("adult-reveal-cs")), out=tmp_path).metrics
    assert m["exact_recovery"] and m["attacked"] == 1000 and m["attack_certified"]
    assert m["attack_design"] == "paired" and m["queries"] <= 200
    assert m["attack_probe_max_deviation"] <= 0.1 and m["queries"] >= m["attack_counting_bound"]
    assert m["attack_probe_accuracy_min"] >= m["attack_base_accuracy"] - 0.02
    assert m["bytes"] < 1_000_000  # block probes travel as edits of the kept reference


def test_eo_reveals_exactly_the_positives(ray_session, tmp_path):
    m = run(Scenario.from_toml(scenario_path("adult-reveal-eo")), out=tmp_path).metrics
    assert m["exact_recovery"] and m["attacked"] == m["queries"] - 1 and m["undecided"] == 0
