"""Threshold inversion: accept/reject answers decoded back into s (seeded, exact or bounded outcomes)."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.attacks import get_attack
from parley.parties.attacks.base import AttackerView
from parley.parties.attacks.scoring import leakage
from parley.parties.attacks.threshold_inversion.inversion import (
    NO_ANSWERS,
    AcceptAnswer,
    centred_rows,
    decode_lp,
    decode_milp,
    violations,
)
from parley.protocols.errors import AttackError
from parley.protocols.mechanisms.covariance_threshold import CovarianceThresholdParams, accept
from parley.protocols.metrics import covariance


def _answer(s, m, rng, rho_factor=0.6, P=None):
    n = s.size
    rho = rho_factor * np.sqrt(n * s.mean() * (1 - s.mean())) / n  # about half accepted
    P = rng.normal(size=(m, n)) if P is None else P
    return AcceptAnswer(P, accept(covariance(P, s), CovarianceThresholdParams(rho=rho), rng), rho)


def _truth(n, rng):
    return (rng.random(n) < 0.35).astype(np.int8)


def test_centred_rows_give_the_covariance_the_protocol_thresholds():
    rng = np.random.default_rng(0)
    s = _truth(40, rng)
    answer = _answer(s, 30, rng)
    Q, accepted, rho = centred_rows([answer])
    assert np.allclose(Q @ s, covariance(answer.predictions, s))
    assert violations(Q, accepted, rho, s) == 0  # the truth contradicts no answer


def test_integer_program_recovers_s_exactly_from_enough_answers():
    rng = np.random.default_rng(1)
    s = _truth(30, rng)
    Q, accepted, rho = centred_rows([_answer(s, 240, rng)])
    s_hat, info = decode_milp(Q, accepted, rho, int(s.sum()), time_limit=30)
    assert np.array_equal(s_hat, s) and info["violations"] == 0


def test_lp_relaxation_recovers_s_with_eight_answers_per_individual():
    rng = np.random.default_rng(2)
    s = _truth(120, rng)
    Q, accepted, rho = centred_rows([_answer(s, 960, rng)])
    s_hat, info = decode_lp(Q, accepted, rho, int(s.sum()))
    assert leakage(s, s_hat) == 100.0 and info["violations"] == 0


def test_linear_hypotheses_reveal_a_partition_only():
    """Predictions X w span p dimensions: s and 1 - s fit alike, the attack reports a partition."""
    rng = np.random.default_rng(3)
    n, p = 100, 4
    s = _truth(n, rng)
    X = rng.normal(size=(n, p)) + 1.5 * s[:, None]
    answer = _answer(s, 100, rng, P=(X @ rng.normal(size=(p, 100))).T)
    attack = get_attack("threshold-inversion")(None, AttackerView(n=n), rng)
    rec = attack.reconstruct([answer], int(s.sum()))
    assert rec.partition_only and rec.info["low_rank"]
    # X separates the groups well here, so even the p-dimensional view leaks far above chance
    # (balanced accuracy of a coin over 100 individuals: sd about 5 points around 50)
    assert leakage(s, rec.a_hat, partition_only=True) > 70.0


def test_no_answers_is_a_named_error():
    attack = get_attack("threshold-inversion")(None, AttackerView(n=5), np.random.default_rng(0))
    with pytest.raises(AttackError, match=NO_ANSWERS):
        attack.reconstruct([], 2)


def test_probes_are_scaled_so_about_half_are_accepted():
    rng = np.random.default_rng(5)
    s = _truth(200, rng)
    attack = get_attack("threshold-inversion")(
        get_attack("threshold-inversion").Params(probes=2000), AttackerView(n=200), rng)
    P = attack.probes(200, 0.1, int(s.sum()))
    share = accept(covariance(P, s), CovarianceThresholdParams(rho=0.1), rng).size / 2000
    assert 0.45 < share < 0.55  # binomial sd 0.011 around 1/2
