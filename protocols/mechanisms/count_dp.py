"""``dp-counts``: noisy group-level sufficient statistics, every metric computed from them afterwards.

Why
---
``laplace`` and the smooth protocols add noise to the metric itself, a ratio of
counts, and must price that ratio by its worst case (a group of one person):
on Adult (A = race, audit n = 1,000) the median error of ``laplace``'s SP
answer is 0.35 at epsilon = 1, 55 times that of this protocol's
(docs/protocols/dp.md, "Count-level answers"). The metrics are
simple functions of a few counts whose sensitivity is constant, so this
protocol releases the counts with noise and computes the metrics from them by
post-processing (the approach of Tumult Analytics' and OpenDP's count and sum
queries).

What is released
----------------
A query of m models and one metric reads one or two label *slices* of the
audit set: every individual for SP, |SP| and cov; y = 1 for EO and |EO|;
y = 0 for PE; both for EOdds (PRP is not answered: its denominators are sums
of predictions that a model can make as small as one person's, see
:data:`parley.protocols.dp.sensitivity.PRP_WHY`). Predictions are first put on
the public grid 2^-B (B = :data:`PREDICTION_BITS`): r_ij = round(h_ij 2^B), an
integer in [0, 2^B]; this depends on H only, and moves each group mean by at
most 2^-(B+1). For a slice I (a public index set: y is the same in
neighbouring audit sets) let

    K_i = sum_{j in I, a_j = 1} r_ij,   N = #{j in I : a_j = 1},
    T_i = sum_{j in I} r_ij,            n_I = |I|,

T_i and n_I fixed by H and y, which do not change between neighbours. The
compliance party releases the *centred* group-1 sums and the group-1 size

    D_i = K_i - c_i N + Y_i  (i = 1..m),    N + Y_0,    c_i = round(T_i / n_I),

(a one-model query under discrete Laplace releases a pair instead: "One model" below),
c_i the slice's mean prediction on the lattice (public), Y exact integer noise
(discrete Laplace or discrete Gaussian, :mod:`parley.protocols.dp.lattice`) of
scale proportional to the public S_i = max_{j in I} |r_ij - c_i|. Why centred:
SP = K/N - (T - K)/(n_I - N) = n_I (K - (T/n_I) N) / (N (n_I - N)), so with
c = T/n_I the metric is the centred sum times a function of N; an error e_N in
the size moves SP by SP e_N (n_I - 2N)/(N (n_I - N)), in proportion to SP
itself, where the plain release (K, N) moved it by e_N (mean_1/N + mean_0/(n_I - N)).
And flipping one person moves D_i by |r_ij - c_i| <= max(c_i, 2^B - c_i) (0.77 of a
prediction on Adult, where about 23 % are accepted) where it moved K_i by r_ij <= 1.
Everything else is post-processing: group 1's sum K_i = D_i + c_i N (an integer:
the release stays on the lattice), group 0's T_i - K_i and n_I - N (the answer's
``statistics``), and every metric: mean_1 = K/(N 2^B), mean_0 = (T - K)/((n_I - N) 2^B),
each clamped to [0, 1] after clamping N to [1, n_I - 1]; SP = mean_1 - mean_0, EO
and PE the same on their slice, EOdds = max(|EO|, |PE|), cov = (K/2^B)/n - (T/2^B) N / n^2
= (D/2^B)/n + O(2^-B) (:mod:`parley.protocols.metrics`); each value is finally
clamped to the metric's range. No answer is ever refused because of A.

Sensitivity
-----------
Neighbours differ in one person j's attribute (Def. 4.1 of Hamman, Chen &
Dutta, FAccT 2023). Person j lies in exactly one slice (y_j is fixed); in the
other slice nothing moves. In j's slice, flipping a_j moves r_ij between the
two groups' sums and one unit between the two sizes, so

    |K_i - K'_i| = r_ij,   |N - N'| = 1,   |D_i - D'_i| = |r_ij - c_i| <= S_i   (c_i and S_i public).

S_i is attained by the person farthest from the mean, so the bound is the
sensitivity, not a loose bound. In real units a model's centred sum moves by at
most max(c, 1 - c) in [1/2, 1]; the whole vector of m sums and the size by at most
m + 1 in l1 and sqrt(m + 1) in l2 (``laplace`` pays m times about 1/2, half the
range of each ratio, in noise scale times epsilon). A model with S_i = 0 predicts
the same for the whole slice: its D_i is 0 whatever A is and is released exactly.

Privacy (the proof)
-------------------
Pure DP, ``noise = "laplace"``. Y_i ~ DLap(tau_s S_i) on each centred sum and
Y_0 ~ DLap(tau_n) on the size, P(Y = y) proportional to exp(-|y|/tau) (CKS
Algorithm 2, :func:`~parley.protocols.dp.lattice.discrete_laplace`), with

    tau_s = m (1 + r) / (r epsilon),    tau_n = (1 + r) / epsilon,    r ~ sqrt(m / w) rational.

For every output, the likelihood ratio of the two neighbours is at most
prod exp(|shift| / tau) = exp(sum_i |r_ij - c_i|/(tau_s S_i) + 1/tau_n) <= exp(m/tau_s + 1/tau_n)
= exp(epsilon (r/(1 + r) + 1/(1 + r))) = exp(epsilon): pure epsilon-DP, exactly
(tau_s, tau_n are exact rationals and S_i, c_i integers; no floating-point step touches the noise).
The split minimises the expected error a tau_s + b tau_n of an SP (Lagrange:
tau_s / tau_n = sqrt(m b / a)) for b/a = w = :data:`SIZE_WEIGHT` = 1/8: with c the slice mean,
|dSP/dN| / (dSP/dD) = |SP| |N_1 - N_0| / n_I <= |SP|, so w is a prior on |SP| (the benchmark
found 1/8 and 1/16 best on Adult, 1/4 and 1/32 within 5 %). It depends on m and w only;
any public split gives the same guarantee.

zCDP and (epsilon, delta), ``noise = "gaussian"``. Y_i ~ N_Z(0, sigma_s^2 S_i^2),
Y_0 ~ N_Z(0, sigma_n^2), the discrete Gaussian (CKS Algorithm 3,
:func:`~parley.protocols.dp.lattice.discrete_gaussian`). For an integer shift
mu, D_alpha(N_Z(mu, sigma^2) || N_Z(0, sigma^2)) <= alpha mu^2/(2 sigma^2)
(Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential
Privacy", NeurIPS 2020: their Renyi divergence bound for an integer shift,
with equality); independent coordinates add their Renyi divergences, so the release is rho-zCDP with

    rho = sum_i (r_ij - c_i)^2 / (2 sigma_s^2 S_i^2) + 1 / (2 sigma_n^2) <= m/(2 sigma_s^2) + 1/(2 sigma_n^2),

sigma_s = q sigma_n, q^2 ~ (m w)^(2/3) rational (the Lagrange split
sigma_s^3 / sigma_n^3 = m b / a), sigma_n^2 = (m/q^2 + 1)/(2 rho): equality, exactly. rho is the
largest value whose conversion to (epsilon, delta)-DP (CKS Prop. 12 in
arXiv:2004.00010 v4, as implemented by Google's dp-accounting ``RdpAccountant`` for a
``ZCDpEvent``) stays within the protocol's (epsilon, delta)
(:func:`rho_for`). Each answer records its rho, so a ledger can compose the
Gaussian answers in zCDP (:mod:`parley.protocols.accounting`), which is much
tighter than adding their epsilons.

One model, discrete Laplace: the pair (K, Z)
--------------------------------------------
For a query of one model (m = 1) under ``noise = "laplace"`` a slice is released differently (unless the
model is constant on it, S = 0, when the centred sum is exact and the centred release is kept). With
r_j in lattice units and

    K = sum_{j in I, a_j = 1} r_j,     Z = sum_{j in I, a_j = 1} (2^B - r_j) = 2^B N - K,

the compliance party releases K + Y_1 and Z + Y_2, Y_1, Y_2 independent with P(Y = y) proportional to
exp(-|y|/t) on a lattice of values K and Z can take ("The pair's noise lattice" below), t = 2^B / epsilon (an
exact rational, :func:`pair_scale`). Group 1's size N = (K + Z)/2^B (a multiple of 2^-B, no longer
an integer), group 0's sum T - K and size n_I - N, and every metric are post-processing.

Privacy. Flipping person j moves (K, Z) by +-(r_j, 2^B - r_j), whose l1 norm is exactly 2^B for every
person. For any output (k, z) the likelihood ratio of the two neighbours is

    exp((|k - K'| - |k - K| + |z - Z'| - |z - Z|)/t) <= exp((|K - K'| + |Z - Z'|)/t) = exp(2^B/t) = exp(epsilon),

by the triangle inequality: pure epsilon-DP with the whole epsilon on both coordinates and no split.
This is the K-norm mechanism of Hardt & Talwar ("On the Geometry of Differential Privacy", STOC 2010)
on the lattice: the moves +-(r, 2^B - r), r in [0, 2^B], span the segments between (2^B, 0) and (0, 2^B)
and their negatives, whose convex hull is exactly the l1 ball of radius 2^B; the K-norm density
exp(-epsilon ||y||_K) for that ball factorises into two independent Laplace laws of scale 2^B/epsilon.
The centred release, in the same coordinates, splits the budget between D = K - cN and N. On the
compare's audit set (Adult, n = 500) and the honest audit set (n = 1,000), the median error of SP, EO
and PE at epsilon 0.5 to 4 falls 1.12-1.54 times (SP 1.16-1.47; tests/benchmarks/bench_count_dp.py,
400 releases per cell; docs/protocols/dp.md).

Gaussian variant, measured and not used: N_Z(0, sigma^2) on both K and Z, the move's l2 norm
sqrt(r^2 + (2^B - r)^2) <= 2^B, so rho = 2^(2B)/(2 sigma^2). At delta = 1e-6 (the benchmark, 400
releases) its median SP error is larger than the centred Gaussian release's in every cell: at epsilon
0.5 / 1 / 4, 0.104 / 0.0555 / 0.0156 against 0.0963 / 0.0517 / 0.0133 (n = 500) and 0.0674 / 0.0353 /
0.0100 against 0.0587 / 0.0334 / 0.0077 (n = 1,000); EO and PE move by -13 % to +9 %. The
l2 hull of the moves is a segment pair, not the l2 ball: the pair spends rho on a direction no flip
takes. The Gaussian variant keeps the centred release at every m.

The pair's noise lattice. Every r_j of the slice is a multiple of g = gcd(2^B, r_1..r_n) (public: H and the
slice only, :func:`support_steps`; g = 2^B for hard labels), so K and Z lie on the g-lattice and so does every
move. Y_1, Y_2 are drawn on the lattice sZ of a step s dividing g, with the decay above: P(Y = y) proportional
to exp(-|y|/t) for y in sZ, i.e. s x DLap(t/s). The proof holds word for word: for every output k, k - K and
k - K' lie on sZ, and the triangle inequality is unchanged. The step is public (epsilon, g and the parameter
``optimise`` only, :func:`pair_step`): among s = g/2^i the one whose |Y| has the smallest median (``optimise =
"median"``, the default: the compare ranks by median error) or the smallest mean (``"mean"``: mean |Y| =
s / sinh(epsilon s / 2^B) decreases in s, so s = g, for hard labels the geometric mechanism of Ghosh,
Roughgarden & Sundararajan, STOC 2009). The median of |Y| is m s for the smallest integer m with
P(|Y| <= m s) = 1 - 2 alpha^(m+1)/(1 + alpha) >= 1/2, alpha = exp(-epsilon s / 2^B): for hard labels the
rule takes s = g at epsilon = 0.5, 2 and 4 (median |Y| of g, 0 and 0) and s = g/2 at epsilon = 1 (median g/2,
where g gives g and the fine lattice of the release before, s = 1, ln 2 g). Any s > 1 has a smaller mean |Y|
than the fine lattice. Measured exactly (both noises enumerated; tests/benchmarks/bench_count_dp.py,
docs/protocols/dp.md "The pair's noise lattice"), the metric's median and mean errors are below the fine
lattice's (400,000 draws) in all 18 cells of SP, EO and PE at epsilon 0.5, 1 and 4 on two Adult inputs, and
its 90th percentile in 17 (1 % above in one); at epsilon 4, 92-93 % of the answers are exact.

Why m > 1 keeps the centred release. For m models one flip moves the 2m coordinates (K_i, Z_i) by
l1 m 2^B: the hull is no longer an l1 ball of the per-model size (it is the hull of the m-fold diagonal
segments), independent DLap(m 2^B/epsilon) per coordinate is what a product law can do, and every model
pays m times its one-model noise on both of its coordinates, where the centred release shares one size.
Measured (the benchmark's ``few_models``: Laplace, epsilon = 1, models at the score quantiles 0.5..0.9,
400 releases; the centred release's median error over the per-model pairs', above 1 where the pairs win):
SP 0.97 / 0.99 / 1.01 / 0.93 / 0.93 at m = 2 / 3 / 4 / 6 / 10 (n = 500) and 1.08 / 1.07 / 1.02 / 0.97 /
0.94 (n = 1,000); EO 1.35 to 0.96 and PE 1.12 to 1.02. So the pairs lose on SP from m = 6 on, and win
by 2-35 % on EO and PE at m <= 4; SP is a draw there. A per-model pair at m > 1 would need one size per
model in the answer's ``statistics``, where parley's readers (the likelihood attack, ``mpc-dp``) read
one shared size: not built; the public rule is m = 1.

Both variants draw only from the numpy Generator's bits (the compliance party's secret stream): same
secrets, same release.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from parley.protocols.accounting import RHO_KEY
from parley.protocols.base import AuditSet, MetricProtocol, MetricQuery, ProtocolParams, register_protocol
from parley.protocols.budget import ApproxDP, Budget, PureDP
from parley.protocols.errors import QueryError
from parley.protocols.metrics import METRICS

__all__ = ["PREDICTION_BITS", "SIZE_WEIGHT", "COUNT_METRICS", "CountNoiseParams", "CountParams", "CountProtocol",
           "NoiseScales", "SLICE_TOO_SMALL", "PREDICTIONS_OUTSIDE", "GAUSSIAN_NEEDS_DELTA", "LAPLACE_IS_PURE", "NO_RHO",
           "slices_of",
           "statistics", "centres", "noise_scales", "CENTRED", "PAIR", "release_kinds", "pair_scale",
           "on_lattice", "support_steps", "pair_step", "metrics_from_statistics", "rho_for"]

#: Predictions are rounded to multiples of 2^-PREDICTION_BITS before they are summed (moves a mean by <= 2^-21).
PREDICTION_BITS = 20
#: The metrics computed from counts (PRP is not: its denominators are sums of one model's predictions).
COUNT_METRICS: tuple[str, ...] = ("sp", "abs_sp", "eo", "abs_eo", "pe", "eodds", "cov")
#: Label slices each metric reads: None = everybody, 1 = y=1, 0 = y=0.
SLICES: dict[str, tuple[int | None, ...]] = {"sp": (None,), "abs_sp": (None,), "cov": (None,), "eo": (1,),
                                             "abs_eo": (1,), "pe": (0,), "eodds": (1, 0)}

SLICE_TOO_SMALL = ("protocol 'dp-counts': metric {metric!r} needs at least 2 audit individuals{slice} "
                   "(the slice has {size}); its two groups cannot both be non-empty")
PREDICTIONS_OUTSIDE = "protocol 'dp-counts': predictions must lie in [0, 1] (the sensitivity assumes it)"
GAUSSIAN_NEEDS_DELTA = "protocol 'dp-counts': noise 'gaussian' needs delta > 0 (got delta={delta!r})"
LAPLACE_IS_PURE = "protocol 'dp-counts': noise 'laplace' is pure epsilon-DP: delta must be 0 (got delta={delta!r})"
NO_RHO = ("protocol 'dp-counts': no rho >= 1e-30 converts to (epsilon={epsilon!r}, delta={delta!r})-DP under "
          "dp-accounting's conversion: raise epsilon or delta, or use noise 'laplace'")

#: The weight w of size noise against centred-sum noise in the split (public, fixed): with the sums centred at
#: the slice mean, an error in the size moves SP by at most |SP| times what the same error in a sum does, so w
#: is a prior on |SP| (module docstring, "Privacy").
SIZE_WEIGHT = Fraction(1, 8)
#: Rational approximations of the split ratios use this denominator (any public ratio keeps the guarantee).
_SPLIT_DEN = 1 << 10


class CountNoiseParams(ProtocolParams):
    """The privacy loss per query and the noise family of a count release (``dp-counts``, ``mpc-dp``)."""

    epsilon: float = Field(gt=0.0, allow_inf_nan=False, description="privacy loss per query")
    delta: float = Field(default=0.0, ge=0.0, lt=1.0, description="0 for 'laplace'; > 0 for 'gaussian'")
    noise: Literal["laplace", "gaussian"] = Field(
        default="laplace", description="'laplace': discrete Laplace, pure epsilon-DP; 'gaussian': discrete Gaussian, "
        "rho-zCDP with rho calibrated to (epsilon, delta)")

    @model_validator(mode="after")
    def _delta_matches_noise(self) -> CountNoiseParams:
        if self.noise == "gaussian" and self.delta == 0.0:
            raise ValueError(GAUSSIAN_NEEDS_DELTA.format(delta=self.delta))
        if self.noise == "laplace" and self.delta != 0.0:
            raise ValueError(LAPLACE_IS_PURE.format(delta=self.delta))
        if self.noise == "gaussian":
            rho_for(self.epsilon, self.delta)  # refused here, not at the first release, when no rho fits
        return self


class CountParams(CountNoiseParams):
    """Parameters of ``dp-counts``: the noise of :class:`CountNoiseParams` and the pair release's lattice rule."""

    optimise: Literal["median", "mean"] = Field(
        default="median", description="the statistic of |noise| the one-model pair release's noise lattice "
        "minimises: 'median' (the compare's measure of utility) or 'mean' (the lattice of the counts' own values)")


