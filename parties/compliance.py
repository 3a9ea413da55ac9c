"""The compliance party: holds A (and the labels) of the audit set, answers under one protocol.

It accepts ``metric-query`` messages only from registered queriers whose role
may send them, validates the query (:class:`parley.protocols.base.MetricQuery`),
and releases whatever its protocol releases: never A itself, nothing
per-individual beyond the protocol's answer.

Privacy accounting. When the protocol puts a cost on a query
(:meth:`parley.protocols.base.Protocol.cost` is not None), the answer goes through the
party's :class:`parley.parties.ledger.Ledger`: the debit and the answer payload are
committed to the ledger file *before* the answer is sealed and sent, and a
query id already answered for the same querier is answered again from the
ledger: same values, no fresh noise, no new debit (the querier's retry after a
lost reply or after this party crashed). A query that does not fit the
querier's budget gets a signed ``budget-exceeded`` refusal and the party keeps
serving.

Purposes. A compliance team may split a querier's budget by the purpose the
query declares (``purposes``): the payload's ``purpose`` field (absent:
:data:`UNDECLARED`, ``"exploratory"``) names the account the query is charged
to, ``"<querier>/<purpose>"`` (:func:`account_of`), each with its own cap in the
ledger. An exploratory query then never draws on the audit budget, and a
refusal names the account and its cap; a purpose outside the policy has no
budget (a ``budget-exceeded`` refusal naming the policy's purposes).
The purpose is the querier's declaration (signed, in the transcript): a querier
may charge exploration to its audit account, never more than the sum of its
accounts' caps.

The ledger file is the only state that must survive a restart: a
party rebuilt with the same ``ledger_path`` carries on where the old one
stopped. (Models kept for edit-form queries live in memory and are lost with
the process; an edit of a lost model is refused as an unknown base.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from parley.parties.ledger import ID_REUSED, Ledger
from parley.parties.party import Party
from parley.parties.run_secrets import PartySecret
from parley.parties.wire import BUDGET_EXCEEDED, INVALID_QUERY, NOT_REGISTERED, Envelope, Identity, Keyring
from parley.protocols.base import AuditSet, MetricQuery, Protocol
from parley.protocols.budget import Budget
from parley.protocols.errors import QueryError, WireError
from parley.protocols.queries import validate_query_id

__all__ = ["Compliance", "DECLARED_NONE", "PURPOSE_SEPARATOR", "UNDECLARED", "UNKNOWN_PURPOSE", "account_of",
           "has_costs"]

NOT_REGISTERED_MSG = "{sender!r} is not a registered querier of this compliance party (registered: {registered})"
KEEP_ONE = "keep applies to a query of one model, this one has {m}"
UNKNOWN_PURPOSE = ("{sender!r} has no budget for purpose {purpose!r}{how}: the budget policy's purposes are {known} "
                   "(a query declaring none is {undeclared!r})")
#: ``how`` of :data:`UNKNOWN_PURPOSE` when the query declared no purpose.
DECLARED_NONE = " (the query declared none)"
#: Models kept per querier for later edits; the oldest is dropped beyond this.
KEEP_LIMIT = 8
#: The purpose of a query that declares none.
UNDECLARED = "exploratory"
#: The purpose of this party's noise stream under its secret.
NOISE = "noise"
#: Joins a querier's name and a purpose into the ledger account the query is charged to.
PURPOSE_SEPARATOR = "/"


def account_of(querier: str, purpose: str) -> str:
    """The ledger account of ``querier``'s queries declared for ``purpose``: ``"data-center/audit"``."""
    return f"{querier}{PURPOSE_SEPARATOR}{purpose}"


def has_costs(protocol: Protocol) -> bool:
    """Does ``protocol`` put a privacy cost on some answer (:meth:`parley.protocols.base.Protocol.charges`)?"""
    return protocol.charges()


