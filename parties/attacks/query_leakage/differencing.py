"""Passive differencing: a wire observer decodes any two answered models that differ in one individual.

This is the double-query reveal (Example 2 of the query-leakage paper) turned
passive: the observer sends nothing. Whenever two models on the wire differ only
at individual j, by delta = h2_j - h1_j, then SP2 - SP1 = delta/N1 if a_j = 1 and
-delta/N0 if a_j = 0, so sign((SP2 - SP1)/delta) is a_j. Whoever can read the
queries and answers (no confidentiality on the wire) learns what the querier
learned.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from parley.parties.attacks.base import PASSIVE, Attack, AttackParams, Exchange, Reconstruction, register_attack
from parley.parties.attacks.query_leakage.targeted import decide_from_steps

__all__ = ["Differencing", "single_difference_pairs"]

#: Pairwise search over at most this many models; beyond it each model is compared with the first ones only.
PAIRWISE_LIMIT = 512
ANCHORS = 64


def single_difference_pairs(H: np.ndarray) -> list[tuple[int, int, int]]:
    """Pairs (r1, r2, j) of rows of ``H`` that differ in exactly one column j (r1 < r2)."""
    m = H.shape[0]
    anchors = range(m) if m <= PAIRWISE_LIMIT else range(min(ANCHORS, m))
    pairs = []
    for r1 in anchors:
        diff = H[r1 + 1:] != H[r1]
        counts = diff.sum(axis=1)
        for offset in np.flatnonzero(counts == 1):
            r2 = r1 + 1 + int(offset)
            pairs.append((r1, r2, int(np.flatnonzero(diff[offset])[0])))
    return pairs


@register_attack
class Differencing(Attack[AttackParams]):
    """Reveal every individual at which two observed SP-queried models differ alone."""

    name = "differencing"
    threat_models = PASSIVE
    summary = "passive: two observed models differing in one individual reveal it (Example 2, overheard)"

    def observe(self, exchanges: Sequence[Exchange]) -> Reconstruction:
        sp = [e for e in exchanges if e.metric == "sp"]
        n = self.view.n
        if not sp:
            return Reconstruction(np.empty(0, np.int64), np.empty(0, np.int8), np.empty(0, bool), 0,
                                  {"warning": "no statistical-parity exchanges were observed"})
        H = np.vstack([e.predictions.reshape(-1, n) for e in sp])
        values = np.concatenate([np.asarray(e.values, dtype=np.float64).reshape(-1) for e in sp])
        decimals = max((e.decimals for e in sp if e.decimals is not None), default=None)
        found: dict[int, float] = {}
        for r1, r2, j in single_difference_pairs(H):
            if j not in found:
                found[j] = (values[r2] - values[r1]) / (H[r2, j] - H[r1, j])
        if not found:
            return Reconstruction(np.empty(0, np.int64), np.empty(0, np.int8), np.empty(0, bool), 0,
                                  {"warning": "no two observed models differ in exactly one individual"})
        idx = np.array(sorted(found), dtype=np.int64)
        steps = np.array([found[j] for j in idx])
        a_hat, decided, info = decide_from_steps(steps, n, decimals)
        return Reconstruction(idx, a_hat, decided, queries=0, info={**info, "models_observed": int(H.shape[0])})
