"""The workshop's web app through Starlette's TestClient: pages, the JSON the pages poll, and what it refuses."""

from __future__ import annotations

import warnings

import pytest

with warnings.catch_warnings():
    # Starlette 1.x announces httpx2 for its TestClient; httpx, pinned in the test extra, still drives it
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from parley.scenarios.workshop.app import create_app
from parley.scenarios.workshop.game import Room
from tests.fixed_secrets import run_secrets


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    room = Room(tmp_path_factory.mktemp("room"), roster=4, secrets=run_secrets(8), train_size=2000)
    with TestClient(create_app(room)) as client:
        yield client
    room.close()


def test_pages_render_without_a_build_step(client: TestClient):
    for path, needle in (("/", "projector page"), ("/projector", 'id="start"'), ("/play", 'id="join"'),
                         ("/replay", 'id="next"')):
        response = client.get(path)
        assert response.status_code == 200 and needle in response.text
        assert "<script src=" not in response.text  # everything inline: no asset to fetch, no network
    assert client.get("/play/nobody", follow_redirects=False).headers["location"] == "/play"


def test_a_participant_joins_by_the_form_asks_and_the_projector_counts(client: TestClient):
    started = client.post("/api/configure", json={"protocol": "raw", "epsilon": "", "decimals": "",
                                                  "confidential": False})
    assert started.status_code == 200 and started.json()["defense"] == "raw, payloads in clear"
    joined = client.post("/api/join", data={"name": "carol"}, follow_redirects=False)  # the plain HTML form
    assert joined.status_code == 303
    pid = joined.headers["location"].rsplit("/", 1)[1]
    assert "Send signed query" in client.get(f"/play/{pid}").text
    me = client.get(f"/api/participants/{pid}").json()
    assert me["name"] == "carol" and len(me["people"]) == 4 and me["log"] == []
    for person in me["people"]:
        answer = client.post(f"/api/participants/{pid}/ask", json={"person": str(person), "metric": "sp"}).json()
        assert answer["kind"] == "metric-answer" and answer["guess"] in (0, 1)
    state = client.get("/api/state").json()
    assert state["pinned"] == 4 and state["leakage"] == 100.0
    assert state["sequence"][-1]["kind"] == "metric-answer"


def test_mistakes_come_back_as_400_with_the_reason(client: TestClient):
    pid = client.post("/api/join", json={"name": "dave"}, headers={"Accept": "application/json"}).json()["pid"]
    bad = client.post(f"/api/participants/{pid}/ask", json={"person": "x"})
    assert bad.status_code == 400 and "must be a number" in bad.json()["error"]
    bad = client.post("/api/configure", json={"protocol": "nope"})
    assert bad.status_code == 400 and "unknown protocol" in bad.json()["error"]
    assert client.get("/api/participants/nobody").status_code == 404
    assert client.get("/api/replay").json() == {"status": "none"}
