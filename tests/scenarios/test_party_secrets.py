"""The seed is public: an adversary holding a published run folder cannot rebuild any party's secret from it.

Each test plays the attack on the randomness as it worked when the parties' noise and keys came from the
seed's streams (the compliance party's noise from ``spawn_streams(seed)["compliance"]``, the ``he`` queriers'
CKKS keys from two draws of the ``"flow"`` stream): read the seed from ``result.json``, regenerate, compare
with what the transcript shows. A positive control replays the same way from the run's real secrets, so
the harness is shown able to find a match when there is one.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import numpy as np
import pytest

from parley.parties.run_secrets import BAD_SECRETS_FILE, FRESH, RunSecrets, SecretsError
from parley.parties.transcript import read_transcript
from parley.protocols import get_protocol
from parley.protocols.base import AuditSet, MetricQuery
from parley.protocols.crypto.ckks import QuerierKeys, layout
from parley.scenarios.datasets import load_split
from parley.scenarios.run_parts import spawn_streams
from parley.scenarios.runner import SECRETS_IN_RUN_FOLDER, run
from parley.scenarios.spec import Scenario
from tests.fixed_secrets import run_secrets

LAPLACE = {"name": "seed-public-laplace", "backend": "local", "seed": 3,
           "dataset": {"name": "synthetic", "audit_size": 120, "minority": 30},
           "protocol": {"name": "laplace", "epsilon": 0.1},
           "attack": {"name": "compressed-sensing", "max_queries": 8, "stop": "cap", "decoder": "robust",
                      "n0_prior": 0.25}}
HE = {"name": "seed-public-he", "backend": "local", "seed": 0,
      "dataset": {"name": "synthetic", "audit_size": 60, "minority": 20},
      "protocol": {"name": "he", "decryptions": 64}, "attack": {"name": "linear", "design": "flip-one", "batch": 30}}


def _replayed_answers(run_dir: Path, rng: np.random.Generator) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(released, replayed) values of every answer: the transcript's queries answered again from ``rng``.

    The referee's replay of the compliance party: the true A of the seed's split (the sampler's noise
    does not depend on it, so an adversary's fake audit set with the same n and y gives the same noise),
    the queries as the transcript carries them, the protocol's own ``answer``.
    """
    record = json.loads((run_dir / "result.json").read_text())
    scenario = Scenario.from_dict(record["spec"])
    split = load_split(scenario.dataset, spawn_streams(record["seed"])["data"], None)
    audit = AuditSet(a=split.a_audit, y=split.y_audit)
    protocol = get_protocol(scenario.protocol.name)(scenario.protocol.params)
    kept: dict[str, np.ndarray] = {}
    released, replayed = [], []
    envelopes = read_transcript(run_dir / "transcript.jsonl")
    answers = {e.payload.get("query_id"): e.payload for e in envelopes if e.kind == "metric-answer"}
    for envelope in envelopes:
        if envelope.kind != "metric-query":
            continue
        query = MetricQuery.from_payload(envelope.payload, audit.n, kept)
        if envelope.payload.get("keep"):
            kept[query.query_id] = query.predictions[0]
        released.append(np.asarray(answers[query.query_id]["values"]))
        replayed.append(np.asarray(protocol.answer(query, audit, rng)["values"]))
    return released, replayed


def test_the_seed_in_result_json_does_not_give_the_dp_noise(tmp_path):
    """Replaying the sampler from the published seed's compliance stream no longer reproduces the released
    noise; replaying from the run's real secret does (so the replay is faithful)."""
    secrets = run_secrets(7)
    result = run(Scenario.from_dict(LAPLACE), out=tmp_path / "run", secrets=secrets)
    assert result.record["seed"] == 3 and set(result.record["secrets"]) == {"source", "fingerprint", "note"}
    released, from_seed = _replayed_answers(result.run_dir, spawn_streams(3)["compliance"])
    assert sum(r.size for r in released) >= result.metrics["queries"] > 0
    assert not any(np.array_equal(r, s) for r, s in zip(released, from_seed, strict=True))
    _, from_secret = _replayed_answers(result.run_dir, secrets.party("compliance").rng("noise"))
    assert all(np.array_equal(r, s) for r, s in zip(released, from_secret, strict=True))


