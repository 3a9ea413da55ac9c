"""Typed privacy budgets and their composition (in the style of Tumult's typed budgets).

A budget is a frozen value: :class:`PureDP` (epsilon) or :class:`ApproxDP`
(epsilon, delta). Costs compose sequentially (epsilons and deltas add), or by
the advanced composition theorem (Dwork, Rothblum, Vadhan 2010; heterogeneous
form of Kairouz, Oh, Viswanath 2015, Thm. 3.5's simpler corollary): for costs
(eps_i, delta_i) and slack delta' > 0,

    eps = sqrt(2 ln(1/delta') sum eps_i^2) + sum eps_i (e^{eps_i} - 1),
    delta = delta' + sum delta_i,

which is smaller than the plain sum when many small costs are spent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from parley.protocols.errors import ConfigError

__all__ = ["Budget", "PureDP", "ApproxDP", "budget", "compose", "within", "ZERO"]

MIXED_KINDS = "cannot compare a pure epsilon budget with an (epsilon, delta) cost: give the budget a delta"


class Budget(BaseModel):
    """A privacy budget or cost: epsilon and delta (0 for pure DP)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    epsilon: float = Field(ge=0.0)
    delta: float = Field(default=0.0, ge=0.0, lt=1.0)

    @property
    def pure(self) -> bool:
        return self.delta == 0.0

    def __add__(self, other: Budget) -> Budget:
        """Sequential composition."""
        return budget(self.epsilon + other.epsilon, self.delta + other.delta)


class PureDP(Budget):
    """epsilon-DP (delta = 0)."""

    delta: float = Field(default=0.0, ge=0.0, le=0.0)


class ApproxDP(Budget):
    """(epsilon, delta)-DP with delta > 0."""

    delta: float = Field(gt=0.0, lt=1.0)


def budget(epsilon: float, delta: float = 0.0) -> Budget:
    """The right typed budget for (epsilon, delta)."""
    return PureDP(epsilon=epsilon) if delta == 0.0 else ApproxDP(epsilon=epsilon, delta=delta)


ZERO = PureDP(epsilon=0.0)


def compose(costs: Sequence[Budget], method: Literal["sequential", "advanced"] = "sequential",
            slack: float = 1e-6) -> Budget:
    """Total privacy loss of ``costs`` spent one after the other."""
    if method == "sequential" or not costs:
        total: Budget = ZERO
        for cost in costs:
            total = total + cost
        return total
    if not 0.0 < slack < 1.0:
        raise ConfigError(f"advanced composition needs a slack delta' in (0, 1), got {slack!r}")
    eps = [c.epsilon for c in costs]
    advanced = math.sqrt(2.0 * math.log(1.0 / slack) * sum(e * e for e in eps)) + sum(e * math.expm1(e) for e in eps)
    sequential = sum(eps)
    delta = sum(c.delta for c in costs)
    if advanced >= sequential:  # for few or large costs the plain sum is tighter (and needs no slack)
        return budget(sequential, delta)
    return budget(advanced, delta + slack)


def within(total: Budget, limit: Budget) -> bool:
    """Does spending ``total`` stay inside ``limit``? A pure limit admits no delta."""
    if limit.pure and not total.pure:
        raise ConfigError(MIXED_KINDS)
    tiny = 1e-12  # float sums of many costs
    return total.epsilon <= limit.epsilon * (1 + tiny) + tiny and total.delta <= limit.delta * (1 + tiny) + tiny
