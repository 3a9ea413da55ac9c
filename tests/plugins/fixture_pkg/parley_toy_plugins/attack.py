"""``toy-flip``: the base model and one flipped copy per target, asked in one query."""

from __future__ import annotations

from collections.abc import Generator

import numpy as np
from pydantic import Field

from parley.parties.attacks import Answer, Attack, AttackParams, Probe, Reconstruction


class ToyFlipParams(AttackParams):
    targets: int = Field(default=10, ge=1, description="the first `targets` individuals of the audit set")


class ToyFlip(Attack[ToyFlipParams]):
    """Flipping individual j's prediction moves SP by +1/N1 if a_j = 1, by -1/N0 if a_j = 0."""

    name = "toy-flip"
    Params = ToyFlipParams
    summary = "base model and one flipped copy per target in one query; the SP step's sign is a_j"

    def run(self) -> Generator[Probe, Answer, Reconstruction]:
        n = self.view.n
        targets = np.arange(min(self.params.targets, n))
        base = self.view.require("base_predictions").astype(np.float64)
        H = np.repeat(base[None, :], targets.size + 1, axis=0)
        H[1 + np.arange(targets.size), targets] = 1.0 - base[targets]
        answer = yield Probe("sp", H, "base model, then one flipped copy per target")
        values = np.asarray(answer.values, dtype=np.float64).reshape(-1)
        # A flip 0 -> 1 adds an acceptance in a_j's group; 1 -> 0 removes one: undo its direction.
        steps = (values[1:] - values[0]) * (1.0 - 2.0 * base[targets])
        return Reconstruction(indices=targets, a_hat=(steps > 0).astype(np.int8), decided=steps != 0, queries=1)
