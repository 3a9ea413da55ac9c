"""How far a released statistical-parity answer can be from the exact one: the error model of every decoder.

An attack may only *certify* (or *decide* an individual) when every value
consistent with the answers under this error model leads to the same
conclusion, so the model must bound the error from above. It has two parts.

The exact answer's own float64 error
------------------------------------
The compliance party releases SP *correctly rounded* (:mod:`parley.protocols.metrics`,
"Correctly rounded answers"): the exact group sums S1, S0 of the float64 scores are
integers in units of 2^-1074, SP = (S1 N0 - S0 N1) / (N0 N1) is one exact rational,
and it is rounded once to the nearest float64. So, with u = 2^-53 and |SP| <= 1 for
H in [0, 1],

    |fl(SP) - SP| <= u |SP| <= u = ulp(1) / 2,                                   (E)

whatever n, and whether the answer was computed from the whole model or updated
from a kept model's sums by the entries an edit-form query changes (both round the
same rational once, so they are the same bits). parley's *allowance* of
``safety_ulps / 2`` ulps of 1 per answer (``safety_ulps`` ulps for a difference of
two answers; default 16, as the precision and paired designs always used) is
therefore a proven bound for every ``safety_ulps >= 1``, with a factor 16 to spare
at the default. (With a float dot product in some summation order, as the answers
were computed before, only Higham's gamma_n sum_j |H_ij w_j| + 2u <= 2 (n + 1) u
would hold, growing with n; against a compliance party that computes so, the
allowance is a heuristic again and ``safety_ulps = n + 1`` the proven worst case.)
The general decoders use ``1e-9 * max(1, |SP|)``
(:func:`parley.parties.attacks.decoders.sp_decoders.default_tol`), above both.

Rounding to d decimals (``numpy.round``)
----------------------------------------
``numpy.round(x, d)`` computes, with s = 10^d (exact in float64 for d <= 22)
and u = 2^-53 the unit roundoff,

    y = fl(x s) = x s (1 + e1),    r = rint(y),    out = fl(r / s) = (r / s)(1 + e2),    |e1|, |e2| <= u,

with |r - y| <= 1/2 (and r = y once |y| >= 2^52, where every float is an
integer). Hence

    out - x = (r - y)/s + (y - x s)/s + (r/s) e2 = (r - y)/s + x e1 + (r/s) e2,
    |out - x| <= 10^-d / 2 + u |x| + u |out| / (1 - u),

and with |x| <= |out| + |out - x|:

    |out - x| <= (10^-d / 2 + u |out| (2 - u)/(1 - u)) / (1 - u).            (R)

So a rounded answer is off by up to half a unit of the last decimal plus about
2u|out| from the two float operations. At d <= 15 the second term is below
1e-16 * half a unit for |out| <= 1 and hardly matters; at d = 16 and 17 it is
*larger* than half a unit (2u * 0.1 = 2.2e-17 > 0.5e-17): the rounding is not
even exact in float64, and an error model of 10^-d for a difference of two
answers is simply wrong there. Bound (R) plus the exact answer's own error
above is :func:`answer_error`; the float evaluation of the bound itself is
covered by a relative factor 1 + 8u.
"""

from __future__ import annotations

import numpy as np

__all__ = ["UNIT_ROUNDOFF", "answer_error", "difference_error", "rounding_error"]

#: u = 2^-53, the unit roundoff of float64 (half an ulp of 1).
UNIT_ROUNDOFF = float(np.finfo(np.float64).eps) / 2.0
#: Default float64 allowance of a difference of two answers, in ulps of 1 (per answer: half of it).
SAFETY_ULPS = 16.0


def rounding_error(released: np.ndarray | float, decimals: int) -> np.ndarray:
    """Bound (R) of the module docstring: |numpy.round(x, decimals) - x| given the released value."""
    u = UNIT_ROUNDOFF
    out = np.abs(np.asarray(released, dtype=np.float64))
    half_unit = 0.5 * 10.0 ** (-int(decimals))
    return (half_unit + u * out * (2.0 - u) / (1.0 - u)) / (1.0 - u) * (1.0 + 8.0 * u)


def answer_error(released: np.ndarray | float, decimals: int | None, safety_ulps: float = SAFETY_ULPS
                 ) -> np.ndarray:
    """Bound on |released - exact SP| per answer: the float64 allowance, plus (R) when rounded.

    Parameters
    ----------
    released : array or float
        The released answers (their magnitude enters the rounding error).
    decimals : int or None
        Decimals the answers were rounded to (None: full float64).
    safety_ulps : float
        Float64 allowance of a *difference* of two answers in ulps of 1; each
        answer gets half of it.
    """
    out = np.asarray(released, dtype=np.float64)
    exact = np.full(out.shape, 0.5 * safety_ulps * float(np.finfo(np.float64).eps))
    if decimals is None:
        return exact
    bound: np.ndarray = exact + rounding_error(out, decimals)
    return bound


def difference_error(first: float, second: float, decimals: int | None, safety_ulps: float = SAFETY_ULPS) -> float:
    """Bound on the error of ``second - first`` (two released answers) and of its float subtraction."""
    e = float(answer_error(first, decimals, safety_ulps) + answer_error(second, decimals, safety_ulps))
    return e + UNIT_ROUNDOFF * abs(second - first)
