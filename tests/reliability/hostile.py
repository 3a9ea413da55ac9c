"""Hostile-input campaign: hypothesis-generated bad envelopes and payloads sent to each kind of party.

One :class:`Target` per party kind (compliance in the clear, compliance on a
confidential channel, data center, adversary) holds a live party and the
honest counterpart that talks to it. Each hypothesis example draws one attack and its content,
sends it, and checks that

* the party did not raise (``receive`` returned),
* the reply is a signed ``refusal`` whose reason is one of
  :data:`parley.parties.wire.REFUSAL_REASONS`, never ``internal-error`` (a bug), and is
  among the reasons that attack may earn (a refusal kind is silently ignored
  instead: parties never refuse a refusal),
* the party then answers one good message correctly (the compliance party's
  answer equals the metric recomputed here; the data center and the adversary
  take the good answer in).

A hostile payload that happens to be a valid query is answered, and checked
like a good one; it is counted as ``answered``. Counts per attack and per
reason are kept in :attr:`Target.tried` and :attr:`Target.outcomes`.
"""

from __future__ import annotations

import string
import traceback
import uuid
from collections import Counter
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from parley.parties import confidential, payload_limits, wire
from parley.parties.adversary import Adversary
from parley.parties.attacks import AttackerView, get_attack
from parley.parties.compliance import Compliance
from parley.parties.data_center import DataCenter, DataCenterData
from parley.parties.encodings import role_sends
from parley.parties.learners.base_model import ModelSpec
from parley.parties.party import REFUSAL
from parley.protocols import get_protocol
from parley.protocols.base import AuditSet
from parley.protocols.metrics import METRICS, evaluate
from tests.fixed_secrets import party_secret

#: What each role may send, as the registered protocols and encodings declare it.
ROLES = role_sends()

N = 40
COMPLIANCE, DATA_CENTER, OBSERVER = "compliance", "data-center", "observer"
#: A second data-center key in the keyring that the compliance party does not serve.
STRANGER = "dc-unregistered"
WIRE_FAILURES = {wire.UNKNOWN_SENDER, wire.BAD_SIGNATURE, wire.WRONG_RECIPIENT, wire.DIGEST_MISMATCH}
BAD_QUERY = {wire.INVALID_QUERY, wire.INVALID_PAYLOAD}


def audit_set() -> AuditSet:
    rng = np.random.default_rng(7)
    a = np.array([1] * 30 + [0] * 10, dtype=np.int8)
    rng.shuffle(a)
    y = (rng.random(N) < 0.5).astype(np.int8)
    y[:2] = 1
    y[np.flatnonzero(a == 0)[:2]] = 1
    y[np.flatnonzero(a == 0)[2:4]] = 0
    return AuditSet(a=a, y=y)


# --------------------------------------------------------------------------- value strategies
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
)
_dtypes = st.sampled_from(["int8", "uint8", "int64", "float32", "float64", "bool", "float16", "uint64"])


