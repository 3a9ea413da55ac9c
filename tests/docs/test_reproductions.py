"""docs/reproductions.md: every generated table is what its recorded results give, and their code is unchanged.

The tables between ``<!-- generated: NAME -->`` and ``<!-- end generated -->`` are written by
``python -m parley.scenarios.reproduce write NAME`` from ``docs/reproductions/NAME.results.csv`` and
``NAME.paper.csv``. Every recorded study takes minutes, so this tier does not re-run them: it renders each
table again from the recorded results (a typed or stale number fails) and checks that the code the
numbers depend on is the code they were recorded with (the digest in ``NAME.meta.json``). A table computed
from the code alone (``Table.compute``, the sensitivities) is computed again in full.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from parley.scenarios.reproduce import BEGIN, PAGE, TABLES, meta, page_block, render, stale

PAPERS = Path("/work/shared/papers")
TEXT = PAGE.read_text(encoding="utf-8")
STATUS = r"\*\*(reproduced|partly reproduced|differs|not reproducible here|no numbers|in progress)\*\*"


@pytest.mark.parametrize("name", sorted(TABLES))
def test_the_printed_table_is_what_the_recorded_results_give(name):
    block = page_block(name, TEXT)
    assert block is not None, f"docs/reproductions.md has no {BEGIN.format(name=name)} block"
    assert block == render(name), f"run `python -m parley.scenarios.reproduce write {name}` (and say why it changed)"


@pytest.mark.parametrize("name", sorted(TABLES))
def test_the_code_behind_the_numbers_is_unchanged(name):
    problems = stale(name)
    assert not problems, problems[0]


def test_every_block_on_the_page_is_a_known_table():
    assert set(re.findall(r"<!-- generated: ([\w-]+) -->", TEXT)) == set(TABLES)
    for name, table in TABLES.items():
        assert table.compute is not None or meta(name)["commands"], name


def _inventory() -> str:
    return TEXT.split("\n## Every table and figure of the papers\n", 1)[1].split("\n## ", 1)[0]


def test_the_inventory_gives_every_row_a_status():
    rows = re.findall(r"^\| (?!---|paper \|)(.*) \|$", _inventory(), re.M)
    assert len(rows) >= 30
    for row in rows:
        status = row.split(" | ")[-1]
        assert re.match(STATUS, status), row


@pytest.mark.skipif(not PAPERS.is_dir(), reason="the papers' plain-text copies are not on this machine")
def test_the_inventory_names_every_captioned_table_and_figure():
    """Each caption of the papers' copies (Table 1:, TABLE II:, Figure 3:, Fig. 2:) has a row."""
    section = _inventory()
    short = {"querying-for-bias-leaks-attributes-facct23": "FAccT", "querying-for-bias-leaks-attributes-workshop":
             "workshop", "fair-learning-private-demographic-data": "Mozannar", "distributed-fair-learning-private-"
             "demographics": "Hu", "exploiting-fairness-reconstruction": "Ferry"}
    for path in sorted(PAPERS.glob("*.txt")):
        captions = re.findall(r"^(Table|TABLE|Figure|Fig\.) ([0-9IVX]+)[.:]", path.read_text(encoding="utf-8"), re.M)
        for kind, number in captions:
            label = f"{'Table' if kind.lower() == 'table' else 'Figure'} {number}"
            assert re.search(rf"^\| {short[path.stem]}[^|]* \| {label}\b", section, re.M), (path.name, label)
