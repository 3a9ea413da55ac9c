"""Attribute-Conceal end to end: the budget spent, the ledger written, leakage beside its bound."""

from __future__ import annotations

import json
import sqlite3

import pytest

from parley.scenarios.cli import main

pytestmark = pytest.mark.ray


def test_adult_conceal_spends_at_most_epsilon_and_stays_near_chance(ray_session, tmp_path):
    assert main(["run", "adult-conceal", "--set", "epsilon=1", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "result.json").read_text())
    m = record["metrics"]
    assert m["epsilon_spent"] <= 1.0 and m["queries"] == 40 and m["budget_refusals"] == 0
    bound = m["leakage_bound"]
    assert bound == pytest.approx(100 * 2.718281828459045 / (1 + 2.718281828459045))
    # 100 individuals: leakage is a sample mean of balanced successes; allow 3 standard errors above the bound
    assert m["leakage"] <= bound + 3 * 100 * (0.25 / 100) ** 0.5
    with sqlite3.connect(tmp_path / "ledger.sqlite") as db:
        (total,) = db.execute("select sum(epsilon) from debits where querier = 'data-center'").fetchone()
    assert total == pytest.approx(m["epsilon_spent"])
    assert record["ledger"]["queriers"]["data-center"]["debits"] == 1
