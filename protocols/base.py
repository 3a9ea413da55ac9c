"""The Protocol plug-in: what the compliance party releases for a query.

A protocol is a strategy object (the template-method pattern of federated
learning strategies): the base class validates the query once, and each
protocol only decides how to turn exact metric values into a release. Adding
a built-in protocol is one module with a ``@register_protocol`` class; a user's
package adds one through a ``parley.protocols`` entry point (docs/plugins.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import numpy as np
from pydantic import BaseModel, ConfigDict
from typing_extensions import TypeVar

from parley.protocols.budget import Budget
from parley.protocols.errors import QueryError
from parley.protocols.metrics import METRICS, AuditEvaluator
from parley.protocols.plugin import Plugin
from parley.protocols.queries import (
    Edits,
    require_fields,
    validate_edits,
    validate_metric,
    validate_predictions,
    validate_query_id,
)
from parley.protocols.registry import Registry

__all__ = ["NO_REQUESTS", "PROTOCOLS", "AuditSet", "ExactValueProtocol", "Holdings", "MetricProtocol", "MetricQuery",
           "Protocol", "ProtocolParams", "RequestProtocol", "get_protocol", "register_protocol"]

UNKNOWN_PROTOCOL = "unknown protocol {name!r}; known protocols: {known}"
METRIC_NOT_ANSWERED = "protocol {name!r} answers only {allowed}; got {metric!r}"

QUERY_FIELDS = ("metric", "predictions", "query_id")
EDIT_FIELDS = ("metric", "query_id", "edit_of", "indices", "values")
NO_REQUESTS = "protocol {name!r} serves no {kind!r} requests"
UNKNOWN_BASE = "edit_of {base!r} names no model this querier asked to keep (kept: {kept})"


class ProtocolParams(BaseModel):
    """Base of every protocol's parameters (frozen, unknown keys rejected)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


#: A protocol's parameter model: ``class LaplaceProtocol(Protocol[LaplaceParams])``; a bare ``Protocol`` has
#: ``ProtocolParams``.
P = TypeVar("P", bound=ProtocolParams, default=ProtocolParams, covariant=True)


@dataclass(frozen=True)
class AuditSet:
    """What the compliance party holds about the audit set: A and the true labels."""

    a: np.ndarray
    y: np.ndarray
    _evaluator: AuditEvaluator | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def n(self) -> int:
        return int(self.a.shape[0])

    @property
    def evaluator(self) -> AuditEvaluator:
        """The set's :class:`parley.protocols.metrics.AuditEvaluator`.

        Built on first use, in the process that answers, and kept with the set.
        """
        evaluator = self._evaluator
        if evaluator is None:
            evaluator = AuditEvaluator(self.a, self.y)
            object.__setattr__(self, "_evaluator", evaluator)
        return evaluator

    def evaluate(self, metric: str, H: Any) -> Any:
        """``evaluate(metric, H, a, y)`` on this set, bit for bit.

        Each metric's plan is kept (:class:`parley.protocols.metrics.AuditEvaluator`).
        """
        return self.evaluator(metric, H)

    def answer(self, query: MetricQuery) -> Any:
        """The exact values of ``query``: :meth:`evaluate` on its models, bit for bit.

        A query of edits is answered from the kept model's exact group sums and the changed entries
        only (:meth:`parley.protocols.metrics.AuditEvaluator.edited`).
        """
        if query.edits is None:
            return self.evaluate(query.metric, query.predictions)
        e = query.edits
        return self.evaluator.edited(query.metric, e.base, e.indices, e.values)


#: What the compliance party holds, by set name: ``"audit"`` always, ``"train"`` where the scenario gives it.
Holdings = Mapping[str, AuditSet]


