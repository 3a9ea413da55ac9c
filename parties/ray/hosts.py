"""Party host actors: :class:`PartyHost` holds one party at a time, on the node of the process that starts it."""

from __future__ import annotations

import traceback
import uuid
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from parley.parties import ids
from parley.parties.ray.journal import _journal_entries
from parley.protocols.errors import InternalError, ParleyError

__all__ = ["HOST_RESTARTS", "PartyHost", "start_hosts"]

#: Restarts Ray grants one party host actor over its life.
HOST_RESTARTS = 4
#: Host actors are named ``parley-<slot>-<hex>`` in the job's namespace (``ray.util.list_named_actors``).
HOST_PREFIX = "parley-"

NOT_LOADED = "the party host holds no party (its actor restarted after the party was loaded)"
PARTY_BUG = "bug: the party's {method!r} raised\n{detail}"


class HostRestarted(ParleyError):
    """Raised by a host that lost its party in a restart (the deployment restores the party and retries)."""


def _pinned() -> Any:
    """Schedule on the node of the calling process (a driver, or a study worker running a cell)."""
    return NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)


class PartyHost:
    """An actor process holding one party object at a time."""

    def __init__(self) -> None:
        self.party: Any = None

    def load(self, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Replace the hosted party with ``cls(*args, **kwargs)`` (all previous state is dropped)."""
        self.party = None
        self.party = cls(*args, **kwargs)

    def restore(self, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any], journal: str, end: int,
                kept: dict[int, Any], restarts: int) -> None:
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

    def call_recorded(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[str]]:
        """:meth:`call`'s result with the query ids the call drew (for a later replay)."""
        if self.party is None:
            raise HostRestarted(NOT_LOADED)
        with ids.recording() as drawn:
            return getattr(self.party, method)(*args, **kwargs), drawn

    def call_batch(
        self, calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]]
    ) -> list[tuple[Any, list[str], BaseException | None]]:
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
