"""Parties refuse every bad message with a signed, typed refusal and keep serving."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties import wire
from parley.parties.party import REFUSAL, check_reply
from parley.protocols import metrics, queries
from parley.protocols.errors import AttackError, QueryError, RefusedError
from tests.party_world import hostile_envelopes, local_compliance, query


def _good(identities, keyring, world, audit_arrays, query_id):
    """A valid query is answered with the exact SP (the party still works)."""
    a, _ = audit_arrays
    H = np.vstack([np.linspace(0, 1, 40), (a == 1).astype(float)])
    reply = world.call("compliance", "receive", query(identities["data-center"], H, query_id=query_id))
    answer = check_reply(reply, keyring, "data-center", "metric-answer")
    np.testing.assert_allclose(answer.payload["values"], metrics.statistical_parity_difference(H, a), rtol=0, atol=0)
    assert answer.payload["query_id"] == query_id


def _refusal(world, keyring, envelope, to="data-center"):
    reply = world.call("compliance", "receive", envelope)
    assert reply is not None and reply.kind == REFUSAL and reply.recipient == to
    wire.verify_envelope(reply, keyring, recipient=to)  # refusals are signed too
    return reply.payload["reason"], reply.payload["detail"]


def test_each_hostile_envelope_is_refused_and_the_party_keeps_answering(identities, keyring, audit_arrays):
    world = local_compliance(identities, keyring, audit_arrays)
    for i, (name, envelope, reason) in enumerate(hostile_envelopes(identities)):
        to = ("observer" if name == "observer may not send"
              else "outsider" if name == "unknown sender" else "data-center")
        got, detail = _refusal(world, keyring, envelope, to=to)
        assert got == reason, (name, detail)
        _good(identities, keyring, world, audit_arrays, f"after-{i}")


def test_replayed_envelope_is_refused(identities, keyring, audit_arrays):
    world = local_compliance(identities, keyring, audit_arrays)
    envelope = query(identities["data-center"], np.full((1, 40), 0.5), query_id="once")
    assert world.call("compliance", "receive", envelope).kind == "metric-answer"
    reason, detail = _refusal(world, keyring, envelope)
    assert reason == wire.REPLAY and "already seen" in detail
    _good(identities, keyring, world, audit_arrays, "after-replay")


def test_unregistered_querier_is_refused(identities, keyring, audit_arrays):
    second = wire.Identity.generate("second-dc", "data-center")
    keyring.add(second.key_entry())
    world = local_compliance(identities, keyring, audit_arrays)
    reason, detail = _refusal(world, keyring, query(second, np.full((1, 40), 0.5)), to="second-dc")
    assert reason == wire.NOT_REGISTERED and "second-dc" in detail


def _malformed(a):
    return [
        ("3-d", np.zeros((1, 2, 40)), queries.BAD_NDIM.format(shape=(1, 2, 40))),
        ("no models", np.zeros((0, 40)), queries.NO_MODELS.format(shape=(0, 40))),
        ("n mismatch", np.zeros((1, 39)), queries.N_MISMATCH.format(got=39, n=40)),
        ("NaN", np.where(np.arange(40) == 3, np.nan, 0.5)[None, :], queries.NOT_FINITE.format(count=1, row=0, col=3)),
        ("above 1", np.where(np.arange(40) == 5, 1.5, 0.5)[None, :],
         queries.OUT_OF_RANGE.format(row=0, col=5, value=1.5)),
        ("below 0", np.where(np.arange(40) == 0, -0.1, 0.5)[None, :],
         queries.OUT_OF_RANGE.format(row=0, col=0, value=-0.1)),
        ("not an array", [[0.5] * 40], queries.NOT_ARRAY.format(type="list")),
    ]


def test_malformed_queries_get_clear_errors(identities, keyring, audit_arrays):
    a, _ = audit_arrays
    world = local_compliance(identities, keyring, audit_arrays)
    dc = identities["data-center"]
    for i, (name, H, message) in enumerate(_malformed(a)):
        reason, detail = _refusal(world, keyring, query(dc, H, metric="sp", query_id=f"bad-{i}"))
        assert reason == wire.INVALID_QUERY, name
        assert detail == message, name
    for payload, message in [
        ({"metric": "sp", "query_id": "x"},
         queries.MISSING_FIELD.format(field="predictions", fields="metric, predictions, query_id")),
        ({"metric": "bias", "predictions": np.zeros((1, 40)), "query_id": "x"}, "metric must be one of"),
        ({"metric": "sp", "predictions": np.zeros((1, 40)), "query_id": ""}, "query_id must be"),
    ]:
        reason, detail = _refusal(world, keyring, dc.seal("compliance", "metric-query", "raw", payload))
        assert reason == wire.INVALID_QUERY and detail.startswith(message.split("{")[0])
    _good(identities, keyring, world, audit_arrays, "after-malformed")


def test_empty_group_in_audit_set(identities, keyring):
    """An audit set whose a=0 group has no positives cannot answer EO: a clear error, not a division by zero."""
    a = np.array([1] * 30 + [0] * 10, dtype=np.int8)
    y = np.where(a == 0, 0, 1).astype(np.int8)
    world = local_compliance(identities, keyring, (a, y))
    reason, detail = _refusal(world, keyring, query(identities["data-center"], np.full((1, 40), 0.5), metric="eo"))
    assert reason == wire.INVALID_QUERY
    assert detail == metrics.EMPTY_GROUP.format(metric="eo", group=0, slice=" among y=1")


def test_rounded_answers_record_their_precision(identities, keyring, audit_arrays):
    world = local_compliance(identities, keyring, audit_arrays, decimals=2)
    reply = world.call("compliance", "receive", query(identities["data-center"], np.linspace(0, 1, 40)[None, :]))
    answer = check_reply(reply, keyring, "data-center", "metric-answer")
    exact = metrics.statistical_parity_difference(np.linspace(0, 1, 40)[None, :], audit_arrays[0])
    assert answer.payload["decimals"] == 2
    np.testing.assert_array_equal(answer.payload["values"], np.round(exact, 2))


def test_refusals_are_never_refused(identities, keyring, audit_arrays):
    """A refusal sent to a party that does not accept refusals is dropped, not answered (no ping-pong)."""
    world = local_compliance(identities, keyring, audit_arrays)
    refusal = identities["data-center"].seal("compliance", REFUSAL, "raw",
                                             {"reason": "x", "detail": "", "refused": "?"})
    assert world.call("compliance", "receive", refusal) is None
    with pytest.raises(RefusedError, match="no-reply"):
        check_reply(None, keyring, "data-center", "metric-answer")


def test_unhashable_payload_is_refused(identities, keyring, audit_arrays):
    """A sender that skips sealing and ships strings gets invalid-payload, and the party goes on."""
    dc = identities["data-center"]
    honest = query(dc, np.full((1, 40), 0.5), query_id="strings")
    hostile = honest.model_copy(update={"payload": {**honest.payload, "predictions": np.array(["0.5"] * 40)}})
    world = local_compliance(identities, keyring, audit_arrays)
    reason, detail = _refusal(world, keyring, hostile)
    assert reason == wire.INVALID_PAYLOAD and "ndarray[<U3]" in detail
    _good(identities, keyring, world, audit_arrays, "after-strings")


def test_query_validation_rejects_non_numeric_dtypes():
    with pytest.raises(QueryError, match="must be numeric"):
        queries.validate_predictions(np.array(["0.5"] * 4), 4)


def _edit(identity, base_id, indices, values, query_id, metric="sp", keep=False):
    payload = {"metric": metric, "query_id": query_id, "edit_of": base_id, "indices": indices, "values": values}
    if keep:
        payload["keep"] = True
    return identity.seal("compliance", "metric-query", "raw", payload)


def test_edit_form_queries_match_full_queries_and_expand_on_the_wire(identities, keyring, audit_arrays):
    from parley.parties.adversary import exchanges_from

    a, _ = audit_arrays
    world = local_compliance(identities, keyring, audit_arrays)
    dc = identities["data-center"]
    base = np.linspace(0.05, 0.95, 40)
    sent = [dc.seal("compliance", "metric-query", "raw",
                    {"metric": "sp", "predictions": base[None, :], "query_id": "base", "keep": True})]
    indices, values = np.array([[3, 7], [0, 39]]), np.array([[1.0, 0.0], [0.5, 0.25]])
    sent.append(_edit(dc, "base", indices, values, "edits"))
    replies = [world.call("compliance", "receive", e) for e in sent]
    full = np.repeat(base[None, :], 2, axis=0)
    full[0, [3, 7]], full[1, [0, 39]] = [1.0, 0.0], [0.5, 0.25]
    np.testing.assert_array_equal(replies[1].payload["values"], metrics.statistical_parity_difference(full, a))
    seen = list(exchanges_from([e for pair in zip(sent, replies, strict=True) for e in pair]))
    np.testing.assert_array_equal(seen[1].predictions, full)


def test_bad_edits_are_refused_and_the_party_keeps_serving(identities, keyring, audit_arrays):
    world = local_compliance(identities, keyring, audit_arrays)
    dc = identities["data-center"]
    cases = [  # sealed when sent, so sequence numbers rise in sending order
        (lambda: _edit(dc, "nope", np.array([1]), np.array([0.5]), "e1"), "edit_of 'nope' names no model"),
        (lambda: dc.seal("compliance", "metric-query", "raw", {"metric": "sp", "predictions": np.full((2, 40), 0.5),
                                                               "query_id": "two", "keep": True}),
         "keep applies to a query of one model, this one has 2"),
        (lambda: _edit(dc, "base", np.array([40]), np.array([0.5]), "e2"), "edit indices must be integers in 0..39"),
        (lambda: _edit(dc, "base", np.array([1, 1]), np.array([0.5, 0.5]), "e3"), "without repeats"),
        (lambda: _edit(dc, "base", np.array([7]), np.array([1.5]), "e4"), "model 0 sets individual 7 to 1.5"),
        (lambda: _edit(dc, "base", np.array([1.0]), np.array([0.5]), "e5"), "edit indices and values must be arrays"),
    ]
    world.call("compliance", "receive", dc.seal("compliance", "metric-query", "raw", {
        "metric": "sp", "predictions": np.full((1, 40), 0.5), "query_id": "base", "keep": True}))
    for build, message in cases:
        reason, detail = _refusal(world, keyring, build())
        assert reason == wire.INVALID_QUERY and message in detail, detail
    _good(identities, keyring, world, audit_arrays, "after-edits")


def test_a_refused_keep_query_keeps_nothing(identities, keyring):
    """A model is kept only once its query is answered, as the transcript's readers assume."""
    a = np.array([1] * 30 + [0] * 10, dtype=np.int8)
    y = np.ones(40, dtype=np.int8)
    world = local_compliance(identities, keyring, (a, y))
    dc = identities["data-center"]
    two_models = np.vstack([np.where(a == 0, 0.0, 1.0), np.full(40, 0.5)])  # keep takes one model: refused
    refused = dc.seal("compliance", "metric-query", "raw",
                      {"metric": "sp", "predictions": two_models, "query_id": "base", "keep": True})
    assert _refusal(world, keyring, refused)[0] == wire.INVALID_QUERY
    reason, detail = _refusal(world, keyring, _edit(dc, "base", np.array([1]), np.array([0.5]), "e"))
    assert reason == wire.INVALID_QUERY and "edit_of 'base' names no model" in detail


