"""Append-only, hash-chained JSONL log of every envelope on the wire, signed at its end by every party.

Line 1 holds the keyring (names, roles, public keys); every later line holds one
envelope; the last line is the end record. Each line carries ``prev`` (the hash
of the line before) and ``hash`` = SHA-256(prev || canonical record without its
payload); the hash of the latest line is the transcript's *head*. The payload
is bound by the envelope's digest, which the signature covers.

The chain alone uses no secret: whoever edits the file can recompute it. What
makes edits evident is what the parties sign, in the manner of
certificate-transparency logs (RFC 9162's signed tree heads):

* every envelope signs ``head``, the transcript head its sender had seen (the
  network tells a party the head after each delivery), so a message cannot be
  moved before the log state it answers, nor the log before it be rewritten;
* the end record carries every party's Ed25519 signature over the final head,
  the number of messages and the number of envelopes that party itself sealed,
  so deleting, inserting, reordering, duplicating or truncating anything, or
  editing the keyring, breaks every end signature;
* each sender's sequence numbers run 0, 1, 2, ... without a gap, and no nonce
  or envelope id appears twice.

What no signature can rule out is a wholesale rewrite with fresh keys: check the
keyring's fingerprints and the final head against the ones the run printed and
stored in ``result.json`` (``parley verify RUN --keys ... --head ...``). A file
without an end record (an interrupted run) is *incomplete*, never intact.

An array of at least :data:`BLOB_BYTES` bytes is not written into its line as
base64: its raw bytes go to the transcript's blob file (``transcript.jsonl.blobs``,
:func:`blob_path`), and the line holds their offset there. The digest the sender
signed covers those bytes all the same, so the blob file is as tamper-evident as
the lines; it travels with the transcript.

The verifying reader is strict: a line must be byte for byte what the writer
writes (sorted keys, compact separators, ASCII), with bounded nesting and
integers, no duplicate keys, no lone surrogates, no unknown or missing fields
and canonical base64; the blob file must hold exactly the arrays the lines name,
one after the other in line order. Anything else is a :class:`TranscriptError`
naming the line.
"""

from __future__ import annotations

import binascii
import errno
import hashlib
import json
import math
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from blake3 import blake3
from pydantic import ValidationError

from parley.parties.payload_limits import MAX_PAYLOAD_BYTES
from parley.parties.wire import (
    _ALL_FIELDS,
    _HEADER_FIELDS,
    GENESIS,
    LOWER_HEX,
    Envelope,
    Identity,
    KeyEntry,
    Keyring,
    array_base64_pieces,
    array_bytes,
    b64decode_strict,
    end_bytes,
    key_fingerprint,
    payload_digest,
    verify_envelope,
)
from parley.protocols.errors import IncompleteTranscriptError, InternalError, ParleyError, TranscriptError, WireError

__all__ = [
    "GENESIS",
    "BLOB_BYTES",
    "TranscriptFollower",
    "TranscriptWriter",
    "Verified",
    "blob_path",
    "check_transcript",
    "iter_transcript",
    "keyring_fingerprints",
    "read_logged_envelope",
    "read_transcript",
    "verify_transcript",
]

#: v4: arrays of at least :data:`BLOB_BYTES` bytes are stored raw in the blob file. v3: array bytes enter payload
#: digests as their BLAKE3 digest (v2 hashed them with SHA-256) and envelopes sign under ``parley-envelope-v3``, so no
#: v2 envelope verifies under v3 rules; v2 added the end signatures.
FORMAT = "parley-transcript-v4"

#: Arrays of at least this many bytes are stored raw in the blob file, smaller ones as base64 in their line: base64
#: writes 4/3 of the bytes and costs an encoding, which for a 3.2 MB array made an append x2.2 of a binary write.
BLOB_BYTES = 1 << 20

#: Bounds of the verifying reader (far above anything a run writes).
MAX_LINE_CHARS = 1 << 31
MAX_DEPTH = 32
MAX_INT_DIGITS = 20
MAX_ARRAY_DIMS = 32

NOT_JSON_MSG = "not a JSON object ({error})"
NOT_ASCII_MSG = "not a transcript line (a byte outside ASCII at offset {offset})"
TOO_LONG_MSG = f"line longer than {MAX_LINE_CHARS:,} characters"
TOO_DEEP_MSG = f"nested deeper than {MAX_DEPTH} levels"
TOO_DEEP_PARSER_MSG = "nested too deep for the JSON parser"
BIG_INT_MSG = f"integer with more than {MAX_INT_DIGITS} digits"
DUPLICATE_KEY_MSG = "duplicate key {key!r}"
SURROGATE_MSG = "string with a lone surrogate at {path}"
NOT_CANONICAL_MSG = "not in canonical form (sorted keys, compact separators, ASCII escapes): the line was re-encoded"
FIELDS_MSG = "{what} must have exactly the fields {expected}, got {got}"
FIELD_TYPE_MSG = "{what} field {field!r} must be {expected}, got {got}"
MISSING_FIELD_MSG = "missing field {field!r}"
BAD_PREV_MSG = "chain link broken: prev is {got}, the previous line's hash is {expected}"
BAD_HASH_MSG = "line hash does not match its content (stored {got}, computed {expected})"
NO_KEYRING_MSG = "the first line must be the keyring record of a {format} transcript"
OLD_FORMAT_MSG = ("transcript format {got!r} is not {format!r}: written by an older parley, whose digests, end "
                  "records or array storage this one does not read (verify it with the parley that wrote it)")
BAD_KEYRING_MSG = "malformed keyring ({error})"
LATE_KEYRING_MSG = "a keyring record may only stand on line 1"
UNKNOWN_TYPE_MSG = "unknown record type {got!r} (expected keyring, envelope or end)"
BAD_ENVELOPE_MSG = "not a valid envelope ({error})"
BAD_ARRAY_MSG = "array at {path} is malformed ({error})"
SEQ_GAP_MSG = ("sequence number {got} from {sender!r}, expected {expected}: a message of its was removed, moved "
               "or repeated")
