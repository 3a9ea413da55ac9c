"""Generated reproduction tables: rendering, the page's blocks, changed numbers and changed code are caught."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from parley.scenarios import reproduce
from parley.scenarios.reproduce import TABLES, check, digest, import_closure, page_block, render
from parley.scenarios.reproductions import query_leakage


def _checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the page and of the checked-in files, which the module then reads and writes."""
    docs = tmp_path / "docs" / "reproductions"
    docs.mkdir(parents=True)
    for path in reproduce.DOCS.iterdir():
        (docs / path.name).write_bytes(path.read_bytes())
    page = tmp_path / "docs" / "reproductions.md"
    page.write_text(reproduce.PAGE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(reproduce, "DOCS", docs)
    monkeypatch.setattr(reproduce, "PAGE", page)
    return page


def test_a_changed_printed_number_fails_the_check(tmp_path, monkeypatch):
    page = _checkout(tmp_path, monkeypatch)
    assert check(["reveal-table1"]) == []
    text = page.read_text(encoding="utf-8")
    block = page_block("reveal-table1", text)
    assert block is not None and "| 100 | 40 | 100 |" in block
    page.write_text(text.replace(block, block.replace("| 100 | 40 | 100 |", "| 100 | 40 | 99 |")), encoding="utf-8")
    problems = check(["reveal-table1"])
    assert len(problems) == 1 and problems[0].startswith("reveal-table1: the table on docs/reproductions.md differs")


def test_write_restores_the_block_and_leaves_the_rest_of_the_page(tmp_path, monkeypatch):
    page = _checkout(tmp_path, monkeypatch)
    text = page.read_text(encoding="utf-8")
    block = page_block("conceal-table1", text)
    assert block is not None
    page.write_text(text.replace(block, block.replace("| 100 | 25 | 5 |", "| 100 | 25 | 6 |")), encoding="utf-8")
    reproduce.write("conceal-table1")  # from the recorded results alone
    assert page.read_text(encoding="utf-8") == text


def test_a_missing_block_is_reported(tmp_path, monkeypatch):
    page = _checkout(tmp_path, monkeypatch)
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace(page_block("correction-authors", text) or "", ""), encoding="utf-8")
    missing = [p for p in check(["correction-authors"]) if "has no generated block" in p]
    assert missing == ["correction-authors: docs/reproductions.md has no generated block"]


def test_changed_code_makes_the_recorded_digest_stale(tmp_path, monkeypatch):
    _checkout(tmp_path, monkeypatch)
    meta = reproduce.DOCS / "reveal-table1.meta.json"
    info = json.loads(meta.read_text(encoding="utf-8"))
    info["digest"] = "0" * 64  # as if sp_decoders.py had been another file when the runs were recorded
    info["depends_on"]["parties/attacks/decoders/sp_decoders.py"] = "0" * 16
    meta.write_text(json.dumps(info), encoding="utf-8")
    problems = check(["reveal-table1"])
    assert len(problems) == 1 and "changed since they were recorded" in problems[0]
    assert re.search(r"\(commit \w+\): parties/attacks/decoders/sp_decoders\.py; re-run", problems[0])
    assert "parley study reveal-table1" in problems[0] and "write reveal-table1 --studies studies" in problems[0]


def test_a_reworded_docstring_or_comment_keeps_the_digest_and_a_code_change_does_not(tmp_path):
    """The digest is of the code a number depends on: prose in a module cannot make a table stale."""
    module = tmp_path / "m.py"
    module.write_text('"""Module."""\n\n\ndef f(x):\n    """Twice x."""\n    return 2 * x  # doubled\n')
    before = reproduce._code(module)
    module.write_text('"""Module, reworded."""\n\n\ndef f(x):\n    """Two times x."""\n    return 2 * x\n')
    assert reproduce._code(module) == before
    module.write_text('"""Module."""\n\n\ndef f(x):\n    """Twice x."""\n    return 3 * x\n')
    assert reproduce._code(module) != before


