"""End to end, reduced sizes: the CorrelationRemover target with estimated fairness, the searched forest, and an
ACS extract (written by the test) run through the csv data set."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from parley.scenarios.acs import write_acs_csv
from parley.scenarios.catalog import scenario_path
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario

pytestmark = pytest.mark.system


def test_correlation_remover_with_estimated_fairness(tmp_path):
    scenario = Scenario.from_toml(scenario_path("adult-correction-remover"))
    assert scenario.learner is not None and scenario.learner.name == "correlation-remover"
    m = run(scenario.with_values({"backend": "local", "dataset.audit_size": 3000, "dataset.train_size": 4000,
                                  "attack.n_estimators": 30}), out=tmp_path).metrics
    assert m["attacked"] == 4000 and m["constraint_metric"] in ("sp", "pe", "eo", "eodds")
    # The estimate is the smallest unfairness measured on the attack set, whatever the certificate says.
    assert 0.0 <= m["constraint_tolerance"] <= 1.0 and m["solver_status"] in ("optimal", "declined")


def test_the_searched_forest_runs_end_to_end(tmp_path):
    scenario = Scenario.from_toml(scenario_path("adult-correction")).with_values({
        "backend": "local", "dataset.name": "german", "dataset.protected": "sex", "dataset.audit_size": 300,
        "attack.name": "reconstruction-correction-search", "attack.search_iter": 2})
    m = run(scenario, out=tmp_path).metrics
    assert set(m["attack_forest"]) >= {"max_depth", "n_estimators"} and 0 <= m["attack_forest_cv_score"] <= 1


def test_an_acs_extract_runs_through_the_csv_data_set(tmp_path):
    rng = np.random.default_rng(0)
    n = 1500
    race = rng.integers(1, 10, n)
    frame = pd.DataFrame({"AGEP": rng.integers(17, 80, n), "COW": rng.integers(1, 9, n),
                          "SCHL": rng.integers(1, 25, n), "MAR": rng.integers(1, 6, n),
                          "OCCP": rng.integers(10, 9900, n), "POBP": rng.integers(1, 500, n),
                          "RELP": rng.integers(0, 18, n), "WKHP": rng.integers(1, 80, n), "SEX": rng.integers(1, 3, n),
                          "RAC1P": race, "PWGTP": rng.integers(1, 200, n)})
    frame["PINCP"] = (20000 + 2500 * frame["SCHL"] + 15000 * (race == 1) + rng.normal(0, 20000, n)).round()
    source, out = tmp_path / "psam_p48.csv", tmp_path / "acs-income.csv"
    frame.to_csv(source, index=False)
    write_acs_csv(source, "income", out)
    scenario = Scenario.from_toml(scenario_path("adult-correction")).with_values({
        "backend": "local", "dataset": {"name": "csv", "path": str(out), "label": "y", "protected": "a",
                                        "privileged": 1, "audit_size": 500},
        "attack.n_estimators": 30})
    m = run(scenario, out=tmp_path / "run").metrics
    assert m["attack_set"] == 500 and m["attacked"] == len(pd.read_csv(out)) - 500
    assert m["certified"] is True and m["solver_status"] in ("optimal", "declined")
