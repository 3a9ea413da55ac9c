"""Confidential payloads: X25519 key agreement, HKDF-SHA256 and ChaCha20-Poly1305 between two parties.

With a scenario's ``confidential = true`` the compliance party and the data
center each hold a static X25519 key beside their Ed25519 signing key, and the
keyring lists both public halves. A payload from one to the other is then
replaced on the wire by ``{"__sealed__": {"alg", "nonce", "ciphertext"}}``:

* key: K = HKDF-SHA256(X25519(sk_sender, pk_recipient), info = domain || the two
  public keys in sender, recipient order), the same for both ends (Diffie-Hellman)
  and different for each direction, so a nonce never repeats under one key by
  symmetry;
* AEAD: ChaCha20-Poly1305 (RFC 8439) with a fresh random 96-bit nonce per
  message; the associated data binds the ciphertext to sender, recipient, kind
  and protocol, so it cannot be moved into another envelope unnoticed;
* plaintext: the payload in the transcript's JSON form
  (:func:`parley.parties.wire.encode_payload`: arrays as dtype, shape and base64 bytes).

The envelope is still signed, over the digest of the *sealed* payload, so the
transcript verifies on its own (``parley verify``) and a passive observer sees
only who talked to whom, the kinds, the sizes and the timing. The recipient
opens the payload after every wire check and hands its handler the envelope
with the plaintext payload and its digest (so ledger retries by query id and
digest work as without encryption).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from parley.parties.wire import (
    UNDECRYPTABLE,
    Envelope,
    Identity,
    Keyring,
    decode_payload,
    encode_payload,
    payload_digest,
)
from parley.protocols.errors import WireError

__all__ = ["ALGORITHM", "SEALED", "UNDECRYPTABLE", "incoming", "is_sealed", "kx_public_hex", "open_payload", "outgoing",
           "seal_payload"]

#: The single key of a sealed payload.
SEALED = "__sealed__"
ALGORITHM = "X25519-HKDF-SHA256-ChaCha20Poly1305"
_DOMAIN = b"parley-payload-v1"

BAD_SEALED_MSG = "sealed payload is malformed ({what})"
CANNOT_OPEN_MSG = ("sealed payload from {sender!r} does not decrypt "
                   "(wrong key, altered ciphertext or moved between envelopes)")
NO_KEY_MSG = "sealed payload from {sender!r}, but {why}"
PLAINTEXT_MSG = "plaintext payload from {sender!r} on a confidential channel (both parties hold X25519 keys)"


def kx_public_hex(private: X25519PrivateKey) -> str:
    """The 32 raw bytes of the X25519 public key, hex (as stored in keyrings)."""
    return private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def is_sealed(payload: Any) -> bool:
    """Is ``payload`` a sealed (encrypted) payload?"""
    return isinstance(payload, Mapping) and len(payload) == 1 and SEALED in payload


def _key(private: X25519PrivateKey, peer_hex: str, sender_hex: str, recipient_hex: str) -> bytes:
    """HKDF-SHA256 of the X25519 shared secret, bound to the direction of the message."""
    shared = private.exchange(X25519PublicKey.from_public_bytes(bytes.fromhex(peer_hex)))
    info = _DOMAIN + bytes.fromhex(sender_hex) + bytes.fromhex(recipient_hex)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(shared)


def _associated(sender: str, recipient: str, kind: str, protocol: str) -> bytes:
    return json.dumps([sender, recipient, kind, protocol], separators=(",", ":")).encode()


def seal_payload(payload: Mapping[str, Any], private: X25519PrivateKey, recipient_public: str,
                 sender: str, recipient: str, kind: str, protocol: str) -> dict[str, Any]:
    """Encrypt ``payload`` for ``recipient``; returns the sealed payload that goes on the wire."""
    key = _key(private, recipient_public, kx_public_hex(private), recipient_public)
    nonce = os.urandom(12)
    plain = json.dumps(encode_payload(dict(payload)), separators=(",", ":")).encode()
    ciphertext = ChaCha20Poly1305(key).encrypt(nonce, plain, _associated(sender, recipient, kind, protocol))
    return {SEALED: {"alg": ALGORITHM, "nonce": nonce.hex(),
                     "ciphertext": np.frombuffer(ciphertext, dtype=np.uint8)}}


def open_payload(sealed: Mapping[str, Any], private: X25519PrivateKey, sender_public: str,
                 sender: str, recipient: str, kind: str, protocol: str) -> dict[str, Any]:
    """Decrypt a sealed payload; :class:`WireError` (undecryptable) if it is malformed or does not open."""
    body = sealed.get(SEALED)
    if not isinstance(body, Mapping) or set(body) != {"alg", "nonce", "ciphertext"}:
        raise WireError(UNDECRYPTABLE, BAD_SEALED_MSG.format(what="expected the fields alg, nonce, ciphertext"))
    if body["alg"] != ALGORITHM:
        raise WireError(UNDECRYPTABLE, BAD_SEALED_MSG.format(what=f"algorithm {body['alg']!r}, expected {ALGORITHM}"))
    ciphertext = body["ciphertext"]
    if not isinstance(ciphertext, np.ndarray) or ciphertext.dtype != np.uint8 or ciphertext.ndim != 1:
        raise WireError(UNDECRYPTABLE, BAD_SEALED_MSG.format(what="ciphertext must be a 1-d uint8 array"))
    try:
        nonce = bytes.fromhex(body["nonce"])
    except (TypeError, ValueError):
        nonce = b""
    if len(nonce) != 12:
        raise WireError(UNDECRYPTABLE, BAD_SEALED_MSG.format(what="nonce must be 12 bytes, hex"))
    key = _key(private, sender_public, sender_public, kx_public_hex(private))
    try:
        plain = ChaCha20Poly1305(key).decrypt(nonce, ciphertext.tobytes(),
                                              _associated(sender, recipient, kind, protocol))
    except InvalidTag:
        raise WireError(UNDECRYPTABLE, CANNOT_OPEN_MSG.format(sender=sender)) from None
    payload = decode_payload(json.loads(plain))
    if not isinstance(payload, dict):  # authenticated, so only a buggy sender gets here
        raise WireError(UNDECRYPTABLE, BAD_SEALED_MSG.format(what="plaintext is not an object"))
    return payload


def outgoing(identity: Identity, keyring: Keyring, recipient: str, kind: str, protocol: str,
             payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The payload as it goes on the wire: sealed when both ends hold X25519 keys, else unchanged.

    A recipient outside the keyring (the claimed sender of a forged message that
    is being refused) gets the refusal in the clear: it says only why.
    """
    if identity.kx_private is None or recipient not in keyring:
        return payload
    peer = keyring.entry(recipient).kx_public
    if peer is None:
        return payload
    return seal_payload(payload, identity.kx_private, peer, identity.name, recipient, kind, protocol)


def incoming(envelope: Envelope, identity: Identity | None, keyring: Keyring) -> Envelope:
    """The verified ``envelope`` with its payload opened (and its digest recomputed) for the handler.

    Between two parties that both hold X25519 keys a plaintext payload is refused
    (no silent downgrade); a sealed payload the receiver cannot open is refused.
    """
    mine = identity.kx_private if identity is not None else None
    theirs = keyring.entry(envelope.sender).kx_public
    if not is_sealed(envelope.payload):
        if mine is not None and theirs is not None:
            raise WireError(UNDECRYPTABLE, PLAINTEXT_MSG.format(sender=envelope.sender))
        return envelope
    if mine is None or theirs is None:
        why = "this party holds no X25519 key" if mine is None else "the sender has no X25519 key in the keyring"
        raise WireError(UNDECRYPTABLE, NO_KEY_MSG.format(sender=envelope.sender, why=why))
    payload = open_payload(envelope.payload, mine, theirs, envelope.sender, envelope.recipient,
                           envelope.kind, envelope.protocol)
    return envelope.model_copy(update={"payload": payload, "digest": payload_digest(payload)})
