"""The Exchange plug-in: one kind of protocol conversation, end to end.

A protocol names its exchange (:attr:`parley.protocols.base.Protocol.flow`). The exchange says
everything parley needs to run, narrate and compare that kind of conversation: the party slots it
adds (:meth:`Exchange.parties`), the codecs the queriers wear (:meth:`Exchange.wiring`, by default
the protocol's encoding), the run itself (:meth:`Exchange.run`: honest use, the attack, the scores),
a sentence for each of its message kinds (:meth:`Exchange.describe`, for ``--explain``), and its
view for ``parley compare`` (:attr:`utility`, :attr:`sizes`, :meth:`rows`, :attr:`audit`). The
message kinds each role may send come from what its protocols serve
(:func:`parley.parties.encodings.role_sends`). A user's package adds one through a
``parley.exchanges`` entry point; the world (:func:`parley.scenarios.world.build_world`) is the same
for every exchange.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from parley.parties.encodings import Wiring, get_encoding
from parley.parties.run_secrets import RunSecrets
from parley.protocols import PROTOCOLS
from parley.protocols.base import AuditSet, Protocol
from parley.protocols.registry import Registry

if TYPE_CHECKING:
    from parley.scenarios.world import World

__all__ = ["EPSILONS", "AuditView", "EXCHANGES", "Exchange", "Row", "Utility", "get_exchange", "register_exchange"]

UNKNOWN_EXCHANGE = "no exchange {name!r} (named by a protocol's flow); known exchanges: {known}"
#: The epsilons of ``parley compare``'s DP rows (full run, quick run).
EPSILONS = ((0.5, 1.0, 4.0), (1.0,))
#: Data sizes of a compare row by default (full run, quick run).
DEFAULT_SIZES = ({"audit_size": 500, "train_size": 5000}, {"audit_size": 200, "train_size": 3000})


@dataclass(frozen=True)
class Utility:
    """What the data center gets under an exchange: one accuracy-like or error-like number, and fairness."""

    key: str  # result.json metric
    label: str
    higher_is_better: bool
    short: str = ""  # the name in sentences
    fairness_key: str | None = None  # unfairness of the learned model (lower is fairer)
    fairness_label: str = ""
    fairness_short: str = "unfairness"
    transform: str = "identity"  # "one-minus": key holds an error rate, utility is 1 - it
    #: Measure on the runs of this threat model only (their traffic is the honest use alone), if any ran.
    honest_threat: str | None = None
    #: What the exchange is used for, in the report's sentences ("answering fairness-metric queries").
    use: str = "its own exchange"


@dataclass(frozen=True)
class Row:
    """A ``parley compare`` row: a protocol configuration, its learner, and its data sizes."""

    label: str
    protocol: dict[str, Any]
    flow: str
    learner: dict[str, Any] | None = None
    dataset: dict[str, Any] = field(default_factory=dict)  # size overrides of the exchange
    composition: str | None = None  # the run ledger's composition, when not sequential


@dataclass(frozen=True)
class AuditView:
    """What the whole-scenario privacy audit reads off an exchange's wire: one person's output.

    ``probe(person)`` is the attack table of the audited run, ``statistic(transcript, person,
    hypothesis)`` the audited number, ``what`` the words for it; ``about`` the set the answers are
    about (``"train"``: the cov-threshold accept sets, whose audit fixes the hypotheses).
    """

    probe: Callable[[int], Mapping[str, Any]]
    statistic: Callable[[Path, int, int], float]
    what: str
    about: str = "audit"
    threat_model: str | None = None


class Exchange(ABC):
    """One kind of protocol conversation: its parties, codecs, run, narration and comparison view."""

    name: ClassVar[str]
    #: How ``parley compare`` measures what the data center gets.
    utility: ClassVar[Utility]
    #: ``parley compare``'s data sizes (full run, quick run).
    sizes: ClassVar[tuple[Mapping[str, int], Mapping[str, int]]] = DEFAULT_SIZES
    #: The honest queries of a compare cell (``audit_metrics``).
    honest_metrics: ClassVar[tuple[str, ...]] = ()
    #: The whole-scenario audit's view of the wire; None: not audited, ``not_audited`` says why.
    audit: ClassVar[AuditView | None] = None
    not_audited: ClassVar[str] = "not audited: the audit does not read the {name} exchange"
    #: Whether its payloads may travel sealed (``confidential = true``): its flow reads no reply off the wire.
    confidential: ClassVar[bool] = False

    def parties(self, scenario: Any) -> tuple[str, ...]:
        """The party slots this exchange adds to the world's for ``scenario`` (booted early over Ray)."""
        return ()

    def wiring(self, protocol: Protocol, audit: AuditSet, secrets: RunSecrets, parties: Mapping[str, str]) -> Wiring:
        """The answering protocol, the queriers' codecs and extra parties: the protocol's encoding, if any."""
        if protocol.encoding is None:
            return Wiring(protocol)
        return get_encoding(protocol.encoding)().wire(protocol, audit, secrets, parties)

    def describe(self, kind: str, payload: Mapping[str, Any]) -> str | None:
        """One sentence on a ``kind`` message's payload for ``--explain``; None for a kind not its own."""
        return None

    def rows(self, quick: bool) -> list[Row]:
        """``parley compare``'s rows of this exchange: by default each of its protocols at its defaults."""
        return [Row(name, {"name": name}, self.name)
                for name, cls in sorted(PROTOCOLS.items()) if cls.flow == self.name]

    @abstractmethod
    def run(self, world: World) -> dict[str, Any]:
        """Drive the honest exchange and the attack through ``world``; return the metrics for ``result.json``."""


def _check_exchange(cls: type[Exchange]) -> str | None:
    if not isinstance(getattr(cls, "name", None), str):
        return "it sets no name"
    return None if isinstance(getattr(cls, "utility", None), Utility) else "it defines no utility (a Utility)"


EXCHANGES: Registry[type[Exchange]] = Registry("exchange", UNKNOWN_EXCHANGE, Exchange, check=_check_exchange)


def register_exchange(cls: type[Exchange]) -> type[Exchange]:
    """Class decorator adding a built-in exchange under its ``name``."""
    return EXCHANGES.add(cls.name, cls)


def get_exchange(name: str) -> Exchange:
    """The exchange registered as ``name``, ready to run; the error lists the known exchanges."""
    return EXCHANGES.lookup(name)()
