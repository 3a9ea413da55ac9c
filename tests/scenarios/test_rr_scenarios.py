"""End-to-end rr-release runs: the catalog scenarios on small Adult samples (in-process; one Ray run)."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from parley.parties.transcript import verify_transcript
from parley.scenarios.cli import main

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
    same = ["--set", "epsilon=0.5", "--secrets", str(tmp_path / "secrets.json")]  # one release, read two ways
    curious = _run(tmp_path / "c", "adult-rr-audit", *same)
    observer = _run(tmp_path / "o", "adult-rr-audit", *same, "--set", "threat_model=passive-observer")
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
    assert 0.0 <= m["two_step_positive_rate"] <= 1.0 and 0.0 <= m["two_step_p_spread"] <= 1.0


def test_two_step_predictor_is_constant_when_the_release_says_nothing(tmp_path):
    # At eps = 0.01 the debiased rates of LP (13) are noise (C ~ 1/eps), and the only derived predictor fair
    # under them ignores both Y-hat and Z: p[y_hat, z] all equal, here all 0 (everyone gets the majority label).
    m = _run(tmp_path, "adult-rr-fair-learning", "--set", "learner.max_iter=5", "--set", "epsilon=0.01")
    assert m["two_step_p_spread"] == 0.0 and m["two_step_positive_rate"] == 0.0
    assert m["two_step_disc"] == 0.0


@pytest.mark.ray
def test_audit_release_under_ray(ray_session, tmp_path):
    assert main(["run", "adult-rr-audit", "--set", "dataset.audit_size=600", "--set", "dataset.train_size=600",
                 "--out", str(tmp_path)]) == 0
    m = json.loads((tmp_path / "result.json").read_text())["metrics"]
    assert m["epsilon_spent"] == 1.0 and m["attacked"] == 600


def test_partial_reporting_learns_on_everyone_and_leaks_within_the_bound(tmp_path):
    m = _run(tmp_path, "adult-rr-partial", "--set", "dataset.audit_size=800", "--set", "learner.max_iter=3")
    assert m["epsilon_spent"] == 2.0 and m["queries"] == 2 and m["refusals"] == 0
    # About half of the 1,500 training rows report (binomial sd ~ 19).
    assert abs(m["reporters_train"] - 750) < 80
    for label in ("step1", "reporters_only", "unconstrained"):
        assert 0.0 <= m[f"{label}_disc"] <= 1.0 and 0.6 < m[f"{label}_accuracy"] <= 1.0
    assert "two_step_disc" not in m
    # Withheld entries are guessed without evidence, so leakage stays below the release's bound.
    assert m["leakage"] <= m["leakage_bound_release"] + _three_se(1.0, 1500)


def test_two_step_learner_refuses_a_release_with_withheld_entries(tmp_path, capsys):
    code = main(["run", "adult-rr-fair-learning", *SMALL, "--set", "protocol.report_probability=0.5",
                 "--set", "learner.max_iter=2", "--out", str(tmp_path)])
    assert code == 2
    assert "needs Z for every individual" in capsys.readouterr().err


def test_three_group_release_runs_audit_and_adversary(tmp_path):
    m = _run(tmp_path, "adult-rr-race")
    record = json.loads((tmp_path / "result.json").read_text())
    assert record["groups"] == {"a=0": "Black", "a=1": "White", "a=2": "Other"}
    assert m["epsilon_spent"] == 2.0 and m["queries"] == 1 and m["attacked"] == 1500
    pi = math.exp(2) / (2 + math.exp(2))
    assert m["leakage_bound_release"] == pytest.approx(100 * pi)
    # The balanced rule answers a_hat = z: three binomial recalls with success pi (groups ~9 %, 86 %, 5 %).
    se = 100 / 3 * math.sqrt(sum(pi * (1 - pi) / (1500 * share) for share in (0.09, 0.86, 0.05)))
    assert abs(m["leakage"] - 100 * pi) < 3.3 * se
    for notion in ("equalized_odds", "demographic_parity", "accuracy_parity", "predictive_rate_parity"):
        assert all(math.isfinite(m[f"audit_{notion}_{label}"]) for label in ("debiased", "naive", "true"))


def test_three_groups_with_partial_reporting_learner_end_to_end(tmp_path):
    m = _run(tmp_path, "adult-rr-race", "--set", "learner.name=partial-reporting", "--set", "learner.max_iter=3",
             "--set", "learner.baselines=false", "--set", "protocol.report_probability=0.7", "--set", "epsilon=3")
    assert m["epsilon_spent"] == 6.0 and m["queries"] == 2 and m["attack_target"] == "train"
    assert abs(m["reporters_train"] - 1050) < 90                        # binomial(1500, 0.7): sd ~ 18
    assert 0.0 <= m["step1_disc"] <= 1.0 and 0.6 < m["step1_accuracy"] <= 1.0
    assert "reporters_only_disc" not in m and "unconstrained_disc" not in m
