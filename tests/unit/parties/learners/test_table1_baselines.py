"""FKRR, the prejudice remover (FGR) and LFR, the baselines of Table I: closed forms, gradients, fairness knobs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import LogisticRegression

from parley.parties.learners import get_learner
from parley.parties.learners.evaluation import classification_metrics
from parley.parties.learners.lfr import lfr_loss
from parley.parties.learners.prejudice_remover import objective


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    n, p = 300, 5
    s = (rng.random(n) < 0.3).astype(np.int8)
    X = rng.normal(size=(n, p)) + 1.0 * s[:, None] * np.array([1, 0, 1, 0, 0])
    y = (X @ np.array([1.0, -0.5, 0.5, 0.3, 0.0]) + 0.5 * rng.normal(size=n) > 0.2).astype(np.int8)
    return X, y, s


def _learner(name, **params):
    cls = get_learner(name)
    return cls(cls.Params(**params))


def test_fkrr_without_its_fairness_term_is_kernel_ridge(data):
    X, y, s = data
    lam = 1e-2
    ours = _learner("fkrr", lam=lam, mu=0.0).fit(X, y, s)
    reference = KernelRidge(alpha=lam * len(y), kernel="rbf", gamma=1.0 / X.shape[1]).fit(X, y - y.mean())
    np.testing.assert_allclose(ours.decision_function(X), reference.predict(X) + y.mean(), atol=1e-8)


def test_fkrr_mu_shrinks_the_covariance_with_s(data):
    X, y, s = data
    covs = []
    for mu in (0.0, 10.0, 1000.0):
        scores = _learner("fkrr", lam=1e-2, mu=mu).fit(X, y, s).decision_function(X)
        covs.append(abs(np.cov(scores, s, bias=True)[0, 1]))
    assert covs[0] > covs[1] > covs[2] and covs[2] < 0.05 * covs[0]


def test_prejudice_remover_gradient_matches_finite_differences(data):
    X, y, s = data
    theta = np.random.default_rng(0).normal(scale=0.3, size=X.shape[1] + 1)
    args = (X, y.astype(float), s.astype(bool), 3.0, 1.0)
    numeric = approx_fprime(theta, lambda t: objective(t, *args)[0], 1e-6)
    np.testing.assert_allclose(objective(theta, *args)[1], numeric, rtol=1e-4, atol=1e-4)


def test_prejudice_remover_without_eta_is_l2_logistic_regression(data):
    X, y, s = data
    ours = _learner("fgr", eta=0.0, C=1.0).fit(X, y, s)
    reference = LogisticRegression(C=1.0, tol=1e-10, max_iter=10000).fit(X, y)
    np.testing.assert_allclose(ours.coef_, reference.coef_[0], atol=1e-4)
    assert ours.intercept_ == pytest.approx(reference.intercept_[0], abs=1e-4)


def test_prejudice_remover_eta_lowers_statistical_parity(data):
    X, y, s = data
    sp = [classification_metrics(_learner("fgr", eta=eta).fit(X, y, s).predict(X), y, s)["statistical_parity"]
          for eta in (0.0, 30.0)]
    assert sp[1] < sp[0] - 0.05


def test_lfr_gradient_matches_finite_differences(data):
    X, y, s = data
    K = 3
    theta = np.random.default_rng(0).normal(size=K * X.shape[1] + K)
    args = (X, y.astype(float), s.astype(bool), K, 0.1, 1.0, 5.0)
    numeric = approx_fprime(theta, lambda t: lfr_loss(t, *args)[0], 1e-7)
    np.testing.assert_allclose(lfr_loss(theta, *args)[1], numeric, rtol=1e-3, atol=1e-4)


def test_lfr_parity_weight_lowers_statistical_parity(data):
    X, y, s = data
    fitted = {A_z: _learner("lfr", A_z=A_z, max_iter=300).fit(X, y, s) for A_z in (0.0, 50.0)}
    sp = {A_z: classification_metrics(m.predict(X), y, s)["statistical_parity"] for A_z, m in fitted.items()}
    error = classification_metrics(fitted[0.0].predict(X), y, s)["error"]
    assert error < 0.3  # without the parity term LFR is a working classifier
    assert sp[50.0] < sp[0.0]
    np.testing.assert_allclose(fitted[50.0].transform(X).sum(1), 1.0)
