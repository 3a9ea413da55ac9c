"""The parties on Ray: :class:`RayDeployment` calls them in their hosts, pipelines calls and restores lost parties."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import uuid
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import IO, Any

import ray

from parley.parties.ray.hosts import NOT_LOADED, HostRestarted, _new_host
from parley.parties.ray.journal import LoggedEnvelope, _journal_pieces, _JournalWriter, _Kept
from parley.parties.wire import Envelope, _payload_nbytes
from parley.protocols.errors import InternalError, ParleyError

__all__ = ["PartyLostError", "Pending", "RECOVERIES_PER_CALL", "RayDeployment"]

#: Times one call may lose its party (and have it restored) before the run stops.
RECOVERIES_PER_CALL = 3
#: Submitted calls travel to a busy host together, in one Ray task, up to this many (a full batch goes at once, so
#: the host answers one batch while the driver passes the last one's replies on; docs/design.md, "Pipelining") ...
BATCH_CALLS = 16
#: ... or this many payload bytes (the first call over it closes the batch).
BATCH_BYTES = 8 << 20

NO_SNAPSHOT = "the {slot!r} party was lost with its actor and this deployment did not load it, so cannot restore it"
JOURNAL_LOST = ("the {slot!r} party's host died and the party cannot be restored: a write to its journal failed "
                "earlier, so a replay would miss calls it ran")
NOT_QUEUED = "bug: the call to {method!r} of the {slot!r} party is neither settled nor queued"
ABANDONED = "the call to {method!r} of the {slot!r} party was never waited for before the deployment shut down"
PARTY_LOST = ("the {slot!r} party was lost: its actor died {times} times during one call to {method!r} (last: {error}) "
              "and was restored each time; giving up. The ledger and the transcript hold everything up to here")


class PartyLostError(ParleyError):
    """A party's actor kept dying during one call: the run cannot go on."""


@dataclass(eq=False)
class _Batch:
    """Calls sent to one host in one Ray task (:meth:`PartyHost.call_batch`); its outcomes once fetched."""

    ref: Any
    outcomes: list[tuple[Any, list[str], BaseException | None]] | None = None
    _future: Any = None

    def watch(self) -> _Batch:
        """From now on Ray's own callback completes a future, so :meth:`ready` costs no round trip.

        Made for batches a caller will ask about (pipelined calls), not for those it waits on at once:
        the callback deserialises the outcome a second time in the driver, which cost every blocking
        call 0.16 to 0.27 ms (``tests/benchmarks/bench_wire.py --echo``).
        """
        if self._future is None:  # two threads may both make one here: either answers alike
            self._future = self.ref.future()
        return self

    def ready(self) -> bool:
        return self.outcomes is not None or self.watch()._future.done()

    def outcome(self, index: int) -> tuple[Any, list[str], BaseException | None]:
        if self.outcomes is None:
            self.outcomes = RayDeployment._get(self.ref)
        return self.outcomes[index]


@dataclass(eq=False)
class _Call:
    """One call submitted to a party host and not yet settled (journaled, its result or error kept)."""

    slot: str
    method: str
    args: tuple[Any, ...] | None
    kwargs: dict[str, Any] | None
    # (args, kwargs) as journaled: logged envelopes by their place in the transcript
    journal: tuple[tuple[Any, ...], dict[str, Any]] | None
    ref: _Batch | None = None  # the batch it travels in (None: not sent yet)
    index: int = 0  # its place in that batch
    nbytes: int = 0  # array bytes of its arguments (what closes a batch)
    failures: int = 0
    settled: bool = False
    value: Any = None
    error: BaseException | None = None


