"""Refusals say nothing about A: the adversary who reads the code sends the same queries to neighbouring data sets.

A refusal is signed, free and not rate-limited, so a refusal whose occurrence or
text depends on private data is an oracle on A that no budget sees. For every
protocol in the registry (a protocol registered later is covered without editing
this file) a real compliance party is built three times: on a data set, on its
neighbour in the audit set (one person's A flipped) and on its neighbour in the
training set (one person's A flipped). Each gets the same envelopes, signed by a
real data-center identity: valid metric queries of every metric (models that
accept only the flipped person, nobody, everybody, random ones), edit-form
queries around the flipped person, every request kind of the protocol with
payloads of every shape, and a set of invalid ones. What each party refused, and
the text of each refusal, must be byte-identical across the three, unless the
refusal was priced: its query id has a debit in that party's ledger.

``test_the_flip_one_reconstruction_reads_nothing_beyond_the_epsilon_spent`` plays
the attack that read every training-set A from the fairness certificate's
refusals (one person's decision flipped per request).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from parley.parties.compliance import Compliance
from parley.parties.party import REFUSAL
from parley.parties.wire import Envelope, Identity, Keyring
from parley.protocols import PROTOCOLS, get_protocol
from parley.protocols.base import AuditSet, Protocol
from parley.protocols.budget import ApproxDP
from parley.protocols.group_gaps import unfairness
from parley.protocols.metrics import METRICS
from tests.fixed_secrets import party_secret

#: Parameters each protocol is tried with (every release mode that changes what is refused). A protocol not
#: listed is built with its defaults; if it has required parameters the test says to add it here.
PARAMS: dict[str, list[dict[str, Any]]] = {
    "raw": [{}, {"decimals": 2}],
    "laplace": [{"epsilon": 1.0}, {"epsilon": 1.0, "out_of_range": "clamp", "sampler": "snapping"}],
    "laplace-bounded": [{"epsilon": 1.0}, {"epsilon": 1.0, "bounding": "boundary-inflated"}],
    "smooth-cauchy": [{"epsilon": 1.0}],
    "smooth-laplace": [{"epsilon": 0.5, "delta": 1e-6}],
    "dp-counts": [{"epsilon": 1.0}, {"epsilon": 1.0, "noise": "gaussian", "delta": 1e-6}],
    "fairness-certificate": [{}, {"release": "value", "decimals": 2},
                             {"release": "tolerance", "tolerance": 0.05, "min_group": 5}],
    "cov-threshold": [{}, {"policy": "soft", "noise": 0.01}],
    "rr-release": [{}, {"releases": 2}],
    "mpc": [{}],
    "mpc-dp": [{"epsilon": 1.0}, {"epsilon": 1.0, "noise": "gaussian", "delta": 1e-6}],
    "he": [{}],
}
#: Seeded pairwise keys of the secure protocols' parties (compliance 0, querier 1, helper 2).
_SHARED_KEYS = {pair: np.random.default_rng([7, *pair]).bytes(16) for pair in ((0, 1), (0, 2), (1, 2))}
MISSING_PARAMS = "protocol {name!r} needs parameters: add it to PARAMS in tests/reliability/test_refusals.py ({error})"

N_AUDIT, N_TRAIN = 48, 64
FLIPPED = 0  # the person whose A differs between neighbours, in either set
DC, COMPLIANCE = "data-center", "compliance"


def _set(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A and y with at least 4 members in each group of each label slice (a neighbour never empties one)."""
    rng = np.random.default_rng(seed)
    while True:
        a, y = rng.integers(0, 2, n).astype(np.int8), rng.integers(0, 2, n).astype(np.int8)
        if min(int(((a == g) & (y == label)).sum()) for g in (0, 1) for label in (0, 1)) >= 4:
            return a, y


def _flipped(a: np.ndarray) -> np.ndarray:
    b = a.copy()
    b[FLIPPED] = 1 - b[FLIPPED]
    return b


A_AUDIT, Y_AUDIT = _set(N_AUDIT, 1)
A_TRAIN, Y_TRAIN = _set(N_TRAIN, 2)
#: The data set and its two neighbours: (A of the audit set, A of the training set).
WORLDS = {"data set": (A_AUDIT, A_TRAIN), "audit neighbour": (_flipped(A_AUDIT), A_TRAIN),
          "training neighbour": (A_AUDIT, _flipped(A_TRAIN))}


def _configs() -> list[tuple[str, dict[str, Any]]]:
    return [(name, params) for name in sorted(PROTOCOLS) for params in PARAMS.get(name, [{}])]