def _filled(dtype: str, shape: tuple, fill: float) -> np.ndarray:
    """An array of ``dtype`` filled with ``fill`` (NaN or 1e300 cast to an int wraps: hostile on purpose)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.full(shape, fill).astype(dtype) if dtype != "bool" else np.full(shape, bool(fill))


def _arrays(shape=None) -> st.SearchStrategy[np.ndarray]:
    shapes = st.sampled_from([(N,), (1, N), (2, N), (1, N - 1), (1, N + 1), (0, N), (N, 1), (2, 2, N), (), (0,)]) \
        if shape is None else st.just(shape)
    return st.builds(_filled, _dtypes, shapes,
                     st.sampled_from([0.0, 0.5, 1.0, -1.0, 2.0, np.nan, np.inf, -0.0, 1e300, 255.0]))


_values = st.recursive(_scalars | _arrays(), lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=8)


@st.composite
def _query_payloads(draw, kept: list[str]) -> dict[str, Any]:
    """A metric-query payload, full or edit form, with some fields broken."""
    edit = draw(st.booleans())
    metric = draw(st.sampled_from([*METRICS, "SP", "", "prp "]) | _values)
    qid = draw(st.sampled_from([uuid.uuid4().hex, "", "x" * 129]) | _values)
    if edit:
        k = draw(st.integers(0, 4))
        payload = {"metric": metric, "query_id": qid,
                   "edit_of": draw(st.integers(0, 3).map(lambda i: kept[i] if i < len(kept) else "no-such-model")
                                   | _values),
                   "indices": draw(st.sampled_from([np.arange(k), np.array([0, 0]), np.array([N]), np.array([-1]),
                                                    np.arange(k).astype(np.float64), np.arange(2 * k).reshape(2, k)])
                                   | _values),
                   "values": draw(st.sampled_from([np.full(k, 0.5), np.full(k, np.nan), np.full(k, 1.5),
                                                   np.full((2, k), 1.0), np.full(k, 1, dtype=np.int8)]) | _values)}
    else:
        payload = {"metric": metric, "query_id": qid, "predictions": draw(_arrays() | _values)}
    if draw(st.booleans()):
        payload["keep"] = draw(st.booleans() | _values)
    drop = draw(st.sets(st.sampled_from(sorted(payload)), max_size=2))
    payload = {k: v for k, v in payload.items() if k not in drop}
    payload.update(draw(st.dictionaries(st.sampled_from(["extra", "m", "n", "epsilon"]), _values, max_size=1)))
    return payload


# --------------------------------------------------------------------------- the targets
class Target:
    """A live party plus the honest peer that talks to it; subclasses say how to attack it."""

    me: str  # the party's name
    peer: str  # who honestly talks to it

    def __init__(self) -> None:
        self.ids = {
            COMPLIANCE: wire.Identity.generate(COMPLIANCE, "compliance", kx=self.kx),
            DATA_CENTER: wire.Identity.generate(DATA_CENTER, "data-center", kx=self.kx),
            OBSERVER: wire.Identity.generate(OBSERVER, "observer"),
            STRANGER: wire.Identity.generate(STRANGER, "data-center"),
        }
        self.outsider = wire.Identity.generate("outsider", "data-center")
        self.keyring = wire.Keyring()
        for identity in self.ids.values():
            self.keyring.add(identity.key_entry())
        self.accepted: list[wire.Envelope] = []  # envelopes the party took in: replay material
        self.tried: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.good = 0

    kx = False

    # -- helpers
    def honest(self, kind: str, payload: dict[str, Any], sender: str | None = None) -> wire.Envelope:
        """An envelope exactly as the honest sender would seal it (encrypted where the channel is)."""
        identity = self.ids[sender or self.peer]
        body = confidential.outgoing(identity, self.keyring, self.me, kind, "raw", payload)
        return identity.seal(self.me, kind, "raw", body)

    def opened(self, reply: wire.Envelope) -> wire.Envelope:
        """The reply as its recipient reads it (verified and opened)."""
        wire.verify_envelope(reply, self.keyring, recipient=reply.recipient)
        to = self.ids.get(reply.recipient)
        if to is None or not confidential.is_sealed(reply.payload):
            return reply
        return confidential.incoming(reply, to, self.keyring)

    def send(self, attack: str, envelope: Any, expected: set[str] | None) -> None:
        """Deliver one hostile envelope and check the refusal; ``expected`` None: a valid message is possible."""
        self.tried[attack] += 1
        reply = self.party.receive(envelope)
        kind = getattr(envelope, "kind", None)
        if reply is None:  # a refusal is never refused; the data center takes a valid answer in silently
            assert kind == REFUSAL or expected is None, f"{attack}: no reply to {kind!r}, expected a refusal"
            self.outcomes["ignored (refusal)" if kind == REFUSAL else "taken in (valid by chance)"] += 1
            return
        reply = self.opened(reply)
        if reply.kind != REFUSAL:
            assert expected is None, f"{attack}: expected a refusal in {expected}, got {reply.kind}"
            self.check_answer(envelope, reply)
            self.outcomes["answered (valid by chance)"] += 1
            return
        reason = reply.payload["reason"]
        assert reason in wire.REFUSAL_REASONS, reason
        assert reason != wire.INTERNAL, f"{attack}: internal error: {reply.payload['detail']}"
        if expected is not None:
            assert reason in expected, f"{attack}: reason {reason!r} not in {expected}: {reply.payload['detail']}"
        self.outcomes[reason] += 1

    def example(self, data: st.DataObject, attack: str) -> None:
        getattr(self, f"attack_{attack.replace('-', '_')}")(data, attack)
        self.good_exchange()
        self.good += 1

    # -- attacks common to every party: the wire and the role policy
    attacks: tuple[str, ...] = ("forged-signature", "garbage-signature", "tampered-payload", "tampered-header",
                                "wrong-types", "replay", "stale-seq", "wrong-recipient", "unregistered-key",
                                "observer-sends", "disallowed-kind", "unhashable-payload", "hostile-values")

    def a_valid(self) -> wire.Envelope:
        """A message the party would accept (not sent): raw material for forgeries."""
        return self.honest(*self.good_message())

    def attack_forged_signature(self, data, attack) -> None:
        kind, payload = self.good_message()
        forger = wire.Identity(self.peer, "x", self.outsider.private_key, next_seq=data.draw(st.integers(0, 2**40)))
        self.send(attack, forger.seal(self.me, kind, "raw", payload), {wire.BAD_SIGNATURE})

    def attack_garbage_signature(self, data, attack) -> None:
        sig = data.draw(st.text(alphabet="0123456789abcdefxyz", max_size=140), label="signature")
        self.send(attack, self.a_valid().model_copy(update={"signature": sig}), {wire.BAD_SIGNATURE})

    def attack_tampered_payload(self, data, attack) -> None:
        env = self.a_valid()
        key = data.draw(st.sampled_from(sorted(env.payload) + ["added"]), label="key")
        new = data.draw(_values, label="value")
        payload = {**env.payload, key: new}
        if wire.payload_digest(payload) == env.digest if _hashable(payload) else False:
            payload[key + "-x"] = 1
        self.send(attack, env.model_copy(update={"payload": payload}), {wire.DIGEST_MISMATCH, wire.INVALID_PAYLOAD})

    def attack_tampered_header(self, data, attack) -> None:
        env = self.a_valid()
        field = data.draw(st.sampled_from(["id", "sender", "recipient", "kind", "protocol", "nonce", "digest",
                                           "seq", "timestamp"]), label="field")
        if field in ("seq", "timestamp"):
            value = getattr(env, field) + data.draw(st.integers(1, 2**40))
        elif field == "sender":
            value = data.draw(st.sampled_from([OBSERVER, STRANGER, COMPLIANCE, DATA_CENTER, "outsider", ""]))
        else:
            value = data.draw(st.text(string.printable, max_size=70))
        if value == getattr(env, field):
            value = f"{value}~"
        self.send(attack, env.model_copy(update={field: value}), WIRE_FAILURES | {wire.KIND_NOT_ALLOWED})

    def attack_wrong_types(self, data, attack) -> None:
        env = self.a_valid()
        field = data.draw(st.sampled_from(list(wire._FIELD_TYPES)), label="field")
        value = data.draw(st.one_of(st.none(), st.integers(), st.floats(), st.lists(st.integers(), max_size=2),
                                    st.text(max_size=5), st.booleans()), label="value")
        if type(value) is wire._FIELD_TYPES[field]:
            value = [value]
        self.send(attack, env.model_copy(update={field: value}), {wire.MALFORMED})

    def attack_replay(self, data, attack) -> None:
        while not self.accepted:
            self.good_exchange()
        recent = self.accepted[-20:]
        old = recent[data.draw(st.integers(0, 2**16), label="old") % len(recent)]
        self.send(attack, old, {wire.REPLAY})

    def attack_stale_seq(self, data, attack) -> None:
        identity = self.ids[self.peer]
        while not self.accepted:  # (a restarted adversary has accepted nothing yet)
            self.good_exchange()
        last = self.accepted[-1].seq  # the party refuses any sequence number up to the last it accepted
        stale = wire.Identity(identity.name, identity.role, identity.private_key,
                              next_seq=data.draw(st.integers(0, 2**16)) % (last + 1), kx_private=identity.kx_private)
        kind, payload = self.good_message()
        body = confidential.outgoing(stale, self.keyring, self.me, kind, "raw", payload)
        self.send(attack, stale.seal(self.me, kind, "raw", body), {wire.REPLAY})

    def attack_wrong_recipient(self, data, attack) -> None:
        to = data.draw(st.sampled_from([OBSERVER, STRANGER, self.peer, ""]) | st.text(max_size=24)
                       .filter(lambda name: name != self.me), label="to")
        kind, payload = self.good_message()
        self.send(attack, self.ids[self.peer].seal(to, kind, "raw", payload), {wire.WRONG_RECIPIENT})

    def attack_unregistered_key(self, data, attack) -> None:
        kind, payload = self.good_message()
        name = data.draw(st.text(max_size=24).filter(lambda n: n not in self.keyring), label="name")
        role = data.draw(st.sampled_from(sorted(ROLES)), label="role")
        outsider = wire.Identity(name, role, self.outsider.private_key, next_seq=data.draw(st.integers(0, 2**62)))
        self.send(attack, outsider.seal(self.me, kind, "raw", payload), {wire.UNKNOWN_SENDER})

    def attack_observer_sends(self, data, attack) -> None:
        kind = data.draw(st.sampled_from(sorted(set().union(*ROLES.values()) - {REFUSAL})) | st.text(max_size=16)
                         .filter(lambda k: k != REFUSAL), label="kind")
        self.send(attack, self.ids[OBSERVER].seal(self.me, kind, "raw", self.good_message()[1]),
                  {wire.KIND_NOT_ALLOWED})

    def attack_disallowed_kind(self, data, attack) -> None:
        allowed = ROLES[self.ids[self.peer].role]
        kind = data.draw(st.text(max_size=20).filter(lambda k: k not in allowed)
                         | st.sampled_from(sorted(set().union(*ROLES.values()) - allowed)), label="kind")
        self.send(attack, self.honest(kind, self.good_message()[1]), {wire.KIND_NOT_ALLOWED})

    def attack_unhashable_payload(self, data, attack) -> None:
        bad = data.draw(st.sampled_from([np.array(["a", "b"]), np.array([1 + 2j]), {1: 2}, object(), {"k": {3}},
                                         np.array([object()], dtype=object), b"bytes", {(1, 2): 3}]), label="value")
        # Hidden at a drawn key, possibly nested in lists and dicts of hashable values.
        for _ in range(data.draw(st.integers(0, 3), label="depth")):
            bad = data.draw(st.sampled_from(["list", "dict"])) == "list" and [data.draw(_scalars), bad] or {"in": bad}
        env = self.a_valid()
        key = data.draw(st.text(max_size=12), label="key")
        self.send(attack, env.model_copy(update={"payload": {**env.payload, key: bad}}),
                  {wire.INVALID_PAYLOAD, wire.DIGEST_MISMATCH})


    def attack_hostile_values(self, data, attack) -> None:
        """Values past parley.parties.payload_limits: deep nesting, huge integers, lone surrogates, huge arrays."""
        what = data.draw(st.sampled_from(["deep", "integer", "surrogate", "surrogate-key", "size"]), label="what")
        if what == "deep":
            bad: Any = data.draw(_scalars, label="leaf")
            for _ in range(data.draw(st.integers(payload_limits.MAX_DEPTH, 20_000), label="depth")):
                bad = [bad] if data.draw(st.booleans()) else {"k": bad}
        elif what == "integer":
            bad = data.draw(st.integers(payload_limits.MAX_INT_BITS + 1, 60_000), label="bits")
            bad = (1 << bad) * data.draw(st.sampled_from([1, -1]))
        elif what == "size":
            bad = np.broadcast_to(np.zeros(1), (data.draw(st.integers(payload_limits.MAX_PAYLOAD_BYTES // 8 + 1,
                                                                        1 << 40), label="values"),))
        else:
            bad = data.draw(st.text(max_size=6), label="text") + chr(data.draw(st.integers(0xD800, 0xDFFF)))
            if what == "surrogate-key":
                bad = {bad: 1}
        env = self.a_valid()
        key = data.draw(st.sampled_from(["extra", "predictions", "metric", "query_id"]), label="key")
        self.send(attack, env.model_copy(update={"payload": {**env.payload, key: bad}}),
                  {wire.INVALID_PAYLOAD, payload_limits.PAYLOAD_TOO_LARGE})


def _hashable(payload: Any) -> bool:
    try:
        wire.payload_digest(payload)
        return True
    except wire.WireError:
        return False


class ComplianceTarget(Target):
    """The compliance party under ``raw`` (exact answers, so every good answer is checked to the bit)."""

    me, peer = COMPLIANCE, DATA_CENTER
    attacks = Target.attacks + ("not-registered", "malformed-query", "malformed-query", "malformed-query")

    def __init__(self) -> None:
        super().__init__()
        self.audit = audit_set()
        self.rng = np.random.default_rng(11)
        protocol = get_protocol("raw")()
        self.party = Compliance(self.ids[COMPLIANCE], self.keyring, self.audit, protocol, [DATA_CENTER],
                                party_secret(0))
        self.kept: list[str] = []

    def good_message(self) -> tuple[str, dict[str, Any]]:
        metric = str(self.rng.choice(["sp", "eo", "pe", "abs_sp"] if "abs_sp" in METRICS else ["sp", "eo", "pe"]))
        H = (self.rng.random((int(self.rng.integers(1, 4)), N)) < 0.5).astype(np.float64)
        return "metric-query", {"metric": metric, "predictions": H, "query_id": uuid.uuid4().hex}

    def check_answer(self, query: wire.Envelope, reply: wire.Envelope) -> None:
        asked = confidential.incoming(query, self.ids[COMPLIANCE], self.keyring).payload \
            if confidential.is_sealed(query.payload) else query.payload
        assert reply.kind == "metric-answer" and reply.payload["query_id"] == asked["query_id"]
        if "edit_of" not in asked:
            H = np.atleast_2d(np.asarray(asked["predictions"], dtype=np.float64))
            np.testing.assert_array_equal(reply.payload["values"],
                                          evaluate(asked["metric"], H, self.audit.a, self.audit.y))

    def good_exchange(self) -> None:
        kind, payload = self.good_message()
        keep = not self.kept or self.rng.random() < 0.05
        if keep:
            payload = {**payload, "predictions": payload["predictions"][:1], "keep": True}
        envelope = self.honest(kind, payload)
        reply = self.opened(self.party.receive(envelope))
        assert reply.kind == "metric-answer", reply.payload
        self.check_answer(envelope, reply)
        self.accepted.append(envelope)
        if keep:
            self.kept.append(payload["query_id"])

    def attack_not_registered(self, data, attack) -> None:
        kind, payload = self.good_message()
        payload["query_id"] = data.draw(st.text(min_size=1, max_size=128), label="query_id")
        self.send(attack, self.honest(kind, payload, sender=STRANGER), {wire.NOT_REGISTERED})

    def attack_malformed_query(self, data, attack) -> None:
        payload = data.draw(_query_payloads(self.kept[-3:]), label="payload")
        if not _hashable(payload):
            return self.send(attack, self.a_valid().model_copy(update={"payload": payload}),
                             {wire.INVALID_PAYLOAD, wire.DIGEST_MISMATCH})
        self.send(attack, self.honest("metric-query", payload), None)


class ConfidentialComplianceTarget(ComplianceTarget):
    """The compliance party on a confidential channel: sealed payloads, plus attacks on the ciphertext."""

    kx = True
    attacks = ComplianceTarget.attacks + ("tampered-ciphertext", "plaintext-downgrade", "malformed-sealed")

    def attack_tampered_ciphertext(self, data, attack) -> None:
        kind, payload = self.good_message()
        sealed = confidential.outgoing(self.ids[DATA_CENTER], self.keyring, COMPLIANCE, kind, "raw", payload)
        body = dict(sealed[confidential.SEALED])
        ct = body["ciphertext"].copy()
        how = data.draw(st.sampled_from(["flip", "truncate", "nonce", "context"]), label="how")
        if how == "flip":
            ct[data.draw(st.integers(0, 2**16)) % ct.size] ^= data.draw(st.integers(1, 255))
            body["ciphertext"] = ct
        elif how == "truncate":
            body["ciphertext"] = ct[:data.draw(st.integers(0, 2**16)) % ct.size]
        elif how == "nonce":
            body["nonce"] = bytes(12).hex()
        else:  # a ciphertext sealed for another kind, moved into this envelope
            body = dict(confidential.outgoing(self.ids[DATA_CENTER], self.keyring, COMPLIANCE, "release-request", "raw",
                                              payload)[confidential.SEALED])
        # Re-signed by the genuine sender: the signature holds, only the AEAD can tell.
        self.send(attack, self.ids[DATA_CENTER].seal(COMPLIANCE, kind, "raw", {confidential.SEALED: body}),
                  {confidential.UNDECRYPTABLE})

    def attack_plaintext_downgrade(self, data, attack) -> None:
        kind, payload = self.good_message()
        payload["query_id"] = data.draw(st.text(min_size=1, max_size=128), label="query_id")
        self.send(attack, self.ids[DATA_CENTER].seal(COMPLIANCE, kind, "raw", payload), {confidential.UNDECRYPTABLE})

    def attack_malformed_sealed(self, data, attack) -> None:
        body = data.draw(st.dictionaries(st.sampled_from(["alg", "nonce", "ciphertext", "x"]), _values, max_size=4)
                         | _values, label="body")
        payload = {confidential.SEALED: body}
        if not _hashable(payload):
            payload = {confidential.SEALED: None}
        self.send(attack, self.ids[DATA_CENTER].seal(COMPLIANCE, "metric-query", "raw", payload),
                  {confidential.UNDECRYPTABLE})


class DataCenterTarget(Target):
    """The data center: answers and replies arrive from the compliance party."""

    me, peer = DATA_CENTER, COMPLIANCE
    attacks = Target.attacks + ("malformed-answer", "malformed-answer", "unasked-answer")

    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(3)
        X = rng.normal(size=(N, 3))
        y = (rng.random(N) < 0.5).astype(np.int8)
        self.party = DataCenter(self.ids[DATA_CENTER], self.keyring, DataCenterData(X, y, X, y), ModelSpec(),
                                COMPLIANCE, "raw", rng)
        self.party.train()
        self.rng = rng

    def good_message(self) -> tuple[str, dict[str, Any]]:
        """An answer to a query the data center has just asked (it takes no other)."""
        asked = self.party.audit_query().payload["query_id"]
        return "metric-answer", {"metric": "sp", "query_id": asked, "values": self.rng.random(1)}

    def good_exchange(self) -> None:
        kind, payload = self.good_message()
        envelope = self.honest(kind, payload)
        assert self.party.receive(envelope) is None
        got = self.party.answers[payload["query_id"]]
        np.testing.assert_array_equal(got["values"], payload["values"])
        self.accepted.append(envelope)

    def attack_malformed_answer(self, data, attack) -> None:
        kind = data.draw(st.sampled_from(["metric-answer", "attribute-release", "accept-set", "fairness-certificate"]))
        payload = data.draw(st.dictionaries(st.sampled_from(["metric", "query_id", "values", "decimals", "x"]),
                                            _values, max_size=4), label="payload")
        self.send(attack, self.honest(kind, payload), None)

    def attack_unasked_answer(self, data, attack) -> None:
        """A well-formed, honestly signed answer or reply to a query this data center never asked."""
        kind = data.draw(st.sampled_from(["metric-answer", "attribute-release", "accept-set", "fairness-certificate"]))
        payload = {**self.good_message()[1], "query_id": data.draw(st.text(max_size=40))}
        self.send(attack, self.honest(kind, payload), {wire.INVALID_PAYLOAD})

    def check_answer(self, envelope, reply) -> None:  # the data center never answers with anything but a refusal
        raise AssertionError(f"the data center replied {reply.kind}")


class AdversaryTarget(Target):
    """The adversary mid-attack (double query, one probe per target); a real compliance party answers its probes."""

    me, peer = DATA_CENTER, COMPLIANCE  # it holds the data center's identity
    attacks = Target.attacks + ("malformed-answer", "malformed-answer", "unasked-answer")

    def __init__(self) -> None:
        super().__init__()
        self.rng = np.random.default_rng(5)
        self.audit = audit_set()
        self.restarts = self.finished = 0
        self.restart()

    def restart(self) -> None:
        """A new attack, and a new compliance party to answer it (its kept models belong to the old attack)."""
        self.compliance = Compliance(self.ids[COMPLIANCE], self.keyring, self.audit, get_protocol("raw")(),
                                     [DATA_CENTER], party_secret(0))
        view = AttackerView(n=N, base_scores=self.rng.random(N),
                            base_predictions=(self.rng.random(N) < .5).astype(np.int8),
                            y=self.audit.y)
        attack = get_attack("double-query")(get_attack("double-query").Params(targets=N), view, self.rng)
        self.party = Adversary(self.ids[DATA_CENTER], self.keyring, attack, COMPLIANCE, "raw")
        self.probe = self.party.start()
        self.accepted.clear()  # a new party has a new replay guard: old answers are unasked, not replays
        self._answered: tuple = (None, None)
        self.restarts += 1

    def answer(self) -> wire.Envelope:
        """The compliance party's answer to the pending probe (sealed, not yet delivered)."""
        if self._answered[0] is not self.probe:
            reply = self.compliance.receive(self.probe)
            assert reply.kind == "metric-answer", reply.payload
            self._answered = (self.probe, reply)
        return self._answered[1]

    def good_message(self) -> tuple[str, dict[str, Any]]:
        return "metric-answer", dict(self.answer().payload)

    def good_exchange(self) -> None:
        envelope = self.honest(*self.good_message())  # sealed now: the true answer, with a current sequence number
        reply = self.party.receive(envelope)
        self.accepted.append(envelope)
        if reply is None:  # the attack concluded: it found every target, since every answer was exact
            outcome = self.party.outcome()
            assert outcome.indices.size == N and outcome.decided.all()
            np.testing.assert_array_equal(outcome.a_hat, self.audit.a[outcome.indices])
            self.finished += 1
            self.restart()
            return
        assert reply.kind == "metric-query", reply.payload
        self.probe = reply

    def _reprobe(self) -> None:
        """After a hostile answer was taken in, the attack moved on (or stopped): follow it."""
        if self.party._pending is None:
            self.restart()

    def attack_malformed_answer(self, data, attack) -> None:
        payload = data.draw(st.fixed_dictionaries({}, optional={"values": _values, "metric": _values,
                                                                "decimals": _values}), label="payload")
        payload["query_id"] = self.probe.payload["query_id"]
        # A signed answer of the wrong form is refused; one of the right form steers the attack (the
        # compliance party is trusted to sign true answers) and the attack moves on or stops.
        self.tried[attack] += 1
        reply = self.party.receive(self.honest("metric-answer", payload))
        if reply is not None and reply.kind == REFUSAL:
            assert reply.payload["reason"] in BAD_QUERY, reply.payload
            self.outcomes[reply.payload["reason"]] += 1
            return
        self.outcomes["taken in (valid by chance)"] += 1
        if reply is None:
            self.restart()
        else:
            self.probe = reply

    def attack_unasked_answer(self, data, attack) -> None:
        payload = {**self.good_message()[1], "query_id": data.draw(st.text(max_size=40))}
        self.send(attack, self.honest("metric-answer", payload), {wire.INVALID_PAYLOAD})

    def check_answer(self, envelope, reply) -> None:
        raise AssertionError(f"the adversary replied {reply.kind} to a hostile message")


