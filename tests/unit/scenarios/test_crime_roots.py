"""Table I on Communities and Crime: the digest's closure holds the module of every learner its studies run."""

from __future__ import annotations

import inspect
import tomllib
from pathlib import Path

from parley.parties.learners import get_learner
from parley.scenarios.reproduce import REPO, TABLES, import_closure


def _learners_named(files: tuple[str, ...]) -> set[str]:
    """Every learner name a study's grid or fixed values or a scenario's ``[learner]`` table names."""
    names: set[str] = set()
    for name in files:
        data = tomllib.loads((REPO / name).read_text(encoding="utf-8"))
        names.update(cell["name"] for cell in data.get("grid", {}).get("learner", []))
        names.update(data.get("grid", {}).get("learner.name", []))
        names.update(value for key, value in data.get("set", {}).items() if key == "learner.name")
        if "learner" in data and "name" in data["learner"]:
            names.add(data["learner"]["name"])
    return names


def test_every_learner_of_the_crime_studies_is_in_the_digested_closure():
    table = TABLES["crime-table1"]
    closure = set(import_closure(table.roots))
    names = _learners_named(table.files)
    assert {"frr", "dfrr", "fkrr", "dfkrr", "fgr", "dfgr", "fpca1", "fpca2", "dfpca", "lfr"} <= names
    for name in sorted(names):
        module = Path(inspect.getfile(get_learner(name))).resolve()
        assert module in closure, f"learner {name!r} ({module.name}) computes Table I but is not in its digest"