NONCE_REUSED_MSG = "nonce {nonce} appears twice (first on line {first}): a repeated message"
ID_REUSED_MSG = "envelope id {id} appears twice (first on line {first}): a repeated message"
UNKNOWN_HEAD_MSG = ("{sender!r} signed head {head}, which no earlier line has: the log before this message "
                    "was altered or the message was moved")
HEAD_BACKWARDS_MSG = ("{sender!r} signed head of line {got}, but its previous message signed line {before}: "
                      "messages were reordered")
NO_END_MSG = ("no end record: the run was interrupted or is still writing ({count} messages verified up to here, "
              "head {head})")
TORN_MSG = "the last line is cut short: the run was interrupted while writing it ({count} messages verified before it)"
EMPTY_MSG = "the file is empty: the run wrote nothing"
BAD_END_MSG = "end record counts {claimed} messages, the transcript holds {actual}"
END_HEAD_MSG = "end record's head {claimed} is not the head before it ({actual})"
END_SIGNERS_MSG = "end record must be signed by exactly the parties of the keyring ({expected}), got {got}"
END_SENT_MSG = "{signer!r} signed that it sent {claimed} messages, the transcript holds {actual} from it"
END_SIGNATURE_MSG = "end signature of {signer!r} does not verify over the final head"
AFTER_END_MSG = "a line after the end record"
NO_BLOBS_MSG = ("the array bytes this line names are in {path}, which cannot be read ({error}); copy it with the "
                "transcript")
SHORT_BLOBS_MSG = ("this line names {nbytes} bytes at offset {offset} of {path}, which holds {size} bytes (and a "
                   f"payload at most {MAX_PAYLOAD_BYTES:,})")
BLOB_TAIL_MSG = ("{path} holds {size} bytes, but the transcript's arrays take {used}: bytes were added to it "
                 "that no line names")
KEYS_MISMATCH_MSG = "the keyring does not match the expected keys ({detail})"
HEAD_MISMATCH_MSG = "the final head is {got}, not the expected {expected}"
NO_SIGNERS_MSG = "the transcript writer has no parties to sign its end record; the file stays incomplete"

#: Signs the end of a run: (final head, number of messages) -> one signature record per party.
Countersign = Callable[[str, int], Sequence[Mapping[str, Any]]]

_ND_TAG = "__ndarray__"


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _chain_hash(prev: str, record: dict[str, Any]) -> str:
    """Hash of a line: prev plus the record with its (digest-bound) payload left out."""
    header_only = {k: v for k, v in record.items() if k != "payload"}
    return hashlib.sha256(prev.encode() + _canonical(header_only)).hexdigest()


def read_logged_envelope(path: str | Path, offset: int, length: int, line_hash: str) -> Envelope | None:
    """The envelope logged at ``offset`` (``length`` bytes) of ``path``, exactly as written; None if it is not.

    A restore replays envelopes from the transcript (:mod:`parley.parties.actors`), so the line read
    back must be the line written: its chain hash (``line_hash``, kept when it was written) covers
    the header, and the payload must match the signed digest the header carries. Any edit of the
    line, of its length or of its payload gives None.
    """
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            line = json.loads(fh.read(length))
        record = line["record"]
        if line["hash"] != line_hash or _chain_hash(line["prev"], record) != line_hash \
                or record.get("type") != "envelope":
            return None
        with _BlobFile(Path(path)) as blobs:
            envelope = Envelope.from_record({k: v for k, v in record.items() if k != "type"}, blobs.read)
        return envelope if payload_digest(envelope.payload) == envelope.digest else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def blob_path(path: str | Path) -> Path:
    """The blob file beside the transcript ``path``: ``transcript.jsonl`` -> ``transcript.jsonl.blobs``."""
    path = Path(path)
    return path.with_name(path.name + ".blobs")


class _BlobError(OSError):
    """The blob file cannot be read or is shorter than a line says (reported as such, not as a malformed array)."""


def _open_regular(path: Path) -> int:
    """A read-only descriptor of ``path``, a regular file (opened non-blocking: a FIFO must never block a reader).

    Raises :class:`OSError` if it cannot be opened or is not a regular file (``strerror`` says which).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    return fd


class _BlobFile:
    """Reads array bytes from a transcript's blob file (opened at the first read) and counts those read in order."""

    def __init__(self, transcript: Path) -> None:
        self.path = blob_path(transcript)
        self.used = 0  # bytes the lines named so far, one array after the other
        self.seen = blake3()  # ... and their digest (:class:`TranscriptFollower` checks the file still holds them)
        self._fd: int | None = None

    def _open(self) -> int:
        """The file, opened once; only a regular file (a FIFO would block the reader for ever)."""
        if self._fd is None:
            try:
                self._fd = _open_regular(self.path)
            except OSError as exc:
                raise _BlobError(NO_BLOBS_MSG.format(path=self.path.name, error=exc.strerror)) from None
        return self._fd

    def read(self, offset: int, nbytes: int) -> bytes:
        """``nbytes`` bytes at ``offset``; :class:`_BlobError`, naming the file, if it is missing or too short."""
        fd = self._open()
        size = os.fstat(fd).st_size
        # Checked before reading: a forged shape must not size a read. No envelope over the payload limit is
        # ever logged (the network checks it first), so none names more bytes; the file's size alone bounds
        # nothing (a sparse file costs no disk).
        if nbytes > MAX_PAYLOAD_BYTES or offset < 0 or offset + nbytes > size:
            raise _BlobError(SHORT_BLOBS_MSG.format(path=self.path.name, size=size, nbytes=nbytes, offset=offset))
        pieces, got = [], 0
        while got < nbytes:
            try:
                piece = os.pread(fd, nbytes - got, offset + got)
            except OSError as exc:
                raise _BlobError(NO_BLOBS_MSG.format(path=self.path.name, error=exc.strerror)) from None
            if not piece:  # the file shrank while being read
                raise _BlobError(SHORT_BLOBS_MSG.format(path=self.path.name, size=offset + got, nbytes=nbytes,
                                                        offset=offset))
            pieces.append(piece)
            got += len(piece)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def size(self) -> int:
        """Bytes in the file (0 if there is none)."""
        try:
            return os.fstat(self._open()).st_size
        except _BlobError:
            if not os.path.exists(self.path):
                return 0  # no file, or a link to none: nothing the lines could have named
            raise

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> _BlobFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def keyring_fingerprints(keyring: Keyring) -> dict[str, str]:
    """Name -> fingerprint (:func:`parley.parties.wire.key_fingerprint`) of every key of ``keyring``."""
    return {name: key_fingerprint(entry) for name, entry in sorted(keyring.entries.items())}


