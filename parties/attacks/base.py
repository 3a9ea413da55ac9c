"""Attack plug-ins: what an adversary sees, what it sends, what it concludes.

An active attack is a generator: it yields :class:`Probe` s (metric queries the
curious data center submits) and receives the released values of each, then
returns a :class:`Reconstruction`. Probes whose making does not depend on each
other's answers may be yielded together as :class:`Probes`: they go on the wire
together and their answers come back one by one, in order (see :class:`Probes`).
Written this way, the attack logic is pure and the adversary party only moves
messages. A passive attack instead reads the (query, answer) exchanges an observer
saw on the wire.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, cast

import numpy as np
from pydantic import BaseModel, ConfigDict
from typing_extensions import TypeVar

from parley.protocols.errors import AttackError
from parley.protocols.plugin import Plugin
from parley.protocols.queries import Edits
from parley.protocols.registry import Registry

__all__ = [
    "ATTACKS", "ACTIVE", "PASSIVE", "Answer", "Attack", "AttackParams", "AttackerView", "Exchange", "Probe",
    "Probes", "Reconstruction", "answer_all", "ask", "each_probe", "get_attack", "register_attack", "probe_accuracy",
]

CURIOUS_DATA_CENTER = "curious-data-center"
PASSIVE_OBSERVER = "passive-observer"
ACTIVE = (CURIOUS_DATA_CENTER,)
PASSIVE = (PASSIVE_OBSERVER,)

UNKNOWN_ATTACK = "unknown attack {name!r}; known attacks: {known}"
NOT_ACTIVE = "attack {name!r} is passive (threat models: {models}); it sends no queries"
NOT_PASSIVE = "attack {name!r} needs to send queries (threat models: {models}); a passive observer cannot run it"
EMPTY_PROBES = "Probes holds no probe (a bug in the attack)"
ASKED_TOO_EARLY = ("the attack asked again with {left} answers of its Probes still to come (it yields None "
                   "until the last; a bug in the attack)")
NOTHING_ASKED = "the attack yielded None with no answer of its Probes outstanding (a bug in the attack)"
PROBE_FORM = "a Probe gives either predictions or edits of the kept model it is relative_to (a bug in the attack)"
NOT_IN_VIEW = "the attacker's view holds no {field}: this attack needs the curious data center's base model"


class AttackParams(BaseModel):
    """Base of every attack's parameters (frozen, unknown keys rejected)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


#: An attack's parameter model: ``class LinearReveal(Attack[LinearParams])``; a bare ``Attack`` has ``AttackParams``.
P = TypeVar("P", bound=AttackParams, default=AttackParams, covariant=True)


@dataclass(frozen=True)
class AttackerView:
    """What the adversary knows before it starts.

    For a curious data center: the audit set's size, its own base model's scores
    and binary predictions on it, and the audit labels (the data center holds
    X and y of the audit set, never A). A passive observer knows only ``n``.
    """

    n: int
    base_scores: np.ndarray | None = None
    base_predictions: np.ndarray | None = None
    y: np.ndarray | None = None

    def require(self, field: Literal["base_scores", "base_predictions", "y"]) -> np.ndarray:
        """The view's ``field``; AttackError naming it if this attacker does not hold it."""
        value: np.ndarray | None = getattr(self, field)
        if value is None:
            raise AttackError(NOT_IN_VIEW.format(field=field))
        return value


@dataclass(frozen=True)
class Probe:
    """One metric query an attack wants answered: m models' outputs on the audit set.

    ``keep`` asks the compliance party to keep this (one-model) probe under the
    name ``name``; a later probe with ``relative_to`` that name travels as the
    entries it changes, which is how flip and block probes stay small on the wire.
    Such a probe may give only those entries, as ``edits`` of the kept model
    (``predictions`` None): nothing n-wide is then built for it anywhere on the
    way (the attack, the adversary, the wire, the compliance party's answer).
    :meth:`matrix` gives the (m, n) models either way.
    """

    metric: str
    predictions: np.ndarray | None  # (m, n); None when ``edits`` gives the models
    purpose: str = ""
    keep: bool = False
    name: str | None = None
    relative_to: str | None = None
    edits: Edits | None = None

    def __post_init__(self) -> None:
        if (self.predictions is None) == (self.edits is None) or (self.edits is not None and self.relative_to is None):
            raise AttackError(PROBE_FORM)

    def matrix(self) -> np.ndarray:
        """The probe's (m, n) models (expanded from ``edits`` when it is given as edits)."""
        if self.edits is not None:
            return self.edits.expand()
        assert self.predictions is not None  # __post_init__ holds one of the two
        return np.atleast_2d(self.predictions)


