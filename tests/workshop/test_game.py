"""The workshop room without a browser: real parties, the referee's scoring, budgets, refusals, sealed channels."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.attacks.scoring import leakage
from parley.protocols.errors import ConfigError
from parley.scenarios.workshop.game import CARDS, Defense, Room
from parley.scenarios.workshop.replay import replay_scenario, replay_steps
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


# -- the passive observer: the participants read the wire of a randomized-response release -----------------------


def _release(participant) -> np.ndarray:
    """The release's values as the participant's wire carries them (the referee's check of what they read)."""
    (envelope,) = [e for e in participant.seen if e.kind == "attribute-release"]
    return np.asarray(envelope.payload["z"])


def test_the_observer_reads_the_release_off_the_wire_and_the_referee_scores_it(room: Room):
    room.configure("passive-observer", Defense("rr-release", epsilon=1.0))
    assert room.groups == {"0": "Female", "1": "Male"}  # the card's own data: A = sex, the roster drawn again
    people = room.people
    assert sorted(room.truth[people].tolist()) == [0] * 4 + [1] * 4
    for participant in room.participants.values():
        # the participant sees their world's two envelopes, payloads in clear, and sends nothing
        wire = room.participant_state(participant.pid)["wire"]
        assert [(m["n"], m["sender"], m["kind"], m["sealed"]) for m in wire] == [
            (1, "data-center", "release-request", False), (2, "compliance", "attribute-release", False)]
        assert '"z": [' in wire[1]["payload"] and wire[1]["size"] > 1000
        z = _release(participant)
        for person in people:
            entry = room.ask(participant.pid, person, "wire")
            assert entry["kind"] == "attribute-release" and entry["message"] == 2
            assert entry["guess"] == z[person] and entry["headline"].endswith("signature verified")
        assert participant.world.network.messages == 2  # reading sends nothing
    live = room.state()
    assert not live["revealed"] and "leakage" not in live and live["pinned"] == len(people)
    assert not any("leakage" in row or "rightly" in row for row in live["participants"])
    assert live["parties"] == ["data-center", "compliance", "observer"] and live["moves"] == "reads"
    assert [(m["kind"], m["sealed"]) for m in live["sequence"]][:2] == [("release-request", False),
                                                                       ("attribute-release", False)]
    # one release at epsilon = 1 per world: each world's bound is the release's cap, e / (1 + e) = 73.1 %
    rows = live["participants"]
    assert all(row["epsilon_spent"] == 1.0 and row["bound"] == pytest.approx(100 / (1 + np.exp(-1))) for row in rows)
    assert live["bound"] == pytest.approx(100 / (1 + np.exp(-len(rows))))  # the room pooled every world's release
    room.reveal()
    state = room.state()
    pooled_truth = np.concatenate([room.truth[people]] * len(rows))
    pooled_read = np.concatenate([_release(p)[people] for p in room.participants.values()])
    assert state["leakage"] == pytest.approx(leakage(pooled_truth, pooled_read)) and state["leakage"] > 50
    assert room.describe() == "rr-release, ε = 1 per release, payloads in clear"


def test_a_confidential_channel_leaves_the_observer_at_chance(room: Room):
    room.configure("passive-observer", Defense("rr-release", confidential=True))
    participant = next(iter(room.participants.values()))
    mine = room.participant_state(participant.pid)
    assert [(m["kind"], m["sealed"]) for m in mine["wire"]] == [("release-request", True), ("attribute-release", True)]
    assert '"z"' not in str(mine) and all('"ciphertext": [' in m["payload"] for m in mine["wire"])
    read = room.ask(participant.pid, room.people[0], "wire")
    assert read["kind"] == "sealed" and read["guess"] is None and "size" in read["reading"]
    assert room.participant_state(participant.pid)["pinned"] == {}  # the wire told nothing: no guess made
    for person in room.people:  # a guess of their own: the same for everyone, whatever the sizes say
        assert room.ask(participant.pid, person, "1")["guess"] == 1
    # each card takes only its own moves and defenses; a refused configuration leaves the round as it was
    with pytest.raises(ConfigError, match="unknown guess 'sp'; choose one of wire, 0, 1"):
        room.ask(participant.pid, room.people[0], "sp")
    with pytest.raises(ConfigError, match="unknown protocol 'raw' for card 'passive-observer'; choose one of rr-re"):
        room.configure("passive-observer", Defense("raw"))
    with pytest.raises(ConfigError, match="unknown protocol 'rr-release' for card 'curious-data-center'"):
        room.configure("curious-data-center", Defense("rr-release"))
    assert room.state()["card"] == "passive-observer" and room.state()["settings"]["confidential"]
    room.reveal()
    assert room.state()["leakage"] == 50.0 and room.state()["rightly"] == len(room.people) // 2
    assert "confidential channel" in room.describe()


def test_secure_computation_opens_the_same_answers_to_the_querier(room: Room):
    room.configure("secure-computation", Defense("mpc"))
    participant = next(iter(room.participants.values()))
    for person in room.people[:2]:
        entry = room.ask(participant.pid, person)
        assert entry["kind"] == "metric-answer" and entry["guess"] == room.truth[person]
        assert "output shares of compliance (message #" in entry["headline"] and "mpc-helper (message #" in entry[
            "headline"]
    # a query is two exchanges: the compliance party's shares, then the helper's, opened by the data center
    kinds = [(m["sender"], m["recipient"], m["kind"]) for m in room.state()["sequence"][-4:]]
    assert kinds == [("data-center", "compliance", "mpc-query"), ("compliance", "data-center", "mpc-partial"),
                     ("data-center", "mpc-helper", "mpc-query"), ("mpc-helper", "data-center", "mpc-partial")]
    assert room.state()["parties"] == ["data-center", "compliance", "mpc-helper", "observer"]
    assert room.state()["bound"] == 100.0  # mpc charges nothing and promises nothing about the answers


@pytest.mark.system  # another round of two worlds with a helper each (seconds on a loaded machine)
def test_secure_computation_with_noise_is_charged_and_capped(room: Room):
    room.configure("secure-computation", Defense("mpc-dp", epsilon=0.5, budget=1.5))
    participant = next(iter(room.participants.values()), None) or room.join("ivan")  # alone in the system tier
    entries = [room.ask(participant.pid, person) for person in room.people[:3]]
    # two honest base queries and one of the participant's at 0.5 fill the budget of 1.5; the rest are refused
    assert [e["kind"] for e in entries] == ["metric-answer", "refusal", "refusal"]
    assert entries[1]["reason"] == "budget-exceeded"


@pytest.mark.parametrize(("card", "defense", "scenario"), [
    ("curious-data-center", Defense("raw"), "adult-reveal-precision"),
    ("curious-data-center", Defense("laplace", epsilon=0.5), "adult-likelihood"),
    ("passive-observer", Defense("rr-release", epsilon=0.5, confidential=True), "adult-rr-observer"),
    ("secure-computation", Defense("mpc"), "adult-mpc-reveal"),
    ("secure-computation", Defense("mpc-dp", epsilon=1.0), "adult-mpc-dp"),
])
def test_each_card_replays_its_own_catalog_scenario_under_the_defense(card: str, defense: Defense, scenario: str):
    replayed = replay_scenario(CARDS[card], defense.overrides())
    assert replayed.name == scenario and replayed.protocol.name == defense.protocol
    assert replayed.confidential == defense.confidential and replayed.backend == "local"
    assert getattr(replayed.protocol.params, "epsilon", None) == defense.epsilon


@pytest.mark.system  # the card's catalog scenario at its own size (4,000 people, 10,000 training rows)
def test_the_observers_replay_steps_through_the_release(tmp_path):
    from parley.scenarios.runner import leakage_bound

    scenario = replay_scenario(CARDS["passive-observer"], Defense("rr-release", epsilon=1.0).overrides())
    replay = replay_steps(scenario, tmp_path, run_secrets(3))
    assert [step["kind"] for step in replay["steps"]] == ["release-request", "attribute-release"]
    assert replay["steps"][1]["learned"] and 60 < replay["leakage"] < 80
    assert replay["bound"] == pytest.approx(leakage_bound(1.0, 0.0)) and replay["epsilon_spent"] == 1.0
