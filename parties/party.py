"""Party base: identity, verify-then-dispatch, and signed typed refusals.

A party is a plain Python object (Ray wraps it only in :mod:`parley.parties.ray`).
Its :meth:`Party.receive` is the single entry point for messages: every check
of :func:`parley.parties.wire.verify_envelope`, the role policy and the replay guard
runs before any handler. A message that fails any check, or whose handler
rejects the payload, gets a signed ``refusal`` naming the reason and the
party keeps serving the next message. An envelope that passed the wire checks
has its nonce and sequence number recorded before its handler runs, so a
refused query is retried in a new envelope, never by resending the old one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from parley.parties import confidential
from parley.parties.codecs import Codec, Decoded, Forward
from parley.parties.payload_limits import readable
from parley.parties.wire import (
    INTERNAL,
    INVALID_QUERY,
    KIND_NOT_ALLOWED,
    Envelope,
    Identity,
    Keyring,
    ReplayGuard,
    verify_envelope,
)
from parley.protocols.errors import ParleyError, QueryError, RefusedError, WireError

__all__ = ["Party", "REFUSAL", "check_reply"]

log = logging.getLogger(__name__)

#: Kind of the signed refusal a party sends back.
REFUSAL = "refusal"

KIND_NOT_ALLOWED_MSG = "role {role!r} of {sender!r} may not send {kind!r} (it may send: {allowed})"
KIND_NOT_HANDLED_MSG = "{me!r} does not accept {kind!r} messages (it accepts: {accepted})"

Handler = Callable[[Envelope], "Envelope | None"]


class Party:
    """A named participant that signs what it sends and verifies what it receives.

    Parameters
    ----------
    identity : Identity
        Name, role and private key (``None`` for a party that never sends).
    keyring : Keyring
        Public keys and roles of every party it may hear from.
    protocol : str
        Protocol name stamped on outgoing envelopes.
    codec : Codec, optional
        Middleware around this party's messages (:mod:`parley.parties.codecs`): what it seals is
        encoded, what arrives in one of the codec's kinds is decoded before its handler sees it.
    """

    #: kind -> name of the handler method, filled by subclasses.
    handlers: Mapping[str, str] = {}

    def __init__(self, identity: Identity | None, keyring: Keyring, protocol: str, codec: Codec | None = None) -> None:
        self.identity = identity
        self.keyring = keyring
        self.protocol = protocol
        self.codec = codec
        self._replay = ReplayGuard()
        from parley.parties.encodings import role_sends  # its built-ins subclass Party

        #: What each role may send (:func:`parley.parties.encodings.role_sends`), as the plug-ins stood at construction.
        self.role_sends = role_sends()
        self.refusals_sent = 0
        self.refusals_ignored = 0

    @property
    def name(self) -> str:
        return self.identity.name if self.identity else "(retired)"

    def resume(self, restarts: int) -> None:
        """Called once this party was rebuilt after its process died (``restarts`` so far); default: nothing.

        The rebuilt party has been fed again every call the old one completed
        (:mod:`parley.parties.ray.deployment`); a party whose replay cannot reproduce some state
        (e.g. noise it drew for answers now read from a ledger) fixes it up here.
        """

    def seal(self, recipient: str, kind: str, payload: Mapping[str, Any]) -> Envelope:
        """Sign ``payload`` as this party."""
        if self.identity is None:
            raise ParleyError(f"this party holds no identity and cannot send {kind!r}")
        if self.codec is not None:
            kind, payload = self.codec.encode(kind, payload)
        return self.identity.seal(recipient, kind, self.protocol,
                                  confidential.outgoing(self.identity, self.keyring, recipient, kind, self.protocol,
                                                        payload))

    def deliver(self, envelope: Envelope, head: str) -> Envelope | list[Envelope] | None:
        """What the network calls: note the transcript ``head`` after ``envelope`` was logged, then :meth:`receive`.

        The head is what this party has seen of the log; its next envelope signs it
        (:meth:`parley.parties.wire.Identity.seal`). A network that lies about it gets
        envelopes whose head is not in the transcript, which ``parley verify`` rejects.
        """
        if self.identity is not None and type(head) is str:
            self.identity.saw(head)
        return self.receive(envelope)

    def countersign(self, head: str, messages: int) -> dict[str, Any] | None:
        """The end-of-run signature of this party over the final transcript head (None without an identity)."""
        if self.identity is None:
            return None
        return self.identity.sign_end(head, messages)

    def receive(self, envelope: Envelope) -> Envelope | list[Envelope] | None:
        """Verify ``envelope`` and dispatch it; return the reply (or a refusal), or ``None``."""
        try:
            verify_envelope(envelope, self.keyring, recipient=self.name)
            decoded = self.codec is not None and envelope.kind in self.codec.kinds
            self._check_kind(envelope.sender, envelope.kind, handled=decoded)
            self._replay.check(envelope)
            self._replay.record(envelope)
            envelope = confidential.incoming(envelope, self.identity, self.keyring)  # as sent if not sealed
            if decoded:
                return self._on_encoded(envelope)
            handler: Callable[[Envelope], Envelope | list[Envelope] | None]
            handler = getattr(self, self.handlers[envelope.kind])
            return handler(envelope)
        except WireError as exc:
            if envelope.kind == REFUSAL:  # never refuse a refusal: that would ping-pong forever
                self.refusals_ignored += 1
                return None
            return self._refuse(envelope, exc.reason, exc.detail)
        except QueryError as exc:
            return self._refuse(envelope, INVALID_QUERY, str(exc))
        except Exception as exc:  # a bug in a handler must not take the party down
            log.exception("handler failed on %s from %s", envelope.kind, envelope.sender)
            return self._refuse(envelope, INTERNAL, f"{type(exc).__name__}: {exc} (a bug in parley, please report it)")

    def _check_kind(self, sender: str, kind: str, handled: bool = False) -> None:
        """WireError unless ``sender``'s role may send ``kind`` and this party handles it (or its codec decodes it)."""
        role = self.keyring.entry(sender).role
        allowed = self.role_sends.get(role, frozenset())
        if kind not in allowed:
            raise WireError(KIND_NOT_ALLOWED, KIND_NOT_ALLOWED_MSG.format(
                role=role, sender=sender, kind=kind, allowed=", ".join(sorted(allowed)) or "nothing"))
        if not handled and kind not in self.handlers:
            accepted = sorted({*self.handlers, *(self.codec.kinds if self.codec is not None else ())})
            raise WireError(KIND_NOT_ALLOWED, KIND_NOT_HANDLED_MSG.format(
                me=self.name, kind=kind, accepted=", ".join(accepted) or "nothing"))

    def _on_encoded(self, envelope: Envelope) -> Envelope | list[Envelope] | None:
        """An envelope the codec decodes: to the handler of the kind it decodes to (``metric-answer`` by default)."""
        assert self.codec is not None  # receive dispatches here only for a codec's kinds
        out = self.codec.decode(envelope)
        if isinstance(out, Forward):
            return self.seal(out.recipient, out.kind, out.payload)
        if isinstance(out, Decoded):  # a kind of its own: held to the sender's role and this party's handlers
            self._check_kind(envelope.sender, out.kind)
            handler: Callable[[Envelope], Envelope | list[Envelope] | None] = getattr(self, self.handlers[out.kind])
            return handler(envelope.model_copy(update={"kind": out.kind, "payload": dict(out.payload)}))
        # the answer to the party's own encoded query (the codec checked it belongs to a query it is computing)
        answer: Callable[[Envelope], Envelope | list[Envelope] | None] = getattr(self, self.handlers["metric-answer"])
        return answer(envelope.model_copy(update={"payload": out}))

    def _refuse(self, envelope: Envelope, reason: str, detail: str) -> Envelope | None:
        """A signed refusal to whoever the envelope claims sent it (nothing if we cannot sign)."""
        self.refusals_sent += 1
        if self.identity is None:
            return None
        sender = readable(envelope.sender) if type(envelope.sender) is str else "(malformed)"
        refused = readable(envelope.id) if type(envelope.id) is str else None
        return self.seal(sender, REFUSAL, {"reason": reason, "detail": readable(detail), "refused": refused})


def check_reply(envelope: Envelope | None, keyring: Keyring, me: str, expected_kind: str) -> Envelope:
    """Verify a reply addressed to ``me``; raise :class:`RefusedError` if it is a refusal."""
    if envelope is None:
        raise RefusedError("no-reply", "the recipient sent nothing back")
    verify_envelope(envelope, keyring, recipient=me)
    if envelope.kind == REFUSAL:
        raise RefusedError(envelope.payload.get("reason", "?"), envelope.payload.get("detail", ""))
    if envelope.kind != expected_kind:
        raise RefusedError("unexpected-kind", f"expected {expected_kind!r}, got {envelope.kind!r}")
    return envelope
