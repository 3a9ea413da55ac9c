"""Study specs: grids, seeds, validation up front, overrides, results bookkeeping, summaries and plots."""

from __future__ import annotations

import pandas as pd
import pytest

from parley.protocols.errors import ConfigError
from parley.scenarios.catalog import study_names
from parley.scenarios.study.plan import Study, cell_id, load_results, repeat_seed, save_results
from parley.scenarios.study.report import pivot, summarise, write_outputs

BASE = {"dataset": {"name": "synthetic", "audit_size": 100, "minority": 20, "train_size": 200},
        "attack": {"name": "single-query", "targets": 3}, "backend": "local"}


def _study(**changes) -> Study:
    return Study.from_dict({"name": "t", "scenario": BASE, "repeats": 2, "seed": 4,
                            "grid": {"protocol": {"decimals": [2, 6]}, "attack.targets": [3, 5, 7]}, **changes})


@pytest.mark.parametrize("name", study_names())
def test_catalog_studies_validate(name):
    study = Study.load(name)
    assert len(study.cells()) == len(study.assignments()) * study.repeats


def test_grid_is_the_cartesian_product_with_nested_or_dotted_keys():
    study = _study()
    assert list(study.grid) == ["protocol.decimals", "attack.targets"]
    assert study.assignments()[:2] == [{"protocol.decimals": 2, "attack.targets": 3},
                                       {"protocol.decimals": 2, "attack.targets": 5}]
    cells = study.cells()
    assert len(cells) == 2 * 3 * 2 and len({c.key for c in cells}) == 12
    assert cells[0].scenario["protocol"]["decimals"] == 2 and cells[0].scenario["attack"]["targets"] == 3


def test_seeds_are_common_across_cells_and_differ_between_repeats():
    cells = _study().cells()
    seeds = {(c.repeat, c.seed) for c in cells}
    assert seeds == {(0, repeat_seed(4, 0)), (1, repeat_seed(4, 1))} and repeat_seed(4, 0) != repeat_seed(4, 1)
    assert all(c.scenario["seed"] == c.seed for c in cells)
    assert repeat_seed(5, 0) != repeat_seed(4, 0)


def test_cell_ids_are_stable_and_follow_the_whole_scenario():
    a, b = {"x": 1, "y": "z", "seed": 1}, {"y": "z", "x": 1, "seed": 2}
    assert cell_id(a) == cell_id(b) and cell_id(a) != cell_id({"x": 2, "y": "z"})
    assert _study().cell_ids() == _study().cell_ids()
    assert set(_study().cell_ids()).isdisjoint(_study(set={"dataset.minority": 10}).cell_ids())


def test_fixed_values_survive_a_grid_change_of_plugin_name():
    study = _study(set={"attack.targets": 9}, grid={"attack.name": ["single-query", "double-query"]})
    assert {c.scenario["attack"]["targets"] for c in study.cells()} == {9}


@pytest.mark.parametrize(("changes", "message"), [
    ({"grid": {"attack.targets": []}}, "grid axis 'attack.targets' needs a non-empty list"),
    ({"grid": {"protocol.digits": [1]}}, "unknown key 'protocol.digits'"),
    ({"grid": {"attack.batch": ["sometimes"]}}, "grid cell {'attack.batch': 'sometimes'} is not a valid scenario"),
    ({"repeats": 0}, "repeats: Input should be greater than or equal to 1"),
    ({"colour": "red"}, "unknown key 'colour'; allowed keys: description, grid, max_attempts, name, outputs,"),
    ({"outputs": {"tables": [{"rows": "attack.targets", "value": "leakage", "colour": "c"}]}},
     "unknown key 'outputs.tables.0.colour'; allowed keys: columns, rows, title, value, where"),
    ({"outputs": {"metrics": ["leakage"],
                  "tables": [{"rows": "attack.targets", "value": "leakage", "where": {"attack.decoder": "l1"}}]}},
     "outputs table names 'attack.decoder', which is neither a grid axis"),
    ({"outputs": {"metrics": ["leakage"], "plots": [{"file": "a.png", "x": "attack.targets", "y": "queries"}]}},
     "outputs plot a.png names 'queries', which is neither a grid axis"),
    ({"outputs": {"plots": [{"file": "../a.png", "x": "a", "y": "b"}]}}, "outputs.plots.0.file"),
    ({"scenario": "no-such-scenario"}, "no catalog scenario or file named 'no-such-scenario'"),
])
def test_mistakes_fail_before_anything_runs(changes, message):
    with pytest.raises(ConfigError, match=None) as exc:
        _study(**changes)
    assert message in str(exc.value)


def test_overrides_reach_study_fields_grid_and_base():
    study = _study().with_overrides(["repeats=3", "grid.attack.targets=[4]", "dataset.minority=10", "seed=9",
                                      "outputs.metrics=['leakage']"])
    assert study.outputs.metrics == ("leakage",)
    assert study.repeats == 3 and study.grid["attack.targets"] == [4] and study.seed == 9
    assert study.set == {"dataset.minority": 10}
    assert all(c.scenario["dataset"]["minority"] == 10 for c in study.cells())