@dataclass(frozen=True)
class Probes:
    """Probes asked together: none of them depends on the answers to the others.

    A driver sends them all before it reads an answer (over Ray: one pipelined
    burst instead of a round trip per probe), then hands the attack their answers
    one at a time, in order: the ``yield`` of a :class:`Probes` returns the first
    answer, and the attack then yields ``None`` for each further one (``answer =
    yield None``); after the last answer it yields its next probe(s) as usual.
    The attack thus reads each answer as it would have read it alone
    (its :meth:`Attack.progress` after each), but the probes after an answer were
    fixed before it was read.
    """

    probes: tuple[Probe, ...]

    def __post_init__(self) -> None:
        if not self.probes:
            raise AttackError(EMPTY_PROBES)


def each_probe(asked: Probe | Probes) -> tuple[Probe, ...]:
    """The probes an attack's ``yield`` asked: one :class:`Probe`, or each of :class:`Probes` in order."""
    return asked.probes if isinstance(asked, Probes) else (asked,)


def answer_all(run: Generator[Probe | Probes | None, Answer, Reconstruction],
               answer: Callable[[Probe], Answer]) -> Reconstruction:
    """Drive an active attack to its end with ``answer(probe)`` for each probe; its reconstruction.

    Follows the :class:`Probes` protocol: each answer of a batch is sent on its own, in order.
    """
    try:
        asked = next(run)
        while True:
            if asked is None:
                raise AttackError(NOTHING_ASKED)
            probes = each_probe(asked)
            for k, probe in enumerate(probes, 1):
                asked = run.send(answer(probe))
                if k < len(probes) and asked is not None:
                    raise AttackError(ASKED_TOO_EARLY.format(left=len(probes) - k))
    except StopIteration as stop:
        result: Reconstruction = stop.value  # the attack generator's return value
        return result


@dataclass(frozen=True)
class Answer:
    """Released values for one probe, with the precision the protocol stated (None = exact).

    ``release`` holds the answer's other public notes (noise family, epsilon, per-answer scale,
    a count protocol's noisy statistics): what the mechanism publishes about how it drew its noise,
    which a likelihood decoder needs. None where the protocol publishes nothing.
    """

    values: np.ndarray
    decimals: int | None = None
    release: dict[str, Any] | None = None


@dataclass(frozen=True)
class Exchange:
    """A query and its released values, as seen on the wire."""

    metric: str
    predictions: np.ndarray
    values: np.ndarray
    decimals: int | None = None


@dataclass
class Reconstruction:
    """An attack's conclusion about A for the individuals it targeted.

    ``a_hat[k]`` is the guess for individual ``indices[k]``; ``decided[k]`` is
    False where the attack had to guess without evidence. ``partition_only``
    marks a reconstruction known only up to swapping the two groups.
    """

    indices: np.ndarray
    a_hat: np.ndarray
    decided: np.ndarray
    queries: int
    info: dict[str, Any] = field(default_factory=dict)
    partition_only: bool = False


def ask(metric: str, H: np.ndarray, batch: bool, purpose: str, relative_to: str | None = None,
        received: list[float] | None = None) -> Generator[Probe, Answer, tuple[np.ndarray, int | None]]:
    """Yield ``H`` as one probe, or one probe per row; return the answers in row order and their precision.

    ``relative_to`` names a kept probe the rows edit (they then travel as their changes).
    ``received``, if given, gets each answer as it arrives (for an attack's :meth:`Attack.progress`).
    """
    if batch:
        answer = yield Probe(metric, H, purpose, relative_to=relative_to)
        values = np.asarray(answer.values, dtype=np.float64).reshape(-1)
        if received is not None:
            received.extend(values.tolist())
        return values, answer.decimals
    out = np.empty(H.shape[0])
    decimals: int | None = None
    for i in range(H.shape[0]):
        answer = yield Probe(metric, H[i:i + 1], purpose, relative_to=relative_to)
        out[i], decimals = np.asarray(answer.values, dtype=np.float64).reshape(-1)[0], answer.decimals
        if received is not None:
            received.append(float(out[i]))
    return out, decimals


