"""Canary: no transcript holds A, nor a per-individual release its protocol does not make.

Default run: the scanner on hand-made transcripts (it must find what is
planted). Campaign (``-m reliability``): every catalog scenario run in process,
its transcript scanned with the referee's A.
"""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties import wire
from parley.parties.adversary import exchanges_from
from parley.parties.confidential import outgoing
from parley.parties.transcript import TranscriptWriter, read_transcript
from parley.protocols import get_protocol
from parley.protocols.metrics import evaluate
from parley.scenarios.canary import scan_envelopes, scan_transcript
from parley.scenarios.catalog import scenario_path
from parley.scenarios.datasets import load_split
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario

from .hostile import N, audit_set


def _ids(kx=False):
    ids = {name: wire.Identity.generate(name, name, kx=kx) for name in ("compliance", "data-center")}
    ring = wire.Keyring()
    for identity in ids.values():
        ring.add(identity.key_entry())
    return ids, ring


def test_the_canary_finds_what_is_planted_and_nothing_else(tmp_path):
    ids, ring = _ids()
    a = audit_set().a
    H = (np.random.default_rng(0).random((2, N)) < 0.5).astype(np.float64)
    clean = [ids["data-center"].seal("compliance", "metric-query", "raw", {"metric": "sp", "predictions": H,
                                                                         "query_id": "q"}),
             ids["compliance"].seal("data-center", "metric-answer", "raw", {"values": np.zeros(2), "query_id": "q"})]
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path, ring, ids) as writer:
        for e in clean:
            writer.append(e)
    assert scan_transcript(path, a) == []
    leaks = [
        ids["compliance"].seal("data-center", "metric-answer", "raw", {"values": np.zeros(1), "debug": a.tolist()}),
        ids["data-center"].seal("compliance", "metric-query", "raw", {"predictions": (1 - a)[None, :].astype(float)}),
        ids["compliance"].seal("data-center", "metric-answer", "raw", {"values": np.full(N, 0.5)}),
        ids["compliance"].seal("data-center", "attribute-release", "raw", {"a_noisy": np.full(N, 0.5)}),
    ]
    found = scan_envelopes(clean + leaks, a, per_individual_kinds=("attribute-release",))
    assert [(f.what, f.message) for f in found] == [("raw-a", 3), ("raw-a", 4), ("per-individual", 5)]
    assert "payload.debug" in str(found[0])
    # Sealed payloads are ciphertext to the scanner, as to any observer.
    sealed_ids, sealed_ring = _ids(kx=True)
    body = outgoing(sealed_ids["compliance"], sealed_ring, "data-center", "metric-answer", "raw", {"a": a})
    assert scan_envelopes([sealed_ids["compliance"].seal("data-center", "metric-answer", "raw", body)], a) == []


def test_protocols_declare_their_per_individual_replies_and_the_canary_judges_the_rest():
    """rr-release declares its release of A; the accept set and the certificate are judged group-level."""
    from parley.protocols import PROTOCOLS

    for name, cls in PROTOCOLS.items():
        assert set(cls.per_individual_kinds) <= set(cls.requests.values()), name  # only replies it sends
    assert get_protocol("rr-release").per_individual_kinds == ("attribute-release",)
    assert get_protocol("cov-threshold").per_individual_kinds == ()
    assert get_protocol("fairness-certificate").per_individual_kinds == ()
    ids, _ = _ids()
    a = audit_set().a
    seal = ids["compliance"].seal

    def judged(kind, payload, protocol):
        kinds = get_protocol(protocol).per_individual_kinds
        return [(f.what, f.kind) for f in scan_envelopes([seal("data-center", kind, protocol, payload)], a,
                                                          per_individual_kinds=kinds)]

    # What the protocols send: hypothesis indices (fewer than n), a metric and its value.
    assert judged("accept-set", {"accepted": np.arange(7), "m": 40, "rho": 0.1, "policy": "hard",
                                 "query_id": "q"}, "cov-threshold") == []
    assert judged("fairness-certificate", {"metric": "sp", "value": 0.01, "n": N, "query_id": "q",
                                           "slices": ["all"]}, "fairness-certificate") == []
    # The same kinds carrying n values would be flagged: neither protocol may release per individual.
    assert judged("accept-set", {"accepted": np.arange(N)}, "cov-threshold") == [("per-individual", "accept-set")]
    assert judged("fairness-certificate", {"gaps": np.full(N, 0.1)}, "fairness-certificate") == [
        ("per-individual", "fairness-certificate")]
    # A randomized-response release is per individual by design; the raw A never is.
    z = np.where(np.arange(N) % 3 == 0, 1 - a, a)
    assert judged("attribute-release", {"z": z}, "rr-release") == []
    assert judged("attribute-release", {"z": a}, "rr-release") == [("raw-a", "attribute-release")]


def _catalog() -> list[str]:
    from pathlib import Path

    from parley.scenarios.catalog import __path__ as catalog_dirs

    return sorted(p.stem for p in Path(catalog_dirs[0]).glob("*.toml"))


