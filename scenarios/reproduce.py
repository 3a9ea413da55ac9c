"""Reproduction tables written from study results, never typed: ``python -m parley.scenarios.reproduce``.

Every generated table of ``docs/reproductions.md`` sits between two markers::

    <!-- generated: NAME -->
    ...
    <!-- end generated -->

and is written by :func:`render` (each table is described in :mod:`parley.scenarios.reproductions`) from
two checked-in files in ``docs/reproductions/``:

- ``NAME.paper.csv``: the paper's numbers, typed once, with the table they come from (``source``); a table
  may read another table's (:attr:`Table.paper`), so no number is typed twice;
- ``NAME.results.csv``: the rows of the study run(s) the table needs (a ``run`` column names the study
  folder each row came from), recorded with ``NAME.meta.json``: the commit and the date of the
  recording, the command that produced each run, and a digest of the parley modules the study's
  numbers depend on (:func:`digest`, over the static import closure of :attr:`Table.roots`).

Commands::

    python -m parley.scenarios.reproduce list
    python -m parley.scenarios.reproduce write NAME [--studies DIR]   # record DIR/<run>/results.csv first
    python -m parley.scenarios.reproduce write NAME --studies DIR --same-runs WHY   # the same runs, digest anew
    python -m parley.scenarios.reproduce check [NAME ...]             # page == render, digest unchanged

``check`` fails when a printed number differs from what the recorded results give, and when the code
a table depends on changed after its results were recorded (then re-run the study and ``write``).
"""

from __future__ import annotations

import argparse
import ast
import datetime as _dt
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import cast

import pandas as pd

from parley.scenarios.reproductions import TABLES, Table

__all__ = ["DOCS", "PAGE", "REPO", "TABLES", "Table", "check", "digest", "import_closure", "page_block", "record",
           "render", "write"]

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "reproductions"
PAGE = REPO / "docs" / "reproductions.md"
BEGIN = "<!-- generated: {name} -->"
END = "<!-- end generated -->"


# ------------------------------------------------------------------------------------ digests of the code


def _module_file(module: str) -> Path | None:
    """The file of a parley module in this checkout (``parley.a.b`` is ``a/b.py`` or ``a/b/__init__.py``)."""
    parts = module.split(".")[1:]
    if not parts:
        return REPO / "parley" / "__init__.py"
    base = REPO.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


#: ``import parley.x`` / ``from parley.x import a, b`` / ``from .x import (a,\n b)``, at any indentation.
_IMPORT = re.compile(r"^[ \t]*(?:import[ \t]+(?P<plain>[\w., \t]+)|from[ \t]+(?P<base>\.*[\w.]*)[ \t]+import[ \t]+"
                     r"(?:\((?P<group>[^)]*)\)|(?P<names>[^\n#]+)))", re.M)


