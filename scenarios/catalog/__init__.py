"""Named scenarios (and, later, studies) shipped with parley as TOML files."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from parley.protocols.errors import ConfigError

__all__ = ["DEFAULT_SCENARIO", "IS_A_SCENARIO", "IS_A_STUDY", "scenario_names", "scenario_path", "resolve_scenario",
           "study_names", "resolve_study"]

DEFAULT_SCENARIO = "adult-raw-double-query"
UNKNOWN_SCENARIO = "no catalog scenario or file named {name!r}; catalog scenarios: {known}"
UNKNOWN_STUDY = "no catalog study or file named {name!r}; catalog studies: {known}"
#: Said instead when a name given to ``parley run`` is a catalog study (and the other way round).
IS_A_STUDY = "{name!r} is a catalog study, not a scenario: run it with `parley study {name}`"
IS_A_SCENARIO = "{name!r} is a catalog scenario, not a study: run it with `parley run {name}`"


def _catalog() -> Path:
    return Path(str(resources.files(__package__)))


def scenario_names() -> list[str]:
    """Names of the catalog scenarios (file stems), sorted."""
    return sorted(p.stem for p in _catalog().glob("*.toml"))


def scenario_path(name: str) -> Path:
    """The path of the catalog scenario ``name``'s TOML file (it may not exist)."""
    return _catalog() / f"{name}.toml"


def study_names() -> list[str]:
    """Names of the catalog studies, sorted."""
    return sorted(p.stem for p in (_catalog() / "studies").glob("*.toml"))


def looks_like_path(name_or_path: str) -> bool:
    """A path has a separator or a ``.toml`` suffix; anything else is a catalog name.

    A folder in the working directory never shadows a catalog name: ``parley run`` writes
    ``runs/<scenario>/`` and ``parley study`` writes ``studies/<study>/``, so running again from
    inside those folders must still find the catalog.
    """
    return name_or_path.endswith(".toml") or any(sep in name_or_path for sep in ("/", os.sep, os.altsep or "/"))


def _resolve(name_or_path: str, folder: Path, known: list[str], unknown: str, what: str, hint: str = "") -> Path:
    candidate = Path(name_or_path)
    if looks_like_path(name_or_path):
        if not candidate.is_file():
            raise ConfigError(f"{what} file {candidate} does not exist")
        return candidate
    path = folder / f"{name_or_path}.toml"
    if not path.is_file():
        raise ConfigError((hint or unknown).format(name=name_or_path, known=", ".join(known)))
    return path


def resolve_scenario(name_or_path: str) -> Path:
    """A catalog scenario name or a path to a TOML file -> the file to read."""
    hint = IS_A_STUDY if name_or_path in study_names() else ""
    return _resolve(name_or_path, _catalog(), scenario_names(), UNKNOWN_SCENARIO, "scenario", hint)


def resolve_study(name_or_path: str) -> Path:
    """A catalog study name or a path to a TOML file -> the file to read."""
    hint = IS_A_SCENARIO if name_or_path in scenario_names() else ""
    return _resolve(name_or_path, _catalog() / "studies", study_names(), UNKNOWN_STUDY, "study", hint)
