"""``parley run`` and ``parley study`` on a real two-node Ray cluster whose nodes have no parley.

What an operator measured before: party actors that died with ``ModuleNotFoundError``, every
study row "worker died", ``InvalidAuthToken`` lines and a traceback under token authentication,
a mistyped address that hung for minutes, and run files written at the driver's path on
whichever node ran the party. Each test below plays one of those.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from parley.parties.ray.cluster import TOKEN_REFUSED, UNREACHABLE
from parley.parties.transcript import verify_transcript
from tests.cluster.conftest import TwoNodeCluster, _free_ports, _our_pids

pytestmark = [pytest.mark.cluster]

#: A scenario that spends budget (so the compliance party writes a ledger), on a small synthetic set.
SCENARIO = ["adult-rr-audit", "--set", "dataset.name=synthetic", "--set", "dataset.audit_size=200",
            "--set", "dataset.minority=40", "--set", "dataset.train_size=1000"]
STUDY = """\
name = "on-a-cluster"
scenario = "adult-rr-audit"
repeats = 1
seed = 3

[set]
"dataset.name" = "synthetic"
"dataset.audit_size" = 200
"dataset.minority" = 40
"dataset.train_size" = 1000

[grid]
"protocol.epsilon" = [0.5, 2.0]

[outputs]
metrics = ["leakage", "epsilon_spent"]
"""
#: A wrong address must fail well before Ray's own retries would (minutes); generous for a loaded machine.
FAIL_FAST_S = 60


def _head(message: str) -> str:
    """The fixed text of an error message constant, up to its first placeholder."""
    return "parley: error: " + message.split("{")[0]


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    """The command printed parley's lines only (no Ray log line, no traceback), one of them an error."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert all(line.startswith("parley: ") for line in lines), proc.stderr[-3000:]
    errors = [line for line in lines if line.startswith("parley: error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    return errors[0]


def _ledger_debits(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM debits").fetchone()[0])


def test_the_nodes_python_has_no_parley(two_node_cluster: TwoNodeCluster) -> None:
    """The control: the nodes' environment cannot import parley, and their workers run that environment."""
    proc = subprocess.run([str(two_node_cluster.python), "-c", "import parley"], capture_output=True, text=True,
                          cwd=two_node_cluster.driver_dir, env=two_node_cluster.env)
    assert proc.returncode != 0 and "No module named 'parley'" in proc.stderr
    proc = subprocess.run([str(two_node_cluster.python), "-c", "import ray, sklearn, fairlearn"],
                          capture_output=True, text=True, env=two_node_cluster.env)
    assert proc.returncode == 0, proc.stderr  # everything else is there
    raylets = [Path(f"/proc/{pid}/cmdline").read_bytes().decode() for pid in _raylet_pids(two_node_cluster)]
    assert len(raylets) == 2
    assert all(f"--python_worker_command={two_node_cluster.python}" in cmd for cmd in raylets)


def _raylet_pids(cluster: TwoNodeCluster) -> list[int]:
    pids = _our_pids([str(d) for d in cluster.temp_dirs])
    return [pid for pid in pids if Path(f"/proc/{pid}/comm").read_text().strip() == "raylet"]


def test_run_on_the_cluster_ships_parley_and_keeps_the_ledger_with_the_driver(two_node_cluster: TwoNodeCluster) -> None:
    out = two_node_cluster.driver_dir / "run"
    proc = two_node_cluster.parley("run", *SCENARIO, "--out", str(out), "--address", two_node_cluster.address)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "InvalidAuthToken" not in proc.stderr and "Traceback" not in proc.stderr
    record = json.loads((out / "result.json").read_text())
    assert record["metrics"]["epsilon_spent"] == pytest.approx(1.0)
    assert verify_transcript(out / "transcript.jsonl") == record["metrics"]["messages"]
    # The compliance party wrote its ledger where this driver reads it.
    assert record["ledger"]["file"] == "ledger.sqlite" and _ledger_debits(out / "ledger.sqlite") >= 1


def test_study_on_the_cluster_uses_both_nodes_and_the_driver_writes_every_cell(
        two_node_cluster: TwoNodeCluster) -> None:
    spec = two_node_cluster.driver_dir / "study.toml"
    spec.write_text(STUDY)
    out = two_node_cluster.driver_dir / "study"
    started = time.monotonic()
    proc = two_node_cluster.parley("study", str(spec), "--out", str(out), "--workers", "2",
                                   "--address", two_node_cluster.address)
    wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 2 and (results["status"] == "ok").all(), results[["status", "failure"]]
    # One CPU a node, two one-CPU workers: one worker, and its row, on each node.
    assert results["node"].nunique() == 2, results["node"]
    for row in results.itertuples():
        folder = out / "cells" / f"{row.cell}-r{row.repeat}"
        record = json.loads((folder / "result.json").read_text())
        assert record["metrics"]["epsilon_spent"] == pytest.approx(row.epsilon_spent)
        assert verify_transcript(folder / "transcript.jsonl") == record["metrics"]["messages"]
        assert _ledger_debits(folder / "ledger.sqlite") >= 1
    print(f"\nstudy on 2 nodes: {len(results)} rows, 2 workers, {wall:.1f} s (command wall time)")
    if not two_node_cluster.private_mount:  # then the worker node could have written the driver's paths itself
        pytest.skip("no mount namespace here (unshare): the cells' files were found, but not proven to travel")


def test_mistyped_address_fails_fast_in_one_line(two_node_cluster: TwoNodeCluster) -> None:
    """A port of the head nobody listens on (the other cases: test_address.py)."""
    address = f"127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    proc = two_node_cluster.parley("run", *SCENARIO, "--address", address, timeout=FAIL_FAST_S * 3)
    assert time.monotonic() - started < FAIL_FAST_S, f"{address}: took {time.monotonic() - started:.0f} s"
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert _one_error_line(proc) == "parley: error: " + UNREACHABLE.format(address=address,
                                                                          reason="Connection refused")


def test_refused_token_fails_in_one_line(two_node_cluster: TwoNodeCluster) -> None:
    env = {**two_node_cluster.env, "RAY_AUTH_TOKEN": "not-the-cluster-token"}
    proc = two_node_cluster.parley("study", "smoke", "--address", two_node_cluster.address, env=env,
                                   timeout=FAIL_FAST_S * 3)
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = _one_error_line(proc)
    assert line.startswith(_head(TOKEN_REFUSED)) and "RAY_AUTH_TOKEN variable" in line, line


def test_run_without_address_never_joins_the_running_cluster(two_node_cluster: TwoNodeCluster) -> None:
    """Even with RAY_ADDRESS naming the cluster, ``parley run`` without --address starts its own Ray."""
    count = "print(len(gcs.get_all_job_info(timeout=30)))"
    join = f"import ray; ray.init(address={two_node_cluster.address!r}, include_dashboard=False); ray.shutdown()"
    # The control: a driver that does join shows in the cluster's job table.
    before = int(two_node_cluster.gcs(count))
    proc = subprocess.run([str(two_node_cluster.python), "-c", join], env={**two_node_cluster.env,
                          "RAY_AUTH_MODE": "token"}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    joined = int(two_node_cluster.gcs(count))
    assert joined == before + 1
    env = {**two_node_cluster.env, "RAY_ADDRESS": two_node_cluster.address}
    proc = two_node_cluster.parley("run", *SCENARIO, "--out", str(two_node_cluster.driver_dir / "alone"), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(two_node_cluster.gcs(count)) == joined


def _closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    return _free_ports(1)[0]