def _protocol(name: str, params: dict[str, Any]) -> Protocol:
    cls = get_protocol(name)
    try:
        return cls(cls.Params(**params))
    except ValueError as exc:  # pydantic's ValidationError: required parameters
        raise AssertionError(MISSING_PARAMS.format(name=name, error=exc)) from None


def _models(n: int, seed: int) -> dict[str, np.ndarray]:
    """Models over n people, each (1, n) unless named otherwise; several single out the flipped person."""
    rng = np.random.default_rng(seed)
    only = np.zeros(n)
    only[FLIPPED] = 1.0
    pair = only.copy()
    pair[FLIPPED + 1] = 1.0
    return {"only the flipped person": only[None, :], "all but the flipped person": 1.0 - only[None, :],
            "the flipped person and one more": pair[None, :], "nobody": np.zeros((1, n)), "everybody": np.ones((1, n)),
            "random scores": rng.random((1, n)), "three random decisions": rng.integers(0, 2, (3, n)).astype(float),
            "the first half": (np.arange(n) < n // 2).astype(float)[None, :],
            **{f"random decisions #{k}": rng.integers(0, 2, (1, n)).astype(float) for k in range(4)}}


def _battery(protocol: Protocol) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(label, kind, payload) of every query sent, in order; query ids are unique within one battery."""
    counter = iter(range(10**6))

    def qid() -> str:
        return f"q{next(counter)}"

    for metric in [*METRICS, "bogus"]:
        for label, H in _models(N_AUDIT, 3).items():
            yield f"{metric}: {label}", "metric-query", {"metric": metric, "predictions": H, "query_id": qid()}
        # Edit-form probes around the flipped person, from a kept base model.
        base = qid()
        yield f"{metric}: keep base", "metric-query", {"metric": metric, "query_id": base, "keep": True,
                                                          "predictions": np.full((1, N_AUDIT), 0.5)}
        for value in (0.0, 1.0):
            yield f"{metric}: edit flipped person to {value}", "metric-query", {
                "metric": metric, "query_id": qid(), "edit_of": base, "indices": np.array([[FLIPPED]]),
                "values": np.array([[value]])}
    bad = np.full((1, N_AUDIT), 0.5)
    bad[0, 3] = np.nan
    invalid: dict[str, dict[str, Any]] = {
        "NaN": {"metric": "sp", "predictions": bad}, "above 1": {"metric": "sp", "predictions": bad * 0 + 1.5},
        "wrong n": {"metric": "sp", "predictions": np.zeros((1, N_AUDIT + 1))},
        "a list": {"metric": "sp", "predictions": [[0.5] * N_AUDIT]}, "no predictions": {"metric": "sp"},
        "edit of an unknown base": {"metric": "sp", "edit_of": "nope", "indices": np.array([[0]]),
                                    "values": np.array([[1.0]])},
        "keep of two models": {"metric": "sp", "predictions": np.zeros((2, N_AUDIT)), "keep": True},
    }
    for label, payload in invalid.items():
        yield f"invalid metric query: {label}", "metric-query", {**payload, "query_id": qid()}
    yield "invalid metric query: empty query id", "metric-query", {"metric": "sp", "predictions": bad, "query_id": ""}
    if protocol.encoding == "he":  # he's own request: the same models, encrypted
        yield from _he_battery(protocol, qid)
        return
    if protocol.encoding is not None:  # the secure protocols' own request: shares of the same models
        yield from _secure_battery(protocol, qid)
        return
    for kind in protocol.requests:
        for n, where in ((N_TRAIN, "training set"), (N_AUDIT, "audit set")):
            for label, H in _models(n, 4).items():
                yield f"{kind}: {label} on the {where}", kind, {"predictions": H, "query_id": qid()}
        for name in ("audit", "train", "audit", "train", "audit", "elsewhere", 3):
            yield f"{kind}: set {name!r}", kind, {"set": name, "query_id": qid()}
        yield f"{kind}: NaN predictions", kind, {"predictions": np.full((1, N_TRAIN), np.nan), "query_id": qid()}
        yield f"{kind}: empty payload", kind, {"query_id": qid()}
        yield f"{kind}: no query id", kind, {"predictions": np.zeros((1, N_TRAIN))}


def _he_battery(protocol: Any, qid: Any) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``he-query`` payloads: every model of the battery encrypted under one querier key, for every metric, and
    malformed ones (each neighbour's party gets the same bytes)."""
    from parley.protocols.crypto.ckks import context_id

    context = _he_keys().public_context()
    named = {"context_id": context_id(context["public_key"], context["galois_keys"])}
    first = True
    for metric in [*METRICS, "bogus"]:
        for label, H in list(_models(N_AUDIT, 3).items())[:2]:
            # the context travels with the first answered query; later ones name it (as the querier does)
            travels = context if first and metric in protocol.metrics else named
            first = first and travels is not context
            yield f"{metric}: {label}", "he-query", {"metric": metric, "m": int(H.shape[0]), "query_id": qid(),
                                                    **travels, "ciphertexts": _he_cts(H)}
    good = _he_cts(np.zeros((1, N_AUDIT)))
    invalid: dict[str, dict[str, Any]] = {
        "no ciphertexts": {"metric": "sp", "m": 1, **named},
        "too few ciphertexts": {"metric": "sp", "m": 5, **named, "ciphertexts": good},
        "truncated ciphertext": {"metric": "sp", "m": 1, **named, "ciphertexts": [good[0][:999].copy()]},
        "garbled galois keys": {"metric": "sp", "m": 1, **context, "galois_keys": context["public_key"],
                                "ciphertexts": good},
        "unknown context id": {"metric": "sp", "m": 1, "context_id": "0" * 64, "ciphertexts": good},
        "m zero": {"metric": "sp", "m": 0, **named, "ciphertexts": good},
        "ciphertext as floats": {"metric": "sp", "m": 1, **named, "ciphertexts": [good[0].astype(float)]},
    }
    for label, payload in invalid.items():
        yield f"invalid he query: {label}", "he-query", {**payload, "query_id": qid()}


_HE_CACHE: dict[str, Any] = {}


def _he_keys() -> Any:
    """One querier key pair for the whole battery (the neighbours' parties must see the same bytes)."""
    if "keys" not in _HE_CACHE:
        from parley.protocols.crypto.ckks import QuerierKeys

        _HE_CACHE["keys"] = QuerierKeys()
    return _HE_CACHE["keys"]


def _he_cts(H: np.ndarray) -> list[np.ndarray]:
    """H's ciphertexts, made once per matrix (the same bytes for every neighbour)."""
    from parley.protocols.crypto.ckks import to_bytes

    key = H.tobytes() + str(H.shape).encode()
    if key not in _HE_CACHE:
        _HE_CACHE[key] = [to_bytes(ct) for ct in _he_keys().encrypt(H)]
    return _HE_CACHE[key]


def _secure_battery(protocol: Any, qid: Any) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``mpc-query`` payloads: the compliance party's shares of every model of the battery, for every metric."""
    from parley.protocols.crypto.shamir import PairKeys, encode_field, querier_rows, share_rows

    querier = PairKeys(me=1, keys=_SHARED_KEYS)
    for metric in [*METRICS, "bogus"]:
        for label, H in _models(N_AUDIT, 3).items():
            query_id = qid()
            rows, _, _ = querier_rows(H, Y_AUDIT, metric if metric in protocol.metrics else "sp", protocol.bits)
            shares = encode_field(share_rows(rows, querier, query_id)[0])
            yield f"{metric}: {label}", "mpc-query", {"metric": metric, "m": int(H.shape[0]), "query_id": query_id,
                                                     "shares": shares}
    good = encode_field(share_rows(querier_rows(np.zeros((1, N_AUDIT)), Y_AUDIT, "sp", protocol.bits)[0],
                                   querier, "x")[0])
    invalid: dict[str, dict[str, Any]] = {
        "no shares": {"metric": "sp", "m": 1}, "shares of the wrong shape": {"metric": "sp", "m": 2, "shares": good},
        "float shares": {"metric": "sp", "m": 1, "shares": good.astype(np.float64)},
        "m zero": {"metric": "sp", "m": 0, "shares": good}, "no m": {"metric": "sp", "shares": good},
    }
    for label, payload in invalid.items():
        yield f"invalid mpc query: {label}", "mpc-query", {**payload, "query_id": qid()}


def _outcomes(protocol: Protocol, a_audit: np.ndarray, a_train: np.ndarray, budget: float | None
              ) -> tuple[list[tuple[str, str, tuple[Any, ...]]], set[str]]:
    """Send the battery to a fresh compliance party on (a_audit, a_train): per query (label, query id, refusal
    or ("answered",)), and the query ids with a debit in its ledger."""
    dc, me = Identity.generate(DC, DC), Identity.generate(COMPLIANCE, COMPLIANCE)
    keyring = Keyring()
    keyring.add(dc.key_entry())
    keyring.add(me.key_entry())
    budgets = None if budget is None else {DC: ApproxDP(epsilon=budget, delta=1e-3)}  # pays pure and approx costs
    if protocol.encoding == "mpc":
        from parley.protocols.crypto.shamir import PairKeys

        protocol = protocol.keyed(PairKeys(me=0, keys=_SHARED_KEYS))
    party = Compliance(me, keyring, AuditSet(a=a_audit, y=Y_AUDIT), protocol, [DC], party_secret(0),
                       budgets=budgets, train=AuditSet(a=a_train, y=Y_TRAIN))
    out: list[tuple[str, str, tuple[Any, ...]]] = []
    for label, kind, payload in _battery(protocol):
        reply: Envelope = party.receive(dc.seal(COMPLIANCE, kind, protocol.name, payload))
        body = reply.payload
        outcome = ("refused", body["reason"], body["detail"]) if reply.kind == REFUSAL else ("answered",)
        out.append((label, str(payload.get("query_id")), outcome))
    debited = {str(entry["query_id"]) for entry in party.ledger.entries()} if party.ledger is not None else set()
    party.close()
    return out, debited


@pytest.mark.parametrize("budget", [None, pytest.param(4.0, marks=pytest.mark.reliability)],
                         ids=["uncapped", "budget 4"])
@pytest.mark.parametrize(("name", "params"), _configs(),
                         ids=[f"{n}-{PARAMS.get(n, [{}]).index(p)}" for n, p in _configs()])
def test_refusals_are_the_same_on_neighbouring_data_sets(name, params, budget):
    protocol = _protocol(name, params)
    runs = {world: _outcomes(protocol, *arrays, budget) for world, arrays in WORLDS.items()}
    reference, _ = runs["data set"]
    refused = [row for row in reference if row[2][0] == "refused"]
    # The battery is not vacuous: the protocol answered some queries and refused others.
    assert refused and len(refused) < len(reference), (name, len(refused), len(reference))
    for world, (outcome, debited) in runs.items():
        for (label, query_id, mine), (_, _, theirs) in zip(outcome, reference, strict=True):
            if mine == theirs:
                continue
            # Different only where priced: a debit for this query id in both parties' ledgers.
            priced = query_id in debited and query_id in runs["data set"][1]
            assert priced, f"{name} {params}, {world}: {label!r} gets {mine} but {theirs} on the data set"
    reasons = sorted({row[2][1] for row in refused})
    print(f"REFUSALS {name} {params} budget={budget}: {len(reference)} queries x 3 data sets, "
          f"{len(refused)} refused ({', '.join(reasons)}), identical on both neighbours")


def test_data_outside_a_protocols_domain_is_refused_at_setup_never_per_request():
    """rr-release with A codes beyond protocol.groups: a ConfigError when the party is built, naming no code of A."""
    from parley.protocols.errors import ConfigError
    from parley.protocols.mechanisms.randomized_response import GROUPS_TOO_FEW

    dc, me = Identity.generate(DC, DC), Identity.generate(COMPLIANCE, COMPLIANCE)
    keyring = Keyring()
    keyring.add(dc.key_entry())
    texts = set()
    for top in (2, 5):
        a = A_TRAIN.astype(np.int8).copy()
        a[FLIPPED] = top
        with pytest.raises(ConfigError) as info:
            Compliance(me, keyring, AuditSet(a=A_AUDIT, y=Y_AUDIT), _protocol("rr-release", {}), [DC],
                       party_secret(0), train=AuditSet(a=a, y=Y_TRAIN))
        texts.add(str(info.value))
    assert texts == {GROUPS_TOO_FEW.format(name="train", top=1, groups=2)}


# -- the flip-one reconstruction -----------------------------------------------------------------------

N_PEOPLE = 200
NUMBER = re.compile(r"\d+\.\d+")


def _attack(params: dict[str, Any], a: np.ndarray, y: np.ndarray, h0: np.ndarray, anchor: int
            ) -> tuple[float, int, float]:
    """Flip one person's decision per certificate request (201 requests), decode A from whatever comes back.

    Reads a value wherever one appears (in a reply, or in a refusal's text), else the certified bit. The
    attacker knows the anchor's A (auxiliary data) and labels the two clusters of evidence by it. Returns
    (accuracy on everyone but the anchor, debits in the ledger, epsilon in the ledger).
    """
    cls = get_protocol("fairness-certificate")
    protocol = cls(cls.Params(**{k: v for k, v in params.items() if k in cls.Params.model_fields}))
    dc, me = Identity.generate(DC, DC), Identity.generate(COMPLIANCE, COMPLIANCE)
    keyring = Keyring()
    keyring.add(dc.key_entry())
    keyring.add(me.key_entry())
    party = Compliance(me, keyring, AuditSet(a=a[:50], y=y[:50]), protocol, [DC], party_secret(11),
                       train=AuditSet(a=a, y=y))
    observed = []
    for i in range(-1, N_PEOPLE):  # -1: the base model
        h = h0.copy()
        if i >= 0:
            h[i] = 1.0 - h[i]
        reply = party.receive(dc.seal(COMPLIANCE, "certificate-request", protocol.name,
                                      {"predictions": h[None, :], "query_id": f"flip-{i}"}))
        text = reply.payload["detail"] if reply.kind == REFUSAL else ""
        if reply.kind != REFUSAL and "value" in reply.payload:
            observed.append(float(reply.payload["value"]))
        elif (number := NUMBER.search(text)) is not None:
            observed.append(float(number.group()))
        elif reply.kind != REFUSAL and "certified" in reply.payload:
            observed.append(0.0 if reply.payload["certified"] else 1.0)  # "not certified": the value is higher
        else:
            observed.append(math.nan)
    values = np.array(observed)
    delta = 1.0 - 2.0 * h0  # +1 where the flip accepts the person, -1 where it rejects
    # Flipping i moves the unfairness one way for one group and the other way for the other (the gap is
    # proportional to |SP|, and i's flip moves SP by +-1/N_{a_i}); sign(evidence) clusters the two groups.
    evidence = np.nan_to_num(delta * (values[1:] - values[0]))
    side = np.sign(evidence)
    side[side == 0] = np.random.default_rng(12).choice([-1.0, 1.0], size=int((side == 0).sum()))  # undecided
    a_hat = np.where(side == side[anchor], a[anchor], 1 - a[anchor])
    others = np.arange(N_PEOPLE) != anchor
    accuracy = float((a_hat[others] == a[others]).mean())
    entries = party.ledger.entries() if party.ledger is not None else []
    spent = math.fsum(entry["epsilon"] for entry in entries)
    party.close()
    return accuracy, len(entries), spent


def test_the_flip_one_reconstruction_reads_nothing_beyond_the_epsilon_spent():
    """201 certificate requests, one person's decision flipped in each, against the tolerance certificate.

    Two placements of the threshold: tolerance 0 (every model is over it: before the fix every refusal
    stated the exact unfairness), and, handed by the referee, the tolerance at the base model's own
    unfairness (each flip pushes it across the threshold one way or the other: the most a decision can
    tell). Total epsilon 201 x 1/201 = 1 per person, so no decoder beats e/(1+e) = 73.1% per person in
    expectation (A uniform and independent); the seeded run must stay under it, and the ledger must show
    every decision debited.
    """
    rng = np.random.default_rng(2026)
    a, y = rng.integers(0, 2, N_PEOPLE).astype(np.int8), rng.integers(0, 2, N_PEOPLE).astype(np.int8)
    h0 = rng.integers(0, 2, N_PEOPLE).astype(np.float64)
    min_group = int(min((a == 0).sum(), (a == 1).sum()))  # k <= every group: the statistic is the unfairness
    epsilon = 1.0 / (N_PEOPLE + 1)
    bound = math.exp(1.0) / (1.0 + math.exp(1.0))
    base = unfairness("sp", h0, a)
    for label, tolerance, beta in (("tolerance 0", 0.0, 0.05), ("tolerance at the base model", base, 0.5)):
        params = {"release": "tolerance", "tolerance": tolerance, "epsilon": epsilon, "min_group": min_group,
                  "false_certificate": beta}
        accuracy, debits, spent = _attack(params, a, y, h0, anchor=0)
        print(f"FLIP-ONE {label}: {N_PEOPLE + 1} requests, A read for {accuracy:.1%} of {N_PEOPLE - 1} people "
              f"(bound {bound:.1%} at epsilon {spent:.3f} from the ledger, {debits} debits)")
        assert accuracy <= bound, f"{label}: {accuracy:.1%} of A read, above the DP bound {bound:.1%}"
        assert debits == N_PEOPLE + 1 and math.isclose(spent, 1.0, rel_tol=1e-9), (debits, spent)
    # The decoder is not blind: handed exact values (release = "value"), it reads every A.
    accuracy, debits, _ = _attack({"release": "value"}, a, y, h0, anchor=0)
    assert accuracy == 1.0 and debits == 0
