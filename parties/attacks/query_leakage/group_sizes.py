"""Group sizes N0, N1 from answers (query-leakage paper, Example 1 and Remark 4).

A statistical-parity answer that moves by one individual's acceptance moves by
exactly +1/N1 (the individual is advantaged) or -1/N0 (disadvantaged). So the
answers themselves reveal the group sizes; the attacker never reads them from
the compliance party's data. With rounded answers several sizes may round to
the same value: :func:`sizes_from_unit_steps` then returns every size that
stays consistent, and says the sizes are not identified when more than one does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parley.parties.attacks.decoders.answer_error import answer_error

__all__ = ["GroupSizes", "decimals_to_identify", "sizes_from_unit_steps"]


@dataclass(frozen=True)
class GroupSizes:
    """Sizes consistent with the observed unit steps (``N1`` = n - ``N0``)."""

    n: int
    candidates_n1: tuple[int, ...]

    @property
    def identified(self) -> bool:
        return len(self.candidates_n1) == 1

    @property
    def N1(self) -> int | None:
        return self.candidates_n1[0] if self.identified else None

    @property
    def N0(self) -> int | None:
        return self.n - self.candidates_n1[0] if self.identified else None


def _consistent(step: float, sizes: np.ndarray, decimals: int | None) -> np.ndarray:
    """Which ``sizes`` N give a released step of ``step`` = 1/N."""
    exact = 1.0 / sizes
    if decimals is None:
        # float64 differences of two answers carry ~1e-16 absolute error
        return np.abs(exact - step) <= 1e-9 * exact + 1e-15
    # a difference of two rounded answers is within one rounding unit of 1/N, plus the float64 error of the
    # rounding itself and of the exact answers (bound (R) of parley.parties.attacks.decoders.answer_error)
    return np.abs(exact - step) <= 2.0 * float(answer_error(1.0, decimals)) + 1e-15


def decimals_to_identify(n: int) -> int | None:
    """The coarsest precision at which unit steps tell every group size 1..n-1 apart (None: beyond 17 decimals).

    Neighbouring sizes differ by 1/N - 1/(N + 1) = 1/(N (N + 1)) >= 1/(n (n - 1)); a step is
    identified once that gap exceeds twice the error of a difference of two answers.
    """
    gap = 1.0 / (n * (n - 1))
    for d in range(1, 18):
        if 4.0 * float(answer_error(1.0, d)) + 2e-15 < gap:
            return d
    return None


def sizes_from_unit_steps(steps: np.ndarray, n: int, decimals: int | None = None) -> GroupSizes:
    """Group sizes consistent with signed unit steps (+1/N1 or -1/N0 each).

    Parameters
    ----------
    steps : array of shape (k,)
        Changes of the SP answer when one individual's acceptance rises by one.
    n : int
        Audit-set size (known to the data center: it holds X of the audit set).
    decimals : int or None
        Precision of the released answers (None = exact float64).
    """
    n1 = np.arange(1, n, dtype=np.int64)
    keep = np.ones(n1.shape, dtype=bool)
    for step in np.asarray(steps, dtype=np.float64):
        if step > 0:
            keep &= _consistent(step, n1.astype(np.float64), decimals)
        elif step < 0:
            keep &= _consistent(-step, (n - n1).astype(np.float64), decimals)
    return GroupSizes(n=n, candidates_n1=tuple(int(v) for v in n1[keep]))
