"""Append-only, hash-chained JSONL log of every envelope on the wire.

Line 1 holds the keyring (names, roles, public keys) so the file verifies on its
own; every later line holds one envelope; the last line is an end record with
the number of envelopes, so a truncated file does not verify. (The keyring is
the file's own: to trust a transcript, compare its line-1 keys with the keys you
expect the parties to hold.) Each line carries ``prev`` (the hash of
the line before) and ``hash`` = SHA-256(prev || canonical record without its
payload). The payload need not enter the chain hash: it is bound by the
envelope's digest, which the signature covers and :func:`verify_transcript`
recomputes from the stored payload. So altering a header breaks the signature and
the chain, altering a payload breaks its digest, and removing, inserting or
reordering lines breaks the chain.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties.wire import Envelope, Keyring, array_text, verify_envelope
from parley.protocols.errors import TranscriptError, WireError

__all__ = ["TranscriptWriter", "verify_transcript", "read_transcript", "iter_transcript", "GENESIS"]

GENESIS = "0" * 64
FORMAT = "parley-transcript-v1"

NOT_JSON_MSG = "not a JSON object ({error})"
MISSING_FIELD_MSG = "missing field {field!r}"
BAD_PREV_MSG = "chain link broken: prev is {got}, the previous line's hash is {expected}"
BAD_HASH_MSG = "line hash does not match its content (stored {got}, computed {expected})"
NO_KEYRING_MSG = "the first line must be the keyring record of a {format} transcript"
LATE_KEYRING_MSG = "a keyring record may only stand on line 1"
BAD_ENVELOPE_MSG = "not a valid envelope ({error})"
NO_END_MSG = "no end record: the transcript is truncated or its run is still writing"
BAD_END_MSG = "end record counts {claimed} messages, the transcript holds {actual}"
AFTER_END_MSG = "a line after the end record"


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _chain_hash(prev: str, record: dict[str, Any]) -> str:
    """Hash of a line: prev plus the record with its (digest-bound) payload left out."""
    header_only = {k: v for k, v in record.items() if k != "payload"}
    return hashlib.sha256(prev.encode() + _canonical(header_only)).hexdigest()


class TranscriptWriter:
    """Writes the transcript of one run; the network appends every envelope it carries.

    Parameters
    ----------
    path : path-like
        File to create (truncated if it exists).
    keyring : Keyring
        Public keys of every party, written as line 1.
    """

    def __init__(self, path: str | Path, keyring: Keyring) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", encoding="utf-8")
        self._prev = GENESIS
        self.lines = 0
        self._write({"type": "keyring", "format": FORMAT, "keys": keyring.to_json()})

    def _write(self, record: dict[str, Any], arrays: Sequence[np.ndarray] = (), token: str = "") -> int:
        digest = _chain_hash(self._prev, record)
        line = json.dumps({"prev": self._prev, "hash": digest, "record": record}, separators=(",", ":")) + "\n"
        # Splice each array's base64 over its placeholder: JSON never scans megabytes of base64.
        for i, arr in enumerate(arrays):
            line = line.replace(f"{token}{i}.", array_text(arr), 1)
        self._file.write(line)
        self._prev = digest
        self.lines += 1
        return len(line)

    def append(self, envelope: Envelope) -> int:
        """Append one envelope; returns the bytes it took on the wire log."""
        arrays: list[np.ndarray] = []
        token = f"@{secrets.token_hex(8)}:"  # '@' and ':' never occur in base64, so no clash with data

        def placeholder(arr: np.ndarray) -> str:
            arrays.append(arr)
            return f"{token}{len(arrays) - 1}."

        return self._write({"type": "envelope", **envelope.to_record(placeholder)}, arrays, token)

    def close(self) -> None:
        """Write the end record and close (idempotent)."""
        if not self._file.closed:
            self._write({"type": "end", "messages": self.lines - 1})
            self._file.close()

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open("r", encoding="utf-8") as fh:
        for number, text in enumerate(fh, start=1):
            try:
                line = json.loads(text)
            except json.JSONDecodeError as exc:
                raise TranscriptError(number, NOT_JSON_MSG.format(error=exc.msg)) from None
            if not isinstance(line, dict):
                raise TranscriptError(number, NOT_JSON_MSG.format(error="top level is not an object"))
            for name in ("prev", "hash", "record"):
                if name not in line:
                    raise TranscriptError(number, MISSING_FIELD_MSG.format(field=name))
            yield number, line


def _check_chain(number: int, line: dict[str, Any], prev: str) -> None:
    if line["prev"] != prev:
        raise TranscriptError(number, BAD_PREV_MSG.format(got=line["prev"], expected=prev))
    expected = _chain_hash(prev, line["record"])
    if line["hash"] != expected:
        raise TranscriptError(number, BAD_HASH_MSG.format(got=line["hash"], expected=expected))


def _envelope_error(exc: Exception) -> str:
    """First problem of a failed envelope parse, naming the field where pydantic says which."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return f"{'.'.join(map(str, first['loc'])) or 'envelope'}: {first['msg']}"
    return f"{type(exc).__name__}: {exc}"


def _walk(path: str | Path, check: bool) -> Iterator[Envelope]:
    """Envelopes in order; with ``check``, each line's signature and digest, then its chain link.

    Signatures are checked before the chain so that an edited header is reported
    as what it is (a signature failure), not only as a broken hash.
    """
    prev = GENESIS
    keyring = Keyring()
    count, ended, number = 0, False, 0
    for number, line in _lines(Path(path)):
        record = line["record"]
        if not isinstance(record, dict):
            raise TranscriptError(number, NOT_JSON_MSG.format(error="record is not an object"))
        if check and ended:
            raise TranscriptError(number, AFTER_END_MSG)
        kind = record.get("type")
        if number == 1:
            if kind != "keyring" or record.get("format") != FORMAT:
                raise TranscriptError(number, NO_KEYRING_MSG.format(format=FORMAT))
            keyring = Keyring.from_json(record.get("keys", {}))
        elif kind == "keyring":
            raise TranscriptError(number, LATE_KEYRING_MSG)
        elif kind == "end":
            if check and record.get("messages") != count:
                raise TranscriptError(number, BAD_END_MSG.format(claimed=record.get("messages"), actual=count))
            ended = True
        else:
            try:
                envelope = Envelope.from_record({k: v for k, v in record.items() if k != "type"})
            except Exception as exc:  # pydantic ValidationError, base64 or reshape errors
                raise TranscriptError(number, BAD_ENVELOPE_MSG.format(error=_envelope_error(exc))) from None
            if check:
                try:
                    verify_envelope(envelope, keyring)
                except WireError as exc:
                    raise TranscriptError(number, str(exc)) from None
            count += 1
        if check:
            _check_chain(number, line, prev)
        prev = line["hash"]
        if kind not in ("keyring", "end"):
            yield envelope
    if check and not ended:
        raise TranscriptError(number + 1, NO_END_MSG)


def verify_transcript(path: str | Path) -> int:
    """Verify every chain link, digest and signature; return the number of envelopes.

    Raises
    ------
    TranscriptError
        At the first bad line, naming its 1-based number and what failed.
    """
    return sum(1 for _ in _walk(path, check=True))


def read_transcript(path: str | Path, verify: bool = True) -> list[Envelope]:
    """Envelopes of a transcript in wire order (what a passive observer saw)."""
    return list(_walk(path, check=verify))


def iter_transcript(path: str | Path, verify: bool = True) -> Iterator[Envelope]:
    """The same, one envelope at a time (large transcripts)."""
    return _walk(path, check=verify)
