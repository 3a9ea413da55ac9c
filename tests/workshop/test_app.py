"""The workshop's web app through Starlette's TestClient: pages, the JSON the pages poll, and what it refuses."""

from __future__ import annotations

import base64
import warnings
from typing import Any

import pytest

with warnings.catch_warnings():
    # Starlette 1.x announces httpx2 for its TestClient; httpx, pinned in the test extra, still drives it
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from parley.scenarios.workshop.app import create_app
from parley.scenarios.workshop.game import Room
from tests.fixed_secrets import run_secrets

#: The facilitator's key of the module's app.
KEY = "the facilitator's own key"
FACILITATOR = {"X-Parley-Key": KEY}
#: Every route of the facilitator's: (method, path).
FACILITATOR_ROUTES = [("GET", "/projector"), ("GET", "/replay"), ("GET", "/api/state"), ("POST", "/api/configure"),
                      ("POST", "/api/reveal"), ("GET", "/api/replay"), ("POST", "/api/replay")]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    room = Room(tmp_path_factory.mktemp("room"), roster=4, secrets=run_secrets(8), train_size=2000)
    with TestClient(create_app(room, key=KEY)) as client:
        yield client
    room.close()


def keys(value: Any) -> set[str]:
    """Every key of a JSON document, at any depth."""
    if isinstance(value, dict):
        return set(value).union(*(keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(keys(v) for v in value))
    return set()


def test_pages_render_without_a_build_step(client: TestClient):
    for path, needle in (("/", "/play"), (f"/projector?key={KEY}", 'id="reveal"'), ("/play", 'id="join"'),
                         (f"/replay?key={KEY}", 'id="next"')):
        response = client.get(path)
        assert response.status_code == 200 and needle in response.text
        assert "<script src=" not in response.text  # everything inline: no asset to fetch, no network
    assert client.get("/play/nobody", follow_redirects=False).headers["location"] == "/play"
    assert KEY not in client.get("/").text and KEY not in client.get("/play").text


def test_the_facilitators_routes_refuse_anyone_without_the_key(client: TestClient):
    for method, path in FACILITATOR_ROUTES:
        for headers in ({}, {"X-Parley-Key": "guess"}, {"X-Parley-Key": KEY[:-1]},
                        {"X-Parley-Key": "clé".encode("latin-1")}):
            refused = client.request(method, path, headers=headers, json={"protocol": "raw"})
            assert refused.status_code == 403, (method, path, headers)
            assert "facilitator's key" in refused.json()["error"] and "\n" not in refused.json()["error"]
        for key in ("nope", "clé", ""):
            assert client.request(method, path, params={"key": key}).status_code == 403
    # with the key, in the header or the query: the pages, the state, a round, its reveal
    assert client.get("/projector", headers=FACILITATOR).status_code == 200
    assert client.get("/replay", params={"key": KEY}).status_code == 200
    assert client.get("/api/state", params={"key": KEY}).json()["card"] == "curious-data-center"
    configured = client.post("/api/configure", headers=FACILITATOR, json={"protocol": "raw"})
    assert configured.status_code == 200 and not configured.json()["revealed"]
    assert client.post("/api/reveal", headers=FACILITATOR).json()["revealed"]
    assert client.get("/api/replay", headers=FACILITATOR).json() == {"status": "none"}
    assert client.get("/projector").status_code == 403  # a TestClient keeps cookies: the key is never one


def test_an_apps_own_key_is_random(client: TestClient):
    room = client.app.state.room  # type: ignore[attr-defined]
    first, second = create_app(room).state.key, create_app(room).state.key
    assert first != second and len(base64.urlsafe_b64decode(first + "==")) >= 16


def test_a_participant_joins_by_the_form_asks_and_the_projector_counts(client: TestClient):
    started = client.post("/api/configure", headers=FACILITATOR,
                          json={"protocol": "raw", "epsilon": "", "decimals": "", "confidential": False})
    assert started.status_code == 200 and started.json()["defense"] == "raw, payloads in clear"
    joined = client.post("/api/join", data={"name": "carol"}, follow_redirects=False)  # the plain HTML form
    assert joined.status_code == 303
    pid = joined.headers["location"].rsplit("/", 1)[1]
    assert 'id="send"' in client.get(f"/play/{pid}").text
    me = client.get(f"/api/participants/{pid}").json()
    assert me["name"] == "carol" and len(me["people"]) == 4 and me["log"] == []
    assert me["labels"]["send"] == "Send signed query" and me["choices"] == {"sp": "statistical parity (SP)",
                                                                             "eo": "equal opportunity (EO)"}
    for person in me["people"]:
        answer = client.post(f"/api/participants/{pid}/ask", json={"person": str(person), "metric": "sp"}).json()
        assert answer["kind"] == "metric-answer" and answer["guess"] in (0, 1)
        # while the round is live nothing the projector shows depends on the truth: no score at any depth
        live = client.get("/api/state", headers=FACILITATOR).json()
        assert not {"leakage", "rightly"} & keys(live) and not live["revealed"]
    assert live["pinned"] == 4 and live["sequence"][-1]["kind"] == "metric-answer"
    assert live["participants"][-1]["queries"] == 4
    revealed = client.post("/api/reveal", headers=FACILITATOR).json()
    state = client.get("/api/state", headers=FACILITATOR).json()
    assert revealed == state and state["revealed"] and {"leakage", "rightly"} <= keys(state)
    assert state["pinned"] == 4 and state["leakage"] == 100.0 and state["rightly"] == 4
    assert [row["leakage"] for row in state["participants"] if row["name"] == "carol"] == [100.0]
    # the round is over: no more guesses to watch the scores move with
    over = client.post(f"/api/participants/{pid}/ask", json={"person": me["people"][0]})
    assert over.status_code == 400 and "is over" in over.json()["error"]
    assert client.get(f"/api/participants/{pid}").json()["revealed"]
    # a new round hides the scores again
    again = client.post("/api/configure", headers=FACILITATOR, json={"protocol": "laplace", "epsilon": "0.5"})
    assert not again.json()["revealed"] and not {"leakage", "rightly"} & keys(again.json())


def test_a_participant_reads_and_acts_as_themselves_only(client: TestClient):
    joined = [client.post("/api/join", json={"name": name}, headers={"Accept": "application/json"}).json()["pid"]
              for name in ("erin", "frank")]
    for pid in joined:  # 16 random bytes or more (secrets.token_urlsafe), not a counter
        assert len(base64.urlsafe_b64decode(pid + "==")) >= 16
    erin, frank = joined
    mine = client.get(f"/api/participants/{erin}")
    assert mine.status_code == 200 and mine.json()["name"] == "erin" and frank not in mine.text
    person = mine.json()["people"][0]
    # nothing open to a participant names another's id: not the join, the pages, the state (which needs the key)
    assert frank not in client.get(f"/play/{erin}").text and frank not in client.get("/").text
    assert client.get("/api/state").status_code == 403
    for guess in (frank[:-1], frank.upper(), "p2", erin + frank):
        assert client.get(f"/api/participants/{guess}").status_code == 404
        refused = client.post(f"/api/participants/{guess}/ask", json={"person": person})
        assert refused.status_code == 400 and "no participant" in refused.json()["error"]
    assert client.get(f"/api/participants/{frank}").json()["log"] == []  # erin's guesses asked nothing of frank's


def test_mistakes_come_back_as_400_with_the_reason(client: TestClient):
    pid = client.post("/api/join", json={"name": "dave"}, headers={"Accept": "application/json"}).json()["pid"]
    bad = client.post(f"/api/participants/{pid}/ask", json={"person": "x"})
    assert bad.status_code == 400 and "must be a number" in bad.json()["error"]
    bad = client.post("/api/configure", headers=FACILITATOR, json={"protocol": "nope"})
    assert bad.status_code == 400 and "unknown protocol" in bad.json()["error"]
    assert client.get("/api/participants/nobody").status_code == 404


@pytest.fixture
def fresh(tmp_path: Any):
    """An app over a room of its own: no participant of the other tests restarts with each round."""
    room = Room(tmp_path, roster=4, secrets=run_secrets(9), train_size=2000)
    with TestClient(create_app(room, key=KEY)) as client:
        yield client
    room.close()


def test_the_passive_observer_card_over_http(fresh: TestClient):
    client = fresh
    # the projector offers every card with its own protocols and knobs
    projector = client.get("/projector", headers=FACILITATOR).text
    assert '"passive-observer": {"title": "The passive observer", "protocols": ["rr-release"]' in projector
    # a configuration that names no protocol gets the card's own
    started = client.post("/api/configure", headers=FACILITATOR, json={"card": "passive-observer", "epsilon": "1"})
    assert started.status_code == 200
    assert started.json()["defense"] == "rr-release, ε = 1 per release, payloads in clear"
    assert started.json()["role"] == "the passive observer" and started.json()["moves"] == "reads"
    pid = client.post("/api/join", json={"name": "grace"}, headers={"Accept": "application/json"}).json()["pid"]
    me = client.get(f"/api/participants/{pid}").json()
    assert me["card_name"] == "passive-observer" and set(me["choices"]) == {"wire", "0", "1"}
    assert [m["kind"] for m in me["wire"]] == ["release-request", "attribute-release"]
    for person in me["people"]:
        read = client.post(f"/api/participants/{pid}/ask", json={"person": person, "choice": "wire"}).json()
        assert read["kind"] == "attribute-release" and read["guess"] in (0, 1) and read["cells"][0].startswith("z = ")
        live = client.get("/api/state", headers=FACILITATOR).json()
        assert not {"leakage", "rightly"} & keys(live)  # nothing scored while the round is live
    bad = client.post(f"/api/participants/{pid}/ask", json={"person": me["people"][0], "choice": "maybe"})
    assert bad.status_code == 400 and bad.json()["error"] == "unknown guess 'maybe'; choose one of wire, 0, 1"
    bad = client.post("/api/configure", headers=FACILITATOR, json={"card": "passive-observer", "protocol": "raw"})
    assert bad.status_code == 400 and "for card 'passive-observer'" in bad.json()["error"]
    state = client.post("/api/reveal", headers=FACILITATOR).json()
    assert state["card"] == "passive-observer" and state["leakage"] is not None
    assert state["participants"][-1]["bound"] == pytest.approx(73.1, abs=0.05)  # the release's ε-LDP cap