def test_the_digest_follows_the_import_closure(tmp_path, monkeypatch):
    """A module the roots import (through a relative import, inside a function) changes the digest."""
    (tmp_path / "parley").mkdir()
    (tmp_path / "parley" / "__init__.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("def f():\n    from .b import g\n    return g\n")
    (tmp_path / "pkg" / "b.py").write_text("from parley.pkg import c  # noqa\ng = 1\n")
    (tmp_path / "pkg" / "c.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "unused.py").write_text("y = 1\n")
    monkeypatch.setattr(reproduce, "REPO", tmp_path)
    files = {p.relative_to(tmp_path).as_posix() for p in import_closure(["parley.pkg.a"])}
    assert files == {"pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/c.py"}
    table = reproduce.Table("t", (), ("parley.pkg.a",), lambda r, p: [])
    before = digest(table)
    (tmp_path / "pkg" / "unused.py").write_text("y = 2\n")
    assert digest(table) == before
    (tmp_path / "pkg" / "c.py").write_text("x = 2\n")
    assert digest(table) != before


def test_a_comment_with_a_parenthesis_does_not_end_an_import_group(tmp_path, monkeypatch):
    """``from x import (  # note (why)`` then names: every name is followed, not cut at the comment's ``)``."""
    (tmp_path / "parley").mkdir()
    (tmp_path / "parley" / "__init__.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from parley.pkg import (  # noqa (registers b and c)\n    b,\n    c,\n)\n")
    (tmp_path / "pkg" / "b.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "c.py").write_text("y = 1\n")
    monkeypatch.setattr(reproduce, "REPO", tmp_path)
    files = {p.relative_to(tmp_path).as_posix() for p in import_closure(["parley.pkg.a"])}
    assert {"pkg/b.py", "pkg/c.py"} <= files


def test_a_parent_package_counts_its_code_not_its_registrations(tmp_path, monkeypatch):
    """Another plug-in registered in a parent package leaves the digest; code of the package changes it."""
    (tmp_path / "parley").mkdir()
    (tmp_path / "parley" / "__init__.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from parley.pkg import a  # noqa\nSCALE = 1\n")
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "other.py").write_text("y = 1\n")
    monkeypatch.setattr(reproduce, "REPO", tmp_path)
    table = reproduce.Table("t", (), ("parley.pkg.a",), lambda r, p: [])
    before = digest(table)
    (tmp_path / "pkg" / "__init__.py").write_text("from parley.pkg import a, other  # noqa\nSCALE = 1\n")
    assert digest(table) == before
    (tmp_path / "pkg" / "__init__.py").write_text("from parley.pkg import a, other  # noqa\nSCALE = 2\n")
    assert digest(table) != before


def test_record_copies_every_run_with_its_provenance(tmp_path, monkeypatch):
    _checkout(tmp_path, monkeypatch)
    studies = tmp_path / "studies" / "reveal-table1"
    studies.mkdir(parents=True)
    recorded = pd.read_csv(reproduce.DOCS / "reveal-table1.results.csv").drop(columns="run")
    recorded.to_csv(studies / "results.csv", index=False)
    reproduce.record("reveal-table1", tmp_path / "studies")
    info = json.loads((reproduce.DOCS / "reveal-table1.meta.json").read_text(encoding="utf-8"))
    assert info["digest"] == digest(TABLES["reveal-table1"]) and len(info["commit"]) >= 7
    assert "parties/attacks/decoders/sp_decoders.py" in info["depends_on"]
    # the same rows; only the provenance names the commit that recorded them (the checkout's HEAD now)
    def rows(block: str) -> list[str]:
        return [line for line in block.splitlines() if line.startswith("|")]

    page = reproduce.PAGE.read_text(encoding="utf-8")
    assert rows(render("reveal-table1")) == rows(page_block("reveal-table1", page))
    assert info["commit"][:10] in render("reveal-table1")


def test_reveal_rows_print_exact_cells_without_a_spread():
    rows = [{"status": "ok", "dataset.audit_size": 100, "attack.max_queries": 25, "attack.decoder": d,
             "leakage": leak, "exact_recovery": leak == 100.0, "attack_decode_s": 0.5}
            for d in ("l1", "box-count", "amp") for leak in ((60.0, 70.0) if d == "l1" else (100.0, 100.0))]
    rows += [{**r, "dataset.audit_size": 1000, "attack.max_queries": 400} for r in rows]
    paper = pd.DataFrame({"source": ["t", "t"], "n": [100, 1000], "m": [25, 400], "leakage": [63, 100]})
    lines = query_leakage._reveal_table1(pd.DataFrame(rows), paper)
    assert lines[2] == "| 100 | 25 | 63 | 65.0 ± 7.1 (exact 0/2) | 100 (2/2) | 100 (2/2) |"
    assert lines[3].startswith("| 1,000 | 400 | 100 |")


def test_the_same_runs_keep_their_commit_and_edited_rows_are_refused(tmp_path, monkeypatch):
    _checkout(tmp_path, monkeypatch)
    studies = tmp_path / "studies" / "reveal-table1"
    studies.mkdir(parents=True)
    recorded = pd.read_csv(reproduce.DOCS / "reveal-table1.results.csv", low_memory=False).drop(columns="run")
    before = json.loads((reproduce.DOCS / "reveal-table1.meta.json").read_text(encoding="utf-8"))
    # one leakage nudged in its last digit: not the recorded runs, whatever the reason given
    edited = recorded.copy()
    edited.loc[0, "leakage"] = float(edited.loc[0, "leakage"]) + 1e-9
    edited.to_csv(studies / "results.csv", index=False)
    with pytest.raises(SystemExit, match="not the ones recorded"):
        reproduce.record("reveal-table1", tmp_path / "studies", same_runs="a docstring changed")
    assert json.loads((reproduce.DOCS / "reveal-table1.meta.json").read_text(encoding="utf-8")) == before
    # the recorded rows: the commit of the runs stays, the reason joins the earlier ones
    recorded.to_csv(studies / "results.csv", index=False)
    reproduce.record("reveal-table1", tmp_path / "studies", same_runs="a docstring changed")
    info = json.loads((reproduce.DOCS / "reveal-table1.meta.json").read_text(encoding="utf-8"))
    assert info["commit"] == before["commit"]
    assert info["re_recorded"][:-1] == before.get("re_recorded", [])
    assert info["re_recorded"][-1]["why"] == "a docstring changed" and info["digest"] == digest(TABLES["reveal-table1"])
