"""Signed envelopes: canonical bytes, SHA-256 payload digests, Ed25519, replay guard.

Every message between parties is an :class:`Envelope`. Its signature covers the
canonical header (id, sender, recipient, kind, protocol, sequence, nonce,
timestamp, and ``head``: the transcript head its sender had seen, which binds the
log's state before it, in the manner of certificate-transparency logs) *and* the
SHA-256 digest of the payload, so a large array is hashed
once and never copied for signing. Arrays are hashed by dtype, shape and raw
bytes, which makes the digest independent of how the payload travelled (Ray's
object store, a JSON transcript); an array's bytes enter the digest as their
BLAKE3 digest (about four times SHA-256's speed here, with the same 256-bit output).

Verification order matters: a receiver checks sender, recipient, digest and
signature *before* it records the nonce and sequence number, so a forger cannot
poison the replay guard with sequence numbers it invented.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import pickle
import secrets
import struct
import sys
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
from blake3 import blake3
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey
from pydantic import BaseModel, ConfigDict, Field

from parley.parties.payload_limits import PAYLOAD_TOO_LARGE, check_payload
from parley.protocols.errors import WireError

_base64: ModuleType
try:  # SIMD base64 (several times the standard library's speed); the same output byte for byte
    import pybase64

    _base64 = pybase64
except ImportError:  # a cluster worker whose environment lacks it: the standard library's
    _base64 = base64

__all__ = [
    "REFUSAL_REASONS",
    "Envelope",
    "Identity",
    "KeyEntry",
    "Keyring",
    "ReplayGuard",
    "payload_digest",
    "array_base64",
    "array_base64_pieces",
    "array_bytes",
    "array_data",
    "BlobReader",
    "b64decode_strict",
    "encode_payload",
    "decode_payload",
    "header_bytes",
    "verify_envelope",
    "check_fields",
    "GENESIS",
    "end_bytes",
    "key_fingerprint",
]

# Refusal codes a party sends back (the `reason` of a refusal payload).
UNKNOWN_SENDER = "unknown-sender"
BAD_SIGNATURE = "bad-signature"
DIGEST_MISMATCH = "digest-mismatch"
REPLAY = "replay"
WRONG_RECIPIENT = "wrong-recipient"
KIND_NOT_ALLOWED = "kind-not-allowed"
NOT_REGISTERED = "not-registered"
INVALID_QUERY = "invalid-query"
INVALID_PAYLOAD = "invalid-payload"
INTERNAL = "internal-error"
BUDGET_EXCEEDED = "budget-exceeded"
UNDECRYPTABLE = "undecryptable"  # a confidential payload that does not open (parties/confidential.py)
MALFORMED = "malformed-envelope"
REFUSAL_REASONS = (
    UNKNOWN_SENDER, BAD_SIGNATURE, DIGEST_MISMATCH, REPLAY, WRONG_RECIPIENT,
    KIND_NOT_ALLOWED, NOT_REGISTERED, INVALID_QUERY, INVALID_PAYLOAD, INTERNAL, BUDGET_EXCEEDED,
    UNDECRYPTABLE, MALFORMED, PAYLOAD_TOO_LARGE,
)

# Message templates (tests match on these).
UNKNOWN_SENDER_MSG = "sender {sender!r} is not in the keyring (known: {known})"
WRONG_RECIPIENT_MSG = "envelope is addressed to {recipient!r}, not to {me!r}"
DIGEST_MISMATCH_MSG = "payload digest does not match the payload (claimed {claimed}, computed {computed})"
BAD_SIGNATURE_MSG = "Ed25519 signature of {sender!r} does not verify over header and digest"
REPLAY_NONCE_MSG = "nonce {nonce} from {sender!r} was already seen"
REPLAY_SEQ_MSG = "sequence {seq} from {sender!r} is not above the last accepted {last}"
MALFORMED_MSG = "envelope field {field!r} must be {expected}, got {got}"
UNHASHABLE_MSG = ("payload value of type {type} at {path} cannot be hashed "
                  "(allowed: dict, list, str, int, float, bool, None, numeric numpy arrays)")

_SIGNING_DOMAIN = b"parley-envelope-v3\n"
#: Domain of the end-of-run signatures (never confusable with an envelope's).
_END_DOMAIN = b"parley-end-v1\n"
#: The head of an empty transcript: what a party has seen before anything was logged.
GENESIS = "0" * 64
_ND_TAG = "__ndarray__"


# --------------------------------------------------------------------------- digests
#: An array above this size keeps its digest while it lives, when its bytes cannot change (:class:`_ArrayDigests`).
CACHED_BYTES = 1 << 20


#: Buffer types whose bytes no code can change once the buffer exists, by (module, qualified name): ``bytes``
#: (what the transcript reader and :func:`decode_payload` decode into) and the sealed object-store buffers Ray
#: deserialises arrays over (``ray._raylet.SubBuffer``). An allow-list on purpose: a read-only *view*
#: (``memoryview.toreadonly()`` over a bytearray, an ``mmap`` opened ``ACCESS_READ`` over a file another
#: process writes) forbids writing through itself only, so its bytes can still change under a cached digest.
IMMUTABLE_BUFFERS = frozenset({("builtins", "bytes"), ("ray._raylet", "SubBuffer")})


def _immutable_type(kind: type) -> bool:
    """Is ``kind`` exactly one of :data:`IMMUTABLE_BUFFERS` (the class itself, never a lookalike or subclass)?"""
    name = (kind.__module__, kind.__qualname__)
    if name not in IMMUTABLE_BUFFERS:
        return False
    module = sys.modules.get(name[0])  # loaded already if one of its buffers exists: no import (wire needs no Ray)
    return module is not None and getattr(module, name[1], None) is kind


def _immutable(arr: np.ndarray) -> bool:
    """Can no code change ``arr``'s bytes, its memory being a buffer on :data:`IMMUTABLE_BUFFERS`?

    True for arrays Ray delivered from its object store and arrays read back from bytes (a
    transcript); never for an array that owns its memory, whose ``writeable`` flag can be set again,
    nor for one over a read-only view of memory that can change (``memoryview.readonly`` says only
    that the view forbids writes through itself).
    """
    if arr.flags.writeable:
        return False
    root: Any = arr
    while type(root) is np.ndarray and root.base is not None:
        root = root.base
    if type(root) is memoryview:  # a view's bytes are its exporter's: judge the exporter
        root = root.obj
    return _immutable_type(type(root))


class _ArrayDigests:
    """The BLAKE3 digests this process computed for large read-only arrays, by array object.

    A party that verified an envelope and answers with the same array (an echo, a forwarded
    release) signs its digest without hashing the bytes again: they have not left the process
    and cannot have changed (:func:`_immutable`). Entries die with their array (weak references).
    """

    def __init__(self) -> None:
        self._digests: dict[int, tuple[weakref.ref[np.ndarray], bytes]] = {}

    def get(self, arr: np.ndarray) -> bytes | None:
        entry = self._digests.get(id(arr))
        return entry[1] if entry is not None and entry[0]() is arr else None

    def put(self, arr: np.ndarray, digest: bytes) -> None:
        key = id(arr)
        self._digests[key] = (weakref.ref(arr, lambda _ref: self._digests.pop(key, None)), digest)


_array_digests = _ArrayDigests()


def _raw_bytes(arr: np.ndarray) -> memoryview | bytes:
    """The bytes of a C-contiguous array without copying (empty arrays have none)."""
    return arr.data.cast("B") if arr.size else b""


def _feed(h: hashlib._Hash, value: Any, path: str) -> None:
    """Feed one payload value into ``h`` with a type tag and length prefix.

    Tags and length prefixes make the encoding injective: ``["ab"]`` and
    ``["a", "b"]`` (or the int 1 and the float 1.0) never hash alike. Exact
    type checks come first because this runs on every message.
    """
    kind = type(value)
    if kind is np.ndarray:
        if value.dtype.kind not in "biuf":
            raise WireError(INVALID_PAYLOAD, UNHASHABLE_MSG.format(type=f"ndarray[{value.dtype}]", path=path))
        # The array's own shape: ascontiguousarray makes a 0-d array 1-d, which would hash np.array(x) as [x].
        meta = f"{value.dtype.str}|{','.join(map(str, value.shape))}".encode()
        arr = np.ascontiguousarray(value)
        h.update(b"a" + struct.pack("<Q", len(meta)) + meta + struct.pack("<Q", arr.nbytes))
        # The bytes enter as their BLAKE3 digest (collision resistant as SHA-256 is, so the encoding stays
        # injective). A large read-only array's is computed once per process; only an array that is its own
        # C-contiguous bytes is looked up (one whose strides were changed in place is hashed afresh).
        cacheable = arr is value and arr.nbytes > CACHED_BYTES
        digest = _array_digests.get(value) if cacheable else None
        if digest is None:
            digest = blake3(_raw_bytes(arr)).digest()
            if cacheable and _immutable(value):
                _array_digests.put(value, digest)
        h.update(b"b" + digest)
    elif kind is str:
        raw = value.encode()
        h.update(b"s" + struct.pack("<Q", len(raw)) + raw)
    elif kind is bool or kind is np.bool_:
        h.update(b"T" if value else b"F")
    elif kind is int or isinstance(value, np.integer):
        raw = str(int(value)).encode()
        h.update(b"i" + struct.pack("<Q", len(raw)) + raw)
    elif kind is float or isinstance(value, np.floating):
        h.update(b"f" + struct.pack("<d", float(value)))
    elif value is None:
        h.update(b"n")
    elif kind is dict or isinstance(value, Mapping):
        h.update(b"d" + struct.pack("<Q", len(value)))
        for key in sorted(value):
            if type(key) is not str:
                raise WireError(INVALID_PAYLOAD, f"payload keys must be strings, got {key!r} at {path}")
            _feed(h, key, path)
            _feed(h, value[key], f"{path}.{key}")
    elif kind is list or kind is tuple:
        h.update(b"l" + struct.pack("<Q", len(value)))
        for i, item in enumerate(value):
            _feed(h, item, f"{path}[{i}]")
    else:
        raise WireError(INVALID_PAYLOAD, UNHASHABLE_MSG.format(type=kind.__name__, path=path))


def payload_digest(payload: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a payload's canonical encoding; arrays by dtype, shape and bytes.

    The payload first passes :func:`parley.parties.payload_limits.check_payload` (a bounded walk): too deep,
    too wide an integer, invalid Unicode or too large is a typed :class:`WireError`, never a crash.
    """
    check_payload(payload)
    h = hashlib.sha256()
    _feed(h, payload, "payload")
    return h.hexdigest()


