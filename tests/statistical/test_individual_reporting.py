"""Seeded statistical tests of individual reporting t(x, y, a) (Sec. 6, Prop. 2 of the private-demographics paper).

A synthetic population where A shifts a feature x, Y depends on x and A, and the
predictor is Y-hat = 1(x > 0.5), with A released through binary randomized
response at eps = 1 and withheld by whoever does not report:

- t depends on x (and y, a): Prop. 2's condition fails; the reporters' estimate
  is biased, the estimate reweighted by the true t is not, and one reweighted by
  a wrong t (the right table, no slope) is biased like the reporters' own;
- t depends on (y, a) only: Prop. 2's condition holds for equalized odds (the
  reporters' estimate is unbiased) and fails for demographic parity (biased),
  where the correction is again unbiased.

Significance level ALPHA = 0.01 per test (Bonferroni-split over entries).
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats

from parley.protocols.errors import QueryError
from parley.protocols.estimators.reporting import (
    BAD_FEATURE,
    NO_FEATURE,
    ReportingFunction,
    report,
    reporting_rates,
)
from parley.protocols.estimators.rr_estimators import group_rates, privatize

ALPHA = 0.01
EPS = 1.0
T_X = ReportingFunction(table=((0.3, 0.6), (0.5, 0.8)), feature=0, slope=1.5)   # depends on x, y and a
T_YA = ReportingFunction(table=((0.8, 0.6), (0.3, 0.9)))                        # depends on y and a


def _population(n, rng):
    a = (rng.random(n) < 0.4).astype(np.int64)
    x = rng.normal(0.8 * a, 1.0)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(x - 0.3 + 0.5 * a)))).astype(np.int64)
    return np.c_[x, rng.normal(size=n)], y, a, (x > 0.5).astype(np.float64)


@functools.cache
def _truth(notion):
    X, y, a, yhat = _population(2_000_000, np.random.default_rng(0))
    return group_rates(notion, yhat, y, a, 700.0, 2).naive


def _estimates(notion, true_t, assumed, reps=60, n=20_000, seed=41):
    """(reps, 3, c, k): corrected with ``assumed``, reporters only, corrected with the true t."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(reps):
        X, y, a, yhat = _population(n, rng)
        z = privatize(a, EPS, 2, rng).astype(np.int64)
        z[~report(true_t, X, y, a, rng)] = -1
        wrong = reporting_rates(notion, yhat, X, y, z, EPS, 2, assumed)
        right = reporting_rates(notion, yhat, X, y, z, EPS, 2, true_t)
        out.append((wrong.corrected, wrong.reporters_only, right.corrected))
    return np.asarray(out)


def _unbiased(samples, truth, entries):
    return all(stats.ttest_1samp(samples[(slice(None), *i)], truth[i]).pvalue > ALPHA / entries
               for i in np.ndindex(truth.shape))


def _gap(samples):
    return samples[:, -1, 1] - samples[:, -1, 0]


@pytest.mark.system
def test_correction_by_the_true_t_is_unbiased_and_the_reporters_estimate_is_not_when_t_reads_x():
    truth = _truth("equalized_odds")
    est = _estimates("equalized_odds", T_X, ReportingFunction(table=T_X.table))
    assert not T_X.meets_prop2("equalized_odds")
    assert _unbiased(est[:, 2], truth, 4)                        # corrected by the true t
    true_gap = truth[1, 1] - truth[1, 0]
    for biased in (est[:, 1], est[:, 0]):                        # reporters only; a wrong t (slope forgotten)
        assert stats.ttest_1samp(_gap(biased), true_gap).pvalue < ALPHA
        assert abs(_gap(biased).mean() - true_gap) > 0.05
    # A t that depends on (y, a) only cancels within each Y = y: the wrong t here is the reporters' estimate.
    assert np.allclose(est[:, 0], est[:, 1])


@pytest.mark.system
def test_prop2_holds_for_equalized_odds_and_fails_for_demographic_parity_when_t_reads_y_and_a():
    assert T_YA.meets_prop2("equalized_odds") and not T_YA.meets_prop2("demographic_parity")
    eo = _estimates("equalized_odds", T_YA, T_YA, reps=40, seed=42)
    assert _unbiased(eo[:, 1], _truth("equalized_odds"), 4)      # Prop. 2: reporters alone suffice for EO
    truth = _truth("demographic_parity")
    dp = _estimates("demographic_parity", T_YA, ReportingFunction.constant(0.5, 2), reps=40, seed=43)
    assert _unbiased(dp[:, 2], truth, 2)                         # corrected by the true t
    for biased in (dp[:, 1], dp[:, 0]):                          # reporters only; a constant t (wrong)
        assert stats.ttest_1samp(_gap(biased), truth[0, 1] - truth[0, 0]).pvalue < ALPHA


def test_reporting_function_refuses_bad_parameters_with_clear_errors():
    with pytest.raises(ValidationError, match=r"reporting.table must be 2 rows"):
        ReportingFunction(table=((0.5, 0.0), (0.5, 0.5)))          # t must be > 0 (Prop. 2)
    with pytest.raises(ValidationError, match=r"reporting.table must be 2 rows"):
        ReportingFunction(table=((0.5, 0.5, 0.5),))
    with pytest.raises(ValidationError, match=r"reporting.table must be 2 rows"):
        ReportingFunction(table=((0.5, 1.2), (0.5, 0.5)))
    with pytest.raises(ValidationError, match=re.escape(NO_FEATURE.format(slope=2.0))):
        ReportingFunction(table=((0.5, 0.5), (0.5, 0.5)), slope=2.0)
    with pytest.raises(ValidationError, match="feature"):
        ReportingFunction(table=((0.5, 0.5), (0.5, 0.5)), feature=-1, slope=1.0)
    t = ReportingFunction(table=((0.5, 0.5), (0.5, 0.5)), feature=3, slope=1.0)
    with pytest.raises(QueryError, match=re.escape(BAD_FEATURE.format(feature=3, columns=2))):
        t.probabilities(np.zeros((4, 2)), np.zeros(4, dtype=int), np.zeros(4, dtype=int))
    with pytest.raises(QueryError, match=r"y must be a vector of labels 0 or 1 .* found \[2\]"):
        ReportingFunction(table=((0.5, 0.5), (0.5, 0.5))).candidates(None, np.array([0, 2]))
    with pytest.raises(QueryError, match="3 groups but the release has 2"):
        reporting_rates("equalized_odds", np.ones(4), None, np.array([0, 1, 0, 1]), np.array([0, 1, 1, 0]), 1.0, 2,
                        ReportingFunction(table=((0.5,) * 3, (0.5,) * 3)))
