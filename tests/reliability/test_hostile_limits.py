"""Hostile payloads that used to reach ``internal-error``: deep nesting, huge integers, lone surrogates, size.

Each case is sent to a live compliance party (tests/reliability/hostile.py's
target): the reply must be a signed refusal with a typed reason, never
``internal-error``; the party must then answer a good query correctly; and the
cost of the refusal is bounded, measured deterministically as the peak bytes
tracemalloc sees allocated while the party handles it (numpy reports its
buffers to tracemalloc), never as wall time.
"""

from __future__ import annotations

import tracemalloc
import uuid

import numpy as np
import pytest

from parley.parties import payload_limits, wire
from parley.parties.network import LocalDeployment, Network
from parley.parties.party import REFUSAL
from parley.parties.transcript import TranscriptWriter
from parley.protocols import queries
from parley.protocols.errors import WireError

from .hostile import COMPLIANCE, DATA_CENTER, ComplianceTarget, N

#: A refusal may allocate at most this much (the walk's stack, the signed refusal): far below any payload here.
REFUSAL_BYTES = 1 << 20


def _nested(depth: int, leaf: object = 0) -> list:
    value: object = leaf
    for _ in range(depth):
        value = [value]
    return value  # type: ignore[return-value]


def _deep_dict(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"k": value}
    return value


def _query(**extra: object) -> dict:
    return {"metric": "sp", "query_id": uuid.uuid4().hex, "predictions": np.zeros((1, N)), **extra}


def _refused(t: ComplianceTarget, payload: dict, *, valid_digest: bool = True) -> tuple[str, str, int]:
    """Send ``payload`` (signed, or with the digest of a good payload) and return reason, detail, peak bytes."""
    if valid_digest:
        envelope = t.honest("metric-query", payload)
    else:
        envelope = t.a_valid().model_copy(update={"payload": payload})
    tracemalloc.start()
    try:
        reply = t.party.receive(envelope)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    reply = t.opened(reply)
    assert reply.kind == REFUSAL, reply.payload
    reason = reply.payload["reason"]
    assert reason in wire.REFUSAL_REASONS and reason != wire.INTERNAL, reply.payload
    t.good_exchange()  # the party keeps serving, and answers correctly
    return reason, reply.payload["detail"], peak


