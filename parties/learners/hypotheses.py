"""Random hypotheses of Alg. 1 step 1 (distributed-fair-learning paper), as pure functions.

Two families:

- ``linear``: ``h_t(x) = w_t^T x`` with ``w_t ~ N(0, sigma^2 I_p)`` (Alg. 1 step 1;
  the hypotheses of DFRR (Sec. IV-A), DFGR (IV-C) and DFPCA (IV-D)). The
  parameters are the columns of a (p, m) matrix; predictions on X are ``X W``.
- ``kernel``: ``h_t = sum_i c_ti phi(x_i)`` (Eq. 6, DFKRR, Sec. IV-B) with an RBF
  kernel; predictions on the training set are ``K c_t`` with ``c_ti ~ N(0, sigma^2)``
  as Alg. 1 step 1 prints it. The parameters are the columns of an (n, m) matrix.
  Their predictions span all of R^n (an RBF Gram matrix has full rank), the
  linear family's only a p-dimensional subspace: this is what decides how much
  the accept set can reveal (docs/attacks/threshold-inversion.md).

Hypotheses are drawn from a seed, not a stream, so the data center can draw
them, send their predictions and later rebuild the accepted ones without
keeping state between calls.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = ["Family", "draw", "predictions", "rbf_kernel"]

Family = Literal["linear", "kernel"]


def rbf_kernel(A: np.ndarray, B: np.ndarray, gamma: float) -> np.ndarray:
    """exp(-gamma ||a - b||^2) for every row pair; (len(A), len(B)) float64."""
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    kernel: np.ndarray = np.exp(-gamma * np.maximum(sq, 0.0))
    return kernel


def draw(family: Family, X_train: np.ndarray, m: int, sigma: float, seed: int) -> np.ndarray:
    """Parameters of m random hypotheses: (p, m) weights, or (n, m) kernel coefficients."""
    rng = np.random.default_rng(seed)
    n, p = X_train.shape
    if family == "linear":
        return rng.normal(0.0, sigma, size=(p, m))
    return rng.normal(0.0, sigma, size=(n, m))


def predictions(family: Family, X_train: np.ndarray, params: np.ndarray, gamma: float | None = None) -> np.ndarray:
    """The (m, n) predicted values the data center sends (Alg. 1 steps 2-3)."""
    if family == "linear":
        return np.ascontiguousarray((X_train @ params).T)
    gamma = 1.0 / X_train.shape[1] if gamma is None else gamma
    return np.ascontiguousarray((rbf_kernel(X_train, X_train, gamma) @ params).T)
