"""Paired perturbation probes (compressed-sensing ``design = "paired"``): design, block reads, recovery, refusals."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats

from parley.parties.attacks import Answer, get_attack
from parley.parties.attacks.query_leakage.paired import (
    NEEDS_PRECISION,
    NO_FIT,
    answer_error,
    block_width,
    read_block,
    redraw_block,
    subset_sum_window,
)
from parley.parties.attacks.query_leakage.probes import uniform_perturbations
from parley.parties.attacks.query_leakage.reveal import PAIRED_WITH_PRIOR
from parley.protocols.errors import AttackError, ConfigError
from parley.protocols.metrics import statistical_parity_difference
from parley.scenarios.catalog import scenario_path
from parley.scenarios.spec import Scenario
from tests.oracle import drive_with_probes, synthetic_world


def _paired(view, seed=0, **params):
    cls = get_attack("compressed-sensing")
    return cls(cls.Params(design="paired", **params), view, np.random.default_rng(seed))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize(("n", "n0"), [(200, 20), (1000, 100), (600, 300)])
def test_paired_design_reads_everyone_exactly(seed, n, n0):
    a, view = synthetic_world(seed, n, n0)
    rec, probes = drive_with_probes(_paired(view, seed), a)
    np.testing.assert_array_equal(rec.a_hat, a)
    info = rec.info
    assert rec.decided.all() and info["certified"] and (info["N0"], info["N1"]) == (n0, n - n0)
    assert info["worst_fit_tolerances"] <= 1.0 and info["probe_max_deviation"] <= 0.1
    # one reference, one query per block read or asked again: about n / K, never the i.i.d. design's 0.24 n
    assert rec.queries == len(probes) <= 1 + info["blocks_read"] + info["ambiguous_blocks"] + 1
    # every block but the last few reads K individuals (the first reads fewer: it also reads the group sizes;
    # the last ones redraw the few whose fresh draw equalled the reference)
    assert info["blocks_read"] <= 1 + int(np.ceil((n - info["first_block_width"]) / info["block_width"])) + 2
    assert info["counting_bound"] <= rec.queries
    if n == 1000:
        assert rec.queries <= 60
    assert {"base_accuracy", "probe_accuracy_min", "probe_accuracy_max"} <= info.keys()


def test_every_probe_is_the_reference_but_for_one_block():
    a, view = synthetic_world(5, 400, 40)
    rec, probes = drive_with_probes(_paired(view, 5), a)
    ref = probes[0].predictions[0]
    assert probes[0].keep and all(p.relative_to == probes[0].name for p in probes[1:])
    changed = [int((p.predictions[0] != ref).sum()) for p in probes[1:]]
    assert max(changed) <= rec.info["block_width"] and sum(changed) >= 400
    assert np.abs(np.vstack([p.predictions for p in probes]) - view.base_scores).max() <= 0.1


def test_every_probe_entry_is_an_alg2_draw():
    """Entries of a block probe are i.i.d. clip(h0 + U(-b, b)) despite the walk that fills the block.

    Scores at h0 = 0.02 are clipped to 0 with probability 0.4, so an individual's fresh draw often
    equals its reference value and the walk goes on; a design that redrew until each moved would
    make zeros rarer. Three tests, Bonferroni, family-wise alpha = 0.003: the share of zeros
    (binomial), the positive part against U(0, 0.12) (Kolmogorov-Smirnov) and independence of
    consecutive entries' zero indicators (chi-square 2 x 2).
    """
    rng = np.random.default_rng(11)
    n, k, b, reps = 40, 10, 0.1, 3000
    h0 = np.full(n, 0.02)
    rows, moved_zero = [], []
    for _ in range(reps):
        ref = uniform_perturbations(h0, 1, b, rng)[0]
        order = rng.permutation(n)
        row, moved, still, _ = redraw_block(h0, ref, order, k, b, rng)
        assert moved.size == k and (row[moved] != ref[moved]).all() and (row[still] == ref[still]).all()
        rows.append(row[order])
        moved_zero.append(row[moved] == 0.0)
    H = np.vstack(rows)
    zeros = H == 0.0
    assert stats.binomtest(int(zeros.sum()), zeros.size, 0.4).pvalue > 0.001
    assert stats.kstest(H[~zeros] / (h0[0] + b), "uniform").pvalue > 0.001
    table = np.array([[np.sum(~zeros[:, :-1] & ~zeros[:, 1:]), np.sum(~zeros[:, :-1] & zeros[:, 1:])],
                      [np.sum(zeros[:, :-1] & ~zeros[:, 1:]), np.sum(zeros[:, :-1] & zeros[:, 1:])]])
    assert stats.chi2_contingency(table).pvalue > 0.001
    # the moved individuals alone are not Alg. 2 draws (fewer zeros): the test above has power against that
    assert stats.binomtest(int(np.sum(moved_zero)), np.size(moved_zero), 0.4).pvalue < 1e-6


def test_meet_in_the_middle_finds_the_planted_subset_and_flags_twins():
    rng = np.random.default_rng(0)
    w = rng.uniform(-0.2, 0.2, 21)
    mask = rng.random(21) < 0.3
    counts, hit = subset_sum_window(w, np.array([w[mask].sum()]), np.array([1e-12]))
    assert counts.tolist() == [1] and hit[0] == 0
    np.testing.assert_array_equal(hit[1], mask)
    twins = np.array([0.05, 0.05, 0.13])  # {0} and {1} give the same sum: ambiguous, never a guess
    counts, hit = subset_sum_window(twins, np.array([0.05]), np.array([1e-12]))
    assert counts.tolist() == [2] and hit is None


def test_a_block_read_gives_its_minority_and_the_group_size():
    """The sign convention of protocols/metrics.py: SP = mean over a=1 - mean over a=0."""
    a, view = synthetic_world(3, 300, 45)
    rng = np.random.default_rng(3)
    ref = uniform_perturbations(view.base_scores, 1, 0.1, rng)[0]
    row, moved, _, _ = redraw_block(view.base_scores, ref, rng.permutation(300), 12, 0.1, rng)
    diff = statistical_parity_difference(row, a) - statistical_parity_difference(ref, a)
    read = read_block(row[moved] - ref[moved], diff, 300, np.arange(1, 300), answer_error(None, 16), 256)
    assert read.status == "read" and read.n1 == 255
    np.testing.assert_array_equal(read.x, a[moved] == 0)
    flipped = read_block(row[moved] - ref[moved], -diff, 300, np.array([255]), answer_error(None, 16), 256)
    assert flipped.status == "none"  # the negated difference fits no subset: a bad read, not a wrong one


def test_block_width_follows_the_released_precision():
    c = 1 / 900 + 1 / 100
    widths = [block_width(1, answer_error(d, 16), c, 0.1, 1.0, 0.01) for d in (10, 12, 14)]
    assert widths == sorted(widths) and widths[0] >= 1
    float64 = block_width(1, answer_error(None, 16), c, 0.1, 256.0, 0.01)
    assert 18 <= float64 <= 30
    assert block_width(999, answer_error(None, 16), 0.004, 0.1, 256.0, 0.01) < float64
    assert block_width(1, answer_error(4, 16), c, 0.1, 1.0, 0.01) == 0


def test_rounded_answers_narrow_the_blocks_or_are_refused():
    a, view = synthetic_world(0, 1000, 100)
    rec, _ = drive_with_probes(_paired(view), a, decimals=10)
    np.testing.assert_array_equal(rec.a_hat, a)
    exact, _ = drive_with_probes(_paired(view), a)
    assert rec.info["certified"] and rec.info["block_width"] < exact.info["block_width"]
    coarse, _ = drive_with_probes(_paired(view), a, decimals=9)  # too coarse to read N1 from a block
    np.testing.assert_array_equal(coarse.a_hat, a)
    assert coarse.info["certified"] and coarse.info["first_block_width"] == coarse.info["block_width"]
    assert coarse.queries == 3 + coarse.info["blocks_read"] + coarse.info["ambiguous_blocks"]  # + double query
    with pytest.raises(AttackError, match="needs answers to 7 decimals at least") as err:
        drive_with_probes(_paired(view), a, decimals=4)
    assert str(err.value).startswith(NEEDS_PRECISION.split("{")[0])


def test_noisy_answers_stop_the_attack_instead_of_a_guess():
    a, view = synthetic_world(0, 300, 30)
    run = _paired(view).run()
    probe = next(run)
    noise = np.random.default_rng(1)
    with pytest.raises(AttackError, match=NO_FIT.split("{")[0]):
        while True:
            probe = run.send(Answer(statistical_parity_difference(probe.predictions, a) + noise.normal(0, 1e-9, 1)))


def test_query_cap_leaves_the_rest_undecided():
    a, view = synthetic_world(0, 400, 40)
    rec, _ = drive_with_probes(_paired(view, max_queries=5), a)
    assert rec.queries == 5 and not rec.info["certified"] and "warning" in rec.info
    assert 0 < rec.decided.sum() < 400 and (rec.a_hat[rec.decided] == a[rec.decided]).all()


def test_paired_design_reads_its_own_group_sizes():
    cls = get_attack("compressed-sensing")
    with pytest.raises(ValidationError, match="paired design reads the group sizes"):
        cls.Params(design="paired", n0_prior=0.1)
    scenario = Scenario.from_toml(scenario_path("adult-reveal-cs"))
    with pytest.raises(ConfigError, match="n0_prior applies to the i.i.d. designs"):
        scenario.with_values({"attack.n0_prior": 0.1})
    assert PAIRED_WITH_PRIOR.startswith("attack.n0_prior")
