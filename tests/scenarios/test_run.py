"""End to end: the default scenario through Ray actors, its run folder, determinism, the CLI."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from parley.parties.attacks.query_leakage.targeted import TARGETS_OVER_AUDIT
from parley.parties.transcript import TranscriptFollower, iter_transcript, verify_transcript
from parley.protocols import PROTOCOLS
from parley.scenarios.catalog import DEFAULT_SCENARIO, scenario_path
from parley.scenarios.cli import main
from parley.scenarios.datasets import load_split
from parley.scenarios.run_parts import spawn_streams
from parley.scenarios.runner import VOLATILE, run
from parley.scenarios.spec import Scenario
from tests.fixed_secrets import run_secrets

# The tests over Ray are marked ray (the system tier); the three that need no Ray stay in the default tier.


def _stable(record: dict) -> dict:
    out = {k: v for k, v in record.items() if k not in VOLATILE}
    out["metrics"] = {k: v for k, v in record["metrics"].items() if k not in VOLATILE}
    return out


@pytest.fixture(scope="module")
def default_run(ray_session, tmp_path_factory):
    out = tmp_path_factory.mktemp("default")
    assert main(["run", "--out", str(out)]) == 0
    return out


@pytest.mark.ray
def test_default_run_reveals_every_target(default_run):
    record = json.loads((default_run / "result.json").read_text())
    m = record["metrics"]
    assert record["scenario"] == DEFAULT_SCENARIO and record["sizes"]["n_audit"] == 1000
    assert m["leakage"] == 100.0 and m["exact_recovery"] is True and m["attacked"] == 20
    assert m["queries"] == 21  # the base model plus one flipped model per target
    assert m["messages"] == 2 + 2 * 21  # the honest base-model query and answer, then the attack
    assert m["bytes"] > 0 and m["wall_s"] > 0 and m["avg_query_error"] == 0.0
    assert m["attack_N0"] + m["attack_N1"] == 1000
    assert m["observer_leakage"] == 100.0 and m["observer_revealed"] == 20  # the wire itself leaks
    assert (default_run / "report.md").read_text().startswith(f"# {DEFAULT_SCENARIO}")


@pytest.mark.ray
def test_default_transcript_verifies_until_a_signature_is_altered(default_run, capsys):
    path = default_run / "transcript.jsonl"
    assert verify_transcript(path) == 44
    assert main(["verify", str(path)]) == 0
    lines = path.read_text().splitlines()
    line = json.loads(lines[10])
    sig = line["record"]["signature"]
    line["record"]["signature"] = ("0" if sig[0] != "0" else "1") + sig[1:]
    lines[10] = json.dumps(line)
    tampered = default_run / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["verify", str(tampered)]) == 1
    assert "line 11" in capsys.readouterr().err


def _single_query_targets(run_dir) -> list[int]:
    """The audit-set index each single-query probe accepts (the honest base-model query first left out)."""
    queries = [e for e in iter_transcript(run_dir / "transcript.jsonl", verify=False) if e.kind == "metric-query"]
    return [int(np.flatnonzero(np.asarray(e.payload["predictions"])[0])[0]) for e in queries[1:]]


@pytest.mark.ray
def test_same_seed_same_result_and_backends_agree(ray_session, tmp_path):
    scenario = Scenario.from_toml(scenario_path("adult-raw-single-query")).with_values(
        {"dataset.audit_size": 400, "attack.targets": 12, "seed": 5})
    first = run(scenario, out=tmp_path / "a")
    second = run(scenario, out=tmp_path / "b")
    local = run(scenario.with_values({"backend": "local"}), out=tmp_path / "c")
    assert _stable(first.record) == _stable(second.record)
    assert first.record["versions"]["ray"]
    local_record = _stable(local.record)
    assert local_record.pop("spec")["backend"] == "local"
    ray_record = _stable(first.record)
    ray_record.pop("spec")
    assert local_record == ray_record
    other = run(scenario.with_values({"seed": 6, "backend": "local"}), out=tmp_path / "d")
    # Another seed draws another audit set (the split of its "data" stream), which the run used, and other targets.
    splits = {seed: load_split(scenario.dataset, spawn_streams(seed)["data"]) for seed in (5, 6)}
    assert not np.array_equal(splits[5].a_audit, splits[6].a_audit)  # other people (in another order)
    for seed, result in ((5, first), (6, other)):
        assert result.record["metrics"]["attack_N0"] == int((splits[seed].a_audit == 0).sum())
    assert _single_query_targets(tmp_path / "d") != _single_query_targets(tmp_path / "a")


@pytest.mark.ray
def test_result_api_for_scripts(ray_session, tmp_path):
    scenario = Scenario.from_dict({
        "name": "script", "backend": "local",
        "dataset": {"name": "synthetic", "audit_size": 200, "minority": 30, "train_size": 500},
        "protocol": {"name": "raw", "decimals": 6}, "attack": {"name": "single-query", "targets": 8},
    })
    result = run(scenario, out=tmp_path)
    assert result.metrics["leakage"] == 100.0 and result.metrics["attack_N0"] == 30
    row = result.to_pandas()
    assert row.loc[0, "scenario"] == "script" and row.loc[0, "leakage"] == 100.0
    assert result.transcript_path.is_file() and result.run_dir == tmp_path


@pytest.mark.ray
def test_passive_observer_of_honest_traffic_learns_nothing(ray_session, tmp_path):
    result = run(Scenario.from_toml(scenario_path("adult-observer-honest")), out=tmp_path)
    m = result.metrics
    assert m["attacked"] == 0 and m["leakage"] is None and m["queries"] == 0
    assert m["messages"] == 6 and {"base_sp", "base_eo", "base_pe"} <= set(m)


@pytest.mark.ray
@pytest.mark.parametrize(("argv", "message"), [
    (["run", "--set", "bogus=1"], "unknown key 'bogus'"),
    (["run", "no-such-scenario"], "no catalog scenario or file named 'no-such-scenario'"),
    (["run", "--set", "protocol.name=laplace-ish"],
     "unknown protocol 'laplace-ish'; known protocols: " + ", ".join(sorted(PROTOCOLS))),
    (["run", "--set", "attack.targets=5000"], TARGETS_OVER_AUDIT.format(got=5000, n=1000)),
])
def test_user_mistakes_print_one_line_and_exit_2(ray_session, tmp_path, capsys, argv, message):
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("parley: error: ") and message in err[-1]


def test_import_parley_loads_neither_ray_nor_pandas():
    # Which modules import Ray is an import contract (.ci/imports); contracts see every import, also those
    # inside parley's functions, so what `import parley` itself loads at run time is checked here.
    code = "import parley, sys; loaded = {'ray', 'pandas'} & set(sys.modules); assert not loaded, loaded"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_console_script_help():
    out = subprocess.run(["parley", "--help"], check=True, capture_output=True, text=True).stdout
    assert "run" in out and "verify" in out and "list" in out
    listing = subprocess.run(["parley", "list"], check=True, capture_output=True, text=True).stdout
    assert DEFAULT_SCENARIO in listing and "double-query" in listing and "raw" in listing


def test_a_run_without_reports_writes_the_same_result(tmp_path):
    """``reports=False`` (a study row whose folder is not kept) leaves out report.md and report.html, nothing else."""
    scenario = Scenario.from_dict({
        "name": "no-reports", "backend": "local", "seed": 4,
        "dataset": {"name": "synthetic", "audit_size": 200, "minority": 30, "train_size": 500},
        "protocol": {"name": "laplace", "epsilon": 2.0},
        "attack": {"name": "compressed-sensing", "b": 0.1, "max_queries": 10, "stop": "cap", "decoder": "robust",
                   "n0_prior": 0.15}})
    full = run(scenario, out=tmp_path / "full", secrets=run_secrets(4))  # the same noise in both
    bare = run(scenario, out=tmp_path / "bare", reports=False, secrets=run_secrets(4))
    assert {"report.md", "report.html"} <= {p.name for p in full.run_dir.iterdir()}
    assert {p.name for p in bare.run_dir.iterdir()} == {p.name for p in full.run_dir.iterdir()} - {
        "report.md", "report.html"}
    assert _stable(bare.record) == _stable(full.record)
    assert verify_transcript(bare.transcript_path) == bare.record["metrics"]["messages"]


def _exchanges(path) -> list[tuple]:
    """Each query (as sent, its id aside) with its answer's values, in the order answered; every signature checked."""
    asked, pairs = {}, []
    for envelope in iter_transcript(path, verify=True):
        if envelope.kind == "metric-query":
            asked[envelope.payload["query_id"]] = envelope.payload
        elif envelope.kind == "metric-answer":
            q = asked.pop(envelope.payload["query_id"])
            pairs.append((q["metric"], bool(q.get("keep")), q.get("edit_of") is not None,
                          *(np.asarray(q[key]).tobytes() for key in ("predictions", "indices", "values") if key in q),
                          np.asarray(envelope.payload["values"]).tobytes()))
    return pairs


