"""Attribute-Reveal decoders (Theorem 1, Theorem 2 / Alg. 2, AMP, box/count LP, robust LP) on exact oracles.

Every instance is noiseless unless a test says otherwise: sp = H @ v in float64,
v_j = 1/N1 if a_j = 1 and -1/N0 if a_j = 0 (eq. 4 of the query-leakage paper).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from parley.parties.attacks.decoders import sp_decoders as dec
from parley.parties.attacks.decoders.sp_decoders import (
    Decoded,
    decode_amp,
    decode_box_count,
    decode_fastest,
    decode_l1,
    decode_linear,
    decode_robust,
)
from parley.protocols.errors import AttackError

SEEDS = [0, 1, 2]
SIZES = [100, 200, 300]


def _attribute(rng: np.random.Generator, n: int, n0: int) -> np.ndarray:
    a = np.ones(n, dtype=np.int8)
    a[rng.choice(n, n0, replace=False)] = 0
    return a


def _answers(H: np.ndarray, a: np.ndarray) -> np.ndarray:
    n0 = int(np.sum(a == 0))
    v = np.where(a == 1, 1.0 / (a.size - n0), -1.0 / n0)
    return H @ v


def _alg2(seed: int, n: int, m: int, frac0: float = 0.1, b: float = 0.1):
    """Alg. 2's probes: H = clip(h0 + U(-b, b)), h0 ~ U(0, 1); N0 ~ 10% of n."""
    rng = np.random.default_rng(seed)
    n0 = max(1, round(frac0 * n))
    a = _attribute(rng, n, n0)
    h0 = rng.random(n)
    H = np.clip(h0 + rng.uniform(-b, b, size=(m, n)), 0.0, 1.0)
    return H, _answers(H, a), a, n0


def _exact(d: Decoded, a: np.ndarray) -> bool:
    return d.a_hat.dtype == np.int8 and np.array_equal(d.a_hat, a)


