"""The workshop in a real headless Chromium: two participant pages and the projector, two cards played.

The curious data center: under ``raw`` the two participants pin down everyone on the roster; the projector
keeps the scores hidden until the facilitator reveals them (leakage 100 %); the facilitator then starts a
round under ``laplace`` at epsilon 0.1 and the same queries leave the room near a coin, under the bound of
what was spent. The passive observer: on the same pages the participants read a randomized-response release
off the wire (above chance), then find it sealed on a confidential channel (chance). Clicks and keys reach
the pages as real input events (DevTools ``Input.*``).
"""

from __future__ import annotations

import pytest

from parley.scenarios.workshop.app import create_app
from parley.scenarios.workshop.browser import Browser
from parley.scenarios.workshop.game import Room
from parley.scenarios.workshop.screenshots import SECRETS, observer_session, session
from parley.scenarios.workshop.server import serving
from tests.browser import CHROMIUM, NO_CHROMIUM

pytestmark = [pytest.mark.system, pytest.mark.skipif(not CHROMIUM.is_file(), reason=NO_CHROMIUM)]


def _percent(text: str) -> float:
    return float(text.replace("%", "").strip())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    room = Room(tmp_path_factory.mktemp("room"), secrets=SECRETS)
    app = create_app(room)
    with serving(app) as url, Browser() as browser:
        yield room, url, browser, app.state.key
    room.close()


@pytest.fixture(scope="module")
def played(served, tmp_path_factory: pytest.TempPathFactory):
    """The curious data center's session, played once: its figures, pictures and open pages."""
    room, url, browser, key = served
    folder = tmp_path_factory.mktemp("pictures")
    return folder, session(folder, browser, url, key)


def test_one_card_to_full_reconstruction_under_raw_and_to_chance_under_dp(served, played):
    room, url, browser, key = served
    tmp_path, figures = played
    people = len(figures["people"])
    raw, dp = figures["raw"], figures["dp"]
    # while each round is live the projector shows progress, never a score: everyone guessed, nothing scored
    for live in (figures["live"], figures["dp-live"]):
        assert live["pinned"] == str(people) and live["leakage"] == "hidden"
        assert "%" not in live["leakage-label"] and "right" not in live["leakage-label"]
        assert live["participants"].count("hidden") == 4  # two rows, each its right guesses and its leakage
    # revealed: the raw round read everyone
    assert raw["pinned"] == str(people) and _percent(raw["leakage"]) == 100.0
    assert raw["leakage-label"].endswith(f"{people} of {people} guesses right") and "hidden" not in raw["participants"]
    assert raw["defense-line"] == "raw, payloads in clear" and _percent(raw["bound"]) == 100.0
    # laplace at epsilon 0.1: every person guessed, yet the room's balanced accuracy stays within a coin's
    # spread (50 +- 28 points over 12 guesses) and under the bound of the epsilon the room spent: two worlds,
    # each two honest queries and six of its participant's at 0.1
    assert dp["pinned"] == str(people) and dp["defense-line"].startswith("laplace, ε = 0.1 per query")
    assert abs(_percent(dp["leakage"]) - 50) <= 28 and _percent(dp["leakage"]) <= _percent(dp["bound"]) < 90
    assert float(dp["spent"]) == pytest.approx(2 * 0.1 * (2 + people // 2))
    for name in ("workshop-projector-live.png", "workshop-projector.png", "workshop-participant-1.png",
                 "workshop-participant-2.png", "workshop-projector-dp.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the projector draws every party, the observer too, and the referee's figures match the room's own
    state = room.state()
    assert state["parties"] == ["data-center", "compliance", "observer"] and state["pinned"] == people
    assert state["revealed"] and state["leakage"] == pytest.approx(_percent(dp["leakage"]), abs=0.05)
    # a participant's page, once the round is revealed, takes no more queries
    alice = browser.open(f"{url}/play/{next(iter(room.participants))}")
    alice.wait("document.body.dataset.ready === '1'")
    assert alice.eval("document.getElementById('send').disabled") and "is over" in alice.text("#over")


def test_the_passive_observer_reads_the_wire_above_chance_and_nothing_when_sealed(served, played):
    room, url, browser, key = served
    folder, figures = played
    observed = observer_session(folder, figures["pages"])
    people = observed["people"]
    assert len(people) == len(figures["people"]) and people != figures["people"]  # the card's data: A is sex
    for name in ("workshop-observer-participant.png", "workshop-observer-projector.png",
                 "workshop-observer-confidential.png"):
        assert (folder / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # live, nothing scored; each participant read every person once
    for live in (observed["clear-live"], observed["confidential-live"]):
        assert live["pinned"] == str(len(people)) and live["leakage"] == "hidden"
    # in clear: above chance, beside the bound of the two releases the room's worlds made (ε = 1 each)
    clear = observed["clear"]
    assert clear["defense-line"] == "rr-release, ε = 1 per release, payloads in clear"
    assert float(clear["spent"]) == 2.0 and _percent(clear["bound"]) == pytest.approx(88.1, abs=0.05)
    assert _percent(clear["leakage"]) > 50 and clear["leakage-label"].endswith(f"of {2 * len(people)} guesses right")
    # sealed: the wire shows sizes only, the guesses are the participants' own, and the room is at chance
    assert "sealed" in observed["sealed"] and "size" in observed["sealed"]
    assert "sealed" in observed["wire"] and "z = " not in observed["wire"] and '"z"' not in observed["wire"]
    confidential = observed["confidential"]
    assert confidential["defense-line"].endswith("confidential channel") and _percent(confidential["leakage"]) == 50.0
    # the referee's figures match the room's own: what the participants read was each world's release
    state = room.state()
    assert state["card"] == "passive-observer" and state["revealed"] and state["leakage"] == 50.0


def test_the_projector_and_the_replay_need_the_key(served):
    room, url, browser, key = served
    page = browser.open(f"{url}/projector")
    for path in ("/projector", "/replay", f"/projector?key={key[:-1]}"):
        page.goto(f"{url}{path}")
        page.wait("document.body && document.body.innerText.length > 0")
        assert "facilitator's key" in page.eval("document.body.innerText")


def test_replay_steps_through_a_finished_run(served):
    room, url, browser, key = served
    room.configure("curious-data-center", room.defense.__class__("raw"))
    page = browser.open(f"{url}/replay?key={key}")
    page.wait("document.body.dataset.ready === '1'")
    page.click("#run")
    page.wait("document.body.dataset.replay === 'ready'", timeout=90)
    page.click("#next")
    page.click("#next")
    page.wait("document.body.dataset.at === '2'")
    assert page.text("#current").startswith("#2 compliance → data-center: an SP answer")
    page.click("#end")
    page.wait("document.getElementById('leakage').textContent === '100.0 %'")
    assert page.text("#pinned") == "1000" and page.text("#total") == "60"