class MetricQuery:
    """A validated metric query: one metric of m models on the audit set.

    The models are ``predictions`` (m, n), float64 in [0, 1], read-only; a query that arrived as
    edits of a kept model also holds them as ``edits`` (:class:`parley.protocols.queries.Edits`), and
    builds ``predictions`` from them only when something reads it: the exact answer needs only the
    changed entries (:meth:`AuditSet.answer`).
    """

    __slots__ = ("metric", "query_id", "edits", "_predictions")
    metric: str
    query_id: str
    edits: Edits | None
    _predictions: np.ndarray | None

    def __init__(self, metric: str, predictions: np.ndarray | None = None, query_id: str = "",
                 edits: Edits | None = None) -> None:
        if (predictions is None) == (edits is None):
            raise ValueError("a MetricQuery holds either predictions or edits (this is a bug in its caller)")
        object.__setattr__(self, "metric", metric)
        object.__setattr__(self, "query_id", query_id)
        object.__setattr__(self, "edits", edits)
        object.__setattr__(self, "_predictions", predictions)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"MetricQuery is immutable (cannot set {name!r})")

    def __reduce__(self) -> tuple[Any, ...]:
        return MetricQuery, (self.metric, self._predictions, self.query_id, self.edits)

    def __repr__(self) -> str:
        form = f"edits of {self.edits.indices.shape}" if self.edits is not None else f"{self.m} models"
        return f"MetricQuery(metric={self.metric!r}, {form}, query_id={self.query_id!r})"

    @property
    def predictions(self) -> np.ndarray:
        """The (m, n) models, read-only (expanded from the edits on first use)."""
        predictions = self._predictions
        if predictions is None:
            assert self.edits is not None  # the constructor holds one of the two
            predictions = self.edits.expand()
            predictions.flags.writeable = False
            object.__setattr__(self, "_predictions", predictions)
        return predictions

    @property
    def m(self) -> int:
        return self.edits.m if self.edits is not None else int(self.predictions.shape[0])

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any], n: int, kept: Mapping[str, np.ndarray] | None = None
                     ) -> MetricQuery:
        """Validate a ``metric-query`` payload against an audit set of size ``n``.

        A payload either carries ``predictions`` (m, n), or names with
        ``edit_of`` a model the same querier sent earlier with ``keep`` set and
        gives ``indices`` and ``values`` of the entries each model changes: the
        compact form of probes that differ from a base model in a few places.
        """
        if "edit_of" in payload:
            require_fields(payload, EDIT_FIELDS)
            kept = kept or {}
            if type(payload["edit_of"]) is not str or payload["edit_of"] not in kept:
                raise QueryError(UNKNOWN_BASE.format(base=payload["edit_of"], kept=", ".join(kept) or "none"))
            indices, values = validate_edits(payload["indices"], payload["values"], n)
            return cls(metric=validate_metric(payload["metric"]), query_id=validate_query_id(payload["query_id"]),
                       edits=Edits(kept[payload["edit_of"]], indices, values))
        require_fields(payload, QUERY_FIELDS)
        predictions = validate_predictions(payload["predictions"], n)
        return cls(metric=validate_metric(payload["metric"]), predictions=predictions,
                   query_id=validate_query_id(payload["query_id"]))


