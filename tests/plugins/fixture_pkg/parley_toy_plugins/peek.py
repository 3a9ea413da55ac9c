"""``toy-peek``: a passive observer of the toy-commit exchange guesses A from the revealed predictions."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from parley.parties.attacks import PASSIVE, Attack, AttackParams, Reconstruction


class ToyPeekParams(AttackParams):
    oriented: bool = Field(default=True, description="orient the guess by the sign of the released SP "
                                                     "(false: a positive prediction always means a = 1)")


class ToyPeek(Attack[ToyPeekParams]):
    """Each person's revealed prediction is the guess of their A, flipped when the released SP is negative."""

    name = "toy-peek"
    Params = ToyPeekParams
    threat_models = PASSIVE
    flows = ("toy-commit",)
    summary = "reads the revealed predictions off the wire; a person's prediction, oriented by SP's sign, is a_j"

    def peek(self, predictions: np.ndarray, sp: float | None) -> Reconstruction:
        """What the exchange calls: the predictions and the released SP it read on the wire (None: no result)."""
        yhat = (np.asarray(predictions) != 0).astype(np.int8)
        flipped = bool(self.params.oriented and sp is not None and sp < 0)
        return Reconstruction(indices=np.arange(yhat.size), a_hat=1 - yhat if flipped else yhat,
                              decided=np.ones(yhat.size, dtype=bool), queries=0, info={"flipped": flipped})