def slices_of(metric: str, y: np.ndarray) -> list[np.ndarray]:
    """The public index masks of the label slices ``metric`` reads; refuses a slice with fewer than 2 people.

    The condition depends on y only, identical in neighbouring audit sets: the refusal says nothing about A.
    """
    y = np.asarray(y)
    masks = []
    for label in SLICES[metric]:
        mask = np.ones(y.shape, dtype=bool) if label is None else (y == label)
        size = int(mask.sum())
        if size < 2:
            where = "" if label is None else f" with y={label}"
            raise QueryError(SLICE_TOO_SMALL.format(metric=metric, slice=where, size=size))
        masks.append(mask)
    return masks


def on_lattice(predictions: np.ndarray) -> np.ndarray:
    """r_ij = round(h_ij 2^B), int64: the one rounding every statistic, centre and support step is computed from."""
    return np.rint(np.asarray(predictions, dtype=np.float64) * float(1 << PREDICTION_BITS)).astype(np.int64)


def statistics(predictions: np.ndarray, a: np.ndarray, masks: list[np.ndarray]
               ) -> tuple[list[list[int]], list[int], list[list[int]], list[int]]:
    """Exact integer statistics of each slice: (K, N, T, n_I) as in the module docstring.

    K[s][i] and T[s][i] are sums of r_ij = round(h_ij 2^B) over group 1 / over the
    slice; N[s] the group-1 size, n_I[s] the slice size. Python integers, exact.
    """
    h = np.asarray(predictions, dtype=np.float64)
    if not (np.all(h >= 0.0) and np.all(h <= 1.0)):  # NaN fails too; the sensitivity needs 0 <= h <= 1
        raise QueryError(PREDICTIONS_OUTSIDE)
    r = on_lattice(h)
    a1 = np.asarray(a) == 1
    K, N, T, sizes = [], [], [], []
    for mask in masks:
        K.append([int(v) for v in r[:, mask & a1].sum(axis=1)])
        T.append([int(v) for v in r[:, mask].sum(axis=1)])
        N.append(int((mask & a1).sum()))
        sizes.append(int(mask.sum()))
    return K, N, T, sizes


