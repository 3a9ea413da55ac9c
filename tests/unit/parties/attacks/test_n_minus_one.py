"""Remark 3 (n - 1 queries suffice): the linear-n-1 attack against exact oracles, several seeds."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.attacks import AttackerView, get_attack
from parley.parties.attacks.decoders import sp_decoders as decoders
from parley.parties.attacks.n_minus_one import left_out, sum_closed_system
from parley.parties.attacks.query_leakage.probes import flip_one
from parley.protocols.errors import AttackError
from parley.protocols.metrics import statistical_parity_difference
from tests.oracle import drive_with_probes, synthetic_world


def _attack(view, seed):
    cls = get_attack("linear-n-1")
    return cls(cls.Params(batch=64), view, np.random.default_rng(seed))


@pytest.mark.parametrize(("n", "n0", "seed"), [(100, 10, s) for s in range(5)] + [(400, 200, s) for s in range(3)]
                         + [pytest.param(1000, 98, 0, marks=pytest.mark.system)])
def test_n_minus_one_raw_answers_recover_everyone(seed, n, n0):
    a, view = synthetic_world(seed, n, n0)
    rec, probes = drive_with_probes(_attack(view, seed), a)
    np.testing.assert_array_equal(rec.a_hat, a)
    assert rec.decided.all() and rec.info["certified"]
    assert rec.queries == n - 1 == sum(p.matrix().shape[0] for p in probes)
    assert (rec.info["N0"], rec.info["N1"]) == (n0, n - n0)


@pytest.mark.parametrize("seed", range(3))
def test_the_n_minus_1_answers_alone_leave_a_null_space_that_sum_v_zero_closes(seed):
    a, view = synthetic_world(seed, 80, 8)
    out = left_out(view.base_predictions, np.random.default_rng(seed))
    H = flip_one(view.base_predictions, np.delete(np.arange(80), out))
    sp = np.array([statistical_parity_difference(row, a) for row in H])
    assert np.linalg.matrix_rank(H) == 79
    assert not decoders.decode_linear(H, sp).certified
    M, rhs = sum_closed_system(H, sp)
    assert np.linalg.matrix_rank(M) == 80
    dec = decoders.decode_linear(M, rhs)
    assert dec.certified
    np.testing.assert_array_equal(dec.a_hat, a)


def test_left_out_avoids_the_singular_choice():
    # The base model accepts exactly one individual: leaving out anyone else makes the system singular.
    h0 = np.zeros(30, dtype=np.int8)
    h0[7] = 1
    assert all(left_out(h0, np.random.default_rng(s)) == 7 for s in range(5))
    a = np.ones(30, dtype=np.int8)
    a[[3, 11, 20]] = 0
    view = AttackerView(n=30, base_scores=h0.astype(float), base_predictions=h0)
    rec, _ = drive_with_probes(_attack(view, 0), a)
    np.testing.assert_array_equal(rec.a_hat, a)


def test_the_singularity_condition_matches_the_rank_for_every_small_base_model():
    n = 6
    for code in range(2 ** n):
        h0 = np.array([(code >> j) & 1 for j in range(n)], dtype=np.int8)
        for out in range(n):
            M, _ = sum_closed_system(flip_one(h0, np.delete(np.arange(n), out)), np.zeros(n - 1))
            k = int(h0.sum()) - int(h0[out])
            singular = 1 - k - int(h0[out]) * (n - 1 - 2 * k) == 0
            assert (np.linalg.matrix_rank(M) < n) == singular, (h0, out)


def test_a_base_model_with_no_regular_choice_is_refused():
    # n = 2, one accepted: leaving out either individual makes the system singular.
    with pytest.raises(AttackError, match="singular"):
        left_out(np.array([1, 0], dtype=np.int8), np.random.default_rng(0))
