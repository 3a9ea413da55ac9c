"""Targeted reveals, group sizes, passive differencing and the leakage score, against exact oracles."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.attacks import AttackerView, Exchange, get_attack, leakage
from parley.parties.attacks.query_leakage.group_sizes import sizes_from_unit_steps
from parley.parties.attacks.query_leakage.targeted import decide_from_steps
from parley.protocols.errors import AttackError, ConfigError
from parley.protocols.metrics import statistical_parity_difference
from tests.oracle import drive as _drive


def _world(seed: int, n: int = 300, n0: int = 40):
    rng = np.random.default_rng(seed)
    a = np.ones(n, dtype=np.int8)
    a[rng.choice(n, n0, replace=False)] = 0
    scores = rng.random(n)
    return a, AttackerView(n=n, base_scores=scores, base_predictions=(scores >= 0.5).astype(np.int8),
                           y=(rng.random(n) < 0.4).astype(np.int8))


@pytest.mark.parametrize("name", ["single-query", "double-query"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("batch", [False, True])
def test_targeted_attacks_recover_exactly_and_find_group_sizes(name, seed, batch):
    a, view = _world(seed)
    cls = get_attack(name)
    rec = _drive(cls(cls.Params(targets=25, batch=batch), view, np.random.default_rng(seed)), a)
    np.testing.assert_array_equal(rec.a_hat, a[rec.indices])
    assert rec.decided.all() and rec.info["N0"] == 40 and rec.info["N1"] == 260
    assert rec.queries == (25 if name == "single-query" else 26)
    assert leakage(a[rec.indices], rec.a_hat) == 100.0


def test_double_query_probes_are_realistic():
    a, view = _world(0)
    cls = get_attack("double-query")
    rec = _drive(cls(cls.Params(targets=10), view, np.random.default_rng(0)), a)
    # each probe differs from the base model in at most one prediction: accuracy within 1/n
    assert rec.info["probe_accuracy_max"] - rec.info["base_accuracy"] <= 1 / view.n + 1e-12
    assert rec.info["base_accuracy"] - rec.info["probe_accuracy_min"] <= 1 / view.n + 1e-12


def test_rounded_answers_keep_signs_but_blur_group_sizes():
    """At 4 decimals the signs survive (1/N >= 1e-3) but many N round alike: sizes are reported unidentified."""
    a, view = _world(0, n=1000, n0=100)
    cls = get_attack("double-query")
    rec = _drive(cls(cls.Params(targets=30), view, np.random.default_rng(0)), a, decimals=4)
    np.testing.assert_array_equal(rec.a_hat, a[rec.indices])
    assert "N0" not in rec.info and rec.info["N1_candidates"] > 1


def test_answers_rounded_to_zero_leave_individuals_undecided():
    a, view = _world(0, n=1000, n0=300)  # 1/300 and 1/700 both round to 0.00
    cls = get_attack("single-query")
    rec = _drive(cls(cls.Params(targets=10), view, np.random.default_rng(0)), a, decimals=2)
    assert not rec.decided.any() and "undecided" in rec.info["warning"]


def test_group_sizes_from_steps():
    sizes = sizes_from_unit_steps(np.array([1 / 260, -1 / 40, 1 / 260]), n=300)
    assert (sizes.N0, sizes.N1, sizes.identified) == (40, 260, True)
    assert sizes_from_unit_steps(np.array([1 / 260]), n=300).N1 == 260
    assert not sizes_from_unit_steps(np.array([0.004]), n=300, decimals=3).identified


def test_inconsistent_steps_are_reported_not_guessed():
    with pytest.raises(AttackError, match="noise-robust"):
        decide_from_steps(np.array([1 / 260, 0.1234567]), n=300, decimals=None)


def test_targets_validation():
    a, view = _world(0, n=50, n0=10)
    cls = get_attack("single-query")
    with pytest.raises(ConfigError, match="between 1 and n=50"):
        next(cls(cls.Params(targets=51), view, np.random.default_rng(0)).run())
    with pytest.raises(ConfigError, match="index 50"):
        next(cls(cls.Params(targets=[3, 50]), view, np.random.default_rng(0)).run())
    # pydantic names the field and quotes the validator's message (a ValueError, as pydantic's ValidationError is)
    with pytest.raises(ValueError, match=r"^1 validation error for \w+\ntargets\n  Value error, must be at least 1 "):
        cls.Params(targets=0)


def test_differencing_observer_decodes_overheard_double_queries():
    a, view = _world(3)
    base = view.base_predictions.astype(float)
    flipped = np.repeat(base[None, :], 5, axis=0)
    targets = np.array([3, 30, 77, 150, 299])
    flipped[np.arange(5), targets] = 1 - base[targets]
    H = np.vstack([base, flipped])
    exchanges = [Exchange("sp", H[i:i + 1], statistical_parity_difference(H[i:i + 1], a)) for i in range(6)]
    exchanges.append(Exchange("eo", H[:1], np.array([0.3])))  # other metrics are ignored
    attack = get_attack("differencing")(None, AttackerView(n=view.n), np.random.default_rng(0))
    rec = attack.observe(exchanges)
    np.testing.assert_array_equal(rec.indices, targets)
    np.testing.assert_array_equal(rec.a_hat, a[targets])
    assert rec.queries == 0


def test_differencing_finds_nothing_in_unrelated_models():
    a, view = _world(0)
    rng = np.random.default_rng(1)
    H = (rng.random((4, view.n)) < 0.5).astype(float)
    exchanges = [Exchange("sp", H, statistical_parity_difference(H, a))]
    rec = get_attack("differencing")(None, AttackerView(n=view.n), rng).observe(exchanges)
    assert rec.indices.size == 0 and "no two observed models" in rec.info["warning"]


def test_passive_and_active_roles_are_enforced():
    _, view = _world(0)
    with pytest.raises(AttackError, match="passive"):
        next(get_attack("differencing")(None, view, np.random.default_rng(0)).run())
    with pytest.raises(AttackError, match="cannot run it"):
        get_attack("double-query")(None, view, np.random.default_rng(0)).observe([])


def test_leakage_is_balanced_accuracy():
    truth = np.array([1, 1, 1, 1, 0, 0])
    assert leakage(truth, np.array([1, 1, 1, 1, 1, 1])) == 50.0  # majority guess: chance level
    assert leakage(truth, np.array([1, 1, 0, 0, 0, 0])) == 75.0
    assert leakage(truth, 1 - truth, partition_only=True) == 100.0
    assert leakage(np.array([1, 1]), np.array([1, 0])) == 50.0  # only one group attacked
    assert np.isnan(leakage(np.array([]), np.array([])))
    # undecided individuals count as a fair coin: guessing without evidence cannot beat chance
    assert leakage(truth, np.ones(6, int), decided=np.zeros(6, bool)) == 50.0
    assert leakage(np.ones(4, int), np.ones(4, int), decided=np.array([True, True, False, False])) == 75.0
