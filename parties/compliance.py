"""The compliance party: holds A (and the labels) of the audit set, answers under one protocol.

It accepts ``metric-query`` messages only from registered queriers whose role
may send them, validates the query (:class:`protocols.base.MetricQuery`),
and releases whatever its protocol releases: never A itself, nothing
per-individual beyond the protocol's answer.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from protocols.base import AuditSet, MetricQuery, Protocol
from protocols.errors import QueryError, WireError

from .party import Party
from .wire import NOT_REGISTERED, Envelope, Identity, Keyring

__all__ = ["Compliance"]

NOT_REGISTERED_MSG = "{sender!r} is not a registered querier of this compliance party (registered: {registered})"
KEEP_ONE = "keep applies to a query of one model, this one has {m}"
#: Models kept per querier for later edits; the oldest is dropped beyond this.
KEEP_LIMIT = 8


class Compliance(Party):
    """Answers fairness queries about the audit set under ``protocol``.

    Parameters
    ----------
    identity, keyring : see :class:`parties.party.Party`
    audit : AuditSet
        A and y of the audit set.
    protocol : Protocol
        The answer protocol (``raw``, a DP protocol, ...).
    queriers : iterable of str
        Names allowed to query.
    rng : numpy.random.Generator
        Source of the protocol's noise.
    """

    handlers = {"metric-query": "_on_metric_query"}

    def __init__(self, identity: Identity, keyring: Keyring, audit: AuditSet, protocol: Protocol,
                 queriers: Iterable[str], rng: np.random.Generator) -> None:
        super().__init__(identity, keyring, protocol.name)
        self.audit = audit
        self.answer_protocol = protocol
        self.queriers = frozenset(queriers)
        self.rng = rng
        self.models_answered = 0
        self.kept: dict[str, dict[str, np.ndarray]] = {}  # querier -> query id -> kept model

    def _on_metric_query(self, envelope: Envelope) -> Envelope:
        if envelope.sender not in self.queriers:
            raise WireError(NOT_REGISTERED, NOT_REGISTERED_MSG.format(
                sender=envelope.sender, registered=", ".join(sorted(self.queriers)) or "none"))
        kept = self.kept.setdefault(envelope.sender, {})
        query = MetricQuery.from_payload(envelope.payload, self.audit.n, kept)
        if envelope.payload.get("keep") and query.m != 1:
            raise QueryError(KEEP_ONE.format(m=query.m))
        payload = self.answer_protocol.answer(query, self.audit, self.rng)
        if envelope.payload.get("keep"):  # kept only once answered, as the transcript's readers assume
            kept[query.query_id] = query.predictions[0]
            while len(kept) > KEEP_LIMIT:
                kept.pop(next(iter(kept)))
        self.models_answered += query.m
        return self.seal(envelope.sender, "metric-answer", payload)

    def stats(self) -> dict[str, int]:
        """Counters a run reports (models answered, refusals sent)."""
        return {"models_answered": self.models_answered, "refusals_sent": self.refusals_sent}
