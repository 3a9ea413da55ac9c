"""Print constraints.txt: the exact installed version of every package parley-fairness[test] needs.

The closure of the project's requirements (with the ``test`` extra), read from the installed
distributions' metadata, as ``name==version`` lines: what ``pip freeze`` prints, restricted to
what parley actually pulls in. Refresh after upgrading the environment:

    pip install -U '.[test]' && python .ci/constraints.py > constraints.txt
"""

from __future__ import annotations

import sys
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PROJECT = "parley-fairness"
EXTRAS = ("test",)


def closure(project: str, extras: tuple[str, ...]) -> dict[str, str]:
    """Canonical name -> installed version of ``project``'s requirements, recursively (``project`` left out)."""
    found: dict[str, str] = {}
    todo = [(project, extras)]
    seen: set[tuple[str, tuple[str, ...]]] = set()
    while todo:
        name, wanted = todo.pop()
        if (name, wanted) in seen:
            continue
        seen.add((name, wanted))
        dist = metadata.distribution(name)
        for line in dist.requires or []:
            req = Requirement(line)
            envs = [{"extra": e} for e in wanted] or [{"extra": ""}]
            if req.marker is not None and not any(req.marker.evaluate(env) for env in envs):
                continue
            key = canonicalize_name(req.name)
            try:
                found[key] = metadata.version(req.name)
            except metadata.PackageNotFoundError:
                sys.exit(f"{req.name} (needed by {name}) is not installed: install '.[test]' first")
            todo.append((req.name, tuple(sorted(req.extras))))
    found.pop(canonicalize_name(project), None)
    return found


def main() -> None:
    """Print constraints.txt: the pinned closure of the project's test extra, with its header."""
    pins = closure(PROJECT, EXTRAS)
    print(f"# Exact versions of everything {PROJECT}[{','.join(EXTRAS)}] installs, for CI and reproducible set-ups:")
    print("#   pip install -c constraints.txt '.[test]'")
    print(f"# Python {sys.version_info.major}.{sys.version_info.minor}. "
          "Regenerate with: python .ci/constraints.py > constraints.txt (docs/design.md, \"Tooling\").")
    for name in sorted(pins):
        print(f"{name}=={pins[name]}")


if __name__ == "__main__":
    main()
