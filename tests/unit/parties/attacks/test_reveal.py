"""Linear, compressed-sensing and precision reveals against exact (and rounded) oracles, several seeds."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.attacks import Answer, get_attack
from parley.parties.attacks.query_leakage.counting import bits_per_answer, counting_bound, log2_binomial
from parley.parties.attacks.query_leakage.probes import flip_one, precision_block, uniform_perturbations
from parley.protocols.errors import AttackError
from parley.protocols.metrics import statistical_parity_difference
from tests.oracle import drive as _drive
from tests.oracle import synthetic_world


def _attack(name, view, seed=0, **params):
    cls = get_attack(name)
    return cls(cls.Params(**params), view, np.random.default_rng(seed))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("design", ["flip-one", "random-binary", "uniform"])
def test_linear_system_recovers_everyone(seed, design):
    a, view = synthetic_world(seed, 120, 15)
    rec = _drive(_attack("linear", view, seed, design=design, batch=50), a)
    np.testing.assert_array_equal(rec.a_hat, a)
    assert rec.decided.all() and rec.queries == 120 and rec.info["certified"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compressed_sensing_stops_at_a_certified_exact_decode(seed):
    a, view = synthetic_world(seed, 300, 30)
    rec = _drive(_attack("compressed-sensing", view, seed, round_size=20), a)
    np.testing.assert_array_equal(rec.a_hat, a)
    assert rec.info["certified"] and rec.info["N0"] == 30
    assert rec.queries < 300 and rec.info["probe_max_deviation"] <= 0.1


def test_compressed_sensing_with_too_few_models_says_so():
    a, view = synthetic_world(0, 300, 30)
    rec = _drive(_attack("compressed-sensing", view, 0, max_queries=10, stop="cap", decoder="amp"), a)
    assert not rec.info["certified"]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize(("n", "n0"), [(200, 20), (1000, 98), (3000, 1500)])
def test_precision_probes_read_everyone_exactly(seed, n, n0):
    a, view = synthetic_world(seed, n, n0)
    rec = _drive(_attack("precision", view, seed), a)
    np.testing.assert_array_equal(rec.a_hat, a)
    assert rec.decided.all() and rec.info["certified"] and rec.info["N0"] == n0
    assert rec.info["probe_max_deviation"] <= 0.1
    width = rec.info["block_width"]
    assert rec.queries <= 2 + int(np.ceil(n / width)) + 1  # base query, a narrower first block, full blocks
    assert rec.queries >= rec.info["counting_bound"]


def test_precision_probe_needs_30_queries_at_most_for_adult_sized_audits():
    a, view = synthetic_world(7, 1000, 104)
    rec = _drive(_attack("precision", view, 7), a)
    assert rec.queries <= 30 and (rec.a_hat == a).all()


@pytest.mark.parametrize("decimals", [6, 4])
def test_precision_adapts_to_rounded_answers(decimals):
    a, view = synthetic_world(0, 400, 40)
    rec = _drive(_attack("precision", view, 0), a, decimals=decimals)
    np.testing.assert_array_equal(rec.a_hat, a)
    assert rec.info["block_width"] < 37 and rec.queries >= rec.info["counting_bound"]


def test_precision_refuses_answers_that_are_not_exact():
    a, view = synthetic_world(0, 300, 30)
    attack = _attack("precision", view, 0)
    run = attack.run()
    probe = next(run)
    noise = np.random.default_rng(1)
    with pytest.raises(AttackError, match="fits no group size"):
        while True:
            probe = run.send(Answer(statistical_parity_difference(probe.matrix(), a) + noise.normal(0, 1e-3), None))


def test_probes_stay_realistic():
    rng = np.random.default_rng(0)
    h0 = rng.random(50)
    assert np.abs(uniform_perturbations(h0, 30, 0.1, rng) - h0).max() <= 0.1
    row, _ = precision_block(h0, np.arange(10), 0.1)
    assert np.abs(row - h0).max() <= 0.1 and ((row >= 0) & (row <= 1)).all()
    H = flip_one((h0 > 0.5).astype(float), np.array([3, 4]))
    assert ((h0 > 0.5) != H).sum(axis=1).tolist() == [1, 1]


def test_counting_bound():
    assert log2_binomial(10, 3) == pytest.approx(np.log2(120))
    assert bits_per_answer(0.1, 4) == pytest.approx(np.log2(4001))
    assert counting_bound(1000, 100, 0.1, 4) == int(np.ceil(log2_binomial(1000, 100) / np.log2(4001)))
    assert counting_bound(1000, 100, 0.1, None) < counting_bound(1000, 100, 0.1, 4)


def test_compressed_sensing_with_a_public_share_spends_no_size_queries():
    a, view = synthetic_world(0, 300, 30)
    rec = _drive(_attack("compressed-sensing", view, 0, round_size=20, n0_prior=0.1), a)
    np.testing.assert_array_equal(rec.a_hat, a)
    assert rec.queries == rec.info["probe_models"]