class Protocol(Plugin[P], ABC):
    """What the compliance party releases, and for which requests.

    A metric protocol (``flow = "metric-query"``) names its parameter model as its
    generic argument and as ``Params`` (``class LaplaceProtocol(Protocol[LaplaceParams])``,
    ``Params = LaplaceParams``), sets ``name`` and implements :meth:`release`. A
    protocol with its own exchange (a release of A, an accept set, a certificate)
    sets ``flow`` to the name of the exchange that runs it, lists its request
    kinds and their reply kinds in ``requests``, and implements :meth:`respond` and
    :meth:`request_cost`; the compliance party verifies, accounts and signs around them.
    """

    name: ClassVar[str]
    Params: ClassVar[type[ProtocolParams]] = ProtocolParams
    #: Metrics this protocol will answer (all of them unless a subclass narrows it).
    metrics: ClassVar[tuple[str, ...]] = tuple(METRICS)
    #: The registered exchange that runs this protocol's conversation (``parley.scenarios.exchanges``).
    flow: ClassVar[str] = "metric-query"
    #: The registered encoding its queriers wear (``"he"``, ``"mpc"``; ``parley.parties.encodings``), if any:
    #: the querier's messages leave encoded and its answers are opened by the querier, never on the wire.
    encoding: ClassVar[str | None] = None
    #: Request kind -> reply kind, for the requests beyond ``metric-query`` this protocol serves.
    requests: ClassVar[Mapping[str, str]] = {}
    #: The sets whose A the compliance party needs: ``"audit"``, and ``"train"`` for protocols about the training set.
    holds: ClassVar[tuple[str, ...]] = ("audit",)
    #: Reply kinds that carry one value per individual by design (e.g. a randomized-response release of A);
    #: the transcript canary (``parley.scenarios.canary``) flags any other reply holding a vector of n values.
    per_individual_kinds: ClassVar[tuple[str, ...]] = ()

    def __init__(self, params: P | None = None) -> None:
        self.params = params if params is not None else cast(P, self.Params())

    def answer(self, query: MetricQuery, audit: AuditSet, rng: np.random.Generator) -> dict[str, Any]:
        """Validate applicability, compute the exact metric and release it.

        Returns the payload of a ``metric-answer``: ``metric``, ``query_id``,
        ``values`` (float64, shape (m,)) and whatever the protocol records.
        """
        if query.metric not in self.metrics:
            raise QueryError(METRIC_NOT_ANSWERED.format(name=self.name, allowed=", ".join(self.metrics) or "no metric",
                                                          metric=query.metric))
        exact = audit.answer(query)
        values, notes = self.release(exact, query, audit, rng)
        return {"metric": query.metric, "query_id": query.query_id, "values": values, **notes}

    def check_holdings(self, holdings: Holdings) -> None:
        """Refuse (ConfigError) data this protocol cannot serve, once, when the compliance party is built.

        A condition on the private data checked here is a configuration error, never a per-query
        refusal: a refusal whose occurrence depends on A would be a free oracle on A. Default: accept.
        """
        return None

    @classmethod
    def check_scenario(cls, scenario: Any) -> None:
        """Refuse (ConfigError naming the dotted key) a scenario this protocol cannot run in; default: accept.

        ``scenario`` is a :class:`parley.scenarios.spec.Scenario` naming this protocol (typed ``Any``:
        this layer imports nothing of ``scenarios``). The spec calls the hook when it validates the
        scenario, after every table is valid and before any data is loaded or any party starts, so
        it reads the spec only (``scenario.protocol.params``, ``scenario.dataset.audit_size``, ...).
        """
        return None

    def charges(self) -> bool:
        """Does this protocol, with its parameters, put a privacy cost on some answer (then it runs with a ledger)?

        Default: its class overrides :meth:`cost` or :meth:`request_cost`. A protocol whose
        parameters decide (e.g. a certificate released as a value or as a priced decision) overrides it.
        """
        return type(self).cost is not Protocol.cost or type(self).request_cost is not Protocol.request_cost

    def cost(self, query: MetricQuery) -> Budget | None:
        """Privacy cost of answering ``query`` (None: the protocol spends no budget, e.g. ``raw``)."""
        return None

    def release(
        self, exact: np.ndarray, query: MetricQuery, audit: AuditSet, rng: np.random.Generator
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Turn exact metric values into released values plus notes recorded in the answer."""
        raise QueryError(METRIC_NOT_ANSWERED.format(name=self.name, allowed="no metric", metric=query.metric))

    def request_cost(self, kind: str, payload: Mapping[str, Any], holdings: Holdings) -> Budget | None:
        """Privacy cost of answering a ``kind`` request (None: free). Raise QueryError to refuse it."""
        return None

    def admit(self, kind: str, payload: Mapping[str, Any], released: Sequence[Mapping[str, Any]]) -> None:
        """Refuse (QueryError) a ``kind`` request given the replies already on record; default: admit.

        ``released`` are the reply payloads in the compliance party's ledger (durable across
        restarts), e.g. for a protocol that releases each set a limited number of times.
        """
        return None

    def respond(self, kind: str, payload: Mapping[str, Any], holdings: Holdings,
                rng: np.random.Generator) -> dict[str, Any]:
        """The reply payload to a ``kind`` request (one of :attr:`requests`); QueryError for bad input."""
        raise QueryError(NO_REQUESTS.format(name=self.name, kind=kind))


class MetricProtocol(Protocol[P]):
    """A protocol of the ``metric-query`` exchange: it answers a metric query with a release.

    Implement :meth:`answer` (the whole reply, e.g. from noisy counts), or subclass
    :class:`ExactValueProtocol` and implement only how exact values become a release.
    """

    @abstractmethod
    def answer(self, query: MetricQuery, audit: AuditSet, rng: np.random.Generator) -> dict[str, Any]:
        """The payload of the ``metric-answer`` to ``query`` (``metric``, ``query_id``, ``values`` and notes)."""


class ExactValueProtocol(MetricProtocol[P]):
    """A metric protocol that releases a function of the exact metric values (raw, Laplace, smooth sensitivity).

    Implement :meth:`release`; :meth:`answer` validates the query and computes the exact values around it.
    """

    def answer(self, query: MetricQuery, audit: AuditSet, rng: np.random.Generator) -> dict[str, Any]:
        """Validate applicability, compute the exact metric and release it (:meth:`Protocol.answer`)."""
        return Protocol.answer(self, query, audit, rng)

    @abstractmethod
    def release(
        self, exact: np.ndarray, query: MetricQuery, audit: AuditSet, rng: np.random.Generator
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Turn exact metric values into released values plus notes recorded in the answer."""


