"""Pipelined messages: a sender posts envelopes without waiting for replies; none of the bookkeeping moves.

:meth:`Network.post` logs an envelope and submits its delivery at once (:meth:`RayDeployment.submit`);
the replies are collected afterwards. These tests play the reader who suspects that a call not
waited for runs out of order, escapes the replay guard, is charged twice or not at all, is missing
from the journal a restore replays, or that a crash in the middle of a pipeline loses or repeats a
message.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from parley.parties.compliance import Compliance
from parley.parties.network import LocalDeployment, Network
from parley.parties.party import REFUSAL, check_reply
from parley.parties.ray.deployment import RayDeployment
from parley.parties.transcript import TranscriptWriter, check_transcript, read_transcript
from parley.parties.wire import BUDGET_EXCEEDED, REPLAY
from parley.protocols.base import AuditSet
from parley.protocols.budget import PureDP
from parley.protocols.metrics import evaluate
from tests.fixed_secrets import party_secret
from tests.ledger_world import noisy
from tests.party_world import query

pytestmark = pytest.mark.ray

DC = "data-center"
EPSILON = 0.25


def _crash(host) -> None:
    """Run inside the host actor: its process ends at once, as in a crash."""
    os._exit(1)


def _world(deployment, identities, keyring, audit_arrays, tmp_path, exact: bool = False):
    a, y = audit_arrays
    transcript = TranscriptWriter(tmp_path / "transcript.jsonl", keyring)
    network = Network(deployment, transcript)
    network.route("compliance", "compliance")
    # The compliance party signs the end in its own process; the querier and the observer here.
    unrouted = {name: identities[name] for name in (DC, "observer")}
    transcript.countersign = lambda head, messages: network.countersign(unrouted, head, messages)
    protocol = noisy(EPSILON)
    if exact:
        protocol.params = protocol.Params(epsilon=EPSILON, scale=0.0)
    deployment.add("compliance", Compliance, identities["compliance"], keyring, AuditSet(a=a, y=y), protocol,
                   [DC], party_secret(0), ledger_path=str(tmp_path / "ledger.sqlite"),
                   budgets={DC: PureDP(epsilon=1.0)})
    return network, transcript


@pytest.mark.parametrize("backend", ["ray", "local"])
def test_pipelined_queries_are_answered_charged_and_logged_in_order(ray_session, identities, keyring, audit_arrays,
                                                                    tmp_path, backend):
    deployment = RayDeployment() if backend == "ray" else LocalDeployment()
    network, transcript = _world(deployment, identities, keyring, audit_arrays, tmp_path, exact=True)
    a, y = audit_arrays
    rng = np.random.default_rng(3)
    models = [rng.random((2, 40)) for _ in range(7)]
    envelopes = [query(identities[DC], H, query_id=f"q{i}") for i, H in enumerate(models)]
    try:
        handles = [network.post(envelope) for envelope in envelopes]  # nothing waited for yet
        replies = [handle.result() for handle in handles]
        stats = deployment.call("compliance", "stats")
        for reply in replies:  # the querier's side of the wire: it receives in this process
            transcript.append(reply)
        transcript.close()
    finally:
        deployment.shutdown()
    # Budget 1.0 at 0.25 a query: the first four are answered (exactly: scale 0), the rest refused, in order.
    for i, reply in enumerate(replies[:4]):
        answer = check_reply(reply, keyring, DC, "metric-answer")
        assert answer.payload["query_id"] == f"q{i}"
        np.testing.assert_array_equal(answer.payload["values"], evaluate("sp", models[i], a, y))
    for reply in replies[4:]:
        assert reply.kind == REFUSAL and reply.payload["reason"] == BUDGET_EXCEEDED
    assert stats["epsilon_spent"] == {DC: 4 * EPSILON} and stats["budget_refusals"] == 3
    assert check_transcript(transcript.path).messages == 2 * len(envelopes)
    assert [e.id for e in read_transcript(transcript.path)] == [e.id for e in envelopes + replies]


def test_a_replay_inside_a_pipeline_is_refused_and_the_party_keeps_serving(ray_session, identities, keyring,
                                                                           audit_arrays, tmp_path):
    deployment = RayDeployment()
    _world(deployment, identities, keyring, audit_arrays, tmp_path)
    first, second = (query(identities[DC], np.full((1, 40), 0.5), query_id=f"r{i}") for i in range(2))
    try:
        handles = [deployment.submit("compliance", "receive", e) for e in (first, first, second)]
        kinds = [(h.result().kind, h.result().payload.get("reason")) for h in handles]
        stats = deployment.call("compliance", "stats")
    finally:
        deployment.shutdown()
    assert kinds == [("metric-answer", None), (REFUSAL, REPLAY), ("metric-answer", None)]
    assert stats["epsilon_spent"] == {DC: 2 * EPSILON}  # the replay spent nothing


@pytest.mark.parametrize("crash_at", [0, 2, 4], ids=["all-four-lost", "two-answered-two-lost", "after-all-four"])
def test_a_crash_in_the_middle_of_a_pipeline_loses_and_repeats_nothing(ray_session, identities, keyring,
                                                                        audit_arrays, tmp_path, crash_at):
    """The host dies with calls in flight: the party is restored from the journal and the rest is delivered once."""
    ray = ray_session
    deployment = RayDeployment()
    network, transcript = _world(deployment, identities, keyring, audit_arrays, tmp_path)
    rng = np.random.default_rng(4)
    envelopes = [query(identities[DC], rng.random((1, 40)), query_id=f"c{i}") for i in range(6)]
    try:
        early = [network.post(e) for e in envelopes[:2]]
        answered = [check_reply(h.result(), keyring, DC, "metric-answer").payload["values"] for h in early]
        # The host's process ends with deliveries queued behind the crash (Ray runs them in order).
        late = [network.post(e) for e in envelopes[2:2 + crash_at]]
        crash = deployment.hosts["compliance"].__ray_call__.remote(_crash)
        late += [network.post(e) for e in envelopes[2 + crash_at:]]
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(crash)
        replies = [h.result() for h in late]
        stats = deployment.call("compliance", "stats")
        # A retried query is answered from the ledger (no second debit); the replay guard was restored.
        again = deployment.call("compliance", "receive", envelopes[0])
    finally:
        deployment.shutdown()
    assert deployment.recoveries == {"compliance": 1}  # after all four, the call to stats finds the party gone
    kinds = [r.kind for r in replies]
    assert kinds == ["metric-answer", "metric-answer", REFUSAL, REFUSAL]  # budget 1.0: four answers in all
    assert all(r.payload["reason"] == BUDGET_EXCEEDED for r in replies[2:])
    assert stats["epsilon_spent"] == {DC: 4 * EPSILON}
    assert again.kind == REFUSAL and again.payload["reason"] == REPLAY
    assert len(answered) == 2
    transcript.abort()
    assert [e.id for e in read_transcript(transcript.path, verify=False)] == [e.id for e in envelopes]
