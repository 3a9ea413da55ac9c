"""Synthetic data with an exact minority count and a tunable link between features and A.

The attacks' guarantees depend on N0, the number of ``a = 0`` rows in the audit set, and
on how much the features reveal about ``a``. This generator fixes N0 exactly and exposes
the feature-attribute link as one number, ``strength``:

- ``a``: exactly ``minority`` zeros in the audit part, ``round(train_size * minority /
  audit_size)`` zeros in the training part (Python's ``round``), positions shuffled;
- ``X = Z + strength * (a - 0.5)`` on every column, ``Z ~ N(0, 1)``, so the group means
  differ by ``strength`` standard deviations per feature (0 = independent of ``a``);
- ``y ~ Bernoulli(sigmoid(X @ w))`` with ``w ~ N(0, 4 / n_features)`` drawn once per data
  set, so the logit has unit-order spread whatever ``n_features`` is.

Everything comes from the caller's generator, drawn in a fixed order (weights, audit part,
training part), so the same seed gives identical arrays.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from parley.scenarios.datasets._params import SyntheticParams
from parley.scenarios.datasets._table import Table

__all__ = ["generate", "train_minority"]


def train_minority(params: SyntheticParams) -> int:
    """Number of ``a = 0`` rows in the training part: the audit share, rounded."""
    return round(params.train_size * params.minority / params.audit_size)


def _part(
    n: int, n0: int, w: np.ndarray, strength: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.ones(n, dtype=np.int8)
    a[:n0] = 0
    a = rng.permutation(a)
    X = rng.standard_normal((n, w.size)) + strength * (a[:, None] - 0.5)
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    y = (rng.random(n) < p).astype(np.int8)
    return X, y, a


def generate(params: SyntheticParams, rng: np.random.Generator) -> Table:
    """Generate the audit part followed by the training part as one :class:`Table`.

    Rows ``[0, audit_size)`` are the audit part (exactly ``minority`` rows with ``a = 0``)
    and the remaining ``train_size`` rows the training part; :func:`load_split` keeps
    that layout instead of redrawing, so N0 stays exact.
    """
    w = rng.normal(0.0, 2.0 / np.sqrt(params.n_features), size=params.n_features)
    audit = _part(params.audit_size, params.minority, w, params.strength, rng)
    train = _part(params.train_size, train_minority(params), w, params.strength, rng)
    X, y, a = (np.concatenate(pair) for pair in zip(audit, train, strict=True))
    for arr in (y, a):
        arr.setflags(write=False)
    columns = [f"x{j}" for j in range(params.n_features)]
    return Table(
        name="synthetic",
        features=pd.DataFrame(X, columns=columns),
        y=y,
        a=a,
        protected="a",
        groups=("minority", "majority"),
        label="y = 1 under the logistic model",
    )
