"""The parties' side of secure computation (``mpc``, ``mpc-dp``): the helper, and queriers that send shares.

Under a secure protocol (:mod:`parley.protocols.mechanisms.secure`) a querier never sends
predictions: :class:`SecureQuerier` turns each ``metric-query`` it would send into an
``mpc-query`` carrying the compliance party's shares, forwards the compliance party's
padded share of A and its admission of the query to the :class:`Helper`, and opens the
answer from the three output shares.
Every share travels in a signed envelope, so the whole secure computation is in the
transcript: its bytes are the run's ``bytes`` and each query costs four envelopes (two rounds).

Keys. Each pair of the three parties shares a 16-byte key (the PRF and PRSS keys of MPyC's
:mod:`mpyc.thresha`), derived by HKDF-SHA256 from an X25519 agreement between per-run keys
that the world hands out with the signing keys (:func:`pair_keys`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from parley.parties.codecs import Codec, Forward
from parley.parties.encodings import Encoding, ExtraParty, Wiring, register_encoding
from parley.parties.party import REFUSAL, Party
from parley.parties.payload_limits import MAX_PAYLOAD_BYTES, PAYLOAD_TOO_LARGE
from parley.parties.run_secrets import RunSecrets
from parley.parties.wire import INVALID_PAYLOAD, INVALID_QUERY, Envelope, Identity, Keyring
from parley.protocols.base import AuditSet, Protocol
from parley.protocols.crypto.shamir import (
    PairKeys,
    decode_field,
    encode_field,
    field_bytes,
    open_output,
    output_share,
    querier_a_share,
    querier_rows,
    share_rows,
)
from parley.protocols.errors import QueryError, WireError
from parley.protocols.mechanisms.count_dp import SLICES
from parley.protocols.mechanisms.secure import SecureProtocol
from parley.protocols.queries import apply_edits, validate_query_id

__all__ = ["HELPER", "Helper", "MpcEncoding", "SecureQuerier", "pair_keys", "HELPER_ROLE",
           "NOT_PENDING", "ID_REUSED_HELPER", "HELPER_TOO_LARGE", "HELPER_NOT_ADMITTED", "HELPER_REPLY_DROPPED",
           "HELPER_KEPT_REPLIES"]

#: The role of the helper in keyrings (what it may send: :class:`MpcEncoding` ``roles``).
HELPER_ROLE = "mpc-helper"
#: The slot (and name) of the helper in a run.
HELPER = "mpc-helper"
NOT_PENDING = "an {kind} for query {got!r}, which is not the query this querier is computing ({pending!r})"
ID_REUSED_HELPER = "query id {query_id!r} was already computed for a different request"
HELPER_TOO_LARGE = ("an mpc-query of m = {m} models ({metric}, {rows} rows) over n = {n} people asks the helper for "
                    "{size:,} bytes of shares, above the limit of {limit:,} bytes that bounds the compliance party's "
                    "shares of the same query")
HELPER_NOT_ADMITTED = ("an mpc-query for query {query_id!r} ({metric}, m = {m}) without the compliance party's "
                       "admission of that header and share of A: the helper computes only for queries the "
                       "compliance party admitted")
HELPER_REPLY_DROPPED = ("query id {query_id!r} was answered and its reply is no longer kept (the helper keeps the "
                        "last {kept:,}): it is not computed again, which would draw fresh randomness for the same id")
#: Replies the helper keeps for retries, per helper; the oldest is dropped beyond this.
HELPER_KEPT_REPLIES = 1024
_INFO = b"parley-mpc-pair-key-v1"


def pair_keys(names: tuple[str, str, str]) -> dict[str, PairKeys]:
    """Fresh pairwise keys of the three parties ``(compliance, querier, helper)``, by party name.

    Each party draws an X25519 key; the key of pair (i, j) is HKDF-SHA256 of their agreement,
    bound to both names. Computed here once for the run (the world distributes them as it does
    signing keys); each party receives only the keys of the pairs it belongs to.
    """
    private = [X25519PrivateKey.generate() for _ in names]
    keys: dict[int, dict[tuple[int, int], bytes]] = {i: {} for i in range(3)}
    for i in range(3):
        for j in range(i + 1, 3):
            shared = private[i].exchange(private[j].public_key())
            info = _INFO + f"/{names[i]}/{names[j]}".encode()
            key = HKDF(algorithm=hashes.SHA256(), length=16, salt=None, info=info).derive(shared)
            keys[i][(i, j)] = keys[j][(i, j)] = key
    return {name: PairKeys(me=i, keys=keys[i]) for i, name in enumerate(names)}


class SecureQuerier(Codec):
    """The querier's codec under a secure protocol: its keys, y (public slices), and the queries being computed.

    A ``metric-query`` leaves as an ``mpc-query`` of the compliance party's shares; the compliance party's
    ``mpc-partial`` is forwarded to the helper with the padded share of A and the admission; the helper's
    ``mpc-partial`` opens the answer.
    """

    kinds = frozenset({"mpc-partial"})

    def __init__(self, protocol: SecureProtocol, keys: PairKeys, y: np.ndarray, helper: str,
                 record: bool = False) -> None:
        super().__init__()
        self.protocol = protocol
        #: Keep (metric, predictions, opened values) of every answer in ``opened`` (the honest queries' error).
        self.record = record
        self.keys = keys
        self.y = np.asarray(y)
        self.helper = helper
        self.kept: dict[str, np.ndarray] = {}
        self._pending: dict[str, dict[str, Any]] = {}
        self.queries = 0

    def encode(self, kind: str, payload: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
        """A ``metric-query`` leaves as an ``mpc-query`` holding the compliance party's shares."""
        return ("mpc-query", self.share(payload)) if kind == "metric-query" else (kind, payload)

    def decode(self, envelope: Envelope) -> dict[str, Any] | Forward:
        """The helper's ``mpc-partial`` opens the answer; the compliance party's goes on to the helper."""
        if envelope.sender == self.helper:
            return self.open(envelope)
        return Forward(self.helper, "mpc-query", self.from_compliance(envelope))

    def share(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """A ``metric-query`` payload -> the ``mpc-query`` payload for the compliance party (C's shares only)."""
        query_id = validate_query_id(payload["query_id"])
        self.protocol.check_metric(payload["metric"])
        if "edit_of" in payload:
            H = apply_edits(self.kept[payload["edit_of"]], np.atleast_2d(payload["indices"]),
                            np.atleast_2d(payload["values"]))
        else:
            H = np.atleast_2d(np.asarray(payload["predictions"], dtype=np.float64))
        if payload.get("keep"):
            self.kept[query_id] = H[0]
        metric = payload["metric"]
        R, totals, sizes = querier_rows(H, self.y, metric, self.protocol.bits)
        share_c, share_q = share_rows(R, self.keys, query_id)
        self._pending[query_id] = {"metric": metric, "m": int(H.shape[0]), "own": share_q, "totals": totals,
                                   "sizes": sizes, "predictions": H if self.record else None}
        self.queries += 1
        out = {"metric": metric, "m": int(H.shape[0]), "query_id": query_id, "shares": encode_field(share_c)}
        if "purpose" in payload:
            out["purpose"] = payload["purpose"]
        return out

    def _state(self, envelope: Envelope) -> tuple[str, dict[str, Any]]:
        got = envelope.payload.get("query_id")
        if type(got) is not str or got not in self._pending:
            raise WireError(INVALID_PAYLOAD, NOT_PENDING.format(kind=envelope.kind, got=got,
                                                                pending=", ".join(self._pending) or "none"))
        return got, self._pending[got]

    def from_compliance(self, envelope: Envelope) -> dict[str, Any]:
        """Keep C's output share; the ``mpc-query`` payload for the helper (header and padded share of A)."""
        query_id, state = self._state(envelope)
        rows = len(state["totals"]) * (state["m"] + 1)
        n = self.y.shape[0]
        try:
            state["d_c"] = decode_field(envelope.payload.get("output"), (rows,), self.protocol.name, "output")
            decode_field(envelope.payload.get("a_share"), (n,), self.protocol.name, "a_share")
        except QueryError as exc:
            raise WireError(INVALID_PAYLOAD, str(exc)) from None
        return {"metric": state["metric"], "m": state["m"], "query_id": query_id,
                "a_share": envelope.payload["a_share"], "admission": envelope.payload.get("admission")}

    def open(self, envelope: Envelope) -> dict[str, Any]:
        """Open the answer from d_C, d_S and the querier's own share: the ``metric-answer`` payload."""
        query_id, state = self._state(envelope)
        if "d_c" not in state:
            raise WireError(INVALID_PAYLOAD, NOT_PENDING.format(kind=envelope.kind, got=query_id, pending="none"))
        rows = len(state["totals"]) * (state["m"] + 1)
        try:
            d_s = decode_field(envelope.payload.get("output"), (rows,), self.protocol.name, "output")
        except QueryError as exc:
            raise WireError(INVALID_PAYLOAD, str(exc)) from None
        a_q = querier_a_share(self.keys, query_id, self.y.shape[0])
        d_q = output_share(state["own"], a_q, self.keys, query_id)
        opened = open_output(state["d_c"], d_q, d_s)
        del self._pending[query_id]
        m = state["m"]
        K = [opened[s * (m + 1): s * (m + 1) + m] for s in range(len(state["totals"]))]
        N = [opened[s * (m + 1) + m] for s in range(len(state["totals"]))]
        answer = self.protocol.opened(state["metric"], K, N, state["totals"], state["sizes"])
        if self.record:
            self.opened.append((state["metric"], state["predictions"], answer["values"]))
        return {"metric": state["metric"], "query_id": query_id, **answer}


class Helper(Party):
    """The third computing party: holds no data, answers each ``mpc-query`` with its output share.

    It computes only for queries the compliance party admitted. C's ``mpc-partial`` carries an
    admission tag, a MAC under the key C and S share over the header (metric, m, query id) and the
    padded share of A it hands out (:func:`~parley.protocols.mechanisms.secure.admission_tag`); the
    querier forwards it with the share. A request without a valid tag (an id C never saw, another
    m, another share) is refused (``invalid-query``, :data:`HELPER_NOT_ADMITTED`) before any PRF
    output is drawn; the querier, which lacks the C-S key, cannot make one. S's work is then
    bounded by what C accepted, and each query C admitted costs C more than it costs S. A header
    whose rows, as shares, would exceed the compliance party's payload limit is refused first
    (``payload-too-large``, :data:`HELPER_TOO_LARGE`): C accepts nothing larger.

    It answers a query id once per querier; a retry of the same request gets the same reply (its
    noise is never redrawn), a different request under a used id is refused. It keeps the last
    ``kept_replies`` replies (:data:`HELPER_KEPT_REPLIES`), the oldest dropped, and the ids of the
    dropped ones: a retry of a dropped id is refused (:data:`HELPER_REPLY_DROPPED`), never computed
    again with fresh noise.

    Parameters
    ----------
    identity, keyring : see :class:`parley.parties.party.Party`
    protocol : SecureProtocol
        The protocol, keyed with the helper's pairwise keys.
    queriers : list of str
        Names allowed to query.
    n : int
        People in the audit set.
    rng : numpy.random.Generator
        Source of the helper's noise (``mpc-dp``).
    kept_replies : int
        Replies kept for retries.
    """

    handlers = {"mpc-query": "_on_query", REFUSAL: "_on_refusal"}

    def __init__(self, identity: Identity, keyring: Keyring, protocol: SecureProtocol, queriers: list[str], n: int,
                 rng: np.random.Generator, kept_replies: int = HELPER_KEPT_REPLIES) -> None:
        super().__init__(identity, keyring, protocol.name)
        self.secure = protocol
        self.queriers = frozenset(queriers)
        self.n = n
        self.rng = rng
        self.kept_replies = kept_replies
        self.answered = 0
        self.not_admitted = 0
        #: (querier, query id) -> (request digest, reply), oldest first.
        self._replies: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        #: (querier, query id) answered whose reply was dropped.
        self._dropped: set[tuple[str, str]] = set()

    def _on_query(self, envelope: Envelope) -> Envelope:
        if envelope.sender not in self.queriers:
            raise WireError(INVALID_QUERY, f"{envelope.sender!r} is not a querier of this helper")
        query_id = validate_query_id(envelope.payload.get("query_id"))
        key = (envelope.sender, query_id)
        stored = self._replies.get(key)
        if stored is not None:
            if stored[0] != envelope.digest:
                raise WireError(INVALID_QUERY, ID_REUSED_HELPER.format(query_id=query_id))
            return self.seal(envelope.sender, "mpc-partial", stored[1])
        if key in self._dropped:
            raise WireError(INVALID_QUERY, HELPER_REPLY_DROPPED.format(query_id=query_id, kept=self.kept_replies))
        metric, m, _ = self.secure.header(envelope.payload)
        rows = len(SLICES[metric]) * (m + 1)
        size = field_bytes(rows, self.n)
        if size > MAX_PAYLOAD_BYTES:
            raise WireError(PAYLOAD_TOO_LARGE, HELPER_TOO_LARGE.format(m=m, metric=metric, rows=rows, n=self.n,
                                                                       size=size, limit=MAX_PAYLOAD_BYTES))
        if not self.secure.admitted(envelope.payload, self.n):
            self.not_admitted += 1
            raise WireError(INVALID_QUERY, HELPER_NOT_ADMITTED.format(query_id=query_id, metric=metric, m=m))
        reply = self.secure.helper_respond(envelope.payload, self.n, self.rng)
        self._replies[key] = (envelope.digest, reply)
        while len(self._replies) > self.kept_replies:
            oldest = next(iter(self._replies))
            del self._replies[oldest]
            self._dropped.add(oldest)
        self.answered += 1
        return self.seal(envelope.sender, "mpc-partial", reply)

    def _on_refusal(self, envelope: Envelope) -> None:
        return None

    def stats(self) -> dict[str, int]:
        return {"answered": self.answered, "not_admitted": self.not_admitted, "refusals_sent": self.refusals_sent}


@register_encoding
class MpcEncoding(Encoding):
    """``mpc``: the three parties hold pairwise keys, the querier sends shares, and the helper joins the run."""

    name = "mpc"
    roles = {HELPER_ROLE: frozenset({"mpc-partial"})}
    slots = (HELPER,)

    def wire(self, protocol: Protocol, audit: AuditSet, secrets: RunSecrets, parties: Mapping[str, str]) -> Wiring:
        """Fresh pairwise keys; the compliance party, the queriers and the helper each get their own."""
        secure = cast(SecureProtocol, protocol)
        compliance, querier = parties["compliance"], parties["data_center"]
        keys = pair_keys((compliance, querier, HELPER))
        querying = secure.keyed(keys[querier])
        helper = ExtraParty(HELPER, HELPER_ROLE, Helper, (secure.keyed(keys[HELPER]), [querier], audit.n,
                                                          secrets.party(HELPER).rng("noise")))
        return Wiring(secure.keyed(keys[compliance]),
                      SecureQuerier(querying, keys[querier], audit.y, HELPER, record=True),
                      SecureQuerier(querying, keys[querier], audit.y, HELPER), (helper,))
