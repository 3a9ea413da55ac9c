"""|SP| partition (Thm. 4) and the label-slice attacks (EO, PE, EOdds, PRP; Remark 5) against exact oracles."""

from __future__ import annotations

import re

import numpy as np
import pytest

from parley.parties.attacks import Answer, AttackerView, get_attack, leakage
from parley.parties.attacks.query_leakage.partition import INCONSISTENT, NOT_DISTINGUISHABLE, SMALLER_IS_DISADVANTAGED
from parley.parties.attacks.query_leakage.targeted import SIGN_LOST
from parley.protocols.errors import AttackError
from parley.protocols.metrics import evaluate
from tests.oracle import drive_with_probes as _drive

SEEDS = [0, 1, 2, 3]


def _world(seed: int, n: int = 200, n0: int | None = None):
    """Random a (10-40% a=0 unless ``n0`` is given), random y and base scores."""
    rng = np.random.default_rng(seed)
    if n0 is None:
        n0 = int(rng.integers(int(0.1 * n), int(0.4 * n) + 1))
    a = np.ones(n, dtype=np.int8)
    a[rng.choice(n, n0, replace=False)] = 0
    y = (rng.random(n) < rng.uniform(0.3, 0.7)).astype(np.int8)
    scores = rng.random(n)
    view = AttackerView(n=n, base_scores=scores, base_predictions=(scores >= 0.5).astype(np.int8), y=y)
    return a, y, view


def _attack(name, view, seed=0, **params):
    cls = get_attack(name)
    return cls(cls.Params(**params), view, np.random.default_rng(seed))


def _same_partition(a_hat, truth):
    return np.array_equal(a_hat, truth) or np.array_equal(1 - a_hat, truth)


# -- |SP| partition (Thm. 4) ----------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("batch", [False, True])
def test_abs_sp_partition_case1_unequal_sizes(seed, batch):
    a, y, view = _world(seed)
    rec, probes = _drive(_attack("abs-sp-partition", view, batch=batch), a, y)
    assert rec.partition_only and rec.decided.all()
    np.testing.assert_array_equal(rec.indices, np.arange(view.n))
    # a=0 is the smaller group here, so the size guess labels it right, not just the partition
    np.testing.assert_array_equal(rec.a_hat, a)
    n0 = int((a == 0).sum())
    assert rec.info["case"].startswith("1") and rec.info["pair_probes"] == 0
    assert {rec.info["N_alpha"], rec.info["N_beta"]} == {n0, view.n - n0}
    assert rec.info["labelling_guess"] == SMALLER_IS_DISADVANTAGED
    assert rec.queries == view.n  # Thm. 4: m = n
    assert all(p.metric == "abs_sp" for p in probes)
    assert len(probes) == (2 if batch else view.n)
    assert leakage(a, rec.a_hat, rec.partition_only) == 100.0


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("batch", [False, True])
def test_abs_sp_partition_case2_equal_sizes(seed, batch):
    a, y, view = _world(seed, n=120, n0=60)
    rec, probes = _drive(_attack("abs-sp-partition", view, batch=batch), a, y)
    assert rec.partition_only and rec.decided.all()
    assert _same_partition(rec.a_hat, a)
    assert rec.info["case"].startswith("2") and rec.info["N_alpha"] == rec.info["N_beta"] == 60
    assert rec.info["pair_probes"] == view.n - 1 and rec.queries == view.n
    # pair probes accept exactly the reference and the target
    assert all((p.predictions.sum(axis=1) == 2).all() for p in probes[1:])


def test_abs_sp_partition_targets_first_k_and_list():
    a, y, view = _world(5)
    rec, _ = _drive(_attack("abs-sp-partition", view, targets=30), a, y)
    np.testing.assert_array_equal(rec.indices, np.arange(30))
    assert _same_partition(rec.a_hat, a[:30]) and rec.queries == 30
    idx = [17, 3, 150, 42]
    rec, probes = _drive(_attack("abs-sp-partition", view, targets=idx), a, y)
    np.testing.assert_array_equal(rec.indices, idx)
    assert rec.info["reference"] == 17 and _same_partition(rec.a_hat, a[idx])
    assert probes[0].predictions[0, 17] == 1 and probes[0].predictions.sum() == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_abs_sp_partition_rounded_answers(seed):
    # n0 = 40 of 200: 1/40 = 0.025 and 1/160 = 0.00625 stay apart at 2 decimals (0.03 vs 0.01)
    a, y, view = _world(seed, n0=40)
    rec, _ = _drive(_attack("abs-sp-partition", view, batch=True), a, y, decimals=2)
    np.testing.assert_array_equal(rec.a_hat, a)
    # the rounded first answer leaves several sizes; counting the whole partition pins N_alpha
    assert {rec.info["N_alpha"], rec.info["N_beta"]} == {40, 160}