def test_the_precision_attack_asks_its_blocks_as_edits_and_every_answer_is_exact(identities, keyring, audit_arrays):
    """Through the adversary and the compliance party: one n-wide query (the kept base), then only block
    entries on the wire, each answered bit for bit as evaluate() answers the expanded model; A recovered."""
    from parley.parties.adversary import Adversary
    from parley.parties.attacks import AttackerView
    from parley.parties.attacks.query_leakage.reveal import PrecisionReveal

    a, y = audit_arrays
    world = local_compliance(identities, keyring, audit_arrays)
    scores = np.random.default_rng(5).random(a.size)
    view = AttackerView(n=a.size, base_scores=scores, base_predictions=(scores >= 0.5).astype(np.int8), y=y)
    adversary = Adversary(identities["data-center"], keyring, PrecisionReveal(None, view, np.random.default_rng(1)),
                          "compliance", "raw")
    envelopes, kept, edits = [adversary.start()], {}, 0
    while envelopes:
        envelope = envelopes.pop(0)
        if isinstance(envelope, list):  # the blocks of a Probes, sealed together
            envelopes[:0] = envelope
            continue
        if envelope is None:
            continue
        reply = world.call("compliance", "receive", envelope)
        q = envelope.payload
        if "edit_of" in q:
            edits += 1
            assert "predictions" not in q and q["indices"].shape[1] <= 60
            H = queries.apply_edits(kept[q["edit_of"]], q["indices"], q["values"])
        else:
            H = np.atleast_2d(q["predictions"])
            if q.get("keep"):
                kept[q["query_id"]] = H[0]
        np.testing.assert_array_equal(reply.payload["values"], metrics.evaluate(q["metric"], H, a, y), strict=True)
        envelopes.append(adversary.receive(reply))
    rec = adversary.outcome()
    assert edits >= 1 and (rec.a_hat == a).all() and rec.info["certified"]


