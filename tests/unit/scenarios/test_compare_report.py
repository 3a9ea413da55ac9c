"""The comparison's pure parts: recommendations from a frontier table, audit tables reused only for the same plan."""

from __future__ import annotations

import pandas as pd

from parley.scenarios.compare.plan import plan
from parley.scenarios.compare.report import bound_gaps, equal_epsilon, recommendations, unseeded_notes
from parley.scenarios.compare.run import _cell_outcome, _saved_audits, code_digest, pareto
from parley.scenarios.compare.utility import UNSEEDED_SPREAD


def _front(rows):
    return pd.DataFrame([{"protocol": p, "name": p.split()[0], "flow": "metric-query", "utility": u, "unfairness": None,
                          "worst_curious-data-center": w} for p, u, w in rows])


def test_below_chance_ties_with_chance_and_utility_breaks_the_tie():
    front = _front([("raw", 0.0, 100.0), ("laplace ε=1", 0.3, 46.0), ("smooth-cauchy ε=1", 0.1, 49.6)])
    line, *others = recommendations(front)
    assert others == [f"**{t}**: no attack of the comparison applies under this threat model."
                      for t in ("passive-observer", "black-box-auxiliary")]
    # 46 % and 49.6 % both rank as chance; the smaller query error wins.
    assert "prefer **smooth-cauchy ε=1**" in line and "median query error 0.1" in line
    assert "Most exposed: raw (100 %)" in line


def test_a_clear_leakage_gap_beats_utility():
    front = _front([("raw", 0.0, 100.0), ("laplace ε=4", 0.05, 80.0), ("laplace ε=1", 0.3, 55.0)])
    line = recommendations(front)[0]
    assert "prefer **laplace ε=1**" in line and "against median query error 0 for raw" in line


def test_a_private_configuration_as_useful_as_raw_is_said_to_cost_nothing():
    """A median error of 0 (most answers exact) ties raw's: the sentence says so instead of 'at a cost'."""
    front = _front([("raw", 0.0, 100.0), ("dp-counts ε=4", 0.0, 50.7), ("dp-counts ε=1", 0.011, 50.5)])
    line = recommendations(front)[0]
    assert "prefer **dp-counts ε=4**" in line and "at a cost" not in line
    assert "no utility cost by this measure (median query error 0, as raw)" in line


def test_audit_table_is_reused_only_for_the_same_plan(tmp_path):
    p = plan("adult", quick=True)
    path = tmp_path / "audit.csv"
    rows = [{"protocol": label, "runs": p.audit_runs, "audit_size": p.audit_dataset["audit_size"], "epsilon_lower": 0.1,
             "code": code_digest()} for label in p.audit_rows] + [{"protocol": "fairness-certificate",
                                                                   "note": "not audited"}]
    pd.DataFrame(rows).to_csv(path, index=False)
    pd.testing.assert_frame_equal(_saved_audits(p, path), pd.read_csv(path))  # the saved table itself, as written
    pd.DataFrame([{**r, "code": "0" * 16} if "code" in r else r for r in rows]).to_csv(path, index=False)
    assert _saved_audits(p, path) is None  # measured by other code (a protocol changed since): audit again
    pd.DataFrame([{k: v for k, v in r.items() if k != "code"} for r in rows]).to_csv(path, index=False)
    assert _saved_audits(p, path) is None  # a table from before the code was recorded: audit again
    pd.DataFrame(rows).to_csv(path, index=False)
    pd.DataFrame([{**r, "runs": 7} if "runs" in r else r for r in rows]).to_csv(path, index=False)
    assert _saved_audits(p, path) is None  # other run counts: audit again
    pd.DataFrame(rows[1:]).to_csv(path, index=False)
    assert _saved_audits(p, path) is None  # a row missing: audit again


def _front_eps(rows):
    return pd.DataFrame([{"protocol": f"{n} ε={e:g}", "name": n, "family": n.split()[0], "flow": "metric-query",
                          "epsilon": e, "utility": u, "unfairness": None, "worst_leakage": w} for n, e, u, w in rows])