def probe_accuracy(H: np.ndarray, view: AttackerView) -> dict[str, float]:
    """Accuracy of probe models against the audit labels, beside the base model's.

    Realistic probes (the paper's concern in Example 2 and Alg. 1-2) stay close
    to the base model; this is how a scenario shows they do.
    """
    if view.y is None or view.base_predictions is None:
        return {}
    acc = (np.where(H >= 0.5, 1, 0) == view.y[None, :]).mean(axis=1)
    base = float((view.base_predictions == view.y).mean())
    return {"base_accuracy": base, "probe_accuracy_min": float(acc.min()), "probe_accuracy_max": float(acc.max())}


class Attack(Plugin[P], ABC):
    """Base of every attack.

    Subclasses name their parameter model as the generic argument and as ``Params``
    (``class LinearReveal(Attack[LinearParams])``, ``Params = LinearParams``) and set
    ``name`` and ``threat_models``.
    """

    name: ClassVar[str]
    Params: ClassVar[type[AttackParams]] = AttackParams
    threat_models: ClassVar[tuple[str, ...]] = ACTIVE
    #: The scenario flows (``Protocol.flow``) whose exchanges this attack reads.
    flows: ClassVar[tuple[str, ...]] = ("metric-query",)
    summary: ClassVar[str] = ""

    def __init__(self, params: P | None, view: AttackerView, rng: np.random.Generator) -> None:
        self.params = params if params is not None else cast(P, self.Params())
        self.view = view
        self.rng = rng

    @classmethod
    def check_scenario(cls, scenario: Any) -> None:
        """Refuse (ConfigError naming the dotted key) a scenario this attack cannot run in; default: accept.

        ``scenario`` is a :class:`parley.scenarios.spec.Scenario` whose ``[attack]`` names this attack
        (typed ``Any``: ``parties`` imports nothing of ``scenarios``). The spec calls the hook when it
        validates the scenario, before any data is loaded or any party starts, so it reads the spec only
        (``scenario.attack.params``, ``scenario.dataset.audit_size``, ...).
        """
        return None

    def run(self) -> Generator[Probe | Probes | None, Answer, Reconstruction]:
        """Active attack: yield probes, receive released values, return a reconstruction (see :class:`Probes`)."""
        raise AttackError(NOT_ACTIVE.format(name=self.name, models=", ".join(self.threat_models)))

    def progress(self) -> Reconstruction | None:
        """What an active attack pinned down (or revised) since the previous call, or None if nothing.

        The adversary asks after every answer and keeps the changes in order, so a narration can
        show knowledge growing message by message: applied in order, they give everything pinned
        down so far. Reporting changes only keeps the cost per answer to what that answer taught.
        An attack that decides only at its end keeps this default.
        """
        return None

    def planned_queries(self) -> int | None:
        """How many models the active attack will ask about in all, if it knows before it starts; else None.

        ``parley run`` turns it into an estimate of the time left (its status line on a terminal). An
        attack whose next queries depend on the answers (rounds until decided) keeps this default.
        """
        return None

    def observe(self, exchanges: Sequence[Exchange]) -> Reconstruction:
        """Passive attack over exchanges seen on the wire."""
        raise AttackError(NOT_PASSIVE.format(name=self.name, models=", ".join(self.threat_models)))


def _check_attack(cls: type[Attack[Any]]) -> str | None:
    if not (isinstance(cls.Params, type) and issubclass(cls.Params, AttackParams)):
        return "its Params is not a subclass of parley.parties.attacks.AttackParams"
    if not cls.threat_models or not cls.flows:
        return "it names no threat_models or no flows"
    return None


#: Every attack by name: the built-ins, and the ``parley.attacks`` entry points (loaded on first read).
ATTACKS: Registry[type[Attack[Any]]] = Registry("attack", UNKNOWN_ATTACK, Attack, check=_check_attack)

#: Class decorator adding an attack to :data:`ATTACKS` under ``cls.name`` (:meth:`Registry.register`).
register_attack = ATTACKS.register


def get_attack(name: str) -> type[Attack[Any]]:
    """The attack class registered as ``name``; the error lists the known names."""
    return ATTACKS.lookup(name)
