"""adult-he-reveal through the Ray actors: two parties, inputs hidden, the answers still reveal A."""

from __future__ import annotations

import math

import pytest

from parley.protocols.crypto.ckks import POLY_MODULUS_DEGREE, flood_sigma
from parley.protocols.mechanisms.homomorphic import HeParams
from parley.scenarios.catalog import scenario_path
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario

pytestmark = pytest.mark.ray

#: Six standard deviations of the flood in an answer under the scenario's parameters (1.5e-4 at tau = 512).
ERROR_BOUND = 6 * flood_sigma(HeParams(decryptions=512)) * math.sqrt(POLY_MODULUS_DEGREE / 2)


def test_he_answers_reveal_as_much_as_raw_while_the_compliance_party_reads_nothing(ray_session, tmp_path):
    """adult-he-reveal and its raw twin (adult-reveal-linear), 200 records: the flip-one attack's result is the
    same (a flip moves SP by 1/N1 or 1/N0, far above the flood), with one exchange per query as raw."""
    small = {"dataset.audit_size": 200}
    scenario = Scenario.from_toml(scenario_path("adult-he-reveal"))
    assert scenario.protocol.params.decryptions == 512  # what ERROR_BOUND is sized for
    encrypted = run(scenario.with_values(small), out=tmp_path / "he")
    plain = run(Scenario.from_toml(scenario_path("adult-reveal-linear")).with_values(small), out=tmp_path / "raw")
    s, r = encrypted.metrics, plain.metrics
    assert s["exact_recovery"] and r["exact_recovery"]
    for key in ("leakage", "attacked", "correct", "queries", "messages"):
        assert s[key] == r[key], key
    assert s["base_sp"] == pytest.approx(r["base_sp"], abs=ERROR_BOUND)
    assert r["compliance_view_accuracy"] == 1.0 and s["compliance_view_accuracy"] < 0.75
    assert 0 < s["median_query_error"] < ERROR_BOUND
