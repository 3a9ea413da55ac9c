"""The workshop room: a facilitator's card and defense, participants playing the curious data center.

Each participant gets a world of their own (:func:`parley.scenarios.world.build_world`, in this process, in
a folder of the room's): a real compliance party that verifies every signature, charges its ledger and
signs its answers or refusals, and the data center, which trains its base model, asks its honest audit
query, then defects: the participant's :class:`Player` takes over its identity and queries in its name.
A participant's query is the base model with one person's prediction flipped; the difference between its
answer and the base answer moves with that person's A (under ``raw``: its sign is A). The referee, the
room, holds A of the audit set and scores every guess; no party ever hands it over. The scores are the
referee's: while a round is live the room shows only progress that does not depend on A (a participant
watching a score move after each guess would read A off it, whatever the epsilon); the facilitator reveals
them when the round ends, and a revealed round takes no more queries.
"""

from __future__ import annotations

import math
import secrets
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties.attacks.scoring import leakage
from parley.parties.confidential import is_sealed
from parley.parties.handles import PartyHandle
from parley.parties.ids import new_query_id
from parley.parties.party import REFUSAL, Party
from parley.parties.run_secrets import RunSecrets
from parley.parties.wire import Envelope, Identity, Keyring
from parley.protocols import get_protocol
from parley.protocols.errors import ConfigError
from parley.scenarios.catalog import scenario_path
from parley.scenarios.explain import describe
from parley.scenarios.runner import leakage_bound
from parley.scenarios.spec import Scenario
from parley.scenarios.world import ADVERSARY, COMPLIANCE, DATA_CENTER, OBSERVER, World, build_world

__all__ = ["CARDS", "METRICS", "PROTOCOLS", "Card", "Defense", "Participant", "Room"]

#: The protocols a facilitator may pick: the metric-query ones whose answers a participant reads in clear.
PROTOCOLS = ("raw", "laplace", "dp-counts")
#: The metrics a participant may ask: statistical parity (moves with everyone), equal opportunity (y = 1 only).
METRICS = {"sp": "statistical parity (SP)", "eo": "equal opportunity (EO)"}
#: Messages of the room's sequence kept for the projector (the newest).
SEQUENCE_SHOWN = 20
UNKNOWN = "unknown {what} {got!r}; choose one of {known}"
NOT_ON_ROSTER = "person {got!r} is not on the room's roster ({people})"
NO_SUCH_PARTICIPANT = "no participant {got!r} in this room"
ROUND_OVER = "round {round} is over: the facilitator revealed the scores; wait for the next round"
#: Random bytes of a participant's id: their page's address is their only credential.
PID_BYTES = 16


@dataclass(frozen=True)
class Card:
    """A workshop card the room can play: its threat model, the catalog scenario its worlds start from."""

    name: str
    title: str
    scenario: str
    doc: str
    blurb: str


CARDS = {
    "curious-data-center": Card(
        "curious-data-center", "The curious data center", "adult-raw-single-query", "curious-data-center.md",
        "You are the data center. You trained without A; the compliance party holds A and answers fairness "
        "questions. Ask about models that differ from yours in one person's prediction, and read A off the "
        "answers."),
}


@dataclass(frozen=True)
class Defense:
    """What the facilitator sets against the room: protocol, epsilon, decimals, confidential, a budget cap."""

    protocol: str = "raw"
    epsilon: float | None = None
    decimals: int | None = None
    confidential: bool = False
    #: Total epsilon each participant's data center may spend (None: no cap; debits still recorded).
    budget: float | None = None

    def overrides(self) -> dict[str, Any]:
        """The scenario fields this defense sets (only the parameters the protocol takes)."""
        if self.protocol not in PROTOCOLS:
            raise ConfigError(UNKNOWN.format(what="protocol", got=self.protocol, known=", ".join(PROTOCOLS)))
        params = get_protocol(self.protocol).Params.model_fields
        values: dict[str, Any] = {"protocol.name": self.protocol, "confidential": self.confidential}
        if self.epsilon is not None and "epsilon" in params:
            values["protocol.epsilon"] = float(self.epsilon)
        if self.decimals is not None and "decimals" in params:
            values["protocol.decimals"] = int(self.decimals)
        if self.budget is not None and "epsilon" in params:  # raw spends nothing: a cap would change nothing
            values["budget"] = {"epsilon": float(self.budget)}
        return values

    def describe(self) -> str:
        """One line for the projector."""
        parts = [self.protocol]
        params = get_protocol(self.protocol).Params.model_fields if self.protocol in PROTOCOLS else {}
        if self.epsilon is not None and "epsilon" in params:
            parts.append(f"ε = {self.epsilon:g} per query")
        if self.decimals is not None and "decimals" in params:
            parts.append(f"{self.decimals} decimals")
        if self.budget is not None:
            parts.append(f"budget ε ≤ {self.budget:g}")
        parts.append("confidential channel" if self.confidential else "payloads in clear")
        return ", ".join(parts)


