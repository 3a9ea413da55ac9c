"""Group-fairness metrics for m models at once, as the compliance party computes them.

Every metric takes the outputs of m models on the n audit individuals as one
float array ``H`` of shape ``(m, n)`` (row ``i`` is model ``h_i``; entries are
binary decisions in {0, 1} or acceptance scores in [0, 1]) and returns a float64
array of shape ``(m,)``. A 1-D ``H`` of shape ``(n,)`` is one model; the result
is then a 0-d ``numpy.float64`` scalar instead of an array.

``a`` holds the protected attribute (1 = advantaged, 0 = disadvantaged) and
``y`` the true labels, both 0/1 arrays of length n.

Sign convention
---------------
Every signed metric is **advantaged minus disadvantaged** (a=1 minus a=0), as
in Def. 2.1 of Hamman, Chen & Dutta, "Can Querying for Bias Leak Protected
Attributes?" (FAccT 2023). A model that accepts only one advantaged individual
has SP = 1/N1, one that accepts only one disadvantaged individual has
SP = -1/N0 (their Example 1).

Definitions (query-leakage paper, Sec. 2.1.1 and Remark 5)
----------------------------------------------------------
- SP  (Def. 2.1, Eq. 1): mean of h over a=1 minus mean over a=0.
- EO  (Def. 2.2, Eq. 2): SP restricted to y=1 (TPR gap for binary h).
- PE  : SP restricted to y=0 (FPR gap; "predictive equality").
- EOdds : max(|EO|, |PE|), fairlearn's ``equalized_odds_difference``
  (``agg="worst_case"``).
- PRP : P(y=1 | h, a=1) - P(y=1 | h, a=0) with soft h as weights,
  sum_j h_j y_j / sum_j h_j within a group (precision gap for binary h); a
  group the model accepts nobody in has rate 0 (scikit-learn's and fairlearn's
  ``zero_division=0`` for precision). Refusing such a model instead would make
  the refusal a free oracle on A: a model accepting only person j is refused
  exactly when j's group is the other one.
  Remark 5 lists EOdds and predictive rate parity as extensions but prints no
  formula; the definitions above are ours, chosen to agree with fairlearn.
- cov : cov(h(x), a), the fairness measure of Hu, Liu, Wang & Lan, "Distributed
  Fair Learning with Private Demographic Data" (ICDM 2019): Alg. 1 step 4,
  rho-fairness in Sec. V-A, Lemma 5 Eq. (18).

Covariance normalisation
------------------------
The distributed-fair-learning paper defines cov(h(x), s) over the distribution
of (x, s) ("the covariance is defined over the randomness of (x, s)", under
Eq. (18)) and says only that the third party "estimates" it from the predicted
labels and {s_i} (Alg. 1, step 4); no finite-sample estimator is printed. We
use the population covariance of the audit sample, i.e. the covariance of the
empirical distribution (normalisation 1/n, ``numpy.cov(..., bias=True)``)::

    cov_i = (1/n) sum_j h_i(x_j) (a_j - mean(a)) = mean(h_i a) - mean(h_i) mean(a)

With this normalisation the sample analogue of the paper's Lemma 2 holds with
equality for every h: cov_i = (N0 N1 / n^2) * SP_i. A 1/(n-1) estimator would
be larger by the factor n/(n-1).

Computation
-----------
Each metric is one pass over ``H`` with a few per-individual vectors built once
from ``a`` and ``y``; no Python loop over individuals and no per-model boolean
masks. Validating ``H`` itself (NaN, range) is the compliance party's job; this
module checks only that ``a``, ``y`` and ``H`` agree in length, that ``a``/``y``
are 0/1, and that no group it divides by is empty.

Correctly rounded answers
-------------------------
SP, |SP|, EO, |EO|, PE, EOdds and cov are released *correctly rounded*: the
float64 nearest (ties to even) to the exact value of the formula on the float64
inputs, with one rounding. Every such metric is a function of the exact group
sums S_g = sum_{j in slice, a_j = g} h_j (g = 0, 1)::

    SP = S1 / N1 - S0 / N0 = (S1 N0 - S0 N1) / (N0 N1),    cov = (S1 N0 - S0 N1) / n^2

(the slice is y = 1 for EO, y = 0 for PE; for cov, sum_j h_j (a_j - N1/n) / n
gives the second form). A finite float64 is an integer multiple of 2^-1074, so
each S_g is an integer in those units and is computed exactly (:func:`_exact_sums`:
53-bit integer significands binned by exponent, each bin summed in float64 with
every partial sum an integer below 2^53, hence exact, then combined as Python
integers). The quotient of two integers is rounded once by Python's ``int / int``,
which is correctly rounded (round-half-even, subnormal results included).

Why: the released value is then a function of the exact group sums alone, not of
a summation order. The compliance party updates the sums of a kept model by the
few entries an edit-form query changes (:meth:`AuditEvaluator.edited`, O(changed
entries) instead of O(n)) and releases bit for bit what :func:`evaluate` releases
on the expanded model, by construction: both round the same exact rational once.
Error: |released - exact| <= u |exact| <= u = 2^-53 for |exact| <= 1 (half an ulp),
below a numpy dot product's gamma_n bound for every n. PRP (a ratio per group) is
computed with numpy products as before; non-finite ``H`` falls back to them too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from parley.protocols.errors import EmptyGroupError, QueryError

__all__ = [
    "EMPTY_AUDIT",
    "EMPTY_GROUP",
    "LENGTH_MISMATCH",
    "NOT_BINARY",
    "NOT_VECTOR",
    "BAD_H_NDIM",
    "UNKNOWN_METRIC",
    "LABELS_REQUIRED",
    "MetricInfo",
    "METRICS",
    "AuditEvaluator",
    "UNIT_EXP",
    "float_units",
    "evaluate",
    "group_sizes",
    "statistical_parity_difference",
    "abs_statistical_parity_difference",
    "equal_opportunity_difference",
    "abs_equal_opportunity_difference",
    "predictive_equality_difference",
    "equalized_odds_difference",
    "predictive_rate_parity_difference",
    "covariance",
]

# -- message templates (tests format these and compare the full text) -------------------

EMPTY_AUDIT = "metric {metric!r}: the audit set is empty (n=0)"
#: Names no group: which one is empty is a fact about A (such an audit set lies outside the universe the DP
#: protocols' neighbours range over, see :mod:`parley.protocols.dp.sensitivity`).
EMPTY_GROUP = "metric {metric!r}: a group of A has no members{slice} in the audit set, so the metric is undefined"
LENGTH_MISMATCH = (
    "metric {metric!r}: {name} has length {length} but H has n={n} columns "
    "(one per audit individual)"
)
NOT_BINARY = "metric {metric!r}: {name} must contain only 0 and 1, got {value!r}"
NOT_VECTOR = "metric {metric!r}: {name} must be a 1-D array, got shape {shape}"
BAD_H_NDIM = (
    "metric {metric!r}: H must have shape (m, n) or (n,), got an array with shape {shape}"
)
UNKNOWN_METRIC = "unknown metric {metric!r}; known metrics: {known}"
LABELS_REQUIRED = "metric {metric!r} needs the true labels y, but y is None"

# slice suffixes used in EMPTY_GROUP
_Y1 = " among y=1"
_Y0 = " among y=0"

#: A metric's value: float64 of shape (m,), or a numpy.float64 scalar when H is one model of shape (n,).
MetricValue: TypeAlias = npt.NDArray[np.float64] | np.float64


# -- input handling --------------------------------------------------------------------


def _prepare(
    metric: str, H: npt.ArrayLike, a: npt.ArrayLike, y: npt.ArrayLike | None = None
) -> tuple[npt.NDArray[np.float64], bool, np.ndarray, np.ndarray | None, int]:
    """Return (H2, single, a, y, n) with H2 2-D float64 (a view when possible)."""
    Hf = np.asarray(H, dtype=np.float64)
    if Hf.ndim == 1:
        single, H2 = True, Hf.reshape(1, -1)
    elif Hf.ndim == 2:
        single, H2 = False, Hf
    else:
        raise QueryError(BAD_H_NDIM.format(metric=metric, shape=Hf.shape))
    n = H2.shape[1]
    av = _binary_vector(metric, "a", a, n)
    yv = None if y is None else _binary_vector(metric, "y", y, n)
    if n == 0:
        raise EmptyGroupError(EMPTY_AUDIT.format(metric=metric))
    return H2, single, av, yv, n


def _binary_vector(metric: str, name: str, v: npt.ArrayLike, n: int | None) -> np.ndarray:
    """Check ``v`` is 1-D, of length ``n`` (unless None) and 0/1-valued."""
    v = np.asarray(v)
    if v.ndim != 1:
        raise QueryError(NOT_VECTOR.format(metric=metric, name=name, shape=v.shape))
    if n is not None and v.shape[0] != n:
        raise QueryError(
            LENGTH_MISMATCH.format(metric=metric, name=name, length=v.shape[0], n=n)
        )
    bad = (v != 0) & (v != 1)
    if bad.any():
        raise QueryError(
            NOT_BINARY.format(metric=metric, name=name, value=v[np.argmax(bad)].item())
        )
    return v


def _indicators(
    metric: str, a: np.ndarray, y: np.ndarray | None, label: int | None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Float64 indicators of (a=0, a=1) within the slice y=label (all if None).

    Raises EmptyGroupError (checked before any division) if either is empty.
    """
    a1 = a == 1
    a0 = ~a1
    suffix = ""
    if label is not None:
        in_slice = y == label
        a1 = a1 & in_slice
        a0 = a0 & in_slice
        suffix = _Y1 if label == 1 else _Y0
    for group, mask in ((0, a0), (1, a1)):
        if not mask.any():
            raise EmptyGroupError(
                EMPTY_GROUP.format(metric=metric, group=group, slice=suffix)
            )
    return a0.astype(np.float64), a1.astype(np.float64)


