"""Access control: who may send what to whom, and whose budget a query spends.

The policy is :func:`parley.parties.encodings.role_sends` (what each role may send) plus
each party's handlers (what it accepts) plus the compliance party's list of
registered queriers (whom it serves), with budgets kept per querier in one
ledger. These tests exercise every role against every kind on real parties.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from parley.parties import confidential, wire
from parley.parties.compliance import Compliance
from parley.parties.data_center import DataCenter, DataCenterData
from parley.parties.encodings import role_sends
from parley.parties.learners.base_model import ModelSpec
from parley.parties.party import REFUSAL, Party
from parley.protocols import get_protocol
from parley.protocols.budget import PureDP
from parley.protocols.errors import ParleyError
from tests.fixed_secrets import party_secret

from .hostile import N, audit_set

#: What each role may send, as the registered protocols and encodings declare it.
ROLES = role_sends()

KINDS = sorted(set().union(*ROLES.values()) | {"metric-query", "bogus"})


def _world(kx: bool = False, queriers=("dc-a",)):
    names = {"compliance": "compliance", "dc-a": "data-center", "dc-b": "data-center", "observer": "observer",
             "rogue": "rogue-role"}
    ids = {name: wire.Identity.generate(name, role, kx=kx and role != "observer") for name, role in names.items()}
    ring = wire.Keyring()
    for identity in ids.values():
        ring.add(identity.key_entry())
    return ids, ring


_RNG = np.random.default_rng(0)  # one stream shared by every _query call


def _query(identity, to="compliance", kind="metric-query", query_id=None, m=1, rng=_RNG):
    payload = {"metric": "sp", "predictions": (rng.random((m, N)) < 0.5).astype(np.float64),
               "query_id": query_id or uuid.uuid4().hex}
    return identity.seal(to, kind, "raw", payload)


def _compliance(ids, ring, protocol="raw", **kwargs):
    proto = get_protocol(protocol)(get_protocol(protocol).Params(**({"epsilon": 0.5} if protocol == "laplace" else {})))
    return Compliance(ids["compliance"], ring, audit_set(), proto, kwargs.pop("queriers", ["dc-a"]),
                      party_secret(1), **kwargs)


def _reason(reply):
    return reply.payload["reason"] if reply is not None and reply.kind == REFUSAL else (reply.kind if reply else None)


def test_role_matrix_on_the_compliance_party():
    """Each role x kind: accepted exactly when the role may send it and the compliance party handles it."""
    ids, ring = _world()
    party = _compliance(ids, ring, queriers=["dc-a", "dc-b", "observer", "rogue"])
    for sender in ("dc-a", "observer", "rogue", "compliance"):
        role = ids[sender].role
        for kind in KINDS:
            got = _reason(party.receive(_query(ids[sender], kind=kind)))
            allowed = kind in ROLES.get(role, ()) and kind in party.handlers
            if kind == REFUSAL and not allowed:
                assert got is None  # a refusal is never refused (no ping-pong), just dropped
            elif allowed:
                assert got == "metric-answer", (sender, kind, got)
            else:
                assert got == wire.KIND_NOT_ALLOWED, (sender, kind, got)


def test_role_matrix_on_the_data_center():
    """The data center takes answers and replies from the compliance role only, and only to what it asked."""
    ids, ring = _world()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 2))
    y = (rng.random(N) < 0.5).astype(np.int8)
    dc = DataCenter(ids["dc-a"], ring, DataCenterData(X, y, X, y), ModelSpec(), "compliance", "raw", rng)
    for sender in ("compliance", "dc-b", "observer"):
        for kind in KINDS:
            asked = dc.request("release-request", {}).payload["query_id"]  # a query id it asked
            payload = {"metric": "sp", "query_id": asked, "values": np.zeros(1)}
            got = _reason(dc.receive(ids[sender].seal("dc-a", kind, "raw", payload)))
            if kind in ROLES[ids[sender].role] and kind in dc.handlers:
                assert got is None, (sender, kind, got)  # taken in
            elif kind == REFUSAL:
                assert got is None
            else:
                assert got == wire.KIND_NOT_ALLOWED, (sender, kind, got)
    assert len(dc.answers_received()) == 1  # the one metric-answer from the compliance party
    unasked = {"metric": "sp", "query_id": uuid.uuid4().hex, "values": np.zeros(1)}
    for kind in ("metric-answer", "attribute-release", "accept-set", "fairness-certificate"):
        assert _reason(dc.receive(ids["compliance"].seal("dc-a", kind, "raw", unasked))) == wire.INVALID_PAYLOAD


def test_passive_observer_cannot_send():
    ids, ring = _world()
    party = _compliance(ids, ring, queriers=["dc-a", "observer"])
    for kind in KINDS:
        assert _reason(party.receive(_query(ids["observer"], kind=kind))) == (None if kind == REFUSAL
                                                                             else wire.KIND_NOT_ALLOWED)
    assert party.models_answered == 0
    # A party that holds no identity (an observer that only reads the transcript, a retired data center) cannot seal.
    with pytest.raises(ParleyError, match="holds no identity"):
        Party(None, ring, "raw").seal("compliance", "metric-query", {})


def test_unregistered_keys_are_refused():
    ids, ring = _world()
    party = _compliance(ids, ring)
    outsider = wire.Identity.generate("outsider", "data-center")
    assert _reason(party.receive(_query(outsider))) == wire.UNKNOWN_SENDER
    # A key in the keyring with a querier's role, but not registered with this compliance party.
    assert _reason(party.receive(_query(ids["dc-b"]))) == wire.NOT_REGISTERED
    # The outsider claims a registered name but signs with its own key.
    impostor = wire.Identity("dc-a", "data-center", outsider.private_key, next_seq=10**6)
    assert _reason(party.receive(_query(impostor))) == wire.BAD_SIGNATURE
    assert party.models_answered == 0
    assert _reason(party.receive(_query(ids["dc-a"]))) == "metric-answer"


def test_a_querier_cannot_spend_another_queriers_budget(tmp_path):
    """Two queriers, separate budgets, one ledger: B's queries, forgeries and id reuse never touch A's budget."""
    ids, ring = _world()
    party = _compliance(ids, ring, protocol="laplace", queriers=["dc-a", "dc-b"], ledger_path=tmp_path / "l.sqlite",
                        budgets={"dc-a": PureDP(epsilon=1.0), "dc-b": PureDP(epsilon=1.0)})
    first_a = _query(ids["dc-a"], query_id="a-1")
    answer_a = party.receive(first_a)
    assert answer_a.kind == "metric-answer"
    # B spends its own budget: two answers at epsilon 0.5, then refusals.
    got = [_reason(party.receive(_query(ids["dc-b"]))) for _ in range(4)]
    assert got == ["metric-answer", "metric-answer", wire.BUDGET_EXCEEDED, wire.BUDGET_EXCEEDED]
    # B in A's name (its own key): refused before any accounting.
    impostor = wire.Identity("dc-a", "data-center", ids["dc-b"].private_key, next_seq=10**6)
    assert _reason(party.receive(_query(impostor))) == wire.BAD_SIGNATURE
    # B reuses A's query id (to be served A's stored answer, or charged to A): refused, nothing disclosed.
    reuse = party.receive(ids["dc-b"].seal("compliance", "metric-query", "laplace", dict(first_a.payload)))
    assert _reason(reuse) == wire.INVALID_QUERY and "already taken" in reuse.payload["detail"]
    assert "values" not in reuse.payload
    spent = party.ledger.total()
    assert spent["dc-a"].epsilon == pytest.approx(0.5) and spent["dc-b"].epsilon == pytest.approx(1.0)
    # A still has half of its budget.
    assert _reason(party.receive(_query(ids["dc-a"]))) == "metric-answer"
    assert _reason(party.receive(_query(ids["dc-a"]))) == wire.BUDGET_EXCEEDED
    assert {d["querier"] for d in party.ledger.entries()} == {"dc-a", "dc-b"}


def test_on_a_confidential_channel_a_querier_cannot_read_anothers_answers():
    ids, ring = _world(kx=True)
    party = _compliance(ids, ring, queriers=["dc-a", "dc-b"])
    body = confidential.outgoing(ids["dc-a"], ring, "compliance", "metric-query", "raw",
                                 _query(ids["dc-a"]).payload)
    reply = party.receive(ids["dc-a"].seal("compliance", "metric-query", "raw", body))
    assert confidential.is_sealed(reply.payload)
    assert confidential.incoming(reply, ids["dc-a"], ring).payload["values"].shape == (1,)
    # B (a registered querier with its own X25519 key) intercepts A's answer and readdresses nothing: it cannot open it.
    with pytest.raises(wire.WireError) as info:
        confidential.open_payload(reply.payload, ids["dc-b"].kx_private, ring.entry("compliance").kx_public,
                                  "compliance", "dc-a", reply.kind, reply.protocol)
    assert info.value.reason == confidential.UNDECRYPTABLE
