"""Codecs: middleware that encodes what a querier sends and decodes what comes back.

Under ``he`` a querier's ``metric-query`` leaves as ciphertexts and its answer arrives encrypted;
under ``mpc`` and ``mpc-dp`` it leaves as secret shares, the compliance party's reply is forwarded
to the helper, and the answer is opened from three output shares. Like Flower's mods, a codec
wraps a party instead of subclassing it: :class:`parley.parties.party.Party` passes every message
it seals through :meth:`Codec.encode`, and hands every envelope of a kind the codec decodes to
:meth:`Codec.decode`, which either gives the plain ``metric-answer`` payload (dispatched to the
party's own handler) or a message to send on. The data center and the adversary are the same
classes under every protocol; only the codec they wear differs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from parley.parties.wire import Envelope

__all__ = ["Codec", "Decoded", "Forward"]


@dataclass(frozen=True)
class Forward:
    """What a decoded envelope asks the party to send on: ``kind`` with ``payload`` to ``recipient``."""

    recipient: str
    kind: str
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class Decoded:
    """A decoded envelope for the party's own handler of ``kind`` (a protocol's reply kind, say)."""

    kind: str
    payload: Mapping[str, Any]


class Codec(ABC):
    """A querier's encoding of its queries and of their answers.

    ``kinds`` are the incoming kinds it decodes. ``opened`` holds, when the codec records, the
    (metric, predictions, opened values) of every answer: the referee's measure of the encoding's error.
    """

    kinds: ClassVar[frozenset[str]] = frozenset()

    def __init__(self) -> None:
        self.opened: list[tuple[str, np.ndarray, np.ndarray]] = []

    @abstractmethod
    def encode(self, kind: str, payload: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
        """The (kind, payload) that leaves in place of ``kind`` with ``payload`` (unchanged if not encoded).

        Raises QueryError for a query the encoding cannot carry: the party refuses it before anything leaves.
        """

    @abstractmethod
    def decode(self, envelope: Envelope) -> dict[str, Any] | Decoded | Forward:
        """What ``envelope`` carries: a ``metric-answer`` payload, a :class:`Decoded` or a :class:`Forward`.

        A plain payload goes to the party's ``metric-answer`` handler, a :class:`Decoded` to the handler of
        its kind, a :class:`Forward` is sent on.

        Raises WireError for an envelope that does not decode (the party refuses it and keeps serving).
        """
