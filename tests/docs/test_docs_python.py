"""The Python of docs/scripting.md and docs/studies.md runs as written: each ```python block on its own.

A reader copies one block, not the page: every block must import or define each name it uses
(checked statically in the default tier, for every block), and every block runs by itself in a
fresh namespace and a fresh folder. A block of ``>>>`` examples runs as doctest runs it. A block
followed directly by a ```text block must print that text (``...`` stands for any text, as in
tests/docs/console.py). A block that starts Ray (a run or a study with the default backend) is
the system tier; ``<!-- docs: not-run: REASON -->`` before a block (a cluster's address) keeps it
to the static checks. The dotted ``parley.`` names the pages quote in backticks must import.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import doctest
import importlib
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.console import DIRECTIVE, REPO, matches, normalise

PAGES = [REPO / "docs" / "scripting.md", REPO / "docs" / "studies.md"]
FENCE = re.compile(r"^```(\w*)\s*$")
#: A call that runs parley's parties or a study: over Ray unless the block asks for the local backend.
RUNS = re.compile(r"\b(?:parley\.run|parley\.study|run|run_study)\(")
#: A dotted name of parley quoted in backticks (``parley.scenarios.study.plan.load_results(path)``).
DOTTED = re.compile(r"`(parley(?:\.\w+)+)")


@dataclass
class PyBlock:
    page: Path
    line: int
    code: str
    expected: str | None
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def doctest(self) -> bool:
        return self.code.lstrip().startswith(">>>")

    @property
    def script(self) -> str:
        return doctest.script_from_examples(self.code) if self.doctest else self.code

    @property
    def over_ray(self) -> bool:
        return bool(RUNS.search(self.code)) and "backend" not in self.code


def python_blocks(page: Path) -> list[PyBlock]:
    """The page's ```python blocks, each with the ```text block right after it (if any) and its not-run reason."""
    lines = page.read_text(encoding="utf-8").splitlines()
    fences: list[tuple[int, int, str]] = []  # (first line of the fence, line of its closing fence, language)
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if opened:
            j = i + 1
            while j < len(lines) and lines[j].rstrip() != "```":
                j += 1
            fences.append((i, j, opened.group(1)))
            i = j
        i += 1
    blocks = []
    for k, (start, end, lang) in enumerate(fences):
        if lang != "python":
            continue
        expected = None
        if k + 1 < len(fences):
            nxt, nxt_end, nxt_lang = fences[k + 1]
            if nxt_lang == "text" and all(not line.strip() for line in lines[end + 1:nxt]):
                expected = "\n".join(lines[nxt + 1:nxt_end])
        directive = DIRECTIVE.match(lines[start - 1]) if start else None
        reason = directive.group(1).split(":", 1)[1].strip() if directive and directive.group(1).startswith(
            "not-run:") else None
        blocks.append(PyBlock(page, start + 1, "\n".join(lines[start + 1:end]) + "\n", expected, reason))
    return blocks


BLOCKS = [block for page in PAGES for block in python_blocks(page)]


def unbound_names(code: str) -> set[str]:
    """Names the code reads that it neither imports nor assigns nor defines, and that are not builtins."""
    tree = ast.parse(code)
    bound: set[str] = set()
    loaded: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return loaded - bound - set(dir(builtins))


def test_the_pages_have_python_blocks() -> None:
    assert len([b for b in BLOCKS if b.page.name == "scripting.md"]) >= 4
    assert len([b for b in BLOCKS if b.page.name == "studies.md"]) >= 2


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.where)
def test_every_python_block_imports_or_defines_every_name_it_uses(block: PyBlock) -> None:
    missing = unbound_names(block.script)
    assert not missing, f"{block.where}: a reader who copies this block gets a NameError: {sorted(missing)}"


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                target = getattr(target, name)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_dotted_parley_name_the_page_quotes_imports(page: Path) -> None:
    names = sorted(set(DOTTED.findall(page.read_text(encoding="utf-8"))))
    assert names
    missing = [name for name in names if not _resolves(name)]
    assert not missing, f"{page.name} names what does not exist: {missing}"


def run_block(block: PyBlock, folder: Path) -> str:
    """Run the block by itself in ``folder``, in a fresh namespace: what it printed."""
    here = Path.cwd()
    os.chdir(folder)
    out = io.StringIO()
    try:
        if block.doctest:
            test = doctest.DocTestParser().get_doctest(block.code, {}, block.where, str(block.page), block.line)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
            runner.run(test, out=out.write)
            assert not runner.failures, f"{block.where}: the examples print something else:\n{out.getvalue()}"
            return ""
        with contextlib.redirect_stdout(out):
            exec(compile(block.code, block.where, "exec"), {"__name__": "__main__"})  # noqa: S102
    finally:
        os.chdir(here)
    return out.getvalue()


def _check(block: PyBlock, folder: Path) -> None:
    printed = run_block(block, folder)
    if block.expected is not None:
        assert matches(block.expected.splitlines(), printed), (
            f"{block.where} prints something else than the page quotes:\n{normalise(printed)}")


RUNNABLE = [b for b in BLOCKS if b.not_run is None]


@pytest.mark.parametrize("block", [b for b in RUNNABLE if not b.over_ray], ids=lambda b: b.where)
def test_python_block_runs_as_written(block: PyBlock, tmp_path: Path) -> None:
    _check(block, tmp_path)


@pytest.mark.parametrize("block", [b for b in RUNNABLE if b.over_ray], ids=lambda b: b.where)
def test_python_block_over_ray_runs_as_written(block: PyBlock, tmp_path: Path, ray_session: object,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # Ray's workers import parley from this checkout
    _check(block, tmp_path)


#: A page's first ``$ parley verify`` line and the ``$ parley run`` line before it.
VERIFY = re.compile(r"^\$ (parley run[^\n]*)\n(?:(?!\$ ).*\n)*?\$ (parley verify [^\n]*)$", re.M)


#: The default scenario in this process on a small synthetic audit set: its run folder is the same, in seconds.
QUICK = ["--set", "backend=local", "--set", "dataset.name=synthetic", "--set", "dataset.audit_size=200"]


def test_readme_and_index_verify_the_default_run_the_same_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """README.md and docs/index.md quote one way to run and verify, and it works as quoted (parties in process)."""
    from parley.scenarios.cli import main

    found = {}
    for page in (REPO / "README.md", REPO / "docs" / "index.md"):
        match = VERIFY.search(page.read_text(encoding="utf-8"))
        assert match, f"{page.name} quotes no `$ parley run` followed by `$ parley verify`"
        found[page.name] = match.groups()
    assert found["README.md"] == found["index.md"], found
    run, verify = found["index.md"]
    monkeypatch.chdir(tmp_path)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([*run.split()[1:], *QUICK]) == 0
        assert main(verify.split()[1:]) == 0
        folder = verify.split()[-1]
        assert folder.endswith("/latest")
        assert main(["verify", folder.removesuffix("/latest")]) == 0  # runs/NAME follows latest
