"""l1 sensitivities of m fairness-metric answers to one individual's protected attribute.

Pure functions behind the ``laplace`` (global sensitivity) and ``smooth-cauchy`` /
``smooth-laplace`` (smooth sensitivity) protocols of Hamman, Chen & Dutta, "Can
Querying for Bias Leak Protected Attributes?" (FAccT 2023), Sec. 4 and App. C, D.
Every closed form here is checked against an exhaustive search over all audit sets
of size n <= 8 in ``tests/unit/protocols/test_sensitivity.py``.

Setting
-------
The audit set (X, Y, A) has n individuals; the querier fixes m models H (m x n,
entries in [0, 1]). Two audit sets are **neighbours** when their attribute vectors
differ in one individual (Def. 4.1); X, Y and H stay fixed. Changing a_j moves j
from one group to the other, so N0 and N1 both change by one.

Universe D (how empty groups are treated)
-----------------------------------------
SP divides by N0 and N1, so it is undefined when a group is empty; the compliance
party refuses such a query (:class:`~parley.protocols.errors.EmptyGroupError`). As in the
paper's proofs (App. C: "there is at least 1 individual in the disadvantaged group
in all possible datasets"), the universe D is the set of attribute vectors on which
the metric is defined (for SP: 1 <= N0, N1; for EO: both groups non-empty among
y = 1), and sensitivities are maxima over neighbouring pairs *inside* D. For
n >= 3 any two members of D are joined by a path of neighbours inside D, so
group privacy holds along D; for n = 2 they are not (the two sets with N0 = N1 = 1
are only connected through empty-group sets) and the local and smooth
sensitivities below refuse n < 3.

The supremum over H
-------------------
H is public and chosen by the querier, so every bound is the supremum over
H in [0, 1]^{m x n}. The m rows are independent, hence the l1 sensitivity of m
answers is m times that of one answer. SP is linear in h for fixed a, so its
supremum is attained at a 0/1 model. |SP| is not: the supremum of
||SP(a)| - |SP(a')|| is attained on the hyperplane SP(a') = 0, at a model with one
fractional entry (e.g. n = 3: it is 3/4 with a soft model, 1/2 with 0/1 models).

Results (one model; multiply by m). s = min(N0, N1), l = max(N0, N1), n = s + l.
G = 1/2 + 1/(n - 1).

- SP, local (move j from a group of size p >= 2 to one of size q):
  1/p + 1/(q + 1). The maximum over the two directions is from the smaller group:
  LS_SP(s, l) = 1/s + 1/(l + 1) for s >= 2, and G for s = 1 (only the larger
  group can give someone away). Global: max over s of LS = G (Thm. 5, agrees).
- |SP|, local: n / (p (q + 1)) = n/(n + 1) * (1/p + 1/(q + 1)), so
  LS_|SP| = n/(n + 1) * LS_SP everywhere and Delta_|SP| = n/(n + 1) * G =
  n / (2 (n - 1)). **Thm. 6 (m/2) and App. D.4 (local m/N0) are too small**: the
  proofs bound ||SP| - |SP'|| at a few chosen (lambda, mu) instead of maximising
  (App. C/A.4, step (b)); the maximum puts SP' = 0 (j accepted, no one else in the
  receiving group accepted, a fraction (p - 1)/(q + 1) of the rest of j's group
  accepted), giving n/(p (q + 1)) > 1/p.
- EO / PE: SP on the slice y = 1 / y = 0. Y is public and fixed across
  neighbours, and flipping an individual outside the slice leaves the metric
  unchanged, so the global sensitivity is Thm. 5 with n replaced by the slice size
  n_pos = #{y = 1} (n_neg = #{y = 0}): m/2 + m/(n_pos - 1). **The paper's
  Delta_EO = m/2 + m/(n - 1) (Sec. 4.1) is too small whenever some y = 0.**
  |EO|: m n_pos / (2 (n_pos - 1)) (the paper's m/2 is too small, as for |SP|).
- EOdds = max(|EO|, |PE|): a neighbour changes one slice only, and max(., c) is
  1-Lipschitz, so Delta = m max(n_pos/(2(n_pos-1)), n_neg/(2(n_neg-1))); attained
  (take h constant on the other slice).
- cov = (1/n) sum_j h_j (a_j - mean a) is defined for every a. Flipping a_k
  changes it by +-(h_k - mean h)/n, at most (1 - 1/n)/n: Delta = m (n - 1)/n^2
  (attained by the model accepting only k). Ours; the paper has no cov.
- PRP is not supported. Its global sensitivity is the whole range width 2 per
  model (approached with soft h: a group whose acceptance mass is one positive
  individual plus a vanishing negative one flips from ratio ~1 to 0), so Laplace
  noise would drown it; worse, PRP is undefined when a group's acceptance mass is
  0, which depends on H: a probe accepting exactly j and k is answerable iff
  a_j != a_k, so the refusal itself leaks an attribute and no noise can fix it.

Smooth sensitivity (Def. 4.3; Nissim, Raskhodnikova, Smith 2007, Def. 3.1)
-------------------------------------------------------------------------
S_beta(x) = max_k e^{-k beta} A^(k)(x) with A^(k)(x) = max_{d(x, y) <= k} LS(y).
LS depends on y only through its group sizes, decreases as the smaller group
grows (for s <= (n + 1)/2), and the nearest set whose smaller group has size
s - k is k flips away, so A^(k) = m (1/(s - k) + 1/(l + k + 1)) while s - k >= 2
and m G beyond (Lemma 5, with min/max in place of N0/N1). The function of k is
convex (Lemma 6's conclusion holds, though its proof mis-signs the cross term
2 beta (1/B^2 - 1/A^2): the second derivative is a quadratic in beta with negative
discriminant -4 (x + y)^2 (x^2 + y^2), x = 1/A, y = 1/B, hence positive), so

    S_beta = m max(1/s + 1/(l + 1), e^{-(s - 2) beta} G)          for s >= 2,
    S_beta = m G                                                   for s = 1,

and for |SP| the same times n/(n + 1). The paper's closed form (Thm. 7, 8)
uses N0 and N1 *assuming N0 <= N1*; applied literally when N0 > N1 it falls below
the local sensitivity (e.g. N0 = 6, N1 = 2, beta = 0.5: 0.5 < 0.643), and at
N0 = 1 it gives m (1 + 1/n), an upper bound that is not beta-smooth
(it is ~2x the value at N0 = 2, breaking S(x) <= e^beta S(y), which the
mechanism's proof needs). The functions here are the exact smooth sensitivity,
which is beta-smooth by construction; the printed forms are kept as
``paper_*`` for comparison.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from parley.protocols.errors import QueryError

__all__ = [
    "GLOBAL_METRICS",
    "SMOOTH_METRICS",
    "NOT_SUPPORTED",
    "PRP_WHY",
    "BAD_INTEGER",
    "BAD_SIZES",
    "BAD_BETA",
    "SLICE_REQUIRED",
    "SLICE_TOO_LARGE",
    "global_sensitivity",
    "paper_global_sensitivity",
    "local_sensitivity_sp",
    "local_sensitivity_abs_sp",
    "max_local_sensitivity_sp",
    "max_local_sensitivity_abs_sp",
    "smooth_sensitivity",
    "smooth_sensitivity_sp",
    "smooth_sensitivity_abs_sp",
    "paper_local_sensitivity_abs_sp",
    "paper_smooth_sensitivity_sp",
    "paper_smooth_sensitivity_abs_sp",
]

#: Metrics with a global sensitivity (the ``laplace`` protocol answers these).
GLOBAL_METRICS: tuple[str, ...] = ("sp", "abs_sp", "eo", "abs_eo", "pe", "eodds", "cov")
#: Metrics with a closed-form smooth sensitivity (Thm. 7, 8 and App. D.4).
SMOOTH_METRICS: tuple[str, ...] = ("sp", "abs_sp")

# -- message templates (tests format these and compare the full text) -------------------

NOT_SUPPORTED = "{what} is not available for metric {metric!r}{why}; supported metrics: {supported}"
#: The ``why`` of :data:`NOT_SUPPORTED` for prp (module docstring).
PRP_WHY = (" (its sensitivity is the whole range [-1, 1] per model: moving the one person a model accepts in a"
           " group moves that group's precision between 0 and 1)")
BAD_INTEGER = "{name} must be an integer >= {low}, got {value!r}"
BAD_SIZES = "group sizes n0={n0} and n1={n1} must both be >= 1 and sum to n >= {low}"
BAD_BETA = "beta must be a finite number > 0, got {value!r}"
SLICE_REQUIRED = "metric {metric!r} needs {name} (the number of audit individuals with y={label}), got None"
SLICE_TOO_LARGE = "{name}={value} exceeds the audit size n={n}"

def _int(name: str, value: Any, low: int) -> int:
    try:
        v = operator.index(value)
    except TypeError:
        raise QueryError(BAD_INTEGER.format(name=name, low=low, value=value)) from None
    if v < low:
        raise QueryError(BAD_INTEGER.format(name=name, low=low, value=value))
    return v


def _sizes(m: Any, n0: Any, n1: Any, low: int = 3) -> tuple[int, int, int, int]:
    """(m, s, big, n): the smaller and larger group sizes and n = n0 + n1 >= low."""
    m = _int("m", m, 1)
    try:
        n0, n1 = operator.index(n0), operator.index(n1)
    except TypeError:
        raise QueryError(BAD_SIZES.format(n0=n0, n1=n1, low=low)) from None
    if n0 < 1 or n1 < 1 or n0 + n1 < low:
        raise QueryError(BAD_SIZES.format(n0=n0, n1=n1, low=low))
    return m, min(n0, n1), max(n0, n1), n0 + n1


def _beta(beta: Any) -> float:
    try:
        b = float(beta)
    except (TypeError, ValueError):
        raise QueryError(BAD_BETA.format(value=beta)) from None
    if not (math.isfinite(b) and b > 0.0):
        raise QueryError(BAD_BETA.format(value=beta))
    return b


def _g(n: int) -> float:
    """Worst-case local sensitivity of one SP answer: 1/2 + 1/(n - 1) (Thm. 5)."""
    return 0.5 + 1.0 / (n - 1)


def _abs_factor(n: int) -> float:
    """LS_|SP| / LS_SP = n/(n + 1) at every audit set (module docstring)."""
    return n / (n + 1.0)


# -- global sensitivity (Laplace mechanism, Thm. 5, 6 and App. C) ----------------------------


def _slice(metric: str, name: str, label: int, value: Any, n: int) -> int:
    if value is None:
        raise QueryError(SLICE_REQUIRED.format(metric=metric, name=name, label=label))
    v = _int(name, value, 2)
    if v > n:
        raise QueryError(SLICE_TOO_LARGE.format(name=name, value=v, n=n))
    return v


def global_sensitivity(metric: str, m: int, n: int, *, n_pos: int | None = None,
                       n_neg: int | None = None) -> float:
    """l1 global sensitivity of the m answers of ``metric`` (Def. 4.2).

    A maximum over neighbouring audit sets in the universe D where the metric is
    defined, and over every H in [0, 1]^{m x n}. It depends only on public
    quantities (m, n and the label counts), never on the group sizes.

    Parameters
    ----------
    metric : str
        One of :data:`GLOBAL_METRICS`.
    m : int
        Number of models (answers) in the query, >= 1.
    n : int
        Audit set size, >= 2.
    n_pos, n_neg : int, optional
        Numbers of audit individuals with y = 1 and y = 0 (>= 2); ``eo`` and
        ``abs_eo`` need ``n_pos``, ``pe`` needs ``n_neg``, ``eodds`` both.

    Returns
    -------
    float
        - ``sp``: m/2 + m/(n-1) (Thm. 5; equal to the exhaustive maximum).
        - ``abs_sp``: m n / (2 (n-1)) (corrects Thm. 6's m/2, which is too small).
        - ``eo``: m/2 + m/(n_pos - 1); ``pe``: m/2 + m/(n_neg - 1) (Thm. 5 on the
          slice; the paper's m/2 + m/(n-1) for EO is too small).
        - ``abs_eo``: m n_pos / (2 (n_pos - 1)).
        - ``eodds``: m max(n_pos/(2(n_pos-1)), n_neg/(2(n_neg-1))).
        - ``cov``: m (n-1)/n^2.

    Raises
    ------
    QueryError
        For ``prp`` or an unknown metric (:data:`NOT_SUPPORTED`, listing the
        supported ones), a bad count (:data:`BAD_INTEGER`), or a missing or
        oversized slice count (:data:`SLICE_REQUIRED`, :data:`SLICE_TOO_LARGE`).
    """
    if metric not in GLOBAL_METRICS:
        raise QueryError(NOT_SUPPORTED.format(what="a global sensitivity", metric=metric,
                                              why=PRP_WHY if metric == "prp" else "",
                                              supported=", ".join(GLOBAL_METRICS)))
    m = _int("m", m, 1)
    n = _int("n", n, 2)
    if metric == "sp":
        return m * _g(n)
    if metric == "abs_sp":
        return m * n / (2.0 * (n - 1))
    if metric == "cov":
        return m * (n - 1) / float(n * n)
    if metric in ("eo", "abs_eo", "eodds"):
        k1 = _slice(metric, "n_pos", 1, n_pos, n)
    if metric in ("pe", "eodds"):
        k0 = _slice(metric, "n_neg", 0, n_neg, n)
    if metric == "eo":
        return m * _g(k1)
    if metric == "pe":
        return m * _g(k0)
    if metric == "abs_eo":
        return m * k1 / (2.0 * (k1 - 1))
    # eodds: only one slice changes per neighbour and max(., c) is 1-Lipschitz
    return m * max(k1 / (2.0 * (k1 - 1)), k0 / (2.0 * (k0 - 1)))


def paper_global_sensitivity(metric: str, m: int, n: int) -> float:
    """The global sensitivities as printed (Thm. 5, Thm. 6 and Sec. 4.1), for comparison only.

    ``sp`` and ``eo``: m/2 + m/(n-1); ``abs_sp`` and ``abs_eo``: m/2. Only ``sp``
    is correct; see :func:`global_sensitivity`.
    """
    m, n = _int("m", m, 1), _int("n", n, 2)
    if metric in ("sp", "eo"):
        return m * _g(n)
    if metric in ("abs_sp", "abs_eo"):
        return m / 2.0
    raise QueryError(NOT_SUPPORTED.format(what="a printed global sensitivity", metric=metric, why="",
                                          supported="sp, abs_sp, eo, abs_eo"))


# -- local sensitivity and its maximum at distance k (Lemma 5) -------------------------------


def local_sensitivity_sp(m: int, n0: int, n1: int) -> float:
    """Local l1 sensitivity of m SP answers at an audit set with group sizes (n0, n1), Eq. (8).

    Moving j from a group of size p >= 2 to one of size q changes one SP answer by
    at most 1/p + 1/(q + 1) (App. C/A.4, cases 1-4, maximised over H); the
    smaller group gives the larger value. With s = min(n0, n1), l = max(n0, n1):
    m (1/s + 1/(l + 1)) for s >= 2 and m (1/2 + 1/(n - 1)) for s = 1 (then only
    the larger group can lose a member without emptying a group).

    Raises
    ------
    QueryError
        Unless n0, n1 >= 1 and n0 + n1 >= 3 (:data:`BAD_SIZES`).
    """
    m, s, big, n = _sizes(m, n0, n1)
    return m * (1.0 / s + 1.0 / (big + 1) if s >= 2 else _g(n))


def local_sensitivity_abs_sp(m: int, n0: int, n1: int) -> float:
    """Local l1 sensitivity of m |SP| answers: n/(n + 1) times :func:`local_sensitivity_sp`.

    Moving j from a group of size p to one of size q changes |SP| by at most
    n / (p (q + 1)) (attained with SP' = 0 and one fractional entry of h). The
    paper's App. D.4 value m/N0 (:func:`paper_local_sensitivity_abs_sp`) is
    smaller whenever N0 >= 2, so it is not a bound.
    """
    m, s, big, n = _sizes(m, n0, n1)
    return _abs_factor(n) * local_sensitivity_sp(m, s, big)


def max_local_sensitivity_sp(m: int, n0: int, n1: int, k: int) -> float:
    """A^(k): the largest local sensitivity of m SP answers within distance k (Lemma 5).

    m (1/(s - k) + 1/(l + k + 1)) while s - k >= 2 (the k flips move members of
    the smaller group over), m (1/2 + 1/(n - 1)) beyond. Distances are "at most
    k", as in NRS Def. 3.1; the paper's "exactly k" gives the same smooth
    sensitivity.
    """
    m, s, big, n = _sizes(m, n0, n1)
    k = _int("k", k, 0)
    if s - k >= 2:
        return m * (1.0 / (s - k) + 1.0 / (big + k + 1))
    return m * _g(n)


def max_local_sensitivity_abs_sp(m: int, n0: int, n1: int, k: int) -> float:
    """A^(k) for |SP|: n/(n + 1) times :func:`max_local_sensitivity_sp`."""
    m, s, big, n = _sizes(m, n0, n1)
    return _abs_factor(n) * max_local_sensitivity_sp(m, s, big, k)


# -- smooth sensitivity (Thm. 7, 8; App. D.3, D.4) -------------------------------------------


def smooth_sensitivity_sp(m: int, n0: int, n1: int, beta: float) -> float:
    """beta-smooth sensitivity of m SP answers (Def. 4.3, proof of Thm. 7).

    ``max(m/(l + 1) + m/s, e^{-(s - 2) beta} (m/(n - 1) + m/2))`` with
    s = min(n0, n1), l = max(n0, n1) (the paper writes N0, N1 and assumes
    N0 <= N1), and ``m/2 + m/(n - 1)`` when s = 1. Exact (equal to the
    exhaustive maximum of e^{-beta d(x, y)} LS(y)), hence beta-smooth.

    Parameters
    ----------
    m : int
    n0, n1 : int
        Group sizes of the actual audit set (>= 1 each, n0 + n1 >= 3).
    beta : float
        Smoothing parameter > 0: epsilon/(6m) for Thm. 7, epsilon/(4(m + ln(2/delta)))
        for Thm. 8.
    """
    m, s, big, n = _sizes(m, n0, n1)
    beta = _beta(beta)
    if s == 1:
        return m * _g(n)
    return max(m * (1.0 / s + 1.0 / (big + 1)), math.exp(-(s - 2) * beta) * m * _g(n))


def smooth_sensitivity_abs_sp(m: int, n0: int, n1: int, beta: float) -> float:
    """beta-smooth sensitivity of m |SP| answers: n/(n + 1) times :func:`smooth_sensitivity_sp`.

    = max(m n / (s (l + 1)), e^{-(s - 2) beta} m n / (2 (n - 1))) for s >= 2.
    App. D.4 prints max(m/N0, m e^{-(N0 - 2) beta}/2), which is below the local
    sensitivity (:func:`paper_smooth_sensitivity_abs_sp`).
    """
    m, s, big, n = _sizes(m, n0, n1)
    return _abs_factor(n) * smooth_sensitivity_sp(m, s, big, beta)


def smooth_sensitivity(metric: str, m: int, n0: int, n1: int, beta: float) -> float:
    """Dispatch to the smooth sensitivity of ``metric`` (one of :data:`SMOOTH_METRICS`)."""
    if metric == "sp":
        return smooth_sensitivity_sp(m, n0, n1, beta)
    if metric == "abs_sp":
        return smooth_sensitivity_abs_sp(m, n0, n1, beta)
    raise QueryError(NOT_SUPPORTED.format(what="a smooth sensitivity", metric=metric, why="",
                                          supported=", ".join(SMOOTH_METRICS)))


# -- the printed formulas, for comparison ----------------------------------------------------


def paper_local_sensitivity_abs_sp(m: int, n0: int, n1: int) -> float:
    """App. D.4, step (b) at k = 0: m/N0 (too small; see :func:`local_sensitivity_abs_sp`)."""
    _int("m", m, 1)
    return m / float(_int("n0", n0, 1))


def paper_smooth_sensitivity_sp(m: int, n0: int, n1: int, beta: float) -> float:
    """Thm. 7/8 as printed, with n0, n1 taken literally: max(m/(N1+1) + m/N0, e^{-(N0-2) beta}(m/(n-1) + m/2)).

    Correct only for 2 <= N0 <= N1. For N0 > N1 it can fall below the local
    sensitivity; at N0 = 1 it is an upper bound but not beta-smooth.
    """
    m = _int("m", m, 1)
    n0, n1 = _int("n0", n0, 1), _int("n1", n1, 1)
    beta = _beta(beta)
    n = n0 + n1
    return max(m / (n1 + 1.0) + m / n0, math.exp(-(n0 - 2) * beta) * (m / (n - 1.0) + m / 2.0))


def paper_smooth_sensitivity_abs_sp(m: int, n0: int, n1: int, beta: float) -> float:
    """App. D.4 as printed: max(m/N0, m e^{-(N0-2) beta}/2) (below the local sensitivity for N0 >= 2)."""
    m = _int("m", m, 1)
    n0 = _int("n0", n0, 1)
    _int("n1", n1, 1)
    beta = _beta(beta)
    return max(m / float(n0), m * math.exp(-(n0 - 2) * beta) / 2.0)
