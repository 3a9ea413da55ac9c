"""Where a page lists the catalog (scenarios, studies, protocols, attacks, message kinds), the list is the catalog's."""

from __future__ import annotations

import re
import typing

from parley.parties.attacks import ATTACKS
from parley.parties.encodings import role_sends
from parley.protocols import PROTOCOLS
from parley.scenarios.catalog import scenario_names, study_names
from tests.docs.console import REPO

#: What each role may send, as the registered protocols and encodings declare it.
ROLES = role_sends()

SCENARIOS_MD = (REPO / "docs" / "scenarios.md").read_text(encoding="utf-8")
CONCEPTS_MD = (REPO / "docs" / "concepts.md").read_text(encoding="utf-8")


def _section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _first_column(section: str) -> set[str]:
    """The names in backticks in the first column of a section's table rows."""
    return set(re.findall(r"^\| `([\w-]+)`", section, re.M))


def test_scenarios_page_names_every_catalog_scenario_and_study() -> None:
    scenarios, studies = _section(SCENARIOS_MD, "The catalog").split("The catalog studies", 1)
    named = set(re.findall(r"`((?:adult|compas|crime|german|synthetic)-[\w-]+)`", scenarios))
    assert named == set(scenario_names()), f"docs/scenarios.md names {sorted(named ^ set(scenario_names()))} wrongly"
    assert set(re.findall(r"`([\w-]+)`", studies)) == set(study_names())


def test_scenarios_page_gives_every_value_of_an_attack_choice() -> None:
    """Each `key` row of the attack table that is a choice lists every value the attack's parameters accept."""
    table = _section(SCENARIOS_MD, "[attack] and [observer]")
    attacks: list[str] = []
    checked = 0
    for row in re.findall(r"^\|(.*)\|$", table, re.M)[2:]:
        cells = [cell.strip() for cell in row.split("|")]
        if cells[0]:
            attacks = re.findall(r"`([\w-]+)`", cells[0])
        for key in re.findall(r"`(\w+)`", cells[1]):
            for name in attacks:
                field = ATTACKS[name].Params.model_fields.get(key)
                assert field is not None, f"docs/scenarios.md documents {name}.{key}, which the attack does not take"
                choices = typing.get_args(field.annotation) if typing.get_origin(field.annotation) is typing.Literal \
                    else ()
                missing = [value for value in choices if f'"{value}"' not in cells[2]]
                assert not missing, f"docs/scenarios.md leaves out {name}.{key} = {missing}"
                checked += len(choices)
    assert checked >= 10


def test_concepts_page_lists_every_protocol_and_attack() -> None:
    assert _first_column(_section(CONCEPTS_MD, "Protocols")) == set(PROTOCOLS)
    assert _first_column(_section(CONCEPTS_MD, "Attacks")) == set(ATTACKS)


def test_concepts_page_says_which_attacks_are_not_curious_data_center_attacks() -> None:
    said = re.search(r"Every attack\s+but (.*?) runs under `curious-data-center`", CONCEPTS_MD, re.S)
    assert said, "docs/concepts.md no longer says which attacks run under curious-data-center"
    others = {name for name, cls in ATTACKS.items() if "curious-data-center" not in cls.threat_models}
    assert set(re.findall(r"`([\w-]+)`", said.group(1))) == others


def test_concepts_page_gives_each_role_the_kinds_it_may_send() -> None:
    rows = dict(re.findall(r"^\| [^|]+ \| `([\w-]+)` \| [^|]+ \| ([^|]+) \|$", _section(CONCEPTS_MD, "Parties"), re.M))
    for role, kinds in ROLES.items():
        assert set(re.findall(r"`([\w-]+)`", rows[role])) == set(kinds) or (not kinds and rows[role] == "nothing")
    kind_row = re.search(r"^\| `kind` \| (.*) \|$", CONCEPTS_MD, re.M)
    assert kind_row and set(re.findall(r"`([\w-]+)`", kind_row.group(1))) == set().union(*ROLES.values())
