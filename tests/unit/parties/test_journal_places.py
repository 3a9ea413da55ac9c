"""A delivery journaled by its place in the transcript reads back as the very envelope delivered (no Ray cluster)."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.ray.journal import NOT_LOGGED_THERE, LoggedEnvelope
from parley.parties.transcript import TranscriptWriter
from parley.parties.wire import payload_digest, verify_envelope
from parley.protocols.errors import InternalError

DC = "data-center"


def _payloads(rng: np.random.Generator) -> list[dict]:
    return [
        {"metric": "sp", "predictions": rng.random((3, 40)), "query_id": "q0"},
        {"metric": "sp", "predictions": (rng.random((2, 40)) < 0.5).astype(np.int8), "query_id": "q1", "keep": True},
        {"metric": "sp", "edit_of": "q1", "indices": np.array([[1, 5]], dtype=np.int64),
         "values": rng.random((1, 2)).astype(np.float32), "query_id": "q2"},
        {"nested": {"list": [1, 2.5, "x", None, True], "deep": [[np.arange(3, dtype=np.uint16)]]}, "query_id": "q3"},
    ]


def test_each_logged_envelope_reads_back_verified_and_bit_for_bit(identities, keyring, tmp_path):
    writer = TranscriptWriter(tmp_path / "t.jsonl", keyring)
    places = []
    for payload in _payloads(np.random.default_rng(5)):
        envelope = identities[DC].seal("compliance", "metric-query", "raw", payload)
        writer.append(envelope)
        where = writer.locate(envelope)
        assert where is not None
        places.append((envelope, LoggedEnvelope(*where, envelope.id)))
    writer.flush()
    for envelope, place in places:
        back = place.read()
        verify_envelope(back, keyring, recipient="compliance")  # signature and digest hold
        assert back.header() == envelope.header() and payload_digest(back.payload) == envelope.digest
        for key, value in envelope.payload.items():
            if isinstance(value, np.ndarray):
                assert back.payload[key].dtype == value.dtype and back.payload[key].shape == value.shape
                assert back.payload[key].tobytes() == value.tobytes()
    writer.abort()


def test_only_the_envelope_appended_last_has_a_place(identities, keyring, tmp_path):
    """The network delivers right after appending; anything else (an older or a look-alike envelope) is copied."""
    writer = TranscriptWriter(tmp_path / "t.jsonl", keyring)
    first = identities[DC].seal("compliance", "metric-query", "raw", {"query_id": "a"})
    second = identities[DC].seal("compliance", "metric-query", "raw", {"query_id": "b"})
    assert writer.locate(first) is None  # nothing logged yet
    writer.append(first)
    writer.append(second)
    assert writer.locate(first) is None and writer.locate(second) is not None
    assert writer.locate(second.model_copy()) is None  # equal, but not the object logged
    writer.abort()


def test_a_place_that_holds_another_envelope_is_a_bug_not_a_silent_replay(identities, keyring, tmp_path):
    writer = TranscriptWriter(tmp_path / "t.jsonl", keyring)
    envelope = identities[DC].seal("compliance", "metric-query", "raw", {"query_id": "a"})
    writer.append(envelope)
    path, offset, length, line_hash = writer.locate(envelope)
    writer.flush()
    wrong = LoggedEnvelope(path, offset, length, line_hash, "not-" + envelope.id)
    with pytest.raises(InternalError) as caught:
        wrong.read()
    assert str(caught.value).endswith(NOT_LOGGED_THERE.format(path=path, offset=offset, expected=wrong.id))
    writer.abort()


@pytest.mark.parametrize("edit", ["payload byte", "header byte", "cut", "longer"])
def test_a_logged_line_edited_on_disk_is_never_replayed(identities, keyring, tmp_path, edit):
    """A restore replays from the transcript: an edit of the line (same length or not) is caught, never replayed."""
    writer = TranscriptWriter(tmp_path / "t.jsonl", keyring)
    rng = np.random.default_rng(1)
    envelope = identities[DC].seal("compliance", "metric-query", "raw",
                                   {"metric": "sp", "predictions": rng.random((2, 40)), "query_id": "q"})
    writer.append(envelope)
    place = LoggedEnvelope(*writer.locate(envelope), envelope.id)
    writer.flush()
    raw = bytearray((tmp_path / "t.jsonl").read_bytes())
    line = raw[place.offset:place.offset + place.length]
    if edit == "payload byte":  # one base64 character of the array, the length unchanged
        at = line.index(b'"data":"') + len(b'"data":"') + 10
        line[at:at + 1] = b"A" if line[at:at + 1] != b"A" else b"B"
    elif edit == "header byte":  # the query id, the length unchanged
        at = line.index(b'"kind":"metric-query"') + len(b'"kind":"')
        line[at:at + 1] = b"N"
    elif edit == "cut":
        line = line[:len(line) // 2]
    else:  # one base64 character more: the line grows by a byte
        at = line.index(b'"data":"') + len(b'"data":"') + 10
        line[at:at] = b"A"
    raw[place.offset:place.offset + place.length] = line
    (tmp_path / "t.jsonl").write_bytes(bytes(raw))
    with pytest.raises(InternalError, match="edited or cut"):
        place.read()
    writer.abort()
