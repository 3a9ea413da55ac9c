"""The workshop room: a facilitator's card and defense, participants playing the card's adversary.

Each participant gets a world of their own (:func:`parley.scenarios.world.build_world`, in this process, in
a folder of the room's): a real compliance party that verifies every signature, charges its ledger and
signs its answers or refusals, and a real data center. What the participant plays is the card's
(:class:`~parley.scenarios.workshop.play.Card`, one plug-in per kind of adversary, in
:mod:`parley.scenarios.workshop.play`):

- :class:`QueryCard` (the curious data center, and the same under secure computation): the data center
  trains its base model, asks its honest audit queries, then defects: the participant's :class:`Player`
  takes over its identity and queries in its name. A query is the base model with one person's prediction
  flipped; the difference between its answer and the base answer moves with that person's A (under ``raw``
  and ``mpc``: its sign is A).
- :class:`ObserverCard` (the passive observer): the data center trains and asks for one randomized-response
  release of the audit set's A; the participant reads the wire, every envelope its world's network carries
  (the payload in clear, or only sender, recipient, kind and size on a confidential channel), and guesses A.

The referee, the room, holds A of the audit set and scores every guess; no party ever hands it over. The
scores are the referee's: while a round is live the room shows only progress that does not depend on A (a
participant watching a score move after each guess would read A off it, whatever the epsilon); the
facilitator reveals them when the round ends, and a revealed round takes no more guesses.
"""

from __future__ import annotations

import math
import secrets
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties.attacks.scoring import leakage
from parley.parties.compliance import has_costs
from parley.parties.confidential import is_sealed
from parley.parties.run_secrets import RunSecrets
from parley.parties.secure import HELPER
from parley.parties.wire import Envelope
from parley.protocols import get_protocol
from parley.protocols.errors import ConfigError
from parley.scenarios.catalog import scenario_path
from parley.scenarios.explain import describe
from parley.scenarios.runner import leakage_bound
from parley.scenarios.spec import Scenario
from parley.scenarios.workshop.play import CARDS, UNKNOWN, Defense, Participant
from parley.scenarios.world import COMPLIANCE, DATA_CENTER, OBSERVER, build_world

__all__ = ["CARDS", "Defense", "Room"]

#: Messages of the room's sequence kept for the projector (the newest).
SEQUENCE_SHOWN = 20
NOT_FOR_CARD = "unknown protocol {got!r} for card {card!r}; choose one of {known}"
NOT_ON_ROSTER = "person {got!r} is not on the room's roster ({people})"
NO_SUCH_PARTICIPANT = "no participant {got!r} in this room"
ROUND_OVER = "round {round} is over: the facilitator revealed the scores; wait for the next round"
#: Random bytes of a participant's id: their page's address is their only credential.
PID_BYTES = 16
#: Lanes of the message sequence, with the note under each party's name.
LANES = {DATA_CENTER: "data center", COMPLIANCE: "compliance", HELPER: "MPC helper", OBSERVER: "observer"}


def _wire_entry(owner: str, number: int, envelope: Envelope) -> dict[str, Any]:
    """One message of the room's sequence: who sent what to whom, and what the observer reads of it."""
    sealed = is_sealed(envelope.payload)
    return {"who": owner, "n": number, "sender": envelope.sender, "recipient": envelope.recipient,
            "kind": envelope.kind, "protocol": envelope.protocol, "sealed": sealed,
            "says": describe(envelope.kind, envelope.payload)}


