"""Scenario flows: how a run's parties exchange messages under one kind of protocol.

A protocol names its flow (:attr:`parley.protocols.base.Protocol.flow`); the runner
builds the world (:func:`parley.scenarios.world.build_world`), calls the flow, and
adds what every run reports (messages, bytes, budget spent, timings). A flow
is a function ``flow(world) -> metrics``: it drives the honest exchange and the
attack through the network, scores what the adversary concluded against the
truth the referee holds, and returns the metrics for ``result.json``. Adding
a kind of protocol = one module here with a ``@register_flow`` function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from parley.protocols.registry import add, lookup

__all__ = ["FLOWS", "Flow", "flow_parties", "get_flow", "register_flow"]

UNKNOWN_FLOW = "no scenario flow {name!r} (a bug in the protocol that names it); known flows: {known}"

Flow = Callable[[Any], dict[str, Any]]
FLOWS: dict[str, Flow] = {}
#: Per flow, the party slots it adds to the world's for a scenario (the world boots their hosts early).
FLOW_PARTIES: dict[str, Callable[[Any], tuple[str, ...]]] = {}


def register_flow(name: str, parties: Callable[[Any], tuple[str, ...]] | None = None) -> Callable[[Flow], Flow]:
    """Decorator adding a flow under ``name`` (the protocol's ``flow``).

    ``parties(scenario)`` names the party slots the flow adds to the world's (an adversary, an
    observer), so that a run over Ray boots their hosts with the world's instead of when the flow
    adds them.
    """
    if parties is not None:
        FLOW_PARTIES[name] = parties
    return lambda flow: add(FLOWS, name, flow, "flow")


def flow_parties(name: str, scenario: Any) -> tuple[str, ...]:
    """The party slots flow ``name`` adds to the world's in a run of ``scenario`` (none if it declares none)."""
    parties = FLOW_PARTIES.get(name)
    return () if parties is None else parties(scenario)


def get_flow(name: str) -> Flow:
    """The flow registered as ``name``; the error lists the known flows."""
    return lookup(FLOWS, name, UNKNOWN_FLOW)


from parley.scenarios.flows import (  # noqa: E402
    cov_threshold,  # noqa: E402,F401
    fairness_certificate,  # noqa: E402,F401  (the fairness-certificate flow)
    metric_query,  # noqa: E402,F401  (registers the flows)
    rr_release,  # noqa: E402,F401  (registers the rr-release flow)
)