@dataclass(eq=False)
class Pending:
    """The handle :meth:`RayDeployment.submit` returns: the call runs; :meth:`result` waits for it.

    Calls to one party run in the order they were submitted and settle in that order: waiting
    for one first settles every earlier call to the same party (journaled, recovered after a
    crash and retried as a blocking call would be).
    """

    _deployment: RayDeployment | None
    _call: _Call | None = None
    _done: list[Any] = field(default_factory=list)  # [value] or [value, error] of an already settled call

    def done(self) -> bool:
        """Has the call finished: settled, or its host's outcome in (:meth:`result` would not wait for the host)?

        A call still gathered for its busy host is sent once the host is free, as a submit would send it.
        """
        call = self._call
        if call is None or call.settled:
            return True
        if call.ref is None:
            assert self._deployment is not None
            self._deployment._send_if_free(call.slot)
        ref = call.ref  # read once: a thread sharing the deployment may settle the call meanwhile
        return ref is not None and ref.ready()

    def result(self) -> Any:
        """The party method's result (raising what it raised), once every earlier call to its party settled."""
        if self._call is not None:
            call = self._call
            if not call.settled:
                assert self._deployment is not None
                self._deployment._settle(call)
            self._done = [call.value] if call.error is None else [call.value, call.error]
            self._call = None
        if len(self._done) == 2:
            raise self._done[1]
        return self._done[0] if self._done else None


