"""The adversary: runs an attack on its view.

Two threat models:

* curious data center (active): it holds the data center's querier identity and
  view, turns each :class:`~parley.parties.attacks.base.Probe` of its attack into a
  signed ``metric-query``, and feeds each verified answer back to the attack. The
  probes of a :class:`~parley.parties.attacks.base.Probes` leave together, one
  signed envelope each, in one reply (a list) that the network posts pipelined;
  their answers are taken one by one, in the order asked;
* passive observer: it sends nothing; :meth:`Adversary.observe` pairs the
  queries and answers of a transcript and hands them to a passive attack.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from parley.parties.attacks.base import (
    ASKED_TOO_EARLY,
    NOTHING_ASKED,
    Answer,
    Attack,
    Exchange,
    Probe,
    Probes,
    Reconstruction,
    each_probe,
)
from parley.parties.codecs import Codec
from parley.parties.confidential import is_sealed
from parley.parties.ids import new_query_id
from parley.parties.party import REFUSAL, Party
from parley.parties.wire import INVALID_PAYLOAD, INVALID_QUERY, Envelope, Identity, Keyring
from parley.protocols.errors import AttackError, QueryError, RefusedError, WireError
from parley.protocols.queries import apply_edits, edit_form

__all__ = ["Adversary", "exchanges_from"]

UNEXPECTED_ANSWER = "answer to query {got!r} was not asked for (waiting for {pending!r})"
BAD_ANSWER = "answer values must be a finite numeric array of shape ({m},), got {got}"
BAD_DECIMALS = "answer decimals must be None or an int in 0..17, got {got!r}"
NOT_FINISHED = "the attack has not finished (call start() and deliver every answer first)"


def exchanges_from(envelopes: Iterable[Envelope]) -> Iterator[Exchange]:
    """Each answered ``metric-query`` with its answer, in wire order (streams: one pass, little memory).

    Queries in edit form are expanded from the model they edit, as the
    compliance party expanded them.
    """
    pending: dict[str, dict[str, Any]] = {}
    kept: dict[str, np.ndarray] = {}
    for e in envelopes:
        if is_sealed(e.payload):  # a confidential payload: an observer without the key learns nothing from it
            continue
        if e.kind == "metric-query":
            pending[e.payload["query_id"]] = e.payload
        elif e.kind == "metric-answer" and e.payload.get("query_id") in pending:
            q = pending.pop(e.payload["query_id"])
            if "edit_of" in q:
                H = apply_edits(kept[q["edit_of"]], np.atleast_2d(q["indices"]), np.atleast_2d(q["values"]))
            else:
                H = np.atleast_2d(q["predictions"])
            if q.get("keep"):
                kept[q["query_id"]] = H[0]
            yield Exchange(metric=q["metric"], predictions=H, values=np.asarray(e.payload["values"]),
                           decimals=e.payload.get("decimals"))


def answer_from(payload: dict[str, Any], m: int) -> Answer:
    """The :class:`Answer` in a ``metric-answer`` payload to a query of ``m`` models; WireError if malformed.

    A signed answer from the compliance party is still checked: an attack must
    never crash on (or be steered by) values of the wrong type, shape or range.
    """
    values, decimals = payload.get("values"), payload.get("decimals")
    ok = isinstance(values, np.ndarray) and values.dtype.kind in "iuf" and values.shape == (m,) \
        and bool(np.isfinite(values).all())
    if not ok:
        raise WireError(INVALID_PAYLOAD, BAD_ANSWER.format(m=m, got=_describe(values)))
    if decimals is not None and (type(decimals) is not int or not 0 <= decimals <= 17):
        raise WireError(INVALID_PAYLOAD, BAD_DECIMALS.format(got=decimals))
    notes = {k: v for k, v in payload.items() if k not in _NOT_NOTES}
    return Answer(values=np.array(values, dtype=np.float64), decimals=decimals, release=notes or None)


#: Payload keys of a ``metric-answer`` that are not the protocol's public notes about its noise.
_NOT_NOTES = frozenset({"values", "decimals", "metric", "query_id"})


def _describe(value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"array of dtype {value.dtype} and shape {value.shape}"
    return type(value).__name__


class Adversary(Party):
    """Runs ``attack``: actively through ``identity`` or passively over a transcript."""

    handlers = {"metric-answer": "_on_answer", REFUSAL: "_on_refusal"}

    def __init__(self, identity: Identity, keyring: Keyring, attack: Attack, compliance: str, protocol: str,
                 codec: Codec | None = None) -> None:
        super().__init__(identity, keyring, protocol, codec)
        self.attack = attack
        self.compliance = compliance
        self._run: Generator[Probe | Probes | None, Answer, Reconstruction] | None = None
        self._asked: deque[tuple[str, int]] = deque()  # (query id, models) of each query not answered yet, in order
        self._dropped: set[str] = set()  # queries asked by an attack that has ended: their replies are not for it
        self._result: Reconstruction | None = None
        self.refusals: list[dict[str, Any]] = []
        self._kept: dict[str, tuple[str, np.ndarray]] = {}  # probe name -> (query id, model) kept by compliance
        self.failure: str | None = None
        self._progress: list[tuple[str, Reconstruction]] = []  # (answer envelope id, what changed after it)
        self._answered = 0  # models answered to this adversary so far
        self._decided: np.ndarray | None = None  # who its attack has pinned down so far (progress reports)
        self._pinned = 0
        self._bases_checked: list[tuple[np.ndarray, np.ndarray]] = []  # edit probes' bases found equal to a kept model

    @property
    def _pending(self) -> str | None:
        """The query whose answer comes next (None: the attack waits for none)."""
        return self._asked[0][0] if self._asked else None

    def _drop_asked(self) -> None:
        """The attack ended: the replies to what it still awaited are not for it."""
        self._dropped.update(query_id for query_id, _ in self._asked)
        self._asked.clear()

    def start(self) -> Envelope | list[Envelope] | None:
        """Begin the active attack; returns its first query, or its first queries when it asks :class:`Probes`."""
        run = self._run = self.attack.run()
        return self._advance(lambda: next(run))

    def _advance(self, step: Callable[[], Probe | Probes | None]) -> Envelope | list[Envelope] | None:
        """Run the attack to its next yield; the envelope(s) of what it asks (a list for :class:`Probes`), or None."""
        try:
            asked = step()
            if (asked is None) == (not self._asked):  # None exactly while answers of its Probes are to come
                raise AttackError(NOTHING_ASKED if asked is None else ASKED_TOO_EARLY.format(left=len(self._asked)))
        except StopIteration as stop:
            self._result = stop.value
            self._drop_asked()
            return None
        except AttackError as exc:  # the attack cannot decide from its answers: it ends, outcome() says why
            self._run = None
            self._drop_asked()
            self.failure = f"the attack stopped: {exc}"
            return None
        if asked is None:  # it read one answer of its Probes and waits for the next
            return None
        try:
            sealed = [self._query(probe) for probe in each_probe(asked)]
        except QueryError as exc:
            # A query its codec refuses (a metric the protocol does not compute, predictions outside [0, 1]) is
            # refused here, before anything leaves: the attack sees the refusal the compliance party would sign.
            if self.codec is None or self._run is None:
                raise
            self.refusals.append({"reason": INVALID_QUERY, "detail": str(exc)})
            return self._throw(self._run, RefusedError(INVALID_QUERY, str(exc)))
        self._asked.extend((query_id, m) for query_id, m, _ in sealed)  # once every one of them is sealed
        envelopes = [envelope for _, _, envelope in sealed]
        return envelopes if isinstance(asked, Probes) else envelopes[0]

    def _query(self, probe: Probe) -> tuple[str, int, Envelope]:
        """The signed ``metric-query`` of ``probe``, with its query id and number of models."""
        query_id = new_query_id()
        payload: dict[str, Any] = {"metric": probe.metric, "query_id": query_id}
        kept = self._kept.get(probe.relative_to) if probe.relative_to is not None else None
        if probe.edits is not None and kept is not None and self._same_base(probe.edits.base, kept[1]):
            # already in edit form, of the model the compliance party keeps: sent as it is, nothing n-wide built
            payload.update(edit_of=kept[0], indices=probe.edits.indices, values=probe.edits.values)
            m = probe.edits.m
        else:
            H = probe.matrix()
            edits = edit_form(H, kept[1]) if kept is not None else None
            if edits is not None and kept is not None:
                payload.update(edit_of=kept[0], indices=edits[0], values=edits[1])
            else:
                payload["predictions"] = H if probe.predictions is None else probe.predictions
            m = int(H.shape[0])
        if probe.keep:
            payload["keep"] = True
            self._kept[probe.name or query_id] = (query_id, probe.matrix()[0])
        return query_id, m, self.seal(self.compliance, "metric-query", payload)

    def _same_base(self, base: np.ndarray, kept: np.ndarray) -> bool:
        """Is ``base`` (an edit probe's base) the kept model? Compared in full once per base object."""
        if base is kept or any(b is base and k is kept for b, k in self._bases_checked):
            return True
        if base.shape != kept.shape or not np.array_equal(base, kept):
            return False
        self._bases_checked.append((base, kept))
        return True

    def _on_answer(self, envelope: Envelope) -> Envelope | list[Envelope] | None:
        got = envelope.payload.get("query_id")
        if type(got) is str and got in self._dropped:
            self._dropped.discard(got)  # asked before the attack ended: nobody waits for it any more
            return None
        run = self._run
        if run is None or got != self._pending:
            raise WireError(INVALID_PAYLOAD, UNEXPECTED_ANSWER.format(got=got, pending=self._pending))
        m = self._asked[0][1]
        answer = answer_from(envelope.payload, m)
        self._asked.popleft()
        self._answered += m
        reply = self._advance(lambda: run.send(answer))
        known = self.attack.progress()
        if known is not None:
            self._progress.append((envelope.id, known))
            self._count_pinned(known)
        return reply

    def _count_pinned(self, change: Reconstruction) -> None:
        """Keep the number of people pinned down up to date from one change (as the run's knowledge series does)."""
        if self._decided is None:
            self._decided = np.zeros(self.attack.view.n, dtype=bool)
        self._pinned -= int(self._decided[change.indices].sum())
        self._decided[change.indices] = change.decided
        self._pinned += int(self._decided[change.indices].sum())

    def status(self) -> dict[str, int | None]:
        """The active attack so far, for the status line.

        ``answered`` (models answered to it), ``pinned`` (people its attack has pinned down, None for an
        attack that reports only its conclusion) and ``planned`` (models it will ask about in all, None if
        it does not know).
        """
        reports = type(self.attack).progress is not Attack.progress
        return {"answered": self._answered, "pinned": self._pinned if reports else None,
                "planned": self.attack.planned_queries()}

    def progress(self) -> list[tuple[str, Reconstruction]]:
        """The attack's progress reports, one per answer that changed what it had pinned down.

        Each is (the answer's envelope id, what changed in what it has pinned down). Applied in order, the
        changes give what it had pinned down after each answer.
        """
        return list(self._progress)

    def _on_refusal(self, envelope: Envelope) -> Envelope | list[Envelope] | None:
        self.refusals.append(dict(envelope.payload))
        run = self._run
        if run is None or self._pending is None:
            return None
        refused = RefusedError(envelope.payload.get("reason", "?"), envelope.payload.get("detail", ""))
        self._asked.popleft()  # queries are answered (or refused) in the order asked: this is the first
        return self._throw(run, refused)

    def _throw(self, run: Generator[Probe | Probes | None, Answer, Reconstruction],
               refused: RefusedError) -> Envelope | list[Envelope] | None:
        """Hand a refusal to the attack: what it asks next, or None when it does not handle refusals and ends."""
        try:
            return self._advance(lambda: run.throw(refused))
        except RefusedError:
            self._run = None
            self._drop_asked()
            self.failure = f"the attack stopped: its query was {refused}"
            return None

    def outcome(self) -> Reconstruction:
        """The finished active attack's reconstruction."""
        if self._result is None:
            raise AttackError(self.failure or NOT_FINISHED)
        return self._result

    def observe(self, envelopes: Sequence[Envelope]) -> Reconstruction:
        """Passive attack over what was seen on the wire."""
        self._result = self.attack.observe(list(exchanges_from(envelopes)))
        return self._result
