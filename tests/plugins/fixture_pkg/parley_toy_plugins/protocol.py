"""``toy-round``: metric answers rounded to a multiple of ``step``."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from parley.protocols import AuditSet, ExactValueProtocol, MetricQuery, ProtocolParams


class ToyRoundParams(ProtocolParams):
    step: float = Field(default=1e-4, gt=0.0, le=1.0, description="answers are multiples of this")


class ToyRound(ExactValueProtocol[ToyRoundParams]):
    """Answers rounded to a multiple of ``step`` (a report printed on a coarse grid)."""

    name = "toy-round"
    Params = ToyRoundParams

    def release(self, exact: np.ndarray, query: MetricQuery, audit: AuditSet,
                rng: np.random.Generator) -> tuple[np.ndarray, dict[str, Any]]:
        step = self.params.step
        return np.round(exact / step) * step, {"step": step}