#: A placeholder ``@{token hex}:{i}.`` of the writer's lines; one pattern, compiled once (a pattern built from each
#: line's fresh token would be compiled anew for every line: 1.2 s of a 3,335-query run's driver time).
_PLACEHOLDER = re.compile(r"(@[0-9a-f]{16}:)(\d+)\.")


def _placeholders(line: str, token: str, count: int) -> list[tuple[int, int, int]]:
    """The ``count`` placeholders ``{token}{i}.`` of ``line`` as (start, end, i), in the order they stand (none
    without arrays: with no token, any number followed by a dot would match)."""
    if count == 0:
        return []
    found = [(m.start(), m.end(), int(m.group(2))) for m in _PLACEHOLDER.finditer(line) if m.group(1) == token]
    numbers = [number for _, _, number in found]
    if sorted(numbers) != list(range(count)):
        raise InternalError(f"transcript line holds placeholders {numbers}, expected each of 0..{count - 1} once")
    return found


class TranscriptWriter:
    """Writes the transcript of one run; the network appends every envelope it carries.

    Parameters
    ----------
    path : path-like
        File to create (truncated if it exists).
    keyring : Keyring
        Public keys of every party, written as line 1.
    countersign : callable or mapping of Identity, optional
        How the parties sign the end: ``countersign(head, messages)`` returns one
        signature record per party (:meth:`parley.parties.network.Network.countersign`
        asks each party in its own process), or a mapping name -> :class:`Identity`
        whose keys sign directly (tests and in-process tools). Without it,
        :meth:`close` leaves the file incomplete and raises.

    Attributes
    ----------
    head : str
        Hash of the latest line (what the network tells a recipient after a delivery).
    final_head : str or None
        The head every party signed at the end (None until :meth:`close` wrote the end record).
    size : int
        Bytes written so far (ASCII: one byte a character).
    blob_size : int
        Bytes written so far to the blob file (:func:`blob_path`).
    """

    def __init__(self, path: str | Path, keyring: Keyring,
                 countersign: Countersign | Mapping[str, Identity] | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.keyring = keyring
        self.countersign = countersign
        self.final_head: str | None = None
        # Binary: every line is ASCII, so bytes are written as they are, never re-encoded from text.
        self._file = self.path.open("wb")
        self._where = str(self.path.absolute())  # not resolved: the blob file is beside this name, link or not
        self._blob_path = blob_path(self._where)
        self._blob_path.unlink(missing_ok=True)  # an earlier run's; removed, never followed if it is a link
        self._blobs: Any = None  # created with the first large array (unbuffered: on disk before the line naming it)
        self.blob_size = 0
        self._prev = GENESIS
        self.lines = 0
        self.size = 0
        self._messages = 0
        self._last: tuple[Envelope, int, int, str] | None = None  # latest envelope: line offset, length, hash
        self._write({"type": "keyring", "format": FORMAT, "keys": keyring.to_json()})
        self._file.flush()  # an interrupted run leaves at least its keyring

    @property
    def head(self) -> str:
        return self._prev

    @property
    def messages(self) -> int:
        """Envelopes appended so far."""
        return self._messages

    @property
    def fingerprints(self) -> dict[str, str]:
        return keyring_fingerprints(self.keyring)

    def _write(self, record: dict[str, Any], arrays: Sequence[np.ndarray] = (), token: str = "") -> int:
        digest = _chain_hash(self._prev, record)
        line = json.dumps({"prev": self._prev, "hash": digest, "record": record},
                          sort_keys=True, separators=(",", ":")) + "\n"
        # Each array's base64 goes where its placeholder stands, encoded and written a piece at a time:
        # JSON never scans megabytes of base64, and the line is never assembled (nor copied) as one string.
        # A large array's quoted placeholder becomes its offset in the blob file, its bytes written there first.
        # The placeholders stand in the line's (sorted-key) order, not in the order the arrays were met: the
        # blob file holds the arrays in the order a reader meets them.
        write, size, at = self._file.write, 0, 0
        for start, end, index in _placeholders(line, token, len(arrays)):
            arr = arrays[index]
            if arr.nbytes >= BLOB_BYTES:
                size += write(line[at:start - 1].encode("ascii"))
                size += write(str(self._write_blob(arr)).encode("ascii"))
                at = end + 1
                continue
            size += write(line[at:start].encode("ascii"))
            for piece in array_base64_pieces(arr):
                size += write(piece)
            at = end
        size += write(line[at:].encode("ascii"))
        self._prev = digest
        self.lines += 1
        self.size += size
        return size

    def _write_blob(self, arr: np.ndarray) -> int:
        """Append ``arr``'s raw bytes to the blob file; returns their offset."""
        if self._blobs is None:
            self._blobs = self._blob_path.open("xb", buffering=0)
        offset, view = self.blob_size, memoryview(array_bytes(arr))
        while view:  # an unbuffered write may take fewer bytes than it is given
            view = view[self._blobs.write(view):]
        self.blob_size += arr.nbytes
        return offset

    def append(self, envelope: Envelope) -> int:
        """Append one envelope; returns the bytes it took on the wire log (its line and its arrays in the blob file)."""
        arrays: list[np.ndarray] = []
        token = f"@{secrets.token_hex(8)}:"  # '@' and ':' never occur in base64, so no clash with data

        def placeholder(arr: np.ndarray) -> dict[str, str]:
            arrays.append(arr)
            return {"blob" if arr.nbytes >= BLOB_BYTES else "data": f"{token}{len(arrays) - 1}."}

        offset, blobs = self.size, self.blob_size
        size = self._write({"type": "envelope", **envelope.to_record(placeholder)}, arrays, token)
        self._messages += 1
        self._last = (envelope, offset, size, self._prev)
        return size + self.blob_size - blobs

    def locate(self, envelope: Envelope) -> tuple[str, int, int, str] | None:
        """(path, byte offset, length, line hash) of ``envelope``'s line if it is the envelope appended last, else None.

        The network delivers each envelope right after appending it, so a deployment can journal the
        delivery by this place instead of a copy of the payload (:mod:`parley.parties.actors`).
        """
        if self._last is None or self._last[0] is not envelope:
            return None
        return self._where, self._last[1], self._last[2], self._last[3]

    def flush(self) -> None:
        """Push what was written to the file (readers of a run in progress)."""
        if not self._file.closed:
            self._file.flush()

    def _signatures(self, head: str, messages: int) -> list[dict[str, Any]]:
        if self.countersign is None:
            raise ParleyError(NO_SIGNERS_MSG)
        if isinstance(self.countersign, Mapping):
            signed = [self.countersign[name].sign_end(head, messages) for name in self.keyring.entries]
        else:
            signed = [dict(s) for s in self.countersign(head, messages)]
        return sorted(signed, key=lambda s: s["signer"])

    def close(self) -> None:
        """End of the run: every party signs the final head, the end record is written, the file closed (idempotent).

        If signing fails the file is closed without an end record: it verifies as incomplete.
        """
        if self._file.closed:
            return
        try:
            self._file.flush()
            head, messages = self._prev, self.messages
            signatures = self._signatures(head, messages)
            self._write({"type": "end", "messages": messages, "head": head, "signatures": signatures})
            self.final_head = head
        finally:
            self.abort()

    def abort(self) -> None:
        """Close without an end record (an interrupted run): the file verifies as incomplete, never intact."""
        if not self._file.closed:
            self._file.close()
        if self._blobs is not None:
            self._blobs.close()

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


# --------------------------------------------------------------------------- strict parsing
class _Malformed(ValueError):
    """Raised inside the JSON parser's hooks; turned into a TranscriptError with the line number."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Malformed(DUPLICATE_KEY_MSG.format(key=key[:80]))
        out[key] = value
    return out


def _bounded_int(text: str) -> int:
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:
        raise _Malformed(BIG_INT_MSG)
    return int(text)


def _check_tree(value: Any, depth: int, path: str, arrays: list[dict[str, Any]]) -> None:
    """Depth bound and no lone surrogates over a parsed line (ASCII strings cost nothing); collects array specs."""
    if depth > MAX_DEPTH:
        raise _Malformed(TOO_DEEP_MSG)
    kind = type(value)
    if kind is str:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _Malformed(SURROGATE_MSG.format(path=path)) from None
    elif kind is dict:
        spec = value.get(_ND_TAG)
        if type(spec) is dict and type(spec.get("data")) is str:
            arrays.append(spec)
        for key, item in value.items():
            _check_tree(key, depth + 1, path, arrays)
            _check_tree(item, depth + 1, f"{path}.{key[:40]}", arrays)
    elif kind is list:
        for i, item in enumerate(value):
            _check_tree(item, depth + 1, f"{path}[{i}]", arrays)


def _is_canonical(line: dict[str, Any], text: str, arrays: list[dict[str, Any]]) -> bool:
    """Is ``text`` exactly the writer's rendering of ``line``?

    Array data is taken out before rendering and spliced back, as the writer does,
    so the megabytes of base64 are compared, never re-escaped. Data that would need
    escaping cannot match: spliced raw, it differs from its escaped form in ``text``.
    """
    token = f"@{secrets.token_hex(8)}:"
    datas = [spec["data"] for spec in arrays]
    try:
        for i, spec in enumerate(arrays):
            spec["data"] = f"{token}{i}."
        rendered = json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n"
    finally:
        for spec, data in zip(arrays, datas, strict=True):
            spec["data"] = data
    for i, data in enumerate(datas):
        rendered = rendered.replace(f"{token}{i}.", data, 1)
    return rendered == text


def _parse_line(number: int, raw: bytes) -> dict[str, Any]:
    """One line, parsed strictly and required to be in the writer's canonical form."""
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise TranscriptError(number, NOT_ASCII_MSG.format(offset=exc.start)) from None
    try:
        line = json.loads(text, object_pairs_hook=_pairs, parse_int=_bounded_int)
        arrays: list[dict[str, Any]] = []
        _check_tree(line, 0, "line", arrays)
    except json.JSONDecodeError as exc:
        raise TranscriptError(number, NOT_JSON_MSG.format(error=exc.msg)) from None
    except _Malformed as exc:
        raise TranscriptError(number, NOT_JSON_MSG.format(error=str(exc))) from None
    except RecursionError:
        raise TranscriptError(number, NOT_JSON_MSG.format(error=TOO_DEEP_PARSER_MSG)) from None
    except ValueError as exc:  # e.g. Python's own limit on integer digits
        raise TranscriptError(number, NOT_JSON_MSG.format(error=str(exc)[:200])) from None
    if type(line) is not dict:
        raise TranscriptError(number, NOT_JSON_MSG.format(error="top level is not an object"))
    _exact_fields(number, "a line", line, ("hash", "prev", "record"))
    if type(line["record"]) is not dict:
        raise TranscriptError(number, NOT_JSON_MSG.format(error="record is not an object"))
    for name in ("prev", "hash"):
        _hex_field(number, "the line", line, name, 64)
    if not _is_canonical(line, text, arrays):
        raise TranscriptError(number, NOT_CANONICAL_MSG)
    return line


def _exact_fields(number: int, what: str, record: Mapping[str, Any], expected: Iterable[str]) -> None:
    expected = sorted(expected)
    if sorted(record) != expected:
        got = sorted(record)
        missing = [f for f in expected if f not in record]
        if len(missing) == 1 and len(got) == len(expected) - 1:
            raise TranscriptError(number, MISSING_FIELD_MSG.format(field=missing[0]))
        raise TranscriptError(number, FIELDS_MSG.format(what=what, expected=", ".join(expected),
                                                        got=", ".join(map(repr, got[:20])) or "none"))


def _hex_field(number: int, what: str, record: Mapping[str, Any], name: str, length: int) -> None:
    value = record[name]
    if type(value) is not str or len(value) != length or not LOWER_HEX.issuperset(value):
        raise TranscriptError(number, FIELD_TYPE_MSG.format(what=what, field=name,
                                                            expected=f"{length} lowercase hex digits",
                                                            got=repr(value)[:80]))


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _canonical_base64(data: str, nbytes: int) -> bool:
    """Is ``data`` (already decoded strictly to ``nbytes`` bytes) the one base64 spelling of those bytes?

    Strict decoding still accepts set bits in the unused low bits of the last digit
    before the padding; those, and any length other than 4 ceil(n / 3), make a second
    spelling. Checked in O(1) instead of re-encoding megabytes.
    """
    if len(data) != 4 * ((nbytes + 2) // 3):
        return False
    pad = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
    if pad == 0:
        return True
    unused = 4 if pad == 2 else 2
    return _B64.index(data[-pad - 1]) & ((1 << unused) - 1) == 0


def _decode_array(spec: Any, path: str, blobs: _BlobFile) -> np.ndarray:
    """A transcript array, accepted only in the exact form the writer produces."""
    if type(spec) is not dict or sorted(spec) not in (["data", "dtype", "shape"], ["blob", "dtype", "shape"]):
        raise ValueError("expected exactly the fields data, dtype, shape (or blob, dtype, shape)")
    dtype, shape = spec["dtype"], spec["shape"]
    if type(dtype) is not str:
        raise ValueError("dtype must be a string")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise ValueError(f"unknown dtype {dtype[:40]!r}") from None
    if dt.kind not in "biuf" or dt.str != dtype:
        raise ValueError(f"dtype {dtype[:40]!r} is not a canonical numeric dtype")
    if type(shape) is not list or len(shape) > MAX_ARRAY_DIMS or any(type(d) is not int or d < 0 for d in shape):
        raise ValueError("shape must be a list of non-negative integers")
    nbytes = math.prod(shape) * dt.itemsize
    if ("blob" in spec) != (nbytes >= BLOB_BYTES):
        raise ValueError(f"an array of {nbytes} bytes is stored {'raw' if 'blob' in spec else 'as base64'} "
                         f"(arrays of at least {BLOB_BYTES} bytes go to the blob file, smaller ones in the line)")
    if "blob" in spec:
        # The writer appends each array where the previous one ended, so a blob file holds each array once, in order.
        if type(spec["blob"]) is not int or spec["blob"] != blobs.used:
            raise ValueError(f"blob offset {str(spec['blob'])[:40]} is not where the previous array's bytes end "
                             f"({blobs.used})")
        raw = blobs.read(blobs.used, nbytes)
        blobs.used += nbytes
        blobs.seen.update(raw)
        return np.frombuffer(raw, dtype=dt).reshape(shape)
    data = spec["data"]
    if type(data) is not str:
        raise ValueError("data must be base64 text")
    try:
        raw = b64decode_strict(data)
    except binascii.Error as exc:
        raise ValueError(f"data is not base64 ({exc})") from None
    if not _canonical_base64(data, len(raw)):
        raise ValueError("data is not canonical base64")
    if len(raw) != nbytes:
        raise ValueError(f"data holds {len(raw)} bytes, dtype and shape need {nbytes}")
    return np.frombuffer(raw, dtype=dt).reshape(shape)


def _decode_strict(value: Any, path: str, blobs: _BlobFile) -> Any:
    """Inverse of :func:`parley.parties.wire.encode_payload` that accepts only what it produces."""
    if type(value) is dict:
        if _ND_TAG in value:
            if len(value) != 1:
                raise ValueError(f"{path}: {_ND_TAG} beside other keys")
            try:
                return _decode_array(value[_ND_TAG], path, blobs)
            except ValueError as exc:
                raise ValueError(BAD_ARRAY_MSG.format(path=path, error=exc)) from None
        return {k: _decode_strict(v, f"{path}.{k}", blobs) for k, v in value.items()}
    if type(value) is list:
        return [_decode_strict(v, f"{path}[{i}]", blobs) for i, v in enumerate(value)]
    return value


_ENVELOPE_TYPES: dict[str, type] = {"id": str, "sender": str, "recipient": str, "kind": str, "protocol": str,
                                    "seq": int, "nonce": str, "timestamp": int, "head": str, "digest": str,
                                    "signature": str, "payload": dict}


def _strict_envelope(number: int, record: dict[str, Any], blobs: _BlobFile) -> Envelope:
    _exact_fields(number, "an envelope record", record, ("type", *_ALL_FIELDS))
    for name, expected in _ENVELOPE_TYPES.items():
        if type(record[name]) is not expected:
            raise TranscriptError(number, BAD_ENVELOPE_MSG.format(error=FIELD_TYPE_MSG.format(
                what="envelope", field=name, expected=expected.__name__, got=type(record[name]).__name__)))
    if record["seq"] < 0:
        raise TranscriptError(number, BAD_ENVELOPE_MSG.format(error="seq must be >= 0"))
    _hex_field(number, "envelope", record, "digest", 64)
    _hex_field(number, "envelope", record, "head", 64)
    _hex_field(number, "envelope", record, "signature", 128)
    try:
        payload = _decode_strict(record["payload"], "payload", blobs)
    except _BlobError as exc:
        raise TranscriptError(number, str(exc)) from None
    except ValueError as exc:
        raise TranscriptError(number, BAD_ENVELOPE_MSG.format(error=exc)) from None
    fields = {k: record[k] for k in _HEADER_FIELDS}
    return Envelope.model_construct(**fields, payload=payload, signature=record["signature"])


def _strict_keyring(number: int, record: dict[str, Any]) -> Keyring:
    if record.get("type") != "keyring":
        raise TranscriptError(number, NO_KEYRING_MSG.format(format=FORMAT))
    if record.get("format") != FORMAT:
        raise TranscriptError(number, OLD_FORMAT_MSG.format(got=str(record.get("format"))[:80], format=FORMAT))
    _exact_fields(number, "the keyring record", record, ("format", "keys", "type"))
    keys = record["keys"]
    if type(keys) is not dict or not keys:
        raise TranscriptError(number, BAD_KEYRING_MSG.format(error="keys must be a non-empty object"))
    ring = Keyring()
    for name, data in keys.items():
        try:
            entry = KeyEntry.model_validate(data, strict=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"])) or "entry"
            error = f"{name[:40]!r}: {where}: {first['msg']}"
            raise TranscriptError(number, BAD_KEYRING_MSG.format(error=error)) from None
        if entry.name != name:
            error = f"entry {name[:40]!r} names {entry.name[:40]!r}"
            raise TranscriptError(number, BAD_KEYRING_MSG.format(error=error))
        for field_name in ("public_key", "kx_public"):
            value = getattr(entry, field_name)
            if value is None:
                continue
            if len(value) != 64 or not LOWER_HEX.issuperset(value):
                raise TranscriptError(number, BAD_KEYRING_MSG.format(
                    error=f"{name[:40]!r}: {field_name} must be 64 lowercase hex digits"))
        ring.add(entry)
    return ring


@dataclass(frozen=True)
class Verified:
    """What :func:`check_transcript` established.

    Attributes
    ----------
    messages : int
        Envelopes in the transcript.
    head : str
        The final head every party signed (compare it with ``result.json``'s).
    keys : dict
        Name -> key fingerprint of every party in the keyring (compare them likewise).
    """

    messages: int
    head: str
    keys: dict[str, str]


class _Checker:
    """Verification state over one transcript: chain, signatures, sequences, nonces, signed heads."""

    def __init__(self, path: Path, keys: Mapping[str, str] | Iterable[str] | None, head: str | None) -> None:
        self.blobs = _BlobFile(path)
        self.expected_keys = keys
        self.expected_head = head
        self.prev = GENESIS
        self.keyring = Keyring()
        self.line_of_head: dict[str, int] = {GENESIS: 0}
        self.next_seq: dict[str, int] = {}
        self.signed_line: dict[str, int] = {}
        self.nonces: dict[str, int] = {}
        self.ids: dict[str, int] = {}
        self.count = 0
        self.ended = False
        self.final_head = GENESIS

    def chain(self, number: int, line: dict[str, Any]) -> None:
        if line["prev"] != self.prev:
            raise TranscriptError(number, BAD_PREV_MSG.format(got=line["prev"], expected=self.prev))
        expected = _chain_hash(self.prev, line["record"])
        if line["hash"] != expected:
            raise TranscriptError(number, BAD_HASH_MSG.format(got=line["hash"], expected=expected))
        self.prev = line["hash"]
        self.line_of_head[self.prev] = number

    def keyring_line(self, number: int, record: dict[str, Any]) -> None:
        self.keyring = _strict_keyring(number, record)
        if self.expected_keys is not None:
            _match_keys(number, keyring_fingerprints(self.keyring), self.expected_keys)

    def envelope(self, number: int, record: dict[str, Any]) -> Envelope:
        envelope = _strict_envelope(number, record, self.blobs)
        try:
            verify_envelope(envelope, self.keyring)
        except WireError as exc:
            raise TranscriptError(number, str(exc)) from None
        sender = envelope.sender
        expected = self.next_seq.get(sender, 0)
        if envelope.seq != expected:
            raise TranscriptError(number, SEQ_GAP_MSG.format(got=envelope.seq, sender=sender, expected=expected))
        for seen, value, message in ((self.nonces, envelope.nonce, NONCE_REUSED_MSG),
                                     (self.ids, envelope.id, ID_REUSED_MSG)):
            if value in seen:
                raise TranscriptError(number, message.format(nonce=value[:80], id=value[:80], first=seen[value]))
            seen[value] = number
        # The head it signed must be a state of this log before it, and a sender's view only grows.
        signed = self.line_of_head.get(envelope.head)
        if signed is None:
            raise TranscriptError(number, UNKNOWN_HEAD_MSG.format(sender=sender, head=envelope.head))
        before = self.signed_line.get(sender, 0)
        if signed < before:
            raise TranscriptError(number, HEAD_BACKWARDS_MSG.format(sender=sender, got=signed, before=before))
        self.signed_line[sender] = signed
        self.next_seq[sender] = expected + 1
        self.count += 1
        return envelope

    def end(self, number: int, record: dict[str, Any]) -> None:
        _exact_fields(number, "the end record", record, ("head", "messages", "signatures", "type"))
        # The end line is signed over by no later line: its fields must have the writer's exact types (1.0 == 1).
        if type(record["messages"]) is not int or record["messages"] != self.count:
            raise TranscriptError(number, BAD_END_MSG.format(claimed=str(record["messages"])[:40], actual=self.count))
        if record["head"] != self.prev:
            raise TranscriptError(number, END_HEAD_MSG.format(claimed=str(record["head"])[:80], actual=self.prev))
        signatures = record["signatures"]
        names = sorted(self.keyring.entries)
        ok = type(signatures) is list and all(type(s) is dict and sorted(s) == ["sent", "signature", "signer"]
                                              for s in signatures)
        signers = [s["signer"] for s in signatures] if ok else []
        if not ok or signers != names:
            got = ", ".join(map(str, signers)) if ok else "a malformed list"
            raise TranscriptError(number, END_SIGNERS_MSG.format(expected=", ".join(names), got=got[:200]))
        for item in signatures:
            signer, sent = item["signer"], item["sent"]
            actual = self.next_seq.get(signer, 0)
            if type(sent) is not int or sent != actual:
                raise TranscriptError(number, END_SENT_MSG.format(signer=signer, claimed=str(sent)[:40], actual=actual))
            _hex_field(number, "end signature", item, "signature", 128)
            if not self.keyring.signed(signer, item["signature"], end_bytes(signer, self.prev, self.count, sent)):
                raise TranscriptError(number, END_SIGNATURE_MSG.format(signer=signer))
        try:
            size = self.blobs.size()
        except _BlobError as exc:
            raise TranscriptError(number, str(exc)) from None
        if size != self.blobs.used:
            raise TranscriptError(number, BLOB_TAIL_MSG.format(path=self.blobs.path.name, size=size,
                                                               used=self.blobs.used))
        self.final_head = self.prev
        self.ended = True


def _match_keys(number: int, got: Mapping[str, str], expected: Mapping[str, str] | Iterable[str]) -> None:
    """The keyring's fingerprints against the expected ones: by name if names are given, else as a set."""
    if isinstance(expected, Mapping):
        wrong = sorted(n for n in set(got) | set(expected) if got.get(n) != expected.get(n))
        if wrong:
            detail = "; ".join(f"{n}: transcript {got.get(n, 'absent')}, expected {expected.get(n, 'absent')}"
                               for n in wrong)
            raise TranscriptError(number, KEYS_MISMATCH_MSG.format(detail=detail))
        return
    want, have = set(expected), set(got.values())
    if want != have:
        parts: list[str] = []
        if have - want:
            parts.append("not expected: " + ", ".join(f"{n}={fp}" for n, fp in sorted(got.items()) if fp not in want))
        if want - have:
            parts.append("missing: " + ", ".join(sorted(want - have)))
        raise TranscriptError(number, KEYS_MISMATCH_MSG.format(detail="; ".join(parts)))


def _raw_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as fh:
        number = 0
        while True:
            raw = fh.readline(MAX_LINE_CHARS + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_CHARS:
                raise TranscriptError(number, TOO_LONG_MSG)
            yield number, raw


def _walk_strict(path: Path, checker: _Checker) -> Iterator[Envelope]:
    """Envelopes in order, each checked (signature and digest, then sequence, nonce, head, then its chain link).

    Signatures are checked before the chain so that an edited header is reported
    as what it is (a signature failure), not only as a broken hash.
    """
    with checker.blobs:
        yield from _walk_lines(path, checker)


def _walk_lines(path: Path, checker: _Checker) -> Iterator[Envelope]:
    number = 0
    for number, raw in _raw_lines(path):
        if not raw.endswith(b"\n"):
            raise IncompleteTranscriptError(number, TORN_MSG.format(count=checker.count), checker.count, checker.prev)
        envelope = _check_line(number, raw, checker)
        if envelope is not None:
            yield envelope
    _check_ending(number, checker)


def _check_line(number: int, raw: bytes, checker: _Checker) -> Envelope | None:
    """Check one whole line (its envelope, if it holds one)."""
    if checker.ended:
        raise TranscriptError(number, AFTER_END_MSG)
    line = _parse_line(number, raw)
    record = line["record"]
    kind = record.get("type")
    envelope = None
    if number == 1:
        checker.keyring_line(number, record)
    elif kind == "keyring":
        raise TranscriptError(number, LATE_KEYRING_MSG)
    elif kind == "end":
        checker.end(number, record)
    elif kind == "envelope":
        envelope = checker.envelope(number, record)
    else:
        raise TranscriptError(number, UNKNOWN_TYPE_MSG.format(got=str(kind)[:40]))
    checker.chain(number, line)
    return envelope


def _check_ending(number: int, checker: _Checker) -> None:
    """After the last of ``number`` lines: the file is not empty, it ended with the end record, at the head expected."""
    if number == 0:
        raise IncompleteTranscriptError(1, EMPTY_MSG, 0, GENESIS)
    if not checker.ended:
        raise IncompleteTranscriptError(number + 1, NO_END_MSG.format(count=checker.count, head=checker.prev),
                                        checker.count, checker.prev)
    if checker.expected_head is not None and checker.final_head != checker.expected_head:
        raise TranscriptError(number, HEAD_MISMATCH_MSG.format(got=checker.final_head,
                                                               expected=checker.expected_head))


def _walk_fast(path: Path) -> Iterator[Envelope]:
    """Envelopes in order, unchecked (a run reading its own transcript, an observer reading a run in progress)."""
    with path.open("r", encoding="utf-8") as fh, _BlobFile(path) as blobs:
        for number, text in enumerate(fh, start=1):
            if not text.endswith("\n"):
                return  # a line still being written
            try:
                line = json.loads(text)
                record = line["record"]
            except (ValueError, KeyError, TypeError):
                raise TranscriptError(number, NOT_JSON_MSG.format(error="unreadable line")) from None
            if record.get("type") != "envelope":
                continue
            try:
                envelope = Envelope.from_record({k: v for k, v in record.items() if k != "type"}, blobs.read)
            except _BlobError as exc:
                raise TranscriptError(number, str(exc)) from None
            except Exception as exc:  # pydantic ValidationError, base64 or reshape errors
                raise TranscriptError(number, BAD_ENVELOPE_MSG.format(error=type(exc).__name__)) from None
            yield envelope


def _file_digest(path: Path) -> bytes | None:
    """BLAKE3 of a regular file's bytes (of none if there is no file); None if it is something else or unreadable."""
    h = blake3()
    try:
        fd = _open_regular(path)
    except FileNotFoundError:
        return h.digest()
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        except OSError:
            return None
    return h.digest()


class TranscriptFollower:
    """Verifies the transcript a :class:`TranscriptWriter` is writing, a line at a time, while the run waits.

    The checks of :func:`read_transcript` with ``verify=True``, on the same bytes: each line is read
    back from the file once the writer has written it whole. A run over Ray waits for its parties
    during an exchange (:attr:`parley.parties.network.Network.idle` calls :meth:`step` then), so the
    report's verification is mostly done when the run ends. :meth:`finish` checks the rest, the end
    record included, and that the transcript and its blob file still hold exactly the bytes that were
    checked. Whenever that is not a clean pass, it verifies the finished files afresh: the verdict, and
    the reason of a failure, are always those of reading the finished files. One thread steps it (the run's).
    """

    def __init__(self, writer: TranscriptWriter) -> None:
        self._writer = writer
        self._checker = _Checker(writer.path, None, None)
        self._file = writer.path.open("rb")
        self._partial = b""  # the start of a line not yet written whole
        self._lines = 0
        self._seen = blake3()
        self._failed = False  # a line failed: the finished files decide (:meth:`finish`)
        self.envelopes: list[Envelope] = []

    def step(self, lines: int = 1) -> bool:
        """Check up to ``lines`` more lines the writer has written whole; False if none was waiting."""
        if self._failed or self._file.closed:
            return False
        self._writer.flush()
        for done in range(lines):
            raw = self._partial + self._file.readline(MAX_LINE_CHARS + 1 - len(self._partial))
            if len(raw) > MAX_LINE_CHARS:
                self._failed = True
                return False
            if not raw.endswith(b"\n"):
                self._partial = raw
                return done > 0
            self._partial = b""
            self._lines += 1
            self._seen.update(raw)
            try:
                envelope = _check_line(self._lines, raw, self._checker)
            except Exception:  # whatever it is, the report's verification of the finished files says it, not the run
                self._failed = True
                return False
            if envelope is not None:
                self.envelopes.append(envelope)
        return True

    def finish(self) -> list[Envelope]:
        """Check what is left once the writer is closed; the envelopes, or raises as :func:`read_transcript`."""
        try:
            if self._clean():
                return self.envelopes
        finally:
            self.close()
        # A failure, or files that changed since their check (an edit, even one undone since): the finished
        # files decide, and say why.
        return read_transcript(self._writer.path, verify=True)

    def _clean(self) -> bool:
        """Did every line pass, ending with the end record, in files that still hold the bytes checked?"""
        self.step(1 << 62)
        if self._failed or self._partial:
            return False
        try:
            _check_ending(self._lines, self._checker)
        except TranscriptError:
            return False
        blobs = self._checker.blobs
        return all(_file_digest(path) == seen.digest()
                   for path, seen in ((self._writer.path, self._seen), (blobs.path, blobs.seen)))

    def close(self) -> None:
        """Stop following (a run that failed writes no report)."""
        self._file.close()
        self._checker.blobs.close()


def check_transcript(path: str | Path, keys: Mapping[str, str] | Iterable[str] | None = None,
                     head: str | None = None) -> Verified:
    """Verify a transcript completely, optionally against expected key fingerprints and final head.

    Parameters
    ----------
    path : path-like
        A ``transcript.jsonl``.
    keys : mapping or iterable of str, optional
        Expected fingerprints: name -> fingerprint (names must match too) or a
        collection of fingerprints; the keyring must hold exactly these keys.
    head : str, optional
        Expected final head (the one the run printed and stored in ``result.json``).

    Raises
    ------
    IncompleteTranscriptError
        Every line present verifies but the parties' end record is missing (interrupted run).
    TranscriptError
        At the first bad line, naming its 1-based number and what failed.
    """
    checker = _Checker(Path(path), keys, head)
    for _ in _walk_strict(Path(path), checker):
        pass
    return Verified(messages=checker.count, head=checker.final_head, keys=keyring_fingerprints(checker.keyring))


def verify_transcript(path: str | Path) -> int:
    """Verify every chain link, digest, signature, sequence number, nonce, signed head and the end signatures.

    Returns the number of envelopes; raises as :func:`check_transcript`.
    """
    return check_transcript(path).messages


def read_transcript(path: str | Path, verify: bool = True) -> list[Envelope]:
    """Envelopes of a transcript in wire order (what a passive observer saw); ``verify`` as :func:`check_transcript`."""
    return list(iter_transcript(path, verify))


def iter_transcript(path: str | Path, verify: bool = True) -> Iterator[Envelope]:
    """The same, one envelope at a time (large transcripts)."""
    if verify:
        return _walk_strict(Path(path), _Checker(Path(path), None, None))
    return _walk_fast(Path(path))

