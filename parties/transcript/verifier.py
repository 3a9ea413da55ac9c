"""Verifying a whole transcript: chain, signatures, sequences, nonces, signed heads, end record, expected anchors."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parley.parties.transcript.blobs import _BlobError, _BlobFile
from parley.parties.transcript.chain import _chain_hash, keyring_fingerprints
from parley.parties.transcript.parser import (
    _exact_fields,
    _hex_field,
    _parse_line,
    _raw_lines,
    _strict_envelope,
    _strict_keyring,
)
from parley.parties.wire import GENESIS, Envelope, Keyring, end_bytes, verify_envelope
from parley.protocols.errors import IncompleteTranscriptError, TranscriptError, WireError

__all__ = ["Verified", "check_transcript", "verify_transcript"]

BAD_PREV_MSG = "chain link broken: prev is {got}, the previous line's hash is {expected}"
BAD_HASH_MSG = "line hash does not match its content (stored {got}, computed {expected})"
LATE_KEYRING_MSG = "a keyring record may only stand on line 1"
UNKNOWN_TYPE_MSG = "unknown record type {got!r} (expected keyring, envelope or end)"
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
BLOB_TAIL_MSG = ("{path} holds {size} bytes, but the transcript's arrays take {used}: bytes were added to it "
                 "that no line names")
KEYS_MISMATCH_MSG = "the keyring does not match the expected keys ({detail})"
HEAD_MISMATCH_MSG = "the final head is {got}, not the expected {expected}"


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
