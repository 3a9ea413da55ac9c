"""End-to-end rr-release runs: the catalog scenarios on small Adult samples (in-process; one Ray run)."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from parties.transcript import verify_transcript
from scenarios.cli import main

SMALL = ["--set", "backend=local", "--set", "dataset.audit_size=1500", "--set", "dataset.train_size=1500"]


def _run(tmp_path, name, *extra):
    assert main(["run", name, *SMALL, *extra, "--out", str(tmp_path)]) == 0
    return json.loads((tmp_path / "result.json").read_text())["metrics"]


def _three_se(eps, n, share=0.33):
    """Three standard errors of a balanced accuracy whose class recalls are binomial with success pi."""
    pi = math.exp(eps) / (1 + math.exp(eps))
    return 300 * 0.5 * math.sqrt(pi * (1 - pi) / (n * share) + pi * (1 - pi) / (n * (1 - share)))


def test_audit_release_is_charged_once_and_leaks_within_the_bound(tmp_path):
    m = _run(tmp_path, "adult-rr-audit")
    assert m["epsilon_spent"] == 1.0 and m["messages"] == 2 and m["refusals"] == 0
    assert m["leakage_bound"] == pytest.approx(100 * math.e / (1 + math.e))
    assert m["leakage"] <= m["leakage_bound"] + _three_se(1.0, 1500)
    for notion in ("equalized_odds", "demographic_parity", "accuracy_parity", "predictive_rate_parity"):
        assert {f"audit_{notion}_debiased", f"audit_{notion}_naive", f"audit_{notion}_true"} <= set(m)
    with sqlite3.connect(tmp_path / "ledger.sqlite") as db:
        assert db.execute("select count(*), sum(epsilon) from debits").fetchone() == (1, 1.0)
    verify_transcript(tmp_path / "transcript.jsonl")


def test_passive_observer_reads_the_same_release_off_the_wire(tmp_path):
    curious = _run(tmp_path / "c", "adult-rr-audit", "--set", "epsilon=0.5")
    observer = _run(tmp_path / "o", "adult-rr-audit", "--set", "epsilon=0.5", "--set", "threat_model=passive-observer")
    assert observer["leakage"] == curious["leakage"] and observer["attacked"] == 1500


def test_auxiliary_features_leak_beyond_what_the_release_is_bounded_by(tmp_path):
    m = _run(tmp_path, "adult-rr-audit", "--set", "epsilon=0.1", "--set", "threat_model=black-box-auxiliary",
             "--set", "attack.auxiliary=1000")
    # Sex is largely readable from Adult's features (relationship: husband / wife): the eps-LDP bound caps
    # what Z adds, not what X tells. The Bayes rule combining both does at least as well as X alone.
    assert m["leakage_features_only"] > m["leakage_bound"] + 10
    assert m["leakage"] >= m["leakage_features_only"] - 2


def test_fair_learning_reports_both_predictors_and_two_releases(tmp_path):
    m = _run(tmp_path, "adult-rr-fair-learning", "--set", "dataset.audit_size=800", "--set", "learner.max_iter=5",
             "--set", "epsilon=2")
    assert m["epsilon_spent"] == 4.0 and m["queries"] == 2 and m["attack_target"] == "train"
    for key in ("step1_disc", "two_step_disc"):
        assert 0.0 <= m[key] <= 1.0
    for key in ("step1_accuracy", "two_step_accuracy"):
        assert 0.6 < m[key] <= 1.0
    assert m["leakage"] <= 100 * math.exp(2) / (1 + math.exp(2)) + _three_se(2.0, 1500)


@pytest.mark.ray
def test_audit_release_under_ray(ray_session, tmp_path):
    assert main(["run", "adult-rr-audit", "--set", "dataset.audit_size=600", "--set", "dataset.train_size=600",
                 "--out", str(tmp_path)]) == 0
    m = json.loads((tmp_path / "result.json").read_text())["metrics"]
    assert m["epsilon_spent"] == 1.0 and m["attacked"] == 600