HOSTILE = {
    "nested list 5,000 deep": lambda: _query(extra=_nested(5_000)),
    "nested list 100,000 deep": lambda: _query(extra=_nested(100_000)),
    "nested dict 5,000 deep": lambda: _query(extra=_deep_dict(5_000)),
    "nested list as predictions": lambda: _query(predictions=_nested(10_000, 0.5)),
    "5,000-digit integer": lambda: _query(extra=10 ** 4_999),
    "100,000-digit integer": lambda: _query(extra=-(10 ** 99_999)),
    "lone surrogate value": lambda: _query(extra="a\ud800b"),
    "lone surrogate key": lambda: {**_query(), "\udfff": 1},
    "lone surrogate query id": lambda: {**_query(), "query_id": "\ud83d"},
    "lone surrogate in a list": lambda: _query(extra=["ok", ["\udc00"]]),
}
EXPECTED = {
    "nested": (payload_limits.INVALID_PAYLOAD, payload_limits.TOO_DEEP.split("{")[0]),
    "integer": (payload_limits.INVALID_PAYLOAD, "payload integer at"),
    "surrogate": (payload_limits.INVALID_PAYLOAD, "is not valid Unicode"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("valid_digest", [True, False], ids=["signed", "forged-digest"])
def test_hostile_values_get_a_typed_refusal_at_bounded_cost(case, valid_digest):
    t = ComplianceTarget()
    payload = HOSTILE[case]()
    if valid_digest:
        # the honest sender cannot even sign it: the digest refuses the value, typed, before a signature exists
        with pytest.raises(WireError) as caught:
            wire.payload_digest(payload)
        assert caught.value.reason == payload_limits.INVALID_PAYLOAD
        valid_digest = False
    reason, detail, peak = _refused(t, payload, valid_digest=valid_digest)
    want_reason, want_text = next(v for k, v in EXPECTED.items() if k in case)
    assert reason == want_reason and want_text in detail, (reason, detail)
    assert peak < REFUSAL_BYTES, f"{case}: refusing cost {peak} bytes"


def test_limits_agree_with_the_wire_codes():
    assert payload_limits.INVALID_PAYLOAD == wire.INVALID_PAYLOAD
    assert payload_limits.PAYLOAD_TOO_LARGE in wire.REFUSAL_REASONS
    # a payload just inside every limit passes the walk (and is answered as the query it is)
    inside = _query(extra=[_nested(payload_limits.MAX_DEPTH - 3), 2 ** payload_limits.MAX_INT_BITS - 1, "é\u2603"])
    assert payload_limits.check_payload(inside) > 0
    with pytest.raises(WireError):
        payload_limits.check_payload(_query(extra=_nested(payload_limits.MAX_DEPTH)))
    with pytest.raises(WireError):
        payload_limits.check_payload(_query(extra=2 ** payload_limits.MAX_INT_BITS))


def _broadcast(m: int, n: int) -> np.ndarray:
    """An (m, n) float64 array that costs 8 bytes: its header says m x n, its data is one value."""
    return np.broadcast_to(np.zeros(1), (m, n))


@pytest.mark.parametrize("megabytes", [200, 2_000, 20_000])
def test_oversized_payload_refused_from_its_header(megabytes):
    t = ComplianceTarget()
    rows = megabytes * (1 << 20) // (8 * N)
    payload = _query(predictions=_broadcast(rows, N))
    reason, detail, peak = _refused(t, payload, valid_digest=False)
    assert reason == payload_limits.PAYLOAD_TOO_LARGE, detail
    assert peak < REFUSAL_BYTES


def test_query_over_the_value_limit_refused_before_its_matrix_is_built():
    """Full form and edit form, one model over the limit: refused without building the (m, n) matrix."""
    t = ComplianceTarget()
    m = queries.MAX_QUERY_VALUES // N + 1
    reason, detail, peak = _refused(t, _query(predictions=(np.zeros((m, N), dtype=np.uint8))))
    assert reason == wire.INVALID_QUERY and queries.TOO_LARGE.split("{")[0] in detail
    assert peak < REFUSAL_BYTES
    # edit form: m tiny edits of a kept model would expand to m x n
    t.good_exchange()
    base = t.kept[0]
    edits = {"metric": "sp", "query_id": uuid.uuid4().hex, "edit_of": base,
             "indices": np.zeros((m, 1), dtype=np.int64), "values": np.full((m, 1), 0.5)}
    reason, detail, peak = _refused(t, edits)
    assert reason == wire.INVALID_QUERY and queries.TOO_LARGE.split("{")[0] in detail
    assert peak < REFUSAL_BYTES + 4 * 8 * m  # the walk and the checks, never 8 x m x n


@pytest.mark.system  # answers a query at the size limit under tracemalloc: about 16 s
def test_query_at_the_value_limit_costs_a_bounded_multiple_of_its_size():
    """A query at the limit is answered; its peak allocation stays within 3 x the matrix (criterion on bytes)."""
    t = ComplianceTarget()
    m = queries.MAX_QUERY_VALUES // N
    H = np.zeros((m, N), dtype=np.uint8)
    H[:, :3] = 1
    envelope = t.honest("metric-query", {"metric": "sp", "query_id": uuid.uuid4().hex, "predictions": H})
    tracemalloc.start()
    try:
        reply = t.opened(t.party.receive(envelope))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert reply.kind == "metric-answer" and reply.payload["values"].shape == (m,)
    assert peak <= 3 * 8 * queries.MAX_QUERY_VALUES, f"peak {peak} bytes"
    print(f"query at the limit ({m} x {N} values): peak {peak / 2**20:.0f} MiB")


def test_network_refuses_an_oversized_envelope_before_logging_it(tmp_path):
    t = ComplianceTarget()
    deployment = LocalDeployment()
    deployment.parties["compliance"] = t.party
    writer = TranscriptWriter(tmp_path / "transcript.jsonl", t.keyring)
    net = Network(deployment, writer)
    net.route(COMPLIANCE, "compliance")
    writer._file.flush()
    lines, size = writer.lines, (tmp_path / "transcript.jsonl").stat().st_size
    hostile = t.a_valid().model_copy(update={"payload": _query(predictions=_broadcast(25 * (1 << 20) // N, N))})
    tracemalloc.start()
    try:
        with pytest.raises(WireError) as caught:
            net.send(hostile)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.reason == payload_limits.PAYLOAD_TOO_LARGE
    writer._file.flush()
    assert writer.lines == lines and (tmp_path / "transcript.jsonl").stat().st_size == size and net.messages == 0
    assert peak < REFUSAL_BYTES
    for bad in (_query(extra=_nested(5_000)), _query(extra=10 ** 4_999), _query(extra="\ud800")):
        with pytest.raises(WireError) as caught:
            net.send(t.a_valid().model_copy(update={"payload": bad}))
        assert caught.value.reason == payload_limits.INVALID_PAYLOAD
    assert writer.lines == lines
    # the network still carries a good query, and the party answers it
    reply = net.send(t.honest(*t.good_message()))
    assert reply is not None and reply.kind == "metric-answer" and writer.lines == lines + 1
    assert DATA_CENTER in t.keyring


def test_hostile_sender_and_header_strings_do_not_break_the_refusal():
    """A lone surrogate in the header (sender, kind, nonce) is refused typed, and the refusal can be signed."""
    t = ComplianceTarget()
    for field in ("sender", "kind", "nonce", "id"):
        envelope = t.a_valid().model_copy(update={field: "x\ud800"})
        reply = t.party.receive(envelope)
        if reply is not None:
            assert reply.kind == REFUSAL and reply.payload["reason"] not in (wire.INTERNAL,)
            wire.payload_digest(reply.payload)  # the refusal itself is a readable payload
        t.good_exchange()
