"""The restore journal: the calls each party completed, written by a thread of their own, read back by its host."""

from __future__ import annotations

import pickle
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from queue import Queue
from typing import IO, Any

from ray import cloudpickle

from parley.parties.transcript import read_logged_envelope
from parley.parties.wire import Envelope
from parley.protocols.errors import InternalError

__all__ = ["LoggedEnvelope"]

#: Journal entries that may wait for the disk before a sender waits too (at most 8 payloads held in memory).
JOURNAL_BACKLOG = 8

NOT_LOGGED_THERE = ("the transcript {path} no longer holds envelope {expected!r} at byte {offset} as it was "
                    "written: it was edited or cut, so the party cannot be restored exactly")
JOURNAL_FAILED = "the restore journal could not be written ({error}); a crash now could not be recovered from"


@dataclass(frozen=True)
class LoggedEnvelope:
    """Where the transcript holds an envelope a journaled call received: a restore reads it from there.

    ``offset`` and ``length`` are the bytes of its line in ``path``, ``line_hash`` its chain hash;
    reading checks the line is the one written, payload included, and the envelope's ``id``.
    """

    path: str
    offset: int
    length: int
    line_hash: str
    id: str

    def read(self) -> Envelope:
        """The envelope as logged (the transcript's encoding is exact: dtype, shape and bytes of every array)."""
        envelope = read_logged_envelope(self.path, self.offset, self.length, self.line_hash)
        if envelope is None or envelope.id != self.id:
            raise InternalError(NOT_LOGGED_THERE.format(path=self.path, offset=self.offset, expected=self.id))
        return envelope


def _resolve(value: Any) -> Any:
    return value.read() if isinstance(value, LoggedEnvelope) else value


@dataclass(frozen=True)
class _Kept:
    """A journal entry that would not pickle: kept in the driver's memory under ``key``."""

    key: int


_ENTRY = struct.Struct("<QI")  # a journal entry: pickle length, number of out-of-band buffers
_BUFFER = struct.Struct("<Q")  # then each buffer's length before its bytes


def _journal_pieces(entry: Any) -> list[Any]:
    """One journal entry as the pieces written for it: header, pickle, then each array's bytes as they are.

    Arrays travel out of band (pickle protocol 5), so a large payload is written from its own
    memory, never copied into the pickle.
    """
    buffers: list[pickle.PickleBuffer] = []
    dumps: Callable[..., bytes] = cloudpickle.dumps  # ray's vendored cloudpickle is unannotated
    blob = dumps(entry, protocol=5, buffer_callback=buffers.append)
    pieces: list[Any] = [_ENTRY.pack(len(blob), len(buffers)), blob]
    for buffer in buffers:
        raw = buffer.raw()
        pieces += [_BUFFER.pack(raw.nbytes), raw]
    return pieces


def _read_entry(fh: IO[bytes]) -> Any:
    size, count = _ENTRY.unpack(fh.read(_ENTRY.size))
    blob = fh.read(size)
    buffers = [fh.read(_BUFFER.unpack(fh.read(_BUFFER.size))[0]) for _ in range(count)]
    return pickle.loads(blob, buffers=buffers)


def _journal_entries(
    path: str, end: int, kept: dict[int, Any]
) -> Iterator[tuple[str, tuple[Any, ...], dict[str, Any], list[str]]]:
    """The calls pickled in the journal file ``path`` up to byte ``end``, logged envelopes read back."""
    with open(path, "rb") as fh:
        while fh.tell() < end:
            entry = _read_entry(fh)
            method, args, kwargs, drawn = kept[entry.key] if isinstance(entry, _Kept) else entry
            yield (method, tuple(_resolve(a) for a in args), {k: _resolve(v) for k, v in kwargs.items()}, drawn)


class _JournalWriter:
    """Writes journal entries in a thread of their own, so a large payload's bytes go to disk while the party works.

    :meth:`wait` waits until everything handed over is written (a restore reads the files then).
    At most :data:`JOURNAL_BACKLOG` entries wait: a sender faster than the disk waits for it.
    A journal file whose write failed is *lost*: it misses an entry, so nothing more is written to it
    and a restore from it is refused (a replay with a gap would rebuild a party that never was);
    the failure itself waits in :meth:`check` to be reported once.
    """

    def __init__(self) -> None:
        self._queue: Queue[Any] = Queue(maxsize=JOURNAL_BACKLOG)
        self._lock = threading.Lock()
        self._errors: dict[str, BaseException] = {}  # journal file -> its failed write, not yet reported
        self.lost: set[str] = set()  # journal files that missed an entry
        self._thread: threading.Thread | None = None

    def write(self, fh: IO[bytes], pieces: list[Any]) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="parley-journal", daemon=True)
            self._thread.start()
        self._queue.put((fh, pieces))

    def wait(self) -> None:
        if self._thread is not None:
            self._queue.join()

    def check(self) -> None:
        """Raise :class:`InternalError` (:data:`JOURNAL_FAILED`) for a failed write not reported yet."""
        with self._lock:
            if not self._errors:
                return
            name = next(iter(self._errors))
            error = self._errors.pop(name)
        raise InternalError(JOURNAL_FAILED.format(error=error)) from error

    def forget(self, name: str) -> None:
        """``name`` was closed and removed: its failure no longer matters to any restore."""
        self.wait()
        with self._lock:
            self._errors.pop(name, None)
            self.lost.discard(name)

    def failed(self, name: str, exc: BaseException) -> None:
        """A write to journal file ``name`` failed: it is lost, and ``exc`` waits for :meth:`check`."""
        with self._lock:
            self.lost.add(name)
            self._errors.setdefault(name, exc)

    def _run(self) -> None:
        while True:
            fh, pieces = self._queue.get()
            try:
                if fh.name not in self.lost:
                    fh.writelines(pieces)
            except BaseException as exc:  # handed to the deployment's thread at its next submit
                self.failed(fh.name, exc)
            finally:
                self._queue.task_done()
