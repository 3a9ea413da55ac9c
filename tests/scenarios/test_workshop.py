"""The workshop kit: one card per threat model, each card's scenario narrated with ``parley run --explain``.

The cards (docs/workshop/<threat model>.md) are checked against the code they describe: the
role policy, the attack registry, the catalog, and the leakage their scenario measures.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from parley.parties.attacks import ATTACKS
from parley.parties.encodings import role_sends
from parley.parties.transcript import read_transcript
from parley.scenarios.catalog import resolve_scenario
from parley.scenarios.cli import main
from parley.scenarios.explain import SEALED_NOTE
from parley.scenarios.spec import THREAT_MODELS, Scenario
from tests.docs.console import matches

#: What each role may send, as the registered protocols and encodings declare it.
ROLES = role_sends()

WORKSHOP = Path(__file__).resolve().parents[2] / "docs" / "workshop"
RUN = re.compile(r"\*\*Catalog scenario:\*\* `parley run ([\w.-]+) --explain`")
#: The secrets file the kit publishes on purpose, so that a room's runs print the cards' figures.
CARD_SECRETS = Path(__file__).resolve().parents[2] / "docs" / "workshop" / "cards.secrets"
MEASURED = re.compile(r"measured\s+leakage:\s+\*\*([0-9.]+) %\*\*")
#: A number quoted in prose (``30,148``, ``+0.1648``, ``85.0``), not a seed.
NUMBER = re.compile(r"(?<!seed )(?<![\w.])[+-]?\d[\d,]*(?:\.\d+)?(?![\w])")
#: A variant row: | `parley run ...` ... | [queries |] leakage |
VARIANT = re.compile(r"^\| `(parley run[^`]*)`[^|]*\|(?: ([\d,]+)[^|]*\|)? ([\d.]+) %[^|]*\|", re.M)
#: A variant row whose attack stops: | `parley run ...` | ... | stops: "what parley says" ... |
STOPS = re.compile(r"^\| `(parley run[^`]*)`[^|]*\|(?:[^|]*\|)? stops: \"([^\"]+)\"", re.M)


def _card(threat: str) -> str:
    return (WORKSHOP / f"{threat}.md").read_text(encoding="utf-8")


def _scenario_of(threat: str) -> str:
    found = RUN.search(_card(threat))
    assert found, f"card {threat}.md names no catalog scenario as **Catalog scenario:** `parley run NAME --explain`"
    return found.group(1)


@pytest.mark.parametrize("threat", THREAT_MODELS)
def test_every_threat_model_has_a_card_that_matches_the_code(threat):
    path = WORKSHOP / f"{threat}.md"
    assert path.is_file(), f"threat model {threat!r} has no workshop card at docs/workshop/{threat}.md"
    text = _card(threat)
    assert f"`{threat}`" in text
    scenario = Scenario.from_toml(resolve_scenario(_scenario_of(threat)))
    assert scenario.threat_model == threat
    # Which attacks apply: every attack registered for the threat model is on its card.
    missing = [name for name, cls in ATTACKS.items() if threat in cls.threat_models and f"`{name}`" not in text]
    assert not missing, f"card {threat}.md does not name the attacks {missing}"
    # Who may send what: every kind of the role policy is on the card.
    kinds = sorted({kind for allowed in ROLES.values() for kind in allowed})
    assert all(f"`{kind}`" in text for kind in kinds), kinds
    readme = (WORKSHOP / "README.md").read_text(encoding="utf-8")
    assert readme.count(f"({threat}.md)") == 1
    # The kit's table quotes the card's numbers (which the card's own run checks).
    row = next(line for line in readme.splitlines() if f"({threat}.md)" in line and line.startswith("|"))
    card_numbers = set(NUMBER.findall(text))
    assert set(NUMBER.findall(row.rsplit("|", 2)[1])) <= card_numbers, f"README.md row of {threat}: {row}"


def _explain(name: str, out: Path, capsys, *extra: str) -> tuple[str, dict]:
    """Run a card's scenario as the card says: with the kit's published secrets file (its noise replayed)."""
    capsys.readouterr()
    assert main(["run", name, "--set", "backend=local", "--out", str(out), "--explain", "--secrets", str(CARD_SECRETS),
                 *extra]) == 0
    text = capsys.readouterr().out
    return text, json.loads((out / "result.json").read_text())


#: A fold of the narration: ``#8-#33 26 more like #7 (metric-query [raw])`` (or ``... more pairs like #5-#6 ...``).
FOLD = re.compile(r"^  #(\d+)-#(\d+) [\d,]+ more (?:pairs )?like #(\d+)(?:-#\d+)? \((.*) \[(.*)\]\)$", re.M)


def _names_every_message(text: str, out: Path) -> list:
    """Every message is named in full, or counted in a fold of messages like one named in full before it."""
    envelopes = read_transcript(out / "transcript.jsonl")
    assert envelopes
    folds = [(int(a), int(b), int(like), kinds.split(" and "), protocols.split(", "))
             for a, b, like, kinds, protocols in FOLD.findall(text)]
    for number, env in enumerate(envelopes, start=1):
        fold = next((f for f in folds if f[0] <= number <= f[1]), None)
        if fold is not None:
            assert env.kind in fold[3] and env.protocol in fold[4] and fold[2] < fold[0], f"message #{number}"
            continue
        assert re.search(rf"#{number}\s+{re.escape(env.sender)} -> {re.escape(env.recipient)}: "
                         rf"{re.escape(env.kind)} \[{re.escape(env.protocol)}\]", text), f"message #{number}"
    assert f"#{len(envelopes) + 1} " not in text and f"-#{len(envelopes) + 1} " not in text
    return envelopes


#: The black-box card runs adult-correction (a CP-SAT correction, about 6 s): the system tier.
@pytest.mark.parametrize("threat", [pytest.param(t, marks=pytest.mark.system) if t == "black-box-auxiliary" else t
                                    for t in THREAT_MODELS])
def test_each_card_scenario_runs_with_explain(threat, tmp_path, capsys):
    name = _scenario_of(threat)
    text, record = _explain(name, tmp_path / name, capsys)
    _names_every_message(text, tmp_path / name)
    assert "learned: " in text and record["learned"]
    assert text.count("learned: ") == len(record["learned"])
    # The card quotes the leakage this very run measures (seed 0).
    quoted = MEASURED.search(_card(threat))
    assert quoted, f"card {threat}.md quotes no 'measured leakage: **X %**'"
    assert float(quoted.group(1)) == round(record["metrics"]["leakage"], 1)
    # The excerpt the card quotes is what the narration prints, and so is every number of its paragraph.
    section = _card(threat).split("## What parley measured", 1)[1].split("\n## ", 1)[0]
    paragraph, excerpt = re.search(r"```\n(.*?)```text\n(.*?)```", section, re.S).groups()
    assert matches(["...", *excerpt.splitlines(), "..."], text), f"card {threat}.md quotes an old narration"
    printed = [float(n.replace(",", "")) for n in NUMBER.findall(text)]
    for number in NUMBER.findall(paragraph):
        digits = len(number.split(".")[1]) if "." in number else 0
        value = float(number.replace(",", ""))
        assert any(round(p, digits) == value for p in printed), f"card {threat}.md quotes {number}, not printed"


def test_explain_on_a_confidential_channel_shows_only_sizes(tmp_path, capsys):
    text, record = _explain("adult-rr-observer", tmp_path, capsys, "--set", "confidential=true")
    envelopes = _names_every_message(text, tmp_path)
    assert text.count(SEALED_NOTE.split("(")[0]) == len(envelopes)
    assert "a randomized-response release" not in text  # the payload is not read
    assert "nothing to infer A from" in text and record["metrics"]["attacked"] == 0


def test_list_shows_learners(capsys):
    from parley.parties.learners import LEARNERS

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    section = out.split("learners:\n", 1)[1].split("studies:", 1)[0]
    assert all(f"  {name} " in section for name in LEARNERS)


@pytest.mark.reliability
@pytest.mark.slow
@pytest.mark.parametrize("threat", THREAT_MODELS)
def test_card_variants_measure_what_the_table_says(threat: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Each variant row of a card ("Variants measured the same way") is run; its queries and leakage are as quoted."""
    rows = VARIANT.findall(_card(threat))
    assert rows, f"card {threat}.md has no variant table"
    for number, (command, queries, leakage) in enumerate(rows):
        out = tmp_path / str(number)
        capsys.readouterr()
        argv = [*command.replace("docs/workshop/cards.secrets", str(CARD_SECRETS)).split()[1:], "--set",
                "backend=local", "--out", str(out)]
        assert main(argv) == 0, capsys.readouterr().err
        metrics = json.loads((out / "result.json").read_text())["metrics"]
        assert round(metrics["leakage"], 1) == float(leakage), (command, metrics["leakage"])
        if queries:
            assert metrics["queries"] == int(queries.replace(",", "")), (command, metrics["queries"])
    for command, said in STOPS.findall(_card(threat)):  # rows where the attack refuses to start: one line, exit 2
        capsys.readouterr()
        assert main([*command.split()[1:], "--set", "backend=local", "--out", str(tmp_path / "stops")]) == 2, command
        assert said in capsys.readouterr().err, (command, said)