def array_base64(arr: np.ndarray) -> bytes:
    """Base64 (ASCII bytes) of an array's raw (C-order) bytes, as stored in transcripts."""
    encoded: bytes = _base64.b64encode(array_bytes(arr))
    return encoded


#: Bytes of array data base64-encoded at a time when written (a multiple of 3: the pieces join without padding).
B64_PIECE = 3 << 15


def array_base64_pieces(arr: np.ndarray) -> Iterator[bytes]:
    """:func:`array_base64` in pieces of :data:`B64_PIECE` input bytes (each encoded while in cache)."""
    raw = array_bytes(arr)
    for start in range(0, len(raw), B64_PIECE):
        yield _base64.b64encode(raw[start:start + B64_PIECE])


def array_bytes(arr: np.ndarray) -> memoryview | bytes:
    """An array's raw (C-order) bytes, copied only if it is not C-contiguous (what a transcript blob file holds)."""
    return _raw_bytes(np.ascontiguousarray(arr))


def b64decode_strict(text: str) -> bytes:
    """Strict base64 decoding (characters outside the alphabet are an error): :class:`binascii.Error`."""
    decoded: bytes = _base64.b64decode(text, validate=True)
    return decoded


def array_data(arr: np.ndarray) -> dict[str, str]:
    """The default stored form of an array's bytes: ``{"data": base64 text}``."""
    return {"data": array_base64(arr).decode("ascii")}


