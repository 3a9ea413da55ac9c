"""The partial-reporting learner (Sec. 6, Lagrangian (14)): its fairlearn moment's algebra and its effect.

Seeded synthetic population with known truth: A uniform over k groups, a feature
shifted by A, and Y depending on the features, so an unconstrained classifier
violates equalized odds w.r.t. A. Statistical checks at ALPHA = 0.01.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression

from parley.parties.learners import get_learner
from parley.parties.learners.debiased_moment import (
    BAD_CODES,
    EMPTY_GROUP,
    NO_REPORTERS,
    DebiasedParity,
    constraint_matrix,
)
from parley.parties.learners.partial_reporting import PartialReportingLearner
from parley.protocols.errors import QueryError
from parley.protocols.estimators.rr_estimators import group_rates, privatize
from parley.scenarios.spec import Scenario

ALPHA = 0.01


def _population(n, rng, k=2):
    a = rng.integers(0, k, n)
    x1 = rng.normal(a, 1.0)                  # the feature that carries A
    x2 = rng.normal(0.0, 1.0, n)
    y = (x1 + x2 + rng.normal(0.0, 1.0, n) > 0.8).astype(np.int64)
    return np.c_[x1, x2], y, a


def _true_disc(soft, y, a, k):
    return group_rates("equalized_odds", soft, y, a, 700.0, k).naive_gap


@pytest.mark.parametrize("k", [2, 3])
def test_moment_is_the_debiased_gap_on_the_reporters_only(k):
    rng = np.random.default_rng(5)
    _, y, a = _population(3000, rng, k)
    z = privatize(a, 1.5, k, rng, report_probability=0.6)
    h = (rng.random(3000) < 0.4).astype(float)
    G, index = constraint_matrix("equalized_odds", y, z, 1.5, k)
    assert G.shape == (2 * 2 * k, 3000) and list(index[0]) == ["+", "label=0", 0]
    assert np.all(G[:, z == -1] == 0)                                     # S_u carries no constraint weight
    debiased = group_rates("equalized_odds", h, y, z, 1.5, k).debiased   # Sec. 4's estimator, reporters only
    plain = np.array([h[(z != -1) & (y == label)].mean() for label in (0, 1)])
    plus = (G @ h)[: 2 * k].reshape(2, k)
    assert np.allclose(plus, debiased - plain[:, None])
    assert np.allclose((G @ h)[2 * k:], -(G @ h)[: 2 * k])
    # Released mode (W = I): the plain rates of the reporters w.r.t. Z.
    G_z, _ = constraint_matrix("demographic_parity", y, z, 1.5, k, debiased=False)
    naive = group_rates("demographic_parity", h, y, z, 1.5, k).naive[0]
    assert np.allclose((G_z @ h)[:k], naive - h[z != -1].mean())


def test_signed_weights_give_withheld_rows_the_plain_misclassification_cost():
    rng = np.random.default_rng(6)
    X, y, a = _population(400, rng)
    z = privatize(a, 1.0, 2, rng, report_probability=0.5)
    moment = DebiasedParity("equalized_odds", 1.0, 2, alpha=0.02)
    moment.load_data(X, y, sensitive_features=z)
    lam = pd.Series(rng.random(len(moment.index)), index=moment.index)
    weights = moment.signed_weights(lam).to_numpy()
    assert np.all(weights[z == -1] == 0) and np.any(weights[z != -1] != 0)
    assert np.allclose(weights, -400 * moment.G.T @ lam.to_numpy())      # -n d(lambda . gamma)/dh
    assert np.all(moment.bound() == 0.02)
    objective = moment.default_objective()
    objective.load_data(X, y, sensitive_features=z)
    assert np.allclose(objective.signed_weights(), 2 * y - 1)            # err^S over every row


def test_moment_rejects_bad_releases_with_their_messages():
    y = np.array([0, 1, 0, 1])
    with pytest.raises(QueryError) as err:
        constraint_matrix("equalized_odds", y, np.full(4, -1), 1.0, 2)
    assert str(err.value) == NO_REPORTERS
    with pytest.raises(QueryError) as err:
        constraint_matrix("equalized_odds", y, np.array([0, 1, 2, -1]), 1.0, 2)
    assert str(err.value) == BAD_CODES.format(last=1, bad=[2])
    # Everyone released Z = 0: the debiased weight of group 1 is negative (no evidence of that group).
    with pytest.raises(QueryError) as err:
        constraint_matrix("equalized_odds", y, np.zeros(4, dtype=int), 1.0, 2)
    assert str(err.value).startswith(EMPTY_GROUP.split("{")[0]) and "group 1" in str(err.value)


@pytest.mark.parametrize("k", [2, 3])
def test_learner_removes_most_discrimination_with_respect_to_the_true_attribute(k):
    """(14) on half reporters at eps = 1 vs an unconstrained logistic regression, both scored on fresh data.

    Check: over 10 disjoint folds of the test population, the unconstrained disc minus the learner's is
    positive (one-sided paired t-test at ALPHA), and the learner's disc is below half the unconstrained one.
    """
    rng = np.random.default_rng(20 + k)
    X, y, a = _population(6000, rng, k)
    z = privatize(a, 1.0, k, rng, report_probability=0.5)
    learner = get_learner("partial-reporting")(PartialReportingLearner.Params(max_iter=20)).fit(X, y, z, 1.0, k)
    plain = LogisticRegression(max_iter=1000).fit(X, y)
    X_test, y_test, a_test = _population(60_000, rng, k)
    proba = learner.predict_proba(X_test)
    assert proba.shape == (60_000, 2) and np.allclose(proba.sum(axis=1), 1)
    assert set(np.unique(learner.predict(X_test[:50], random_state=0))) <= {0, 1}
    fair, unfair = proba[:, 1], plain.predict(X_test).astype(float)
    folds = np.array_split(np.arange(60_000), 10)
    diffs = [_true_disc(unfair[f], y_test[f], a_test[f], k) - _true_disc(fair[f], y_test[f], a_test[f], k)
             for f in folds]
    assert stats.ttest_1samp(diffs, 0.0, alternative="greater").pvalue < ALPHA
    assert _true_disc(fair, y_test, a_test, k) < 0.5 * _true_disc(unfair, y_test, a_test, k)
    assert learner.reporters_ == int(np.count_nonzero(z != -1))
    # Fairness costs accuracy (more with three groups), but the learner still beats the constant predictor.
    accuracy = np.mean(np.where(y_test == 1, fair, 1 - fair))
    assert max(y_test.mean(), 1 - y_test.mean()) + 0.05 < accuracy <= np.mean(unfair == y_test) + 0.01


def test_spec_admits_the_learner_in_the_rr_release_flow():
    scenario = Scenario.from_dict({
        "dataset": {"name": "adult", "protected": "sex"}, "attack": {"name": "rr-bayes"},
        "protocol": {"name": "rr-release", "report_probability": 0.5},
        "learner": {"name": "partial-reporting", "max_iter": 3, "attribute": "released"}})
    assert scenario.learner.params.attribute == "released" and scenario.learner.params.alpha == 0.01


def test_spec_refuses_a_three_group_dataset_under_a_binary_protocol():
    from parley.protocols.errors import ConfigError
    from parley.scenarios.spec import GROUPS_MISMATCH

    base = {"dataset": {"name": "adult", "protected": "race3"}, "attack": {"name": "rr-bayes"},
            "protocol": {"name": "rr-release", "groups": 3}}
    assert Scenario.from_dict(base).dataset.group_count == 3
    with pytest.raises(ConfigError) as err:
        Scenario.from_dict({**base, "protocol": {"name": "rr-release"}})
    assert str(err.value) == GROUPS_MISMATCH.format(name="adult", protected="race3", k=3, protocol="rr-release",
                                                    takes="has groups = 2")
    with pytest.raises(ConfigError, match="is binary"):
        Scenario.from_dict({**base, "protocol": {"name": "raw"}, "attack": {"name": "double-query"}})
