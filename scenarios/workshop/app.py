"""The workshop's web app: a projector page, a page per participant, a replay page (Starlette, ASGI).

Server-rendered pages with a little vanilla JavaScript that polls the room's JSON once a second; no build
step, no asset outside this package. Every request that touches the room runs in Starlette's thread pool
under the room's locks (the parties are plain objects in this process). Start it with ``parley workshop``.

Two kinds of visitor. The facilitator holds the app's key (``?key=`` in the projector's address, or the
``X-Parley-Key`` header): the projector and replay pages, the room's state (the referee's scores once
revealed), configuring a round, revealing it and running a replay all need it, else 403. A participant holds
only their own id, 16 random bytes drawn when they join: their page and their queries, no one else's.
"""

from __future__ import annotations

import hmac
import secrets
import tempfile
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from parley.protocols.errors import ParleyError
from parley.scenarios.workshop.game import CARDS, Defense, Room
from parley.scenarios.workshop.pages import page
from parley.scenarios.workshop.replay import replay_scenario, replay_steps

__all__ = ["create_app"]

BAD_NUMBER = "{field} must be a number, got {got!r}"
#: The 403 of a facilitator's route asked without the key.
NO_KEY = "the facilitator's key is missing or wrong: open the projector URL parley workshop printed (?key=...)"
#: The header a page's script sends the key in (a query parameter ``key`` works too).
KEY_HEADER = "X-Parley-Key"
#: Random bytes of a facilitator's key drawn by :func:`create_app`.
KEY_BYTES = 16

Handler = Callable[[Request], Awaitable[Response]]


def _number(data: dict[str, Any], key: str, kind: type) -> Any:
    value = data.get(key)
    if value is None or value == "":
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ParleyError(BAD_NUMBER.format(field=key, got=value)) from None


def _defense(data: dict[str, Any], protocols: tuple[str, ...]) -> Defense:
    """The defense of a configure request; the card's first protocol if it names none."""
    confidential = data.get("confidential") in (True, "true", "on", "1", 1)
    return Defense(protocol=str(data.get("protocol") or protocols[0]), epsilon=_number(data, "epsilon", float),
                   decimals=_number(data, "decimals", int), confidential=confidential,
                   budget=_number(data, "budget", float))


