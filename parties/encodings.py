"""Encodings: how a protocol's queriers encode what they send, and who else joins the run for it.

A protocol names its encoding (:attr:`parley.protocols.base.Protocol.encoding`): ``he`` (each
querier holds CKKS keys and sends ciphertexts) or ``mpc`` (the querier sends secret shares and a
helper party computes with the compliance party). An :class:`Encoding` turns the scenario's
protocol into a :class:`Wiring`: the protocol the compliance party answers with, the codec
(:mod:`parley.parties.codecs`) each querier wears, and the extra parties to start. The world is
the same for every encoding (:func:`parley.scenarios.world.build_world`); a user's package adds
one through a ``parley.encodings`` entry point.

:func:`role_sends` is the access policy every party applies: what each role may send, derived from
what the registered protocols serve (their requests and replies) and what the encodings' own
roles send, so a plug-in's message kinds need no edit here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from parley.parties.codecs import Codec
from parley.parties.party import REFUSAL
from parley.parties.run_secrets import RunSecrets
from parley.protocols import PROTOCOLS
from parley.protocols.base import AuditSet, Protocol
from parley.protocols.errors import PluginError
from parley.protocols.registry import Registry

__all__ = ["ENCODINGS", "Encoding", "ExtraParty", "Wiring", "get_encoding", "register_encoding",
           "role_sends"]

UNKNOWN_ENCODING = "unknown encoding {name!r} (named by a protocol); known encodings: {known}"
#: The querier role (the data center, and the adversary in its name) and the answering role.
QUERIER_ROLE, ANSWERER_ROLE = "data-center", "compliance"


@dataclass(frozen=True)
class ExtraParty:
    """A party an encoding adds to the run: its slot (and name), role, class and constructor arguments.

    The world gives it an identity of ``role`` and calls ``cls(identity, keyring, *args)``.
    """

    slot: str
    role: str
    cls: type
    args: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Wiring:
    """What an encoding makes of a run: the answering protocol, each querier's codec, extra parties."""

    answering: Protocol
    data_center: Codec | None = None
    adversary: Codec | None = None
    parties: tuple[ExtraParty, ...] = ()


class Encoding(ABC):
    """One way of carrying a protocol's queries: the codecs its queriers wear and the parties it adds."""

    name: ClassVar[str]
    #: The roles this encoding brings (beyond the querier and the compliance party) and what each may send.
    roles: ClassVar[Mapping[str, frozenset[str]]] = {}
    #: The slots of the extra parties its wiring adds (booted with the world's over Ray).
    slots: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def wire(self, protocol: Protocol, audit: AuditSet, secrets: RunSecrets, parties: Mapping[str, str]) -> Wiring:
        """The run's :class:`Wiring` for ``protocol`` on ``audit``.

        ``parties`` maps the slots ``"compliance"``, ``"data_center"``, ``"adversary"`` to the party names;
        each party's private randomness comes from ``secrets.party(name)``.
        """


#: Roles whose kinds come from the protocols (or, the observer's, are none): an encoding cannot widen them.
RESERVED_ROLES = frozenset({QUERIER_ROLE, ANSWERER_ROLE, "observer"})
#: A kind some protocol asks and another answers: the role policy would let either side send it.
KIND_BOTH_WAYS = ("the registered protocols use {kinds} both as a request and as a reply ({protocols}): a kind is "
                  "one or the other")


def _check_encoding(cls: type[Encoding]) -> str | None:
    if not isinstance(getattr(cls, "name", None), str):
        return "it sets no name"
    reserved = sorted(RESERVED_ROLES & set(cls.roles))
    return f"its roles {reserved} are parley's own (an encoding adds roles, it does not widen these)" if reserved \
        else None


ENCODINGS: Registry[type[Encoding]] = Registry("encoding", UNKNOWN_ENCODING, Encoding, check=_check_encoding)


def register_encoding(cls: type[Encoding]) -> type[Encoding]:
    """Class decorator adding a built-in encoding under its ``name``."""
    return ENCODINGS.add(cls.name, cls)


def get_encoding(name: str) -> type[Encoding]:
    """The encoding registered as ``name``; the error lists the known ones."""
    return ENCODINGS.lookup(name)


def role_sends() -> dict[str, frozenset[str]]:
    """What each role may send: the access policy of every party, derived from the registered plug-ins.

    The querier role sends ``metric-query`` and every request kind a registered protocol serves; the
    compliance role sends ``metric-answer`` and every reply kind; an encoding's roles send what it
    declares; the observer sends nothing. Every role may send a ``refusal``.
    """
    requests = {kind for cls in PROTOCOLS.values() for kind in cls.requests}
    replies = {kind for cls in PROTOCOLS.values() for kind in cls.requests.values()}
    both = requests & replies
    if both:
        names = sorted(name for name, cls in PROTOCOLS.items() if both & {*cls.requests, *cls.requests.values()})
        raise PluginError(KIND_BOTH_WAYS.format(kinds=sorted(both), protocols=", ".join(names)))
    sends: dict[str, set[str]] = {QUERIER_ROLE: {"metric-query", *requests}, ANSWERER_ROLE: {"metric-answer", *replies},
                                  "observer": set()}
    for encoding in ENCODINGS.values():
        for role, kinds in encoding.roles.items():
            sends.setdefault(role, set()).update(kinds)
    return {role: frozenset(kinds | ({REFUSAL} if role != "observer" else set())) for role, kinds in sends.items()}


from parley.parties import homomorphic, secure  # noqa: E402,F401  (register the built-in encodings)
