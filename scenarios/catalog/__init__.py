"""Named scenarios (and, later, studies) shipped with parley as TOML files."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from protocols.errors import ConfigError

__all__ = ["DEFAULT_SCENARIO", "scenario_names", "scenario_path", "resolve_scenario"]

DEFAULT_SCENARIO = "adult-raw-double-query"
UNKNOWN_SCENARIO = "no catalog scenario or file named {name!r}; catalog scenarios: {known}"


def _catalog() -> Path:
    return Path(str(resources.files(__package__)))


def scenario_names() -> list[str]:
    """Names of the catalog scenarios (file stems), sorted."""
    return sorted(p.stem for p in _catalog().glob("*.toml"))


def scenario_path(name: str) -> Path:
    return _catalog() / f"{name}.toml"


def resolve_scenario(name_or_path: str) -> Path:
    """A catalog name or a path to a TOML file -> the file to read."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or candidate.exists():
        if not candidate.is_file():
            raise ConfigError(f"scenario file {candidate} does not exist")
        return candidate
    path = scenario_path(name_or_path)
    if not path.is_file():
        raise ConfigError(UNKNOWN_SCENARIO.format(name=name_or_path, known=", ".join(scenario_names())))
    return path
