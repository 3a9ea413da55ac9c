"""Canary: no transcript holds A, nor a per-individual release its protocol does not make.

Default run: the scanner on hand-made transcripts (it must find what is
planted). Campaign (``-m reliability``): every catalog scenario run in process,
its transcript scanned with the referee's A.
"""

from __future__ import annotations

import numpy as np
import pytest

from parties import wire
from parties.adversary import exchanges_from
from parties.confidential import outgoing
from parties.transcript import TranscriptWriter, read_transcript
from protocols import get_protocol
from protocols.metrics import evaluate
from scenarios.canary import scan_envelopes, scan_transcript
from scenarios.catalog import scenario_path
from scenarios.datasets import load_split
from scenarios.runner import run
from scenarios.spec import Scenario

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
    with TranscriptWriter(path, ring) as writer:
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


def _catalog() -> list[str]:
    from scenarios.catalog import __path__ as catalog_dirs
    from pathlib import Path

    return sorted(p.stem for p in Path(catalog_dirs[0]).glob("*.toml"))


@pytest.mark.reliability
@pytest.mark.parametrize("name", _catalog())
def test_no_catalog_transcript_holds_a(tmp_path, name):
    scenario = Scenario.from_toml(scenario_path(name)).with_values({"backend": "local"})
    result = run(scenario, tmp_path / name)
    # The referee's split, drawn as scenarios/world.py draws it (the first of six streams of the seed).
    data_rng = np.random.default_rng(np.random.SeedSequence(scenario.seed).spawn(6)[0])
    split = load_split(scenario.dataset, data_rng)
    exchanges = list(exchanges_from(read_transcript(result.transcript_path, verify=False)))
    if scenario.protocol.name == "raw" and exchanges:  # the A used here is the run's A
        e = exchanges[0]
        np.testing.assert_allclose(e.values, evaluate(e.metric, e.predictions, split.a_audit, split.y_audit),
                                   atol=10.0 ** -(e.decimals or 12))
    kinds = getattr(get_protocol(scenario.protocol.name), "per_individual_kinds", ())
    found = scan_transcript(result.transcript_path, split.a_audit, per_individual_kinds=kinds)
    if "train" in get_protocol(scenario.protocol.name).holds:
        found += scan_transcript(result.transcript_path, split.a_train, per_individual_kinds=kinds)
    print(f"{name}: {result.metrics['messages']} messages scanned, {len(found)} findings")
    assert found == [], [str(f) for f in found]
