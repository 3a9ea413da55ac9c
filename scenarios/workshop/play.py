"""What a workshop participant plays: the cards (one plug-in per kind of adversary) and the player's party.

A :class:`Card` holds what differs between cards as data (its protocols, the defense knobs that apply, the
participant's choices and words, its replay scenarios, the parties its sequence draws) and three hooks:
``start`` (a participant's world is built), ``act`` (one move: a person and a choice) and ``view`` (what
the participant's page shows). :class:`QueryCard` plays the curious data center, in clear or under secure
computation; :class:`ObserverCard` the passive observer of a randomized-response release. The room
(:mod:`parley.scenarios.workshop.game`) is shared by every card.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from parley.parties.codecs import Codec
from parley.parties.confidential import is_sealed
from parley.parties.handles import PartyHandle
from parley.parties.ids import new_query_id
from parley.parties.party import REFUSAL, Party
from parley.parties.secure import HELPER
from parley.parties.wire import Envelope, Identity, Keyring, verify_envelope
from parley.protocols import get_protocol
from parley.protocols.errors import WireError
from parley.protocols.mechanisms.randomized_response import ATTRIBUTE_RELEASE, RELEASE_REQUEST
from parley.scenarios.explain import describe
from parley.scenarios.world import ADVERSARY, COMPLIANCE, DATA_CENTER, OBSERVER, World

__all__ = ["CARDS", "GUESSES", "METRICS", "Card", "Defense", "ObserverCard", "Participant", "QueryCard"]

#: The metrics a participant of a query card may ask: statistical parity (moves with everyone), equal
#: opportunity (y = 1 only).
METRICS = {"sp": "statistical parity (SP)", "eo": "equal opportunity (EO)"}
#: What an observer may answer for a person: the value the wire shows, or a guess of their own.
GUESSES = {"wire": "what the wire shows", "0": "A = 0", "1": "A = 1"}
#: Values of an array a participant's wire view shows (the rest is counted).
PREVIEW_VALUES = 8
UNKNOWN = "unknown {what} {got!r}; choose one of {known}"


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
        params = get_protocol(self.protocol).Params.model_fields
        values: dict[str, Any] = {"protocol.name": self.protocol, "confidential": self.confidential}
        if self.epsilon is not None and "epsilon" in params:
            values["protocol.epsilon"] = float(self.epsilon)
        if self.decimals is not None and "decimals" in params:
            values["protocol.decimals"] = int(self.decimals)
        if self.budget is not None and "epsilon" in params:  # a protocol without epsilon spends nothing
            values["budget"] = {"epsilon": float(self.budget)}
        return values


class Player(Party):
    """The participant at the data center's keyboard: queries in its name, keeps what comes back."""

    handlers: Mapping[str, str] = {"metric-answer": "_on_answer", REFUSAL: "_on_refusal"}

    def __init__(self, identity: Identity, keyring: Keyring, compliance: str, protocol: str,
                 codec: Codec | None = None) -> None:
        super().__init__(identity, keyring, protocol, codec)
        self.compliance = compliance
        self.inbox: dict[str, tuple[str, dict[str, Any]]] = {}
        self.last: tuple[str, str] = ("", "")

    def query(self, metric: str, predictions: np.ndarray) -> Envelope:
        """A signed ``metric-query`` of one model, in the data center's name.

        Sealed on a confidential channel; under a secure protocol the codec the data center wore sends it as
        shares (``mpc-query``) and opens the answer from the compliance party's and the helper's shares.
        """
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
    """One laptop in the room: their world, what they did and what they guessed."""

    pid: str
    name: str
    seat: int
    world: World
    guesses: dict[int, int] = field(default_factory=dict)
    log: list[dict[str, Any]] = field(default_factory=list)
    #: A query card's base answers (metric -> value) and base model's predictions.
    base: dict[str, float] = field(default_factory=dict)
    base_predictions: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int8))
    #: Every envelope the participant's world carried, as on the wire (an observer card reads these).
    seen: list[Envelope] = field(default_factory=list)

    @property
    def player(self) -> PlayerHandle:
        return PlayerHandle(self.world.deployment, ADVERSARY)


