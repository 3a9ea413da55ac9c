"""The default scenario end to end in process: the default tier's twin of test_run.py's runs over Ray.

README.md quotes what ``parley run`` prints for the default scenario; test_run.py checks that run with
the parties as Ray actors (system tier). These run the same scenarios with the parties in this
process (``--set backend=local``): the same signed wire, transcript, result and report.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from parley.parties.transcript import verify_transcript
from parley.scenarios.catalog import DEFAULT_SCENARIO, scenario_path
from parley.scenarios.cli import main
from parley.scenarios.datasets import load_split
from parley.scenarios.run_parts import spawn_streams
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario
from tests.scenarios.test_run import _single_query_targets, _stable


@pytest.fixture(scope="module")
def default_local(tmp_path_factory):
    out = tmp_path_factory.mktemp("default-local")
    assert main(["run", "--set", "backend=local", "--out", str(out)]) == 0
    return out


def test_default_scenario_in_process_reveals_every_target(default_local):
    record = json.loads((default_local / "result.json").read_text())
    m = record["metrics"]
    assert record["scenario"] == DEFAULT_SCENARIO and record["spec"]["backend"] == "local"
    assert record["sizes"]["n_audit"] == 1000
    assert m["leakage"] == 100.0 and m["exact_recovery"] is True and m["attacked"] == 20
    assert m["queries"] == 21  # the base model plus one flipped model per target
    assert m["messages"] == 2 + 2 * 21  # the honest base-model query and answer, then the attack
    assert m["avg_query_error"] == 0.0 and m["attack_N0"] + m["attack_N1"] == 1000
    assert m["observer_leakage"] == 100.0 and m["observer_revealed"] == 20  # the wire itself leaks
    assert (default_local / "report.md").read_text().startswith(f"# {DEFAULT_SCENARIO}")


def test_default_transcript_in_process_verifies_until_a_signature_is_altered(default_local, capsys):
    path = default_local / "transcript.jsonl"
    assert verify_transcript(path) == 44
    assert main(["verify", str(default_local)]) == 0
    lines = path.read_text().splitlines()
    line = json.loads(lines[10])
    sig = line["record"]["signature"]
    line["record"]["signature"] = ("0" if sig[0] != "0" else "1") + sig[1:]
    lines[10] = json.dumps(line)
    tampered = default_local / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["verify", str(tampered)]) == 1
    assert "line 11" in capsys.readouterr().err


def test_same_seed_same_result_and_another_seed_draws_another_audit_set_and_targets(tmp_path):
    scenario = Scenario.from_toml(scenario_path("adult-raw-single-query")).with_values(
        {"dataset.audit_size": 400, "dataset.train_size": 2000, "attack.targets": 12, "seed": 5, "backend": "local"})
    first = run(scenario, out=tmp_path / "a")
    second = run(scenario, out=tmp_path / "b")
    assert _stable(first.record) == _stable(second.record)
    assert _single_query_targets(tmp_path / "a") == _single_query_targets(tmp_path / "b")
    other = run(scenario.with_values({"seed": 6}), out=tmp_path / "d")
    # Another seed draws another audit set (the split of its "data" stream), which the run used, and other targets.
    splits = {seed: load_split(scenario.dataset, spawn_streams(seed)["data"]) for seed in (5, 6)}
    assert not np.array_equal(splits[5].a_audit, splits[6].a_audit)  # other people (in another order)
    for seed, result in ((5, first), (6, other)):
        assert result.record["metrics"]["attack_N0"] == int((splits[seed].a_audit == 0).sum())
    assert _single_query_targets(tmp_path / "d") != _single_query_targets(tmp_path / "a")
