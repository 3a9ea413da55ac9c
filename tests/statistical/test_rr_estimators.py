"""Seeded statistical tests of randomized response and the Sec. 4 estimators (private-demographics paper).

Synthetic population with known truth: A ~ Bernoulli(0.3), Y | A, and a predictor
Y-hat | (Y, A) with true equalized-odds rates GAMMA[y, a]; Z = RR_eps(A).
Significance level ALPHA = 0.01 per test (Bonferroni-split where one test checks several entries).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from parley.parties.attacks import AttackerView, leakage
from parley.parties.attacks.randomized_response.rr_inference import RRBayesAttack
from parley.protocols.estimators.rr_estimators import group_rates, privacy_penalty, privatize, rr_matrix

ALPHA = 0.01
P_A1 = 0.3
P_Y1 = np.array([0.2, 0.5])                 # P(Y = 1 | A = a)
GAMMA = np.array([[0.10, 0.25],              # P(Y-hat = 1 | Y = 0, A = a)
                  [0.55, 0.80]])             # P(Y-hat = 1 | Y = 1, A = a)
EPS = 1.0
REPEATS = 200


def _sample(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = (rng.random(n) < P_A1).astype(np.int8)
    y = (rng.random(n) < P_Y1[a]).astype(np.int8)
    yhat = (rng.random(n) < GAMMA[y, a]).astype(np.float64)
    return a, y, yhat


def _estimates(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(debiased, naive) TPR gaps gamma[1, 1] - gamma[1, 0] over REPEATS independent samples of size n."""
    rng = np.random.default_rng(seed)
    debiased, naive = np.empty(REPEATS), np.empty(REPEATS)
    for r in range(REPEATS):
        a, y, yhat = _sample(n, rng)
        rates = group_rates("equalized_odds", yhat, y, privatize(a, EPS, 2, rng), EPS, 2)
        debiased[r] = rates.debiased[1, 1] - rates.debiased[1, 0]
        naive[r] = rates.naive[1, 1] - rates.naive[1, 0]
    return debiased, naive


TRUE_GAP = GAMMA[1, 1] - GAMMA[1, 0]


def test_debiased_estimator_is_unbiased_and_naive_is_not():
    debiased, naive = _estimates(2000, seed=11)
    # t-test of mean(debiased) = true gap; the O(1/n) ratio bias is far below the standard error here.
    assert stats.ttest_1samp(debiased, TRUE_GAP).pvalue > ALPHA
    # The naive gap is shrunk towards 0 (eq. (3)): significantly below the truth.
    assert stats.ttest_1samp(naive, TRUE_GAP, alternative="less").pvalue < ALPHA
    assert naive.mean() < 0.6 * TRUE_GAP


def test_debiased_error_shrinks_at_the_rate_of_lemma_1():
    """Lemma 1: error O(n^{-1/2}). Quadrupling n halves the RMSE; a 95 % interval for the ratio via the
    chi-square law of the two mean squared errors (each ~ sigma^2 chi2_R / R) must contain 2."""
    small, _ = _estimates(1000, seed=12)
    large, _ = _estimates(4000, seed=13)
    mse_small, mse_large = np.mean((small - TRUE_GAP) ** 2), np.mean((large - TRUE_GAP) ** 2)
    ratio = math.sqrt(mse_small / mse_large)
    # F(R, R) quantiles bound the ratio of the two MSEs under the n^{-1/2} law (ratio^2 = 4 * F).
    low, high = (math.sqrt(4 * stats.f.ppf(q, REPEATS, REPEATS)) for q in (ALPHA / 2, 1 - ALPHA / 2))
    assert low < ratio < high, (ratio, low, high)


def test_lemma_1_bound_holds_with_probability_one_minus_delta():
    delta, n = 0.1, 2000
    debiased, _ = _estimates(n, seed=14)
    p_min = min(P_Y1[1] * P_A1, (1 - P_Y1[1]) * P_A1, P_Y1[0] * (1 - P_A1), (1 - P_Y1[0]) * (1 - P_A1))
    bound = math.sqrt(math.log(16 / delta) / (2 * n)) * 4 * privacy_penalty(EPS, 2) ** 2 / p_min ** 2
    exceed = int(np.count_nonzero(np.abs(debiased - TRUE_GAP) > bound))
    # Exceedances ~ Binomial(R, <= delta): reject the bound only on significant excess.
    assert stats.binomtest(exceed, REPEATS, delta, alternative="greater").pvalue > ALPHA


def test_randomized_response_frequencies_match_the_mechanism():
    """Chi-square goodness of fit of Z given A to Pi (k = 3), and eps-LDP's likelihood ratio e^eps."""
    rng = np.random.default_rng(21)
    k, eps, n = 3, 0.7, 60_000
    a = rng.integers(0, k, n)
    z = privatize(a, eps, k, rng)
    Pi = rr_matrix(eps, k)
    assert Pi[0, 0] / Pi[1, 0] == pytest.approx(math.exp(eps))
    pvalues = []
    for g in range(k):
        observed = np.bincount(z[a == g], minlength=k)
        pvalues.append(stats.chisquare(observed, Pi[:, g] * observed.sum()).pvalue)
    assert min(pvalues) > ALPHA / k


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_bayes_leakage_from_z_alone_is_pi(eps):
    """From Z alone the balanced-accuracy Bayes rule scores pi = e^eps / (1 + e^eps) in expectation (the bound)."""
    rng = np.random.default_rng(31)
    n = 20_000
    a = (rng.random(n) < P_A1).astype(np.int8)
    z = privatize(a, eps, 2, rng)
    attack = RRBayesAttack(None, AttackerView(n=n), rng)
    score = leakage(a, attack.infer(z, eps, 2).a_hat) / 100
    pi = math.exp(eps) / (1 + math.exp(eps))
    # Balanced accuracy = mean of two class recalls, each a binomial proportion with success pi.
    se = 0.5 * math.sqrt(pi * (1 - pi) / (n * P_A1) + pi * (1 - pi) / (n * (1 - P_A1)))
    assert abs(score - pi) < stats.norm.ppf(1 - ALPHA / 2) * se
