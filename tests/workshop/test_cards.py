"""The printable workshop cards: one page each, a picture of every party of the card's threat model.

And the kit's text about re-running: each run its own folder, ``--ledger NAME`` for a compliance party
that comes back, and no ``--fresh`` for a rehearsal.
"""

from __future__ import annotations

import html
import re
import subprocess
from pathlib import Path

import pytest

from parley.scenarios.cli import main
from parley.scenarios.workshop.cards import CARDS, SOURCE, card_html, parse_card, print_pdf, write_cards
from tests.browser import CHROMIUM, NO_CHROMIUM

#: The parties every card of a threat model must picture (its "Who holds what" may add more).
PARTIES = {
    "curious-data-center": {"data center", "compliance party", "adversary"},
    "passive-observer": {"data center", "compliance party", "observer"},
    "black-box-auxiliary": {"data center", "compliance party", "adversary", "model owner (played by the referee)"},
    "secure-computation": {"data center", "compliance party", "adversary", "helper"},
}
OUT = Path(__file__).resolve().parents[2] / "docs" / "figures" / "cards"


def _pictured(page: str) -> dict[str, list[str]]:
    """The parties the SVG draws, each with the items of its chips."""
    svg = re.search(r"<svg .*?</svg>", page, re.S)
    assert svg, "the card has no picture"
    parties = {}
    for match in re.finditer(r'<g class="party" data-party="([^"]+)">(.*?)(?=<g class="party"|</svg>)', svg.group(0),
                             re.S):
        parties[match.group(1)] = re.findall(r'<g class="chip (held|never)" data-item="([^"]+)"', match.group(2))
    return parties


@pytest.mark.parametrize("name", CARDS)
def test_the_card_page_pictures_every_party_of_its_threat_model(name: str) -> None:
    card = parse_card(SOURCE / f"{name}.md")
    page = card_html(card)
    pictured = _pictured(page)
    assert PARTIES[name] <= set(pictured), f"{name}: the picture lacks {PARTIES[name] - set(pictured)}"
    assert {p.name for p in card.parties if not p.referee} == set(pictured)
    held = {item for chips in pictured.values() for kind, item in chips if kind == "held"}
    assert {"X", "y", "A"} <= {item.split()[0] for item in held}, held
    assert pictured["data center"] and ("never", "A") in pictured["data center"] or name == "black-box-auxiliary"
    assert ("held", "A") in pictured["compliance party"]
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert len(card.questions) >= 3 and all(_plain(q) in text for q in card.questions)
    assert card.command in page and card.threat_model in page


def test_the_printed_cards_in_docs_are_the_ones_the_pages_draw_now() -> None:
    for name in CARDS:
        assert (OUT / f"{name}.html").read_text(encoding="utf-8") == card_html(parse_card(SOURCE / f"{name}.md")), (
            f"docs/figures/cards/{name}.html is stale: python -m parley.scenarios.workshop.cards docs/figures/cards")
        assert (OUT / f"{name}.pdf").is_file()
    readme = (SOURCE / "README.md").read_text(encoding="utf-8")
    assert all(f"../figures/cards/{name}.pdf" in readme for name in CARDS)


@pytest.mark.system  # the CLI's --cards end to end; the pages' content is checked in the default tier above
def test_parley_workshop_cards_writes_the_html_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("parley.scenarios.workshop.cards.CHROMIUM", tmp_path / "no-chromium")
    written = write_cards(tmp_path / "out", pdf=False)
    assert sorted(p.name for p in written) == sorted(f"{name}.html" for name in CARDS)
    assert main(["workshop", "--cards", str(tmp_path / "cli")]) == 0
    assert {p.stem for p in (tmp_path / "cli").glob("*.html")} == set(CARDS)


def _plain(markdown: str) -> str:
    """A Markdown sentence as the page reads: no code ticks, emphasis or link targets."""
    return re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", re.sub(r"[`*]", "", markdown))


def _pages(pdf: Path) -> int:
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf.read_bytes()))


@pytest.mark.system
@pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)
@pytest.mark.parametrize("name", CARDS)
def test_each_card_prints_on_one_page_in_chromium(name: str, tmp_path: Path) -> None:
    page = tmp_path / f"{name}.html"
    page.write_text(card_html(parse_card(SOURCE / f"{name}.md")), encoding="utf-8")
    pdf = print_pdf(page, tmp_path / f"{name}.pdf", CHROMIUM, profile=tmp_path / "profile")
    assert pdf.read_bytes().startswith(b"%PDF")
    assert _pages(pdf) == 1, f"{name} prints on {_pages(pdf)} pages"


@pytest.mark.system
@pytest.mark.skipif(not CHROMIUM.exists(), reason=NO_CHROMIUM)
def test_the_cards_command_prints_the_pdfs(tmp_path: Path) -> None:
    done = subprocess.run(["python", "-m", "parley.scenarios.workshop.cards", str(tmp_path)], capture_output=True,
                          text=True, timeout=600, cwd=SOURCE.parents[1], check=True)
    assert {Path(line).suffix for line in done.stdout.split()} == {".html", ".pdf"}
    assert all(_pages(tmp_path / f"{name}.pdf") == 1 for name in CARDS)


WORKSHOP_TEXT = sorted(p for p in SOURCE.glob("*.md") if p.name != "app.md")


@pytest.mark.parametrize("page", WORKSHOP_TEXT, ids=lambda p: p.name)
def test_the_kit_says_what_re_running_does_and_never_asks_for_fresh(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert "--fresh" not in text, f"{page.name} tells the room about --fresh: a rehearsal never needs it"
    assert "own folder" in text and "--ledger NAME" in text, f"{page.name} does not say what re-running does"
