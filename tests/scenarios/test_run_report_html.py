"""Every run writes report.html: a page that loads in a real browser and tells what --explain tells."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import parley
from parley.scenarios import report_html
from parley.scenarios.explain import explain_record
from parley.scenarios.report_html import MAX_DIAGRAM_ROWS
from tests.browser import CHROMIUM, NO_CHROMIUM, _run, probe_page, screenshot

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


# -- the first hour's traps (in process: no Ray) ----------------------------------------------------------

#: The scenario ``parley run`` runs by default (20 targets of 1,000, with a passive observer) and card 2's.
LOCAL = ("adult-raw-double-query", "adult-rr-observer")


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("local-runs")
    return {name: parley.run(name, out=out / name, backend="local") for name in LOCAL}


def _figure_of(monkeypatch, draw):
    """The matplotlib figure a report figure function draws (kept instead of encoded)."""
    kept = []
    monkeypatch.setattr(report_html, "_png", lambda fig: kept.append(fig) or "data:image/png;base64,")
    draw()
    return kept[0]


def _whole(values) -> bool:
    return all(float(v).is_integer() for v in values)


def test_the_default_runs_plot_is_scaled_to_the_people_attacked(local_runs, monkeypatch):
    """20 people attacked are drawn on a 20-person axis, counts tick at whole numbers, the legend is off the data."""
    from parley.parties.transcript import read_transcript

    result = local_runs["adult-raw-double-query"]
    record = result.record
    assert record["metrics"]["attacked"] == 20 and record["sizes"]["n_audit"] == 1000
    fig = _figure_of(monkeypatch, lambda: report_html.knowledge_figure(record, read_transcript(result.transcript_path)))
    ax = fig.axes[0]
    assert 20 <= ax.get_ylim()[1] <= 25  # not 0-1,000: the climb to 100 % of the targets is visible
    assert _whole(ax.get_xticks()) and _whole(ax.get_yticks())  # models and people are counted in whole numbers
    fig.canvas.draw()
    legend, plot = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.x0 >= plot.x1  # beside the plot, over none of its points
    assert "people attacked (20)" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_a_probabilistic_guess_is_guessed_not_pinned_down(local_runs, monkeypatch):
    result = local_runs["adult-rr-observer"]
    record = result.record
    assert record["metrics"]["correct"] < record["metrics"]["attacked"]  # a Bayes guess, wrong for some
    fig = _figure_of(monkeypatch, lambda: report_html.knowledge_figure(record, []))
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "guessed" in labels and "guessed rightly" in labels and not any("pinned" in t for t in labels), labels
    assert _whole(fig.axes[0].get_xticks())
    page = (result.run_dir / "report.html").read_text(encoding="utf-8")
    assert "pinned down" not in page.split('<pre class="narration">', 1)[1]  # the narration says guesses too


@pytest.mark.parametrize("name", LOCAL)
def test_the_sequence_diagram_draws_every_party_of_the_run(local_runs, name):
    """The passive observer gets its lane, marked with the copy of every message it overhears."""
    import html

    result = local_runs[name]
    page = (result.run_dir / "report.html").read_text(encoding="utf-8")
    diagram = page.split('class="sequence">', 1)[1].split("</svg>", 1)[0]
    for party in result.record["transcript"]["keys"]:
        assert f'class="party">{party}</text>' in diagram, party
    assert "overhears every message" in diagram
    drawn = min(result.record["metrics"]["messages"], MAX_DIAGRAM_ROWS)
    assert diagram.count('class="overheard"') == drawn
    assert page.count('<g class="message') == drawn  # the marks are not messages (the legend counts those)
    # The arrows' tooltips hold every digit of an answer; the narration, four significant digits.
    from parley.parties.transcript import read_transcript

    envelopes = read_transcript(result.transcript_path)
    answer = next(e for e in envelopes if e.kind == "metric-answer") if name == LOCAL[0] else None
    if answer is not None:
        value = float(answer.payload["values"][0])
        assert html.escape(repr(value)) in diagram and repr(value) not in page.split('<pre class="narration">')[1]
        assert f"{value:.4g}" in page.split('<pre class="narration">')[1]


def test_the_narration_wraps_instead_of_running_off_the_page(local_runs):
    page = (local_runs["adult-raw-double-query"].run_dir / "report.html").read_text(encoding="utf-8")
    assert re.search(r"pre\.narration \{[^}]*white-space: pre-wrap", page)
    assert '<pre class="narration">' in page


@pytest.mark.system  # a real browser
@pytest.mark.skipif(not CHROMIUM.is_file(), reason=NO_CHROMIUM)
def test_the_narrations_long_lines_wrap_in_a_browser(local_runs, tmp_path):
    """At the page's width, no `learned:` line is cut at the right edge of the narration."""
    page = local_runs["adult-raw-double-query"].run_dir / "report.html"
    probe = ("<script>window.addEventListener('load', function () { var p = document.querySelector('pre.narration');"
             " var out = document.createElement('div'); out.id = 'wrap-check';"
             " out.textContent = p.scrollWidth + '/' + p.clientWidth; document.body.appendChild(out); });</script>")
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", probe + "</body>"), encoding="utf-8")
    dom = _run(["--window-size=1100,1500", "--virtual-time-budget=5000", "--dump-dom", probed.as_uri()],
               tmp_path / "profile")
    scroll, client = map(int, re.search(r'<div id="wrap-check">(\d+)/(\d+)</div>', dom).groups())
    assert client > 300 and scroll <= client, (scroll, client)