#: Reads ``nbytes`` bytes at ``offset`` of a transcript's blob file (:func:`decode_payload`).
BlobReader = Callable[[int, int], bytes]


def encode_payload(value: Any, fields: Callable[[np.ndarray], dict[str, Any]] = array_data) -> Any:
    """Turn a payload into JSON-ready values; arrays become ``{"__ndarray__": {dtype, shape, data}}``.

    ``fields`` gives the fields that hold an array's bytes (``data``, base64, by default;
    the transcript passes placeholders and splices the base64, or a blob file offset
    ``blob``, in afterwards, sparing JSON escaping).
    """
    if isinstance(value, np.ndarray):
        return {_ND_TAG: {"dtype": value.dtype.str, "shape": list(value.shape), **fields(value)}}
    if isinstance(value, Mapping):
        return {k: encode_payload(v, fields) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_payload(v, fields) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def decode_payload(value: Any, blobs: BlobReader | None = None) -> Any:
    """Inverse of :func:`encode_payload` (digest-preserving); ``blobs`` reads arrays stored as a blob offset."""
    if isinstance(value, dict):
        if set(value) == {_ND_TAG}:
            spec = value[_ND_TAG]
            dtype = np.dtype(spec["dtype"])
            if "blob" in spec:
                if blobs is None:
                    raise ValueError("an array stored in a blob file, and no blob file to read it from")
                raw = blobs(spec["blob"], math.prod(spec["shape"]) * dtype.itemsize)
            else:
                raw = _base64.b64decode(spec["data"])
            return np.frombuffer(raw, dtype=dtype).reshape(spec["shape"])
        return {k: decode_payload(v, blobs) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_payload(v, blobs) for v in value]
    return value


# --------------------------------------------------------------------------- envelope
class Envelope(BaseModel):
    """One signed message. ``payload`` may hold numpy arrays; only its digest is signed."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    id: str
    sender: str
    recipient: str
    kind: str
    protocol: str
    seq: int = Field(ge=0)
    nonce: str
    timestamp: int  # nanoseconds since the epoch (fixed width, so sizes do not depend on the clock)
    head: str  # transcript head the sender had seen when it signed (GENESIS before anything)
    payload: dict[str, Any]
    digest: str
    signature: str

    def header(self) -> dict[str, Any]:
        """The signed header fields, digest included, signature excluded."""
        return {k: getattr(self, k) for k in _HEADER_FIELDS}

    def to_record(self, fields: Callable[[np.ndarray], dict[str, Any]] = array_data) -> dict[str, Any]:
        """JSON-ready form for the transcript (``fields`` as in :func:`encode_payload`)."""
        return {**self.header(), "signature": self.signature, "payload": encode_payload(self.payload, fields)}

    def __reduce__(self) -> tuple[Any, ...]:
        """Cheap pickling for Ray: small envelopes travel as one in-band blob, large arrays out of band."""
        fields = tuple(getattr(self, k) for k in _ALL_FIELDS)
        if _payload_nbytes(self.payload) <= _INBAND_BYTES:
            return _envelope_from_blob, (pickle.dumps(fields, protocol=pickle.HIGHEST_PROTOCOL),)
        return _envelope_from_fields, (fields,)

    @classmethod
    def from_record(cls, record: Mapping[str, Any], blobs: BlobReader | None = None) -> Envelope:
        """Rebuild an envelope read from a transcript line (``blobs`` as in :func:`decode_payload`)."""
        return cls(**{**record, "payload": decode_payload(record["payload"], blobs)})


#: The digits of parley's hex fields (keys, digests, heads, signatures): lowercase only, one spelling per value.
LOWER_HEX = frozenset("0123456789abcdef")

_HEADER_FIELDS = ("id", "sender", "recipient", "kind", "protocol", "seq", "nonce", "timestamp", "head", "digest")
_ALL_FIELDS = (*_HEADER_FIELDS, "payload", "signature")
#: Payloads with at most this many array bytes are pickled in band (no object-store round trip).
_INBAND_BYTES = 64 * 1024


def _payload_nbytes(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, dict):
        return sum(_payload_nbytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_payload_nbytes(v) for v in value)
    return 0


def _envelope_from_fields(fields: tuple[Any, ...]) -> Envelope:
    return Envelope.model_construct(**dict(zip(_ALL_FIELDS, fields, strict=True)))


def _envelope_from_blob(blob: bytes) -> Envelope:
    return _envelope_from_fields(pickle.loads(blob))


def header_bytes(header: Mapping[str, Any]) -> bytes:
    """Canonical bytes an envelope's signature covers (sorted-key compact JSON)."""
    return _SIGNING_DOMAIN + json.dumps(header, sort_keys=True, separators=(",", ":")).encode()


def end_bytes(signer: str, head: str, messages: int, sent: int) -> bytes:
    """Canonical bytes of a party's end-of-run signature: the final head, the message count, its own sent count."""
    body = {"head": head, "messages": messages, "sent": sent, "signer": signer}
    return _END_DOMAIN + json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def key_fingerprint(entry: KeyEntry) -> str:
    """SHA-256 (hex) of a key entry's canonical JSON: name, role, Ed25519 key and X25519 key if any.

    ``result.json`` carries one per party, so a transcript can be checked against keys kept apart from it.
    """
    body = json.dumps(entry.model_dump(exclude_none=True), sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(body).hexdigest()


# --------------------------------------------------------------------------- identities
@dataclass
class Identity:
    """A party's name, role and Ed25519 private key, its outgoing sequence counter and the head it saw.

    ``head`` is the transcript head after the last envelope delivered to this party
    (the network tells it on delivery); every envelope it seals signs it, so a
    message binds the log as its sender saw it and cannot be moved before it.
    """

    name: str
    role: str
    private_key: SigningKey
    next_seq: int = 0
    #: X25519 key of a party on confidential channels (parties/confidential.py); None: payloads in the clear.
    kx_private: X25519PrivateKey | None = None
    head: str = GENESIS

    @classmethod
    def generate(cls, name: str, role: str, kx: bool = False) -> Identity:
        """A fresh identity with a random key (never derived from scenario seeds); ``kx``: an X25519 key too."""
        return cls(name=name, role=role, private_key=SigningKey.generate(),
                   kx_private=X25519PrivateKey.generate() if kx else None)

    @property
    def public_key_hex(self) -> str:
        return bytes(self.private_key.verify_key).hex()

    def key_entry(self) -> KeyEntry:
        kx = None
        if self.kx_private is not None:
            kx = self.kx_private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
        return KeyEntry(name=self.name, role=self.role, public_key=self.public_key_hex, kx_public=kx)

    def seal(self, recipient: str, kind: str, protocol: str, payload: Mapping[str, Any]) -> Envelope:
        """Sign ``payload`` for ``recipient``: fresh id and nonce, next sequence number."""
        header: dict[str, Any] = {
            "id": uuid.uuid4().hex,
            "sender": self.name,
            "recipient": recipient,
            "kind": kind,
            "protocol": protocol,
            "seq": self.next_seq,
            "nonce": secrets.token_hex(16),
            "timestamp": time.time_ns(),
            "head": self.head,
            "digest": payload_digest(payload),
        }
        self.next_seq += 1
        signature = self.private_key.sign(header_bytes(header)).signature.hex()
        return Envelope.model_construct(**header, payload=dict(payload), signature=signature)

    def saw(self, head: str) -> None:
        """Remember the transcript head after a delivery to this party (what its next envelope signs)."""
        self.head = head

    def sign_end(self, head: str, messages: int) -> dict[str, Any]:
        """The party's end-of-run signature over the final ``head``, the ``messages`` logged and its own sent count.

        The sent count comes from the party's own counter, not from the log, so a log
        missing one of its messages cannot carry its end signature.
        """
        signature = self.private_key.sign(end_bytes(self.name, head, messages, self.next_seq)).signature.hex()
        return {"signer": self.name, "sent": self.next_seq, "signature": signature}

    # Ray moves identities between processes: the keys travel as their raw bytes (X25519 keys do not pickle).
    def __getstate__(self) -> dict[str, Any]:
        from cryptography.hazmat.primitives.serialization import NoEncryption, PrivateFormat

        raw = bytes(self.private_key)  # the 32-byte seed
        kx = (None if self.kx_private is None
              else self.kx_private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()))
        return {"name": self.name, "role": self.role, "key": raw, "next_seq": self.next_seq, "kx": kx,
                "head": self.head}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.name, self.role, self.next_seq = state["name"], state["role"], state["next_seq"]
        self.private_key = SigningKey(state["key"])
        kx = state.get("kx")
        self.kx_private = None if kx is None else X25519PrivateKey.from_private_bytes(kx)
        self.head = state.get("head", GENESIS)


class KeyEntry(BaseModel):
    """Public half of an identity, as stored in keyrings and transcripts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    role: str
    public_key: str  # 32 raw bytes, hex
    kx_public: str | None = None  # X25519 key for confidential payloads (parties/confidential.py), hex


@dataclass
class Keyring:
    """Known parties: name -> (role, Ed25519 public key)."""

    entries: dict[str, KeyEntry] = field(default_factory=dict)

    def add(self, entry: KeyEntry) -> None:
        self.entries[entry.name] = entry
        self._keys.pop(entry.name, None)

    def __post_init__(self) -> None:
        self._keys: dict[str, VerifyKey] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.entries

    def entry(self, name: str) -> KeyEntry:
        """The entry of ``name``; :class:`WireError` (unknown-sender) if absent."""
        try:
            return self.entries[name]
        except KeyError:
            known = ", ".join(sorted(self.entries)) or "none"
            raise WireError(UNKNOWN_SENDER, UNKNOWN_SENDER_MSG.format(sender=name, known=known)) from None

    def public_key(self, name: str) -> VerifyKey:
        if name not in self._keys:
            self._keys[name] = VerifyKey(bytes.fromhex(self.entry(name).public_key))
        return self._keys[name]

    def signed(self, name: str, signature_hex: Any, message: bytes) -> bool:
        """Is ``signature_hex`` ``name``'s Ed25519 signature of ``message``?

        An unknown ``name`` raises :class:`WireError`.
        False, never an exception, for: a signature that is not 128 lowercase hex digits (the one spelling
        a transcript accepts, so the wire and ``parley verify`` never disagree), an entry whose key is not
        32 bytes of hex, and what libsodium refuses (a non-canonical scalar, a small-order or non-canonical point).
        """
        self.entry(name)
        if type(signature_hex) is not str or len(signature_hex) != 128 or not LOWER_HEX.issuperset(signature_hex):
            return False
        try:
            self.public_key(name).verify(message, bytes.fromhex(signature_hex))
        except (BadSignatureError, ValueError):  # a malformed key entry, a refused signature
            return False
        return True

    def to_json(self) -> dict[str, Any]:
        return {name: e.model_dump(exclude_none=True) for name, e in sorted(self.entries.items())}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Keyring:
        ring = cls()
        for entry in data.values():
            ring.add(KeyEntry(**entry))
        return ring

    def __getstate__(self) -> dict[str, Any]:
        return {"entries": self.entries}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.entries = state["entries"]
        self._keys = {}


def verify_envelope(envelope: Envelope, keyring: Keyring, recipient: str | None = None) -> None:
    """Check fields, sender, recipient, digest and signature; raise :class:`WireError` on the first failure."""
    check_fields(envelope)
    keyring.entry(envelope.sender)  # unknown sender
    if recipient is not None and envelope.recipient != recipient:
        raise WireError(WRONG_RECIPIENT, WRONG_RECIPIENT_MSG.format(recipient=envelope.recipient, me=recipient))
    computed = payload_digest(envelope.payload)
    if computed != envelope.digest:
        raise WireError(DIGEST_MISMATCH, DIGEST_MISMATCH_MSG.format(claimed=envelope.digest, computed=computed))
    if not keyring.signed(envelope.sender, envelope.signature, header_bytes(envelope.header())):
        raise WireError(BAD_SIGNATURE, BAD_SIGNATURE_MSG.format(sender=envelope.sender))


_FIELD_TYPES = {"id": str, "sender": str, "recipient": str, "kind": str, "protocol": str, "seq": int,
                "nonce": str, "timestamp": int, "head": str, "digest": str, "signature": str, "payload": dict}


def check_fields(envelope: Envelope) -> None:
    """Every field of the right type (:class:`WireError` malformed-envelope otherwise).

    Envelopes that cross a process boundary are rebuilt without validation
    (``model_construct``, for speed), so a hostile sender controls their types.
    """
    for name, expected in _FIELD_TYPES.items():
        value = getattr(envelope, name, None)
        if type(value) is not expected:  # exact: a bool is no sequence number, a dict subclass no payload
            raise WireError(MALFORMED, MALFORMED_MSG.format(field=name, expected=expected.__name__,
                                                            got=type(value).__name__))


class ReplayGuard:
    """Rejects a nonce seen before or a sequence number not above the sender's last one."""

    def __init__(self) -> None:
        self._nonces: set[str] = set()
        self._last_seq: dict[str, int] = {}

    def check(self, envelope: Envelope) -> None:
        """Raise :class:`WireError` (replay) if ``envelope`` was, or could be, a replay."""
        if envelope.nonce in self._nonces:
            raise WireError(REPLAY, REPLAY_NONCE_MSG.format(nonce=envelope.nonce, sender=envelope.sender))
        last = self._last_seq.get(envelope.sender, -1)
        if envelope.seq <= last:
            raise WireError(REPLAY, REPLAY_SEQ_MSG.format(seq=envelope.seq, sender=envelope.sender, last=last))

    def record(self, envelope: Envelope) -> None:
        """Remember an envelope that passed every check."""
        self._nonces.add(envelope.nonce)
        self._last_seq[envelope.sender] = envelope.seq