class Room:
    """A workshop session: the facilitator's card and defense, the participants' worlds, the referee's truth.

    Parameters
    ----------
    folder : path, optional
        Where the participants' worlds keep their transcripts and ledgers (a temporary folder if omitted).
    roster : int
        How many people of the audit set the room plays for: half of them drawn from each group by the
        referee with the scenario's seed (so that the leakage, a balanced accuracy, scores both groups).
    secrets : RunSecrets, optional
        The room's secrets; each participant's world gets a child of them (fresh from OS entropy if omitted).
    audit_size, train_size : int
        Sizes of the audit set and of the data center's training set of every world (5,000 training rows
        train the base model in about half a second: a participant joins without a wait).
    """

    def __init__(self, folder: str | Path | None = None, roster: int = 12, secrets: RunSecrets | None = None,
                 audit_size: int = 1000, train_size: int = 5000) -> None:
        self._tmp = None
        if folder is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="parley-workshop-")
            folder = self._tmp.name
        self.folder = Path(folder)
        self.roster = int(roster)
        self.secrets = secrets if secrets is not None else RunSecrets.fresh()
        self.audit_size = int(audit_size)
        self.train_size = int(train_size)
        self.people: list[int] = []
        self.card = CARDS["curious-data-center"]
        self.defense = Defense()
        self.participants: dict[str, Participant] = {}
        self.round = 0
        self.truth: np.ndarray | None = None
        self.groups: dict[str, str] = {}
        self.sequence: list[dict[str, Any]] = []
        #: Whether the facilitator ended the round and revealed the scores (a new round hides them again).
        self.revealed = False
        self._lock = threading.RLock()
        self._scenario = self._build_scenario()
        self._charges = self._protocol_charges()

    # -- the facilitator ----------------------------------------------------------------------------------

    def _build_scenario(self) -> Scenario:
        if self.defense.protocol not in self.card.protocols:
            raise ConfigError(NOT_FOR_CARD.format(got=self.defense.protocol, card=self.card.name,
                                                  known=", ".join(self.card.protocols)))
        scenario = Scenario.from_toml(scenario_path(self.card.scenario))
        values: dict[str, Any] = {"dataset.audit_size": self.audit_size, "dataset.train_size": self.train_size,
                                  "backend": "local",
                                  **self.defense.overrides()}
        return scenario.with_values(values)

    def _protocol_charges(self) -> bool:
        """Does the round's protocol promise anything (charge epsilon)? ``raw`` and ``mpc`` do not: bound 100 %."""
        return has_costs(get_protocol(self._scenario.protocol.name)(self._scenario.protocol.params))

    def describe(self) -> str:
        """The round's defense in one line for the pages, as the scenario runs it (a default epsilon included)."""
        protocol = self._scenario.protocol
        params = protocol.params
        parts = [protocol.name]
        epsilon, decimals = getattr(params, "epsilon", None), getattr(params, "decimals", None)
        if epsilon is not None:
            parts.append(f"ε = {epsilon:g} per {self.card.per}")
        if decimals is not None:
            parts.append(f"{decimals} decimals")
        if self._scenario.budget is not None and self.defense.budget is not None:
            parts.append(f"budget ε ≤ {self.defense.budget:g}")
        parts.append("confidential channel" if self._scenario.confidential else "payloads in clear")
        return ", ".join(parts)

    def configure(self, card: str, defense: Defense) -> None:
        """Start a new round: the card and defense the room plays; every participant's world starts afresh."""
        if card not in CARDS:
            raise ConfigError(UNKNOWN.format(what="card", got=card, known=", ".join(CARDS)))
        with self._lock:
            previous = (self.card, self.defense, self._scenario)
            self.card, self.defense = CARDS[card], defense
            try:
                self._scenario = self._build_scenario()
                self._charges = self._protocol_charges()
            except Exception:
                self.card, self.defense, self._scenario = previous
                raise
            if self._scenario.dataset != previous[2].dataset or self._scenario.seed != previous[2].seed:
                self.truth = None  # another card's data (another protected attribute): the referee draws again
            old, self.participants = self.participants, {}
            self.round += 1
            self.sequence = []
            self.revealed = False
            try:  # the same people, each with a fresh world; readers wait on the lock meanwhile
                for pid, participant in old.items():
                    self.participants[pid] = self._start(pid, participant.name, participant.seat)
            finally:
                self._close(old)

    def reveal(self) -> None:
        """End the round: the scores (leakage, guesses made rightly) show; no more queries until a new round."""
        with self._lock:
            self.revealed = True

    @staticmethod
    def _close(participants: Mapping[str, Participant]) -> None:
        for participant in participants.values():
            try:
                participant.world.transcript.abort()
            finally:
                participant.world.deployment.shutdown()

    def close(self) -> None:
        """End every participant's world (and remove the room's temporary folder, if it made one)."""
        with self._lock:
            self._close(self.participants)
            self.participants = {}
        if self._tmp is not None:
            self._tmp.cleanup()

    # -- a participant --------------------------------------------------------------------------------------

    def join(self, name: str) -> Participant:
        """A new participant: their own world, trained and audited once, ready to query."""
        with self._lock:
            seat = len(self.participants) + 1
            pid = secrets.token_urlsafe(PID_BYTES)  # unguessable: a page's address is its participant's
            participant = self._start(pid, (name.strip() or f"participant {seat}")[:40], seat)
            self.participants[pid] = participant
            return participant

    def _start(self, pid: str, name: str, seat: int) -> Participant:
        run_dir = self.folder / f"round-{self.round}" / pid
        run_dir.mkdir(parents=True, exist_ok=True)
        # each seat's parties draw from their own secrets, the same at every replay of the room with its secrets
        world = build_world(self._scenario, run_dir, None, None, None, in_process=True,
                            secrets=self.secrets.child(f"round-{self.round}/seat-{seat}"))
        if self.truth is None or self.truth.size != world.split.a_audit.size:
            self.truth = np.asarray(world.split.a_audit, dtype=np.int8)
            picker = np.random.default_rng(self._scenario.seed)
            half = [picker.choice(np.flatnonzero(self.truth == g), self.roster // 2 + self.roster % 2 * g,
                                  replace=False) for g in (0, 1)]
            self.people = sorted(int(i) for i in np.concatenate(half))
            self.groups = {str(code): str(label) for code, label in enumerate(world.split.table.groups)}
        participant = Participant(pid, name, seat, world)
        world.network.observer = lambda envelope: self._record(participant, envelope)
        try:
            self.card.start(participant)
        except BaseException:
            self._close({pid: participant})
            raise
        return participant

    def _record(self, participant: Participant, envelope: Envelope) -> None:
        with self._lock:
            participant.seen.append(envelope)
            self.sequence.append(_wire_entry(participant.name, len(participant.seen), envelope))
            del self.sequence[:-SEQUENCE_SHOWN * 4]

    def participant(self, pid: str) -> Participant:
        """The participant ``pid``; ConfigError if the room has none."""
        found = self.participants.get(pid)
        if found is None:
            raise ConfigError(NO_SUCH_PARTICIPANT.format(got=pid))
        return found

    def ask(self, pid: str, person: int, choice: str | None = None) -> dict[str, Any]:
        """The participant's move about ``person``, as their card plays it (a query card: ``choice`` the metric).

        Returns what the participant sees (:meth:`Card.act`): what came back, signed and verified, and the
        guess it gives (None when it tells nothing). ``choice`` defaults to the card's first.
        """
        card = self.card
        choice = next(iter(card.choices)) if choice is None else choice
        if choice not in card.choices:
            raise ConfigError(UNKNOWN.format(what=card.choice, got=choice, known=", ".join(card.choices)))
        if type(person) is not int or person not in self.people:
            raise ConfigError(NOT_ON_ROSTER.format(got=person, people=", ".join(map(str, self.people))))
        with self._lock:  # one move at a time in the room: a new round never closes a world under a query
            participant = self.participant(pid)
            if self.revealed:
                raise ConfigError(ROUND_OVER.format(round=self.round))
            entry = self.card.act(participant, person, choice)
            if entry["guess"] is not None:
                participant.guesses[person] = int(entry["guess"])
            else:
                participant.guesses.pop(person, None)
            participant.log.append(entry)
            return entry

    # -- the referee and the projector ----------------------------------------------------------------------

    def _scores(self, people: list[int], guesses: list[int]) -> dict[str, Any]:
        """The referee's scores of these guesses against the truth: leakage (balanced accuracy), how many right."""
        if not people or self.truth is None:
            return {"leakage": None, "rightly": 0}
        truth, a_hat = self.truth[np.asarray(people, dtype=np.int64)], np.asarray(guesses, dtype=np.int8)
        return {"leakage": float(leakage(truth, a_hat)), "rightly": int((truth == a_hat).sum())}

    def bound(self, epsilon: float, delta: float) -> float:
        """The leakage bound of what was spent, in %: 100 under a protocol that promises nothing (``raw``, ``mpc``)."""
        return leakage_bound(epsilon, delta) if self._charges else 100.0

    def spent(self, participant: Participant) -> tuple[float, float, int]:
        """Epsilon and delta the participant's data center spent, and the refusals its compliance party sent."""
        stats = participant.world.compliance.stats()
        return (float(sum(stats["epsilon_spent"].values())), float(sum(stats["delta_spent"].values())),
                int(stats["refusals_sent"]))

    def participant_state(self, pid: str) -> dict[str, Any]:
        """What a participant's page shows: their answers, what they pinned down, their leakage and budget."""
        with self._lock:
            return self._participant_state(pid)

    def _participant_state(self, pid: str) -> dict[str, Any]:
        participant = self.participant(pid)
        epsilon, delta, refusals = self.spent(participant)
        # No leakage here: only the referee (the projector) knows A to score the guesses against.
        card = self.card
        return {"pid": pid, "name": participant.name, "round": self.round, "card": card.title, "card_name": card.name,
                "blurb": card.blurb, "defense": self.describe(), "people": self.people, "choices": card.choices,
                "choice_order": list(card.choices),
                "labels": card.labels, "columns": card.columns, **card.view(participant),
                "groups": self.groups, "base": participant.base, "log": participant.log[::-1],
                "pinned": {str(k): v for k, v in sorted(participant.guesses.items())}, "epsilon_spent": epsilon,
                "bound": self.bound(epsilon, delta), "refusals": refusals,
                "messages": participant.world.network.messages, "revealed": self.revealed}

    def state(self) -> dict[str, Any]:
        """What the projector shows: the room's progress, budget, the sequence; the scores once revealed.

        Until the facilitator reveals the round (:meth:`reveal`) nothing here depends on the truth: no leakage,
        no count of right guesses, per participant or for the room. A live score would tell a participant
        watching it whether their last guess was right, and so A, whatever the protocol's epsilon.
        """
        with self._lock:
            return self._state()

    def _state(self) -> dict[str, Any]:
        rows: list[dict[str, Any]] = []
        spending: list[tuple[float, float]] = []
        pooled_people: list[int] = []
        pooled_guesses: list[int] = []
        for participant in self.participants.values():
            epsilon, delta, refusals = self.spent(participant)
            spending.append((epsilon, delta))
            row = {"name": participant.name, "queries": len(participant.log), "pinned": len(participant.guesses),
                   "epsilon_spent": epsilon, "bound": self.bound(epsilon, delta), "refusals": refusals,
                   "messages": participant.world.network.messages}
            if self.revealed:
                row.update(self._scores(list(participant.guesses), list(participant.guesses.values())))
            rows.append(row)
            pooled_people += list(participant.guesses)
            pooled_guesses += list(participant.guesses.values())
        # Every world's compliance party answers about the same people's A: the room's guesses stand beside the
        # bound of everything the room spent (sequential composition over the worlds), not one participant's.
        epsilon, delta = sum(spent[0] for spent in spending), sum(spent[1] for spent in spending)
        scores = self._scores(pooled_people, pooled_guesses) if self.revealed else {}
        return {"round": self.round, "revealed": self.revealed, "card": self.card.name, "card_title": self.card.title,
                "blurb": self.card.blurb, "defense": self.describe(), "role": self.card.labels["role"],
                "moves": self.card.labels["moves"],
                "settings": {"protocol": self.defense.protocol, "epsilon": self.defense.epsilon,
                             "decimals": self.defense.decimals, "confidential": self.defense.confidential,
                             "budget": self.defense.budget},
                "roster": len(self.people), "participants": rows,
                "pinned": len({*pooled_people}), "guesses": len(pooled_people), **scores,
                # a coin's 95 % spread around 50 over that many guesses (the balanced accuracy of random labels)
                "chance": 1.96 * 50.0 / math.sqrt(len(pooled_people)) if pooled_people else None,
                "bound": self.bound(epsilon, delta), "epsilon_spent": epsilon,
                "parties": list(self.card.parties),
                "lanes": {party: [LANES[party], note] for party, note in self.card.parties.items()},
                "sequence": self.sequence[-SEQUENCE_SHOWN:]}
