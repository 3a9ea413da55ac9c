"""A compliance actor killed between queries: its successor on the same ledger file carries on exactly."""

from __future__ import annotations

import time

import numpy as np
import pytest

from parley.parties import wire
from parley.parties.compliance import Compliance, account_of
from parley.parties.ledger import Ledger
from parley.parties.party import REFUSAL, check_reply
from parley.parties.ray.deployment import RayDeployment
from parley.protocols.base import AuditSet
from parley.protocols.budget import PureDP
from tests.fixed_secrets import party_secret
from tests.ledger_world import noisy
from tests.party_world import query

pytestmark = pytest.mark.ray

DC = "data-center"


def _add_compliance(deployment, identities, keyring, audit_arrays, path, seed):
    a, y = audit_arrays
    deployment.add("compliance", Compliance, identities["compliance"], keyring, AuditSet(a=a, y=y), noisy(0.25),
                   [DC], party_secret(seed), ledger_path=str(path), budgets={DC: PureDP(epsilon=1.0)})


def _dead(ray, handle, timeout_s: float = 30.0) -> bool:
    """Wait until the killed actor is gone (ray.kill returns before the process has died)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get(handle.call_recorded.remote("stats", (), {}), timeout=timeout_s)
        except ray.exceptions.RayActorError:
            return True
        time.sleep(0.05)
    return False


def test_killed_compliance_actor_restarts_from_its_ledger(ray_session, identities, keyring, audit_arrays, tmp_path):
    ray = ray_session
    path = tmp_path / "ledger.sqlite"
    dc = identities[DC]
    H = np.vstack([np.linspace(0, 1, 40), np.full(40, 0.5)])
    deployment = RayDeployment()
    try:
        _add_compliance(deployment, identities, keyring, audit_arrays, path, seed=0)
        sent = {qid: query(dc, H, query_id=qid) for qid in ("q0", "q1")}
        answers = {qid: check_reply(deployment.call("compliance", "receive", e), keyring, DC, "metric-answer")
                   for qid, e in sent.items()}
        assert deployment.call("compliance", "stats")["epsilon_spent"] == {DC: 0.5}

        # Crash: the actor process dies between queries, nothing is closed or flushed.
        old_host = deployment.hosts.pop("compliance")
        ray.kill(old_host, no_restart=True)
        assert _dead(ray, old_host)
        # A fresh actor with the same ledger path (and a generator that would draw other noise).
        _add_compliance(deployment, identities, keyring, audit_arrays, path, seed=12345)

        stats = deployment.call("compliance", "stats")
        assert stats["epsilon_spent"] == {DC: 0.5} and stats["models_answered"] == 0  # debits kept, memory not
        with Ledger(path) as ledger:
            assert [e["query_id"] for e in ledger.entries()] == ["q0", "q1"]

        # The new actor's replay guard is empty, so an old envelope gets through it: the ledger answers it
        # from the record (no fresh noise to average, no debit) ...
        replayed = check_reply(deployment.call("compliance", "receive", sent["q0"]), keyring, DC, "metric-answer")
        # ... and so it does a retried query: a new envelope carrying the same query id.
        retried = check_reply(deployment.call("compliance", "receive", query(dc, H, query_id="q1")),
                              keyring, DC, "metric-answer")
        for reply, qid in ((replayed, "q0"), (retried, "q1")):
            assert reply.payload["values"].tobytes() == answers[qid].payload["values"].tobytes()
            assert reply.digest == answers[qid].digest and reply.id != answers[qid].id
        assert deployment.call("compliance", "stats")["epsilon_spent"] == {DC: 0.5}

        # The budget is 1.0 at 0.25 a query: two more answers, then a typed refusal, and it keeps serving.
        for qid in ("q2", "q3"):
            check_reply(deployment.call("compliance", "receive", query(dc, H, query_id=qid)), keyring, DC,
                        "metric-answer")
        refusal = deployment.call("compliance", "receive", query(dc, H, query_id="q4"))
        assert refusal.kind == REFUSAL and refusal.payload["reason"] == wire.BUDGET_EXCEEDED
        assert "querier 'data-center' would exceed its budget: limit (epsilon=1, delta=0)" in refusal.payload["detail"]
        still = check_reply(deployment.call("compliance", "receive", query(dc, H, query_id="q0")), keyring, DC,
                            "metric-answer")
        assert still.payload["values"].tobytes() == answers["q0"].payload["values"].tobytes()
        stats = deployment.call("compliance", "stats")
        assert stats["epsilon_spent"] == {DC: 1.0} and stats["budget_refusals"] == 1
        assert stats["answers_replayed"] == 3 and stats["models_answered"] == 2 * 2
        assert deployment.call("compliance", "ledger_summary")["queriers"][DC]["debits"] == 4
    finally:
        deployment.shutdown()


AUDIT, EXPLORE = account_of(DC, "audit"), account_of(DC, "exploratory")


def _add_purposes(deployment, identities, keyring, audit_arrays, path, seed):
    a, y = audit_arrays
    deployment.add("compliance", Compliance, identities["compliance"], keyring, AuditSet(a=a, y=y), noisy(0.25),
                   [DC], party_secret(seed), ledger_path=str(path),
                   budgets={AUDIT: PureDP(epsilon=0.5), EXPLORE: PureDP(epsilon=0.5)},
                   purposes=("audit", "exploratory"))


def _purpose_query(dc, H, query_id, purpose=None):
    payload = {"metric": "sp", "predictions": H, "query_id": query_id}
    return dc.seal("compliance", "metric-query", "raw", payload if purpose is None else {**payload, "purpose": purpose})


def test_killed_actor_keeps_each_purpose_account_and_exploration_never_blocks_the_audit(
        ray_session, identities, keyring, audit_arrays, tmp_path):
    ray = ray_session
    path = tmp_path / "ledger.sqlite"
    dc = identities[DC]
    H = np.full((1, 40), 0.5)
    deployment = RayDeployment()
    try:
        _add_purposes(deployment, identities, keyring, audit_arrays, path, seed=0)
        first = {qid: check_reply(deployment.call("compliance", "receive", _purpose_query(dc, H, qid, p)), keyring,
                                  DC, "metric-answer")
                 for qid, p in (("x0", None), ("x1", None), ("a0", "audit"))}
        assert deployment.call("compliance", "receive", _purpose_query(dc, H, "x2")).payload["reason"] == \
            wire.BUDGET_EXCEEDED  # exploration is spent

        old_host = deployment.hosts.pop("compliance")
        ray.kill(old_host, no_restart=True)  # the process dies: nothing closed or flushed
        assert _dead(ray, old_host)
        _add_purposes(deployment, identities, keyring, audit_arrays, path, seed=777)

        assert deployment.call("compliance", "stats")["epsilon_spent"] == {AUDIT: 0.25, EXPLORE: 0.5}
        refusal = deployment.call("compliance", "receive", _purpose_query(dc, H, "x3"))
        assert refusal.payload["reason"] == wire.BUDGET_EXCEEDED
        assert refusal.payload["detail"].startswith(f"querier {EXPLORE!r} would exceed its budget: limit (epsilon=0.5")
        # retries come from the record (same answer, no debit); the audit account still has its last piece
        for qid, p in (("x1", None), ("a0", "audit")):
            again = check_reply(deployment.call("compliance", "receive", _purpose_query(dc, H, qid, p)), keyring, DC,
                                "metric-answer")
            assert again.payload["values"].tobytes() == first[qid].payload["values"].tobytes()
        check_reply(deployment.call("compliance", "receive", _purpose_query(dc, H, "a1", "audit")), keyring, DC,
                    "metric-answer")
        assert deployment.call("compliance", "stats")["epsilon_spent"] == {AUDIT: 0.5, EXPLORE: 0.5}
        with Ledger(path) as ledger:  # the chain verifies on open, each debit on its own account
            assert [(e["query_id"], e["querier"]) for e in ledger.entries()] == [
                ("x0", EXPLORE), ("x1", EXPLORE), ("a0", AUDIT), ("a1", AUDIT)]
    finally:
        deployment.shutdown()
