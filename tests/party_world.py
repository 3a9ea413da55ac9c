"""A compliance party and a querier wired up in-process or as Ray actors (shared by unit and integration tests)."""

from __future__ import annotations

import numpy as np

from parley.parties import wire
from parley.parties.compliance import Compliance
from parley.parties.network import LocalDeployment
from parley.protocols import get_protocol
from parley.protocols.base import AuditSet


def deploy_compliance(deployment, identities, keyring, audit_arrays, decimals=None):
    a, y = audit_arrays
    protocol = get_protocol("raw")(get_protocol("raw").Params(decimals=decimals))
    deployment.add("compliance", Compliance, identities["compliance"], keyring, AuditSet(a=a, y=y), protocol,
                   ["data-center"], np.random.default_rng(0))
    return deployment


def local_compliance(identities, keyring, audit_arrays, decimals=None):
    return deploy_compliance(LocalDeployment(), identities, keyring, audit_arrays, decimals)


def query(identity, H, metric="sp", query_id="q", recipient="compliance", kind="metric-query"):
    return identity.seal(recipient, kind, "raw", {"metric": metric, "predictions": H, "query_id": query_id})


def hostile_envelopes(identities):
    """(name, envelope, expected reason) for each attack on the wire the compliance party must refuse."""
    dc = identities["data-center"]
    H = np.full((1, 40), 0.5)
    honest = query(dc, H, query_id="orig")
    forged = wire.Identity("data-center", "data-center", identities["outsider"].private_key, next_seq=10_000)
    return [
        ("forged signature", query(forged, H, query_id="forged"), wire.BAD_SIGNATURE),
        ("tampered payload",
         honest.model_copy(update={"payload": {**honest.payload, "predictions": np.zeros((1, 40))}}),
         wire.DIGEST_MISMATCH),
        ("unknown sender", query(identities["outsider"], H), wire.UNKNOWN_SENDER),
        ("disallowed kind", query(dc, H, kind="metric-answer"), wire.KIND_NOT_ALLOWED),
        ("observer may not send", query(identities["observer"], H), wire.KIND_NOT_ALLOWED),
        ("wrong recipient", query(dc, H, recipient="observer"), wire.WRONG_RECIPIENT),
    ]