class Compliance(Party):
    """Answers fairness queries about the audit set under ``protocol``.

    Parameters
    ----------
    identity, keyring : see :class:`parley.parties.party.Party`
    audit : AuditSet
        A and y of the audit set.
    protocol : Protocol
        The answer protocol (``raw``, a DP protocol, ...).
    queriers : iterable of str
        Names allowed to query.
    secret : PartySecret
        This party's own secret (:mod:`parley.parties.run_secrets`), the source of the protocol's noise
        and every other private draw; never the public seed.
    ledger_path : str, optional
        The ledger file (:class:`parley.parties.ledger.Ledger`); reopened, not reset,
        if it exists. Without it a protocol with costs is accounted in memory
        (lost with this object).
    budgets : mapping of querier name to Budget, optional
        Each querier's cap, written into the ledger (replacing what the file
        held for that querier). A costed query from a querier with no budget in
        the ledger is refused. ``None``: no caps; every querier without a budget
        in the file is given none (debits are still recorded).
    composition : {"sequential", "advanced", "zcdp"}
        How the ledger composes a querier's debits.
    train : AuditSet, optional
        A and y of the training set, where the scenario gives them to this party
        (protocols that answer about the data center's training set).
    purposes : iterable of str, optional
        The purposes of the budget policy: each query is charged to the account
        :func:`account_of` (querier, its declared purpose), and ``budgets`` are keyed by
        those accounts. ``None``: one account per querier, its name.
    """

    def __init__(self, identity: Identity, keyring: Keyring, audit: AuditSet, protocol: Protocol,
                 queriers: Iterable[str], secret: PartySecret, ledger_path: str | Path | None = None,
                 budgets: Mapping[str, Budget] | None = None,
                 composition: Literal["sequential", "advanced", "zcdp"] = "sequential",
                 train: AuditSet | None = None, purposes: Iterable[str] | None = None) -> None:
        super().__init__(identity, keyring, protocol.name)
        self.audit = audit
        #: Every set whose A this party holds, by name (what :meth:`Protocol.respond` sees).
        self.holdings: dict[str, AuditSet] = {"audit": audit} if train is None else {"audit": audit, "train": train}
        # Data the protocol cannot serve is a configuration error now, never a refusal that depends on A later.
        protocol.check_holdings(self.holdings)
        self.handlers = {"metric-query": "_on_metric_query", **{kind: "_on_request" for kind in protocol.requests}}
        self.answer_protocol = protocol
        self.queriers = frozenset(queriers)
        self.secret = secret
        self.rng = secret.rng(NOISE)
        self.models_answered = 0
        self.requests_answered = 0
        self.answers_replayed = 0
        self.budget_refusals = 0
        self.kept: dict[str, dict[str, np.ndarray]] = {}  # querier -> query id -> kept model
        self._free_replies: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}  # replies no ledger holds
        self._composition = composition
        self.purposes = None if purposes is None else tuple(purposes)
        self.ledger: Ledger | None = None
        if ledger_path is not None or budgets is not None or has_costs(protocol):
            self.ledger = Ledger(ledger_path if ledger_path is not None else ":memory:", method=composition)
            self._grant(self.ledger, budgets)

    def _grant(self, ledger: Ledger, budgets: Mapping[str, Budget] | None) -> None:
        """Write ``budgets`` into the ledger; without them, every querier the file has no budget for is uncapped."""
        if budgets is None:
            for querier in sorted(self._accounts()):
                if not ledger.has_budget(querier):
                    ledger.set_budget(querier, None)
        else:
            for querier, limit in budgets.items():
                ledger.set_budget(querier, limit)

    def _accounts(self) -> list[str]:
        """Every ledger account of the registered queriers (their names, or one per querier and purpose)."""
        if self.purposes is None:
            return list(self.queriers)
        return [account_of(q, p) for q in self.queriers for p in self.purposes]

    def _account(self, envelope: Envelope) -> str:
        """The ledger account ``envelope`` is charged to: its sender, or sender and declared purpose."""
        if self.purposes is None:
            return envelope.sender
        purpose = envelope.payload.get("purpose", UNDECLARED)
        if type(purpose) is not str or purpose not in self.purposes:
            # An account the policy does not have is an account without budget: a budget refusal.
            self.budget_refusals += 1
            raise WireError(BUDGET_EXCEEDED, UNKNOWN_PURPOSE.format(
                sender=envelope.sender, purpose=purpose, how="" if "purpose" in envelope.payload else DECLARED_NONE,
                known=", ".join(self.purposes), undeclared=UNDECLARED))
        return account_of(envelope.sender, purpose)

    def _on_metric_query(self, envelope: Envelope) -> Envelope:
        self._check_querier(envelope)
        kept = self.kept.setdefault(envelope.sender, {})
        if self.ledger is not None and "query_id" in envelope.payload:
            # A query id answered before is answered from the ledger: same values, no new debit.
            # (The payload digest, verified before dispatch, ties the retry to the same query.)
            stored = self.ledger.recorded(self._account(envelope), validate_query_id(envelope.payload["query_id"]),
                                          request=envelope.digest)
            if stored is not None:
                self._keep_again(envelope, kept)
                self.answers_replayed += 1
                return self.seal(envelope.sender, "metric-answer", stored)
        query = MetricQuery.from_payload(envelope.payload, self.audit.n, kept)
        if envelope.payload.get("keep") and query.m != 1:
            raise QueryError(KEEP_ONE.format(m=query.m))
        cost = self.answer_protocol.cost(query)
        payload = self.answer_protocol.answer(query, self.audit, self.rng)
        if cost is not None:
            payload = self._charge(envelope, query.query_id, cost, payload)
        if envelope.payload.get("keep"):  # kept only once answered, as the transcript's readers assume
            self._keep(kept, query.query_id, query.predictions[0])
        self.models_answered += query.m
        return self.seal(envelope.sender, "metric-answer", payload)

    def _on_request(self, envelope: Envelope) -> Envelope:
        """A request of the protocol's own exchange: accounted and replayed by query id like a metric query."""
        self._check_querier(envelope)
        query_id = validate_query_id(envelope.payload.get("query_id"))
        stored = self._answered_before(envelope, query_id)
        if stored is not None:
            self.answers_replayed += 1
            return self.seal(envelope.sender, self.answer_protocol.requests[envelope.kind], stored)
        if type(self.answer_protocol).admit is not Protocol.admit:  # reading every stored reply is not free
            self.answer_protocol.admit(envelope.kind, envelope.payload, self._released())
        cost = self.answer_protocol.request_cost(envelope.kind, envelope.payload, self.holdings)
        payload = {"query_id": query_id,
                   **self.answer_protocol.respond(envelope.kind, envelope.payload, self.holdings, self.rng)}
        if cost is not None:
            payload = self._charge(envelope, query_id, cost, payload)
        else:
            # A free reply may still be random (noise, a soft policy's coins): a retry gets the same one. It is
            # kept with or without a ledger (which records only charged replies): under mpc two replies to one
            # id share the sharing of A and the zero-share, and their difference would give the querier A.
            self._free_replies[(envelope.sender, query_id)] = (envelope.digest, payload)
        self.requests_answered += 1
        return self.seal(envelope.sender, self.answer_protocol.requests[envelope.kind], payload)

    def _answered_before(self, envelope: Envelope, query_id: str) -> dict[str, Any] | None:
        """The reply already given to this querier's ``query_id`` (ledger, else the free replies kept), or None.

        Raises WireError (``invalid-query``) when the id was answered for a different request. A free reply
        is kept in memory even when there is a ledger (the ledger holds charged replies only), so a reused
        id is refused the same way with or without one.
        """
        if self.ledger is not None:
            stored_charged = self.ledger.recorded(self._account(envelope), query_id, request=envelope.digest)
            if stored_charged is not None:
                return stored_charged
        stored = self._free_replies.get((envelope.sender, query_id))
        if stored is None:
            return None
        if stored[0] != envelope.digest:
            raise WireError(INVALID_QUERY, ID_REUSED.format(query_id=query_id))
        return stored[1]

    def _released(self) -> list[dict[str, Any]]:
        """Reply payloads on record in the ledger, oldest first (what :meth:`Protocol.admit` judges by)."""
        if self.ledger is None:
            return []
        answers = (self.ledger.answer_for(entry["query_id"]) for entry in self.ledger.entries())
        return [answer for answer in answers if answer is not None]

    def _check_querier(self, envelope: Envelope) -> None:
        if envelope.sender not in self.queriers:
            raise WireError(NOT_REGISTERED, NOT_REGISTERED_MSG.format(
                sender=envelope.sender, registered=", ".join(sorted(self.queriers)) or "none"))

    def _charge(self, envelope: Envelope, query_id: str, cost: Budget, payload: dict[str, Any]) -> dict[str, Any]:
        """Durable before release: returns after the debit and ``payload`` are committed (or refuses)."""
        if self.ledger is None:  # a cost the class did not announce: account in memory rather than not at all
            self.ledger = Ledger(":memory:", method=self._composition)
            self._grant(self.ledger, None)
        try:
            return self.ledger.charge(self._account(envelope), query_id, cost, payload, request=envelope.digest)
        except WireError as exc:
            if exc.reason == BUDGET_EXCEEDED:
                self.budget_refusals += 1
            raise

    @staticmethod
    def _keep(kept: dict[str, np.ndarray], query_id: str, model: np.ndarray) -> None:
        kept[query_id] = model
        while len(kept) > KEEP_LIMIT:
            kept.pop(next(iter(kept)))

    def _keep_again(self, envelope: Envelope, kept: dict[str, np.ndarray]) -> None:
        """A retried ``keep`` query keeps its model again (it may have been lost with a restart), if it still parses."""
        if not envelope.payload.get("keep") or envelope.payload["query_id"] in kept:
            return
        try:
            query = MetricQuery.from_payload(envelope.payload, self.audit.n, kept)
        except QueryError:  # an edit of a model lost with the restart: the stored answer still stands
            return
        if query.m == 1:
            self._keep(kept, query.query_id, query.predictions[0])

    def resume(self, restarts: int) -> None:
        """Draw noise from a stream no answer before the restart touched.

        The replay that rebuilt this party answered the ledger's queries from
        their records, without drawing noise, so its generator stands where the
        old process stood some answers ago: the next query would reuse noise
        already released, and two answers with the same noise give away the
        exact difference of their metrics. Each restart count keys a stream of
        its own under this party's secret, independent of every earlier one.
        """
        self.rng = self.secret.rng(f"{NOISE}/restart-{restarts}")

    def close(self) -> None:
        """Close the ledger (its write-ahead log is folded into ledger.sqlite); idempotent."""
        if self.ledger is not None:
            self.ledger.close()

    def stats(self) -> dict[str, Any]:
        """Counters a run reports.

        Models answered, answers replayed from the ledger, refusals (all, and for budget), and per
        querier the epsilon and delta spent (empty without a ledger).
        """
        spent = self.ledger.total() if self.ledger is not None else {}
        return {"models_answered": self.models_answered, "requests_answered": self.requests_answered,
                "answers_replayed": self.answers_replayed,
                "refusals_sent": self.refusals_sent, "budget_refusals": self.budget_refusals,
                "epsilon_spent": {q: b.epsilon for q, b in spent.items()},
                "delta_spent": {q: b.delta for q, b in spent.items()}}

    def ledger_summary(self) -> dict[str, Any] | None:
        """:meth:`parley.parties.ledger.Ledger.summary` of this party's ledger (None without one)."""
        return self.ledger.summary() if self.ledger is not None else None
