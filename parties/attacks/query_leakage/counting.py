"""A counting lower bound on the answers any reveal needs.

An answer released at a fixed precision takes one of finitely many values.
For probes within b of the base model, |SP(h) - SP(h0)| <= b * sum_j |v_j| = 2b
(v_j = 1/N1 or -1/N0), so an answer falls in an interval of width 4b: it can
take at most 4b / u + 1 values at resolution u. To single out A among the
C(n, N0) candidates, any attack needs at least log2 C(n, N0) / log2(4b/u + 1)
answers (query-leakage paper's setting; parley's bound, reported beside every
measured queries-to-exact-recovery).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["log2_binomial", "bits_per_answer", "counting_bound"]


def log2_binomial(n: int, k: int) -> float:
    """log2 C(n, k) without overflow."""
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(2)


def bits_per_answer(b: float, decimals: int | None, scale: float = 1.0) -> float:
    """Most bits one answer can carry: log2 of the released values within 4b.

    ``decimals`` None means float64: the resolution is one ulp of ``scale``
    (the magnitude of the answers, at most 1).
    """
    resolution = 10.0 ** (-decimals) if decimals is not None else float(np.spacing(max(scale, 1e-300)))
    return math.log2(4.0 * b / resolution + 1.0)


def counting_bound(n: int, n0: int, b: float, decimals: int | None, scale: float = 1.0) -> int:
    """Fewest answers that could identify A: ceil(log2 C(n, N0) / bits per answer)."""
    return math.ceil(log2_binomial(n, n0) / bits_per_answer(b, decimals, scale))
