"""Typed handles over a deployment's parties: flows call methods, not method names.

A deployment (:class:`parley.parties.network.LocalDeployment`, or the Ray one) runs a party's method
by name: ``deployment.call(slot, "train")``. A handle, like Flower's ``ClientProxy``, names each
method a role offers once, with its arguments and return type, so flows read
``run.data_center.train()`` and a type checker or an editor follows the call. This module is the
only place that spells party method names as strings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

if TYPE_CHECKING:
    from parley.parties.attacks.base import AttackerView, Reconstruction
    from parley.parties.network import Deployment, Handle
    from parley.parties.wire import Envelope, Identity

__all__ = ["AdversaryHandle", "ComplianceHandle", "DataCenterHandle", "PartyHandle", "ReleaseAdversaryHandle"]

T = TypeVar("T")


class PartyHandle:
    """The party in ``slot`` of ``deployment``: what every party offers the network."""

    def __init__(self, deployment: Deployment, slot: str) -> None:
        self.deployment = deployment
        self.slot = slot

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.slot!r})"

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.deployment.call(self.slot, method, *args, **kwargs)

    def deliver(self, envelope: Envelope, head: str) -> Envelope | list[Envelope] | None:
        """Hand ``envelope`` to the party (``head``: the transcript head after it); its reply, if any."""
        return cast("Envelope | list[Envelope] | None", self._call("deliver", envelope, head))

    def submit_deliver(self, envelope: Envelope, head: str) -> Handle:
        """:meth:`deliver` without waiting: the deployment's handle of the call under way."""
        return self.deployment.submit(self.slot, "deliver", envelope, head)

    def countersign(self, head: str, messages: int) -> dict[str, Any] | None:
        """The party's signature over the transcript's final ``head`` after ``messages`` envelopes."""
        return cast("dict[str, Any] | None", self._call("countersign", head, messages))


class ComplianceHandle(PartyHandle):
    """The compliance party (:class:`parley.parties.compliance.Compliance`)."""

    def stats(self) -> dict[str, Any]:
        """Models answered, replays, refusals and, per account, the budget spent."""
        return cast("dict[str, Any]", self._call("stats"))

    def ledger_summary(self) -> dict[str, Any] | None:
        """The ledger's summary (None without a ledger)."""
        return cast("dict[str, Any] | None", self._call("ledger_summary"))

    def close(self) -> None:
        """Close the party's ledger."""
        self._call("close")


class DataCenterHandle(PartyHandle):
    """The data center (:class:`parley.parties.data_center.DataCenter` and the queriers built on it)."""

    def train(self) -> dict[str, Any]:
        """Train the base model; its accuracy figures."""
        return cast("dict[str, Any]", self._call("train"))

    def audit_query(self, metric: str = "sp", purpose: str | None = None) -> Envelope:
        """The honest audit query of the base model for ``metric``."""
        return cast("Envelope", self._call("audit_query", metric, purpose))

    def answers_received(self) -> list[dict[str, Any]]:
        """The metric answers received so far, in order."""
        return cast("list[dict[str, Any]]", self._call("answers_received"))

    def request(self, kind: str, payload: dict[str, Any]) -> Envelope:
        """A request of the protocol's own exchange (``kind``) with ``payload``."""
        return cast("Envelope", self._call("request", kind, payload))

    def replies_received(self) -> list[tuple[str, dict[str, Any]]]:
        """(kind, payload) of every reply to :meth:`request`, in order."""
        return cast("list[tuple[str, dict[str, Any]]]", self._call("replies_received"))

    def compute(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(data, *args, **kwargs)`` run where the data center's data is."""
        return cast("T", self._call("compute", function, *args, **kwargs))

    def view(self) -> AttackerView:
        """What the data center knows (its data and base model), as an attack sees it."""
        return cast("AttackerView", self._call("view"))

    def defect(self) -> tuple[AttackerView, Identity]:
        """Hand the data center's view and identity to an adversary acting in its name."""
        return cast("tuple[AttackerView, Identity]", self._call("defect"))

    def opened(self) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """An encoding querier's (metric, predictions, opened values) of every answer (``he``, ``mpc``)."""
        return cast("list[tuple[str, np.ndarray, np.ndarray]]", self._call("opened"))


class AdversaryHandle(PartyHandle):
    """An adversary party (:class:`parley.parties.adversary.Adversary`): active or overhearing."""

    def start(self) -> Envelope | list[Envelope] | None:
        """The active attack's first query (or burst of queries)."""
        return cast("Envelope | list[Envelope] | None", self._call("start"))

    def progress(self) -> list[tuple[str, Reconstruction]]:
        """What the attack had pinned down after each answer, by query id."""
        return cast("list[tuple[str, Reconstruction]]", self._call("progress"))

    def outcome(self) -> Reconstruction:
        """The finished active attack's reconstruction."""
        return cast("Reconstruction", self._call("outcome"))

    def observe(self, envelopes: Sequence[Envelope]) -> Reconstruction:
        """A passive attack's reconstruction from the envelopes it overheard."""
        return cast("Reconstruction", self._call("observe", envelopes))

    def status(self) -> dict[str, int | None]:
        """What the running attack has pinned down so far (a terminal's status line reads it)."""
        return cast("dict[str, int | None]", self._call("status"))


class ReleaseAdversaryHandle(PartyHandle):
    """An adversary that reads a randomized-response release (the rr-release exchange's attack)."""

    def infer(self, z: np.ndarray, epsilon: float, groups: int, *args: Any, **kwargs: Any) -> Reconstruction:
        """The guess of A from the release ``z`` at ``epsilon`` over ``groups`` groups."""
        return cast("Reconstruction", self._call("infer", z, epsilon, groups, *args, **kwargs))

    def features_only_guess(self) -> np.ndarray | None:
        """The guess from the auxiliary features alone (None without them)."""
        return cast("np.ndarray | None", self._call("features_only_guess"))
