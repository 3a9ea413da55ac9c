"""The blob file beside a transcript: its name, which arrays go there, and reading their bytes back."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from blake3 import blake3

from parley.parties.payload_limits import MAX_PAYLOAD_BYTES

__all__ = ["BLOB_BYTES", "blob_path"]

#: Arrays of at least this many bytes are stored raw in the blob file, smaller ones as base64 in their line: base64
#: writes 4/3 of the bytes and costs an encoding, which for a 3.2 MB array made an append x2.2 of a binary write.
BLOB_BYTES = 1 << 20

NO_BLOBS_MSG = ("the array bytes this line names are in {path}, which cannot be read ({error}); copy it with the "
                "transcript")
SHORT_BLOBS_MSG = ("this line names {nbytes} bytes at offset {offset} of {path}, which holds {size} bytes (and a "
                   f"payload at most {MAX_PAYLOAD_BYTES:,})")


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