def centres(predictions: np.ndarray, masks: list[np.ndarray]) -> tuple[list[list[int]], list[list[int]]]:
    """The public centre c_i = round(T_i / n_I) and sensitivity S_i = max_j |r_ij - c_i| of every slice and model.

    Lattice units (2^-B); both depend on H and the slice only (fixed between neighbours). Python integers.
    """
    r = on_lattice(predictions)
    C, S = [], []
    for mask in masks:
        rs = r[:, mask]
        c = [(2 * int(t) + int(rs.shape[1])) // (2 * int(rs.shape[1])) for t in rs.sum(axis=1)]  # round half up
        C.append(c)
        S.append([max(int(hi) - ci, ci - int(lo)) for ci, lo, hi in zip(c, rs.min(axis=1), rs.max(axis=1),
                                                                         strict=True)])
    return C, S


class NoiseScales(dict[str, Fraction]):
    """The public noise parameters of one release, exact rationals.

    Keys: ``sum`` -- tau_s (Laplace) or sigma_s^2 (Gaussian) per unit of sensitivity: model i's centred sum gets
    tau_s S_i or sigma_s^2 S_i^2 in lattice units (2^-B) --, ``size`` -- tau_n or sigma_n^2 (people) --, and ``rho``
    (Gaussian).
    """


@lru_cache(maxsize=256)
def rho_for(epsilon: float, delta: float) -> float:
    """The largest rho (to 1e-9 relative) whose rho-zCDP converts to (epsilon, delta)-DP under dp-accounting.

    The conversion is ``RdpAccountant`` on a ``ZCDpEvent(rho)`` (CKS 2020, Prop. 12 over the accountant's
    orders), monotone in rho, so bisection finds it between a rho that converts within epsilon and one
    that does not (both checked); the result is shrunk by 1e-9 relative to stay inside. A ValueError
    (:data:`NO_RHO`) when not even rho = 1e-30 fits: the accountant's orders cannot certify so small an
    epsilon at that delta.
    """
    from dp_accounting import ZCDpEvent
    from dp_accounting.rdp import RdpAccountant

    def eps_of(rho: float) -> float:
        accountant = RdpAccountant()
        accountant.compose(ZCDpEvent(rho))
        return float(accountant.get_epsilon(delta))

    low, high = 1e-12, 1.0
    while eps_of(low) > epsilon:  # a small epsilon: the bracket starts lower
        if low < 1e-30:
            raise ValueError(NO_RHO.format(epsilon=epsilon, delta=delta))
        low, high = low / 16.0, low
    while eps_of(high) <= epsilon:
        low, high = high, high * 4.0
    for _ in range(100):
        mid = math.sqrt(low * high)
        if eps_of(mid) <= epsilon:
            low = mid
        else:
            high = mid
        if high / low < 1 + 1e-10:
            break
    return low * (1 - 1e-9)


def noise_scales(m: int, params: CountNoiseParams) -> NoiseScales:
    """Per-coordinate noise of a release of m models' sums and one size per slice (public: m and params only)."""
    eps = Fraction(params.epsilon)
    if params.noise == "laplace":
        # r ~ sqrt(m / w), rational: tau_s / tau_n = m / r = sqrt(m w), the Lagrange optimum for a = 1, b = w
        r = Fraction(math.isqrt(m * _SPLIT_DEN * _SPLIT_DEN * SIZE_WEIGHT.denominator // SIZE_WEIGHT.numerator),
                     _SPLIT_DEN)
        tau_s, tau_n = m * (1 + r) / (r * eps), (1 + r) / eps  # m/tau_s + 1/tau_n = epsilon exactly
        return NoiseScales(sum=tau_s, size=tau_n, ratio=r)
    rho = Fraction(rho_for(params.epsilon, params.delta))
    # q^2 ~ (m w)^(2/3), rational, > 0: sigma_s / sigma_n = (m w)^(1/3), the Lagrange optimum for a = 1, b = w
    q2 = Fraction(max(1, round((m * float(SIZE_WEIGHT)) ** (2.0 / 3.0) * _SPLIT_DEN)), _SPLIT_DEN)
    var_n = (m / q2 + 1) / (2 * rho)  # m/(2 q2 var_n) + 1/(2 var_n) = rho exactly
    return NoiseScales(sum=q2 * var_n, size=var_n, rho=rho, ratio=q2)


#: The two releases of a slice: the centred sums and one size, or (one model, Laplace) the pair (K, Z).
CENTRED, PAIR = "centred", "sum-pair"


def release_kinds(m: int, params: CountNoiseParams, sensitivities: Sequence[Sequence[int]]) -> list[str]:
    """Which release each slice gets (public: m, the noise family and the public S_i only).

    The pair (K, Z) for one model under discrete Laplace when the model is not constant on the slice
    (S > 0); the centred release otherwise (several models, the Gaussian variant, or a constant model,
    whose centred sum is exact and whose metric is then noise-free).
    """
    return [PAIR if m == 1 and params.noise == "laplace" and row[0] > 0 else CENTRED for row in sensitivities]


def pair_scale(params: CountNoiseParams) -> Fraction:
    """The discrete Laplace scale 2^B / epsilon (lattice units, exact) of both coordinates of the pair release."""
    return Fraction(1 << PREDICTION_BITS) / Fraction(params.epsilon)


def support_steps(predictions: np.ndarray, masks: list[np.ndarray]) -> list[int]:
    """g = gcd(2^B, r_j over the slice) of the first model, per slice (lattice units): K and Z lie on the g-lattice.

    Public: H and the slice only. 2^B for hard labels, including a model constant at 0 or 1 on the slice.
    """
    r = on_lattice(np.asarray(predictions)[:1])[0]  # the first model only
    return [math.gcd(1 << PREDICTION_BITS, int(np.gcd.reduce(r[mask]))) for mask in masks]


@lru_cache(maxsize=1024)  # pure, and asked once per one-model answer
def pair_step(epsilon: float, support: int, optimise: str = "median") -> int:
    """The step s (lattice units) of the pair's noise lattice.

    Among s = support / 2^i, the one with the smallest median (or mean) of |Y|, Y on sZ with
    P(Y = y) proportional to exp(-|y| epsilon / 2^B); the coarsest on a tie.

    Public: epsilon, the support step g (:func:`support_steps`) and ``optimise`` only. Any s dividing g keeps the
    pair's proof (module docstring, "The pair's noise lattice"); floating point only chooses s, it never touches
    the noise. The mean |Y| = s / sinh(epsilon s / 2^B) decreases in s: ``"mean"`` gives s = g.
    """
    if optimise == "mean":
        return support
    best, best_median, step = support, math.inf, support
    while step >= 1:
        alpha = math.exp(-epsilon * step / (1 << PREDICTION_BITS))
        # P(|Y| <= m s) = 1 - 2 alpha^(m+1)/(1 + alpha) >= 1/2  <=>  alpha^(m+1) <= (1 + alpha)/4
        if alpha <= (1 + alpha) / 4:
            median = 0.0
        elif alpha < 1.0:
            median = (math.ceil(math.log((1 + alpha) / 4) / math.log(alpha)) - 1) * step
        else:  # epsilon s / 2^B below the float grid: no median to compare
            median = math.inf
        if median < best_median:
            best, best_median = step, median
        step //= 2
    return best


def _draw(noise: str, scale: Fraction, sensitivity: int, bits: Any) -> int:
    """One exact integer draw: DLap(scale x sensitivity) or N_Z(0, scale x sensitivity^2); 0 when nothing can move."""
    from parley.protocols.dp.lattice import discrete_gaussian, discrete_laplace

    if sensitivity == 0:  # the coordinate is the same in every audit set: nothing to hide
        return 0
    value = scale * (sensitivity if noise == "laplace" else sensitivity * sensitivity)
    if noise == "laplace":
        return discrete_laplace(bits, value.numerator, value.denominator)
    return discrete_gaussian(bits, value.numerator, value.denominator)


def metrics_from_statistics(metric: str, K: Sequence[Sequence[float]] | np.ndarray, N: Sequence[float] | np.ndarray,
                            T: Sequence[Sequence[float]] | np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Post-processing: the metric of every model from (noisy) group-1 sums K, sizes N and public T, n_I.

    Sums in prediction units (K/2^B), one row per slice; with the exact statistics it is the exact metric of
    the rounded predictions. Sizes are clamped to [1, n_I - 1], means to [0, 1], the result to the range.
    """
    gaps = []
    for s, n_slice in enumerate(sizes):
        k, t = np.asarray(K[s], dtype=np.float64), np.asarray(T[s], dtype=np.float64)
        n1 = min(max(float(N[s]), 1.0), n_slice - 1.0)
        if metric == "cov":  # cov = mean(h a) - mean(h) mean(a) = K/n - T N/n^2 (the slice is everybody)
            n = float(n_slice)
            gaps.append(k / n - t * float(N[s]) / (n * n))
            continue
        mean1 = np.clip(k / n1, 0.0, 1.0)
        mean0 = np.clip((t - k) / (n_slice - n1), 0.0, 1.0)
        gaps.append(mean1 - mean0)
    if metric == "eodds":
        values = np.maximum(np.abs(gaps[0]), np.abs(gaps[1]))
    elif metric in ("abs_sp", "abs_eo"):
        values = np.abs(gaps[0])
    else:
        values = gaps[0]
    low, high = METRICS[metric].range
    return np.clip(values, low, high)


@register_protocol
class CountProtocol(MetricProtocol[CountParams]):
    """Count-level DP: noisy group sums and sizes (discrete Laplace or Gaussian), metrics by post-processing."""

    name = "dp-counts"
    Params = CountParams
    metrics = COUNT_METRICS

    def cost(self, query: MetricQuery) -> Budget:
        """epsilon (Laplace) or (epsilon, delta) (Gaussian) per query, whatever m: one release of m + 1 counts."""
        if self.params.noise == "laplace":
            return PureDP(epsilon=self.params.epsilon)
        return ApproxDP(epsilon=self.params.epsilon, delta=self.params.delta)

    def answer(self, query: MetricQuery, audit: AuditSet, rng: np.random.Generator) -> dict[str, Any]:
        """Release the noisy statistics and the metric computed from them; never refused because of A."""
        from parley.protocols.base import METRIC_NOT_ANSWERED
        from parley.protocols.dp.lattice import RandomBits, discrete_laplace

        if query.metric not in self.metrics:
            raise QueryError(METRIC_NOT_ANSWERED.format(name=self.name, allowed=", ".join(self.metrics),
                                                          metric=query.metric))
        masks = slices_of(query.metric, audit.y)
        K, N, T, sizes = statistics(query.predictions, audit.a, masks)
        C, S = centres(query.predictions, masks)
        scales = noise_scales(query.m, self.params)
        kinds = release_kinds(query.m, self.params, S)
        tau_pair = pair_scale(self.params)
        steps = [1] * len(masks)  # the pair's noise step per slice; a centred slice's noise is on the 2^-B lattice
        if PAIR in kinds:  # one model: its support steps (a query of m > 1 models never releases a pair)
            steps = [pair_step(self.params.epsilon, g, self.params.optimise) if kind == PAIR else 1
                     for kind, g in zip(kinds, support_steps(query.predictions, masks), strict=True)]
        bits = RandomBits(rng)
        noisy_k: list[list[int]] = []
        noisy_n: list[Fraction] = []
        for s in range(len(masks)):
            if kinds[s] == PAIR:
                # one model: K + Y_1 and Z + Y_2 with Z = 2^B N - K, Y_1, Y_2 independent on the lattice of step
                # s with decay exp(-|y| epsilon / 2^B), i.e. s x DLap(tau / s); N = (K + Z) / 2^B is
                # post-processing (module docstring, "One model" and "The pair's noise lattice")
                per_step = tau_pair / steps[s]
                k_noisy = K[s][0] + steps[s] * discrete_laplace(bits, per_step.numerator, per_step.denominator)
                z_noisy = ((N[s] << PREDICTION_BITS) - K[s][0]
                           + steps[s] * discrete_laplace(bits, per_step.numerator, per_step.denominator))
                noisy_k.append([k_noisy])
                noisy_n.append(Fraction(k_noisy + z_noisy, 1 << PREDICTION_BITS))
                continue
            # the centred sums D_i = K_i - c_i N, then the size; K_i = D_i + c_i N is post-processing
            noisy_d = [k - c * N[s] + _draw(self.params.noise, scales["sum"], sens, bits)
                       for k, c, sens in zip(K[s], C[s], S[s], strict=True)]
            size = N[s] + _draw(self.params.noise, scales["size"], 1, bits)
            noisy_n.append(Fraction(size))
            noisy_k.append([d + c * size for d, c in zip(noisy_d, C[s], strict=True)])
        unit = float(1 << PREDICTION_BITS)
        k_units = np.array([[float(v) for v in row] for row in noisy_k]) / unit  # exact: |v| < 2^53, unit 2^B
        t_units = np.array([[float(v) for v in row] for row in T]) / unit
        n_float = [float(v) for v in noisy_n]  # exact: integers or (K + Z)/2^B with |K + Z| < 2^53
        values = metrics_from_statistics(query.metric, k_units, n_float, t_units, sizes)
        paired = PAIR in kinds
        payload: dict[str, Any] = {
            "metric": query.metric, "query_id": query.query_id, "values": values,
            "epsilon": self.params.epsilon, "noise": f"discrete-{self.params.noise}",
            # per slice: (group 0, group 1) noisy sums of each model and noisy sizes; group 0 = public total - group 1
            "statistics": {
                "slices": ["all" if label is None else f"y={label}" for label in SLICES[query.metric]],
                "sums": np.stack([np.stack([t_units[s] - k_units[s], k_units[s]], axis=1)
                                  for s in range(len(masks))]),
                # group sizes: integers for the centred release, multiples of 2^-B for the pair release
                "sizes": np.array([[sizes[s] - n_float[s], n_float[s]] for s in range(len(masks))],
                                  dtype=np.float64 if paired else np.int64),
            },
            "release": list(kinds),
            # the released centred sums are group 1's sums minus centre x group 1's size (real units, exact)
            "centre": np.array([[float(c) for c in row] for row in C]) / unit,
            "resolution": 1.0 / unit,
            "out_of_range": "clamp",
        }
        sens = np.array([[float(v) for v in row] for row in S]) / unit  # real units, per slice and model
        if self.params.noise == "laplace" and paired:
            # per slice: the scale of the released sum (K for a pair slice, D for a centred one) and of the
            # released complement Z (pair slices; 0 for a centred slice), the step of the noise's lattice,
            # real units; "size" if a slice is centred
            pair = float(tau_pair) / unit
            payload["scale"] = {
                "sum": np.array([[pair] if kinds[s] == PAIR else list(float(scales["sum"]) * sens[s])
                                 for s in range(len(masks))]),
                "complement": np.array([[pair if kinds[s] == PAIR else 0.0] for s in range(len(masks))]),
                "step": np.array([[steps[s] / unit] for s in range(len(masks))])}
            if CENTRED in kinds:
                payload["scale"]["size"] = float(scales["size"])
        elif self.params.noise == "laplace":  # the scale of each centred sum, and of the size
            payload["scale"] = {"sum": float(scales["sum"]) * sens, "size": float(scales["size"])}
        else:
            payload["delta"] = self.params.delta
            payload[RHO_KEY] = float(scales["rho"])
            payload["sigma"] = {"sum": math.sqrt(scales["sum"]) * sens, "size": math.sqrt(scales["size"])}
        return payload
