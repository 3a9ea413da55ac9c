"""Play two cards in a real headless browser and take pictures of the pages: ``python -m ... FOLDER``.

    python -m parley.scenarios.workshop.screenshots docs/figures

starts the app on a free local port with fixed secrets, opens the projector (with the facilitator's key) and
two participant pages in headless Chromium (:mod:`parley.scenarios.workshop.browser`), plays the curious data
center under ``raw`` until the room has guessed everyone on the roster, and writes
``workshop-projector-live.png`` (the round still live: the scores hidden), ``workshop-participant-1.png`` and
``workshop-participant-2.png``; the facilitator then reveals the scores (``workshop-projector.png``). Then the
same card under ``laplace`` at ε = 0.1, revealed (``workshop-projector-dp.png``): the leakage stays near a
coin's. Then the passive observer at ε = 1: the participants read the release off the wire
(``workshop-observer-participant.png``), revealed (``workshop-observer-projector.png``), and again on a
confidential channel, where the wire shows only sizes (``workshop-observer-confidential.png``). The helpers
here are the steps the browser tests take too.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from parley.parties.run_secrets import RunSecrets
from parley.scenarios.workshop.app import create_app
from parley.scenarios.workshop.browser import Browser, Page
from parley.scenarios.workshop.game import Room
from parley.scenarios.workshop.server import serving

__all__ = ["join", "main", "observer_session", "play", "reveal", "session", "start_round"]

#: Seconds a step may take before the session gives up (a page polls once a second; a machine may be loaded).
WAIT = 60.0
#: The fixed secrets of the pictures: the same noise, the same figures, at every refresh.
SECRETS = RunSecrets(b"parley workshop screenshots ....", source="screenshots")


def start_round(projector: Page, protocol: str, epsilon: str = "", decimals: str = "", budget: str = "",
                confidential: bool = False, card: str = "curious-data-center") -> int:
    """The facilitator picks the card and its defense on the projector page and starts a round; its number.

    Only the fields the card shows are typed into (the passive observer has no decimals and no budget).
    """
    before = int(projector.wait("document.body.dataset.round"))
    projector.choose("#card", card)
    projector.choose("#protocol", protocol)
    for knob, value in (("epsilon", epsilon), ("decimals", decimals), ("budget", budget)):
        if projector.eval(f"document.getElementById('knob-{knob}').style.display !== 'none'"):
            projector.type(f"#{knob}", value)
    if projector.eval("document.querySelector('#confidential').checked") != confidential:
        projector.click("#confidential")
    projector.click("#start")
    # a new round builds every participant's world afresh: seconds each on a loaded machine
    return int(projector.wait(f"Number(document.body.dataset.round) > {before} && document.body.dataset.round",
                              timeout=180))


def join(browser: Browser, url: str, name: str) -> Page:
    """A participant opens /play on their laptop, types their name and joins; their page once it shows."""
    page = browser.open(f"{url}/play", width=1280, height=820)
    page.type("#name", name)
    page.click("#join")
    page.wait("document.body.dataset.page === 'play' && document.body.dataset.ready === '1'", timeout=60)
    return page


def play(page: Page, people: list[int], choice: str = "sp") -> list[str]:
    """The participant makes one move per person and reads what came back; the texts of their answer box.

    A query card: flip the person's prediction and ask ``choice``, the metric. The observer: read the wire
    (``choice`` ``wire``) or guess ``0`` or ``1``.
    """
    answers = []
    page.wait("document.body.dataset.round && document.querySelector('#person').options.length > 0")
    for person in people:
        sent = int(page.eval("Number(document.body.dataset.sent || 0)"))
        page.choose("#person", str(person))
        page.choose("#choice", choice)
        page.click("#send")
        page.wait(f"Number(document.body.dataset.sent) > {sent}", timeout=WAIT)
        answers.append(page.text("#answer"))
    return answers


def roster(page: Page) -> list[int]:
    """The people a participant may pick, as their page lists them."""
    return [int(v) for v in page.eval("Array.from(document.querySelectorAll('#person option'), o => o.value)")]


#: The projector's figures :func:`projector_state` reads (element ids).
FIGURES = ("pinned", "leakage", "bound", "spent", "defense-line", "leakage-label", "participants")


def projector_state(projector: Page, pinned: int) -> dict[str, Any]:
    """The projector's figures once it shows ``pinned`` people guessed (it polls once a second)."""
    projector.wait(f"document.getElementById('pinned').textContent === '{pinned}'", timeout=WAIT)
    return {key: projector.text(f"#{key}") for key in FIGURES}


def reveal(projector: Page) -> None:
    """The facilitator ends the round: a click on "Reveal the scores", and the projector shows them."""
    projector.click("#reveal")
    projector.wait("document.body.dataset.revealed === '1' && document.getElementById('leakage').textContent "
                   "!== 'hidden'", timeout=WAIT)