def _finish(values: np.ndarray, single: bool) -> MetricValue:
    values64 = np.asarray(values, dtype=np.float64)
    return values64[0] if single else values64


# -- exact group sums, one rounding ----------------------------------------------------

#: A finite float64 is an integer multiple of 2^-UNIT_EXP; exact sums are kept as integers in these units.
UNIT_EXP = 1074
#: Values summed per block, at most 2^26: each bin's parts are below 2^27 in magnitude, so every partial sum
#: in float64 is an integer below 2^53 and exact.
_BLOCK = 1 << 20
_LOW_BITS = 26


def float_units(x: float) -> int:
    """The finite float ``x`` as an exact integer in units of 2^-1074."""
    p, q = float(x).as_integer_ratio()  # q = 2^k with k <= 1074 for every finite float64
    return p << (UNIT_EXP - (q.bit_length() - 1))


def _exact_sums(H2: np.ndarray, groups: np.ndarray) -> list[tuple[int, int]]:
    """(S0, S1) per row of finite ``H2``: the exact sums over the columns with ``groups`` 0 and 1 (2: left out).

    Integers in units of 2^-1074. ``H = M 2^(e - 53)`` with M the 53-bit integer significand
    (``frexp``); M splits into hi 2^26 + lo with |hi| < 2^27, 0 <= lo < 2^26, and ``bincount``
    sums each part per (row, group, exponent) bin in float64: no partial sum reaches 2^53 while a
    bin holds at most 2^26 values, so every bin sum is exact. The bins are then combined as Python
    integers, each shifted to units of 2^-1074 (M 2^(e - 53) = M 2^(e + 1021) units).
    """
    m, n = H2.shape
    totals = [[0, 0] for _ in range(m)]
    # blocks of at most _BLOCK values: the temporaries (about 6 arrays of 8 bytes a value) stay a few MiB
    # whatever m x n, and a bin never holds more than _BLOCK <= 2^26 values
    width = min(n, _BLOCK)
    height = max(1, _BLOCK // width)
    for top in range(0, m, height):
        for start in range(0, n, width):
            _add_block(totals, top, H2[top:top + height, start:start + width], groups[start:start + width])
    return [(s0, s1) for s0, s1 in totals]


def _add_block(totals: list[list[int]], top: int, part: np.ndarray, g: np.ndarray) -> None:
    """Add the exact (S0, S1) of each row of ``part`` to ``totals[top + row]`` (see :func:`_exact_sums`)."""
    m = part.shape[0]
    mant, exp = np.frexp(part)
    sig = (mant * float(1 << 53)).astype(np.int64)  # exact: 53 significant bits
    del mant
    low, high = int(exp.min(initial=0)), int(exp.max(initial=0))
    span = high - low + 1
    key = ((np.arange(m, dtype=np.int64)[:, None] * 3 + g[None, :]) * span + (exp - low)).ravel()
    del exp
    size = m * 3 * span
    hi = np.bincount(key, weights=(sig >> _LOW_BITS).ravel().astype(np.float64), minlength=size)
    lo = np.bincount(key, weights=(sig & ((1 << _LOW_BITS) - 1)).ravel().astype(np.float64), minlength=size)
    for k in np.flatnonzero((hi != 0.0) | (lo != 0.0)).tolist():
        row, rest = divmod(k, 3 * span)
        group, e = divmod(rest, span)
        if group == 2:
            continue
        value = (int(hi[k]) << _LOW_BITS) + int(lo[k])
        shift = e + low + UNIT_EXP - 53
        # a value below 2^-1022 is a multiple of 2^-1074, so its bin's sum is too: the right shift is exact
        totals[top + row][group] += value << shift if shift >= 0 else value >> -shift


def _rounded(numerator: int, denominator: int) -> float:
    """numerator / denominator rounded once to the nearest float64 (``int / int`` is correctly rounded)."""
    try:
        return numerator / denominator
    except OverflowError:  # beyond float64 (H far outside [0, 1]): the sign's infinity, as a float product gives
        return float("inf") if (numerator > 0) == (denominator > 0) else float("-inf")


@dataclass(frozen=True)
class _Slice:
    """One linear family of an audit set: who counts (``groups``: a within the slice, 2 outside) and the divisor.

    ``kind`` "gap": (S1 N0 - S0 N1) / (N0 N1); "cov": (S1 N0 - S0 N1) / n^2.
    """

    kind: str
    label: int | None
    groups: np.ndarray  # int64, (n,)
    n0: int
    n1: int
    denominator: int

    def value(self, s0: int, s1: int) -> float:
        return _rounded(s1 * self.n0 - s0 * self.n1, self.denominator)

    def values(self, H2: np.ndarray) -> np.ndarray:
        """The family's value for every row of ``H2`` (m, n)."""
        if not np.isfinite(H2).all():  # NaN or infinity: the float product says what such an input gives
            product: np.ndarray = H2 @ self._weights()
            return product
        return np.array([self.value(s0, s1) for s0, s1 in _exact_sums(H2, self.groups)], dtype=np.float64)

    def _weights(self) -> np.ndarray:
        g = self.groups
        if self.kind == "cov":
            n = g.size
            return np.where(g == 1, self.n0, -self.n1).astype(np.float64) / (n * n)
        return np.where(g == 1, 1.0 / max(self.n1, 1), np.where(g == 0, -1.0 / max(self.n0, 1), 0.0))


def _gap_slice(metric: str, a: np.ndarray, y: np.ndarray | None, label: int | None) -> _Slice:
    """The exact-sum plan of mean_{a=1, slice} h - mean_{a=0, slice} h; EmptyGroupError if a group is empty."""
    i0, i1 = _indicators(metric, a, y, label)  # raises before any division
    groups = np.where(i1 > 0, 1, np.where(i0 > 0, 0, 2)).astype(np.int64)
    n0, n1 = int(np.count_nonzero(i0)), int(np.count_nonzero(i1))
    return _Slice("gap", label, groups, n0, n1, (n0 * n1) << UNIT_EXP)


def _cov_slice(a: np.ndarray) -> _Slice:
    """The exact-sum plan of the covariance (1/n normalisation; no group needs members)."""
    n1 = int(np.count_nonzero(a))
    n0 = a.shape[0] - n1
    return _Slice("cov", None, (a == 1).astype(np.int64), n0, n1, (a.shape[0] ** 2) << UNIT_EXP)


# -- kernels (metric key threaded through for messages) ---------------------------------


def _sp(H: npt.ArrayLike, a: npt.ArrayLike, metric: str) -> tuple[np.ndarray, bool]:
    H2, single, av, _, _ = _prepare(metric, H, a)
    return _gap_slice(metric, av, None, None).values(H2), single


def _sliced(
    H: npt.ArrayLike, a: npt.ArrayLike, y: npt.ArrayLike | None, label: int, metric: str
) -> tuple[np.ndarray, bool]:
    if y is None:
        raise QueryError(LABELS_REQUIRED.format(metric=metric))
    H2, single, av, yv, _ = _prepare(metric, H, a, y)
    return _gap_slice(metric, av, yv, label).values(H2), single


# -- public metrics --------------------------------------------------------------------


def statistical_parity_difference(H: npt.ArrayLike, a: npt.ArrayLike) -> MetricValue:
    """Statistical parity gap SP_i of each model (Def. 2.1, Eq. 1).

    Parameters
    ----------
    H : array_like, shape (m, n) or (n,)
        Model outputs on the audit set, in {0, 1} or [0, 1].
    a : array_like of int, shape (n,)
        Protected attribute, 1 = advantaged, 0 = disadvantaged.

    Returns
    -------
    numpy.ndarray of float64, shape (m,), or numpy.float64 if H is 1-D
        ``mean_{a=1} h_i - mean_{a=0} h_i``.

    Raises
    ------
    EmptyGroupError
        If a group is empty (:data:`EMPTY_GROUP`).
    QueryError
        If ``a`` and ``H`` disagree in length (:data:`LENGTH_MISMATCH`).
    """
    return _finish(*_sp(H, a, "sp"))


def abs_statistical_parity_difference(H: npt.ArrayLike, a: npt.ArrayLike) -> MetricValue:
    """Absolute statistical parity gap |SP_i| (Sec. 2.1.1).

    fairlearn's ``demographic_parity_difference`` for binary h.

    Parameters and errors as :func:`statistical_parity_difference`.
    """
    values, single = _sp(H, a, "abs_sp")
    return _finish(np.abs(values), single)


def equal_opportunity_difference(H: npt.ArrayLike, a: npt.ArrayLike, y: npt.ArrayLike | None) -> MetricValue:
    """Equal opportunity gap EO_i (Def. 2.2, Eq. 2): SP among y=1.

    For binary h this is TPR(a=1) - TPR(a=0). By Remark 5 it carries no
    information about individuals with y=0.

    Parameters
    ----------
    H : array_like, shape (m, n) or (n,)
    a : array_like of int, shape (n,)
    y : array_like of int, shape (n,)
        True labels in {0, 1}.

    Returns
    -------
    numpy.ndarray of float64, shape (m,), or numpy.float64 if H is 1-D

    Raises
    ------
    EmptyGroupError
        If a=0 or a=1 has no member with y=1.
    QueryError
        On a length mismatch.
    """
    return _finish(*_sliced(H, a, y, 1, "eo"))


def abs_equal_opportunity_difference(H: npt.ArrayLike, a: npt.ArrayLike, y: npt.ArrayLike | None) -> MetricValue:
    """Absolute equal opportunity gap |EO_i| (Sec. 2.1.1).

    Parameters and errors as :func:`equal_opportunity_difference`.
    """
    values, single = _sliced(H, a, y, 1, "abs_eo")
    return _finish(np.abs(values), single)


def predictive_equality_difference(H: npt.ArrayLike, a: npt.ArrayLike, y: npt.ArrayLike | None) -> MetricValue:
    """Predictive equality gap PE_i: SP among y=0 (FPR(a=1) - FPR(a=0) for binary h).

    One half of equalized odds (Remark 5). Parameters as
    :func:`equal_opportunity_difference`; raises EmptyGroupError if a group has
    no member with y=0.
    """
    return _finish(*_sliced(H, a, y, 0, "pe"))


def equalized_odds_difference(H: npt.ArrayLike, a: npt.ArrayLike, y: npt.ArrayLike | None) -> MetricValue:
    """Equalized odds gap max(|EO_i|, |PE_i|) (Remark 5).

    Equals fairlearn's ``equalized_odds_difference`` (``agg="worst_case"``) for
    binary h. Both slices y=1 and y=0 must be non-empty in both groups.

    Returns
    -------
    numpy.ndarray of float64, shape (m,), or numpy.float64 if H is 1-D
        Values in [0, 1].
    """
    metric = "eodds"
    if y is None:
        raise QueryError(LABELS_REQUIRED.format(metric=metric))
    H2, single, av, yv, _ = _prepare(metric, H, a, y)
    eo, pe = _gap_slice(metric, av, yv, 1), _gap_slice(metric, av, yv, 0)  # both slices checked before either sum
    return _finish(np.maximum(np.abs(eo.values(H2)), np.abs(pe.values(H2))), single)


def predictive_rate_parity_difference(H: npt.ArrayLike, a: npt.ArrayLike, y: npt.ArrayLike | None) -> MetricValue:
    """Predictive rate parity gap P(y=1 | h, a=1) - P(y=1 | h, a=0) (Remark 5).

    With soft outputs as weights, ``P(y=1 | h, a=g) = sum_{a_j=g} h_ij y_j /
    sum_{a_j=g} h_ij``; for binary h this is the precision gap.

    Returns
    -------
    numpy.ndarray of float64, shape (m,), or numpy.float64 if H is 1-D

    A group in which a model's outputs sum to 0 has ``P(y=1 | h, a=g) = 0``
    (``zero_division=0``, as scikit-learn's ``precision_score`` and fairlearn).

    Raises
    ------
    EmptyGroupError
        If a group is empty (:data:`EMPTY_GROUP`).
    """
    metric = "prp"
    if y is None:
        raise QueryError(LABELS_REQUIRED.format(metric=metric))
    H2, single, av, yv, _ = _prepare(metric, H, a, y)
    i0, i1 = _indicators(metric, av, yv, None)
    yf = np.asarray(yv, dtype=np.float64)
    # columns: positives accepted and mass accepted, for a=0 then a=1
    S = H2 @ np.column_stack([i0 * yf, i0, i1 * yf, i1])
    # 0/0 := 0: with h >= 0 a zero accepted mass has a zero numerator too.
    denom = S[:, [1, 3]]
    rates = np.divide(S[:, [0, 2]], denom, out=np.zeros_like(denom), where=denom != 0)
    return _finish(rates[:, 1] - rates[:, 0], single)


def covariance(H: npt.ArrayLike, a: npt.ArrayLike) -> MetricValue:
    """Covariance cov(h_i(x), a) on the audit set, normalised by 1/n.

    The fairness measure of the distributed-fair-learning paper (Alg. 1 step 4,
    rho-fairness in Sec. V-A, Lemma 5 Eq. (18)), estimated by the population
    covariance of the sample: ``mean(h_i a) - mean(h_i) mean(a)``, equal to
    ``numpy.cov(h_i, a, bias=True)[0, 1]`` and to ``(N0 N1 / n^2) SP_i``. No
    group needs members: a constant ``a`` gives 0.

    Parameters
    ----------
    H : array_like, shape (m, n) or (n,)
    a : array_like of int, shape (n,)

    Returns
    -------
    numpy.ndarray of float64, shape (m,), or numpy.float64 if H is 1-D
        Values in [-1/4, 1/4] for h in [0, 1].
    """
    metric = "cov"
    H2, single, av, _, _ = _prepare(metric, H, a)
    # (1/n) sum_j h_j (a_j - N1/n) = (S1 N0 - S0 N1) / n^2, from the exact group sums, rounded once
    return _finish(_cov_slice(av).values(H2), single)


def group_sizes(a: npt.ArrayLike) -> tuple[int, int]:
    """Group sizes (N0, N1) = (#{a=0}, #{a=1}) (Sec. 2.1).

    Parameters
    ----------
    a : array_like of int, shape (n,)
        Protected attribute in {0, 1}.

    Returns
    -------
    tuple of int
        ``(N0, N1)``, disadvantaged first.
    """
    a = _binary_vector("group_sizes", "a", a, None)
    n1 = int(np.count_nonzero(a))
    return a.shape[0] - n1, n1


# -- registry --------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricInfo:
    """One entry of :data:`METRICS`.

    Attributes
    ----------
    key : str
        Short name used in queries, e.g. ``"sp"``.
    function : callable
        The metric function, ``function(H, a)`` or ``function(H, a, y)``.
    needs_labels : bool
        Whether the function takes the true labels ``y``.
    description : str
        One line for reports and the CLI.
    range : tuple of float
        The closed interval the values lie in for h in [0, 1].
    """

    key: str
    function: Callable[..., MetricValue]
    needs_labels: bool
    description: str
    range: tuple[float, float]


METRICS: Mapping[str, MetricInfo] = MappingProxyType(
    {
        info.key: info
        for info in (
            MetricInfo("sp", statistical_parity_difference, False,
                       "statistical parity gap, a=1 minus a=0 (Def. 2.1)", (-1.0, 1.0)),
            MetricInfo("abs_sp", abs_statistical_parity_difference, False,
                       "absolute statistical parity gap |SP|", (0.0, 1.0)),
            MetricInfo("eo", equal_opportunity_difference, True,
                       "equal opportunity gap (TPR), a=1 minus a=0 (Def. 2.2)", (-1.0, 1.0)),
            MetricInfo("abs_eo", abs_equal_opportunity_difference, True,
                       "absolute equal opportunity gap |EO|", (0.0, 1.0)),
            MetricInfo("pe", predictive_equality_difference, True,
                       "predictive equality gap (FPR), a=1 minus a=0", (-1.0, 1.0)),
            MetricInfo("eodds", equalized_odds_difference, True,
                       "equalized odds gap max(|EO|, |PE|)", (0.0, 1.0)),
            MetricInfo("prp", predictive_rate_parity_difference, True,
                       "predictive rate parity (precision) gap, a=1 minus a=0", (-1.0, 1.0)),
            MetricInfo("cov", covariance, False,
                       "covariance cov(h(x), a), 1/n normalisation (Hu et al. 2019)",
                       (-0.25, 0.25)),
        )
    }
)


def evaluate(metric: str, H: npt.ArrayLike, a: npt.ArrayLike, y: npt.ArrayLike | None = None) -> MetricValue:
    """Evaluate the metric registered under ``metric`` for every model in ``H``.

    Parameters
    ----------
    metric : str
        A key of :data:`METRICS`.
    H : array_like, shape (m, n) or (n,)
    a : array_like of int, shape (n,)
    y : array_like of int, shape (n,), optional
        True labels; required when ``METRICS[metric].needs_labels``, ignored
        otherwise.

    Returns
    -------
    numpy.ndarray of float64, shape (m,), or numpy.float64 if H is 1-D

    Raises
    ------
    QueryError
        Unknown key (:data:`UNKNOWN_METRIC`, listing the known keys) or missing
        labels (:data:`LABELS_REQUIRED`), plus whatever the metric raises.
    """
    info = METRICS.get(metric) if isinstance(metric, str) else None
    if info is None:
        raise QueryError(UNKNOWN_METRIC.format(metric=metric, known=", ".join(METRICS)))
    if info.needs_labels:
        if y is None:
            raise QueryError(LABELS_REQUIRED.format(metric=metric))
        return info.function(H, a, y)
    return info.function(H, a)


#: The metrics computed from exact group sums: the families (kind, slice label) each needs.
_PLANS: Mapping[str, tuple[tuple[str, int | None], ...]] = MappingProxyType({
    "sp": (("gap", None),), "abs_sp": (("gap", None),), "eo": (("gap", 1),), "abs_eo": (("gap", 1),),
    "pe": (("gap", 0),), "eodds": (("gap", 1), ("gap", 0)), "cov": (("cov", None),)})


def _combine(metric: str, parts: Sequence[np.ndarray]) -> np.ndarray:
    """The metric from its families' values, as the public functions combine them."""
    if metric in ("abs_sp", "abs_eo"):
        magnitude: np.ndarray = np.abs(parts[0])
        return magnitude
    if metric == "eodds":
        worst: np.ndarray = np.maximum(np.abs(parts[0]), np.abs(parts[1]))
        return worst
    return parts[0]


class AuditEvaluator:
    """:func:`evaluate` on one audit set, with each metric's plan kept, and answers to edits updated exactly.

    SP, EO, PE (and |SP|, |EO|, EOdds, cov) are functions of exact group sums (module docstring,
    "Correctly rounded answers"); :func:`evaluate` rebuilds the groups, and checks a and y, at every
    call, about ten passes over n for one pass of real work. The compliance party answers thousands
    of queries on the same audit set, and the referee checks each answer again, so the plan is kept
    per metric here. The values are those of :func:`evaluate` bit for bit: the same plan (a
    deterministic function of a and y) enters the same code. Any other metric, a first call, and any
    call whose ``H`` is not an (m, n) or (n,) array of this audit set's n go through :func:`evaluate`
    itself, so every error is the one it raises.

    :meth:`edited` answers models given as a few changed entries of a base model in O(changed
    entries): the base's exact group sums are kept (for the last :data:`KEPT_SUMS` bases) and moved
    by the exact differences of the changed entries. Integer sums are exact in any order, so the
    result is the one :func:`evaluate` gives on the expanded models, bit for bit.

    Parameters
    ----------
    a, y : array_like of int, shape (n,)
        The protected attribute and the true labels (``y`` may be None when no metric needs it).
        They must not change while the evaluator is in use.
    """

    #: Base models whose exact group sums are kept (per family), the oldest dropped first.
    KEPT_SUMS = 16

    def __init__(self, a: Any, y: Any = None) -> None:
        self.a, self.y = a, y
        self._slices: dict[tuple[str, int | None], _Slice] = {}
        self._sums: dict[tuple[int, str, int | None], tuple[np.ndarray, int, int]] = {}

    def _plan(self, metric: Any) -> list[_Slice] | None:
        plan = _PLANS.get(metric) if isinstance(metric, str) else None
        if plan is None or any(family not in self._slices for family in plan):
            return None
        return [self._slices[family] for family in plan]

    def __call__(self, metric: str, H: Any) -> Any:
        slices = self._plan(metric)
        H = np.asarray(H, dtype=np.float64)
        if slices is None or H.ndim not in (1, 2) or H.shape[-1] != slices[0].groups.shape[0]:
            values = evaluate(metric, H, self.a, self.y)  # validates everything; raises as always
            if isinstance(metric, str) and metric in _PLANS and slices is None:
                self._build(metric)
            return values
        single = H.ndim == 1
        H2 = H.reshape(1, -1) if single else H
        return _finish(_combine(metric, [s.values(H2) for s in slices]), single)

    def _build(self, metric: str) -> None:
        a = np.asarray(self.a)
        for kind, label in _PLANS[metric]:
            if (kind, label) not in self._slices:
                self._slices[(kind, label)] = _cov_slice(a) if kind == "cov" else _gap_slice(
                    metric, a, None if label is None else np.asarray(self.y), label)

    def edited(self, metric: str, base: np.ndarray, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The metric of m models, each ``base`` (n,) with ``values[i]`` written at ``indices[i]`` (m, k).

        Equal bit for bit to ``self(metric, H)`` with H the expanded (m, n) models. The indices of a
        row must be distinct and in range, and every value finite (the compliance party's query
        validation guarantees both); ``base`` must not change while it is in use (kept models are
        read-only). Metrics without exact sums (PRP), or a non-finite base, expand the models.
        """
        base = np.asarray(base, dtype=np.float64)
        indices, values = np.atleast_2d(indices), np.atleast_2d(np.asarray(values, dtype=np.float64))
        slices = self._plan(metric)
        if slices is None:
            self(metric, base)  # validates metric, a, y and the base's length; builds the plan
            slices = self._plan(metric)
        if slices is None or base.shape != slices[0].groups.shape or not np.isfinite(values).all():
            H = np.repeat(base.reshape(1, -1), indices.shape[0], axis=0)
            H[np.repeat(np.arange(indices.shape[0]), indices.shape[1]), indices.reshape(-1)] = values.reshape(-1)
            return cast(np.ndarray, self(metric, H))
        parts = []
        for s in slices:
            sums = self._base_sums(base, s)
            if sums is None:  # a non-finite base: the float path
                H = np.repeat(base.reshape(1, -1), indices.shape[0], axis=0)
                H[np.repeat(np.arange(indices.shape[0]), indices.shape[1]), indices.reshape(-1)] = values.ravel()
                return cast(np.ndarray, self(metric, H))
            parts.append(np.array([s.value(*_moved(sums, s.groups, base, idx, new))
                                   for idx, new in zip(indices.tolist(), values.tolist(), strict=True)]))
        return _combine(metric, parts)

    def _base_sums(self, base: np.ndarray, s: _Slice) -> tuple[int, int] | None:
        """Exact (S0, S1) of ``base`` in family ``s``, computed once per base object (None: not finite)."""
        key = (id(base), s.kind, s.label)
        kept = self._sums.get(key)
        if kept is not None and kept[0] is base:
            return kept[1], kept[2]
        if not np.isfinite(base).all():
            return None
        s0, s1 = _exact_sums(base.reshape(1, -1), s.groups)[0]
        self._sums[key] = (base, s0, s1)
        while len(self._sums) > self.KEPT_SUMS:
            self._sums.pop(next(iter(self._sums)))
        return s0, s1


def _moved(sums: tuple[int, int], groups: np.ndarray, base: np.ndarray, indices: list[int], values: list[float]
           ) -> tuple[int, int]:
    """(S0, S1) after writing ``values`` at ``indices`` (distinct).

    Each changed entry moves its group's sum by the exact difference new - old, in units of 2^-1074
    (:func:`float_units`, inlined).
    """
    moved = [sums[0], sums[1], 0]  # the third slot collects individuals outside the slice
    for group, new, before in zip(groups[indices].tolist(), values, base[indices].tolist(), strict=True):
        if new != before:
            p, q = new.as_integer_ratio()
            r, t = before.as_integer_ratio()
            moved[group] += (p << (UNIT_EXP + 1 - q.bit_length())) - (r << (UNIT_EXP + 1 - t.bit_length()))
    return moved[0], moved[1]
