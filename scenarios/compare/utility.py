"""Utility of a metric-query protocol: the error of the honest audit answer over many seeded releases.

A comparison run asks one honest audit query per run, so the mean of its runs' query errors rests
on a few noisy draws. This module measures the error properly: it rebuilds the run's audit set and
the honest data center's base model (the run's own streams, :func:`parley.scenarios.run_parts.spawn_streams`,
and the real :class:`parley.parties.data_center.DataCenter`, which trains the model and writes the
query), then releases that query ``releases`` times through the protocol object directly, each
release from its own generator seeded from the study seed, and reports the median and the 90th
percentile of |released - exact| per audit metric. Pure: no Ray, no transcript, no ledger (the
figure is the mechanism's error on the run's input, not the scenario's traffic).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from parley import protocols
from parley.parties.data_center import DataCenter
from parley.parties.wire import Identity, Keyring
from parley.protocols.base import AuditSet, MetricQuery
from parley.protocols.errors import ConfigError
from parley.protocols.metrics import evaluate
from parley.scenarios.datasets import Table, load_split
from parley.scenarios.run_parts import COMPLIANCE, DATA_CENTER, data_center_data, spawn_streams
from parley.scenarios.spec import Scenario

__all__ = ["HonestAudit", "RELEASES", "UTILITY_FILE", "UTILITY_LABEL", "BAD_RELEASES", "UNSEEDED_SPREAD",
           "honest_audit", "release_errors", "honest_utility", "utilities"]

#: Releases of the honest audit query per protocol configuration (the benchmark's count).
RELEASES = 400
#: The comparison's file of these utilities, one row per protocol row and audit metric.
UTILITY_FILE = "utility.csv"
#: How the report names the metric-query utility.
UTILITY_LABEL = "median absolute error of the honest audit answer over K = {releases} releases"
BAD_RELEASES = "releases must be a positive integer, got {releases!r}"
#: Utilities that the seed does not fix, and by how much they move: ``he``'s releases run the two parties'
#: CKKS computation in this process, whose key pair (one per process) and query encryption draw SEAL's
#: randomness from the operating system (the flooding noise is drawn from the release's generator).
UNSEEDED_SPREAD = {"he": "its median error moves in the tenth significant digit between runs of one seed "
                         "(3.3892708881e-05 to 3.3892708890e-05 over seven runs of the full grid, a relative spread "
                         "of 3e-10): the simulated parties' CKKS key pair and query encryption draw their randomness "
                         "from the operating system, not from the public seed (nor yet from the party secrets that "
                         "--secrets replays); no ranking depends on digits that far down"}
#: Quantiles reported per audit metric.
QUANTILES = {"median_error": 0.5, "p90_error": 0.9}


@dataclass(frozen=True)
class HonestAudit:
    """The honest use of one run: the audit set, the base model's scores, and its audit query per metric."""

    audit: AuditSet
    scores: np.ndarray  # the base model's P(y = 1) on the audit set
    queries: dict[str, MetricQuery]


def honest_audit(scenario: Scenario, metrics: tuple[str, ...] | None = None, table: Table | None = None
                 ) -> HonestAudit:
    """The audit set and the honest data center's audit queries, exactly as a run of ``scenario`` builds them.

    The data set is split from the run's data stream and the base model trained by a real
    :class:`DataCenter` (not an actor) from the run's data-center stream, so the queries are those
    the run sends. ``metrics`` defaults to the scenario's ``audit_metrics``.
    """
    streams = spawn_streams(scenario.seed)
    split = load_split(scenario.dataset, streams["data"], table)
    identity = Identity.generate(DATA_CENTER, "data-center")
    keyring = Keyring()
    keyring.add(identity.key_entry())
    center = DataCenter(identity, keyring, data_center_data(split), scenario.model, COMPLIANCE,
                        scenario.protocol.name, streams["data-center"])
    center.train()
    n = int(split.a_audit.shape[0])
    queries = {metric: MetricQuery.from_payload(center.audit_query(metric).payload, n)
               for metric in (metrics if metrics is not None else scenario.audit_metrics)}
    return HonestAudit(audit=AuditSet(a=split.a_audit, y=split.y_audit), scores=center._scores(split.X_audit),
                       queries=queries)


def release_errors(protocol: Any, query: MetricQuery, audit: AuditSet, releases: int, seed: int | list[int]
                   ) -> np.ndarray:
    """|released - exact| of ``releases`` answers to ``query``, release r drawn from ``default_rng([*seed, r])``.

    Returns an array of shape (releases, m). The exact values are the referee's (``evaluate``).
    """
    if type(releases) is not int or releases < 1:
        raise ConfigError(BAD_RELEASES.format(releases=releases))
    root = [seed] if isinstance(seed, int) else list(seed)
    exact = evaluate(query.metric, query.predictions, audit.a, audit.y)
    # A secure protocol's compliance party refuses predictions in the clear: its three parties run in-process.
    answer = getattr(protocol, "simulate", protocol.answer)
    return np.stack([np.abs(answer(query, audit, np.random.default_rng([*root, r]))["values"] - exact)
                     for r in range(releases)])


def honest_utility(scenario: Scenario, releases: int = RELEASES, seed: int = 0, honest: HonestAudit | None = None
                   ) -> list[dict[str, Any]]:
    """Per audit metric of ``scenario``: median and 90th percentile of the honest answer's error over the releases.

    ``honest`` reuses an audit already built for the same data, seed and model (rows that differ only in
    the protocol share it). Release r of every protocol uses the generator ``[seed, r]``.
    """
    honest = honest if honest is not None else honest_audit(scenario)
    protocol = protocols.get_protocol(scenario.protocol.name)(scenario.protocol.params)
    rows = []
    for metric, query in honest.queries.items():
        errors = release_errors(protocol, query, honest.audit, releases, seed).ravel()
        rows.append({"metric": metric, "releases": releases, "n": honest.audit.n,
                     **{key: float(np.quantile(errors, q)) for key, q in QUANTILES.items()}})
    return rows


def utilities(p: Any, releases: int = RELEASES, seed: int = 0) -> pd.DataFrame:
    """The utility of every metric-query row of the comparison plan ``p`` (one row per protocol and audit metric).

    A row's scenario is that of its cells at repeat 0 of the study seeded ``seed`` (the same audit set and
    base model as that repeat); rows of other exchanges are not measured here.
    """
    from parley.scenarios.study.plan import repeat_seed

    built: dict[str, HonestAudit] = {}
    out = []
    for row in p.rows:
        if row.flow != "metric-query":
            continue
        cell = next((data for (label, _), data in p.cells.items() if label == row.label), None)
        if cell is None:  # no attack column of this row was planned: no run to mirror
            continue
        scenario = Scenario.from_dict({**cell, "seed": repeat_seed(seed, 0)})
        key = json.dumps([scenario.to_dict()[k] for k in ("dataset", "model", "seed", "audit_metrics")],
                         sort_keys=True, default=str)
        if key not in built:
            built[key] = honest_audit(scenario)
        for entry in honest_utility(scenario, releases, seed, built[key]):
            out.append({"protocol": row.label, **entry})
    return pd.DataFrame(out, columns=["protocol", "metric", "releases", "n", *QUANTILES])
