"""Scoring a reconstruction against the truth (done by the runner, never by a party).

Leakage is Definition 5.1 of the query-leakage paper: the balanced accuracy of
the reconstructed attribute, 100 * (N_A/N_1 + N_B/N_0) / 2, over the attacked
individuals. A group absent from the attacked individuals is left out of the
average (its recall is undefined). A partition-only reconstruction (|SP|,
Thm. 4) is scored with the better of the two labelings, as the paper scores it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["leakage"]


def _balanced_accuracy(a_true: np.ndarray, a_hat: np.ndarray) -> float:
    recalls = [float((a_hat[a_true == g] == g).mean()) for g in (0, 1) if (a_true == g).any()]
    return 100.0 * float(np.mean(recalls))


def leakage(a_true: np.ndarray, a_hat: np.ndarray, partition_only: bool = False) -> float:
    """Balanced accuracy (%) of ``a_hat`` against ``a_true``; NaN if nothing was attacked."""
    a_true = np.asarray(a_true)
    a_hat = np.asarray(a_hat)
    if a_true.size == 0:
        return float("nan")
    score = _balanced_accuracy(a_true, a_hat)
    if partition_only:
        score = max(score, _balanced_accuracy(a_true, 1 - a_hat))
    return score
