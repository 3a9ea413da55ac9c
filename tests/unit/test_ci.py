"""CI runs what the README says, and the constraints file pins every declared dependency."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def _set_up_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S)]


def test_readme_has_two_set_up_lines_and_ci_runs_the_test_line_verbatim():
    commands = _set_up_commands()
    assert len(commands) == 2 and all("\n" not in c for c in commands), commands
    install_and_run, install_and_test = commands
    assert "parley run" in install_and_run and "pytest" in install_and_test
    assert install_and_test in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_both_set_up_lines_install_the_pinned_versions():
    """The first run uses the tested set: no line installs newer versions than the one after it (or CI) runs with."""
    for command in _set_up_commands():
        installs = [part for part in command.split("&&") if part.strip().startswith("pip install")]
        assert installs and all("-c constraints.txt" in part for part in installs), command


def test_readme_says_what_the_tests_cost_and_what_chromium_adds():
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Set up", 1)[1].split("\n## ", 1)[0]
    words = " ".join(section.split())
    assert "about 2 minutes on a 2-core machine" in words  # the default tier
    assert "python -m pytest -q -m system" in words and "about 10 more minutes" in words
    assert "two-node Ray cluster" in words and "ray start" in words
    assert "Chromium" in words and "skip" in words


def test_constraints_pin_every_declared_dependency_within_its_range():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [Requirement(r) for r in [*project["dependencies"], *project["optional-dependencies"]["test"]]]
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    for req in declared:
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is declared in pyproject.toml but not pinned in constraints.txt"
        assert req.specifier.contains(pins[name], prereleases=True), f"{req.name}=={pins[name]} is outside {req}"
