"""The same refusals through real Ray actors: the compliance actor refuses and keeps serving."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties import wire
from parley.parties.actors import RayDeployment
from parley.parties.adversary import Adversary
from parley.parties.attacks import AttackerView, get_attack
from parley.parties.party import REFUSAL, check_reply
from parley.protocols.errors import AttackError, ParleyError
from parley.protocols.metrics import statistical_parity_difference
from tests.party_world import deploy_compliance, hostile_envelopes, query

pytestmark = pytest.mark.ray


@pytest.fixture
def ray_world(ray_session, identities, keyring, audit_arrays):
    deployment = deploy_compliance(RayDeployment(), identities, keyring, audit_arrays)
    yield deployment
    deployment.shutdown()


def test_compliance_actor_refuses_each_hostile_envelope_and_keeps_answering(ray_world, identities, keyring,
                                                                           audit_arrays):
    a, _ = audit_arrays
    dc = identities["data-center"]
    replayed = query(dc, np.full((1, 40), 0.25), query_id="first")
    assert ray_world.call("compliance", "receive", replayed).kind == "metric-answer"
    cases = hostile_envelopes(identities) + [("replay", replayed, wire.REPLAY)]
    for i, (name, envelope, reason) in enumerate(cases):
        reply = ray_world.call("compliance", "receive", envelope)
        assert reply.kind == REFUSAL and reply.payload["reason"] == reason, name
        H = np.vstack([np.linspace(0, 1, 40), np.full(40, 0.5)])
        answer = check_reply(ray_world.call("compliance", "receive", query(dc, H, query_id=f"ok-{i}")),
                             keyring, "data-center", "metric-answer")
        np.testing.assert_array_equal(answer.payload["values"], statistical_parity_difference(H, a))
    assert ray_world.call("compliance", "stats")["refusals_sent"] == len(cases)


def test_party_errors_cross_the_actor_boundary_with_their_type(ray_session, identities, keyring):
    deployment = RayDeployment()
    view = AttackerView(n=10, base_predictions=np.zeros(10, np.int8), base_scores=np.zeros(10))
    attack = get_attack("double-query")(None, view, np.random.default_rng(0))
    deployment.add("adversary", Adversary, identities["data-center"], keyring, attack, "compliance", "raw")
    try:
        with pytest.raises(AttackError, match="has not finished") as exc:
            deployment.call("adversary", "outcome")
        assert isinstance(exc.value, ParleyError)
    finally:
        deployment.shutdown()
