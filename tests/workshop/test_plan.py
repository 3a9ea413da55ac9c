"""The 60-minute plan of docs/workshop/README.md quotes today's narration of card 1.

The plan tells the facilitator what to read aloud: message numbers, folds, how many people each answer pins
down, how long the narration is. Each quote is checked here against what ``parley run --explain`` prints, so
that a change of the narration (folding, digits, numbering) fails here before it fails in front of a room.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from parley.scenarios.cli import main

README = Path(__file__).resolve().parents[2] / "docs" / "workshop" / "README.md"
#: The plan's row of card 1.
CARD_1 = "| 5-20 | Card 1, the curious data center |"

pytestmark = pytest.mark.system  # each runs a card's scenario end to end (seconds to a minute on a loaded machine)


def _row() -> str:
    row = next((line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith(CARD_1)), None)
    assert row, f"docs/workshop/README.md has no plan row starting {CARD_1!r}"
    return row


def _explain(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(["run", "adult-reveal-precision", "--explain", "--set", "backend=local", "--out", str(tmp_path),
                 *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def _lines(quote: str) -> int:
    """The line count a plan quote gives (``about 80 lines``)."""
    found = re.search(rf"{quote}[^(]*\(([^)]*?)about ([\d,]+) lines", _row())
    assert found, f"the plan no longer says how long {quote!r} narrates"
    return int(found.group(2).replace(",", ""))


def test_card_1s_reading_aloud_is_what_the_narration_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    row = _row()
    code, text, _ = _explain(tmp_path, capsys)
    assert code == 0
    # "about 80 lines with the summary table": within a tenth
    assert abs(len(text.splitlines()) - _lines("--set backend=local`")) <= _lines("--set backend=local`") // 10
    # "the burst of edits folded into one entry (`#8-#33 26 more like #7`)"
    fold = re.search(r"`(#\d+-#\d+ \d+ more like #\d+)`", row).group(1)
    assert re.search(rf"^  {re.escape(fold)} \(", text, re.M), fold
    # "one edit that pins down 19 people", "the first of their answers (56 people)" at "#34"
    stop = int(re.search(r"Read it aloud down to #(\d+)", row).group(1))
    first = re.search(r"one edit that pins down (\d+) people", row).group(1)
    burst = re.search(r"the first of their answers \((\d+) people\)", row).group(1)
    entry = re.search(rf"^  #{stop} compliance -> data-center: metric-answer.*?(?=^  #)", text, re.M | re.S)
    assert entry and f"pinned down A of {burst} of 1,000" in entry.group(0), f"#{stop} is not where {burst} are"
    assert f"pinned down A of {first} of 1,000" in text.split(f"  #{stop} ")[0]
    # "`after #35, learned:` lines down to #60: 29 answers, 1,000 people"
    after, last, answers, people = re.search(r"`(after #\d+, learned:)` lines down to #(\d+): (\d+) answers, "
                                             r"([\d,]+) people", row).groups()
    assert after in text and f"  #{last} compliance" in text and f"  #{int(last) + 1} " not in text
    assert text.count(": metric-answer [raw]") + sum(int(n) for n in re.findall(
        r"(\d+) more like #\d+ \(metric-answer", text)) == int(answers) + 1  # and the base model's
    assert f"pinned down A of {people} of {people} people" in text
    # where A hides: "0.1387, 0.139, 0.1392" are the first three answers, to 4 significant digits
    quoted = re.search(r'where A hides in "([^"]+)"', row).group(1).split(", ")
    printed = re.findall(r"an SP answer (\S+) \(exact\)", text)[:3]
    assert printed == quoted


def test_card_1s_variants_are_what_the_plan_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    row = _row()
    # "`--set protocol.decimals=4` (still 100 %, 509 queries, about 300 lines)"
    leak, queries = re.search(r"`--set protocol.decimals=4` \(still ([\d.]+) %, ([\d,]+) queries", row).groups()
    code, text, _ = _explain(tmp_path / "four", capsys, "--set", "protocol.decimals=4")
    assert code == 0
    assert re.search(rf"^queries\s+{queries}$", text, re.M) and re.search(rf"^leakage\s+{leak}$", text, re.M)
    lines = _lines("protocol.decimals=4`")
    assert abs(len(text.splitlines()) - lines) <= lines // 10, len(text.splitlines())  # once 2,270 lines
    # "and `=2` (the attack stops: it needs 4 decimals)"
    assert "`=2` (the attack stops" in row
    code, _, err = _explain(tmp_path / "two", capsys, "--set", "protocol.decimals=2")
    assert code != 0 and "the attack stopped" in err and "4 decimals" in err