def _public_keys_on_the_wire(run_dir: Path) -> list[bytes]:
    return [np.asarray(e.payload["public_key"]).tobytes() for e in read_transcript(run_dir / "transcript.jsonl")
            if e.kind == "he-query" and "public_key" in e.payload]


def test_the_seed_in_result_json_does_not_give_the_he_secret_key(tmp_path):
    """The queriers' CKKS keys regenerated from result.json's seed (two draws of the flow stream, as SEAL was
    seeded) match no public key on the wire; from the run's own secrets they match (positive control)."""
    secrets = run_secrets(8)
    result = run(Scenario.from_dict(HE), out=tmp_path / "run", secrets=secrets)
    on_wire = _public_keys_on_the_wire(result.run_dir)
    assert on_wire
    n = result.record["sizes"]["n_audit"]
    block = layout(n, 1).block
    seeds = [int(v) for v in spawn_streams(result.record["seed"])["flow"].integers(2**63, size=2)]
    from_seed = [QuerierKeys(block, np.random.default_rng(s)).public_context()["public_key"].tobytes() for s in seeds]
    assert not set(from_seed) & set(on_wire)
    from_secrets = {QuerierKeys(block, secrets.party(name).rng("he-keys")).public_context()["public_key"].tobytes()
                    for name in ("data-center", "adversary")}
    assert set(on_wire) <= from_secrets


@pytest.mark.fresh_secrets
def test_fresh_secrets_differ_between_runs_and_a_secrets_file_replays_them(tmp_path):
    """Without --secrets two runs of one seed put different he keys on the wire; with the same secrets
    file, byte-identical releases. The file is private (0600) and never copied into the run folder."""
    scenario = Scenario.from_dict(HE)
    first, second = (run(scenario, out=tmp_path / name) for name in ("a", "b"))
    assert first.record["secrets"]["source"] == FRESH
    assert set(_public_keys_on_the_wire(first.run_dir)).isdisjoint(_public_keys_on_the_wire(second.run_dir))

    file = tmp_path / "private" / "secrets.json"
    file.parent.mkdir()
    laplace = Scenario.from_dict(LAPLACE)
    one, two = (run(laplace, out=tmp_path / name, secrets=file) for name in ("c", "d"))
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    fingerprint = RunSecrets.from_file(file).fingerprint
    assert one.record["secrets"] == two.record["secrets"] == {
        "source": "file", "fingerprint": fingerprint, "note": "noise reproducible by whoever holds the secrets file"}
    answers = [[e.payload["values"] for e in read_transcript(r.transcript_path) if e.kind == "metric-answer"]
               for r in (one, two)]
    assert answers[0] and all(np.array_equal(a, b) for a, b in zip(*answers, strict=True))
    key = json.loads(file.read_text())["secret"]
    for folder in (one.run_dir, two.run_dir):
        for path in folder.rglob("*"):
            assert key not in path.read_bytes().decode("latin-1"), path


def test_a_secrets_file_inside_the_run_folder_or_not_one_is_refused(tmp_path):
    scenario = Scenario.from_dict(LAPLACE)
    with pytest.raises(SecretsError) as inside:
        run(scenario, out=tmp_path / "run", secrets=tmp_path / "run" / "secrets.json")
    assert str(inside.value) == SECRETS_IN_RUN_FOLDER.format(path=tmp_path / "run" / "secrets.json",
                                                             run_dir=tmp_path / "run")
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    with pytest.raises(SecretsError, match="not a parley secrets file") as wrong:
        run(scenario, out=tmp_path / "other", secrets=bad)
    assert str(wrong.value).startswith(BAD_SECRETS_FILE.split("{why}")[0].format(path=bad))
