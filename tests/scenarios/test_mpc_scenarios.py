"""The secure-computation catalog scenarios through the Ray actors: same leakage as raw, inputs hidden."""

from __future__ import annotations

import pytest

from parley.scenarios.catalog import scenario_path
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario

pytestmark = pytest.mark.ray


def test_mpc_answers_reveal_as_much_as_raw_while_the_compliance_party_reads_nothing(ray_session, tmp_path):
    """adult-mpc-reveal and its raw twin (adult-reveal-linear), 300 records: the attack's result is the same."""
    small = {"dataset.audit_size": 300}
    secure = run(Scenario.from_toml(scenario_path("adult-mpc-reveal")).with_values(small), out=tmp_path / "mpc")
    plain = run(Scenario.from_toml(scenario_path("adult-reveal-linear")).with_values(small), out=tmp_path / "raw")
    s, r = secure.metrics, plain.metrics
    assert s["exact_recovery"] and r["exact_recovery"]
    for key in ("leakage", "attacked", "correct", "queries"):
        assert s[key] == r[key], key
    # raw sums float64 products; mpc opens exact integers and rounds the rational once: equal to float rounding
    assert s["base_sp"] == pytest.approx(r["base_sp"], rel=4e-16)
    assert s["messages"] == 2 * r["messages"]  # two exchanges per query: compliance party, then helper
    assert r["compliance_view_accuracy"] == 1.0 and s["compliance_view_accuracy"] < 0.75
    assert s["median_query_error"] < 1e-16  # the honest SP answer: exact up to raw's own float rounding


def test_mpc_dp_is_priced_like_dp_counts(ray_session, tmp_path):
    result = run(Scenario.from_toml(scenario_path("adult-mpc-dp")), out=tmp_path)
    m = result.metrics
    assert m["epsilon_spent"] == 1.0 and m["queries"] == 100 and m["leakage"] <= m["leakage_bound"] + 10
    assert (tmp_path / "ledger.sqlite").exists()
