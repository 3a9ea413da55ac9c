"""Ray actors for the parties: the only module in ``parties`` that imports Ray.

Each party runs unchanged inside a :class:`PartyHost` actor. A host can be
loaded with a new party at any time, which replaces the old party object and
so resets all its state; a study keeps its hosts across cells and skips the
start-up of new actor processes. Hosts ask for no CPU of their own
(``num_cpus=0``): parties mostly wait for messages.

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
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import ray

from parley.parties import ids
from parley.protocols.errors import ParleyError

__all__ = ["HOST_RESTARTS", "PartyHost", "PartyLostError", "RECOVERIES_PER_CALL", "RayDeployment", "ensure_ray",
           "start_hosts"]

#: Restarts Ray grants one party host actor over its life.
HOST_RESTARTS = 4
#: Times one call may lose its party (and have it restored) before the run stops.
RECOVERIES_PER_CALL = 3
#: Host actors are named ``parley-<slot>-<hex>`` in the job's namespace (``ray.util.list_named_actors``).
HOST_PREFIX = "parley-"

NO_SNAPSHOT = "the {slot!r} party was lost with its actor and this deployment did not load it, so cannot restore it"
NOT_LOADED = "the party host holds no party (its actor restarted after the party was loaded)"
PARTY_LOST = ("the {slot!r} party was lost: its actor died {times} times during one call to {method!r} (last: {error}) "
              "and was restored each time; giving up. The ledger and the transcript hold everything up to here")


class PartyLostError(ParleyError):
    """A party's actor kept dying during one call: the run cannot go on."""


class HostRestarted(ParleyError):
    """Raised by a host that lost its party in a restart (the deployment restores the party and retries)."""


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Start a local Ray instance, or join the cluster at ``address``, unless already connected."""
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address:
        ray.init(address=address, **kwargs)
    else:  # a private instance: never join a cluster that happens to run on this machine
        ray.init(address="local", num_cpus=num_cpus, **kwargs)


class PartyHost:
    """An actor process holding one party object at a time."""

    def __init__(self) -> None:
        self.party: Any = None

    def load(self, cls: type, args: tuple, kwargs: dict) -> None:
        """Replace the hosted party with ``cls(*args, **kwargs)`` (all previous state is dropped)."""
        self.party = None
        self.party = cls(*args, **kwargs)

    def restore(self, cls: type, args: tuple, kwargs: dict, journal: list[tuple[str, tuple, dict, list[str]]],
                restarts: int) -> None:
        """Load the party again and replay ``journal``, its completed calls in order, then ``resume(restarts)``.

        Each call draws the query ids it drew the first time (:mod:`parley.parties.ids`). A journaled call
        that raised raises again (the party refused the same way); its error is dropped.
        """
        self.load(cls, args, kwargs)
        for method, call_args, call_kwargs, drawn in journal:
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

    def unload(self) -> None:
        self.party = None


_RemoteHost = ray.remote(num_cpus=0, max_restarts=HOST_RESTARTS)(PartyHost)


def _new_host(slot: str) -> Any:
    return _RemoteHost.options(name=f"{HOST_PREFIX}{slot}-{uuid.uuid4().hex[:12]}").remote()


def start_hosts(slots: list[str]) -> dict[str, Any]:
    """Start one host per slot at once (their processes boot in parallel); for :class:`RayDeployment`."""
    return {slot: _new_host(slot) for slot in slots}


class RayDeployment:
    """Parties in :class:`PartyHost` actors; ``call`` blocks on the party method's result.

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
        self._journal: dict[str, list[tuple[str, tuple, dict, list[str]]]] = {}
        self._down: set[str] = set()
        self.recoveries: dict[str, int] = {}

    def add(self, slot: str, cls: type, *args: Any, **kwargs: Any) -> None:
        if slot not in self.hosts:
            self.hosts[slot] = _new_host(slot)
        # A snapshot in the object store: a restore loads the party exactly as it was first loaded,
        # whatever the driver does later with the objects it passed (a generator it draws from, ...).
        snapshot = (cls, ray.put(args), ray.put(kwargs))
        self._loads[slot] = snapshot
        self._journal[slot] = []
        self._down.discard(slot)
        self._with_recovery(slot, "load", lambda host: host.load.remote(*snapshot))
        if slot not in self._loaded:
            self._loaded.append(slot)

    def call(self, slot: str, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            result, drawn = self._with_recovery(
                slot, method, lambda host: host.call_recorded.remote(method, args, kwargs))
        except PartyLostError:
            raise
        except Exception:  # the party ran the call and raised: a replay runs it too (its ids drawn afresh)
            self._journal.setdefault(slot, []).append((method, args, kwargs, []))
            raise
        self._journal.setdefault(slot, []).append((method, args, kwargs, drawn))
        return result

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
        self._get(self.hosts[slot].restore.remote(cls, args, kwargs, self._journal[slot], restarts))
        self.recoveries[slot] = restarts
        # Replays of later restarts pass through this one as it happened (its resume included).
        self._journal[slot].append(("resume", (restarts,), {}, []))
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
        """Unload the parties (reused hosts stay up for the next run) or kill the hosts."""
        if self._reuse:
            for slot in self._loaded:
                # a dead host is replaced when its slot is loaded next
                with contextlib.suppress(ray.exceptions.RayActorError):
                    ray.get(self.hosts[slot].unload.remote())
        else:
            for handle in self.hosts.values():
                ray.kill(handle)
            self.hosts.clear()
        self._loaded.clear()
        self._loads.clear()
        self._journal.clear()
        self._down.clear()
