"""``he`` between the compliance party and a querier in-process: signed envelopes, refusals, what C reads.

A garbled ciphertext or context, an unsupported metric, predictions in the clear and a query beyond the
flood's tau each get a signed, typed refusal, and the party answers the next good query. The compliance
party's reading of the ciphertexts is a coin (balanced accuracy within a binomial band of 0.5).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from parley.parties.attacks.curious_compliance import read_predictions, view_accuracy
from parley.parties.compliance import Compliance
from parley.parties.homomorphic import HeQuerier
from parley.parties.party import REFUSAL
from parley.parties.wire import INVALID_QUERY, Identity, Keyring
from parley.protocols import AuditSet, get_protocol
from parley.protocols.base import METRIC_NOT_ANSWERED
from parley.protocols.crypto import ckks
from parley.protocols.crypto.ckks import BAD_BLOB
from parley.protocols.mechanisms.homomorphic import CLEAR_QUERY, TOO_MANY_QUERIES, UNKNOWN_CONTEXT
from parley.protocols.metrics import evaluate
from tests.fixed_secrets import party_secret


class Pair:
    """The compliance party and a querier (its HeQuerier driven by the test)."""

    def __init__(self, a: np.ndarray, y: np.ndarray, **params) -> None:
        cls = get_protocol("he")
        self.protocol = cls(cls.Params(**params))
        self.ids = {name: Identity.generate(name, name) for name in ("compliance", "data-center")}
        self.keyring = Keyring()
        for identity in self.ids.values():
            self.keyring.add(identity.key_entry())
        self.compliance = Compliance(self.ids["compliance"], self.keyring, AuditSet(a=a, y=y), self.protocol,
                                     ["data-center"], party_secret(0))
        self.querier = HeQuerier(self.protocol, a.shape[0])
        self.count = 0

    def payload(self, H: np.ndarray, metric: str = "sp") -> dict:
        self.count += 1
        return self.querier.encrypt({"metric": metric, "predictions": H, "query_id": f"q{self.count}"})

    def send(self, payload: dict, kind: str = "he-query"):
        envelope = self.ids["data-center"].seal("compliance", kind, "he", payload)
        return envelope, self.compliance.receive(envelope)

    def ask(self, H: np.ndarray, metric: str = "sp") -> np.ndarray:
        _, reply = self.send(self.payload(H, metric))
        assert reply.kind == "he-answer", reply.payload
        return self.querier.decrypt(reply)["values"]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    n = 300
    return rng.integers(0, 2, n), rng.integers(0, 2, n), rng.random((3, n))


def test_answers_through_signed_envelopes(data):
    a, y, H = data
    pair = Pair(a, y)
    for metric in ("sp", "eo", "pe", "cov"):
        assert np.abs(pair.ask(H, metric) - evaluate(metric, H, a, y)).max() < 6 * 5.3e-5


def test_garbled_ciphertext_or_context_is_refused_and_the_party_keeps_serving(data):
    a, y, H = data
    pair = Pair(a, y)
    good = pair.payload(H)
    cases = {
        "ciphertexts[0]": {**good, "query_id": "bad-ct", "ciphertexts": [good["ciphertexts"][0][:1000].copy()]},
        "public_key": {**good, "query_id": "bad-pk", "public_key": np.zeros(5000, dtype=np.uint8)},
        "galois_keys": {**good, "query_id": "bad-gk", "galois_keys": good["public_key"]},
    }
    for what, payload in cases.items():
        _, reply = pair.send(payload)
        assert reply.kind == REFUSAL, what
        assert BAD_BLOB.split("{what}")[1].split("{kind}")[0] in reply.payload["detail"]
        assert what in reply.payload["detail"]
    _, reply = pair.send(good)
    assert reply.kind == "he-answer"
    assert np.abs(pair.querier.decrypt(reply)["values"] - evaluate("sp", H, a, y)).max() < 6 * 5.3e-5


def test_unsupported_metric_and_clear_predictions_are_refused_before_any_work(data):
    a, y, H = data
    pair = Pair(a, y)
    garbage = {"metric": "eodds", "m": 3, "query_id": "e", "public_key": np.zeros(3, dtype=np.uint8),
               "galois_keys": np.zeros(3, dtype=np.uint8), "ciphertexts": [np.zeros(3, dtype=np.uint8)]}
    _, reply = pair.send(garbage)
    assert reply.kind == REFUSAL
    assert reply.payload["detail"] == METRIC_NOT_ANSWERED.format(name="he", allowed="sp, eo, pe, cov",
                                                                 metric="eodds")
    _, reply = pair.send({"metric": "sp", "predictions": H, "query_id": "clear"}, kind="metric-query")
    assert reply.kind == REFUSAL and reply.payload["detail"] == CLEAR_QUERY.format(name="he")
    with pytest.raises(Exception, match="answers only sp, eo, pe, cov"):
        pair.payload(H, "abs_sp")  # the querier refuses before it encrypts


def test_queries_beyond_tau_are_refused(data):
    a, y, H = data
    pair = Pair(a, y, decryptions=2)
    pair.ask(H[:1])
    pair.ask(H[:1])
    _, reply = pair.send(pair.payload(H[:1]))
    assert reply.kind == REFUSAL
    assert reply.payload["detail"] == TOO_MANY_QUERIES.format(name="he", want=1, used=2, limit=2, bits=30)


def test_tau_counts_decrypted_ciphertexts_not_queries(data):
    """The averaging attack: 17 copies of one model in one query (n = 300: 8 models a ciphertext) come back in 3
    ciphertexts, 3 decryptions with independent floods of the same answer. Under tau = 2 the query is refused
    before any work; 16 copies (2 ciphertexts) use tau up, and a retry of that query gets the kept reply (the
    same floods, nothing counted) while a new query id for the same ciphertexts is refused."""
    a, y, H = data
    pair = Pair(a, y, decryptions=2)
    _, reply = pair.send(pair.payload(np.repeat(H[:1], 17, axis=0)))
    assert reply.kind == REFUSAL
    assert reply.payload["detail"] == TOO_MANY_QUERIES.format(name="he", want=3, used=0, limit=2, bits=30)
    envelope, reply = pair.send(pair.payload(np.repeat(H[:1], 16, axis=0)))
    assert reply.kind == "he-answer" and len(reply.payload["answers"]) == 2
    _, again = pair.send(envelope.payload)  # the querier's retry: a new envelope, the same request
    assert again.kind == "he-answer"
    assert [x.tobytes() for x in again.payload["answers"]] == [x.tobytes() for x in reply.payload["answers"]]
    _, reply = pair.send({**envelope.payload, "query_id": "same-ciphertexts-new-id"})
    assert reply.kind == REFUSAL
    assert reply.payload["detail"] == TOO_MANY_QUERIES.format(name="he", want=2, used=2, limit=2, bits=30)


def test_crafted_context_and_ciphertexts_get_typed_refusals(data):
    """What SEAL loads but will not compute on: Galois keys made for a smaller block (a rotation missing), a
    transparent ciphertext (both components zero), a ciphertext taken out of NTT form. Each is a signed
    invalid-query refusal naming what was wrong (not an internal error), and the party answers the next query."""
    a, y, H = data
    pair = Pair(a, y)
    small = ckks.QuerierKeys(block=4)  # rotations 1 and 2 only; n = 300 needs 1, 2, ..., 256
    crafted = {"metric": "sp", "m": 1, "query_id": "small-block", **small.public_context(),
               "ciphertexts": [ckks.to_bytes(ct) for ct in small.encrypt(H[:1])]}
    _, reply = pair.send(crafted)
    assert reply.kind == REFUSAL and reply.payload["reason"] == INVALID_QUERY
    assert reply.payload["detail"] == ckks.MISSING_ROTATIONS.format(name="he", missing="4, 8, 16, 32, 64, 128, 256",
                                                                  block=512, needed="1, 2, 4, 8, 16, 32, 64, 128, 256")
    s, context = ckks._seal(), ckks.seal_context()
    zero = s.Ciphertext(context, context.first_parms_id(), 2)
    zero.resize(context, 2)
    zero.scale = 2.0 ** ckks.INPUT_SCALE_BITS
    out_of_ntt = s.Ciphertext()
    s.Evaluator(context).transform_from_ntt(pair.querier.keys.encrypt(H[:1])[0], out_of_ntt)
    good = pair.payload(H[:1])
    for label, ct in (("transparent", zero), ("not-ntt", out_of_ntt)):
        _, reply = pair.send({**good, "query_id": label, "ciphertexts": [ckks.to_bytes(ct)]})
        assert reply.kind == REFUSAL and reply.payload["reason"] == INVALID_QUERY, (label, reply.payload)
        assert "ciphertexts[0] is not a valid Ciphertext" in reply.payload["detail"], label
    _, reply = pair.send(good)
    assert reply.kind == "he-answer"
    assert abs(pair.querier.decrypt(reply)["values"][0] - evaluate("sp", H[:1], a, y)[0]) < 6 * 5.3e-5


def test_the_curious_compliance_party_reads_a_coin(data):
    """Its reading of the first model from the ciphertext bytes: balanced accuracy within the 99.99 % band."""
    a, y, _ = data
    pair = Pair(a, y)
    truth = (np.arange(a.shape[0]) % 3 == 0).astype(np.float64)
    guess = read_predictions("he-query", pair.payload(truth[None, :]), a.shape[0])
    assert guess is not None
    half_width = stats.norm.ppf(1 - 1e-4 / 2) * 0.5 / math.sqrt(int(truth.sum()))
    assert abs(view_accuracy(guess, truth) - 0.5) <= half_width


def test_the_public_context_travels_once_and_is_named_by_the_digest_the_compliance_party_computed(data):
    a, y, H = data
    pair = Pair(a, y)
    first = pair.payload(H[:1])
    assert "galois_keys" in first and "context_id" not in first
    _, reply = pair.send(first)
    pair.querier.decrypt(reply)
    later = pair.payload(H[:1])
    assert "galois_keys" not in later and "public_key" not in later
    _, reply = pair.send(later)
    assert reply.kind == "he-answer"
    assert abs(pair.querier.decrypt(reply)["values"][0] - evaluate("sp", H[:1], a, y)[0]) < 6 * 5.3e-5
    _, reply = pair.send({**later, "query_id": "forged", "context_id": "0" * 64})
    assert reply.kind == REFUSAL
    assert reply.payload["detail"] == UNKNOWN_CONTEXT.format(name="he", got="0" * 64)
