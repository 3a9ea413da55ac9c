"""Network.post without Ray: the handle gives the reply or raises the recipient's error; old deployments still work."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.network import LocalDeployment, Network
from parley.parties.party import check_reply
from parley.parties.transcript import TranscriptWriter, read_transcript
from parley.protocols.errors import ParleyError
from tests.party_world import deploy_compliance, query

DC = "data-center"


class _BlockingOnly:
    """A deployment from before ``submit``: only ``call`` (and ``shutdown``)."""

    def __init__(self) -> None:
        self.inner = LocalDeployment()

    def add(self, *args, **kwargs) -> None:
        self.inner.add(*args, **kwargs)

    def call(self, slot, method, *args, **kwargs):
        return self.inner.call(slot, method, *args, **kwargs)

    def shutdown(self) -> None:
        self.inner.shutdown()


@pytest.mark.parametrize("deployment", [LocalDeployment, _BlockingOnly])
def test_posted_envelopes_are_logged_in_order_and_answered(identities, keyring, audit_arrays, tmp_path, deployment):
    world = deploy_compliance(deployment(), identities, keyring, audit_arrays)
    transcript = TranscriptWriter(tmp_path / "t.jsonl", keyring)
    network = Network(world, transcript)
    network.route("compliance", "compliance")
    seen = []
    network.observer = seen.append
    envelopes = [query(identities[DC], np.full((1, 40), 0.25 * i), query_id=f"p{i}") for i in range(3)]
    handles = [network.post(e) for e in envelopes]
    assert seen == []  # the observer hears of an envelope once its delivery was waited for
    answers = [check_reply(h.result(), keyring, DC, "metric-answer").payload["query_id"] for h in handles]
    assert answers == ["p0", "p1", "p2"] and seen == envelopes
    transcript.abort()
    assert [e.id for e in read_transcript(transcript.path, verify=False)] == [e.id for e in envelopes]


def test_a_failing_delivery_raises_through_its_handle(identities, keyring, audit_arrays, tmp_path):
    world = deploy_compliance(LocalDeployment(), identities, keyring, audit_arrays)
    network = Network(world, TranscriptWriter(tmp_path / "t.jsonl", keyring))
    network.route("compliance", "compliance")

    def broken(*args, **kwargs):
        raise ParleyError("the party is gone")

    world.parties["compliance"].deliver = broken
    handle = network.post(query(identities[DC], np.full((1, 40), 0.5)))
    with pytest.raises(ParleyError, match="the party is gone"):
        handle.result()
    network.transcript.abort()
