"""docs/notebooks.md runs: every ``>>>`` example of its ```pycon blocks, in order, in one namespace, output compared.

The blocks run as doctest runs them (``...`` stands for any text), in a fresh folder, so the
run folders the page names (``runs/...``) land there. A block preceded by
``<!-- docs: not-run: REASON -->`` (tests/docs/console.py's directive) is skipped.
"""

from __future__ import annotations

import doctest
import os
import re
from pathlib import Path

from tests.docs.console import DIRECTIVE, REPO

PAGE = REPO / "docs" / "notebooks.md"
PYCON = re.compile(r"^```pycon\n(.*?)^```$", re.S | re.M)


def examples(page: Path = PAGE) -> list[tuple[int, str, str | None]]:
    """The page's ```pycon blocks: (line, body, not-run reason or None)."""
    text = page.read_text(encoding="utf-8")
    blocks = []
    for match in PYCON.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        directive = DIRECTIVE.match(before)
        reason = directive.group(1).split(":", 1)[1].strip() if directive and directive.group(1).startswith(
            "not-run:") else None
        blocks.append((line, match.group(1), reason))
    return blocks


def test_notebook_page_examples_print_what_they_show(tmp_path: Path) -> None:
    blocks = examples()
    assert len([b for b in blocks if b[2] is None]) >= 3, "docs/notebooks.md lost its runnable examples"
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    namespace: dict[str, object] = {}
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        for line, body, reason in blocks:
            if reason is not None:
                continue
            test = parser.get_doctest(body, namespace, f"docs/notebooks.md:{line}", str(PAGE), line)
            runner.run(test, clear_globs=False)
            namespace = test.globs
    finally:
        os.chdir(here)
    outcome = runner.summarize(verbose=False)
    assert outcome.attempted and not outcome.failed, f"{outcome.failed} example(s) of docs/notebooks.md failed"
