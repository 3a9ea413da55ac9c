"""Ray actors for the parties: the only module in ``parties`` that imports Ray.

Each party class runs unchanged inside an actor. Actors ask for no CPU of
their own (``num_cpus=0``): they mostly wait for messages, and a study packs
many scenarios onto few cores.
"""

from __future__ import annotations

from typing import Any

import ray

from protocols.errors import ParleyError

__all__ = ["RayDeployment", "ensure_ray"]


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Start a local Ray instance, or join the cluster at ``address``, unless already connected."""
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(num_cpus=num_cpus, **kwargs)


class RayDeployment:
    """Parties as Ray actors; ``call`` blocks on the actor method's result."""

    def __init__(self, max_restarts: int = 0) -> None:
        self.handles: dict[str, Any] = {}
        self.max_restarts = max_restarts

    def add(self, slot: str, cls: type, *args: Any, **kwargs: Any) -> None:
        actor_cls = ray.remote(num_cpus=0, max_restarts=self.max_restarts)(cls)
        self.handles[slot] = actor_cls.remote(*args, **kwargs)

    def call(self, slot: str, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return ray.get(getattr(self.handles[slot], method).remote(*args, **kwargs))
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, ParleyError):  # a user-facing error: raise it as the party raised it
                raise exc.cause from None
            raise  # a bug: keep Ray's remote traceback

    def shutdown(self) -> None:
        for handle in self.handles.values():
            ray.kill(handle)
        self.handles.clear()
