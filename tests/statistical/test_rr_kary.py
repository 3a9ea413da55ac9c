"""Seeded statistical tests for more than two groups, and of the proxy estimator (15).

k = 3 randomized response (Sec. 3-5 of the private-demographics paper): the
debiased estimator stays unbiased, LP (13) still removes discrimination w.r.t.
A, and the balanced Bayes rule from Z alone reaches pi = e^eps / (k - 1 + e^eps),
the eps-LDP cap on balanced accuracy for k groups. Sec. 6's estimator (15) with
the proxy P(A | X, Y) is consistent (Lemma 4); the proxy P(A | X) is not.
Significance level ALPHA = 0.01 per test (Bonferroni-split over entries).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from parley.parties.attacks import AttackerView, leakage
from parley.parties.attacks.randomized_response.rr_inference import RRBayesAttack
from parley.parties.learners.two_step import post_process
from parley.protocols.errors import QueryError
from parley.protocols.estimators.proxy_estimator import BAD_PROXY, proxy_rates
from parley.protocols.estimators.rr_estimators import group_rates, privatize, rr_keep_probability

ALPHA = 0.01
SHARES = np.array([0.5, 0.3, 0.2])           # P(A = a), k = 3
P_Y1 = np.array([0.2, 0.4, 0.5])             # P(Y = 1 | A = a)
GAMMA = np.array([[0.10, 0.20, 0.30],        # P(Y-hat = 1 | Y = 0, A = a)
                  [0.50, 0.70, 0.85]])       # P(Y-hat = 1 | Y = 1, A = a)
EPS = 1.5


def _sample(n, rng):
    a = rng.choice(3, size=n, p=SHARES)
    y = (rng.random(n) < P_Y1[a]).astype(np.int64)
    yhat = (rng.random(n) < GAMMA[y, a]).astype(np.float64)
    return a, y, yhat


def test_debiased_estimator_is_unbiased_for_three_groups_and_naive_is_not():
    rng = np.random.default_rng(31)
    debiased, naive = np.empty((200, 2)), np.empty((200, 2))
    for r in range(200):
        a, y, yhat = _sample(4000, rng)
        rates = group_rates("equalized_odds", yhat, y, privatize(a, EPS, 3, rng), EPS, 3)
        debiased[r] = rates.debiased[1, 1:] - rates.debiased[1, 0]      # TPR gaps of groups 1, 2 vs 0
        naive[r] = rates.naive[1, 1:] - rates.naive[1, 0]
    truth = GAMMA[1, 1:] - GAMMA[1, 0]
    for j in range(2):                                                   # Bonferroni over the two gaps
        assert stats.ttest_1samp(debiased[:, j], truth[j]).pvalue > ALPHA / 2
        assert stats.ttest_1samp(naive[:, j], truth[j], alternative="less").pvalue < ALPHA / 2
    assert (naive.mean(axis=0) < 0.7 * truth).all()                     # eq. (3): gaps shrunk towards 0


def test_post_processing_lp_removes_discrimination_for_three_groups():
    rng = np.random.default_rng(32)
    n = 60_000
    a = rng.choice(3, size=n, p=SHARES)
    y = (rng.random(n) < P_Y1[a]).astype(np.int64)
    s = np.clip(np.where(y == 1, 0.5 + 0.15 * a, 0.1 + 0.1 * a) + rng.normal(0, 0.05, n), 0, 1)
    z = privatize(a, 2.0, 3, rng)
    derived = post_process(s, y, z, 2.0, 3, "equalized_odds", alpha=0.0)
    assert derived.p.shape == (2, 3)
    soft = derived.predict_proba(s, z)
    before = group_rates("equalized_odds", s, y, a, 700.0, 3).naive_gap
    after = group_rates("equalized_odds", soft, y, a, 700.0, 3).naive_gap
    assert before > 0.25 and after < 0.05          # debiased rates' sampling error at n = 60,000, eps = 2


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_balanced_bayes_rule_from_z_alone_reaches_pi_for_three_groups(eps):
    rng = np.random.default_rng(33)
    a = rng.choice(3, size=30_000, p=SHARES)
    z = privatize(a, eps, 3, rng)
    attack = RRBayesAttack(RRBayesAttack.Params(), AttackerView(n=a.size), rng)
    guess = attack.infer(z, eps, 3).a_hat
    pi = rr_keep_probability(eps, 3)
    # Balanced accuracy = mean of three binomial recalls with success pi: 3.3 standard errors (alpha ~ 0.001).
    se = 100 * np.sqrt(sum(pi * (1 - pi) / (a.size * share) for share in SHARES)) / 3
    assert abs(leakage(a, guess) - 100 * pi) < 3.3 * se


# Estimator (15): A in {0, 1}, Y | A, X in {0..3} | (A, Y); Y-hat = 1(X >= 2) depends on X only.
P_A = np.array([0.6, 0.4])
P_Y_GIVEN_A = np.array([0.3, 0.6])
P_X = np.array([[[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]],      # A = 0: Y = 0, Y = 1
                [[0.3, 0.3, 0.2, 0.2], [0.1, 0.1, 0.3, 0.5]]])     # A = 1: Y = 0, Y = 1


def _joint():
    """P(A = a, Y = y, X = x) as an array [a, y, x]."""
    p_y = np.stack([1 - P_Y_GIVEN_A, P_Y_GIVEN_A], axis=1)           # [a, y]
    return P_A[:, None, None] * p_y[:, :, None] * P_X


def test_proxy_estimator_15_is_consistent_with_p_a_given_x_y_and_not_with_p_a_given_x():
    joint = _joint()
    post_xy = joint / joint.sum(axis=0, keepdims=True)                # P(A = a | y, x): [a, y, x]
    post_x = joint.sum(axis=1) / joint.sum(axis=(0, 1))               # P(A = a | x): [a, x]
    truth = P_X[:, :, 2:].sum(axis=2).T                              # gamma[y, a] = P(X >= 2 | Y = y, A = a)
    rng = np.random.default_rng(34)
    flat = joint.ravel()
    with_y, without_y = np.empty((100, 2, 2)), np.empty((100, 2, 2))
    for r in range(100):
        cells = rng.choice(flat.size, size=5000, p=flat)
        _, y, x = np.unravel_index(cells, joint.shape)      # A itself stays hidden: only the proxy sees it
        yhat = (x >= 2).astype(float)
        with_y[r] = proxy_rates(yhat, y, post_xy[:, y, x].T)
        without_y[r] = proxy_rates(yhat, y, post_x[:, x].T)
    # Lemma 4: no detectable bias in any of the four rates (Bonferroni over 4 entries) ...
    for idx in np.ndindex(2, 2):
        assert stats.ttest_1samp(with_y[(slice(None), *idx)], truth[idx]).pvalue > ALPHA / 4
    # ... while the proxy given X alone misses the TPR gap by far more than its sampling error.
    gap_truth = truth[1, 1] - truth[1, 0]
    gap_x = without_y[:, 1, 1] - without_y[:, 1, 0]
    assert stats.ttest_1samp(gap_x, gap_truth).pvalue < ALPHA
    assert abs(gap_x.mean() - gap_truth) > 0.05


def test_proxy_estimator_rejects_a_bad_proxy():
    with pytest.raises(QueryError) as err:
        proxy_rates(np.ones(3), np.array([0, 1, 1]), np.full((3, 2), 0.7))
    assert str(err.value) == BAD_PROXY.format(n=3, shape=(3, 2))
    with pytest.raises(QueryError, match="no weight in cell y=0"):
        proxy_rates(np.ones(2), np.array([1, 1]), np.array([[0.5, 0.5], [0.5, 0.5]]))
