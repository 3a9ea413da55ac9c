"""``raw``: exact metric answers, optionally rounded to a stated number of decimals.

The undefended baseline of the query-leakage paper (Hamman et al., Sec. 3): the
compliance party returns the metric exactly. Rounding to ``decimals`` models a
report that prints a fixed precision; the precision is recorded in each answer
so an attacker (and the reader of a transcript) knows what was released.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from parley.protocols.base import AuditSet, ExactValueProtocol, MetricQuery, ProtocolParams, register_protocol

__all__ = ["RawProtocol"]


class RawParams(ProtocolParams):
    decimals: int | None = Field(default=None, ge=0, le=17,
                                 description="round answers to this many decimals; none = full float64")


@register_protocol
class RawProtocol(ExactValueProtocol[RawParams]):
    """Exact answers (float64), or rounded to ``decimals`` places."""

    name = "raw"
    Params = RawParams

    def release(
        self, exact: np.ndarray, query: MetricQuery, audit: AuditSet, rng: np.random.Generator
    ) -> tuple[np.ndarray, dict[str, Any]]:
        decimals = self.params.decimals
        values = exact if decimals is None else np.round(exact, decimals)
        return values, {"decimals": decimals}
