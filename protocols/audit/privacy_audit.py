"""Empirical privacy auditing: a statistical lower bound on a mechanism's epsilon.

In the style of StatDP (Ding et al., CCS 2018) and DP-Auditorium: run the
mechanism many times on two neighbouring audit sets D and D' (they differ in
one individual's protected attribute, the paper's Def. 4.1), pick an output
event E, and bound

    epsilon >= ln( (P[M(D) in E] - delta) / P[M(D') in E] )

from below with Clopper-Pearson intervals: the lower confidence limit of the
first probability over the upper limit of the second. The event is a threshold
on a scalar statistic of the output (any fixed post-processing keeps the bound
valid), chosen on one half of the runs and evaluated on the other, so the choice
does not bias the estimate. With confidence 1 - alpha, a correct epsilon-DP
mechanism yields a bound at or below its epsilon; a bound above the claimed
epsilon is statistical evidence that the claim is false.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta as beta_dist

__all__ = ["AuditResult", "clopper_pearson", "audit_epsilon", "audit_epsilon_samples", "select_event"]

Mechanism = Callable[[np.ndarray, np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class AuditResult:
    """Lower bound on epsilon with its evidence."""

    epsilon_lower: float
    confidence: float
    runs: int
    threshold: float
    direction: str  # "above" or "below": the event is statistic > or < threshold
    p: float  # estimated P[M(D) in E]
    p_prime: float  # estimated P[M(D') in E]


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided (1 - alpha) binomial confidence interval."""
    lower = 0.0 if successes == 0 else float(beta_dist.ppf(alpha / 2, successes, trials - successes + 1))
    upper = 1.0 if successes == trials else float(beta_dist.ppf(1 - alpha / 2, successes + 1, trials - successes))
    return lower, upper


def _bound(k: int, k_prime: int, runs: int, alpha: float, delta: float) -> float:
    """ln((p_low - delta) / p'_high) with a two-sided alpha split between the two intervals."""
    p_low, _ = clopper_pearson(k, runs, alpha / 2)
    _, q_high = clopper_pearson(k_prime, runs, alpha / 2)
    if p_low - delta <= 0.0 or q_high <= 0.0:
        return 0.0
    return max(0.0, math.log((p_low - delta) / q_high))


def audit_epsilon(mechanism: Mechanism, a: np.ndarray, a_prime: np.ndarray, runs: int, alpha: float,
                  rng: np.random.Generator, statistic: Callable[[np.ndarray], np.ndarray] | None = None,
                  delta: float = 0.0, thresholds: int = 64) -> AuditResult:
    """Statistical lower bound on the epsilon of ``mechanism`` from the pair (a, a').

    Parameters
    ----------
    mechanism : callable (a, rng) -> outputs
        Runs the mechanism once on the audit set with attribute vector ``a``.
    a, a_prime : arrays
        Neighbouring attribute vectors (they should differ in one individual).
    runs : int
        Runs per data set and per half (selection and estimation).
    alpha : float
        1 - confidence of the bound.
    rng : numpy.random.Generator
        Seeds every run.
    statistic : callable, optional
        Scalar summary of an output (default: its first coordinate).
    delta : float
        The mechanism's delta (the bound subtracts it).
    thresholds : int
        Candidate thresholds tried on the selection half (quantiles of the pooled statistic).
    """
    if int(np.abs(np.asarray(a) - np.asarray(a_prime)).sum()) != 1:
        raise ValueError("the audit needs neighbouring data sets: a and a_prime must differ in exactly one place")
    stat = statistic or (lambda out: np.atleast_1d(out)[0])

    def sample(attr: np.ndarray, count: int) -> np.ndarray:
        return np.array([float(stat(mechanism(attr, rng))) for _ in range(count)])

    # Selection half: pick the threshold event with the largest bound (then the largest apparent privacy loss).
    x, x_prime = sample(a, runs), sample(a_prime, runs)
    cut, direction, swapped = select_event(x, x_prime, alpha, delta, thresholds)
    first, second = (a_prime, a) if swapped else (a, a_prime)
    # Estimation half: fresh runs, the chosen event, exact confidence limits.
    y, y_prime = sample(first, runs), sample(second, runs)
    hit: Callable[[np.ndarray], np.ndarray] = (lambda v: v > cut) if direction == "above" else (lambda v: v < cut)
    k, k_prime = int(hit(y).sum()), int(hit(y_prime).sum())
    return AuditResult(epsilon_lower=_bound(k, k_prime, runs, alpha, delta), confidence=1 - alpha, runs=runs,
                       threshold=cut, direction=direction, p=k / runs, p_prime=k_prime / runs)


def select_event(x: np.ndarray, x_prime: np.ndarray, alpha: float, delta: float,
                 thresholds: int = 64) -> tuple[float, str, bool]:
    """The threshold event of the selection half: (cut, direction, swapped); swapped: the bound is on (a', a).

    Candidate cuts are quantiles of the pooled statistic; each event is ranked by the bound it would give
    on these samples, then by the smoothed ratio (selection only: ranking by the bound avoids far-tail
    events whose counts are too small to bound anything on the fresh half).
    """
    runs, runs_prime = int(x.size), int(x_prime.size)
    cuts = np.quantile(np.concatenate([x, x_prime]), np.linspace(0.005, 0.995, thresholds))
    best: tuple[tuple[float, float], float, str, bool] = ((-np.inf, -np.inf), 0.0, "above", False)
    for cut in cuts:
        for direction in ("above", "below"):
            k = int((x > cut).sum() if direction == "above" else (x < cut).sum())
            k_prime = int((x_prime > cut).sum() if direction == "above" else (x_prime < cut).sum())
            for (kk, kp, swapped) in ((k, k_prime, False), (k_prime, k, True)):
                score = (_bound(kk, kp, min(runs, runs_prime), alpha, delta), math.log((kk + 1) / (kp + 1)))
                if score > best[0]:
                    best = (score, float(cut), direction, swapped)
    _, cut, direction, swapped = best
    return cut, direction, swapped


def audit_epsilon_samples(x: np.ndarray, x_prime: np.ndarray, y: np.ndarray, y_prime: np.ndarray, alpha: float,
                          delta: float = 0.0, thresholds: int = 64) -> AuditResult:
    """:func:`audit_epsilon` on statistics drawn beforehand.

    Selection half: x on a, x' on a'; estimation half: y on a, y' on a'; the same number of draws in each.

    The mechanism level of the two-level audit (:mod:`parley.protocols.audit.mechanism`) draws 10^5 and more
    releases per neighbour at once; the event and the bound are those of :func:`audit_epsilon`.
    """
    x, x_prime, y, y_prime = (np.asarray(v, dtype=np.float64).ravel() for v in (x, x_prime, y, y_prime))
    runs = int(y.size)
    cut, direction, swapped = select_event(x, x_prime, alpha, delta, thresholds)
    first, second = (y_prime, y) if swapped else (y, y_prime)
    hit = (first > cut, second > cut) if direction == "above" else (first < cut, second < cut)
    k, k_prime = int(hit[0].sum()), int(hit[1].sum())
    return AuditResult(epsilon_lower=_bound(k, k_prime, runs, alpha, delta), confidence=1 - alpha, runs=runs,
                       threshold=cut, direction=direction, p=k / runs, p_prime=k_prime / runs)
