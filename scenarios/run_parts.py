"""The names and random streams of a run's parts, without the machinery that starts them (no Ray).

:mod:`parley.scenarios.world` builds a run from these; code that rebuilds part of a run outside it
(the comparison's utility, :mod:`parley.scenarios.compare.utility`) takes the same names and streams,
so it sees the run's data and base model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from parley.parties.data_center import DataCenterData

__all__ = ["ADVERSARY", "COMPLIANCE", "DATA_CENTER", "OBSERVER", "PARTY_SLOTS", "STREAMS", "data_center_data",
           "spawn_streams"]

COMPLIANCE, DATA_CENTER, ADVERSARY, OBSERVER = "compliance", "data-center", "adversary", "observer"
#: Every slot a run may fill with a party.
PARTY_SLOTS = (COMPLIANCE, DATA_CENTER, ADVERSARY, OBSERVER)
#: The independent random streams a run spawns from its seed, in spawn order (the order is part of the seed's meaning).
STREAMS = ("data", "data-center", "compliance", "adversary", "observer", "flow")


def spawn_streams(seed: int) -> dict[str, np.random.Generator]:
    """The run's random streams of :data:`STREAMS`, spawned from ``seed`` (what ``build_world`` uses)."""
    return dict(zip(STREAMS, (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(len(STREAMS))),
                    strict=True))


def data_center_data(split: Any) -> DataCenterData:
    """What the data center of a run holds of ``split``: X and y of both sets, never A."""
    return DataCenterData(split.X_train, split.y_train, split.X_audit, split.y_audit)
