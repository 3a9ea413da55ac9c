"""Validation of fairness queries: what a compliance party accepts before it computes.

A query asks for one metric of m models on the n individuals of the audit set.
Everything that could make an answer meaningless or a computation unsafe is
refused here with a message naming the problem: wrong shape or size, NaN or
infinite scores, scores outside [0, 1], no models, too many values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from parley.protocols.errors import QueryError
from parley.protocols.metrics import METRICS

__all__ = ["MAX_QUERY_VALUES", "Edits", "apply_edits", "edit_form", "validate_edits", "validate_predictions",
           "validate_metric", "validate_query_id"]

#: Upper bound on m * n per query (128 MiB of float64), against memory exhaustion: a query at the limit
#: costs the compliance party about twice that (the matrix and the metric's temporaries).
MAX_QUERY_VALUES = 1 << 24

NOT_ARRAY = "predictions must be a numeric numpy array, got {type}"
BAD_DTYPE = "predictions must be numeric (bool, int or float), got dtype {dtype}"
BAD_NDIM = "predictions must have shape (m, n) or (n,), got shape {shape}"
NO_MODELS = "predictions must hold at least one model (m >= 1), got shape {shape}"
N_MISMATCH = "predictions have n={got} columns but the audit set has n={n} individuals"
TOO_LARGE = "predictions hold {size} values, above the limit of {limit} per query"
NOT_FINITE = "predictions contain {count} NaN or infinite values (first at model {row}, individual {col})"
OUT_OF_RANGE = "predictions must lie in [0, 1]; model {row}, individual {col} has {value!r}"
BAD_METRIC = "metric must be one of {known}, got {metric!r}"
BAD_QUERY_ID = "query_id must be a non-empty string of at most 128 characters, got {value!r}"
MISSING_FIELD = "query payload lacks {field!r} (a metric query carries: {fields})"
EDIT_SHAPES = "edit indices and values must be arrays of the same shape (k,) or (m, k), got {i} and {v}"
EDIT_INDEX = "edit indices must be integers in 0..{last} without repeats within a model; model {row} has {bad!r}"
EDIT_VALUE = "edit values must be finite and lie in [0, 1]; model {row} sets individual {col} to {value!r}"


def validate_metric(metric: Any) -> str:
    """Return ``metric`` if it names a known metric, else raise :class:`QueryError`."""
    if not isinstance(metric, str) or metric not in METRICS:
        raise QueryError(BAD_METRIC.format(known=", ".join(METRICS), metric=metric))
    return metric


def validate_query_id(value: Any) -> str:
    """``value`` if it is a query id (a string of 1 to 128 characters), else a :class:`QueryError`."""
    if not isinstance(value, str) or not 0 < len(value) <= 128:
        raise QueryError(BAD_QUERY_ID.format(value=value))
    return value


def validate_predictions(predictions: Any, n: int) -> np.ndarray:
    """Check a prediction matrix and return it as a read-only float64 array of shape (m, n)."""
    if not isinstance(predictions, np.ndarray):
        raise QueryError(NOT_ARRAY.format(type=type(predictions).__name__))
    if predictions.dtype.kind not in "biuf":
        raise QueryError(BAD_DTYPE.format(dtype=predictions.dtype))
    if predictions.ndim == 1:
        predictions = predictions[None, :]
    if predictions.ndim != 2:
        raise QueryError(BAD_NDIM.format(shape=predictions.shape))
    m, cols = predictions.shape
    if m == 0:
        raise QueryError(NO_MODELS.format(shape=predictions.shape))
    if cols != n:
        raise QueryError(N_MISMATCH.format(got=cols, n=n))
    if predictions.size > MAX_QUERY_VALUES:
        raise QueryError(TOO_LARGE.format(size=predictions.size, limit=MAX_QUERY_VALUES))
    H = np.asarray(predictions, dtype=np.float64)
    # One pass for the common case; locate the culprit only when something is wrong.
    lo, hi = H.min(), H.max()
    if not (np.isfinite(lo) and np.isfinite(hi)):
        bad = ~np.isfinite(H)
        row, col = map(int, np.argwhere(bad)[0])
        raise QueryError(NOT_FINITE.format(count=int(bad.sum()), row=row, col=col))
    if lo < 0.0 or hi > 1.0:
        row, col = map(int, np.argwhere((H < 0.0) | (H > 1.0))[0])
        raise QueryError(OUT_OF_RANGE.format(row=row, col=col, value=float(H[row, col])))
    if H is predictions:
        H = H.view()
    H.flags.writeable = False
    return H


def require_fields(payload: Mapping[str, Any], fields: tuple[str, ...]) -> None:
    for name in fields:
        if name not in payload:
            raise QueryError(MISSING_FIELD.format(field=name, fields=", ".join(fields)))


def validate_edits(indices: Any, values: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Check edit arrays (models given as changes of a kept model); return them as (m, k)."""
    if not isinstance(indices, np.ndarray) or not isinstance(values, np.ndarray) or indices.shape != values.shape \
            or indices.ndim not in (1, 2) or indices.dtype.kind not in "iu":
        raise QueryError(EDIT_SHAPES.format(i=getattr(indices, "shape", type(indices).__name__),
                                            v=getattr(values, "shape", type(values).__name__)))
    idx = indices.reshape(1, -1) if indices.ndim == 1 else indices
    if idx.shape[0] * n > MAX_QUERY_VALUES:  # apply_edits would build an (m, n) matrix: bound it first
        raise QueryError(TOO_LARGE.format(size=idx.shape[0] * n, limit=MAX_QUERY_VALUES))
    for row, part in enumerate(idx):
        if part.size and (part.min() < 0 or part.max() >= n or np.unique(part).size != part.size):
            raise QueryError(EDIT_INDEX.format(last=n - 1, row=row, bad=part.tolist()[:10]))
    if values.dtype.kind not in "biuf":
        raise QueryError(BAD_DTYPE.format(dtype=values.dtype))
    vals = values.reshape(idx.shape).astype(np.float64)
    bad = ~np.isfinite(vals) | (vals < 0.0) | (vals > 1.0)
    if bad.any():
        row, pos = map(int, np.argwhere(bad)[0])
        raise QueryError(EDIT_VALUE.format(row=row, col=int(idx[row, pos]), value=float(vals[row, pos])))
    return idx.astype(np.int64), vals


