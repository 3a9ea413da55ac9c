"""A compliance party and a querier wired up in-process or as Ray actors (shared by unit and integration tests)."""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import numpy as np
from blake3 import blake3

from parley.parties import wire
from parley.parties.compliance import Compliance
from parley.parties.network import LocalDeployment
from parley.parties.party import Party
from parley.parties.wire import Envelope
from parley.protocols import get_protocol
from parley.protocols.base import AuditSet
from tests.fixed_secrets import party_secret


def deploy_compliance(deployment, identities, keyring, audit_arrays, decimals=None):
    a, y = audit_arrays
    protocol = get_protocol("raw")(get_protocol("raw").Params(decimals=decimals))
    deployment.add("compliance", Compliance, identities["compliance"], keyring, AuditSet(a=a, y=y), protocol,
                   ["data-center"], party_secret(0))
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


class Echo(Party):
    """A party (role compliance) that answers a metric query with the query's own predictions, unchanged.

    Its reply carries the very array it received and verified, so it shows what the wire costs
    when a large payload travels both ways (tests/benchmarks/bench_wire.py, the hashing tests).
    """

    handlers = {"metric-query": "_echo"}

    def __init__(self, identity: wire.Identity, keyring: wire.Keyring) -> None:
        super().__init__(identity, keyring, "raw")
        self.meter: HashMeter | None = None

    def _echo(self, envelope: Envelope) -> Envelope:
        payload = envelope.payload
        return self.seal(envelope.sender, "metric-answer", {"metric": payload["metric"],
                                                            "values": payload["predictions"],
                                                            "query_id": payload["query_id"]})

    def meter_hashing(self) -> None:
        """Count from now on the bytes this process hashes for envelope digests."""
        self.meter = HashMeter.install()

    def hashed_bytes(self) -> int:
        return -1 if self.meter is None else self.meter.bytes


class _Metered:
    def __init__(self, meter: HashMeter, inner: Any) -> None:
        self._meter, self._inner = meter, inner

    def update(self, data: Any) -> None:
        self._meter.count(data)
        self._inner.update(data)

    def digest(self) -> bytes:
        return self._inner.digest()

    def hexdigest(self) -> str:
        return self._inner.hexdigest()


class HashMeter:
    """Stands in for the hash functions of :mod:`parley.parties.wire` and counts the bytes they hash.

    Every digest the wire computes goes through ``wire.hashlib.sha256`` (payload digests over the
    tagged encoding) or ``wire.blake3`` (each array's bytes), so the count is the bytes hashed,
    whatever the wire's own bookkeeping says.
    """

    def __init__(self) -> None:
        self.bytes = 0
        self._lock = threading.Lock()

    @classmethod
    def install(cls) -> HashMeter:
        meter = cls()
        wire.hashlib = meter  # type: ignore[assignment]
        wire.blake3 = meter.blake3  # type: ignore[assignment]
        return meter

    @staticmethod
    def uninstall() -> None:
        wire.hashlib = hashlib
        wire.blake3 = blake3

    def count(self, data: Any) -> None:
        with self._lock:
            self.bytes += memoryview(data).nbytes

    def sha256(self, data: Any = b"") -> _Metered:
        metered = _Metered(self, hashlib.sha256())
        metered.update(data)
        return metered

    def blake3(self, data: Any = b"") -> _Metered:
        metered = _Metered(self, blake3())
        metered.update(data)
        return metered
