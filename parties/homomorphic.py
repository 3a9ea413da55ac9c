"""The querier's side of ``he``: it holds the CKKS secret key, sends ciphertexts, decrypts the answers.

Under ``he`` (:mod:`parley.protocols.mechanisms.homomorphic`) a querier never sends predictions:
:class:`HeQuerier` turns each ``metric-query`` it would send into an ``he-query`` carrying its
public key, Galois keys and the predictions' ciphertexts, and turns the compliance party's
``he-answer`` (masked, noise-flooded ciphertexts) into the ``metric-answer`` its role expects.
The public context travels until a query is answered; later queries name it by ``context_id``.
Two parties, one exchange (two signed envelopes) per query; the secret key never leaves the querier.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from parley.parties.codecs import Codec
from parley.parties.encodings import Encoding, Wiring, register_encoding
from parley.parties.run_secrets import PartySecret, RunSecrets
from parley.parties.wire import INVALID_PAYLOAD, Envelope
from parley.protocols.base import AuditSet, Protocol
from parley.protocols.crypto.ckks import (
    QuerierKeys,
    context_id,
    from_bytes,
    layout,
    to_bytes,
)
from parley.protocols.errors import QueryError, WireError
from parley.protocols.mechanisms.homomorphic import HeProtocol
from parley.protocols.queries import apply_edits, validate_query_id

__all__ = ["HeEncoding", "HeQuerier", "NOT_PENDING", "BAD_REPLY"]

NOT_PENDING = "an he-answer for query {got!r}, which is not a query this querier is computing ({pending})"
BAD_REPLY = "an he-answer must hold {want} ciphertexts in 'answers' (got {got})"


class HeQuerier(Codec):
    """The querier's codec under ``he``: its keys and pending queries; encrypts predictions, decrypts answers."""

    kinds = frozenset({"he-answer"})

    def __init__(self, protocol: HeProtocol, n: int, record: bool = False, secret: PartySecret | None = None) -> None:
        super().__init__()
        self.protocol = protocol
        self.n = n
        #: Seeds SEAL's generator of this querier's keys and encryptions (None: SEAL's own entropy).
        self.secret = secret
        self._keys: QuerierKeys | None = None  # made in the querier's own process (SEAL objects do not pickle)
        #: Keep (metric, predictions, decrypted values) of every answer in ``opened`` (the honest queries' error).
        self.record = record
        self.kept: dict[str, np.ndarray] = {}
        self._pending: dict[str, dict[str, Any]] = {}
        self._context_id: str | None = None

    @property
    def keys(self) -> QuerierKeys:
        """The querier's key pair, generated on first use, with Galois keys for its block's rotations only."""
        if self._keys is None:
            rng = None if self.secret is None else self.secret.rng("he-keys")
            self._keys = QuerierKeys(layout(self.n, 1).block, rng)
        return self._keys

    def encode(self, kind: str, payload: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
        """A ``metric-query`` leaves as an ``he-query`` holding ciphertexts; anything else as it is."""
        return ("he-query", self.encrypt(payload)) if kind == "metric-query" else (kind, payload)

    def decode(self, envelope: Envelope) -> dict[str, Any]:
        """The ``metric-answer`` payload of an ``he-answer``."""
        return self.decrypt(envelope)

    def encrypt(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """A ``metric-query`` payload -> the ``he-query`` payload (public context and ciphertexts only)."""
        query_id = validate_query_id(payload["query_id"])
        metric = self.protocol.check_metric(payload["metric"])
        if "edit_of" in payload:
            H = apply_edits(self.kept[payload["edit_of"]], np.atleast_2d(payload["indices"]),
                            np.atleast_2d(payload["values"]))
        else:
            H = np.atleast_2d(np.asarray(payload["predictions"], dtype=np.float64))
        if not (np.all(H >= 0.0) and np.all(H <= 1.0)):
            raise QueryError("he: predictions must lie in [0, 1]")
        if payload.get("keep"):
            self.kept[query_id] = H[0]
        m = int(H.shape[0])
        self._pending[query_id] = {"metric": metric, "m": m, "predictions": H if self.record else None}
        # the public context travels with the first query; later ones name it by its digest
        context: dict[str, Any] = {"context_id": self._context_id} if self._context_id is not None \
            else dict(self.keys.public_context())
        out: dict[str, Any] = {"metric": metric, "m": m, "query_id": query_id, **context,
                               "ciphertexts": [to_bytes(ct) for ct in self.keys.encrypt(H)]}
        if "purpose" in payload:
            out["purpose"] = payload["purpose"]
        return out

    def decrypt(self, envelope: Envelope) -> dict[str, Any]:
        """The ``metric-answer`` payload from an ``he-answer``: the answer slots' real parts, clipped to the range."""
        got = envelope.payload.get("query_id")
        if type(got) is not str or got not in self._pending:
            raise WireError(INVALID_PAYLOAD, NOT_PENDING.format(got=got, pending=", ".join(self._pending) or "none"))
        state = self._pending[got]
        want = layout(self.n, state["m"]).ciphertexts
        blobs = envelope.payload.get("answers")
        if not isinstance(blobs, list) or len(blobs) != want:
            raise WireError(INVALID_PAYLOAD, BAD_REPLY.format(want=want, got=type(blobs).__name__ if not isinstance(
                blobs, list) else len(blobs)))
        try:
            cts = [from_bytes("Ciphertext", b, "he", f"answers[{i}]", fresh=False) for i, b in enumerate(blobs)]
        except QueryError as exc:
            raise WireError(INVALID_PAYLOAD, str(exc)) from None
        values = self.protocol.clip(state["metric"], self.keys.answers(cts, self.n, state["m"]))
        # answered: the compliance party holds the context (a refusal leaves it unsent, so the next query resends it)
        ctx = self.keys.public_context()
        self._context_id = context_id(ctx["public_key"], ctx["galois_keys"])
        del self._pending[got]
        if self.record:
            self.opened.append((state["metric"], state["predictions"], values))
        return {"metric": state["metric"], "query_id": got, "values": values,
                "flood_sigma": envelope.payload.get("flood_sigma")}


@register_encoding
class HeEncoding(Encoding):
    """``he``: each querier holds its own CKKS key pair (from its own secret) and sends ciphertexts."""

    name = "he"

    def wire(self, protocol: Protocol, audit: AuditSet, secrets: RunSecrets, parties: Mapping[str, str]) -> Wiring:
        """Both queriers wear an :class:`HeQuerier`; the data center's records what it opens."""
        he = cast(HeProtocol, protocol)
        return Wiring(protocol,
                      HeQuerier(he, audit.n, record=True, secret=secrets.party(parties["data_center"])),
                      HeQuerier(he, audit.n, secret=secrets.party(parties["adversary"])))
