"""A user who starts from the docs' index finds the notebooks page (issue: notebooks were never mentioned)."""

from __future__ import annotations

import re

from tests.docs.console import REPO


def test_the_index_links_the_notebooks_page_and_the_page_shows_a_result_inline() -> None:
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    assert re.search(r"\[Notebooks\]\(notebooks\.md\)", index), "docs/index.md does not link docs/notebooks.md"
    page = (REPO / "docs" / "notebooks.md").read_text(encoding="utf-8")
    assert "_repr_html_" in page and "```pycon" in page  # what Jupyter shows, in examples the suite runs