def test_abs_sp_partition_near_equal_sizes_falls_back_to_pairs():
    # 95 vs 105: 1/95 and 1/105 both round to 0.01, but 2/N (0.02) vs |1/95 - 1/105| (0.00) do not
    a, y, view = _world(0, n=200, n0=95)
    rec, _ = _drive(_attack("abs-sp-partition", view, batch=True), a, y, decimals=2)
    assert _same_partition(rec.a_hat, a) and rec.info["pair_probes"] > 0


def test_abs_sp_partition_raises_when_precision_hides_the_partition():
    a, y, view = _world(0, n=200, n0=40)  # 1/40 and 1/160 both round to 0.0; so do 2/N and the difference
    with pytest.raises(AttackError) as err:
        _drive(_attack("abs-sp-partition", view, batch=True), a, y, decimals=1)
    prefix = NOT_DISTINGUISHABLE.split("{decimals}")[0].format(metric="abs_sp")
    assert str(err.value).startswith(prefix) and "release more decimals" in str(err.value)


def test_abs_sp_partition_rejects_answers_that_are_not_exact():
    a, y, view = _world(0)
    attack = _attack("abs-sp-partition", view, batch=True)
    run = attack.run()
    first = next(run)
    probe = run.send(Answer(np.atleast_1d(evaluate("abs_sp", first.predictions, a))))
    values = np.atleast_1d(evaluate("abs_sp", probe.predictions, a)) + np.random.default_rng(0).normal(0, 1e-3, 199)
    with pytest.raises(AttackError, match=re.escape(INCONSISTENT.format(metric="abs_sp"))):
        run.send(Answer(values))


# -- EO / PE ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name,metric,label", [("eo-flip", "eo", 1), ("pe-flip", "pe", 0)])
def test_signed_slice_flips_decide_exactly_their_slice(seed, name, metric, label):
    a, y, view = _world(seed)
    rec, probes = _drive(_attack(name, view, seed=seed, targets=60, batch=True), a, y)
    inside = y[rec.indices] == label
    np.testing.assert_array_equal(rec.decided, inside)  # Remark 5: the other slice is undecided
    np.testing.assert_array_equal(rec.a_hat[inside], a[rec.indices][inside])
    assert rec.queries == 1 + int(inside.sum()) and all(p.metric == metric for p in probes)
    # slice group sizes come out of the unit steps
    assert rec.info[f"N0_y{label}"] == int(((a == 0) & (y == label)).sum())
    assert "Remark 5" in rec.info["outside_slice"]
    assert not rec.partition_only


def test_eo_flip_rounded_answers():
    a, y, view = _world(1)
    rec, _ = _drive(_attack("eo-flip", view, targets=40), a, y, decimals=3)
    inside = y[rec.indices] == 1
    np.testing.assert_array_equal(rec.a_hat[inside], a[rec.indices][inside])
    assert rec.decided[inside].all()


def test_eo_flip_steps_rounded_to_zero_are_undecided():
    a, y, view = _world(1)
    # slice groups of 33 and 84: steps 0.030 and 0.012 mostly vanish at 1 decimal
    rec, _ = _drive(_attack("eo-flip", view, targets=view.n, batch=True), a, y, decimals=1)
    inside = y[rec.indices] == 1
    lost = int((inside & ~rec.decided).sum())
    assert 0 < lost < inside.sum() and rec.info["warning"] == SIGN_LOST.format(count=lost, total=int(inside.sum()))
    # a step that survives rounding keeps its sign (rounding is monotone)
    np.testing.assert_array_equal(rec.a_hat[rec.decided], a[rec.indices][rec.decided])


