"""The wire: delivers envelopes between parties and logs each one to the transcript.

The network is what a passive observer taps: every envelope it carries is
appended to the hash-chained transcript before delivery, and the recipient is
told the transcript head after it (the log state its next envelope signs). At
the end of a run :meth:`Network.countersign` asks every party to sign the final
head for the transcript's end record. Parties reach each
other only through :meth:`Network.send`, whether they are plain objects in this
process (:class:`LocalDeployment`) or Ray actors
(:class:`parley.parties.ray.deployment.RayDeployment`); both offer ``call(slot, method, ...)``.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Mapping
from typing import Any
from typing import Protocol as TypingProtocol

from parley.parties.handles import PartyHandle
from parley.parties.payload_limits import check_payload
from parley.parties.transcript import TranscriptWriter
from parley.parties.wire import Envelope, Identity
from parley.protocols.errors import InternalError, ParleyError

__all__ = ["Deployment", "Delivery", "Done", "Handle", "LocalDeployment", "Network"]

NO_ROUTE = "no party on the network answers to {name!r} (known: {known})"
TOO_MANY = "the exchange exceeded {limit} messages without ending (a loop between parties?)"
NO_SIGNER = "no party can sign the end of the transcript as {name!r}: the party routed at {slot!r} holds {held!r}"


class Handle(TypingProtocol):
    """A call under way, as :meth:`Deployment.submit` returns it.

    ``result()`` waits for the call and returns what the party method returned (or raises); ``done()``
    says whether it has finished, so that ``result()`` would not wait for the party.
    """

    def result(self) -> Any: ...

    def done(self) -> bool: ...


class Deployment(TypingProtocol):
    """Where parties live: ``call`` runs a method of the party in ``slot`` and returns its result.

    ``submit`` starts the same call and returns a :class:`Handle` at once; calls to one party run
    in the order they were submitted. A deployment without ``submit`` still works: the network
    then delivers each envelope with ``call`` when it is posted.
    """

    def call(self, slot: str, method: str, *args: Any, **kwargs: Any) -> Any: ...

    def submit(self, slot: str, method: str, *args: Any, **kwargs: Any) -> Handle: ...

    def shutdown(self) -> None: ...


class Done:
    """The handle of a call that already ran (in-process): its result, or the error it raised."""

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self._value, self._error = value, error

    def done(self) -> bool:
        return True

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


class LocalDeployment:
    """Parties as plain objects in this process (unit tests, fast studies)."""

    def __init__(self) -> None:
        self.parties: dict[str, Any] = {}

    def boot(self, slots: list[str]) -> None:
        """Nothing to start: a party in this process exists once added."""

    def add(self, slot: str, cls: type, *args: Any, **kwargs: Any) -> None:
        self.parties[slot] = cls(*args, **kwargs)

    def call(self, slot: str, method: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.parties[slot], method)(*args, **kwargs)

    def submit(self, slot: str, method: str, *args: Any, **kwargs: Any) -> Done:
        """Run the call now (a party in this process has nothing to overlap with) and hand back its outcome."""
        try:
            return Done(self.call(slot, method, *args, **kwargs))
        except Exception as exc:
            return Done(error=exc)

    def shutdown(self) -> None:
        self.parties.clear()


class Delivery:
    """An envelope the network logged and handed to its recipient: :meth:`result` waits for the reply."""

    def __init__(self, network: Network, envelope: Envelope | None, handle: Handle) -> None:
        self._network, self._envelope, self._handle = network, envelope, handle

    def done(self) -> bool:
        """Is the reply in (:meth:`result` would not wait for the recipient)?"""
        return self._handle.done()

    def result(self) -> Envelope | None:
        """The recipient's reply (or None); the network's observer hears of the envelope once it was delivered."""
        reply: Envelope | None = self._handle.result()  # the recipient's deliver()
        envelope, self._envelope = self._envelope, None
        if envelope is not None and self._network.observer is not None:
            self._network.observer(envelope)
        return reply


class Network:
    """Routes envelopes by recipient name, logging every one.

    Parameters
    ----------
    deployment : Deployment
        Where the parties run.
    transcript : TranscriptWriter
        The wire log.
    """

    def __init__(self, deployment: Deployment, transcript: TranscriptWriter) -> None:
        self.deployment = deployment
        self.transcript = transcript
        log_to = getattr(deployment, "log_to", None)
        if log_to is not None:  # a deployment that journals deliveries by their place in the transcript
            log_to(transcript)
        self.routes: dict[str, str] = {}
        self.messages = 0
        self.bytes = 0
        self.kinds: Counter[str] = Counter()
        #: Called with each envelope once it is logged and delivered (``parley run``'s status line on a terminal).
        self.observer: Callable[[Envelope], None] | None = None
        #: Called while :meth:`exchange` waits for a reply that is not in yet, as long as it returns True: a bit
        #: of other work (:meth:`parley.parties.transcript.TranscriptFollower.step` verifies a transcript line).
        self.idle: Callable[[], bool] | None = None

    def route(self, name: str, slot: str) -> None:
        """Deliver envelopes addressed to ``name`` to the party in ``slot``."""
        self.routes[name] = slot

    def send(self, envelope: Envelope) -> Envelope | list[Envelope] | None:
        """Log ``envelope`` and deliver it; return what the recipient sends back (or None).

        A payload over the limits of :mod:`parley.parties.payload_limits` (too large, too deep, unreadable)
        is refused with a :class:`~parley.protocols.errors.WireError` before it is logged or delivered.
        """
        slot = self._log(envelope)
        reply = PartyHandle(self.deployment, slot).deliver(envelope, self.transcript.head)
        if self.observer is not None:
            self.observer(envelope)
        return reply

    def post(self, envelope: Envelope) -> Delivery:
        """Log ``envelope`` and hand it to its recipient without waiting; ``result()`` of the handle is the reply.

        The envelope is logged now, so the transcript holds envelopes in the order they were posted,
        and each party receives its envelopes in that order (the deployment runs one party's calls in
        submission order): a sender that needs no answer before its next message pipelines its
        messages, with sequence numbers, replay guard, transcript and budget exactly as with
        :meth:`send`. Refused like :meth:`send`, before anything is logged.
        """
        slot = self._log(envelope)
        party = PartyHandle(self.deployment, slot)
        if getattr(self.deployment, "submit", None) is None:  # a deployment that only blocks: delivered now
            try:
                handle: Handle = Done(party.deliver(envelope, self.transcript.head))
            except Exception as exc:
                handle = Done(error=exc)
        else:
            handle = party.submit_deliver(envelope, self.transcript.head)
        return Delivery(self, envelope, handle)

    def _log(self, envelope: Envelope) -> str:
        """Check the route and the payload's limits, then log ``envelope``; the slot it goes to."""
        slot = self.routes.get(envelope.recipient)
        if slot is None:  # nothing was sent: nothing is logged
            raise ParleyError(NO_ROUTE.format(name=envelope.recipient, known=", ".join(sorted(self.routes))))
        check_payload(envelope.payload)  # nothing over the limits reaches the transcript
        self.bytes += self.transcript.append(envelope)
        self.messages += 1
        self.kinds[envelope.kind] += 1
        return slot

    def exchange(self, first: Envelope | list[Envelope] | None, limit: int = 1_000_000) -> None:
        """Carry a conversation to its end: each reply is sent on until someone replies nothing.

        A reply may be a list of envelopes (an adversary's :class:`~parley.parties.attacks.base.Probes`):
        they are posted together (:meth:`post`), and each reply is posted on as soon as it is in,
        oldest delivery first, while later ones are still under way. So one envelope at a time is
        :meth:`send` after :meth:`send`, and a burst costs one round trip to each party instead of
        one per envelope. The transcript's order depends only on the replies, never on timing:
        the envelopes in the order posted, each reply after the replies to everything posted before it.
        """
        under_way: deque[Delivery] = deque()
        count = 0

        def post_all(reply: Envelope | list[Envelope] | None) -> None:
            nonlocal count
            for envelope in reply if isinstance(reply, list) else () if reply is None else (reply,):
                count += 1
                if count > limit:
                    raise ParleyError(TOO_MANY.format(limit=limit))
                under_way.append(self.post(envelope))

        post_all(first)
        idle = self.idle
        while under_way:
            delivery = under_way.popleft()
            if idle is not None:
                while not delivery.done() and idle():
                    pass
            post_all(delivery.result())

    def countersign(self, unrouted: Mapping[str, Identity], head: str, messages: int) -> list[dict[str, Any]]:
        """End signatures of every party in the transcript's keyring over ``head`` after ``messages`` envelopes.

        A party with a route signs in its own process (the party answering to the
        name, e.g. the adversary that took over the data center's identity); a party
        without one (a passive observer that sends nothing) signs through the
        identity the run holds for it in ``unrouted``.
        """
        signatures = []
        for name in self.transcript.keyring.entries:
            slot = self.routes.get(name)
            if slot is not None:
                signed = PartyHandle(self.deployment, slot).countersign(head, messages)
                if signed is None or signed.get("signer") != name:
                    held = None if signed is None else signed.get("signer")
                    raise InternalError(NO_SIGNER.format(name=name, slot=slot, held=held))
            elif name in unrouted:
                signed = unrouted[name].sign_end(head, messages)
            else:
                raise InternalError(NO_SIGNER.format(name=name, slot=None, held=None))
            signatures.append(signed)
        return signatures
