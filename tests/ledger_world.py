"""A test-only protocol with a privacy cost and fresh noise (shared by unit and integration tests).

It stands in for the DP protocols while they are written: ``cost`` returns a
pure epsilon per query and ``release`` adds Laplace noise, so a second, fresh
answer to the same query would differ from the first (which is what the
ledger's stored answers must prevent). It is not registered: tests that need
it by name register it with ``monkeypatch.setitem(PROTOCOLS, ...)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from parley.protocols.base import AuditSet, ExactValueProtocol, MetricQuery, ProtocolParams
from parley.protocols.budget import Budget, PureDP


class NoisyParams(ProtocolParams):
    epsilon: float = Field(default=0.25, gt=0.0)
    scale: float | None = Field(default=None, ge=0.0, description="Laplace scale; default 1 / epsilon, 0 = exact")


class NoisyProtocol(ExactValueProtocol[NoisyParams]):
    """Laplace noise (scale 1 / epsilon unless given) on each value; costs ``epsilon`` per query.

    ``scale = 0`` answers exactly at the same cost: an exact attack then runs to
    its end while the ledger still counts every answer.
    """

    name = "test-noisy"
    Params = NoisyParams

    def cost(self, query: MetricQuery) -> Budget:
        return PureDP(epsilon=self.params.epsilon)

    def release(self, exact: np.ndarray, query: MetricQuery, audit: AuditSet, rng: np.random.Generator
                ) -> tuple[np.ndarray, dict[str, Any]]:
        scale = 1.0 / self.params.epsilon if self.params.scale is None else self.params.scale
        noise = rng.laplace(scale=scale, size=exact.shape) if scale > 0 else 0.0
        return exact + noise, {"epsilon": self.params.epsilon}


def noisy(epsilon: float = 0.25) -> NoisyProtocol:
    return NoisyProtocol(NoisyParams(epsilon=epsilon))
