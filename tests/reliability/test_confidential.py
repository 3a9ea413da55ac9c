"""Confidentiality option: a passive observer that reads every message learns nothing but sizes and timing.

The same catalog scenario (a curious data center's double queries, overheard
by a differencing observer) runs twice, in the clear and with
``confidential = true``: the observer reveals every target from the clear
transcript and none from the sealed one, while the transcript still verifies
and the querier (who holds the keys) still gets its answers.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from parley.parties import wire
from parley.parties.adversary import Adversary
from parley.parties.attacks import AttackerView, get_attack
from parley.parties.compliance import Compliance
from parley.parties.confidential import SEALED, is_sealed
from parley.parties.network import LocalDeployment, Network
from parley.parties.transcript import TranscriptWriter, read_transcript, verify_transcript
from parley.protocols import get_protocol
from parley.scenarios.catalog import scenario_path
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario
from tests.fixed_secrets import party_secret

from .hostile import N, audit_set

TARGETS = 5


def _run(tmp_path, confidential: bool):
    scenario = Scenario.from_toml(scenario_path("adult-raw-double-query")).with_values(
        {"backend": "local", "confidential": confidential, "attack.targets": TARGETS, "dataset.audit_size": 400})
    return run(scenario, tmp_path / f"confidential-{confidential}")


def _overheard(tmp_path, confidential: bool):
    """A double-query attack through a real network and transcript; what a differencing observer makes of it."""
    ids = {name: wire.Identity.generate(name, name, kx=confidential) for name in ("compliance", "data-center")}
    ring = wire.Keyring()
    for identity in ids.values():
        ring.add(identity.key_entry())
    audit, rng = audit_set(), np.random.default_rng(0)
    deployment = LocalDeployment()
    deployment.add("compliance", Compliance, ids["compliance"], ring, audit, get_protocol("raw")(), ["data-center"],
                   party_secret(0))
    view = AttackerView(n=N, base_scores=rng.random(N), base_predictions=(rng.random(N) < .5).astype(np.int8),
                        y=audit.y)
    attack = get_attack("double-query")(get_attack("double-query").Params(targets=TARGETS), view, rng)
    deployment.add("data-center", Adversary, ids["data-center"], ring, attack, "compliance", "raw")
    path = tmp_path / f"t-{confidential}.jsonl"
    with TranscriptWriter(path, ring, ids) as transcript:
        network = Network(deployment, transcript)
        network.route("compliance", "compliance")
        network.route("data-center", "data-center")
        network.exchange(deployment.call("data-center", "start"))
    querier = deployment.call("data-center", "outcome")
    observer = get_attack("differencing")(get_attack("differencing").Params(), AttackerView(n=N), rng)
    seen = Adversary(None, ring, observer, "compliance", "raw").observe(read_transcript(path))
    return querier, seen, path, audit


@pytest.mark.parametrize("confidential", [False, True])
def test_sealing_blinds_the_observer_not_the_querier(tmp_path, confidential):
    querier, seen, path, audit = _overheard(tmp_path, confidential)
    np.testing.assert_array_equal(querier.a_hat, audit.a[querier.indices])  # the querier holds the keys
    assert verify_transcript(path) == 2 * (TARGETS + 1)
    if confidential:
        assert seen.indices.size == 0 and '"predictions"' not in path.read_text()
    else:
        assert seen.indices.size == TARGETS
        np.testing.assert_array_equal(seen.a_hat, audit.a[seen.indices])


@pytest.mark.reliability
def test_a_passive_observer_learns_nothing_from_sealed_payloads(tmp_path):
    clear, sealed = _run(tmp_path, False), _run(tmp_path, True)
    # In the clear the differencing observer finds each flipped pair and reveals every target.
    assert clear.metrics["observer_revealed"] == TARGETS and clear.metrics["observer_leakage"] == 100.0
    # Sealed: the same messages, the same attack by the querier (it holds the keys), nothing for the observer.
    assert sealed.metrics["messages"] == clear.metrics["messages"]
    assert sealed.metrics["leakage"] == clear.metrics["leakage"] == 100.0
    assert sealed.metrics["observer_revealed"] == 0
    # The transcript verifies on its own, and holds ciphertext only: no metric, prediction or value in the clear.
    assert verify_transcript(sealed.transcript_path) == sealed.metrics["messages"]
    envelopes = read_transcript(sealed.transcript_path)
    assert envelopes and all(is_sealed(e.payload) for e in envelopes)
    text = sealed.transcript_path.read_text()
    for word in ('"predictions"', '"values"', '"metric"', '"query_id"'):
        assert word not in text
    assert json.loads(text.splitlines()[0])["record"]["keys"]["compliance"]["kx_public"]
    assert SEALED in text
