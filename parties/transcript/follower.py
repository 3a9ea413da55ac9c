"""Verifying a transcript while it is written: :class:`TranscriptFollower` checks each line the writer finished."""

from __future__ import annotations

import os
from pathlib import Path

from blake3 import blake3

from parley.parties.transcript.blobs import _open_regular
from parley.parties.transcript.parser import MAX_LINE_CHARS
from parley.parties.transcript.reader import read_transcript
from parley.parties.transcript.verifier import _check_ending, _check_line, _Checker
from parley.parties.transcript.writer import TranscriptWriter
from parley.parties.wire import Envelope
from parley.protocols.errors import TranscriptError

__all__ = ["TranscriptFollower"]


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
