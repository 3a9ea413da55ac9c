"""The data center: trains models without A and asks the compliance party how fair they are.

It holds X and y of its training set and of the audit set, never A. Honest use
is :meth:`DataCenter.audit_query` (how fair is my model?). In the curious
data-center threat model it :meth:`DataCenter.defect` s: it hands its view and
its querier identity to the adversary, which then queries in its name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from parley.parties.attacks.base import AttackerView
from parley.parties.codecs import Codec
from parley.parties.ids import new_query_id
from parley.parties.learners.base_model import ModelSpec, build_estimator
from parley.parties.party import REFUSAL, Party
from parley.parties.wire import INVALID_PAYLOAD, Envelope, Identity, Keyring
from parley.protocols.errors import ParleyError, WireError

__all__ = ["DataCenter", "DataCenterData"]

BAD_ANSWER = "a metric answer needs a string query_id and a non-empty 1-d numeric values array (got keys: {keys})"
NOT_TRAINED = "the data center has not trained its base model yet (call train() first)"
UNASKED = "a {kind} for query {got!r}, which this data center never asked (it asked {asked} queries)"


@dataclass(frozen=True)
class DataCenterData:
    """What the data center holds: features and labels, no protected attribute."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_audit: np.ndarray
    y_audit: np.ndarray


class DataCenter(Party):
    """Model developers: train a base model, query its fairness, read answers."""

    handlers: Mapping[str, str] = {"metric-answer": "_on_answer", REFUSAL: "_on_refusal"}

    def __init__(self, identity: Identity, keyring: Keyring, data: DataCenterData, model: ModelSpec,
                 compliance: str, protocol: str, rng: np.random.Generator, codec: Codec | None = None) -> None:
        super().__init__(identity, keyring, protocol, codec)
        # Replies of the protocols' own exchanges: whatever else the compliance role may send.
        self.handlers = {**self.handlers, **{kind: "_on_reply" for kind in sorted(
            self.role_sends.get("compliance", frozenset()) - {"metric-answer", REFUSAL})}}
        self.data = data
        self.model_spec = model
        self.compliance = compliance
        self.rng = rng
        self.model: Any = None
        self.answers: dict[str, dict[str, Any]] = {}
        self.refusals: list[dict[str, Any]] = []
        self.replies: list[tuple[str, dict[str, Any]]] = []
        self._asked: set[str] = set()  # query ids of its own queries and requests: only their answers are taken

    def train(self) -> dict[str, float]:
        """Fit the base model on the training set; return its accuracies."""
        seed = int(self.rng.integers(2**31 - 1))
        self.model = build_estimator(self.model_spec, random_state=seed)
        self.model.fit(self.data.X_train, self.data.y_train)
        return {
            "base_train_accuracy": float((self._predict(self.data.X_train) == self.data.y_train).mean()),
            "base_accuracy": float((self._predict(self.data.X_audit) == self.data.y_audit).mean()),
        }

    def _scores(self, X: np.ndarray) -> np.ndarray:
        if self.model is None:
            raise ParleyError(NOT_TRAINED)
        return np.asarray(self.model.predict_proba(X)[:, 1], dtype=np.float64)

    def _predict(self, X: np.ndarray) -> np.ndarray:
        return (self._scores(X) >= self.model_spec.threshold).astype(np.int8)

    def audit_query(self, metric: str = "sp", purpose: str | None = None) -> Envelope:
        """An honest query: ``metric`` of the base model's binary predictions on the audit set.

        ``purpose`` is declared in the payload when given (a compliance party's budget policy may charge it to
        that purpose's account, see :class:`parley.parties.compliance.Compliance`).
        """
        predictions = self._predict(self.data.X_audit).astype(np.float64)[None, :]
        payload = {"metric": metric, "predictions": predictions, "query_id": self._ask()}
        if purpose is not None:
            payload["purpose"] = purpose
        return self.seal(self.compliance, "metric-query", payload)

    def _ask(self) -> str:
        query_id = new_query_id()
        self._asked.add(query_id)
        return query_id

    def _check_asked(self, envelope: Envelope) -> None:
        """Refuse a reply to a query this data center never sent (a well-signed answer is not a solicited one)."""
        got = envelope.payload.get("query_id")
        if type(got) is not str or got not in self._asked:
            raise WireError(INVALID_PAYLOAD, UNASKED.format(kind=envelope.kind, got=got, asked=len(self._asked)))

    def _on_answer(self, envelope: Envelope) -> None:
        payload = envelope.payload
        values = payload.get("values")
        if type(payload.get("query_id")) is not str or not isinstance(values, np.ndarray) \
                or values.dtype.kind not in "iuf" or values.ndim != 1 or values.size == 0:
            raise WireError(INVALID_PAYLOAD, BAD_ANSWER.format(keys=", ".join(sorted(payload))))
        self._check_asked(envelope)
        self.answers[payload["query_id"]] = payload

    def answers_received(self) -> list[dict[str, Any]]:
        """Payloads of the answers to this data center's honest queries, in arrival order."""
        return list(self.answers.values())

    def request(self, kind: str, payload: dict[str, Any]) -> Envelope:
        """A request of the protocol's own exchange (``release-request``, ...) to the compliance party.

        A ``query_id`` is added if ``payload`` has none; it makes a retry idempotent.
        """
        if "query_id" not in payload:
            payload = {"query_id": self._ask(), **payload}
        self._asked.add(payload["query_id"])
        return self.seal(self.compliance, kind, payload)

    def _on_reply(self, envelope: Envelope) -> None:
        self._check_asked(envelope)
        self.replies.append((envelope.kind, dict(envelope.payload)))

    def replies_received(self) -> list[tuple[str, dict[str, Any]]]:
        """(kind, payload) of every reply to :meth:`request`, in arrival order."""
        return list(self.replies)

    def compute(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Post-processing at the data center: ``function(data, replies, *args, **kwargs)``.

        The function sees what this party holds (:class:`DataCenterData`, the
        replies received), nothing else; with Ray it runs inside the actor, so
        the training set never leaves it.
        """
        return function(self.data, self.replies_received(), *args, **kwargs)

    def _on_refusal(self, envelope: Envelope) -> None:
        self.refusals.append(dict(envelope.payload))

    def opened(self) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """(metric, predictions, opened values) of the answers its codec opened (the referee's errors); [] without."""
        return list(self.codec.opened) if self.codec is not None else []

    def view(self) -> AttackerView:
        """Everything the data center knows about the audit set (no A)."""
        return AttackerView(
            n=int(self.data.X_audit.shape[0]),
            base_scores=self._scores(self.data.X_audit),
            base_predictions=self._predict(self.data.X_audit),
            y=self.data.y_audit,
        )

    def defect(self) -> tuple[AttackerView, Identity]:
        """Turn curious: hand view and querier identity to the adversary; send nothing more."""
        if self.identity is None:
            raise ParleyError("the data center has already handed over its identity")
        identity, self.identity = self.identity, None
        return self.view(), identity
