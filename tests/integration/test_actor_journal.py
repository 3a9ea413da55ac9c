"""The restore journal keeps no call's arguments in the driver, and a party restored from it is exact.

A party host's journal (:mod:`parley.parties.ray.journal`) holds an envelope the network logged as its
place in ``transcript.jsonl`` and every other call pickled in a file; the driver keeps neither the
payloads nor the envelopes. These tests play the reader who suspects the driver still holds them
(a weak reference to each payload array must die once the caller drops it) and the one who suspects
the restored party differs (its counters and replay guard must be those of the party that died).
"""

from __future__ import annotations

import gc
import os
import weakref

import numpy as np
import pytest

from parley.parties import wire
from parley.parties.compliance import Compliance
from parley.parties.network import Network
from parley.parties.party import REFUSAL, check_reply
from parley.parties.ray.deployment import RayDeployment
from parley.parties.transcript import TranscriptWriter
from parley.protocols import get_protocol
from parley.protocols.base import AuditSet
from parley.protocols.metrics import statistical_parity_difference
from tests.fixed_secrets import party_secret
from tests.party_world import query

pytestmark = pytest.mark.ray

DC = "data-center"


def _crash(host) -> None:
    """Run inside the host actor: its process ends at once, as in a crash (Ray restarts it without the party)."""
    os._exit(1)


def test_journal_drops_payloads_and_a_restored_party_is_exact(ray_session, identities, keyring, audit_arrays,
                                                             tmp_path):
    ray = ray_session
    assert ray.is_initialized()
    a, y = audit_arrays
    dc = identities[DC]
    deployment = RayDeployment()
    transcript = TranscriptWriter(tmp_path / "transcript.jsonl", keyring)
    network = Network(deployment, transcript)
    network.route("compliance", "compliance")
    deployment.add("compliance", Compliance, identities["compliance"], keyring, AuditSet(a=a, y=y),
                   get_protocol("raw")(), [DC], party_secret(0))
    rng = np.random.default_rng(1)
    alive: list[weakref.ref] = []
    answers = {}
    sent = []
    try:
        for i in range(6):
            H = rng.random((3, 40))
            alive.append(weakref.ref(H))
            envelope = query(dc, H, query_id=f"q{i}")
            # Half through the logged wire (journaled by their place in the transcript), half handed to the
            # party directly (journaled in the deployment's journal file).
            reply = network.send(envelope) if i % 2 == 0 else deployment.call("compliance", "receive", envelope)
            answers[f"q{i}"] = check_reply(reply, keyring, DC, "metric-answer").payload["values"]
            sent.append(envelope)
            del H, envelope, reply
        # A refused call is journaled too: a foreign key's envelope (its replay refuses it again).
        forged = wire.Identity(DC, DC, identities["outsider"].private_key, next_seq=10_000)
        assert deployment.call("compliance", "receive", query(forged, np.full((1, 40), 0.5), query_id="x")).kind \
            == REFUSAL
        network.send(query(dc, np.zeros((1, 40)), query_id="last"))  # the writer keeps only the latest envelope
        before = deployment.call("compliance", "stats")
        assert before["models_answered"] == 6 * 3 + 1 and before["refusals_sent"] == 1

        # The driver keeps no payload: once the caller drops its envelopes, every array is freed.
        del sent[:3]
        gc.collect()
        assert [ref() is None for ref in alive[:3]] == [True] * 3

        with pytest.raises(ray.exceptions.RayActorError):  # a crash: Ray restarts the process, the party is gone
            ray.get(deployment.hosts["compliance"].__ray_call__.remote(_crash))
        after = deployment.call("compliance", "stats")  # restored: loaded again, journal replayed
        assert deployment.recoveries == {"compliance": 1}
        assert after == before
        # The rebuilt replay guard holds every nonce the replay fed it, logged or not: each old envelope
        # is refused as a replay ...
        for envelope in sent:
            refusal = deployment.call("compliance", "receive", envelope)
            assert refusal.kind == REFUSAL and refusal.payload["reason"] == wire.REPLAY
        # ... and a fresh query is answered as the party that died would have answered it.
        H = np.vstack([np.linspace(0, 1, 40), np.full(40, 0.25)])
        reply = check_reply(network.send(query(dc, H, query_id="q-new")), keyring, DC, "metric-answer")
        np.testing.assert_array_equal(reply.payload["values"], statistical_parity_difference(H, a))
    finally:
        transcript.abort()
        deployment.shutdown()