class Player(Party):
    """The participant at the data center's keyboard: queries in its name, keeps what comes back."""

    handlers: Mapping[str, str] = {"metric-answer": "_on_answer", REFUSAL: "_on_refusal"}

    def __init__(self, identity: Identity, keyring: Keyring, compliance: str, protocol: str) -> None:
        super().__init__(identity, keyring, protocol)
        self.compliance = compliance
        self.inbox: dict[str, tuple[str, dict[str, Any]]] = {}
        self.last: tuple[str, str] = ("", "")

    def query(self, metric: str, predictions: np.ndarray) -> Envelope:
        """A signed ``metric-query`` of one model, in the data center's name (sealed on a confidential channel)."""
        query_id = new_query_id()
        payload = {"metric": metric, "predictions": np.asarray(predictions, dtype=np.float64)[None, :],
                   "query_id": query_id}
        envelope = self.seal(self.compliance, "metric-query", payload)
        self.last = (query_id, envelope.id)
        return envelope

    def _on_answer(self, envelope: Envelope) -> None:
        self.inbox[str(envelope.payload.get("query_id"))] = ("answer", dict(envelope.payload))

    def _on_refusal(self, envelope: Envelope) -> None:
        self.inbox[str(envelope.payload.get("refused"))] = ("refusal", dict(envelope.payload))

    def last_reply(self) -> tuple[str, dict[str, Any]] | None:
        """The answer to the last query, or the refusal of its envelope; None if nothing came back."""
        query_id, envelope_id = self.last
        return self.inbox.get(query_id) or self.inbox.get(envelope_id)


class PlayerHandle(PartyHandle):
    """The :class:`Player` in a deployment's slot."""

    def query(self, metric: str, predictions: np.ndarray) -> Envelope:
        return self._call("query", metric, predictions)  # type: ignore[no-any-return]

    def last_reply(self) -> tuple[str, dict[str, Any]] | None:
        return self._call("last_reply")  # type: ignore[no-any-return]