TARGETS = {"compliance": ComplianceTarget, "compliance-confidential": ConfidentialComplianceTarget,
           "data-center": DataCenterTarget, "adversary": AdversaryTarget}


def campaign(target: str, examples: int, rng_seed: int = 0) -> Target:
    """About ``examples`` hypothesis examples against a fresh ``target``, shared among its attacks by weight.

    Each attack gets its own hypothesis run (an attack listed twice in
    ``Target.attacks`` gets twice the examples), so every attack is covered
    and hypothesis explores the contents of each.
    """
    t = TARGETS[target]()
    weights = Counter(t.attacks)
    failures: list[str] = []
    for attack, weight in sorted(weights.items()):
        share = -(-examples * weight // len(t.attacks))  # ceil: at least ``examples`` in all

        @seed(rng_seed)
        @settings(max_examples=share, deadline=None, database=None, suppress_health_check=list(HealthCheck),
                  phases=(Phase.generate,))  # the party's state persists across examples: nothing to shrink
        @given(st.data())
        def run(data: st.DataObject) -> None:
            # The party's state persists across examples, so hypothesis cannot replay a failing example
            # faithfully: the first failure is recorded with its traceback and raised once the run ends.
            try:
                t.example(data, attack)  # noqa: B023  (run() is called below, in this iteration)
            except Exception:
                failures.append(traceback.format_exc())
                raise

        try:
            run()
        except Exception:
            if not failures:
                raise
        if failures:
            raise AssertionError(f"{target}/{attack}: a hostile case broke the party or its next good exchange:\n"
                                 f"{failures[0]}")
    return t


def report(target: str, t: Target) -> str:
    """Counts of one campaign, for the log and docs/reliability.md."""
    lines = [f"{target}: {sum(t.tried.values())} hostile cases, {t.good} good messages answered correctly after them"]
    lines += [f"  tried   {k:24s} {v}" for k, v in sorted(t.tried.items())]
    lines += [f"  outcome {k:36s} {v}" for k, v in sorted(t.outcomes.items())]
    return "\n".join(lines)
