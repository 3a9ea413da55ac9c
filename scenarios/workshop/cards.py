"""Printable workshop cards: one page per card of docs/workshop/, with a picture of who holds what.

Each card page (``NAME.html``) is drawn from the card's Markdown: its title, threat model and
command, its "Who holds what" table as an inline SVG (one box per party: what it holds, among X,
y, A, the model, the keys and the wire, and what it never holds) and as the table itself, and the
card's questions for the room. The page is sized for one A4 sheet; :func:`print_pdf` prints it
with headless Chromium (``NAME.pdf``).

Usage: ``python -m parley.scenarios.workshop.cards OUT [--source DIR] [--no-pdf]``, or
``parley workshop --cards OUT``.
"""

from __future__ import annotations

import argparse
import html
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from parley.protocols.errors import ConfigError

__all__ = ["CARDS", "CHROMIUM", "Card", "Party", "card_html", "holdings", "main", "parse_card", "print_pdf",
           "write_cards"]

#: The cards of the kit, in the order of docs/workshop/README.md.
CARDS = ("curious-data-center", "passive-observer", "black-box-auxiliary", "secure-computation")
#: The kit's pages in a checkout (the wheel does not ship docs/).
SOURCE = Path(__file__).resolve().parents[2] / "docs" / "workshop"
CHROMIUM = Path("/usr/bin/chromium")
#: Headless printing on a machine without a display or network (no sandbox as root, no background connections).
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--no-pdf-header-footer")
#: What a party may hold, as the picture labels it, and how a card's table names it.
ITEMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("X", re.compile(r"\bX\b")),
    ("y", re.compile(r"\by\b")),
    ("A", re.compile(r"\bA\b")),
    ("model", re.compile(r"\bmodels?\b|predictions|scores")),
    ("keys", re.compile(r"\bkeys?\b")),
    ("wire", re.compile(r"transcript|envelope|\bwire\b")),
)


@dataclass
class Party:
    """One row of a card's "Who holds what" table."""

    name: str
    holds: str
    never: str

    @property
    def referee(self) -> bool:
        return self.name.startswith("referee")


@dataclass
class Card:
    """What a printed card shows, read from its Markdown page."""

    slug: str
    title: str
    threat_model: str
    command: str
    intro: str
    parties: list[Party] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)


def _section(text: str, heading: str) -> str:
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not match:
        raise ConfigError(f"the card has no '## {heading}' section")
    return match.group(1)


def parse_card(path: Path) -> Card:
    """The card at ``path`` (a docs/workshop page)."""
    text = path.read_text(encoding="utf-8")
    title = re.search(r"^# (.+)$", text, re.M)
    threat = re.search(r"^\*\*Threat model:\*\* `([^`]+)`", text, re.M)
    command = re.search(r"^\*\*Catalog scenario:\*\* `([^`]+)`", text, re.M)
    if not (title and threat and command):
        raise ConfigError(f"{path} is not a workshop card (no title, threat model or catalog scenario line)")
    head = text.split("\n## ", 1)[0]
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", head)[1:]]
    intro = next((p for p in paragraphs if not p.startswith(("**", "("))), "")
    parties = []
    for line in _section(text, "Who holds what").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and cells[0] not in ("party", "---"):
            parties.append(Party(*cells))
    questions = [re.sub(r"\s+", " ", q).strip() for q in
                 re.split(r"^\d+\. ", _section(text, "Questions for the room"), flags=re.M)[1:]]
    return Card(path.stem, title.group(1), threat.group(1), command.group(1), re.sub(r"\s+", " ", intro),
                parties, questions)


def holdings(text: str) -> list[str]:
    """The items of :data:`ITEMS` a table cell names, in their order."""
    return [label for label, found in ITEMS if found.search(text)]


