"""Correction improves a calibrated but biased guess: a seeded sign test (alpha = 0.01).

Model: A ~ Bernoulli(0.4), the target accepts 30 % of each group (SP close to 0)
and the certificate states its exact unfairness. The baseline is calibrated (it
is right with probability equal to its confidence, drawn in [0.5, 1]) but, like
an attack model fed with yhat, its mistakes among accepted rows lean towards
a = 1, so its guess looks unfair. H0: the correction is as likely to lower
accuracy as to raise it (sign test over 30 seeds); we reject it when at least
22 of 30 instances improve (binomial tail 0.008 < alpha).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import binomtest

from parley.parties.attacks.reconstruction_correction.baseline_adversary import weights
from parley.parties.attacks.solvers.correction import OPTIMAL, FairnessConstraint, correct
from parley.protocols.group_gaps import unfairness

ALPHA = 0.01
SEEDS = 30


def _instance(seed: int, n: int = 3000):
    rng = np.random.default_rng(seed)
    a = (rng.random(n) < 0.4).astype(int)
    yhat = (rng.random(n) < 0.3).astype(int)
    confidence = 0.5 + 0.5 * rng.random(n)
    wrong = rng.random(n) > confidence
    lean = (yhat == 1) & (a == 0) & (rng.random(n) < 0.15)  # extra mistakes: accepted rows guessed a = 1
    a0 = np.where(wrong | lean, 1 - a, a)
    confidence = np.where(lean, 0.5 + 0.25 * rng.random(n), confidence)
    return a, a0, confidence, yhat


def test_correction_beats_the_baseline_more_often_than_chance():
    improved = 0
    for seed in range(SEEDS):
        a, a0, confidence, yhat = _instance(seed)
        fixed = correct(a0, weights(confidence, 8.0), yhat, FairnessConstraint("sp", unfairness("sp", yhat, a)))
        assert fixed.status == OPTIMAL
        improved += int((fixed.a == a).mean() > (a0 == a).mean())
    assert binomtest(improved, SEEDS, 0.5, alternative="greater").pvalue < ALPHA
