"""Ray actors for the parties: the only module in ``parties`` that imports Ray.

Each party runs unchanged inside a :class:`PartyHost` actor. A host can be
loaded with a new party at any time, which replaces the old party object and
so resets all its state; a study keeps its hosts across cells and skips the
start-up of new actor processes. Hosts ask for no CPU of their own
(``num_cpus=0``): parties mostly wait for messages.
"""

from __future__ import annotations

from typing import Any

import ray

from protocols.errors import ParleyError

__all__ = ["PartyHost", "RayDeployment", "ensure_ray", "start_hosts"]


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Start a local Ray instance, or join the cluster at ``address``, unless already connected."""
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(num_cpus=num_cpus, **kwargs)


class PartyHost:
    """An actor process holding one party object at a time."""

    def __init__(self) -> None:
        self.party: Any = None

    def load(self, cls: type, args: tuple, kwargs: dict) -> None:
        """Replace the hosted party with ``cls(*args, **kwargs)`` (all previous state is dropped)."""
        self.party = None
        self.party = cls(*args, **kwargs)

    def call(self, method: str, args: tuple, kwargs: dict) -> Any:
        return getattr(self.party, method)(*args, **kwargs)

    def unload(self) -> None:
        self.party = None


_RemoteHost = ray.remote(num_cpus=0)(PartyHost)


def start_hosts(slots: list[str]) -> dict[str, Any]:
    """Start one host per slot at once (their processes boot in parallel); for :class:`RayDeployment`."""
    return {slot: _RemoteHost.remote() for slot in slots}


class RayDeployment:
    """Parties in :class:`PartyHost` actors; ``call`` blocks on the party method's result.

    Parameters
    ----------
    hosts : dict, optional
        Hosts to reuse, by slot (a study worker passes the same dict to every
        cell); new slots get new hosts, which are added to the dict. Without it,
        hosts are created for this deployment and killed by :meth:`shutdown`.
    """

    def __init__(self, hosts: dict[str, Any] | None = None) -> None:
        self._reuse = hosts is not None
        self.hosts: dict[str, Any] = hosts if hosts is not None else {}
        self._loaded: list[str] = []

    def add(self, slot: str, cls: type, *args: Any, **kwargs: Any) -> None:
        if slot not in self.hosts:
            self.hosts[slot] = _RemoteHost.remote()
        self._get(self.hosts[slot].load.remote(cls, args, kwargs))
        self._loaded.append(slot)

    def call(self, slot: str, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._get(self.hosts[slot].call.remote(method, args, kwargs))

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
            ray.get([self.hosts[slot].unload.remote() for slot in self._loaded])
        else:
            for handle in self.hosts.values():
                ray.kill(handle)
            self.hosts.clear()
        self._loaded.clear()