@pytest.mark.parametrize("seed", SEEDS)
def test_abs_eo_partitions_the_positive_slice(seed):
    a, y, view = _world(seed)
    rec, probes = _drive(_attack("eo-flip", view, targets=view.n, metric="abs_eo", batch=True), a, y)
    inside = y[rec.indices] == 1
    assert rec.partition_only
    np.testing.assert_array_equal(rec.decided, inside)
    assert _same_partition(rec.a_hat[inside], a[rec.indices][inside])
    assert all(p.metric == "abs_eo" for p in probes) and rec.queries == int(inside.sum())


@pytest.mark.parametrize("seed", SEEDS)
def test_eodds_partitions_each_slice(seed):
    a, y, view = _world(seed)
    rec, probes = _drive(_attack("eodds-flip", view, targets=view.n, batch=True), a, y)
    assert rec.partition_only and rec.decided.all() and rec.queries == view.n
    truth = a[rec.indices]
    for label in (0, 1):
        inside = y[rec.indices] == label
        assert _same_partition(rec.a_hat[inside], truth[inside])
        sizes = {rec.info[f"y{label}_N_alpha"], rec.info[f"y{label}_N_beta"]}
        assert sizes == {int(((a == 0) & (y == label)).sum()), int(((a == 1) & (y == label)).sum())}
    # probes are the perfect classifier flipped at one individual (or two)
    assert all(((p.predictions != y).sum(axis=1) <= 2).all() for p in probes)


def test_eodds_size_guess_labels_both_slices_when_a0_is_smaller_in_each():
    a, y, view = _world(2, n0=30)
    rec, _ = _drive(_attack("eodds-flip", view, targets=view.n, batch=True), a, y)
    np.testing.assert_array_equal(rec.a_hat, a[rec.indices])


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_eodds_rounded_answers(seed):
    a, y, view = _world(seed)
    rec, _ = _drive(_attack("eodds-flip", view, targets=view.n, batch=True), a, y, decimals=3)
    for label in (0, 1):
        inside = y[rec.indices] == label
        assert _same_partition(rec.a_hat[inside], a[rec.indices][inside])


def test_eodds_raises_when_precision_hides_the_partition():
    a, y, view = _world(0)
    with pytest.raises(AttackError) as err:
        _drive(_attack("eodds-flip", view, targets=view.n, batch=True), a, y, decimals=0)
    prefix = NOT_DISTINGUISHABLE.split("{decimals}")[0].format(metric="eodds")
    assert str(err.value).startswith(prefix) and "release more decimals" in str(err.value)


# -- PRP --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("decimals", [None, 6])
def test_prp_flip_recovers_every_target(seed, decimals):
    a, y, view = _world(seed)
    rec, probes = _drive(_attack("prp-flip", view, seed=seed, targets=view.n, batch=True), a, y, decimals)
    assert rec.decided.all() and not rec.partition_only
    np.testing.assert_array_equal(rec.a_hat, a[rec.indices])
    assert rec.queries == view.n + 1 and probes[0].metric == "prp"


def test_prp_flip_coarse_rounding_keeps_every_decided_sign_right():
    a, y, view = _world(0)
    rec, _ = _drive(_attack("prp-flip", view, targets=view.n, batch=True), a, y, decimals=2)
    # rounding is monotone: a difference that survives rounding has the true sign; the rest are undecided
    assert 0 < rec.decided.sum() < view.n
    np.testing.assert_array_equal(rec.a_hat[rec.decided], a[rec.indices][rec.decided])
    assert "undecided" in rec.info["warning"]


def test_prp_flip_zero_differences_are_undecided_not_guessed():
    a, y, view = _world(0)
    # base precision 1 in both groups: it accepts only positives, so flipping a positive moves nothing
    base = ((y == 1) & (np.arange(view.n) % 2 == 0)).astype(np.int8)
    view = AttackerView(n=view.n, base_predictions=base, y=y)
    rec, _ = _drive(_attack("prp-flip", view, targets=view.n, batch=True), a, y)
    np.testing.assert_array_equal(rec.decided, y == 0)
    np.testing.assert_array_equal(rec.a_hat[y == 0], a[y == 0])
    assert "undecided" in rec.info["warning"]


def test_label_attacks_need_labels():
    a, y, view = _world(0)
    bare = AttackerView(n=view.n)
    for name in ("eo-flip", "pe-flip", "eodds-flip", "prp-flip"):
        with pytest.raises(AttackError, match="needs the audit labels"):
            next(_attack(name, bare).run())