def test_pareto_keeps_the_undominated_configurations_of_each_exchange():
    front = _front_eps([("laplace", 1.0, 1.0, 50.0), ("dp-counts", 1.0, 0.01, 48.0), ("smooth-cauchy", 1.0, 0.2, 53.0),
                        ("raw", 1.0, 0.0, 100.0)])
    # 48 % ranks as chance: dp-counts dominates laplace (same rank, smaller error) and smooth-cauchy (both);
    # raw is more useful and leaks more: on the frontier too.
    assert pareto(front).tolist() == [False, True, False, True]
    front.loc[1, "utility"] = None  # unmeasured utility: not on the frontier, and dominates nobody
    assert pareto(front).tolist() == [True, False, True, True]


def test_equal_epsilon_lines_quote_the_ratio_from_the_numbers():
    # a variant of the best protocol (same family) is not "the next protocol"
    front = _front_eps([("laplace", 1.0, 0.354, 50.0), ("dp-counts", 1.0, 0.0138, 50.0),
                        ("dp-counts gaussian", 1.0, 0.02, 50.0), ("smooth-cauchy", 1.0, 0.0575, 52.0),
                        ("laplace", 4.0, 0.1, 50.0), ("dp-counts gaussian", 4.0, 0.02, 50.0)])
    front["on_frontier"] = pareto(front)
    lines = equal_epsilon(front)
    assert len(lines) == 2
    assert lines[1].startswith("ε = 4 (answering fairness-metric queries): **dp-counts gaussian ε=4** has median "
                               "query error 0.02, not on the frontier, 5 times smaller than the next protocol's best, "
                               "laplace ε=4 (0.1)")
    assert "**dp-counts ε=1** has median query error 0.0138, on the frontier" in lines[0]
    assert "4.17 times smaller than the next protocol's best, smooth-cauchy ε=1 (0.0575)" in lines[0]
    front.loc[front["protocol"] == "dp-counts gaussian ε=4", "utility"] = 0.0  # most answers exact: no ratio
    assert "median query error 0, not on the frontier, exact in most answers (median 0), against the next " \
           "protocol's best, laplace ε=4 (0.1)" in equal_epsilon(front)[1]


def test_a_cell_carries_the_bound_of_the_epsilon_its_counted_runs_spent_and_the_gap():
    """The bound is averaged over the runs whose leakage counts (a run that gave up is left out), gap = bound - leak."""
    part = pd.DataFrame([
        {"status": "ok", "leakage": 52.0, "leakage_bound": 73.0, "attacked": 10, "failure": None},
        {"status": "ok", "leakage": 58.0, "leakage_bound": 88.0, "attacked": 10, "failure": None},
        {"status": "error", "leakage": None, "leakage_bound": 99.0, "attacked": None, "failure": "AttackError: x"},
    ])
    out = _cell_outcome(part)
    assert (out["leakage_mean"], out["leakage_bound"], out["bound_gap"]) == (55.0, 80.5, 25.5)
    assert _cell_outcome(part.drop(columns="leakage_bound"))["leakage_bound"] is None  # no epsilon spent: no bound
    assert _cell_outcome(part.iloc[2:])["bound_gap"] is None  # nothing counted