def session(folder: Path | None, browser: Browser, url: str, key: str) -> dict[str, Any]:
    """The whole session: a raw round to full reconstruction, then a laplace round; pictures into ``folder``.

    Each round is played live (``live``, ``dp-live``: the projector's figures before the reveal) and then
    revealed (``raw``, ``dp``: the figures after it).
    """
    projector = browser.open(f"{url}/projector?key={key}", width=1280, height=1000)
    projector.wait("document.body.dataset.ready === '1'")
    start_round(projector, "raw")
    alice, bob = join(browser, url, "alice"), join(browser, url, "bob")
    people = roster(alice)
    half = len(people) // 2
    play(alice, people[:half])
    play(bob, people[half:])
    live = projector_state(projector, len(people))
    if folder is not None:
        time.sleep(1.2)  # one more poll: every panel shows the same moment
        projector.screenshot(folder / "workshop-projector-live.png")
        alice.screenshot(folder / "workshop-participant-1.png")
        bob.screenshot(folder / "workshop-participant-2.png")
    reveal(projector)
    raw = projector_state(projector, len(people))
    if folder is not None:
        projector.screenshot(folder / "workshop-projector.png")
    start_round(projector, "laplace", epsilon="0.1", budget="2")
    for page in (alice, bob):
        page.wait("document.body.dataset.sent === '0'", timeout=WAIT)
    play(alice, people[:half])
    play(bob, people[half:])
    dp_live = projector_state(projector, len(people))
    reveal(projector)
    dp = projector_state(projector, len(people))
    if folder is not None:
        projector.screenshot(folder / "workshop-projector-dp.png")
    return {"live": live, "raw": raw, "dp-live": dp_live, "dp": dp, "people": people,
            "pages": {"projector": projector, "alice": alice, "bob": bob}}


def _next_round(pages: dict[str, Page], number: int, card: str) -> None:
    """Every participant page shows round ``number`` of ``card`` (they poll once a second)."""
    for name in ("alice", "bob"):
        pages[name].wait(f"document.body.dataset.round === '{number}' && document.body.dataset.card === '{card}' "
                         "&& document.body.dataset.sent === '0'", timeout=WAIT)


def observer_session(folder: Path | None, pages: dict[str, Page]) -> dict[str, Any]:
    """The passive observer on the pages of :func:`session`: in clear, then on a confidential channel.

    In clear both participants read every person's released value off the wire and guess it; on a confidential
    channel alice finds the release sealed (``sealed``: her answer box) and both guess on their own, alice
    A = 1 for everyone, bob A = 0. Returns the projector's figures of each round, live and revealed, and the
    roster (the card's own data: A is sex here, race on the curious data center's card).
    """
    projector, alice, bob = pages["projector"], pages["alice"], pages["bob"]
    card = "passive-observer"
    _next_round(pages, start_round(projector, "rr-release", epsilon="1", card=card), card)
    people = roster(alice)
    play(alice, people, "wire")
    play(bob, people, "wire")
    clear_live = projector_state(projector, len(people))
    if folder is not None:
        time.sleep(1.2)  # one more poll: the page shows every read
        alice.screenshot(folder / "workshop-observer-participant.png")
    reveal(projector)
    clear = projector_state(projector, len(people))
    if folder is not None:
        projector.screenshot(folder / "workshop-observer-projector.png")
    _next_round(pages, start_round(projector, "rr-release", epsilon="1", confidential=True, card=card), card)
    sealed = play(alice, people[:1], "wire")[0]
    play(alice, people, "1")
    play(bob, people, "0")
    confidential_live = projector_state(projector, len(people))
    if folder is not None:
        time.sleep(1.2)
        alice.screenshot(folder / "workshop-observer-confidential.png")
    wire = alice.text("#wire")
    reveal(projector)
    confidential = projector_state(projector, len(people))
    return {"clear-live": clear_live, "clear": clear, "confidential-live": confidential_live,
            "confidential": confidential, "sealed": sealed, "wire": wire, "people": people}


def main(argv: list[str] | None = None) -> int:
    """Refresh the workshop screenshots in the folder given (default: docs/figures)."""
    parser = argparse.ArgumentParser(prog="python -m parley.scenarios.workshop.screenshots", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", type=Path, default=Path("docs/figures"))
    args = parser.parse_args(argv)
    room = Room(secrets=SECRETS)
    app = create_app(room)
    try:
        with serving(app) as url, Browser() as browser:
            figures = session(args.folder, browser, url, app.state.key)
            observer = observer_session(args.folder, figures["pages"])
    finally:
        room.close()
    print(f"raw: {figures['raw']}\nlaplace: {figures['dp']}\nobserver in clear: {observer['clear']}\n"
          f"observer, confidential: {observer['confidential']}\npictures in {args.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
