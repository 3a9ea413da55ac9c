"""Studies on Ray: the smoke study, resuming, failing cells, a worker killed mid-study, the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from parley.protocols.errors import ConfigError
from parley.scenarios.cli import main
from parley.scenarios.study import Study
from parley.scenarios.study.engine import BAD_PARTY_HOSTS, run_study
from tests.benchmarks.bench_study_smoke import stable_rows
from tests.fixed_secrets import run_secrets
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


#: Rounded, Laplace, smooth-Cauchy and count-level DP answers, each with an attack that reads them: rows that
#: depend on every random stream of a run (the draw, the targets, the probes, the noise) and on the ledger.
ROBUST = {"b": 0.1, "max_queries": 20, "stop": "cap", "decoder": "robust", "n0_prior": 0.15}
FLOWS = Study.from_dict({"name": "where-parties-run", "scenario": {**SYNTHETIC, "name": "hosts"}, "seed": 3,
                         "grid": {"protocol,attack": [
                             [{"name": "raw", "decimals": 2}, {"name": "double-query", "targets": 6}],
                             [{"name": "laplace", "epsilon": 2.0}, {"name": "compressed-sensing", **ROBUST}],
                             [{"name": "smooth-cauchy", "epsilon": 1.0, "out_of_range": "raw"},
                              {"name": "compressed-sensing", **ROBUST}],
                             [{"name": "dp-counts", "epsilon": 1.0}, {"name": "likelihood"}]]}})


def test_parties_inside_the_workers_give_the_rows_of_party_actors(ray_session, tmp_path):
    """Two workers with the parties in their own processes (the default) against one worker with party actors:
    the same results.csv, timings and nodes aside; only the actors path starts party processes."""
    seen: dict[str, list[int]] = {"actors": [], "worker": []}
    before = set(job_actor_pids("PartyHost"))  # other tests' hosts may still be ending: only new ones count

    def party_processes(where: str) -> None:
        seen[where].append(len(set(job_actor_pids("PartyHost")) - before))

    baseline = run_study(FLOWS, tmp_path / "actors", workers=1, progress=False, party_hosts="actors",
                         on_row=lambda row: party_processes("actors"), secrets=run_secrets(5))
    before |= set(job_actor_pids("PartyHost", alive=False))
    done = run_study(FLOWS, tmp_path / "worker", workers=2, progress=False,
                     on_row=lambda row: party_processes("worker"), secrets=run_secrets(5))
    assert baseline.failed == 0 and done.failed == 0, done.results[["status", "failure"]]
    rows = stable_rows(tmp_path / "worker" / "results.csv")
    assert rows == stable_rows(tmp_path / "actors" / "results.csv")
    assert len({row["leakage"] for row in rows}) == len(rows)  # every row its own: equal tables by no accident
    assert sum(row["epsilon_spent"] is not None for row in rows) == 3  # the DP rows spent from their ledger
    assert min(seen["actors"]) >= 4 and seen["worker"] == [0] * len(FLOWS.cells())
    # Every worker said when it was ready and ran its rows after that.
    workers = done.timeline["workers"]
    assert sum(len(w["cells"]) for w in workers.values()) == len(FLOWS.cells())
    assert all(w["ready"] <= cell[2] for w in workers.values() for cell in w["cells"])
    for folder in (tmp_path / "worker" / "cells").iterdir():  # kept run folders hold the reports
        assert {"report.md", "report.html", "transcript.jsonl", "result.json"} <= {p.name for p in folder.iterdir()}


def test_unknown_party_hosts_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(ConfigError) as error:
        run_study(FLOWS, tmp_path, party_hosts="threads")
    assert str(error.value) == BAD_PARTY_HOSTS.format(allowed="'worker', 'actors'", value="threads")
    assert not (tmp_path / "results.csv").exists()


def test_failing_cell_records_its_error_and_the_study_goes_on(ray_session, tmp_path):
    # German Credit has 1,000 rows: 200 audit rows and 900 training rows is a valid spec that only the loaded
    # table refuses, when the cell runs.
    german = {**SYNTHETIC, "dataset": {"name": "german", "audit_size": 200}}
    study = Study.from_dict({"name": "fails", "scenario": german, "grid": {"dataset.train_size": [600, 900]}})
    done = run_study(study, tmp_path, workers=2, progress=False)
    rows = done.results.set_index("dataset.train_size")
    assert done.failed == 1 and rows.loc[600, "status"] == "ok" and rows.loc[600, "leakage"] == 100.0
    assert rows.loc[900, "status"] == "error"
    assert "train_size=900 = 1100 exceeds the 1000 rows available in german" in rows.loc[900, "failure"]
    assert "## Errors" in (tmp_path / "summary.md").read_text()
    again = run_study(study, tmp_path, workers=2, progress=False)  # failed rows are retried, ok rows kept
    assert again.ran == 1 and again.skipped == 1 and len(again.results) == 2
    reseeded = run_study(study.with_overrides(["seed=7", "grid.dataset.train_size=[600]"]), tmp_path, workers=2,
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
