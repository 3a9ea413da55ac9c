"""Each flow names the party slots it adds, so that a run over Ray boots their hosts with the world's."""

from __future__ import annotations

import pytest

from parley.protocols import get_protocol
from parley.scenarios.catalog import scenario_path
from parley.scenarios.flows import flow_parties
from parley.scenarios.spec import Scenario


def _parties(name: str, **values) -> tuple[str, ...]:
    scenario = Scenario.from_toml(scenario_path(name))
    if values:
        scenario = scenario.with_values(values)
    return flow_parties(get_protocol(scenario.protocol.name).flow, scenario)


@pytest.mark.parametrize(("name", "values", "expected"), [
    ("adult-raw-single-query", {}, ("adversary",)),  # the curious data center's attack
    ("adult-observer-honest", {}, ("adversary",)),  # the passive observer's attack runs in the adversary slot
    ("adult-raw-double-query", {}, ("adversary", "observer")),  # and an observer overhearing the attack
    ("adult-rr-audit", {}, ("adversary",)),
    ("adult-rr-audit", {"confidential": True}, ()),  # nothing readable on the wire: no adversary is added
    ("compas-cov-threshold", {}, ()),  # its attack reads the accept set in the referee, no party is added
])
def test_each_flow_names_the_parties_it_adds(name, values, expected):
    assert _parties(name, **values) == expected
