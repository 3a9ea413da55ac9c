"""crime-cov-threshold end to end with every learner of Table I (in-process parties; system tier)."""

from __future__ import annotations

import pytest

from parley.scenarios.catalog import scenario_path
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario

SMALL = ["backend=local", "dataset.train_size=400", "dataset.audit_size=300", "learner.hypotheses=60",
         "attack.rounds=0"]


@pytest.mark.system  # eight small runs of the scenario, about half a minute
@pytest.mark.parametrize("learner", ["frr", "dfrr", "fkrr", "dfkrr", "fgr", "dfgr", "dfpca", "lfr"])
def test_every_table_i_learner_runs_on_crime(tmp_path, learner):
    scenario = Scenario.from_toml(scenario_path("crime-cov-threshold")).with_overrides(
        [*SMALL, f"learner.name={learner}"])
    m = run(scenario, out=tmp_path).metrics
    assert m["learner"] == learner and m["features"] == 99 and m["hypotheses"] == 60
    assert m["learner_access"] == ("accept-set" if learner.startswith("df") else "attribute")
    for key in ("statistical_parity", "normed_disparate", "error", "error_parity"):
        assert 0.0 <= m[key] <= 1.0, key
    assert m["error"] < 0.3  # 300 test communities, about 14 % above the cut: nothing is far worse than constant
