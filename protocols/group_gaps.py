"""Group gaps: the unfairness a fairness certificate states and reconstruction correction uses.

Ferry et al. (SaTML 2023), Table I and constraints (4)-(5): on a slice of the
data (all rows for statistical parity, ``y = 0`` for predictive equality,
``y = 1`` for equal opportunity, both for equalized odds), the gap of a group is
``|P(yhat = 1 | A = g, slice) - P(yhat = 1 | slice)|``: its positive-prediction
rate against the slice's overall rate. The unfairness is the largest gap over
groups and slices. This is the quantity fairlearn's ``DemographicParity``,
``FalsePositiveRateParity``, ``TruePositiveRateParity`` and ``EqualizedOdds``
bound by ``difference_bound``, and it is linear in the group counts once the
slice's overall rate is fixed, which the correction models rely on.
(``parley.protocols.metrics`` holds the between-group differences of the query-leakage
paper instead; for two groups the between-group gap is at most twice this one.)
"""

from __future__ import annotations

import numpy as np

from parley.protocols.errors import QueryError

__all__ = ["GAP_METRICS", "BAD_GAP_METRIC", "NEEDS_LABELS", "metric_slices", "slice_gap", "unfairness"]

#: Metric -> the label values of its slices (None: every row).
GAP_METRICS: dict[str, tuple[int | None, ...]] = {"sp": (None,), "pe": (0,), "eo": (1,), "eodds": (0, 1)}

BAD_GAP_METRIC = "metric must be one of {known}; got {metric!r}"
NEEDS_LABELS = "metric {metric!r} works on label slices: labels y are needed"


def metric_slices(metric: str, y: np.ndarray | None, n: int) -> list[np.ndarray]:
    """Boolean row masks of the slices ``metric`` constrains (Sec. III-D of the paper)."""
    if metric not in GAP_METRICS:
        raise QueryError(BAD_GAP_METRIC.format(known=", ".join(GAP_METRICS), metric=metric))
    labels = GAP_METRICS[metric]
    if labels != (None,) and y is None:
        raise QueryError(NEEDS_LABELS.format(metric=metric))
    return [np.ones(n, dtype=bool) if label is None else np.asarray(y) == label for label in labels]


def slice_gap(yhat: np.ndarray, a: np.ndarray, groups: int = 2) -> float:
    """``max_g |P_g / N_g - P / N|`` on one slice; groups absent from the slice are skipped."""
    yhat = np.asarray(yhat, dtype=np.float64)
    if yhat.size == 0:
        return 0.0
    overall = yhat.mean()
    rates = [yhat[a == g].mean() for g in range(groups) if np.any(a == g)]
    return float(max(abs(rate - overall) for rate in rates)) if rates else 0.0


def unfairness(metric: str, yhat: np.ndarray, a: np.ndarray, y: np.ndarray | None = None, groups: int = 2) -> float:
    """The largest group gap of ``yhat`` (binary, or scores thresholded at 0.5) over ``metric``'s slices."""
    yhat = (np.asarray(yhat, dtype=np.float64) >= 0.5).astype(np.int64)
    a = np.asarray(a)
    return max(slice_gap(yhat[m], a[m], groups) for m in metric_slices(metric, y, yhat.size))
