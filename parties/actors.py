"""Ray actors for the parties: the only module in ``parties`` that imports Ray.

Each party runs unchanged inside a :class:`PartyHost` actor. A host can be
loaded with a new party at any time, which replaces the old party object and
so resets all its state; a study keeps its hosts across cells and skips the
start-up of new actor processes. Hosts ask for no CPU of their own
(``num_cpus=0``): parties mostly wait for messages.

Clusters
--------
:func:`ensure_ray` starts a private Ray instance, or joins a cluster only when given an
address; it checks the address first (one :class:`ClusterError` within
:data:`CONNECT_TIMEOUT_S` for a wrong one or a refused token), sends this machine's Ray
token, and ships parley to the workers (:func:`cluster_runtime_env`). Hosts run on the
node of the process that creates them (the driver, or a study worker), so the ledger a
party writes lies where that process reads it (docs/design.md, "Clusters").

Restarts
--------
A party is a state machine driven only by the calls the deployment makes (every
message it receives, every step a flow asks of it), so its state can be rebuilt:
:class:`RayDeployment` journals each call a party completed, and when its host
dies (a crash, or ``ray.kill(host, no_restart=False)``) Ray restarts the host
(``max_restarts``), the deployment loads the party again from the same
arguments, replays the journal into it (each call drawing the query ids it drew
the first time, :mod:`parley.parties.ids`), tells it it was restarted
(:meth:`parley.parties.party.Party.resume`) and retries the call that failed. Nothing
of the replay goes on the wire: the replies it produces are dropped (they were
delivered the first time). What must survive beyond the journal survives on
disk: the compliance party's ledger file is reopened, so a retried or replayed
query is answered from its record (same values, no new debit), and the keys are
the load arguments themselves. A host that cannot be restarted is replaced by
a new actor; a call that loses its party more than :data:`RECOVERIES_PER_CALL`
times stops the run with :class:`PartyLostError`.

Pipelining
----------
:meth:`RayDeployment.submit` starts a call and returns a :class:`Pending` handle (``call`` submits the
same way and waits at once). Ray runs one caller's calls to an actor in submission order, and the
deployment settles them in that order: each is journaled when its outcome is known, and a crash
with calls under way restores the party from the calls settled before it and sends the rest again
(after every one sent to the dead host has failed, so none reaches the restored party twice).
Calls submitted while the host is busy wait and then travel together as one Ray task
(:meth:`PartyHost.call_batch`), each run as a call of its own.

The journal keeps nothing large in the driver's memory (a driver that kept every
call's arguments grew by the size of everything it ever sent). An envelope the
network logged is journaled as its place in ``transcript.jsonl``
(:class:`LoggedEnvelope`: path, byte offset, length, envelope id): the transcript
already holds it byte for byte, and a restore reads it back from there. Every
other argument is pickled into a journal file per party on the driver's node
(a temporary folder, removed at :meth:`RayDeployment.shutdown`; arrays out of band, written by a
thread of their own while the party works), and the driver keeps only the file's
length. The host, which runs on the same node, reads both
files itself during a restore, so nothing of the replay passes through the
driver either.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import os
import pickle
import shutil
import socket
import struct
import sys
import tempfile
import threading
import traceback
import uuid
import weakref
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from queue import Queue
from typing import IO, Any

import ray
from ray import cloudpickle
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from parley.parties import ids
from parley.parties.transcript import read_logged_envelope
from parley.parties.wire import Envelope, _payload_nbytes
from parley.protocols.errors import InternalError, ParleyError

__all__ = ["CONNECT_TIMEOUT_S", "ClusterError", "HOST_RESTARTS", "LoggedEnvelope", "PartyHost", "PartyLostError",
           "Pending", "RECOVERIES_PER_CALL", "RayDeployment", "cluster_runtime_env", "ensure_ray", "start_hosts"]

#: Restarts Ray grants one party host actor over its life.
HOST_RESTARTS = 4
#: Times one call may lose its party (and have it restored) before the run stops.
RECOVERIES_PER_CALL = 3
#: Journal entries that may wait for the disk before a sender waits too (at most 8 payloads held in memory).
JOURNAL_BACKLOG = 8
#: Submitted calls travel to a busy host together, in one Ray task, up to this many (a full batch goes at once, so
#: the host answers one batch while the driver passes the last one's replies on; docs/design.md, "Pipelining") ...
BATCH_CALLS = 16
#: ... or this many payload bytes (the first call over it closes the batch).
BATCH_BYTES = 8 << 20
#: Host actors are named ``parley-<slot>-<hex>`` in the job's namespace (``ray.util.list_named_actors``).
HOST_PREFIX = "parley-"

NO_SNAPSHOT = "the {slot!r} party was lost with its actor and this deployment did not load it, so cannot restore it"
NOT_LOADED = "the party host holds no party (its actor restarted after the party was loaded)"
NOT_LOGGED_THERE = ("the transcript {path} no longer holds envelope {expected!r} at byte {offset} as it was "
                    "written: it was edited or cut, so the party cannot be restored exactly")
JOURNAL_FAILED = "the restore journal could not be written ({error}); a crash now could not be recovered from"
JOURNAL_LOST = ("the {slot!r} party's host died and the party cannot be restored: a write to its journal failed "
                "earlier, so a replay would miss calls it ran")
NOT_QUEUED = "bug: the call to {method!r} of the {slot!r} party is neither settled nor queued"
PARTY_BUG = "bug: the party's {method!r} raised\n{detail}"
ABANDONED = "the call to {method!r} of the {slot!r} party was never waited for before the deployment shut down"
PARTY_LOST = ("the {slot!r} party was lost: its actor died {times} times during one call to {method!r} (last: {error}) "
              "and was restored each time; giving up. The ledger and the transcript hold everything up to here")


#: Seconds a connection to a cluster may take before parley gives up on the address (the GCS check waits twice this).
CONNECT_TIMEOUT_S = 15.0
#: The subpackages installed under ``parley`` (and shipped to a cluster's workers with it).
SUBPACKAGES = ("parties", "protocols", "scenarios")

BAD_ADDRESS = "--address must be HOST:PORT (what `ray start --head` prints) or 'auto', got {address!r}"
UNREACHABLE = ("no Ray cluster answers at {address} ({reason}); start one with `ray start --head` and pass the "
               "address it prints, or --address auto for the cluster running on this machine")
NOT_RAY = ("{address} answers but not as a Ray cluster's GCS ({reason}); pass the address `ray start --head` "
           "prints (port 6379 unless --port was given)")
TOKEN_REFUSED = ("the Ray cluster at {address} refused this machine's authentication token (from {source}); "
                 "give this machine the cluster's token (`ray get-auth-token` on its head) in ~/.ray/auth_token, "
                 "RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN")
TOKEN_MISSING = ("the Ray cluster at {address} requires token authentication and this machine sends no token; "
                 "put the cluster's token (`ray get-auth-token` on its head) in ~/.ray/auth_token or RAY_AUTH_TOKEN")
NO_LOCAL_CLUSTER = ("--address auto: no Ray cluster runs on this machine; start one with `ray start --head`, "
                    "or leave --address out for a private instance")
JOIN_FAILED = "could not join the Ray cluster at {address}: {error}"


class ClusterError(ParleyError):
    """A Ray cluster that cannot be joined: bad address, nothing answering, refused token."""


class PartyLostError(ParleyError):
    """A party's actor kept dying during one call: the run cannot go on."""