def _imports(path: Path, module: str) -> set[str]:
    """The parley modules ``path`` imports (absolute or relative, at any depth of the file; a text scan)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    text = re.sub(r"#[^\n]*", "", path.read_text(encoding="utf-8"))  # a comment may hold a parenthesis
    for match in _IMPORT.finditer(text):
        if match["plain"]:
            found.update(name.split(" as ")[0].strip() for name in match["plain"].split(","))
            continue
        base = match["base"]
        level = len(base) - len(base.lstrip("."))
        if level:
            anchor = package.split(".")
            base = ".".join(anchor[:len(anchor) - level + 1] + ([base[level:]] if base[level:] else []))
        names = re.sub(r"#[^\n]*", "", match["group"] or match["names"] or "")
        members = [f"{base}.{name.split(' as ')[0].strip()}" for name in names.replace("\\", " ").split(",")
                   if name.strip()]
        modules = [member for member in members if _module_file(member) is not None]
        found.update(modules)
        if len(modules) < len(members):  # a name the package itself defines (or re-exports)
            found.add(base)
    return {name for name in found if name.startswith("parley.")}


def import_closure(roots: Iterable[str]) -> list[Path]:
    """Every file of the parley modules ``roots`` import, directly or not, and of their packages (sorted)."""
    followed, parents = _closure(roots)
    return sorted(followed | parents)


def _closure(roots: Iterable[str]) -> tuple[set[Path], set[Path]]:
    """The files of the modules ``roots`` import, directly or not (followed), and of their parent packages only.

    A module is followed into its own imports when it is imported (``import parley.x``, ``from
    parley.x import name`` with ``name`` defined in ``x``) or is a root. A package that is only the
    parent of such a module, or whose submodule is what ``from package import submodule`` takes, is
    hashed but not followed: its other submodules (other attacks, other protocols registering
    themselves) do not compute these numbers. ``parley/__init__.py`` is left out: it imports the rest
    only inside its functions.
    """
    followed: dict[str, Path] = {}
    parents: set[Path] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in followed:
            continue
        path = _module_file(module)
        if path is None:
            continue
        followed[module] = path
        for i in range(2, module.count(".") + 1):
            parent = _module_file(".".join(module.split(".")[:i]))
            if parent is not None:
                parents.add(parent)
        todo.extend(_imports(path, module))
    files = set(followed.values())
    return files, parents - files


def _code(path: Path, parent_only: bool = False) -> bytes:
    """What of ``path`` can change a number: a module's syntax tree without docstrings (comments are not in it).

    A reworded docstring or comment leaves the digest as it was; any change to the code changes it. Other
    files (catalog TOMLs) count byte for byte. A package that is only the parent of a followed module
    (``parent_only``) counts without its top-level imports: they are what is not followed (a learner or a
    protocol registered beside the ones a table uses does not compute its numbers), its own code counts.
    """
    if path.suffix != ".py":
        return path.read_bytes()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if parent_only:
        tree.body = [node for node in tree.body if not isinstance(node, ast.Import | ast.ImportFrom)]
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.dump(tree).encode()


def file_digests(table: Table) -> dict[str, str]:
    """sha256 (16 hex digits) of the code of each file in the import closure of ``table.roots``, and its TOMLs."""
    followed, parents = _closure(table.roots)
    codes = {p: _code(p, parent_only=p in parents) for p in followed | parents}
    codes.update({REPO / f: (REPO / f).read_bytes() for f in table.files})
    return {str(p.relative_to(REPO)): hashlib.sha256(code).hexdigest()[:16] for p, code in sorted(codes.items())}


def digest(table: Table) -> str:
    """sha256 over :func:`file_digests` (paths and contents)."""
    return hashlib.sha256(json.dumps(file_digests(table), sort_keys=True).encode()).hexdigest()


# ------------------------------------------------------------------------------------- files and the page


def _paths(name: str) -> tuple[Path, Path, Path]:
    paper = (TABLES[name].paper or name) if name in TABLES else name
    return DOCS / f"{paper}.paper.csv", DOCS / f"{name}.results.csv", DOCS / f"{name}.meta.json"


def meta(name: str) -> dict[str, object]:
    return dict(json.loads(_paths(name)[2].read_text(encoding="utf-8")))


def render(name: str) -> str:
    """The block ``docs/reproductions.md`` must hold for ``name``, from the checked-in files alone."""
    table = TABLES[name]
    paper_csv, results_csv, _ = _paths(name)
    paper = pd.read_csv(paper_csv, comment="#", dtype=str if table.paper_text else None)
    if table.compute is not None:
        lines = table.renderer(table.compute(), paper)
        source = "parley's code, computed at every check"
    else:
        info = meta(name)
        lines = table.renderer(pd.read_csv(results_csv, low_memory=False), paper)
        source = (f"[{name}.results.csv](reproductions/{name}.results.csv) (runs of commit {str(info['commit'])[:10]}, "
                  f"recorded {info['date']})")
    provenance = (f"Written by `python -m parley.scenarios.reproduce write {name}` from {source} and "
                  f"[{paper_csv.name}](reproductions/{paper_csv.name}).")
    return "\n".join([BEGIN.format(name=name), *lines, "", provenance, END])


def page_block(name: str, page: str) -> str | None:
    """The generated block of ``name`` on ``page``, markers included; None if the page has none."""
    found = re.search(re.escape(BEGIN.format(name=name)) + r".*?" + re.escape(END), page, re.S)
    return found.group(0) if found else None


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def _uncommitted(paths: list[str]) -> list[str]:
    """The ``paths`` whose checkout differs from the commit (git), or [] where git cannot say."""
    try:
        out = subprocess.run(["git", "diff", "--name-only", "HEAD", "--", *paths], cwd=REPO, capture_output=True,
                             text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return []
    return out.stdout.split()


def _moved(then: dict[str, str], now: dict[str, str]) -> list[str]:
    """The files whose digest differs between two records (added and removed files included)."""
    return sorted(path for path in set(then) | set(now) if then.get(path) != now.get(path))


#: ``write --same-runs`` with runs that are not the recorded ones.
NOT_THE_SAME_RUNS = ("{name}: the runs in {studies} are not the ones recorded in {csv}; record them as new runs "
                     "(without --same-runs)")


def record(name: str, studies: Path, same_runs: str | None = None) -> None:
    """Copy the study runs' results under ``docs/reproductions`` with the commit, the date and the digest.

    ``same_runs``: why the runs already recorded are recorded again (code they do not read changed, a catalog
    description was reworded). Their rows must be the recorded ones; the commit of the runs stays, and the
    reason is added to the meta's ``re_recorded`` list with the files whose digest moved.
    """
    table = TABLES[name]
    frames = []
    for folder, _ in table.runs:
        frame = pd.read_csv(studies / folder / "results.csv", low_memory=False)
        frame.insert(0, "run", folder)
        frames.append(frame.drop(columns=[c for c in ("node", "failure") if c in frame]))
    _, results_csv, meta_json = _paths(name)
    results = pd.concat(frames, ignore_index=True)
    depends = file_digests(table)
    today = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d")
    info: dict[str, object] = {"table": name, "commit": _git_commit(), "date": today, "digest": digest(table),
                               "commands": [command for _, command in table.runs], "depends_on": depends}
    # The digest is of the checkout as recorded; files that differ from the commit then are named.
    info["uncommitted_at_record"] = _uncommitted(list(depends))
    if same_runs is not None:
        before = meta(name)
        recorded = pd.read_csv(results_csv, low_memory=False)
        # compared as the csv writes them: the rows, to the last printed digit
        if results.to_csv(index=False) != recorded.to_csv(index=False):
            raise SystemExit(NOT_THE_SAME_RUNS.format(name=name, studies=studies, csv=results_csv))
        moved = _moved(cast(dict[str, str], before.get("depends_on", {})), depends)
        info["re_recorded"] = [*cast(list[object], before.get("re_recorded", [])),
                               {"date": today, "at": info["commit"], "files": moved, "why": same_runs}]
        info["commit"] = before["commit"]
    DOCS.mkdir(parents=True, exist_ok=True)
    results.to_csv(results_csv, index=False)
    meta_json.write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")


def write(name: str, studies: Path | None = None, same_runs: str | None = None) -> None:
    """Record ``studies``' runs first if given, then replace ``name``'s block on the page (which must have one)."""
    if studies is not None and TABLES[name].compute is None:
        record(name, studies, same_runs)
    page = PAGE.read_text(encoding="utf-8")
    old = page_block(name, page)
    if old is None:
        raise SystemExit(f"docs/reproductions.md has no {BEGIN.format(name=name)} ... {END} block to write")
    PAGE.write_text(page.replace(old, render(name)), encoding="utf-8")


def check(names: Sequence[str] = ()) -> list[str]:
    """What is wrong: blocks that differ from their rendering, and tables whose code changed since their runs."""
    page = PAGE.read_text(encoding="utf-8")
    problems = []
    for name in names or sorted(TABLES):
        block = page_block(name, page)
        commands = "; ".join(command for _, command in TABLES[name].runs)
        if TABLES[name].compute is None and not _paths(name)[2].is_file():
            problems.append(f"{name}: no recorded results (docs/reproductions/{name}.meta.json); run {commands}; then "
                            f"`python -m parley.scenarios.reproduce write {name} --studies studies`")
            continue
        if block is None:
            problems.append(f"{name}: docs/reproductions.md has no generated block")
        elif block != render(name):
            problems.append(f"{name}: the table on docs/reproductions.md differs from what its recorded results give; "
                            f"run `python -m parley.scenarios.reproduce write {name}`")
        problems += stale(name)
    return problems


def stale(name: str) -> list[str]:
    """Whether the code a recorded table's numbers depend on changed since they were recorded (digests only)."""
    if TABLES[name].compute is not None:
        return []  # computed at every render: never stale
    info = meta(name)
    if info["digest"] == digest(TABLES[name]):
        return []
    recorded = info.get("depends_on")
    changed = _moved(recorded if isinstance(recorded, dict) else {}, file_digests(TABLES[name]))
    commands = "; ".join(command for _, command in TABLES[name].runs)
    return [f"{name}: the code its numbers depend on changed since they were recorded (commit "
            f"{str(info['commit'])[:10]}): {', '.join(changed)}; re-run {commands}; then `python -m "
            f"parley.scenarios.reproduce write {name} --studies studies`"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parley.scenarios.reproduce", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the generated tables and the runs they read")
    w = sub.add_parser("write", help="write a table's block on docs/reproductions.md")
    w.add_argument("name", choices=sorted(TABLES))
    w.add_argument("--studies", type=Path, help="record DIR/<run>/results.csv first (commit, date, code digest)")
    w.add_argument("--same-runs", metavar="WHY", help="with --studies: the recorded runs again (their rows must not "
                   "differ), their commit kept and WHY added to the meta's re_recorded list")
    c = sub.add_parser("check", help="fail if a block differs from its rendering or its code changed since")
    c.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    if args.command == "list":
        for table in TABLES.values():
            print(table.name)
            for folder, command in table.runs:
                print(f"  {folder}: {command}")
        return 0
    if args.command == "write":
        if args.same_runs is not None and args.studies is None:
            parser.error("--same-runs needs --studies")
        write(args.name, args.studies, args.same_runs)
        return 0
    problems = check(args.names)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

