"""Query ids: random, and drawn again identically when a party is rebuilt after a crash.

A query id is an idempotency key (the ledger answers a retried id from its
record) and must not be guessable from a scenario's seed, so it comes from the
operating system's randomness (uuid4). A party rebuilt by replaying the calls
it completed (:mod:`parley.parties.ray.hosts`) must draw the same ids as the first time,
or it would not recognise the answers to its own queries: its host records the
ids each call drew (:func:`recording`) and plays them back, in order, while it
replays that call (:func:`playback`). Outside a host nothing is recorded.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

__all__ = ["new_query_id", "playback", "recording"]

_playback: deque[str] | None = None
_record: list[str] | None = None


def new_query_id() -> str:
    """A fresh random id (32 hex digits), or the next recorded one during a replay."""
    if _playback:
        return _playback.popleft()
    value = uuid.uuid4().hex
    if _record is not None:
        _record.append(value)
    return value


@contextmanager
def recording() -> Iterator[list[str]]:
    """Collect the ids drawn inside the block (a host wraps each call it runs in one)."""
    global _record
    previous, _record = _record, []
    try:
        yield _record
    finally:
        _record = previous


@contextmanager
def playback(ids: Iterable[str]) -> Iterator[None]:
    """Hand out ``ids`` in order to the draws inside the block (a replay of the call that drew them)."""
    global _playback
    previous, _playback = _playback, deque(ids)
    try:
        yield
    finally:
        _playback = previous
