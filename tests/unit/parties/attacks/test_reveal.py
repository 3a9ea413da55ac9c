"""Linear, compressed-sensing and precision reveals against exact (and rounded) oracles, several seeds."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.attacks import Answer, Probes, answer_all, get_attack
from parley.parties.attacks.query_leakage.counting import bits_per_answer, counting_bound, log2_binomial
from parley.parties.attacks.query_leakage.probes import flip_one, precision_block, uniform_perturbations
from parley.protocols.errors import AttackError
from parley.protocols.metrics import statistical_parity_difference
from tests.oracle import drive as _drive
from tests.oracle import drive_with_probes, synthetic_world


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


def _asked(probe) -> tuple[bytes, bytes]:
    """A block probe as it goes on the wire: the individuals moved and their new scores."""
    return probe.edits.indices.tobytes(), probe.edits.values.tobytes()


@pytest.mark.parametrize("decimals", [None, 6])
@pytest.mark.parametrize(("n", "n0"), [(3000, 300), (5000, 2500)])
def test_precision_blocks_asked_together_are_the_blocks_asked_one_by_one(n, n0, decimals):
    """Probes change when the blocks are asked, never which: the same probes in the same order, the same
    reconstruction, as with ``ahead = 1`` (each block asked only after the answer before it was read)."""
    a, view = synthetic_world(4, n, n0)
    bursts = []

    def counting(run):  # the attack's yields, passed through, Probes counted
        asked = next(run)
        while True:
            if isinstance(asked, Probes):
                bursts.append(len(asked.probes))
            try:
                asked = run.send((yield asked))
            except StopIteration as stop:
                return stop.value

    together = _attack("precision", view, 4)
    attack = type("Counted", (), {"run": lambda self: counting(together.run())})()
    rec, probes = drive_with_probes(attack, a, decimals=decimals)
    alone, alone_probes = drive_with_probes(_attack("precision", view, 4, ahead=1), a, decimals=decimals)
    assert len(bursts) >= 2 and max(bursts) == 64 and sum(bursts) > 0.9 * len(probes)  # most blocks went in bursts
    assert [_asked(p) for p in probes[1:]] == [_asked(p) for p in alone_probes[1:]]
    np.testing.assert_array_equal(rec.a_hat, alone.a_hat)
    np.testing.assert_array_equal(rec.a_hat, a)
    assert rec.queries == alone.queries and rec.info == alone.info


def test_a_block_that_does_not_decode_in_a_burst_is_asked_again_in_halves_after_it():
    """One wrong answer inside a burst: its block is asked again in halves once the burst's answers are read,
    so the same blocks are asked as one by one (only later), and everyone is read exactly."""
    a, view = synthetic_world(5, 3000, 300)
    wrong = {}

    def drive(attack):
        def answer(probe):
            values = statistical_parity_difference(probe.matrix(), a)
            key = _asked(probe) if probe.edits is not None else None
            if key is not None and probe.edits.m == 1 and probe.edits.indices.size > 8 and len(wrong) < 1 \
                    and answer.count == 20:
                wrong[key] = True  # the 20th answer is off by far more than the error bound: it cannot decode
                values = values + 1e-6
            answer.count += 1
            asked.append(probe)
            return Answer(values, None)

        answer.count, asked = 0, []
        return answer_all(attack.run(), answer), asked

    rec, probes = drive(_attack("precision", view, 5))
    wrong.clear()
    alone, alone_probes = drive(_attack("precision", view, 5, ahead=1))
    assert rec.info["block_splits"] == alone.info["block_splits"] == 1
    assert sorted(_asked(p) for p in probes[1:]) == sorted(_asked(p) for p in alone_probes[1:])
    assert [_asked(p) for p in probes[1:]] != [_asked(p) for p in alone_probes[1:]]  # the halves came later
    np.testing.assert_array_equal(rec.a_hat, a)
    np.testing.assert_array_equal(alone.a_hat, a)
    assert rec.queries == alone.queries