def _frame(study: Study) -> pd.DataFrame:
    rows = []
    for c in study.cells():
        rows.append({"cell": c.cell, "repeat": c.repeat, "seed": c.seed, "status": "ok", "failure": "", **c.assignment,
                     "leakage": 50.0 + c.assignment["attack.targets"] + 10 * c.repeat, "queries": 3})
    rows[0].update(status="error", failure="ConfigError: boom", leakage=None)
    return pd.DataFrame(rows)


def test_results_round_trip_and_summary(tmp_path):
    study = _study(outputs={"metrics": ["leakage", "queries"],
                            "tables": [{"rows": "attack.targets", "columns": "protocol.decimals", "value": "leakage"}],
                            "plots": [{"file": "l.png", "x": "attack.targets", "y": "leakage",
                                       "colour": "protocol.decimals"}]})
    frame = _frame(study)
    save_results(frame, tmp_path / "results.csv")
    again = load_results(tmp_path / "results.csv")
    assert len(again) == 12 and (again["status"] == "error").sum() == 1
    assert again.loc[0, "failure"] == "ConfigError: boom"
    summary = summarise(study, again)
    assert list(summary["attack.targets"]) == [3, 5, 7, 3, 5, 7]  # grid order, not completion order
    assert summary.loc[0, "n"] == 1 and summary.loc[1, "leakage"] == "60 ± 7.1"  # (55, 65): mean 60, sd 7.07
    table = pivot(again, study.outputs.tables[0])
    assert table.loc[5, 6] == "60 ± 7.1"
    path = write_outputs(study, again, tmp_path)
    text = path.read_text()
    assert "## Errors" in text and "boom" in text and "![l.png](l.png)" in text
    assert (tmp_path / "l.png").stat().st_size > 5000
    assert load_results(tmp_path / "missing.csv").empty


def test_summary_pairs_each_cell_with_its_own_values_when_grid_points_coincide():
    study = _study(grid={"attack.targets": [3, 5], "seed": [1, 2]})  # the seed is not part of a cell's id
    assert len(study.assignments()) == 4 and len(study.cell_ids()) == 2
    summary = summarise(study, _frame(study))
    assert list(summary["attack.targets"]) == [3, 5] and list(summary["n"]) == [3, 4]


def test_linked_axes_vary_fields_together():
    study = _study(grid={"dataset.audit_size,attack.targets": [[100, 3], [150, 9]], "protocol.decimals": [2, 6]})
    assert study.fields() == ["dataset.audit_size", "attack.targets", "protocol.decimals"]
    assert study.assignments()[:2] == [{"dataset.audit_size": 100, "attack.targets": 3, "protocol.decimals": 2},
                                       {"dataset.audit_size": 100, "attack.targets": 3, "protocol.decimals": 6}]
    assert len(study.cells()) == 2 * 2 * 2
    with pytest.raises(ConfigError, match="links 2 fields: each value must be a list of 2 values"):
        _study(grid={"dataset.audit_size,attack.targets": [[100, 3], [150]]})


def test_where_selects_the_rows_of_a_table_and_a_plot(tmp_path):
    study = _study(outputs={"metrics": ["leakage"],
                            "tables": [{"rows": "attack.targets", "value": "leakage",
                                        "where": {"protocol.decimals": 6}}],
                            "plots": [{"file": "w.png", "x": "attack.targets", "y": "leakage",
                                       "where": {"protocol.decimals": 2}}]})
    frame = _frame(study)
    frame["leakage"] = frame["leakage"] + frame["protocol.decimals"]  # tell the two halves apart
    save_results(frame, tmp_path / "results.csv")
    again = load_results(tmp_path / "results.csv")
    table = pivot(again, study.outputs.tables[0])
    # decimals = 6 only: targets 3 -> (59, 69) and mean 64, never the decimals = 2 rows (55, 65)
    assert list(table.index) == [3, 5, 7] and table.loc[3, "leakage"] == "64 ± 7.1"
    write_outputs(study, again, tmp_path)
    assert (tmp_path / "w.png").stat().st_size > 5000


def test_a_study_whose_every_row_failed_still_writes_its_summary(tmp_path):
    # The rows of a failed cell carry no metric columns; the summary must say so, not raise KeyError.
    from parley.scenarios.study.report import NOTHING_FINISHED, write_outputs

    study = Study.load("smoke")
    rows = [{**assignment, "cell": cid, "repeat": 0, "seed": 0, "status": "error", "failure": "bug: boom",
             "attempts": 1, "node": "n", "cell_wall_s": 0.1}
            for assignment, cid in zip(study.assignments(), study.cell_ids(), strict=True)]
    summary = write_outputs(study, pd.DataFrame(rows), tmp_path)
    text = summary.read_text()
    assert NOTHING_FINISHED in text and "0 rows ok, 12 with errors" in text
    assert text.count("bug: boom") == 12
    assert not list(tmp_path.glob("*.png"))  # no plot is drawn from nothing