def _chips(party: Party, parties: Sequence[Party]) -> tuple[str, list[str], list[str]]:
    """What the picture writes for ``party``: who it is (an adversary that *is* another party), held and never held.

    An item on both sides is qualified: keys as public and signing keys, anything else as held of others.
    """
    held, never = holdings(party.holds), holdings(party.never)
    alias = ""
    if party.holds.startswith("*is*"):
        alias = re.sub(r"[*:].*$", "", party.holds.removeprefix("*is*").strip()).strip()
        same = next((p for p in parties if p.name == alias.removeprefix("the ")), None)
        if same is not None:
            held = [item for item in holdings(same.holds + " " + party.holds) if item not in never]
        if "identity" in party.holds and "keys" not in held:
            held.append("keys")
    labels = []
    for item in held:
        if item in never:
            item = "public keys" if item == "keys" and "public" in party.holds else f"{item} of others"
        labels.append(item)
    never = ["signing key" if item == "keys" and "signing" in party.never else item for item in never]
    return alias, labels, never


def _inline(text: str) -> str:
    """Markdown's code, emphasis and links of a card's sentence as HTML."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)
    out = re.sub(r"\*([^*]+)\*", r"<em>\1</em>", out)
    return re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", out)


def _plain(text: str) -> str:
    return html.escape(re.sub(r"[`*]", "", text))


def picture(card: Card) -> str:
    """An inline SVG: one box per party (the referee aside), each with what it holds and never holds."""
    parties = [p for p in card.parties if not p.referee]
    width, box_w, gap = 720, 0.0, 12
    box_w = (width - gap * (len(parties) + 1)) / max(len(parties), 1)
    chip_h = 20
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="holds" viewBox="0 0 {width} 216" '
             f'role="img" aria-label="Who holds what: {_plain(card.title)}">']
    for i, party in enumerate(parties):
        x = gap + i * (box_w + gap)
        adversary = party.name.startswith(("adversary", "observer"))
        parts.append(f'<g class="party" data-party="{_plain(party.name)}">'
                     f'<rect x="{x:.1f}" y="8" width="{box_w:.1f}" height="200" rx="10" '
                     f'class="{"adversary" if adversary else "honest"}"/>'
                     f'<text x="{x + box_w / 2:.1f}" y="32" class="name">{_plain(party.name.split("(")[0])}</text>')
        alias, held, never = _chips(party, parties)
        if alias:
            parts.append(f'<text x="{x + box_w / 2:.1f}" y="48" class="is">is {_plain(alias)}</text>')
        y = 58
        for label, items, cls in (("holds", held, "held"), ("never", never, "never")):
            parts.append(f'<text x="{x + 8:.1f}" y="{y + 4}" class="label">{label}</text>')
            cx, cy = x + 8, y + 10
            for item in items:
                chip_w = 14 + 7.5 * len(item)
                if cx + chip_w > x + box_w - 6 and cx > x + 8:
                    cx, cy = x + 8, cy + chip_h + 4
                parts.append(f'<g class="chip {cls}" data-item="{html.escape(item)}"><rect x="{cx:.1f}" y="{cy}" '
                             f'width="{chip_w:.1f}" height="{chip_h}" rx="4"/><text x="{cx + chip_w / 2:.1f}" '
                             f'y="{cy + 14}">{html.escape(item)}</text></g>')
                cx += chip_w + 6
            y = max(y + 62, cy + chip_h + 22)
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


STYLE = """@page { size: A4; margin: 11mm 12mm; }
* { box-sizing: border-box; }
body { font: 9.6pt/1.32 "DejaVu Sans", Arial, sans-serif; color: #1b1b1b; margin: 0; }
h1 { font-size: 17pt; margin: 0 0 2pt; }
h2 { font-size: 11pt; margin: 8pt 0 3pt; border-bottom: 1px solid #999; }
.meta { margin: 0 0 4pt; color: #333; }
p { margin: 3pt 0; }
code { font: 8.8pt "DejaVu Sans Mono", monospace; background: #f1f1f1; padding: 0 2px; }
svg.holds { width: 100%; height: auto; display: block; margin: 2pt 0; }
svg .honest { fill: #eef4fb; stroke: #2f5f8f; stroke-width: 1.5; }
svg .adversary { fill: #fbeeee; stroke: #9b2b2b; stroke-width: 1.5; }
svg text { font: 12px "DejaVu Sans", Arial, sans-serif; text-anchor: middle; }
svg .name { font-weight: bold; font-size: 14px; }
svg .label { text-anchor: start; font-size: 11px; fill: #555; }
svg .is { font-size: 11px; font-style: italic; fill: #9b2b2b; }
svg .held rect { fill: #2f7d4f; } svg .held text { fill: #fff; font-weight: bold; }
svg .never rect { fill: #fff; stroke: #9b2b2b; stroke-dasharray: 3 2; }
svg .never text { fill: #9b2b2b; text-decoration: line-through; }
table { border-collapse: collapse; width: 100%; font-size: 8.6pt; }
th, td { border: 1px solid #bbb; padding: 2pt 4pt; text-align: left; vertical-align: top; }
th { background: #eee; }
ol { margin: 2pt 0; padding-left: 16pt; } li { margin: 2pt 0; }
.foot { margin-top: 6pt; font-size: 8pt; color: #444; }
"""


def card_html(card: Card) -> str:
    """The printable page of ``card``: one A4 sheet."""
    rows = "".join(f"<tr><td>{_inline(p.name)}</td><td>{_inline(p.holds)}</td><td>{_inline(p.never)}</td></tr>"
                   for p in card.parties)
    questions = "".join(f"<li>{_inline(q)}</li>" for q in card.questions)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_plain(card.title)}</title>
<style>{STYLE}</style></head>
<body>
<h1>{_inline(card.title)}</h1>
<p class="meta">Threat model <code>{html.escape(card.threat_model)}</code> &middot; run
<code>{html.escape(card.command)}</code></p>
<p>{_inline(card.intro)}</p>
<h2>Who holds what</h2>
{picture(card)}
<table><thead><tr><th>party</th><th>holds</th><th>never holds</th></tr></thead><tbody>{rows}</tbody></table>
<h2>Questions for the room</h2>
<ol>{questions}</ol>
<p class="foot">Filled chips: what a party holds; dashed, struck through: what it never holds. X: the features,
y: the labels, A: the protected attribute, model: a model or its predictions, keys: signing or pairwise keys,
wire: the transcript of signed envelopes. Each <code>parley run</code> gets its own folder
(<code>runs/NAME/latest</code> is the newest), so a rehearsal leaves nothing the live run meets.
From docs/workshop/{card.slug}.md.</p>
</body></html>
"""


def print_pdf(page: Path, pdf: Path, chromium: Path = CHROMIUM, profile: Path | None = None) -> Path:
    """``page`` printed to ``pdf`` by headless Chromium (its own profile folder beside the PDF unless given)."""
    profile = profile or pdf.parent / ".chromium-profile"
    command = [str(chromium), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--print-to-pdf={pdf}",
               page.resolve().as_uri()]
    subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    if not pdf.is_file():
        raise ConfigError(f"{chromium} printed no {pdf}")
    return pdf


def write_cards(out: Path, source: Path = SOURCE, pdf: bool = True, chromium: Path = CHROMIUM) -> list[Path]:
    """Write ``NAME.html`` (and ``NAME.pdf`` when Chromium is there and ``pdf``) for every card into ``out``."""
    if not all((source / f"{name}.md").is_file() for name in CARDS):
        raise ConfigError(f"the workshop cards are not in {source} (a checkout's docs/workshop; --source DIR)")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in CARDS:
        page = out / f"{name}.html"
        page.write_text(card_html(parse_card(source / f"{name}.md")), encoding="utf-8")
        written.append(page)
        if pdf and chromium.exists():
            written.append(print_pdf(page, out / f"{name}.pdf", chromium, profile=out / ".chromium-profile"))
    if (out / ".chromium-profile").exists():
        import shutil

        shutil.rmtree(out / ".chromium-profile", ignore_errors=True)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Draw the printable cards into the folder given."""
    parser = argparse.ArgumentParser(prog="python -m parley.scenarios.workshop.cards", description=__doc__)
    parser.add_argument("out", type=Path, help="folder for NAME.html and NAME.pdf")
    parser.add_argument("--source", type=Path, default=SOURCE, help="the cards' Markdown (default: docs/workshop)")
    parser.add_argument("--no-pdf", action="store_true", help="write the HTML pages only")
    args = parser.parse_args(argv)
    try:
        written = write_cards(args.out, args.source, pdf=not args.no_pdf)
    except ConfigError as exc:
        print(f"parley: error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    if not args.no_pdf and not CHROMIUM.exists():
        print(f"no PDFs: {CHROMIUM} is absent; print the HTML pages from a browser", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
