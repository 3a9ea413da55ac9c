"""Every generated table's digest holds the module of every learner, attack and protocol its runs name.

Studies reach plug-ins by registry name, which the digest's import scan cannot follow: a table whose roots
missed the module that computes its numbers would never go stale. This reads each table's catalog files
(the study's ``[set]`` and ``[grid]``, combined keys included, and the scenario's ``[learner]``,
``[attack]`` and ``[protocol]`` tables) and checks that module is in the table's digested closure.
"""

from __future__ import annotations

import inspect
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from parley.parties.attacks import get_attack
from parley.parties.learners import get_learner
from parley.protocols import get_protocol
from parley.scenarios.reproduce import REPO, TABLES, import_closure

FAMILIES: dict[str, Callable[[str], Any]] = {"learner": get_learner, "attack": get_attack, "protocol": get_protocol}


def _values(data: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(key, value) of every setting a study or scenario file makes, a grid's rows unpacked."""
    for key, value in data.get("set", {}).items():
        yield key, value
    for key, values in data.get("grid", {}).items():
        keys = key.split(",")
        for row in values:
            yield from zip(keys, row if len(keys) > 1 else [row], strict=True)
    for family in FAMILIES:
        if isinstance(data.get(family), dict):
            yield family, data[family]


def _named(files: tuple[str, ...]) -> set[tuple[str, str]]:
    """(family, name) of every plug-in the files name."""
    found = set()
    for name in files:
        for key, value in _values(tomllib.loads((REPO / name).read_text(encoding="utf-8"))):
            family, _, field = key.strip().partition(".")
            if family in FAMILIES and field == "name":
                found.add((family, str(value)))
            elif family in FAMILIES and not field and isinstance(value, dict) and "name" in value:
                found.add((family, str(value["name"])))
    return found


#: Tables whose runs are catalog studies (a script's run, like the pricing table's, names no plug-in).
STUDY_TABLES = sorted(n for n, t in TABLES.items() if t.runs and all(c.startswith("parley study ") for _, c in t.runs))


def test_every_table_but_the_script_run_ones_runs_studies():
    assert set(TABLES) - set(STUDY_TABLES) == {"sensitivities", "conceal-table1-pricing"}


@pytest.mark.parametrize("name", STUDY_TABLES)
def test_every_plugin_a_table_runs_is_in_its_digest(name):
    table = TABLES[name]
    closure = set(import_closure(table.roots))
    named = _named(table.files)
    assert named, f"{name}: its catalog files name no learner, attack or protocol"
    for family, plugin in sorted(named):
        module = Path(inspect.getfile(FAMILIES[family](plugin))).resolve()
        assert module in closure, f"{name}: {family} {plugin!r} ({module.name}) is not in the table's digest"
