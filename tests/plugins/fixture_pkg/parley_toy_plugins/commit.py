"""``toy-commit``: a two-round fairness check, the data center's predictions committed before the check is drawn.

Round 1: the data center sends ``toy-commit`` (a salted SHA-256 of its predictions on the audit set); the
compliance party replies ``toy-challenge`` (a nonce and the people it will check, drawn from its own secret).
Round 2: the data center sends ``toy-reveal`` (the predictions, bit-packed by its codec, and the salt); the
compliance party opens the commitment and replies ``toy-result``: SP of the predictions on the people checked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from parley.protocols import AuditSet, ProtocolParams, RequestProtocol
from parley.protocols.base import Holdings
from parley.protocols.errors import QueryError

COMMIT, CHALLENGE, REVEAL, RESULT = "toy-commit", "toy-challenge", "toy-reveal", "toy-result"


def pack(predictions: np.ndarray) -> np.ndarray:
    """0/1 predictions as bits, eight people to a byte."""
    return np.packbits(np.asarray(predictions) != 0)


def unpack(packed: Any, n: int) -> np.ndarray:
    """The n 0/1 predictions :func:`pack` packed."""
    return np.unpackbits(np.asarray(packed, dtype=np.uint8), count=n).astype(np.int8)


def commitment(salt: str, packed: np.ndarray, n: int) -> str:
    """SHA-256 of the salt, n and the packed predictions: it binds the data center to them and hides them."""
    return hashlib.sha256(f"{salt}|{n}|".encode() + np.asarray(packed, dtype=np.uint8).tobytes()).hexdigest()


def signed_sp(predictions: np.ndarray, a: np.ndarray) -> float:
    """P(yhat = 1 | a = 1) - P(yhat = 1 | a = 0); an empty group's rate counts as 0."""
    rates = [float(predictions[a == g].mean()) if np.any(a == g) else 0.0 for g in (0, 1)]
    return rates[1] - rates[0]


class ToyCommitParams(ProtocolParams):
    share: float = Field(default=0.5, gt=0.0, le=1.0, description="share of the audit set the challenge checks")
    decimals: int = Field(default=2, ge=0, le=6, description="the released SP is rounded to this many decimals")


class ToyCommit(RequestProtocol[ToyCommitParams]):
    """Commit, challenge, reveal, result: SP of committed predictions on people drawn after the commitment."""

    name = "toy-commit"
    Params = ToyCommitParams
    flow = "toy-commit"  # the exchange that drives it (parley_toy_plugins.exchange)
    metrics: ClassVar[tuple[str, ...]] = ()  # it answers no metric-query
    requests: ClassVar[Mapping[str, str]] = {COMMIT: CHALLENGE, REVEAL: RESULT}

    def __init__(self, params: ToyCommitParams | None = None) -> None:
        super().__init__(params)
        self.open: dict[str, dict[str, Any]] = {}  # query id of a commitment -> what its reveal must match

    def respond(self, kind: str, payload: Mapping[str, Any], holdings: Holdings,
                rng: np.random.Generator) -> dict[str, Any]:
        audit = holdings["audit"]
        if payload.get("n") != audit.n:
            raise QueryError(f"{kind} must be about the {audit.n} people of the audit set, got n={payload.get('n')!r}")
        if kind == COMMIT:
            return self._challenge(payload, audit, rng)
        return self._result(payload, audit)

    def _challenge(self, payload: Mapping[str, Any], audit: AuditSet, rng: np.random.Generator) -> dict[str, Any]:
        digest = payload.get("commitment")
        if not (isinstance(digest, str) and len(digest) == 64):
            raise QueryError("a toy-commit carries a SHA-256 commitment (64 hex digits)")
        checked = max(1, round(self.params.share * audit.n))
        people = np.sort(rng.choice(audit.n, size=checked, replace=False)).astype(np.int64)
        nonce = rng.bytes(16).hex()
        self.open[payload["query_id"]] = {"commitment": digest, "nonce": nonce, "people": people}
        return {"nonce": nonce, "people": people, "n": audit.n}

    def _result(self, payload: Mapping[str, Any], audit: AuditSet) -> dict[str, Any]:
        opened = self.open.get(str(payload.get("commit_id")))
        if opened is None or payload.get("nonce") != opened["nonce"]:
            raise QueryError("a toy-reveal must name an open commitment and echo its challenge's nonce")
        packed = payload.get("packed")
        if not (isinstance(packed, np.ndarray) and packed.dtype == np.uint8 and packed.shape == ((audit.n + 7) // 8,)):
            raise QueryError(f"a toy-reveal carries the predictions bit-packed: {(audit.n + 7) // 8} bytes (uint8)")
        if commitment(str(payload.get("salt")), packed, audit.n) != opened["commitment"]:
            raise QueryError("the revealed predictions do not open the commitment")
        del self.open[payload["commit_id"]]
        people, decimals = opened["people"], self.params.decimals
        value = round(signed_sp(unpack(packed, audit.n)[people], audit.a[people]), decimals)
        return {"value": value, "decimals": decimals, "checked": int(people.size), "opened": True}