class HostRestarted(ParleyError):
    """Raised by a host that lost its party in a restart (the deployment restores the party and retries)."""


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Start a private local Ray instance, or join the cluster at ``address``, unless already connected.

    Without ``address`` parley never joins a cluster that happens to run on this machine (nor the one
    ``RAY_ADDRESS`` names): it starts its own instance. With ``address`` (``HOST:PORT`` as ``ray start
    --head`` prints it, or ``"auto"`` for the cluster running on this machine) it first checks, within
    :data:`CONNECT_TIMEOUT_S`, that a Ray cluster answers there and accepts this machine's token, then
    joins it and ships parley's code to its workers (:func:`cluster_runtime_env`).

    Raises
    ------
    ClusterError
        A malformed or unreachable address, something other than a Ray cluster at it, a refused or
        missing token, or a join that failed.
    """
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if not address:  # a private instance: never join a cluster that happens to run on this machine
        ray.init(address="local", num_cpus=num_cpus, **kwargs)
        return
    address = address.strip()
    if address != "auto" and not address.startswith("ray://"):
        _check_cluster(address)
    try:
        with _quiet_stderr():
            ray.init(address=address, runtime_env=cluster_runtime_env(), **kwargs)
    except ClusterError:
        raise
    except Exception as exc:
        if address == "auto" and isinstance(exc, ConnectionError):
            raise ClusterError(NO_LOCAL_CLUSTER) from None
        if _is_auth_error(exc):
            raise ClusterError(_token_message(address)) from None
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ClusterError(JOIN_FAILED.format(address=address, error=f"{type(exc).__name__}: {first}")) from None


def _split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClusterError(BAD_ADDRESS.format(address=address))
    return host, int(port)


def _check_cluster(address: str) -> None:
    """Fail fast, with one line, unless a Ray cluster that accepts this machine answers at ``address``.

    A TCP connection first (a refused port, an unknown host or a silent one fail here within
    :data:`CONNECT_TIMEOUT_S`; Ray's own client would retry for minutes), then one request to the
    cluster's GCS, which says whether it is a Ray cluster and whether it accepts our token.
    """
    host, port = _split_address(address)
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except socket.gaierror:
        raise ClusterError(UNREACHABLE.format(address=address, reason=f"unknown host {host!r}")) from None
    except TimeoutError:
        raise ClusterError(UNREACHABLE.format(address=address,
                                              reason=f"no answer within {CONNECT_TIMEOUT_S:.0f} s")) from None
    except OSError as exc:
        raise ClusterError(UNREACHABLE.format(address=address, reason=exc.strerror or type(exc).__name__)) from None
    _enable_token_auth()
    outcome: dict[str, BaseException | None] = {}

    def probe() -> None:
        try:
            from ray._raylet import GcsClient  # type: ignore[attr-defined]

            GcsClient(address=address).internal_kv_get(b"parley-probe", None, timeout=CONNECT_TIMEOUT_S)
            outcome["error"] = None
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    # Ray's GCS client retries a port that accepts connections but does not answer for tens of
    # seconds; the probe runs in a daemon thread so that the wait is ours to bound.
    with _quiet_stderr():
        thread = threading.Thread(target=probe, name="parley-gcs-probe", daemon=True)
        thread.start()
        thread.join(CONNECT_TIMEOUT_S * 2)
    if "error" not in outcome:
        raise ClusterError(NOT_RAY.format(address=address, reason=f"no answer within {2 * CONNECT_TIMEOUT_S:.0f} s"))
    error = outcome["error"]
    if error is None:
        return
    if _is_auth_error(error):
        raise ClusterError(_token_message(address))
    detail = (str(error).strip().splitlines() or [""])[0].removeprefix("RPC error:").strip()
    reason = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
    raise ClusterError(NOT_RAY.format(address=address, reason=reason[:200]))


def _enable_token_auth() -> None:
    """Send this machine's Ray token when there is one and ``RAY_AUTH_MODE`` does not say otherwise.

    Ray (2.5x-2.6x) turns token authentication on for a cluster started while ``~/.ray/auth_token``
    exists, but a client that joins by explicit address only sends a token when ``RAY_AUTH_MODE=token``;
    parley does what Ray does for ``address="auto"``: a token present means token mode.
    """
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # a Ray without token authentication
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def _token_source() -> str | None:
    """Where Ray reads this machine's token from, or None if there is none."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "the RAY_AUTH_TOKEN variable"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path:
        return path if Path(path).is_file() else None
    default = Path.home() / ".ray" / "auth_token"
    return str(default) if default.is_file() else None


def _token_message(address: str) -> str:
    source = _token_source()
    if source is None or os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
        return TOKEN_MISSING.format(address=address)
    return TOKEN_REFUSED.format(address=address, source=source)


def _is_auth_error(exc: BaseException) -> bool:
    auth_error = getattr(ray.exceptions, "AuthenticationError", None)
    return (auth_error is not None and isinstance(exc, auth_error)) or "InvalidAuthToken" in str(exc)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Drop what Ray's C++ core writes to file descriptor 2 meanwhile (its retry and auth warnings).

    Whatever goes wrong in the block becomes one :class:`ClusterError` line; Ray's lines about
    it would only bury that line.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


@functools.lru_cache(maxsize=1)
def cluster_runtime_env() -> dict[str, Any]:
    """The Ray ``runtime_env`` that ships this parley, code and data, to every worker of a cluster.

    A copy of the installed package (``parley`` with its ``parties``, ``protocols`` and ``scenarios``
    subpackages, the catalog and the bundled data sets; no bytecode) goes into a temporary folder
    and Ray's ``py_modules`` uploads it once per content hash: the workers import exactly the
    driver's parley, whether or not their own Python environment has one. Pass it to ``ray.init``
    when you connect to a cluster yourself.
    """
    package = importlib.util.find_spec("parley")  # found, not imported: parties stay below the public API
    if package is None or package.origin is None:
        raise InternalError("bug: the parley package has no folder to ship")
    root = Path(tempfile.mkdtemp(prefix="parley-ship-")) / "parley"
    atexit.register(shutil.rmtree, root.parent, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(Path(package.origin).parent, root, ignore=ignore)
    for sub in SUBPACKAGES:  # an editable install keeps them beside parley/, not inside it
        if not (root / sub).is_dir():
            spec = importlib.util.find_spec(f"parley.{sub}")
            if spec is None or not spec.submodule_search_locations:
                raise InternalError(f"bug: parley.{sub} has no folder to ship")
            shutil.copytree(Path(list(spec.submodule_search_locations)[0]), root / sub, ignore=ignore)
    return {"py_modules": [str(root)]}


def _pinned() -> Any:
    """Schedule on the node of the calling process (a driver, or a study worker running a cell)."""
    return NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)


@dataclass(frozen=True)
class LoggedEnvelope:
    """Where the transcript holds an envelope a journaled call received: a restore reads it from there.

    ``offset`` and ``length`` are the bytes of its line in ``path``, ``line_hash`` its chain hash;
    reading checks the line is the one written, payload included, and the envelope's ``id``.
    """

    path: str
    offset: int
    length: int
    line_hash: str
    id: str

    def read(self) -> Envelope:
        """The envelope as logged (the transcript's encoding is exact: dtype, shape and bytes of every array)."""
        envelope = read_logged_envelope(self.path, self.offset, self.length, self.line_hash)
        if envelope is None or envelope.id != self.id:
            raise InternalError(NOT_LOGGED_THERE.format(path=self.path, offset=self.offset, expected=self.id))
        return envelope


def _resolve(value: Any) -> Any:
    return value.read() if isinstance(value, LoggedEnvelope) else value


@dataclass(frozen=True)
class _Kept:
    """A journal entry that would not pickle: kept in the driver's memory under ``key``."""

    key: int


_ENTRY = struct.Struct("<QI")  # a journal entry: pickle length, number of out-of-band buffers
_BUFFER = struct.Struct("<Q")  # then each buffer's length before its bytes


def _journal_pieces(entry: Any) -> list[Any]:
    """One journal entry as the pieces written for it: header, pickle, then each array's bytes as they are.

    Arrays travel out of band (pickle protocol 5), so a large payload is written from its own
    memory, never copied into the pickle.
    """
    buffers: list[pickle.PickleBuffer] = []
    blob = cloudpickle.dumps(entry, protocol=5, buffer_callback=buffers.append)
    pieces: list[Any] = [_ENTRY.pack(len(blob), len(buffers)), blob]
    for buffer in buffers:
        raw = buffer.raw()
        pieces += [_BUFFER.pack(raw.nbytes), raw]
    return pieces


def _read_entry(fh: IO[bytes]) -> Any:
    size, count = _ENTRY.unpack(fh.read(_ENTRY.size))
    blob = fh.read(size)
    buffers = [fh.read(_BUFFER.unpack(fh.read(_BUFFER.size))[0]) for _ in range(count)]
    return pickle.loads(blob, buffers=buffers)


def _journal_entries(path: str, end: int, kept: dict[int, Any]) -> Iterator[tuple[str, tuple, dict, list[str]]]:
    """The calls pickled in the journal file ``path`` up to byte ``end``, logged envelopes read back."""
    with open(path, "rb") as fh:
        while fh.tell() < end:
            entry = _read_entry(fh)
            method, args, kwargs, drawn = kept[entry.key] if isinstance(entry, _Kept) else entry
            yield (method, tuple(_resolve(a) for a in args), {k: _resolve(v) for k, v in kwargs.items()}, drawn)


class PartyHost:
    """An actor process holding one party object at a time."""

    def __init__(self) -> None:
        self.party: Any = None

    def load(self, cls: type, args: tuple, kwargs: dict) -> None:
        """Replace the hosted party with ``cls(*args, **kwargs)`` (all previous state is dropped)."""
        self.party = None
        self.party = cls(*args, **kwargs)

    def restore(self, cls: type, args: tuple, kwargs: dict, journal: str, end: int, kept: dict[int, Any],
                restarts: int) -> None:
        """Load the party again, replay the journal (its completed calls, in order), then ``resume(restarts)``.

        ``journal`` is the deployment's journal file of this party (on this node) and ``end`` its length
        when the restore began; the calls are read from it one at a time, and an envelope the transcript
        holds is read from the transcript (``kept``: the entries that would not pickle). Each call draws
        the query ids it drew the first time (:mod:`parley.parties.ids`). A journaled call that raised
        raises again (the party refused the same way); its error is dropped.
        """
        self.load(cls, args, kwargs)
        for method, call_args, call_kwargs, drawn in _journal_entries(journal, end, kept):
            try:
                with ids.playback(drawn):
                    getattr(self.party, method)(*call_args, **call_kwargs)
            except Exception:  # it raised the first time too; the caller saw that error then
                pass
        resume = getattr(self.party, "resume", None)
        if resume is not None:
            resume(restarts)

    def call_recorded(self, method: str, args: tuple, kwargs: dict) -> tuple[Any, list[str]]:
        """:meth:`call`'s result with the query ids the call drew (for a later replay)."""
        if self.party is None:
            raise HostRestarted(NOT_LOADED)
        with ids.recording() as drawn:
            return getattr(self.party, method)(*args, **kwargs), drawn

    def call_batch(self, calls: list[tuple[str, tuple, dict]]) -> list[tuple[Any, list[str], BaseException | None]]:
        """Several calls, in order, each run as :meth:`call_recorded` runs it: (result, ids drawn, error) each.

        A call that raises does not stop the batch (as separate calls would not): its error is returned
        in its place. A party error travels as it was raised; any other exception (a bug) as an
        :class:`InternalError` carrying the party's traceback.
        """
        if self.party is None:
            raise HostRestarted(NOT_LOADED)
        outcomes: list[tuple[Any, list[str], BaseException | None]] = []
        for method, args, kwargs in calls:
            try:
                value, drawn = self.call_recorded(method, args, kwargs)
            except ParleyError as exc:
                outcomes.append((None, [], exc))
            except Exception as exc:  # a bug in a party: its traceback goes back with the call
                detail = "".join(traceback.format_exception(exc))
                outcomes.append((None, [], InternalError(PARTY_BUG.format(method=method, detail=detail))))
            else:
                outcomes.append((value, drawn, None))
        return outcomes

    def unload(self) -> None:
        self.party = None


_RemoteHost = ray.remote(num_cpus=0, max_restarts=HOST_RESTARTS)(PartyHost)


def _new_host(slot: str) -> Any:
    """A host on the caller's node: a file its party writes (the ledger) is where the caller reads it."""
    return _RemoteHost.options(name=f"{HOST_PREFIX}{slot}-{uuid.uuid4().hex[:12]}",
                               scheduling_strategy=_pinned()).remote()


def start_hosts(slots: list[str]) -> dict[str, Any]:
    """Start one host per slot at once (their processes boot in parallel); for :class:`RayDeployment`."""
    return {slot: _new_host(slot) for slot in slots}


@dataclass(eq=False)
class _Batch:
    """Calls sent to one host in one Ray task (:meth:`PartyHost.call_batch`); its outcomes once fetched."""

    ref: Any
    outcomes: list | None = None
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
    args: tuple | None
    kwargs: dict | None
    journal: tuple | None  # (args, kwargs) as journaled: logged envelopes by their place in the transcript
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


class _JournalWriter:
    """Writes journal entries in a thread of their own, so a large payload's bytes go to disk while the party works.

    :meth:`wait` waits until everything handed over is written (a restore reads the files then).
    At most :data:`JOURNAL_BACKLOG` entries wait: a sender faster than the disk waits for it.
    A journal file whose write failed is *lost*: it misses an entry, so nothing more is written to it
    and a restore from it is refused (a replay with a gap would rebuild a party that never was);
    the failure itself waits in :meth:`check` to be reported once.
    """

    def __init__(self) -> None:
        self._queue: Queue[Any] = Queue(maxsize=JOURNAL_BACKLOG)
        self._lock = threading.Lock()
        self._errors: dict[str, BaseException] = {}  # journal file -> its failed write, not yet reported
        self.lost: set[str] = set()  # journal files that missed an entry
        self._thread: threading.Thread | None = None

    def write(self, fh: IO[bytes], pieces: list[Any]) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="parley-journal", daemon=True)
            self._thread.start()
        self._queue.put((fh, pieces))

    def wait(self) -> None:
        if self._thread is not None:
            self._queue.join()

    def check(self) -> None:
        """Raise :class:`InternalError` (:data:`JOURNAL_FAILED`) for a failed write not reported yet."""
        with self._lock:
            if not self._errors:
                return
            name = next(iter(self._errors))
            error = self._errors.pop(name)
        raise InternalError(JOURNAL_FAILED.format(error=error)) from error

    def forget(self, name: str) -> None:
        """``name`` was closed and removed: its failure no longer matters to any restore."""
        self.wait()
        with self._lock:
            self._errors.pop(name, None)
            self.lost.discard(name)

    def failed(self, name: str, exc: BaseException) -> None:
        """A write to journal file ``name`` failed: it is lost, and ``exc`` waits for :meth:`check`."""
        with self._lock:
            self.lost.add(name)
            self._errors.setdefault(name, exc)

    def _run(self) -> None:
        while True:
            fh, pieces = self._queue.get()
            try:
                if fh.name not in self.lost:
                    fh.writelines(pieces)
            except BaseException as exc:  # handed to the deployment's thread at its next submit
                self.failed(fh.name, exc)
            finally:
                self._queue.task_done()


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
        """Journal the envelopes ``transcript`` (a :class:`~parley.parties.transcript.TranscriptWriter`) logged
        as their place in it rather than a copy (the network calls this)."""
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

    def _compact(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
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

    def _write_journal(self, slot: str, entry: tuple) -> None:
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

    def _add(self, slot: str, cls: type, args: tuple, kwargs: dict) -> None:
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

    def _submit(self, slot: str, method: str, args: tuple, kwargs: dict, watch: bool = True) -> Pending:
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
