"""Writing a transcript: :class:`TranscriptWriter` appends each envelope's line, and its large arrays' bytes."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties.transcript.blobs import BLOB_BYTES, blob_path
from parley.parties.transcript.chain import FORMAT, _chain_hash, keyring_fingerprints
from parley.parties.wire import GENESIS, Envelope, Identity, Keyring, array_base64_pieces, array_bytes
from parley.protocols.errors import InternalError, ParleyError

__all__ = ["Countersign", "TranscriptWriter"]

NO_SIGNERS_MSG = "the transcript writer has no parties to sign its end record; the file stays incomplete"

#: Signs the end of a run: (final head, number of messages) -> one signature record per party.
Countersign = Callable[[str, int], Sequence[Mapping[str, Any]]]


#: A placeholder ``@{token hex}:{i}.`` of the writer's lines; one pattern, compiled once (a pattern built from each
#: line's fresh token would be compiled anew for every line: 1.2 s of a 3,335-query run's driver time).
_PLACEHOLDER = re.compile(r"(@[0-9a-f]{16}:)(\d+)\.")


def _placeholders(line: str, token: str, count: int) -> list[tuple[int, int, int]]:
    """The ``count`` placeholders ``{token}{i}.`` of ``line`` as (start, end, i), in the order they stand.

    None without arrays: with no token, any number followed by a dot would match. Raises
    :class:`InternalError` unless each of 0 .. ``count`` - 1 stands exactly once.
    """
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
        delivery by this place instead of a copy of the payload (:mod:`parley.parties.ray.deployment`).
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
