"""Scoring a reconstruction against the truth (done by the runner, never by a party).

Leakage is Definition 5.1 of the query-leakage paper: the balanced accuracy of
the reconstructed attribute, 100 * (N_A/N_1 + N_B/N_0) / 2, over the attacked
individuals. Two choices the paper leaves open:

* an individual the attack could not decide (no evidence, e.g. an answer
  rounded to zero) counts as half correct, the expected score of a fair coin,
  so a guess without evidence never raises leakage above chance;
* a group absent from the attacked individuals is left out of the average
  (its recall is undefined).

A partition-only reconstruction (|SP|, Thm. 4) is scored with the better of the
two labelings, as the paper scores it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["leakage"]


def _balanced_accuracy(a_true: np.ndarray, a_hat: np.ndarray, decided: np.ndarray) -> float:
    credit = np.where(decided, (a_hat == a_true).astype(float), 0.5)
    recalls = [float(credit[a_true == g].mean()) for g in np.unique(a_true)]   # k >= 2 groups
    return 100.0 * float(np.mean(recalls))


def leakage(a_true: np.ndarray, a_hat: np.ndarray, partition_only: bool = False,
            decided: np.ndarray | None = None) -> float:
    """Balanced accuracy (%) of ``a_hat`` against ``a_true``; NaN if nothing was attacked.

    Parameters
    ----------
    a_true, a_hat : arrays of group codes (0/1, or 0..k-1 for a k-ary attribute)
        Truth and reconstruction for the attacked individuals; the balanced accuracy
        averages the recall of every group present in ``a_true``.
    partition_only : bool
        Score the better of ``a_hat`` and ``1 - a_hat``.
    decided : array of bool, optional
        False where the attack had no evidence; those count as half correct.
    """
    a_true = np.asarray(a_true)
    a_hat = np.asarray(a_hat)
    if a_true.size == 0:
        return float("nan")
    decided = np.ones(a_true.shape, bool) if decided is None else np.asarray(decided, bool)
    score = _balanced_accuracy(a_true, a_hat, decided)
    if partition_only:
        score = max(score, _balanced_accuracy(a_true, 1 - a_hat, decided))
    return score
