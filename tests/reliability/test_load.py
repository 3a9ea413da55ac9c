"""Load: concurrent queriers with separate budgets against one compliance party.

Default run: 3 queriers x 40 queries in process (calls serialized as by an
actor). Campaign (``python -m pytest -m reliability -s
tests/reliability/test_load.py``): 8 queriers x 1,000 queries against the
compliance party as a Ray actor; prints the throughput.
"""

from __future__ import annotations

import json

import pytest

from .hostile import audit_set
from .load import check, run_load


def test_load_small_in_process(tmp_path):
    result = run_load(tmp_path / "ledger.sqlite", queriers=3, queries=40, quota=10, retry_every=4, backend="local",
                      audit=audit_set())
    check(result)
    assert sum(result["quotas"].values()) == len(result["debits"]) == 60


@pytest.mark.reliability
def test_load_eight_queriers_on_a_ray_actor(tmp_path, ray_session):
    result = run_load(tmp_path / "ledger.sqlite", queriers=8, queries=1000, quota=100, retry_every=10, backend="ray")
    check(result)
    answered = sum(r["counts"].get("metric-answer", 0) for r in result["queriers"].values())
    refused = sum(r["counts"].get("budget-exceeded", 0) for r in result["queriers"].values())
    print(json.dumps({"queriers": 8, "queries_each": 1000, "messages": result["messages"], "answered": answered,
                      "budget_refused": refused, "retries_replayed": result["stats"]["answers_replayed"],
                      "debits": len(result["debits"]), "ledger_epsilon": sum(result["totals"].values()),
                      "wall_s": round(result["wall_s"], 2), "throughput_msgs_per_s": round(result["throughput"], 1)}))
    assert answered == 3600 and refused == 4400