@dataclass(frozen=True)
class Card(ABC):
    """A workshop card the room can play: what differs from card to card, as data and three hooks.

    ``protocols`` are the defenses the facilitator may pick (the first is the default) and ``knobs`` the
    other fields of :class:`Defense` that apply; ``choices`` what a participant picks beside a person
    (``choice`` names it in errors); ``labels`` the words of the participant's page; ``columns`` the middle
    columns of their log; ``replays`` the catalog scenario replay mode runs per protocol (``"*"``: any other);
    ``parties`` the lanes of the message sequence, each with its note.
    """

    name: str
    title: str
    scenario: str
    doc: str
    blurb: str
    protocols: tuple[str, ...]
    knobs: tuple[str, ...]
    choices: Mapping[str, str]
    choice: str
    labels: Mapping[str, str]
    columns: tuple[str, ...]
    replays: Mapping[str, str]
    parties: Mapping[str, str]
    #: What one epsilon of the defense pays for (``ε = 1 per query``).
    per: str = "query"
    #: Form values the projector fills in when the facilitator picks the card.
    defaults: Mapping[str, str] = field(default_factory=dict)

    @abstractmethod
    def start(self, participant: Participant) -> None:
        """Bring the participant's fresh world to where they take over (its data center trained)."""

    @abstractmethod
    def act(self, participant: Participant, person: int, choice: str) -> dict[str, Any]:
        """The participant's move about ``person``: the log entry they see, ``guess`` the guess it gives (or None).

        The entry's ``cells`` fill the card's ``columns``; ``headline`` and ``reading`` say what came back.
        """

    def view(self, participant: Participant) -> dict[str, Any]:
        """What else the participant's page shows (the wire, for an observer)."""
        return {}

    def replay(self, protocol: str) -> str:
        """The catalog scenario replay mode runs for this card under ``protocol``."""
        return self.replays.get(protocol, self.replays["*"])


class QueryCard(Card):
    """The curious data center: the participant queries in the data center's name, one flipped person a query."""

    def start(self, participant: Participant) -> None:
        world = participant.world
        world.data_center.train()
        for metric in METRICS:
            world.network.exchange(world.data_center.audit_query(metric))
        for answer in world.data_center.answers_received():
            participant.base[answer["metric"]] = float(answer["values"][0])
        view, identity = world.data_center.defect()
        participant.base_predictions = np.asarray(view.require("base_predictions"), dtype=np.int8)
        world.deployment.add(ADVERSARY, Player, identity, world.keyring, COMPLIANCE, world.protocol.name,
                             codec=world.adversary_codec)
        world.network.route(DATA_CENTER, ADVERSARY)

    def act(self, participant: Participant, person: int, choice: str) -> dict[str, Any]:
        world = participant.world
        predictions = participant.base_predictions.copy()
        was = int(predictions[person])
        predictions[person] = 1 - was
        envelope = participant.player.query(choice, predictions)
        sent_at = world.network.messages + 1
        world.network.exchange(envelope)
        reply = participant.player.last_reply()
        entry: dict[str, Any] = {"person": person, "metric": choice, "flipped": f"{was} → {1 - was}",
                                 "message": sent_at, "signed_by": COMPLIANCE}
        if reply is None or reply[0] == "refusal":
            payload = reply[1] if reply is not None else {}
            reason = payload.get("reason", "no reply")
            entry.update(kind="refusal", reason=reason, detail=payload.get("detail", ""), guess=None,
                         cells=[choice, str(reason), ""])
            return entry
        payload = reply[1]
        value = float(np.asarray(payload["values"])[0])
        difference = value - participant.base[choice]
        # Flipping 0 -> 1 raises the person's group's rate: SP = rate(a=1) - rate(a=0) goes up if a = 1.
        moved = difference * (1 if was == 0 else -1)
        guess = None if moved == 0 or not math.isfinite(moved) else int(moved > 0)
        says = describe("metric-answer", payload)
        entry.update(kind="metric-answer", value=value, base=participant.base[choice], difference=difference,
                     guess=guess, noise=payload.get("noise"), epsilon=payload.get("epsilon"),
                     decimals=payload.get("decimals"), says=says,
                     cells=[choice, f"{value:.6g}", f"{difference:.3g}"],
                     headline=self._headline(sent_at, world.network.messages, says),
                     reading=f"difference from your base answer: {difference:.4g}")
        return entry


    @staticmethod
    def _headline(sent_at: int, last: int, says: str) -> str:
        """Where the answer came from: one signed reply, or (secure computation) output shares opened together."""
        if last == sent_at + 1:
            return f"Signed answer from {COMPLIANCE}, signature verified (message #{last}): {says}"
        return (f"Answer opened from the signed output shares of {COMPLIANCE} (message #{sent_at + 1}) and "
                f"{HELPER} (message #{last}), signatures verified: {says}")