# --------------------------------------------------------------------------- Theorem 1


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_linear_recovers_from_alg1_flip_one_probes(seed, n):
    rng = np.random.default_rng(seed)
    a = _attribute(rng, n, n // 10)
    h0 = (rng.random(n) < 0.5).astype(np.float64)          # a binary base model
    H = np.repeat(h0[None, :], n, axis=0)
    H[np.arange(n), np.arange(n)] = 1.0 - h0               # model i flips individual i
    d = decode_linear(H, _answers(H, a))
    assert _exact(d, a) and d.certified and d.decided.all()
    assert d.info["rank"] == n and d.residual <= d.info["tol"]
    assert (d.info["N0"], d.info["N1"]) == (n // 10, n - n // 10)  # sizes read off v, not given


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_linear_recovers_from_m_at_least_n_random_probes(seed, n):
    H, sp, a, n0 = _alg2(seed, n, m=n + 10 * seed)
    d = decode_linear(H, sp, n0, n - n0)
    assert _exact(d, a) and d.certified and d.decided.all() and d.decoder == "linear"


def test_linear_below_full_rank_marks_undetermined_coordinates():
    rng = np.random.default_rng(0)
    n, m = 120, 80
    a = _attribute(rng, n, 12)
    H = np.zeros((m, n))
    # the first 40 individuals are probed alone (a unit row each): determined;
    H[np.arange(40), np.arange(40)] = 1.0
    # the other 80 share 40 random rows: the system leaves them free
    H[40:, 40:] = rng.random((40, 80))
    d = decode_linear(H, _answers(H, a), 12, n - 12)
    assert not d.certified and d.info["rank"] == m
    assert d.decided[:40].all() and not d.decided[40:].any()
    assert d.info["undetermined"] == 80
    np.testing.assert_array_equal(d.a_hat[:40], a[:40])


@pytest.mark.parametrize("seed", SEEDS)
def test_linear_with_m_below_n_random_probes_is_not_certified(seed):
    H, sp, a, n0 = _alg2(seed, 200, m=150)
    d = decode_linear(H, sp, n0, 200 - n0)
    assert not d.certified and not d.decided.any() and d.info["rank"] == 150


def test_linear_zero_column_is_undecided():
    H, sp, a, n0 = _alg2(0, 100, m=110)
    H[:, 7] = 0.0
    d = decode_linear(H, _answers(H, a), n0, 100 - n0)
    assert not d.certified and not d.decided[7] and d.decided.sum() == 99


# --------------------------------------------------------------------------- Theorem 2 / Alg. 2 and friends


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("decoder", [decode_l1, decode_box_count, decode_amp])
def test_sparse_decoders_recover_exactly_with_enough_queries(decoder, n, seed):
    H, sp, a, n0 = _alg2(seed, n, m=int(0.6 * n))
    d = decoder(H, sp, n0, n - n0)
    assert _exact(d, a) and d.certified and d.decided.all()
    assert d.residual <= d.info["tol"] and d.info["count_matches"]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("decoder", [decode_l1, decode_box_count, decode_amp, decode_robust])
def test_every_decoder_refuses_to_certify_five_queries(decoder, seed):
    H, sp, a, n0 = _alg2(seed, 200, m=5)
    d = decoder(H, sp, n0, 200 - n0)
    assert not d.certified and d.residual > d.info["tol"]


@pytest.mark.parametrize("seed", SEEDS)
def test_linear_refuses_to_certify_five_queries(seed):
    H, sp, a, n0 = _alg2(seed, 200, m=5)
    d = decode_linear(H, sp, n0, 200 - n0)
    assert not d.certified and not d.decided.any()


@pytest.mark.parametrize("seed", SEEDS)
def test_fastest_raises_when_too_few_queries(seed):
    H, sp, a, n0 = _alg2(seed, 200, m=5)
    with pytest.raises(AttackError) as err:
        decode_fastest(H, sp, n0, 200 - n0)
    head = dec.TOO_FEW_QUERIES.split("(amp")[0].format(m=5, n=200)
    assert str(err.value).startswith(head) and "more queries are needed" in str(err.value)
    best = decode_fastest(H, sp, n0, 200 - n0, allow_uncertified=True)
    assert not best.certified and best.info["tried"] == ["amp", "box-count"]


@pytest.mark.parametrize("seed", SEEDS)
def test_fastest_uses_amp_when_it_certifies(seed):
    H, sp, a, n0 = _alg2(seed, 300, m=180)
    d = decode_fastest(H, sp, n0, 300 - n0)
    assert _exact(d, a) and d.certified and d.decoder == "amp" and d.info["tried"] == ["amp"]


def test_box_count_can_prove_uniqueness():
    H, sp, a, n0 = _alg2(0, 200, m=120)
    d = decode_box_count(H, sp, n0, 200 - n0, prove_unique=True)
    assert _exact(d, a) and d.certified and d.info["unique"] and d.info["farthest_l1"] <= 1e-6
    # two identical columns, one in each group: swapping them fits too, and the proof says so
    H2 = H.copy()
    i, j = int(np.flatnonzero(a == 0)[0]), int(np.flatnonzero(a == 1)[0])
    H2[:, j] = H2[:, i]
    d2 = decode_box_count(H2, _answers(H2, a), n0, 200 - n0, prove_unique=True)
    assert not d2.info["unique"] and not d2.certified and d2.info["farthest_l1"] > 1.0 - 1e-6


def test_amp_handles_binary_base_model_and_clipping():
    """h0 in {0, 1}: half of every column's perturbations clip, so columns are far from Gaussian."""
    rng = np.random.default_rng(5)
    n, m, n0 = 300, 200, 30
    a = _attribute(rng, n, n0)
    h0 = (rng.random(n) < 0.7).astype(np.float64)
    H = np.clip(h0 + rng.uniform(-0.1, 0.1, size=(m, n)), 0.0, 1.0)
    d = decode_amp(H, _answers(H, a), n0, n - n0)
    assert _exact(d, a) and d.certified


# --------------------------------------------------------------------------- noisy answers


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [100, 200])
def test_robust_recovers_from_small_laplace_noise_without_certifying(seed, n):
    H, sp, a, n0 = _alg2(seed, n, m=2 * n)
    noisy = sp + np.random.default_rng(100 + seed).laplace(scale=1e-4, size=sp.size)
    d = decode_robust(H, noisy, n0, n - n0)
    assert _exact(d, a) and d.decided.all()
    assert not d.certified and d.residual > d.info["tol"]
    assert d.info["l1_misfit"] > 0
    # exact answers, by contrast, fit and certify
    assert decode_robust(H, sp, n0, n - n0).certified


# --------------------------------------------------------------------------- the sign of eta (paper's typo)


def test_eta_sign_on_a_hand_example():
    """n = 4, a = (1, 1, 1, 0): N1 = 3, N0 = 1, c = 1/3 + 1 = 4/3, s = (0, 0, 0, 4/3)."""
    a = np.array([1, 1, 1, 0], dtype=np.int8)
    H = np.array([[1.0, 0.0, 0.0, 1.0],
                  [0.0, 1.0, 0.0, 1.0],
                  [0.5, 0.5, 0.5, 0.5]])
    sp = _answers(H, a)
    np.testing.assert_allclose(sp, [1 / 3 - 1, 1 / 3 - 1, 0.5 - 0.5], atol=1e-15)
    r = np.full(4, 1 / 3)
    s = np.array([0.0, 0.0, 0.0, 4 / 3])
    np.testing.assert_allclose(H @ r - sp, H @ s, atol=1e-15)           # eta = H r - SP  (correct)
    np.testing.assert_allclose(sp - H @ r, -(H @ s), atol=1e-15)        # the printed SP - H r is -H s
    d = decode_l1(H, sp, 1, 3)
    assert _exact(d, a) and d.certified
    # feeding the printed sign to the same decoder: reflect SP about H r so eta becomes SP - H r
    printed = decode_l1(H, 2 * (H @ r) - sp, 1, 3)
    assert not np.array_equal(printed.a_hat, a) and not printed.certified
    np.testing.assert_array_equal(printed.a_hat, [1, 1, 1, 1])  # s = -c e_4: nobody crosses c/2


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("decoder", [decode_l1, decode_box_count, decode_amp, decode_robust, decode_fastest])
def test_validation_messages(decoder):
    H, sp, a, n0 = _alg2(0, 50, m=10)
    with pytest.raises(AttackError, match=r"H must be a 2-D array"):
        decoder(H[0], sp, n0, 50 - n0)
    with pytest.raises(AttackError, match=r"sp must be a 1-D array of m=10 answers"):
        decoder(H, sp[:-1], n0, 50 - n0)
    with pytest.raises(AttackError, match=r"n0 must be an integer with 0 < n0 < n=50, got 50"):
        decoder(H, sp, 50, 0)
    with pytest.raises(AttackError, match=r"n0 must be an integer with 0 < n0 < n=50, got 0"):
        decoder(H, sp, 0, 50)
    with pytest.raises(AttackError, match=r"n1 must equal n - n0 = 45 \(n=50, n0=5\), got 44"):
        decoder(H, sp, 5, 44)
    bad = sp.copy()
    bad[2] = np.nan
    with pytest.raises(AttackError, match=re.escape(dec.NOT_FINITE.format(name="sp", count=1))):
        decoder(H, bad, n0, 50 - n0)
    with pytest.raises(AttackError, match=r"tol must be a positive finite number"):
        decoder(H, sp, n0, 50 - n0, tol=-1.0)


def test_linear_validation():
    H, sp, a, n0 = _alg2(0, 50, m=60)
    with pytest.raises(AttackError, match=r"n1=45 given without n0"):
        decode_linear(H, sp, n1=45)
    with pytest.raises(AttackError, match=r"H must be a 2-D array"):
        decode_linear(np.ones((3, 4, 5)), sp)
    with pytest.raises(AttackError, match=r"iterations must be a positive integer"):
        decode_amp(H, sp, n0, 50 - n0, iterations=0)


def test_default_tol_scales_with_answers():
    assert dec.default_tol(np.array([0.1, -0.2])) == pytest.approx(1e-9)
    assert dec.default_tol(np.array([5.0, -20.0])) == pytest.approx(2e-8)
