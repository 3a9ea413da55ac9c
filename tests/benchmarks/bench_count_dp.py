"""Count-level DP answers (``dp-counts``) against the metric-level DP protocols on Adult.

The honest data center of ``adult-observer-honest`` (Adult, A = race, audit n = 1,000, seed 0, its
base model trained exactly as the run trains it) asks for the SP, EO and PE of its base model. Each
protocol answers that query ``RELEASES`` times from seeded generators; the figure is the median
|answer - exact| over the releases, all protocols in one run on the same input:

* one model, epsilon in ``EPSILONS``: ``dp-counts`` (discrete Laplace), ``laplace`` and
  ``smooth-cauchy`` (SP only), beside the *count-level optimum*: Laplace noise of scale 1/epsilon on
  the group-1 sum alone, as if the group sizes were free (sensitivity 1, the least any count release
  of a sum pays), whose median SP error is ln 2 (1/N0 + 1/N1)/epsilon.
* 100 models (the base model's scores at 100 thresholds) at (epsilon, delta) = (1, 1e-6): the
  ``dp-counts`` Gaussian variant (discrete Gaussian, zCDP calibrated by dp-accounting) against the
  Gaussian mechanism at the same joint l2 sensitivity sqrt(m + 1): continuous Gaussian noise of the
  analytic Gaussian's sigma (Balle & Wang 2018, dp-accounting ``get_sigma_gaussian``) on every count,
  the same post-processing; and the pure-DP ``dp-counts`` at epsilon = 1.

Protocols are called directly (no actors): this measures the mechanisms.
Run: ``python tests/benchmarks/bench_count_dp.py [releases]``. The last line is one JSON object.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import numpy as np

from parley.protocols import get_protocol
from parley.protocols.base import AuditSet, MetricQuery
from parley.protocols.mechanisms.count_dp import metrics_from_statistics, slices_of, statistics
from parley.protocols.metrics import evaluate
from parley.scenarios.catalog import scenario_path
from parley.scenarios.compare.utility import honest_audit, release_errors
from parley.scenarios.spec import Scenario

RELEASES = 400
EPSILONS = (0.1, 0.5, 1.0, 4.0)
METRICS = ("sp", "eo", "pe")
MANY = 100
DELTA = 1e-6


def honest_world() -> tuple[np.ndarray, AuditSet, float]:
    """The base model's scores on the audit set, the audit set and the threshold, as ``adult-observer-honest``
    builds them (:func:`parley.scenarios.compare.utility.honest_audit`: the run's streams, the real data center)."""
    scenario = Scenario.from_toml(scenario_path("adult-observer-honest"))
    honest = honest_audit(scenario)
    return honest.scores, honest.audit, scenario.model.threshold


def _protocol(name: str, **params: Any):
    cls = get_protocol(name)
    return cls(cls.Params(**params))


def median_error(protocol, query: MetricQuery, audit: AuditSet, releases: int, seed: int) -> float:
    return float(np.median(release_errors(protocol, query, audit, releases, seed)))


def continuous_counts(metric: str, H: np.ndarray, audit: AuditSet, draw, releases: int, seed: int) -> float:
    """Median error of continuous noise ``draw(rng, shape)`` on the same counts, post-processed like dp-counts."""
    masks = slices_of(metric, audit.y)
    K, N, T, sizes = statistics(H, audit.a, masks)
    unit = float(1 << 20)
    k, t = np.array(K, float) / unit, np.array(T, float) / unit
    exact = evaluate(metric, H, audit.a, audit.y)
    errors = []
    for r in range(releases):
        rng = np.random.default_rng([seed, r])
        noisy_k = k + draw(rng, "sum", k.shape)
        noisy_n = np.array(N, float) + draw(rng, "size", (len(N),))
        errors.append(np.abs(metrics_from_statistics(metric, noisy_k, noisy_n, t, sizes) - exact))
    return float(np.median(np.concatenate(errors)))


def one_model(H: np.ndarray, audit: AuditSet, releases: int) -> list[dict[str, Any]]:
    rows = []
    for epsilon in EPSILONS:
        for metric in METRICS:
            query = MetricQuery(metric=metric, predictions=H, query_id="bench")
            masks = slices_of(metric, audit.y)
            n1 = int((masks[0] & (audit.a == 1)).sum())
            n0 = int(masks[0].sum()) - n1
            row: dict[str, Any] = {"epsilon": epsilon, "metric": metric, "N0": n0, "N1": n1}
            row["dp_counts"] = median_error(_protocol("dp-counts", epsilon=epsilon), query, audit, releases, 1)
            row["laplace"] = median_error(_protocol("laplace", epsilon=epsilon), query, audit, releases, 2)
            row["smooth_cauchy"] = (median_error(_protocol("smooth-cauchy", epsilon=epsilon), query, audit,
                                                 releases, 3) if metric == "sp" else None)
            row["count_optimum"] = math.log(2) * (1 / n0 + 1 / n1) / epsilon  # Laplace(1/eps) on the sum alone
            row["dp_counts_over_optimum"] = row["dp_counts"] / row["count_optimum"]
            row["laplace_over_dp_counts"] = row["laplace"] / row["dp_counts"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def many_models(scores: np.ndarray, audit: AuditSet, releases: int) -> list[dict[str, Any]]:
    from dp_accounting import get_sigma_gaussian

    thresholds = np.quantile(scores, np.linspace(0.5, 0.99, MANY))
    H = (scores[None, :] >= thresholds[:, None]).astype(np.float64)
    sigma = get_sigma_gaussian(1.0, DELTA) * math.sqrt(MANY + 1)  # analytic Gaussian at l2 sensitivity sqrt(m+1)
    rows = []
    for metric in METRICS:
        query = MetricQuery(metric=metric, predictions=H, query_id="bench-many")
        row: dict[str, Any] = {"m": MANY, "epsilon": 1.0, "delta": DELTA, "metric": metric}
        row["dp_counts_gaussian"] = median_error(_protocol("dp-counts", epsilon=1.0, noise="gaussian", delta=DELTA),
                                                 query, audit, releases, 4)
        row["gaussian_mechanism"] = continuous_counts(metric, H, audit,
                                                      lambda rng, _key, shape: rng.normal(0.0, sigma, shape),
                                                      releases, 5)
        row["dp_counts_laplace"] = median_error(_protocol("dp-counts", epsilon=1.0), query, audit, releases, 6)
        row["laplace"] = median_error(_protocol("laplace", epsilon=1.0), query, audit, releases, 7)
        row["gaussian_ratio"] = row["dp_counts_gaussian"] / row["gaussian_mechanism"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    releases = int(sys.argv[1]) if len(sys.argv) > 1 else RELEASES
    scores, audit, threshold = honest_world()
    H = (scores >= threshold).astype(np.float64)[None, :]
    result = {"releases": releases, "one_model": one_model(H, audit, releases),
              "many_models": many_models(scores, audit, max(releases // 4, 25))}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