def test_the_bound_table_puts_the_likelihood_attack_beside_the_strongest_one():
    long = pd.DataFrame([
        {"protocol": "raw", "attack": "double-query [curious-data-center]", "n": 3, "leakage_mean": 100.0,
         "leakage_bound": None, "bound_gap": None},
        {"protocol": "dp-counts ε=1", "attack": "likelihood [curious-data-center]", "n": 3, "leakage_mean": 52.0,
         "leakage_bound": 88.1, "bound_gap": 36.1},
        {"protocol": "dp-counts ε=1", "attack": "compressed-sensing [curious-data-center]", "n": 3,
         "leakage_mean": 54.0, "leakage_bound": 99.9, "bound_gap": 45.9},
        {"protocol": "laplace ε=4", "attack": "compressed-sensing [curious-data-center]", "n": 3, "leakage_mean": 51.0,
         "leakage_bound": 100.0, "bound_gap": 49.0},  # a bound of 100 % says nothing: not listed
    ])
    table = bound_gaps(long)
    assert table.to_dict("records") == [{
        "protocol": "dp-counts ε=1", "likelihood leakage": "52", "bound": "88.1", "gap (points)": "36.1",
        "strongest attack": "compressed-sensing [curious-data-center]", "its leakage": "54", "its bound": "99.9",
        "its gap (points)": "45.9"}]
    assert bound_gaps(long.drop(columns=["leakage_bound", "bound_gap"])).empty  # a table from before the bounds


def test_a_utility_the_seed_does_not_fix_is_stated_with_its_spread():
    """he's CKKS simulation draws SEAL's randomness from the OS: the report says so, and by how much, when he is in."""
    with_he = unseeded_notes(_front([("raw", 0.0, 100.0), ("he", 3.4e-5, 76.1)]))
    assert with_he == [f"`he`'s utility is not fixed by the seed: {UNSEEDED_SPREAD['he']}."]
    assert "significant digit" in with_he[0]
    assert unseeded_notes(_front([("raw", 0.0, 100.0), ("laplace ε=1", 0.3, 55.0)])) == []


def test_a_protocol_without_a_default_epsilon_joins_the_grid_at_each_epsilon(monkeypatch):
    """A DP protocol registered without rows of its own has no default epsilon: one row per grid epsilon."""
    import pydantic

    from parley.scenarios.compare import plan as plan_module
    from parley.scenarios.exchanges import Row
    from parley.scenarios.exchanges.base import EPSILONS

    class Needs(pydantic.BaseModel):
        epsilon: float

    class Has(pydantic.BaseModel):
        epsilon: float = 1.0

    stubs = {"needs-eps": type("P", (), {"Params": Needs}), "has-eps": type("P", (), {"Params": Has})}
    monkeypatch.setattr(plan_module.protocols, "get_protocol", stubs.__getitem__)
    rows = plan_module._at_epsilons(Row("needs-eps", {"name": "needs-eps"}, "metric-query"), 0)
    assert [(r.label, r.protocol) for r in rows] == [(f"needs-eps ε={e:g}", {"name": "needs-eps", "epsilon": e})
                                                     for e in EPSILONS[0]]
    assert len(plan_module._at_epsilons(Row("needs-eps", {"name": "needs-eps"}, "metric-query"), 1)) == 1
    kept = Row("has-eps", {"name": "has-eps"}, "metric-query")
    assert plan_module._at_epsilons(kept, 0) == [kept]  # a default epsilon: the row as the exchange gave it


def test_a_comparison_starts_its_ray_workers_at_its_own_niceness(monkeypatch):
    """Ray reads RAY_worker_niceness when it starts: set to the driver's for the comparison, restored after."""
    import os

    from parley.scenarios.compare.run import WORKER_NICENESS_ENV, workers_at_this_niceness

    monkeypatch.delenv(WORKER_NICENESS_ENV, raising=False)
    with workers_at_this_niceness(None):
        assert os.environ[WORKER_NICENESS_ENV] == str(os.nice(0))
    assert WORKER_NICENESS_ENV not in os.environ
    with workers_at_this_niceness("10.0.0.1:6379"):  # a cluster's workers keep theirs
        assert WORKER_NICENESS_ENV not in os.environ
    monkeypatch.setenv(WORKER_NICENESS_ENV, "7")  # the user's choice wins, and stays
    with workers_at_this_niceness(None):
        assert os.environ[WORKER_NICENESS_ENV] == "7"
    assert os.environ[WORKER_NICENESS_ENV] == "7"