def create_app(room: Room | None = None, key: str | None = None) -> Starlette:
    """The app over ``room`` (a fresh room with fresh secrets if omitted), its facilitator's routes under ``key``.

    ``key`` is drawn with :func:`secrets.token_urlsafe` if omitted; ``app.state.room`` and ``app.state.key``
    hold the two.
    """
    room = room if room is not None else Room()
    key = key if key is not None else secrets.token_urlsafe(KEY_BYTES)
    if not key:
        raise ValueError("the facilitator's key must not be empty")
    expected = key.encode("utf-8")
    replays: dict[str, Any] = {"status": "none"}
    replay_lock = threading.Lock()

    async def body(request: Request) -> dict[str, Any]:
        if request.headers.get("content-type", "").startswith("application/json"):
            data = await request.json()
            return data if isinstance(data, dict) else {}
        # a plain HTML form (urlencoded): parsed here, without the python-multipart package Starlette's form() needs
        fields = parse_qs((await request.body()).decode("utf-8", "replace"), keep_blank_values=True)
        return {key: values[-1] for key, values in fields.items()}

    def error(exc: Exception | str, status: int = 400) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=status)

    def facilitator(handler: Handler) -> Handler:
        """``handler`` for the holder of the key only (query parameter or header); a 403 for anyone else."""

        async def guarded(request: Request) -> Response:
            given = request.headers.get(KEY_HEADER) or request.query_params.get("key") or ""
            if not hmac.compare_digest(given.encode("utf-8"), expected):
                return error(NO_KEY, 403)
            return await handler(request)

        return guarded

    def synchronous(handler: Callable[[Request], Response]) -> Handler:
        async def run(request: Request) -> Response:
            return await run_in_threadpool(handler, request)

        return run

    async def home(request: Request) -> Response:
        return HTMLResponse(page("home", {}))

    async def projector(request: Request) -> Response:
        cards = {name: {"title": card.title, "protocols": card.protocols, "knobs": card.knobs,
                        "defaults": card.defaults, "per": card.per} for name, card in CARDS.items()}
        return HTMLResponse(page("projector", {"cards": cards, "key": key}))

    async def join_page(request: Request) -> Response:
        return HTMLResponse(page("join", {}))

    def play(request: Request) -> Response:
        pid = request.path_params["pid"]
        if pid not in room.participants:
            return RedirectResponse("/play", status_code=303)
        return HTMLResponse(page("play", {"pid": pid}))

    async def replay_page(request: Request) -> Response:
        return HTMLResponse(page("replay", {"key": key}))

    def state(request: Request) -> Response:
        return JSONResponse(room.state())

    def reveal(request: Request) -> Response:
        room.reveal()
        return JSONResponse(room.state())

    async def configure(request: Request) -> Response:
        data = await body(request)
        try:
            card = str(data.get("card") or room.card.name)
            defense = _defense(data, CARDS[card].protocols if card in CARDS else ("raw",))
        except ParleyError as exc:
            return error(exc)
        try:
            await run_in_threadpool(room.configure, card, defense)
        except ParleyError as exc:
            return error(exc)
        return JSONResponse(room.state())

    async def join(request: Request) -> Response:
        data = await body(request)
        participant = await run_in_threadpool(room.join, str(data.get("name", "")))
        if "application/json" in request.headers.get("accept", ""):
            return JSONResponse({"pid": participant.pid})
        return RedirectResponse(f"/play/{participant.pid}", status_code=303)

    def participant_state(request: Request) -> Response:
        try:
            return JSONResponse(room.participant_state(request.path_params["pid"]))
        except ParleyError as exc:
            return error(exc, 404)

    async def ask(request: Request) -> Response:
        data = await body(request)
        try:
            person = _number(data, "person", int)
            choice = data.get("choice", data.get("metric"))  # a query card's metric, an observer's guess
            entry = await run_in_threadpool(room.ask, request.path_params["pid"], person,
                                            None if choice is None else str(choice))
        except ParleyError as exc:
            return error(exc)
        return JSONResponse(entry)

    def start_replay(request: Request) -> Response:
        if not replay_lock.acquire(blocking=False):
            return JSONResponse({"status": "running"})
        try:
            replays.clear()
            replays["status"] = "running"
            scenario = replay_scenario(room.card, room.defense.overrides())
            out = Path(tempfile.mkdtemp(prefix="replay-", dir=room.folder))
            replays.update(replay_steps(scenario, out, room.secrets.child(f"replay-{room.round}")))
            replays["status"] = "ready"
            replays["defense"] = room.describe()
            replays["parties"] = list(room.card.parties)
        except ParleyError as exc:
            replays.update(status="failed", stopped=str(exc))
        finally:
            replay_lock.release()
        return JSONResponse(replays)

    def replay_state(request: Request) -> Response:
        return JSONResponse(replays)

    app = Starlette(routes=[
        Route("/", home),
        Route("/projector", facilitator(projector)),
        Route("/play", join_page),
        Route("/play/{pid}", play),
        Route("/replay", facilitator(replay_page)),
        Route("/api/state", facilitator(synchronous(state))),
        Route("/api/configure", facilitator(configure), methods=["POST"]),
        Route("/api/reveal", facilitator(synchronous(reveal)), methods=["POST"]),
        Route("/api/join", join, methods=["POST"]),
        Route("/api/participants/{pid}", participant_state),
        Route("/api/participants/{pid}/ask", ask, methods=["POST"]),
        Route("/api/replay", facilitator(synchronous(replay_state))),
        Route("/api/replay", facilitator(synchronous(start_replay)), methods=["POST"]),
    ])
    app.state.room = room
    app.state.key = key
    return app
