"""Each exchange names the party slots it adds, so that a run over Ray boots their hosts with the world's; and
which exchanges run over a confidential channel."""

from __future__ import annotations

import pytest

from parley.protocols import get_protocol
from parley.protocols.errors import ConfigError
from parley.scenarios.catalog import scenario_path
from parley.scenarios.exchanges import get_exchange
from parley.scenarios.spec import CONFIDENTIAL_FLOW, Scenario


def _parties(name: str, **values) -> tuple[str, ...]:
    scenario = Scenario.from_toml(scenario_path(name))
    if values:
        scenario = scenario.with_values(values)
    return get_exchange(get_protocol(scenario.protocol.name).flow).parties(scenario)


@pytest.mark.parametrize(("name", "values", "expected"), [
    ("adult-raw-single-query", {}, ("adversary",)),  # the curious data center's attack
    ("adult-observer-honest", {}, ("adversary",)),  # the passive observer's attack runs in the adversary slot
    ("adult-raw-double-query", {}, ("adversary", "observer")),  # and an observer overhearing the attack
    ("adult-rr-audit", {}, ("adversary",)),
    # a curious data center reads the releases it received, decrypted, even over a confidential channel
    ("adult-rr-audit", {"confidential": True}, ("adversary",)),
    ("adult-rr-observer", {"confidential": True}, ()),  # a passive observer reads nothing then: no adversary
    ("compas-cov-threshold", {}, ()),  # its attack reads the accept set in the referee, no party is added
])
def test_each_exchange_names_the_parties_it_adds(name, values, expected):
    assert _parties(name, **values) == expected


@pytest.mark.parametrize("name", ["compas-cov-threshold", "adult-correction"])
def test_a_confidential_channel_is_refused_where_the_flow_reads_replies_from_the_transcript(name):
    """These flows read the accept set or the published certificate from the transcript, which a confidential
    channel seals: the scenario is refused when it is read, naming the flows that do run confidentially, where
    the run used to stop halfway (a KeyError, or an attack reading a sealed certificate)."""
    scenario = Scenario.from_toml(scenario_path(name))
    with pytest.raises(ConfigError) as refused:
        scenario.with_values({"confidential": True})
    assert str(refused.value) == CONFIDENTIAL_FLOW.format(
        protocol=scenario.protocol.name, flow=get_protocol(scenario.protocol.name).flow,
        supported="metric-query and rr-release")
