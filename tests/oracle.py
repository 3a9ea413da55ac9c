"""An exact compliance oracle for driving attacks in unit tests (no parties, no wire)."""

from __future__ import annotations

import numpy as np

from parties.attacks import Answer
from protocols.metrics import evaluate


def drive_with_probes(attack, a, y=None, decimals=None):
    """Answer every probe of ``attack`` exactly (optionally rounded); return (reconstruction, probes)."""
    run = attack.run()
    probes = []
    try:
        probe = next(run)
        while True:
            probes.append(probe)
            values = np.atleast_1d(evaluate(probe.metric, probe.predictions, a, y))
            if decimals is not None:
                values = np.round(values, decimals)
            probe = run.send(Answer(values, decimals))
    except StopIteration as stop:
        return stop.value, probes


def drive(attack, a, y=None, decimals=None):
    """The reconstruction only."""
    return drive_with_probes(attack, a, y, decimals)[0]
