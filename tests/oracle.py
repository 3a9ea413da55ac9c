"""An exact compliance oracle for driving attacks in unit tests (no parties, no wire)."""

from __future__ import annotations

import numpy as np

from parley.parties.attacks import Answer, AttackerView
from parley.parties.attacks.base import answer_all
from parley.protocols.metrics import evaluate


def drive_with_probes(attack, a, y=None, decimals=None):
    """Answer every probe of ``attack`` exactly (optionally rounded), :class:`Probes` one by one; return
    (reconstruction, probes)."""
    probes = []

    def answer(probe):
        probes.append(probe)
        values = np.atleast_1d(evaluate(probe.metric, probe.matrix(), a, y))
        if decimals is not None:
            values = np.round(values, decimals)
        return Answer(values, decimals)

    return answer_all(attack.run(), answer), probes


def drive(attack, a, y=None, decimals=None):
    """The reconstruction only."""
    return drive_with_probes(attack, a, y, decimals)[0]


def synthetic_world(seed: int, n: int, n0: int):
    """A random A with exactly n0 zeros and an attacker's view of uniform base scores and 30 % positive labels."""
    rng = np.random.default_rng(seed)
    a = np.ones(n, dtype=np.int8)
    a[rng.choice(n, n0, replace=False)] = 0
    scores = rng.random(n)
    view = AttackerView(n=n, base_scores=scores, base_predictions=(scores >= 0.5).astype(np.int8),
                        y=(rng.random(n) < 0.3).astype(np.int8))
    return a, view