@dataclass
class Participant:
    """One laptop in the room: their world, what they asked and what they pinned down."""

    pid: str
    name: str
    seat: int
    world: World
    base: dict[str, float]
    base_predictions: np.ndarray
    y: np.ndarray
    guesses: dict[int, int] = field(default_factory=dict)
    log: list[dict[str, Any]] = field(default_factory=list)

    @property
    def player(self) -> PlayerHandle:
        return PlayerHandle(self.world.deployment, ADVERSARY)


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

    # -- the facilitator ----------------------------------------------------------------------------------

    def _build_scenario(self) -> Scenario:
        scenario = Scenario.from_toml(scenario_path(self.card.scenario))
        values: dict[str, Any] = {"dataset.audit_size": self.audit_size, "dataset.train_size": self.train_size,
                                  "backend": "local",
                                  **self.defense.overrides()}
        return scenario.with_values(values)

    def configure(self, card: str, defense: Defense) -> None:
        """Start a new round: the card and defense the room plays; every participant's world starts afresh."""
        if card not in CARDS:
            raise ConfigError(UNKNOWN.format(what="card", got=card, known=", ".join(CARDS)))
        with self._lock:
            previous = (self.card, self.defense, self._scenario)
            self.card, self.defense = CARDS[card], defense
            try:
                self._scenario = self._build_scenario()
            except Exception:
                self.card, self.defense, self._scenario = previous
                raise
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
        participant = Participant(pid, name, seat, world, {}, np.empty(0), np.asarray(world.split.y_audit))
        world.network.observer = lambda envelope: self._record(participant, envelope)
        world.data_center.train()
        for metric in METRICS:
            world.network.exchange(world.data_center.audit_query(metric))
        for answer in world.data_center.answers_received():
            participant.base[answer["metric"]] = float(answer["values"][0])
        view, identity = world.data_center.defect()
        participant.base_predictions = np.asarray(view.require("base_predictions"), dtype=np.int8)
        world.deployment.add(ADVERSARY, Player, identity, world.keyring, COMPLIANCE, world.protocol.name)
        world.network.route(DATA_CENTER, ADVERSARY)
        return participant

    def _record(self, participant: Participant, envelope: Envelope) -> None:
        with self._lock:
            self.sequence.append(_wire_entry(participant.name, participant.world.network.messages, envelope))
            del self.sequence[:-SEQUENCE_SHOWN * 4]

    def participant(self, pid: str) -> Participant:
        """The participant ``pid``; ConfigError if the room has none."""
        found = self.participants.get(pid)
        if found is None:
            raise ConfigError(NO_SUCH_PARTICIPANT.format(got=pid))
        return found

    def ask(self, pid: str, person: int, metric: str = "sp") -> dict[str, Any]:
        """The participant's query: the base model with ``person``'s prediction flipped, ``metric`` of it.

        Returns what the participant sees: the answer (or the refusal) as signed and verified, the difference
        from the base answer, and the guess it gives (None when the difference tells nothing).
        """
        if metric not in METRICS:
            raise ConfigError(UNKNOWN.format(what="metric", got=metric, known=", ".join(METRICS)))
        if type(person) is not int or person not in self.people:
            raise ConfigError(NOT_ON_ROSTER.format(got=person, people=", ".join(map(str, self.people))))
        with self._lock:  # one query at a time in the room: a new round never closes a world under a query
            participant = self.participant(pid)
            if self.revealed:
                raise ConfigError(ROUND_OVER.format(round=self.round))
            world = participant.world
            predictions = participant.base_predictions.copy()
            was = int(predictions[person])
            predictions[person] = 1 - was
            envelope = participant.player.query(metric, predictions)
            sent_at = world.network.messages + 1
            world.network.exchange(envelope)
            reply = participant.player.last_reply()
            entry = self._read(participant, person, metric, was, reply, sent_at)
            participant.log.append(entry)
            return entry

    def _read(self, participant: Participant, person: int, metric: str, was: int,
              reply: tuple[str, dict[str, Any]] | None, sent_at: int) -> dict[str, Any]:
        entry: dict[str, Any] = {"person": person, "metric": metric, "flipped": f"{was} → {1 - was}",
                                 "message": sent_at, "signed_by": COMPLIANCE}
        if reply is None or reply[0] == "refusal":
            payload = reply[1] if reply is not None else {}
            entry.update(kind="refusal", reason=payload.get("reason", "no reply"), detail=payload.get("detail", ""),
                         guess=None)
            return entry
        payload = reply[1]
        value = float(np.asarray(payload["values"])[0])
        difference = value - participant.base[metric]
        # Flipping 0 -> 1 raises the person's group's rate: SP = rate(a=1) - rate(a=0) goes up if a = 1.
        moved = difference * (1 if was == 0 else -1)
        guess = None if moved == 0 or not math.isfinite(moved) else int(moved > 0)
        if guess is not None:
            participant.guesses[person] = guess
        else:
            participant.guesses.pop(person, None)
        entry.update(kind="metric-answer", value=value, base=participant.base[metric], difference=difference,
                     guess=guess, noise=payload.get("noise"), epsilon=payload.get("epsilon"),
                     decimals=payload.get("decimals"), says=describe("metric-answer", payload))
        return entry

    # -- the referee and the projector ----------------------------------------------------------------------

    def _scores(self, people: list[int], guesses: list[int]) -> dict[str, Any]:
        """The referee's scores of these guesses against the truth: leakage (balanced accuracy), how many right."""
        if not people or self.truth is None:
            return {"leakage": None, "rightly": 0}
        truth, a_hat = self.truth[np.asarray(people, dtype=np.int64)], np.asarray(guesses, dtype=np.int8)
        return {"leakage": float(leakage(truth, a_hat)), "rightly": int((truth == a_hat).sum())}

    def bound(self, epsilon: float, delta: float) -> float:
        """The leakage bound of what was spent, in %: 100 under a protocol with no privacy guarantee (``raw``)."""
        return 100.0 if self.defense.protocol == "raw" else leakage_bound(epsilon, delta)

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
        return {"pid": pid, "name": participant.name, "round": self.round, "card": self.card.title,
                "blurb": self.card.blurb, "defense": self.defense.describe(), "people": self.people,
                "metrics": METRICS, "groups": self.groups, "base": participant.base, "log": participant.log[::-1],
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
                "blurb": self.card.blurb, "defense": self.defense.describe(),
                "settings": {"protocol": self.defense.protocol, "epsilon": self.defense.epsilon,
                             "decimals": self.defense.decimals, "confidential": self.defense.confidential,
                             "budget": self.defense.budget},
                "roster": len(self.people), "participants": rows,
                "pinned": len({*pooled_people}), "guesses": len(pooled_people), **scores,
                # a coin's 95 % spread around 50 over that many guesses (the balanced accuracy of random labels)
                "chance": 1.96 * 50.0 / math.sqrt(len(pooled_people)) if pooled_people else None,
                "bound": self.bound(epsilon, delta), "epsilon_spent": epsilon,
                "parties": [DATA_CENTER, COMPLIANCE, OBSERVER],
                "sequence": self.sequence[-SEQUENCE_SHOWN:]}
