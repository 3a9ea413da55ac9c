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

The package's modules, one job each: :mod:`~parley.parties.transcript.chain` (format tag, hash
chain, key fingerprints), :mod:`~parley.parties.transcript.blobs` (the blob file),
:mod:`~parley.parties.transcript.writer` (writing), :mod:`~parley.parties.transcript.parser`
(strict parsing of one line), :mod:`~parley.parties.transcript.verifier` (verifying a whole file),
:mod:`~parley.parties.transcript.reader` (reading envelopes back) and
:mod:`~parley.parties.transcript.follower` (verifying while the run writes).
"""

from __future__ import annotations

from parley.parties.transcript.blobs import BLOB_BYTES, blob_path
from parley.parties.transcript.chain import keyring_fingerprints
from parley.parties.transcript.follower import TranscriptFollower
from parley.parties.transcript.reader import iter_transcript, read_logged_envelope, read_transcript
from parley.parties.transcript.verifier import Verified, check_transcript, verify_transcript
from parley.parties.transcript.writer import TranscriptWriter
from parley.parties.wire import GENESIS

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