class RequestProtocol(Protocol[P]):
    """A protocol that serves requests of its own kinds (``requests``): a release, an accept set, ciphertexts.

    Implement :meth:`respond` (and :meth:`request_cost` where replies spend budget, :meth:`admit` to refuse
    a request given the replies on record); the compliance party verifies, accounts and signs around them.
    """

    metrics: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def respond(self, kind: str, payload: Mapping[str, Any], holdings: Holdings,
                rng: np.random.Generator) -> dict[str, Any]:
        """The reply payload to a ``kind`` request (one of :attr:`requests`); QueryError for bad input."""


def _check_protocol(cls: type[Protocol[Any]]) -> str | None:
    if not (isinstance(cls.Params, type) and issubclass(cls.Params, ProtocolParams)):
        return "its Params is not a subclass of parley.protocols.base.ProtocolParams"
    if not issubclass(cls, (MetricProtocol, RequestProtocol)):
        return ("it subclasses neither MetricProtocol (it releases metric answers) nor RequestProtocol (it serves "
                "requests of its own)")
    asked, answered = set(cls.requests), set(cls.requests.values())
    # the role policy is derived from these (parley.parties.encodings.role_sends): a kind is a request or a reply
    misused = (asked & {"metric-answer", "refusal"}) | (answered & {"metric-query", "refusal"}) | (asked & answered)
    if misused:
        return (f"its requests map request kinds to reply kinds, and {sorted(misused)} cannot be "
                "both, nor a metric answer or a refusal asked, nor a metric query or a refusal answered")
    return None


#: Every protocol by name: the built-ins, and the ``parley.protocols`` entry points (loaded on first read).
PROTOCOLS: Registry[type[Protocol[Any]]] = Registry("protocol", UNKNOWN_PROTOCOL, Protocol, check=_check_protocol)

#: Class decorator adding a protocol to :data:`PROTOCOLS` under ``cls.name`` (:meth:`Registry.register`).
register_protocol = PROTOCOLS.register


def get_protocol(name: str) -> type[Protocol[Any]]:
    """The protocol class registered as ``name``; the error lists the known names."""
    return PROTOCOLS.lookup(name)