def test_a_burst_refused_midway_ends_the_attack_and_its_later_answers_are_taken_quietly(identities, keyring):
    """The compliance party refuses the first query of a burst (a spent budget): the attack stops there, and the
    answers to the burst's other queries, asked before it stopped, are neither fed to it nor refused back."""
    from parley.parties.adversary import Adversary
    from parley.parties.attacks import AttackerView
    from parley.parties.attacks.query_leakage.reveal import PrecisionReveal
    from tests.oracle import synthetic_world

    a, view = synthetic_world(3, 3000, 300)
    y = view.y
    world = local_compliance(identities, keyring, (a, y))
    view = AttackerView(n=a.size, base_scores=view.base_scores, base_predictions=view.base_predictions, y=y)
    adversary = Adversary(identities["data-center"], keyring, PrecisionReveal(None, view, np.random.default_rng(1)),
                          "compliance", "raw")
    reply = adversary.start()
    while not isinstance(reply, list):  # the base query and the first block go one at a time
        reply = adversary.receive(world.call("compliance", "receive", reply))
    burst = reply
    assert len(burst) == 64 and len({e.payload["query_id"] for e in burst}) == 64
    refusal = world.call("compliance", "_refuse", burst[0], "budget-exceeded", "the budget is spent")
    assert adversary.receive(refusal) is None and "budget-exceeded" in adversary.failure
    for envelope in burst[1:]:
        answer = world.call("compliance", "receive", envelope)
        assert answer.kind == "metric-answer" and adversary.receive(answer) is None  # no refusal back
    assert adversary.refusals_sent == 0 and adversary.status()["answered"] == 2
    with pytest.raises(AttackError, match="budget-exceeded"):
        adversary.outcome()
    late = world.call("compliance", "receive", query(identities["data-center"], np.full((1, a.size), 0.5),
                                                     query_id="never-asked"))
    refused = adversary.receive(late)  # an answer to a query it never asked is still refused
    assert refused.kind == REFUSAL and refused.payload["reason"] == wire.INVALID_PAYLOAD