def apply_edits(base: np.ndarray, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Models (m, n): ``base`` with ``values[i]`` written at ``indices[i]`` for each model i."""
    H = np.repeat(np.asarray(base, dtype=np.float64).reshape(1, -1), indices.shape[0], axis=0)
    rows = np.repeat(np.arange(indices.shape[0]), indices.shape[1])
    H[rows, indices.reshape(-1)] = values.reshape(-1)
    return H


@dataclass(frozen=True)
class Edits:
    """m models given as changes of one base model: row i is ``base`` with ``values[i]`` at ``indices[i]``.

    The compact form of edit-form queries: a probe that moves 30 scores of a 1,000,000-wide model
    is 30 entries here, and stays so through the attack, the wire and the compliance party's
    answer (:meth:`parley.protocols.metrics.AuditEvaluator.edited`); :meth:`expand` builds the
    (m, n) models where a consumer needs them.
    """

    base: np.ndarray  # (n,) float64
    indices: np.ndarray  # (m, k) int64, distinct within a row
    values: np.ndarray  # (m, k) float64

    @property
    def m(self) -> int:
        return int(self.indices.shape[0])

    def expand(self) -> np.ndarray:
        """The (m, n) models."""
        return apply_edits(self.base, self.indices, self.values)


def edit_form(H: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``H`` as edits of ``base`` when every row changes the same number of entries (else None)."""
    changed = base[None, :] != H
    counts = changed.sum(axis=1)
    if counts.size == 0 or (counts != counts[0]).any():
        return None
    rows, cols = np.nonzero(changed)
    indices = cols.reshape(H.shape[0], counts[0])
    return indices, H[rows, cols].reshape(indices.shape)
