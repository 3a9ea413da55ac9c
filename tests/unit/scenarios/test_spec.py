"""Scenario specs: catalog files load, mistakes are named with the keys that are allowed."""

from __future__ import annotations

import pytest

from parley.protocols import PROTOCOLS
from parley.protocols.errors import ConfigError
from parley.scenarios.catalog import DEFAULT_SCENARIO, resolve_scenario, resolve_study, scenario_names, scenario_path
from parley.scenarios.spec import Scenario, parse_assignment

BASE = {"dataset": {"name": "synthetic", "audit_size": 100, "minority": 20}, "attack": {"name": "single-query"}}


@pytest.mark.parametrize("name", scenario_names())
def test_catalog_scenarios_validate_and_round_trip(name):
    scenario = Scenario.from_toml(scenario_path(name))
    assert scenario.name == name
    assert Scenario.from_dict(scenario.to_dict()) == scenario


def test_default_scenario_is_the_double_query():
    scenario = Scenario.from_toml(resolve_scenario(DEFAULT_SCENARIO))
    assert (scenario.dataset.name, scenario.dataset.protected, scenario.dataset.audit_size) == ("adult", "race", 1000)
    assert (scenario.protocol.name, scenario.attack.name, scenario.attack.params.targets) == ("raw", "double-query", 20)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"},
         "unknown key 'colour'; allowed keys: attack, audit_metrics, backend, budget, composition, confidential, "
         "dataset,"),
        ({"dataset": {**BASE["dataset"], "size": 3}},
         "unknown key 'dataset.size'; allowed keys: audit_size, minority, n_features, name, strength, "
         "train_size"),
        ({"protocol": {"name": "raw", "digits": 3}}, "unknown key 'protocol.digits'; allowed keys: decimals"),
        ({"attack": {"name": "single-query", "target": 3}},
         "unknown key 'attack.target'; allowed keys: batch, targets"),
        ({"model": {"estimator": "x.Y", "C": 1}}, "unknown key 'model.C'; allowed keys: estimator, params, threshold"),
        ({"protocol": {"name": "smoke-signals"}},
         "unknown protocol 'smoke-signals'; known protocols: " + ", ".join(sorted(PROTOCOLS))),
        ({"attack": {"name": "guess"}}, "unknown attack 'guess'; known attacks: abs-sp-partition, compressed-sensing,"),
        ({"attack": {"targets": 3}}, "attack needs a 'name'"),
        ({"dataset": {"name": "mnist"}}, "dataset.name must be one of adult, german, compas, synthetic, csv"),
        ({"protocol": {"name": "raw", "decimals": -1}},
         "protocol.decimals: Input should be greater than or equal to 0"),
        ({"seed": -3}, "seed: Input should be greater than or equal to 0"),
        ({"threat_model": "passive-observer"}, "attack 'single-query' works under curious-data-center"),
        ({"observer": {"name": "double-query"}}, "observer attack 'double-query' must be passive"),
        ({"audit_metrics": ["sp", "accuracy"]}, "audit_metrics: unknown metric 'accuracy'"),
        ({"dataset": "adult"}, "dataset must be a table"),
    ],
)
def test_mistakes_are_named(change, message):
    with pytest.raises(ConfigError) as exc:
        Scenario.from_dict({**BASE, **change})
    assert message in str(exc.value)


def test_missing_tables_are_named():
    with pytest.raises(ConfigError, match="missing key 'attack'"):
        Scenario.from_dict({"dataset": BASE["dataset"]})


def test_overrides_by_dotted_path():
    scenario = Scenario.from_dict(BASE).with_overrides(
        ["protocol.decimals=4", "dataset.audit_size=200", "attack.targets=[3, 14, 15]", "name=my run", "seed=9"])
    assert scenario.protocol.params.decimals == 4 and scenario.dataset.audit_size == 200
    assert scenario.attack.params.targets == [3, 14, 15] and scenario.name == "my run" and scenario.seed == 9
    with pytest.raises(ConfigError, match="unknown key 'protocol.precision'"):
        Scenario.from_dict(BASE).with_overrides(["protocol.precision=4"])
    with pytest.raises(ConfigError, match="cannot set 'seed.x'"):
        Scenario.from_dict(BASE).with_values({"seed.x": 1})


@pytest.mark.parametrize(("text", "expected"), [
    ("a=1", ("a", 1)), ("a.b=0.5", ("a.b", 0.5)), ("a=true", ("a", True)), ("a=adult", ("a", "adult")),
    ("a=[1,2]", ("a", [1, 2])), ("a = hello world ", ("a", "hello world")), ('a="x=y"', ("a", "x=y")),
])
def test_parse_assignment(text, expected):
    assert parse_assignment(text) == expected


