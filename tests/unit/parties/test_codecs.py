"""Codecs as middleware: what a codec decodes reaches the handler of the kind it names, or is refused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from parley.parties.codecs import Codec, Decoded, Forward
from parley.parties.party import REFUSAL, Party
from parley.parties.wire import KIND_NOT_ALLOWED, Envelope, Identity, Keyring


class _Unpack(Codec):
    """Decodes an ``accept-set`` whose indices travel bit-packed into the plain reply (or into ``target``)."""

    kinds = frozenset({"accept-set"})

    def __init__(self, target: str = "accept-set") -> None:
        super().__init__()
        self.target = target

    def encode(self, kind: str, payload: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
        return kind, payload

    def decode(self, envelope: Envelope) -> dict[str, Any] | Decoded | Forward:
        bits = np.unpackbits(np.asarray(envelope.payload["packed"], dtype=np.uint8))[: envelope.payload["m"]]
        return Decoded(self.target, {"query_id": envelope.payload["query_id"], "accepted": np.flatnonzero(bits)})


class _Querier(Party):
    handlers = {"metric-answer": "_on_answer", "accept-set": "_on_reply", REFUSAL: "_on_refusal"}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.replies: list[tuple[str, dict[str, Any]]] = []

    def _on_answer(self, envelope: Envelope) -> None:
        self.replies.append(("answer", dict(envelope.payload)))

    def _on_reply(self, envelope: Envelope) -> None:
        self.replies.append((envelope.kind, dict(envelope.payload)))

    def _on_refusal(self, envelope: Envelope) -> None:
        return None


def _pair(codec: Codec) -> tuple[_Querier, Identity]:
    me, them = Identity.generate("dc", "data-center"), Identity.generate("compliance", "compliance")
    keyring = Keyring()
    keyring.add(me.key_entry())
    keyring.add(them.key_entry())
    return _Querier(me, keyring, "cov-threshold", codec), them


def _packed_reply(sender: Identity) -> Envelope:
    bits = np.zeros(16, dtype=np.uint8)
    bits[[1, 5, 9]] = 1
    return sender.seal("dc", "accept-set", "cov-threshold", {"query_id": "q", "m": 16, "packed": np.packbits(bits)})


def test_a_decoded_reply_reaches_the_handler_of_its_kind():
    querier, compliance = _pair(_Unpack())
    assert querier.receive(_packed_reply(compliance)) is None
    [(kind, payload)] = querier.replies
    assert kind == "accept-set" and payload["accepted"].tolist() == [1, 5, 9]


def test_a_codec_that_decodes_to_a_kind_the_party_has_no_handler_for_is_refused_and_the_party_keeps_serving():
    querier, compliance = _pair(_Unpack(target="no-such-kind"))
    refusal = querier.receive(_packed_reply(compliance))
    assert refusal.kind == REFUSAL and refusal.payload["reason"] == KIND_NOT_ALLOWED
    assert "no-such-kind" in refusal.payload["detail"] and querier.replies == []
    querier.codec = _Unpack()
    assert querier.receive(_packed_reply(compliance)) is None and len(querier.replies) == 1


def test_a_decoded_kind_is_held_to_the_senders_role_and_handed_on_as_that_kind():
    """A codec cannot turn a compliance reply into a kind the compliance role may not send (a data center's query)."""
    querier, compliance = _pair(_Unpack(target="metric-query"))
    querier.handlers = {**querier.handlers, "metric-query": "_on_reply"}
    refusal = querier.receive(_packed_reply(compliance))
    assert refusal.kind == REFUSAL and refusal.payload["reason"] == KIND_NOT_ALLOWED and querier.replies == []
    querier.codec = _Unpack(target="fairness-certificate")  # a compliance kind, handled: arrives as that kind
    querier.handlers = {**querier.handlers, "fairness-certificate": "_on_reply"}
    assert querier.receive(_packed_reply(compliance)) is None
    assert [kind for kind, _ in querier.replies] == ["fairness-certificate"]