@pytest.mark.ray
def test_the_precision_attack_over_ray_asks_in_bursts_and_agrees_with_in_process(ray_session, tmp_path, capsys,
                                                                                  monkeypatch):
    """Its blocks go on the wire in pipelined bursts (several signed queries before their answers), yet the
    queries, the answers and the result are those of the in-process run, and the transcript verifies; over Ray
    the report's verification checked lines while the run waited for its parties."""
    checked_before_the_end: list[int] = []
    finish = TranscriptFollower.finish

    def counted(self: TranscriptFollower) -> list:
        checked_before_the_end.append(len(self.envelopes))
        return finish(self)

    monkeypatch.setattr(TranscriptFollower, "finish", counted)
    scenario = Scenario.from_toml(scenario_path("adult-reveal-precision")).with_values({
        "dataset.name": "synthetic", "dataset.audit_size": 6000, "dataset.minority": 600, "dataset.train_size": 800})
    over_ray = run(scenario, out=tmp_path / "ray")
    local = run(scenario.with_values({"backend": "local"}), out=tmp_path / "local")
    messages = over_ray.metrics["messages"]
    assert 0 < checked_before_the_end[0] <= messages and checked_before_the_end[1] == 0  # in process nothing waits
    assert f"verified: {messages:,} messages" in (tmp_path / "ray" / "report.html").read_text()
    one_by_one = run(scenario.with_values({"backend": "local", "attack.ahead": 1}), out=tmp_path / "one")
    assert over_ray.metrics["exact_recovery"] and over_ray.metrics["queries"] > 150
    kinds = [e.kind for e in iter_transcript(tmp_path / "ray" / "transcript.jsonl", verify=False)]
    runs = [len(list(group)) for kind, group in itertools.groupby(kinds) if kind == "metric-query"]
    assert max(runs) == 64  # a burst: 64 signed queries on the wire before the first of their answers
    assert _exchanges(tmp_path / "ray" / "transcript.jsonl") == _exchanges(tmp_path / "local" / "transcript.jsonl") \
        == _exchanges(tmp_path / "one" / "transcript.jsonl")
    ray_record, local_record = _stable(over_ray.record), _stable(local.record)
    assert ray_record.pop("spec")["backend"] == "ray" and local_record.pop("spec")["backend"] == "local"
    assert ray_record == local_record
    assert {k: v for k, v in _stable(one_by_one.record)["metrics"].items()} == local_record["metrics"]
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "ray")]) == 0
