"""Load: concurrent queriers against one compliance party with per-querier budgets (test and benchmark).

Q queriers (threads of this process, each with its own Ed25519 identity and a
budget) send K metric queries each to one compliance party (a Ray actor, or an
in-process object behind a lock, which serializes calls as an actor does).
The protocol is ``laplace`` at epsilon = 1/4 per query, and querier i may spend
(i + 1) * quota / 4, so exactly (i + 1) * quota of its queries are answered and
the rest refused with ``budget-exceeded``: the outcome is known in advance.
Every ``retry_every``-th query is sent again under the same query id in a new
envelope (a client retry): it must get the same noisy values back and cost
nothing. The audit set is Adult's (race, 1,000 rows), the queries are random
binary models.

:func:`check` states what must hold; :func:`run_load` returns the counts and the
throughput (messages per second, retries included).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties import wire
from parley.parties.compliance import Compliance
from parley.parties.network import LocalDeployment
from parley.parties.party import REFUSAL
from parley.protocols import get_protocol
from parley.protocols.base import AuditSet
from parley.protocols.budget import PureDP
from tests.fixed_secrets import party_secret

EPSILON = 0.25  # a power of two: sums of debits are exact, so the budget boundary is exact too


def adult_audit() -> AuditSet:
    """A and y of Adult's audit set (race), as the catalog scenarios draw it."""
    from parley.scenarios.catalog import scenario_path
    from parley.scenarios.datasets import load_split
    from parley.scenarios.spec import Scenario

    spec = Scenario.from_toml(scenario_path("adult-raw-single-query")).dataset
    split = load_split(spec, np.random.default_rng(0))
    return AuditSet(a=split.a_audit, y=split.y_audit)


class _Serialized:
    """An in-process deployment whose calls run one at a time (what a Ray actor guarantees)."""

    def __init__(self) -> None:
        self.inner = LocalDeployment()
        self.lock = threading.Lock()

    def add(self, *args: Any, **kwargs: Any) -> None:
        self.inner.add(*args, **kwargs)

    def call(self, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return self.inner.call(*args, **kwargs)

    def shutdown(self) -> None:
        self.inner.shutdown()


def quotas(queriers: int, quota: int) -> dict[str, int]:
    """Answers each querier's budget pays for: (i + 1) * quota."""
    return {f"q{i}": (i + 1) * quota for i in range(queriers)}


def run_load(ledger_path: Path, queriers: int = 8, queries: int = 1000, quota: int = 100, retry_every: int = 10,
             backend: str = "ray", audit: AuditSet | None = None) -> dict[str, Any]:
    """Run the load and return per-querier counts, the ledger's totals and debits, and the throughput."""
    audit = audit if audit is not None else adult_audit()
    allowed = quotas(queriers, quota)
    compliance = wire.Identity.generate("compliance", "compliance")
    ids = {name: wire.Identity.generate(name, "data-center") for name in allowed}
    ring = wire.Keyring()
    for identity in (compliance, *ids.values()):
        ring.add(identity.key_entry())
    if backend == "ray":
        from parley.parties.ray.cluster import ensure_ray
        from parley.parties.ray.deployment import RayDeployment

        ensure_ray()
        deployment = RayDeployment()
    else:
        deployment = _Serialized()
    protocol = get_protocol("laplace")(get_protocol("laplace").Params(epsilon=EPSILON))
    deployment.add("compliance", Compliance, compliance, ring, audit, protocol, sorted(allowed),
                   party_secret(1), ledger_path=str(ledger_path),
                   budgets={name: PureDP(epsilon=EPSILON * k) for name, k in allowed.items()})
    n = audit.n

    def querier(name: str) -> dict[str, Any]:
        me, rng = ids[name], np.random.default_rng(int(name[1:]))
        counts: Counter[str] = Counter()
        retry_mismatch = 0
        for k in range(queries):
            payload = {"metric": "sp", "predictions": (rng.random((1, n)) < 0.5).astype(np.float64),
                       "query_id": uuid.uuid4().hex}
            first = _ask(deployment, me, ring, payload)
            counts[first.kind if first.kind != REFUSAL else first.payload["reason"]] += 1
            if retry_every and k % retry_every == 0:
                again = _ask(deployment, me, ring, payload)
                counts["retries"] += 1
                same = again.kind == first.kind and (
                    again.kind == REFUSAL or np.array_equal(again.payload["values"], first.payload["values"]))
                retry_mismatch += not same
        return {"counts": dict(counts), "retry_mismatch": retry_mismatch}

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=queriers) as pool:
        results = dict(zip(allowed, pool.map(querier, allowed), strict=True))
    wall = time.perf_counter() - start
    stats = deployment.call("compliance", "stats")
    summary = deployment.call("compliance", "ledger_summary")
    deployment.call("compliance", "close")
    deployment.shutdown()
    messages = sum(queries + r["counts"].get("retries", 0) for r in results.values())
    from parley.parties.ledger import Ledger

    with Ledger(ledger_path) as ledger:
        debits = ledger.entries()
        totals = {q: b.epsilon for q, b in ledger.total().items()}
    return {"queriers": results, "quotas": allowed, "stats": stats, "summary": summary, "debits": debits,
            "totals": totals, "wall_s": wall, "messages": messages, "throughput": messages / wall,
            "queries": queries}


def _ask(deployment: Any, me: wire.Identity, ring: wire.Keyring, payload: dict[str, Any]) -> wire.Envelope:
    """Seal, send, and verify the reply as addressed to ``me``."""
    reply = deployment.call("compliance", "receive", me.seal("compliance", "metric-query", "laplace", payload))
    wire.verify_envelope(reply, ring, recipient=me.name)
    return reply


def check(result: dict[str, Any]) -> None:
    """What the load must show: answers and refusals as the budgets say, retries free, ledger = its debits."""
    debits_by: Counter[str] = Counter()
    for d in result["debits"]:
        debits_by[d["querier"]] += 1
    for name, quota in result["quotas"].items():
        got = result["queriers"][name]
        expected_answers = min(quota, result["queries"])
        assert got["counts"].get("metric-answer", 0) == expected_answers, (name, got)
        assert got["counts"].get(wire.BUDGET_EXCEEDED, 0) == result["queries"] - expected_answers, (name, got)
        assert got["retry_mismatch"] == 0, (name, got)
        assert debits_by[name] == expected_answers  # one debit per answered query id, none for retries
        assert result["totals"][name] == EPSILON * expected_answers
    assert sum(d["epsilon"] for d in result["debits"]) == sum(result["totals"].values())
    assert result["stats"]["answers_replayed"] >= 1
