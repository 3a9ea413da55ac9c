"""Studies on Ray: the smoke study, resuming, failing cells, a worker killed mid-study, the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from parley.scenarios.cli import main
from parley.scenarios.study import Study
from parley.scenarios.study.engine import run_study
from tests.reliability.faults import job_actor_pids

pytestmark = pytest.mark.ray

SYNTHETIC = {"dataset": {"name": "synthetic", "audit_size": 200, "minority": 30, "train_size": 2000},
             "protocol": {"name": "raw"}, "attack": {"name": "double-query", "targets": 4}}


def test_smoke_study_then_rerun_adds_nothing(ray_session, tmp_path, capsys):
    assert main(["study", "smoke", "--out", str(tmp_path), "--workers", "2"]) == 0
    results = pd.read_csv(tmp_path / "results.csv")
    assert len(results) == 12 and (results["status"] == "ok").all()
    assert set(results["attack.name"]) == {"single-query", "double-query"}
    exact = results[results["protocol.decimals"] >= 3]
    assert (exact["leakage"] == 100.0).all()  # 3 decimals keep every one-person step's sign at n <= 1000
    assert (tmp_path / "leakage.png").stat().st_size > 10_000 and (tmp_path / "summary.md").is_file()
    assert len(list((tmp_path / "cells").glob("*/transcript.jsonl"))) == 12
    capsys.readouterr()
    assert main(["study", "smoke", "--out", str(tmp_path), "--workers", "2"]) == 0
    assert "0 rows run, 12 already done" in capsys.readouterr().out
    assert len(pd.read_csv(tmp_path / "results.csv")) == 12


def test_failing_cell_records_its_error_and_the_study_goes_on(ray_session, tmp_path):
    study = Study.from_dict({"name": "fails", "scenario": SYNTHETIC, "grid": {"attack.targets": [4, 500]}})
    done = run_study(study, tmp_path, workers=2, progress=False)
    rows = done.results.set_index("attack.targets")
    assert done.failed == 1 and rows.loc[4, "status"] == "ok" and rows.loc[4, "leakage"] == 100.0
    assert rows.loc[500, "status"] == "error"
    assert "attack.targets must pick between 1 and n=200" in rows.loc[500, "failure"]
    assert "## Errors" in (tmp_path / "summary.md").read_text()
    again = run_study(study, tmp_path, workers=2, progress=False)  # failed rows are retried, ok rows kept
    assert again.ran == 1 and again.skipped == 1 and len(again.results) == 2
    reseeded = run_study(study.with_overrides(["seed=7", "grid.attack.targets=[4]"]), tmp_path, workers=2,
                         progress=False)  # another seed: new rows; the old ones move aside
    assert reseeded.ran == 1 and reseeded.skipped == 0 and len(reseeded.results) == 1
    assert len(pd.read_csv(tmp_path / "results-stale.csv")) == 2


def test_worker_killed_mid_study_is_replaced_and_its_cell_rerun(ray_session, tmp_path):
    study = Study.from_dict({"name": "kill", "scenario": SYNTHETIC,
                             "grid": {"attack.targets": [1, 2, 3, 4, 5, 6, 7, 8]}})
    killed: list[int] = []

    def kill_a_worker(row):
        if not killed:
            pids = job_actor_pids("StudyWorker")  # this job's workers only, never another session's
            assert pids, "no study worker process found"
            os.kill(pids[-1], signal.SIGKILL)
            killed.append(pids[-1])

    done = run_study(study, tmp_path, workers=2, progress=False, on_row=kill_a_worker)
    assert killed and len(done.results) == 8
    assert (done.results["status"] == "ok").all(), done.results[["status", "failure"]]
    assert done.results["attempts"].max() == 2  # the killed worker's cell ran again on a fresh worker


def test_two_node_cluster_spreads_cells(tmp_path):
    """A simulated two-node cluster (ray.cluster_utils.Cluster): each node runs cells."""
    script = textwrap.dedent(f"""
        import ray
        from ray.cluster_utils import Cluster
        from parley.scenarios.study import Study
        from parley.scenarios.study.engine import run_study
        cluster = Cluster(initialize_head=True, head_node_args={{"num_cpus": 1}})
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        study = Study.from_dict({{"name": "two-nodes", "scenario": {SYNTHETIC!r},
                                  "grid": {{"attack.targets": [1, 2, 3, 4, 5, 6]}}}})
        done = run_study(study, {str(tmp_path)!r}, workers=2, progress=False)
        print("NODES", done.results["node"].nunique(), "OK", int((done.results["status"] == "ok").sum()))
        ray.shutdown()
        cluster.shutdown()
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "NODES 2 OK 6" in proc.stdout
