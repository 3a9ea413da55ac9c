"""Reading a transcript's envelopes back: all of them in wire order (verified or not), or one logged line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from parley.parties.transcript.blobs import _BlobError, _BlobFile
from parley.parties.transcript.chain import _chain_hash
from parley.parties.transcript.parser import BAD_ENVELOPE_MSG, NOT_JSON_MSG
from parley.parties.transcript.verifier import _Checker, _walk_strict
from parley.parties.wire import Envelope, payload_digest
from parley.protocols.errors import TranscriptError

__all__ = ["iter_transcript", "read_logged_envelope", "read_transcript"]


def read_logged_envelope(path: str | Path, offset: int, length: int, line_hash: str) -> Envelope | None:
    """The envelope logged at ``offset`` (``length`` bytes) of ``path``, exactly as written; None if it is not.

    A restore replays envelopes from the transcript (:mod:`parley.parties.ray.journal`), so the line read
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


def read_transcript(path: str | Path, verify: bool = True) -> list[Envelope]:
    """Envelopes of a transcript in wire order (what a passive observer saw); ``verify`` as :func:`check_transcript`."""
    return list(iter_transcript(path, verify))


def iter_transcript(path: str | Path, verify: bool = True) -> Iterator[Envelope]:
    """The same, one envelope at a time (large transcripts)."""
    if verify:
        return _walk_strict(Path(path), _Checker(Path(path), None, None))
    return _walk_fast(Path(path))
