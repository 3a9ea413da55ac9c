"""The transcript's format tag, the hash chain linking its lines, and the fingerprints of its keyring."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from parley.parties.wire import Keyring, key_fingerprint

__all__ = ["FORMAT", "keyring_fingerprints"]

#: v4: arrays of at least :data:`BLOB_BYTES` bytes are stored raw in the blob file. v3: array bytes enter payload
#: digests as their BLAKE3 digest (v2 hashed them with SHA-256) and envelopes sign under ``parley-envelope-v3``, so no
#: v2 envelope verifies under v3 rules; v2 added the end signatures.
FORMAT = "parley-transcript-v4"


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _chain_hash(prev: str, record: dict[str, Any]) -> str:
    """Hash of a line: prev plus the record with its (digest-bound) payload left out."""
    header_only = {k: v for k, v in record.items() if k != "payload"}
    return hashlib.sha256(prev.encode() + _canonical(header_only)).hexdigest()


def keyring_fingerprints(keyring: Keyring) -> dict[str, str]:
    """Name -> fingerprint (:func:`parley.parties.wire.key_fingerprint`) of every key of ``keyring``."""
    return {name: key_fingerprint(entry) for name, entry in sorted(keyring.entries.items())}