@pytest.mark.parametrize("text", ["a", "=3", "a..b=1", ".a=1"])
def test_parse_assignment_rejects(text):
    with pytest.raises(ConfigError, match="--set expects key=value"):
        parse_assignment(text)


def test_files_and_names_resolve_with_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="no catalog scenario or file named 'nope'; catalog scenarios: "):
        resolve_scenario("nope")
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_scenario(str(tmp_path / "missing.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [unclosed")
    with pytest.raises(ConfigError, match="not valid TOML"):
        Scenario.from_toml(bad)


def test_switching_a_plugin_by_name_starts_its_table_afresh():
    scenario = Scenario.from_dict({**BASE, "attack": {"name": "single-query", "targets": 7, "batch": True}})
    switched = scenario.with_overrides(["attack.name=double-query"])
    assert switched.attack.name == "double-query" and switched.attack.params.targets == 20
    kept = scenario.with_overrides(["attack.name=single-query", "attack.targets=9"])
    assert kept.attack.params.targets == 9 and kept.attack.params.batch is True


def test_bad_estimator_is_caught_when_the_scenario_is_read():
    with pytest.raises(ConfigError, match=r"^model.estimator 'sklearn.svm.Nope' cannot be imported"):
        Scenario.from_dict({**BASE, "model": {"estimator": "sklearn.svm.Nope"}})
    with pytest.raises(ConfigError, match="must provide fit\\(\\) and predict_proba\\(\\)"):
        Scenario.from_dict({**BASE, "model": {"estimator": "sklearn.preprocessing.StandardScaler"}})


def test_relative_csv_path_is_read_from_the_scenario_folder(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "people.csv").write_text("x,label,group\n1,1,a\n2,0,b\n")
    toml = tmp_path / "sub" / "s.toml"
    toml.write_text('[dataset]\nname = "csv"\npath = "people.csv"\nlabel = "label"\nprotected = "group"\n'
                    'privileged = "a"\naudit_size = 2\n[attack]\nname = "single-query"\ntargets = 2\n')
    assert Scenario.from_toml(toml).dataset.path == str((tmp_path / "sub" / "people.csv").resolve())


@pytest.mark.parametrize("assignment, message", [
    ("protocol.decimals=true", "protocol.decimals: Input should be a valid integer (got True)"),
    ("dataset.audit_size=1e3", "dataset.audit_size: Input should be a valid integer (got 1000.0)"),
    ("attack.batch=yes", "attack.batch: Input should be a valid boolean (got 'yes')"),
    ("attack.targets=2.5", "attack.targets"),
])
def test_set_values_keep_their_toml_type(assignment, message):
    # pydantic's lax mode would run these as decimals=1, audit_size=1000 and batch=True.
    scenario = Scenario.from_toml(resolve_scenario("adult-raw-single-query"))
    with pytest.raises(ConfigError) as exc:
        scenario.with_overrides([assignment])
    assert message in str(exc.value)


def test_set_values_of_the_right_type_still_apply():
    scenario = Scenario.from_toml(resolve_scenario("adult-raw-single-query"))
    changed = scenario.with_overrides(["protocol.decimals=4", "attack.batch=true"])
    assert changed.protocol.params.decimals == 4 and changed.attack.params.batch is True


def test_a_folder_named_like_a_catalog_scenario_does_not_shadow_it(tmp_path, monkeypatch):
    # parley run writes runs/<name>/ and parley study writes studies/<name>/: running from there must work.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adult-raw-double-query").mkdir()
    (tmp_path / "smoke").mkdir()
    assert resolve_scenario("adult-raw-double-query") == scenario_path("adult-raw-double-query")
    assert resolve_study("smoke").name == "smoke.toml" and resolve_study("smoke").parent.name == "studies"
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_scenario("./adult-raw-double-query")  # a path, and that path is a folder


def test_a_csv_set_on_the_command_line_gets_its_own_name_and_an_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scenario = Scenario.from_toml(resolve_scenario("adult-raw-double-query"))
    changed = scenario.with_overrides(["dataset.name=csv", "dataset.path=data/my file.csv", "dataset.label=y",
                                       "dataset.protected=g", "dataset.privileged=1"])
    assert changed.name == "adult-raw-double-query-on-my-file"
    assert changed.dataset.path == str(tmp_path / "data" / "my file.csv")
    named = scenario.with_overrides(["name=mine", "dataset.name=csv", "dataset.path=x.csv", "dataset.label=y",
                                     "dataset.protected=g", "dataset.privileged=1"])
    assert named.name == "mine"
    assert named.with_overrides(["dataset.audit_size=500"]).name == "mine"  # same file: the name stays
