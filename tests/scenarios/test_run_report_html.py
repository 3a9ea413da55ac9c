"""Every run writes report.html: a page that loads in a real browser and tells what --explain tells."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import parley
from parley.scenarios.explain import explain_record
from parley.scenarios.report_html import MAX_DIAGRAM_ROWS
from tests.browser import CHROMIUM, NO_CHROMIUM, probe_page, screenshot

DOCS_FIGURES = Path(__file__).resolve().parents[2] / "docs" / "figures"
#: The screenshots docs/index.md shows, remade by this test from real runs (into docs/figures only with
#: PARLEY_REDRAW_DOCS_FIGURES=1; otherwise into the test's temporary folder).
SHOTS = {"adult-reveal-precision": "report-adult-reveal-precision.png",
         "adult-rr-observer": "report-adult-rr-observer.png"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, ray_session):
    out = tmp_path_factory.mktemp("runs")
    return {name: parley.run(name, out=out / name) for name in SHOTS}


@pytest.mark.ray
@pytest.mark.parametrize("name", sorted(SHOTS))
def test_report_html_tells_the_story_of_the_run(runs, name):
    result = runs[name]
    page = (result.run_dir / "report.html").read_text(encoding="utf-8")
    record = json.loads((result.run_dir / "result.json").read_text())
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page  # offline
    # The narration on the page is the one --explain prints, word for word (HTML-escaped).
    import html

    assert html.escape(explain_record(record, result.transcript_path)) in page
    # One arrow per message (or the first and last with a count of those left out).
    arrows = page.count('<g class="message')
    messages = record["metrics"]["messages"]
    assert arrows == min(messages, MAX_DIAGRAM_ROWS)
    if messages > MAX_DIAGRAM_ROWS:
        assert f"{messages - MAX_DIAGRAM_ROWS:,} messages left out" in page
    assert f"verified: {messages:,} messages" in page
    assert re.search(r'<img alt="knowledge" src="data:image/png;base64,', page)


@pytest.mark.ray
def test_the_precision_page_plots_what_was_pinned_down_after_each_answer(runs):
    record = runs["adult-reveal-precision"].record
    steps = record["knowledge"]
    assert len(steps) >= 10
    pinned = [s[1] for s in steps]
    assert pinned == sorted(pinned) and pinned[-1] == record["metrics"]["correct"] == 1000
    assert all(right == pin for _, pin, right in steps)  # raw float64 answers: nothing pinned wrongly


@pytest.mark.ray
@pytest.mark.skipif(not CHROMIUM.is_file(), reason=NO_CHROMIUM)
@pytest.mark.parametrize("name", sorted(SHOTS))
def test_report_html_loads_in_headless_chromium(runs, name, tmp_path):
    page = runs[name].run_dir / "report.html"
    widths, errors, dom = probe_page(page, tmp_path / "profile")
    assert errors == []
    assert sorted(widths) == ["knowledge", "leakage and budget"]
    assert all(width > 300 for width in widths.values()), widths
    assert 'data-ready="yes"' in dom  # the page's own script ran
    # The docs' screenshots are redrawn only on request: a test run never writes into the checkout.
    target = DOCS_FIGURES if os.environ.get("PARLEY_REDRAW_DOCS_FIGURES") == "1" else tmp_path
    shot = screenshot(page, target / SHOTS[name], tmp_path / "profile")
    assert shot.stat().st_size > 20_000


@pytest.mark.system  # a real browser
@pytest.mark.skipif(not CHROMIUM.is_file(), reason=NO_CHROMIUM)
def test_the_browser_check_sees_a_broken_page(tmp_path):
    # The control: a page with a script error and an image that cannot load must fail the same checks.
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><head><script>undefinedFunction();</script></head><body>'
                    '<img alt="broken" src="data:image/png;base64,iVBORw0KGgo="></body></html>')
    widths, errors, _ = probe_page(page, tmp_path / "profile")
    assert widths == {"broken": 0}
    assert errors and "undefinedFunction" in errors[0]
