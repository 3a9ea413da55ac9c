"""The workshop room without a browser: real parties, the referee's scoring, budgets, refusals, sealed channels."""

from __future__ import annotations

import numpy as np
import pytest

from parley.protocols.errors import ConfigError
from parley.scenarios.workshop.game import Defense, Room
from tests.fixed_secrets import run_secrets


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory):
    room = Room(tmp_path_factory.mktemp("room"), roster=8, secrets=run_secrets(7), train_size=2000)
    yield room
    room.close()


def test_raw_reads_everyone_on_the_roster(room: Room):
    room.configure("curious-data-center", Defense("raw"))
    alice, bob = room.join("alice"), room.join("bob")
    people = room.people
    assert len(people) == 8 and sorted(room.truth[people].tolist()) == [0] * 4 + [1] * 4  # both groups scored
    for person in people[:4]:
        entry = room.ask(alice.pid, person)
        assert entry["kind"] == "metric-answer" and entry["guess"] == room.truth[person]
    for person in people[4:]:
        room.ask(bob.pid, person)
    live = room.state()
    assert live["pinned"] == 8 and live["bound"] == 100.0 and not live["revealed"]
    assert "leakage" not in live and not any("leakage" in row or "rightly" in row for row in live["participants"])
    room.reveal()  # the facilitator ends the round: the referee's scores show
    state = room.state()
    assert state["pinned"] == 8 and state["leakage"] == 100.0 and state["rightly"] == 8 and state["revealed"]
    assert [(row["pinned"], row["rightly"], row["leakage"]) for row in state["participants"]] == [(4, 4, 100.0)] * 2
    # the sequence: every message of both worlds, each query answered, the observer reading every payload
    kinds = [(m["who"], m["sender"], m["recipient"], m["kind"]) for m in state["sequence"]]
    assert ("alice", "data-center", "compliance", "metric-query") in kinds
    assert ("bob", "compliance", "data-center", "metric-answer") in kinds
    assert not any(m["sealed"] for m in state["sequence"]) and state["parties"][-1] == "observer"
    # the participant's page shows their guesses, never the truth or the leakage
    mine = room.participant_state(alice.pid)
    assert len(mine["pinned"]) == 4 and "leakage" not in mine and mine["log"][0]["signed_by"] == "compliance"
    assert len(alice.pid) >= 22 and alice.pid != bob.pid  # 16 random bytes, base64url


def test_a_revealed_round_takes_no_query_and_a_new_round_hides_the_scores(room: Room):
    room.configure("curious-data-center", Defense("raw"))
    participant = next(iter(room.participants.values()))
    room.ask(participant.pid, room.people[0])
    room.reveal()
    assert room.state()["leakage"] == 100.0 and room.participant_state(participant.pid)["revealed"]
    # a score that moved after each guess would tell the guesser whether they were right: no guess after it
    with pytest.raises(ConfigError, match="is over"):
        room.ask(participant.pid, room.people[1])
    room.configure("curious-data-center", Defense("laplace", epsilon=0.5))
    state = room.state()
    assert not state["revealed"] and "leakage" not in state and "rightly" not in state
    assert room.ask(participant.pid, room.people[1])["kind"] == "metric-answer"


def test_every_world_is_real_and_its_transcript_verifies(room: Room):
    from parley.parties.transcript import check_transcript

    room.configure("curious-data-center", Defense("raw"))
    participant = next(iter(room.participants.values()))
    room.ask(participant.pid, room.people[0])
    participant.world.transcript.close()
    verified = check_transcript(participant.world.transcript.path)  # signatures, chain, the parties' end record
    # two honest audit queries and the participant's one, each answered; the data center's key signed the last
    assert verified.messages == 6 and verified.messages == participant.world.network.messages


def test_dp_answers_are_noisy_charged_and_capped_by_the_budget(room: Room):
    room.configure("curious-data-center", Defense("laplace", epsilon=0.1, budget=0.5))
    participant = next(iter(room.participants.values()))
    entries = [room.ask(participant.pid, person) for person in room.people]
    answered = [e for e in entries if e["kind"] == "metric-answer"]
    refused = [e for e in entries if e["kind"] == "refusal"]
    # two honest base queries and three of the participant's at 0.1 each fill the 0.5 budget; the rest are refused
    assert len(answered) == 3 and len(refused) == 5 and refused[0]["reason"] == "budget-exceeded"
    assert all(e["epsilon"] == 0.1 and e["noise"] == "laplace" for e in answered)
    state = room.state()
    row = next(r for r in state["participants"] if r["name"] == participant.name)
    assert row["epsilon_spent"] == pytest.approx(0.5) and row["refusals"] == 5
    assert row["bound"] == pytest.approx(100 / (1 + np.exp(-0.5)))


def test_a_confidential_channel_hides_every_payload_from_the_observer(room: Room):
    room.configure("curious-data-center", Defense("raw", confidential=True))
    participant = next(iter(room.participants.values()))
    entry = room.ask(participant.pid, room.people[-1])
    assert entry["guess"] == room.truth[room.people[-1]]  # the data center still reads its own answers
    assert room.state()["sequence"] and all(m["sealed"] for m in room.state()["sequence"])


def test_two_decimals_hide_the_majority_not_the_minority(room: Room):
    room.configure("curious-data-center", Defense("raw", decimals=2))
    participant = next(iter(room.participants.values()))
    entries = [room.ask(participant.pid, person) for person in room.people]
    undecided = [e["person"] for e in entries if e["guess"] is None]
    # one person moves SP by 1/N of their group: about 0.001 for the ~900 White people (lost in the rounding),
    # about 0.01 for the ~100 Black people (still there): every guess made is right, the undecided are all A = 1
    assert undecided and all(room.truth[p] == 1 for p in undecided)
    assert all(e["guess"] == room.truth[e["person"]] for e in entries if e["guess"] is not None)


def test_mistakes_are_refused_with_one_line(room: Room):
    participant = next(iter(room.participants.values()))
    outside = next(i for i in range(1000) if i not in room.people)
    with pytest.raises(ConfigError, match="not on the room's roster"):
        room.ask(participant.pid, outside)
    with pytest.raises(ConfigError, match="unknown metric"):
        room.ask(participant.pid, room.people[0], "accuracy")
    with pytest.raises(ConfigError, match="no participant"):
        room.ask("nobody", room.people[0])
    with pytest.raises(ConfigError, match="unknown protocol"):
        room.configure("curious-data-center", Defense("rot13"))
    with pytest.raises(ConfigError, match="unknown card"):
        room.configure("poker", Defense())
    assert room.state()["settings"]["protocol"] == "raw"  # a refused configuration leaves the round as it was