def _preview(payload: Mapping[str, Any]) -> str:
    """A payload as an observer reads it off the wire: its fields, arrays cut to their first values."""
    def short(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            flat = value.ravel()
            shown = [v.item() for v in flat[:PREVIEW_VALUES]]
            return shown + [f"… {flat.size:,} values"] if flat.size > PREVIEW_VALUES else shown
        if isinstance(value, Mapping):
            return {str(k): short(v) for k, v in value.items()}
        return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
    return json.dumps(short(payload), ensure_ascii=False)


def _wire_size(envelope: Envelope) -> int:
    """Bytes of the envelope on the wire log: its transcript line, arrays in base64."""
    return len(json.dumps(envelope.to_record(), separators=(",", ":")).encode("utf-8"))


class ObserverCard(Card):
    """The passive observer: the participant reads their world's wire and guesses A from the release on it."""

    def start(self, participant: Participant) -> None:
        world = participant.world
        world.data_center.train()
        world.network.exchange(world.data_center.request(RELEASE_REQUEST, {"set": "audit"}))

    @staticmethod
    def _release(participant: Participant) -> tuple[int, Envelope] | None:
        """The reply to the release request as on the wire (a release, sealed or not, or a refusal), numbered."""
        found = None
        for number, envelope in enumerate(participant.seen, 1):
            if envelope.sender == COMPLIANCE and envelope.kind in (ATTRIBUTE_RELEASE, REFUSAL):
                found = (number, envelope)
        return found

    def act(self, participant: Participant, person: int, choice: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"person": person, "choice": choice, "signed_by": COMPLIANCE}
        found = self._release(participant)
        value: int | None = None
        if found is None:
            entry.update(message=None, kind="none", reading="nothing on the wire answers the release request")
        else:
            number, envelope = found
            try:  # the observer holds the public keys: it checks what it reads
                verify_envelope(envelope, participant.world.keyring)
                checked = "signature verified"
            except WireError as exc:
                checked = f"signature NOT verified ({exc})"
            size = _wire_size(envelope)
            entry.update(message=number, size=size, headline=f"Read off the wire: message #{number}, "
                         f"{envelope.kind} from {envelope.sender} to {envelope.recipient}, {size:,} bytes, {checked}")
            if is_sealed(envelope.payload):
                entry.update(kind="sealed", reading=f"sealed: you see its size ({size:,} bytes), not person "
                             f"{person}'s value")
            elif envelope.kind == REFUSAL:
                entry.update(kind="refusal", reason=envelope.payload.get("reason", "?"),
                             detail=envelope.payload.get("detail", ""),
                             reading="the compliance party refused the release: nothing of A is on the wire")
            else:
                z = np.asarray(envelope.payload["z"])
                value = int(z[person]) if 0 <= person < z.size and int(z[person]) >= 0 else None
                keep = envelope.payload.get("pi")
                entry.update(kind=ATTRIBUTE_RELEASE, value=value, epsilon=envelope.payload.get("epsilon"),
                             reading=f"person {person}'s released value z = {value}" + (
                                 f" (kept with probability {float(keep):.2f}, flipped otherwise)"
                                 if keep is not None else ""))
        # Binary randomized response keeps A with probability pi > 1/2: the Bayes guess (balanced) is z itself.
        guess = value if choice == "wire" else int(choice)
        shown = "sealed" if entry["kind"] == "sealed" else "–" if value is None else f"z = {value}"
        entry.update(guess=guess, cells=[shown, self.choices[choice]])
        if choice != "wire":
            entry["reading"] += "; your own guess"
        return entry

    def view(self, participant: Participant) -> dict[str, Any]:
        wire = []
        for number, envelope in enumerate(participant.seen, 1):
            sealed = is_sealed(envelope.payload)
            wire.append({"n": number, "sender": envelope.sender, "recipient": envelope.recipient,
                         "kind": envelope.kind, "protocol": envelope.protocol, "size": _wire_size(envelope),
                         "sealed": sealed,
                         "payload": _preview(envelope.payload),  # sealed: the cipher's name, nonce, ciphertext
                         "says": describe(envelope.kind, envelope.payload)})
        return {"wire": wire}


QUERY_LABELS = {"person": "whose prediction to flip", "choice": "metric", "send": "Send signed query",
                "moves": "queries",
                "pinned": "What you have pinned down", "role": "the curious data center",
                "help": "The query is your base model with that one person's prediction flipped, signed with the "
                        "data center's key. Its answer minus your base answer moves with that person's A: up if "
                        "A = 1 when you flip 0 → 1."}
QUERY_COLUMNS = ("metric", "answer", "difference")

CARDS: dict[str, Card] = {card.name: card for card in (
    QueryCard(
        "curious-data-center", "The curious data center", "adult-raw-single-query", "curious-data-center.md",
        "You are the data center. You trained without A; the compliance party holds A and answers fairness "
        "questions. Ask about models that differ from yours in one person's prediction, and read A off the "
        "answers.",
        protocols=("raw", "laplace", "dp-counts"), knobs=("epsilon", "decimals", "budget", "confidential"),
        choices=METRICS, choice="metric", labels=QUERY_LABELS, columns=QUERY_COLUMNS,
        replays={"raw": "adult-reveal-precision", "*": "adult-likelihood"},
        parties={DATA_CENTER: "the participant, in its name", COMPLIANCE: "holds A", OBSERVER: "reads the wire"},
        defaults={"epsilon": "0.5"}),
    ObserverCard(
        "passive-observer", "The passive observer", "adult-rr-observer", "passive-observer.md",
        "You read the wire. The data center asks the compliance party for a randomized-response release of "
        "the audit set's A and audits its model with it; nobody misbehaves. Read the envelopes as they pass "
        "and guess A of the people on the roster.",
        protocols=("rr-release",), knobs=("epsilon", "confidential"),
        choices=GUESSES, choice="guess", columns=("the wire shows", "your guess"),
        labels={"person": "whose A to guess", "choice": "your guess", "send": "Read and guess", "moves": "reads",
                "pinned": "What you have guessed", "role": "the passive observer",
                "help": "You send nothing: you read the envelopes your world's network carries. Under "
                        "randomized response each released value is A kept with probability e^ε / (1 + e^ε), "
                        "flipped otherwise: the wire's value is your best guess. On a confidential channel "
                        "you see only who talked to whom, the kinds and the sizes."},
        replays={"*": "adult-rr-observer"},
        parties={DATA_CENTER: "honest", COMPLIANCE: "releases A, randomized", OBSERVER: "the participants"},
        per="release", defaults={"epsilon": "1"}),
    QueryCard(
        "secure-computation", "Secure computation hides inputs, not outputs", "adult-mpc-reveal",
        "secure-computation.md",
        "You are the data center, under secure computation: your predictions leave as secret shares, the "
        "compliance party never sees them, you never see A, a helper computes with you. The answers are "
        "still opened to you. Ask about models that differ from yours in one person's prediction.",
        protocols=("mpc", "mpc-dp"), knobs=("epsilon", "budget"),
        choices=METRICS, choice="metric", labels=QUERY_LABELS, columns=QUERY_COLUMNS,
        replays={"mpc": "adult-mpc-reveal", "*": "adult-mpc-dp"},
        parties={DATA_CENTER: "the participant, in its name", COMPLIANCE: "holds A, sees shares",
                 HELPER: "holds nothing", OBSERVER: "reads the wire"},
        defaults={"epsilon": "0.5"}),
)}
