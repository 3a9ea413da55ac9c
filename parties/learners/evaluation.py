"""Classification performance and fairness of a learned model (Sec. VI-B of the distributed-fair-learning paper).

Five metrics of Table II, for 0/1 decisions ``y_hat``, labels ``y`` and the
protected attribute ``s`` (1 = advantaged, parley's convention):

- statistical parity (Eq. 14): ``|P(y_hat=1 | s=1) - P(y_hat=1 | s=0)|``;
- normed disparate: the paper cites McNamara et al. and prints no formula; we
  use the normalised disparate impact ``1 - min(r0/r1, r1/r0)`` with
  ``r_g = P(y_hat=1 | s=g)`` (0 = equal rates; 0.2 = the four-fifths rule);
- classifier error (``error``): ``P(y_hat != y)``;
- error parity (Eq. 25): ``|er(f | s=1) - er(f | s=0)|``;
- error disparate (Eq. 26): ``|er(f | s=1) / er(f | s=0) - 1|``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["classification_metrics"]


def classification_metrics(y_hat: np.ndarray, y: np.ndarray, s: np.ndarray) -> dict[str, float]:
    """The five Table II metrics of ``y_hat``, plus the two groups' positive rates and errors."""
    y_hat = np.asarray(y_hat).astype(np.int8)
    y = np.asarray(y).astype(np.int8)
    s = np.asarray(s).astype(bool)
    r1, r0 = float(y_hat[s].mean()), float(y_hat[~s].mean())
    wrong = y_hat != y
    e1, e0 = float(wrong[s].mean()), float(wrong[~s].mean())
    hi = max(r0, r1)
    return {
        "statistical_parity": abs(r1 - r0),
        "normed_disparate": 0.0 if hi == 0.0 else 1.0 - min(r0, r1) / hi,
        "error": float(wrong.mean()),
        "error_parity": abs(e1 - e0),
        "error_disparate": abs(e1 / e0 - 1.0) if e0 > 0 else float("nan"),
        "positive_rate_a1": r1, "positive_rate_a0": r0,
    }