class RayDeployment:
    """Parties in :class:`PartyHost` actors; ``call`` blocks on the party method's result, ``submit`` does not.

    Parameters
    ----------
    hosts : dict, optional
        Hosts to reuse, by slot (a study worker passes the same dict to every
        cell); new slots get new hosts, which are added to the dict (as does a
        host replaced after it died for good). Without it, hosts are created for
        this deployment and killed by :meth:`shutdown`.

    Attributes
    ----------
    recoveries : dict
        Per slot, how many times its party was restored after its host died.
    """

    def __init__(self, hosts: dict[str, Any] | None = None) -> None:
        self._reuse = hosts is not None
        self.hosts: dict[str, Any] = hosts if hosts is not None else {}
        self._loaded: list[str] = []
        self._loads: dict[str, tuple[type, Any, Any]] = {}  # slot -> cls, object refs of args and kwargs
        self._journal: dict[str, IO[bytes]] = {}  # slot -> its journal file, open for appending
        self._kept: dict[str, dict[int, Any]] = {}  # slot -> entries that would not pickle, by key
        self._transcript: Any = None
        self._folder = tempfile.mkdtemp(prefix="parley-journal-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._folder, ignore_errors=True)
        self._down: set[str] = set()
        self._pending: dict[str, deque[_Call]] = {}  # slot -> its submitted calls not yet settled, in order
        # Threads may share a deployment (several queriers on one compliance party): submitting and settling
        # touch the queues above, so one thread at a time does either (reentrant: a settle may restore a party)
        self._calls = threading.RLock()
        self._writer = _JournalWriter()
        self.recoveries: dict[str, int] = {}

    def log_to(self, transcript: Any) -> None:
        """Journal the envelopes ``transcript`` logged as their place in it rather than a copy.

        The network calls this with its :class:`~parley.parties.transcript.TranscriptWriter`, which is
        flushed before a party is restored so that its host can read those envelopes back.
        """
        self._transcript = transcript

    def _open_journal(self, slot: str) -> None:
        self._close_journal(slot)
        os.makedirs(self._folder, exist_ok=True)
        self._journal[slot] = open(  # noqa: SIM115 (open for the party's life, closed on reload and shutdown)
            os.path.join(self._folder, f"{uuid.uuid4().hex}.journal"), "wb")
        self._kept[slot] = {}

    def _close_journal(self, slot: str) -> None:
        old = self._journal.pop(slot, None)
        self._kept.pop(slot, None)
        if old is not None:
            self._writer.forget(old.name)  # its entries written (or failed) first
            with contextlib.suppress(OSError):  # a failed flush of a lost journal: it is removed anyway
                old.close()
            with contextlib.suppress(OSError):
                os.remove(old.name)

    def _compact(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments as journaled: an envelope the transcript just logged becomes its place there.

        Taken when the call is submitted, right after the network logged the envelope (the writer
        locates only the envelope it appended last).
        """
        locate = getattr(self._transcript, "locate", None)
        if locate is None:
            return args, kwargs

        def compact(value: Any) -> Any:
            if isinstance(value, Envelope):
                where = locate(value)
                if where is not None:
                    path, offset, length, line_hash = where
                    return LoggedEnvelope(path, offset, length, line_hash, value.id)
            return value

        return tuple(compact(a) for a in args), {k: compact(v) for k, v in kwargs.items()}

    def _write_journal(self, slot: str, entry: tuple[Any, ...]) -> None:
        """Hand ``entry`` to the writer thread (a failed write is reported by the next :meth:`submit`)."""
        if slot not in self._journal:
            self._open_journal(slot)
        try:
            pieces = _journal_pieces(entry)
        except Exception:  # something Ray could send but plain pickling cannot: kept here, as it is
            key = len(self._kept[slot])
            self._kept[slot][key] = entry
            pieces = _journal_pieces(_Kept(key))
        self._writer.write(self._journal[slot], pieces)

    def boot(self, slots: list[str]) -> None:
        """Start the hosts of ``slots`` that are not up yet, all at once, without waiting for them.

        Their processes boot while the caller goes on (loading the data, say); a party added later to a
        booted slot then loads without waiting for its process. Hosts started here belong to the
        deployment as if :meth:`add` had started them (killed by :meth:`shutdown`, or kept in the
        reused dict).
        """
        with self._calls:
            for slot in slots:
                if slot not in self.hosts:
                    self.hosts[slot] = _new_host(slot)

    def add(self, slot: str, cls: type, *args: Any, **kwargs: Any) -> None:
        with self._calls:
            self._add(slot, cls, args, kwargs)

    def _add(self, slot: str, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self._drain(slot)
        if slot not in self.hosts:
            self.hosts[slot] = _new_host(slot)
        # A snapshot in the object store: a restore loads the party exactly as it was first loaded,
        # whatever the driver does later with the objects it passed (a generator it draws from, ...).
        snapshot = (cls, ray.put(args), ray.put(kwargs))
        self._loads[slot] = snapshot
        self._open_journal(slot)
        self._down.discard(slot)
        self._with_recovery(slot, "load", lambda host: host.load.remote(*snapshot))
        if slot not in self._loaded:
            self._loaded.append(slot)

    def call(self, slot: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``method`` of the party in ``slot`` and return its result (after every call submitted before it)."""
        with self._calls:
            pending = self._submit(slot, method, args, kwargs, watch=False)
        return pending.result()

    def submit(self, slot: str, method: str, *args: Any, **kwargs: Any) -> Pending:
        """Start ``method`` of the party in ``slot`` and return at once; :meth:`Pending.result` waits for it.

        Calls to one party run in submission order (Ray runs one caller's calls to an actor in order),
        so a sender may pipeline: seal, log and submit the next envelope before the reply to the last.
        The journal, the recovery after a crash and the errors are those of :meth:`call`.

        Raises
        ------
        InternalError
            :data:`JOURNAL_FAILED`: a journal write failed since the last submit (a full disk). Raised
            here, before the call is sent, so no reply is ever lost to it; the party keeps serving, but
            a crash of its host can no longer be recovered from (:data:`JOURNAL_LOST`).
        """
        with self._calls:
            return self._submit(slot, method, args, kwargs)

    def _submit(self, slot: str, method: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                watch: bool = True) -> Pending:
        self._writer.check()
        nbytes = sum(_payload_nbytes(a.payload) for a in (*args, *kwargs.values()) if isinstance(a, Envelope))
        call = _Call(slot, method, args, kwargs, self._compact(args, kwargs), nbytes=nbytes)
        queue = self._pending.setdefault(slot, deque())
        queue.append(call)
        if slot in self._down:
            return Pending(self, call)  # sent after the party's restore, behind the calls waiting for it
        unsent = [c for c in queue if c.ref is None]
        # Nagle's rule: a host with nothing under way gets the call now; a busy one gets the calls
        # gathered meanwhile as one batch once it is done, or once the batch is full.
        if self._free(queue) or len(unsent) >= BATCH_CALLS or sum(c.nbytes for c in unsent) >= BATCH_BYTES:
            self._flush(slot, watch)
        return Pending(self, call)

    @staticmethod
    def _free(queue: deque[_Call]) -> bool:
        """Has the host of ``queue``'s calls nothing under way (no batch sent, or the last one done)?"""
        sent = [c.ref for c in queue if c.ref is not None]
        return not sent or sent[-1].ready()

    def _send_if_free(self, slot: str) -> None:
        """Send the calls gathered for ``slot`` if its host is free (and up)."""
        with self._calls:
            if slot not in self._down and self._free(self._pending.get(slot, deque())):
                self._flush(slot)

    def _flush(self, slot: str, watch: bool = True) -> None:
        """Send the calls to ``slot`` not sent yet, in order, as one Ray task (``watch``: see :meth:`_Batch.watch`)."""
        unsent = [c for c in self._pending.get(slot, ()) if c.ref is None]
        if not unsent:
            return
        try:
            ref = self.hosts[slot].call_batch.remote([(c.method, c.args, c.kwargs) for c in unsent])
        except ray.exceptions.RayActorError:  # a host gone for good: retried when they settle
            return
        batch = _Batch(ref).watch() if watch else _Batch(ref)
        for index, c in enumerate(unsent):
            c.ref, c.index = batch, index

    def _drain(self, slot: str) -> None:
        """Settle every call submitted to ``slot`` (before loading another party there)."""
        queue = self._pending.get(slot)
        if queue:
            self._settle(queue[-1])  # errors go to each call's handle

    def _settle(self, target: _Call) -> None:
        """Settle the calls to ``target``'s party in order, up to and including ``target``."""
        with self._calls:
            self._settle_in_order(target)

    def _settle_in_order(self, target: _Call) -> None:
        queue = self._pending.get(target.slot, deque())
        while not target.settled:
            if not queue:  # every call before it settled and it is not among them
                raise InternalError(NOT_QUEUED.format(method=target.method, slot=target.slot))
            call = queue[0]
            try:
                if call.ref is None:  # not sent yet, or its host died: restore if needed, then send
                    if call.slot in self._down:
                        self._restore(call.slot)
                    self._flush(call.slot, watch=False)  # waited on now
                    if call.ref is None:
                        raise HostRestarted(NOT_LOADED)  # its host could not take the call: recover
                value, drawn, error = call.ref.outcome(call.index)
                if error is not None:
                    raise error
            except (ray.exceptions.RayActorError, HostRestarted) as exc:
                self._lost(call, exc)
                continue
            except PartyLostError as exc:  # nothing to restore the party from: the call never ran
                queue.popleft()
                self._settled(call, None, exc)
                continue
            except Exception as exc:  # the party ran the call and raised: a replay runs it too (its ids drawn afresh)
                self._finish(queue, call, [], None, exc)
                continue
            self._finish(queue, call, drawn, value, None)

    def _finish(self, queue: deque[_Call], call: _Call, drawn: list[str], value: Any,
                error: BaseException | None) -> None:
        """Settle ``call``, the first in ``queue``, then journal it.

        In that order, and the journal raises nothing here: the party ran the call (it may have charged
        for it), so its outcome reaches its handle whatever the disk does. A failed write makes the
        party's journal lost (no restore replays it) and is reported by the next :meth:`submit`.
        """
        queue.popleft()
        assert call.journal is not None
        entry = (call.method, *call.journal, drawn)
        self._settled(call, value, error)
        self._write_journal(call.slot, entry)

    @staticmethod
    def _settled(call: _Call, value: Any, error: BaseException | None) -> None:
        call.value, call.error, call.settled = value, error, True
        call.args = call.kwargs = call.journal = call.ref = None  # the driver keeps no payload once settled

    def _lost(self, call: _Call, exc: BaseException) -> None:
        """The host of ``call`` died or lost its party: every later call to it is resubmitted after a restore."""
        slot = self._pending[call.slot]
        # Calls submitted after this one ran on no party (Ray runs them in order, after this one failed);
        # wait for each to fail before the restore, so that none of them reaches the restored party.
        later = list({id(c.ref): c.ref.ref for c in slot if c.ref is not None and c.ref is not call.ref}.values())
        if later:
            ray.wait(later, num_returns=len(later))
        for c in slot:
            c.ref = None
        call.failures += 1
        if call.slot in self._down:  # the restore itself failed: the actor may be gone for good
            self._replace(call.slot)
        self._down.add(call.slot)
        if call.failures > RECOVERIES_PER_CALL:
            error = PartyLostError(PARTY_LOST.format(slot=call.slot, times=call.failures, method=call.method,
                                                     error=type(exc).__name__))
            self._pending[call.slot].popleft()
            self._settled(call, None, error)

    def _with_recovery(self, slot: str, method: str, submit: Any) -> Any:
        """``submit(host)``'s result; while the host is down, restore the party and submit again."""
        failures = 0
        while True:
            try:
                if slot in self._down:
                    self._restore(slot)
                return self._get(submit(self.hosts[slot]))
            except (ray.exceptions.RayActorError, HostRestarted) as exc:
                failures += 1
                if slot in self._down:  # the restore itself failed: the actor may be gone for good
                    self._replace(slot)
                self._down.add(slot)
                if failures > RECOVERIES_PER_CALL:
                    raise PartyLostError(PARTY_LOST.format(slot=slot, times=failures, method=method,
                                                           error=type(exc).__name__)) from None

    def _restore(self, slot: str) -> None:
        """Load the party of ``slot`` again, replay its journal and tell it how many times it restarted."""
        restarts = self.recoveries.get(slot, 0) + 1
        if slot not in self._loads:  # loaded by another deployment: nothing to rebuild it from
            raise PartyLostError(NO_SNAPSHOT.format(slot=slot))
        cls, args, kwargs = self._loads[slot]
        if slot not in self._journal:
            self._open_journal(slot)
        journal = self._journal[slot]
        self._writer.wait()
        try:
            journal.flush()
        except OSError as exc:  # the last entries never reached the file
            self._writer.failed(journal.name, exc)
        if journal.name in self._writer.lost:  # the failure itself is reported by the next submit
            raise PartyLostError(JOURNAL_LOST.format(slot=slot))
        if self._transcript is not None:  # the host reads the envelopes logged so far
            self._transcript.flush()
        self._get(self.hosts[slot].restore.remote(cls, args, kwargs, journal.name, journal.tell(), self._kept[slot],
                                                  restarts))
        self.recoveries[slot] = restarts
        # Replays of later restarts pass through this one as it happened (its resume included).
        self._write_journal(slot, ("resume", (restarts,), {}, []))
        self._down.discard(slot)

    def _replace(self, slot: str) -> None:
        """A host that could not be restored is killed for good and a new actor takes its slot."""
        with contextlib.suppress(Exception):  # already gone
            ray.kill(self.hosts[slot], no_restart=True)
        self.hosts[slot] = _new_host(slot)

    @staticmethod
    def _get(ref: Any) -> Any:
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, ParleyError):  # a user-facing error: raise it as the party raised it
                raise exc.cause from None
            raise  # a bug: keep Ray's remote traceback

    def shutdown(self) -> None:
        """Unload the parties (reused hosts stay up for the next run) or kill the hosts.

        A call submitted and never waited for is abandoned: its handle raises :class:`InternalError`.
        """
        for queue in self._pending.values():
            for call in queue:
                self._settled(call, None, InternalError(ABANDONED.format(method=call.method, slot=call.slot)))
        self._pending.clear()
        if self._reuse:
            for slot in self._loaded:
                with contextlib.suppress(ray.exceptions.RayActorError):  # a dead host is replaced when loaded next
                    ray.get(self.hosts[slot].unload.remote())
        else:
            for handle in self.hosts.values():
                ray.kill(handle)
            self.hosts.clear()
        self._loaded.clear()
        self._loads.clear()
        for slot in list(self._journal):
            self._close_journal(slot)
        self._down.clear()