#: Every catalog scenario, with the overrides (as ``--set``) that keep its canary run small. A scenario
#: added to the catalog without an entry here fails ``test_every_catalog_scenario_is_scanned``.
SMALL: dict[str, dict[str, object]] = {
    "adult-conceal": {},
    "adult-he-reveal": {"dataset.audit_size": 300},
    "adult-correction": {"dataset.audit_size": 5000},
    "adult-correction-authors": {"dataset.audit_size": 4000, "dataset.train_size": 2000},
    "adult-correction-remover": {"dataset.audit_size": 5000},
    # m models other than n: with m = n (the attack's default) every per-model array of the answer is n long, which
    # the canary cannot tell from a per-individual vector
    "adult-likelihood": {"attack.m": 120},
    "adult-mpc-dp": {},
    "adult-mpc-reveal": {"dataset.audit_size": 300},
    "adult-observer-honest": {},
    "adult-raw-double-query": {},
    "adult-raw-single-query": {},
    "adult-reveal-abs-sp": {},
    "adult-reveal-cs": {},
    "adult-reveal-cs-iid": {},
    "adult-reveal-eo": {},
    "adult-reveal-linear": {},
    "adult-reveal-n-minus-1": {},
    "adult-reveal-precision": {},
    "adult-rr-audit": {"dataset.audit_size": 1000, "dataset.train_size": 2000},
    "adult-rr-fair-learning": {"dataset.audit_size": 1000, "dataset.train_size": 2000},
    "adult-rr-individual-reporting": {"dataset.audit_size": 1000, "dataset.train_size": 2000},
    "adult-rr-naive-post-processing": {"dataset.audit_size": 1000, "dataset.train_size": 2000},
    "adult-rr-observer": {"dataset.audit_size": 1000},
    "adult-rr-partial": {"dataset.audit_size": 1000, "dataset.train_size": 2000},
    "adult-rr-proxy": {"dataset.audit_size": 1000, "dataset.train_size": 2000},
    "adult-rr-race": {"dataset.audit_size": 1000, "dataset.train_size": 2000},
    "compas-cov-threshold": {"learner.hypotheses": 60},
    "crime-cov-threshold": {"learner.hypotheses": 60},
    "synthetic-rr-counter-example": {"dataset.audit_size": 2000, "dataset.train_size": 2000},
}


def test_every_catalog_scenario_is_scanned():
    """The campaign below scans exactly the catalog: a new scenario needs its small-size entry in SMALL."""
    assert sorted(SMALL) == _catalog(), f"add to SMALL: {sorted(set(_catalog()) - set(SMALL))}; " \
                                        f"drop from SMALL: {sorted(set(SMALL) - set(_catalog()))}"


@pytest.mark.reliability
@pytest.mark.parametrize("name", _catalog())
def test_no_catalog_transcript_holds_a(tmp_path, name):
    assert name in SMALL, f"catalog scenario {name!r} has no entry in SMALL: it would not be scanned"
    scenario = Scenario.from_toml(scenario_path(name)).with_values({"backend": "local", **SMALL[name]})
    result = run(scenario, tmp_path / name)
    # The referee's split, drawn as scenarios/world.py draws it (the first of six streams of the seed).
    data_rng = np.random.default_rng(np.random.SeedSequence(scenario.seed).spawn(6)[0])
    split = load_split(scenario.dataset, data_rng)
    envelopes = read_transcript(result.transcript_path, verify=False)
    exchanges = list(exchanges_from(envelopes))
    if scenario.protocol.name == "raw" and exchanges:  # the A used here is the run's A
        e = exchanges[0]
        np.testing.assert_allclose(e.values, evaluate(e.metric, e.predictions, split.a_audit, split.y_audit),
                                   atol=10.0 ** -(e.decimals or 12))
    protocol = get_protocol(scenario.protocol.name)
    # The scan is not vacuous: the protocol's own replies are on the wire.
    sent = {e.kind for e in envelopes if e.sender == "compliance"}
    replies = set(protocol.requests.values()) or {"metric-answer"}
    assert replies <= sent, f"{name}: no {sorted(replies - sent)} on the wire to scan"
    kinds = protocol.per_individual_kinds
    truths = [split.a_audit] + ([split.a_train] if "train" in protocol.holds else [])
    found = [f for a in truths for f in scan_transcript(result.transcript_path, a, per_individual_kinds=kinds)]
    if kinds:  # the declaration is what lifts the per-individual release: without it the canary flags it
        undeclared = [f for a in truths for f in scan_transcript(result.transcript_path, a)]
        assert {f.kind for f in undeclared} == set(kinds) and all(f.what == "per-individual" for f in undeclared)
    print(f"{name}: {result.metrics['messages']} messages scanned ({', '.join(sorted(sent))} from compliance), "
          f"per-individual kinds declared: {', '.join(kinds) or 'none'}, {len(found)} findings")
    assert found == [], [str(f) for f in found]
