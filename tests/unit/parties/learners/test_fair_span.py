"""DFRR, DFKRR, DFGR, DFPCA against their closed forms and scikit-learn; the baselines; Table II metrics."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression

from parley.parties.learners import get_learner
from parley.parties.learners.evaluation import classification_metrics
from parley.parties.learners.hypotheses import draw, predictions, rbf_kernel


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    n, p = 400, 6
    s = (rng.random(n) < 0.4).astype(np.int8)
    X = rng.normal(size=(n, p)) + 0.8 * s[:, None] * np.array([1, 0, 0, 1, 0, 0])
    y = (X @ np.array([1.0, -0.5, 0.3, 0.8, 0.0, 0.2]) + rng.normal(size=n) > 0.3).astype(np.int8)
    return X, y, s


def _learner(name, **params):
    cls = get_learner(name)
    return cls(cls.Params(**params))


def test_dfrr_is_equation_4_on_centred_data(data):
    X, y, _ = data
    H = draw("linear", X, 5, 1.0, seed=1)
    model = _learner("dfrr", lam=0.5).fit(X, y, H)
    Xc, yc = X - X.mean(0), y - y.mean()
    alpha = np.linalg.solve(H.T @ Xc.T @ Xc @ H + 0.5 * len(y) * np.eye(5), H.T @ Xc.T @ yc)  # (4), lambda = lam n
    assert np.allclose(model.coef_, H @ alpha)
    assert np.allclose(model.decision_function(X), Xc @ H @ alpha + y.mean())


def test_dfgr_newton_matches_scikit_learn_logistic_regression_in_the_full_span(data):
    X, y, _ = data
    lam = 0.01
    model = _learner("dfgr", lam=lam).fit(X, y, np.eye(X.shape[1]))  # H = I: the span is every linear model
    # our J = -loglik + lam n ||w||^2  <=>  scikit-learn's C = 1 / (2 lam n)
    ref = LogisticRegression(C=1.0 / (2 * lam * len(y)), tol=1e-10, max_iter=10000).fit(X, y)
    assert np.allclose(model.coef_, ref.coef_[0], atol=1e-5)
    assert np.allclose(model.intercept_, ref.intercept_[0], atol=1e-5)
    assert model.n_iter_ < 50


def test_dfpca_in_the_full_span_is_pca_and_stays_in_a_smaller_span(data):
    X, y, _ = data
    model = _learner("dfpca").fit(X, y, np.eye(X.shape[1]))
    top = PCA(1).fit(X).components_[0]
    assert abs(abs(model.components_[:, 0] @ top) - 1.0) < 1e-8
    H = draw("linear", X, 2, 1.0, seed=2)
    v = _learner("dfpca").fit(X, y, H).components_[:, 0]
    residual = v - H @ np.linalg.lstsq(H, v, rcond=None)[0]
    assert np.linalg.norm(residual) < 1e-10 and abs(np.linalg.norm(v) - 1) < 1e-10  # (12): v = H alpha, ||v|| = 1


def test_dfkrr_is_equation_7(data):
    X, y, _ = data
    C = draw("kernel", X, 8, 1.0, seed=3)
    model = _learner("dfkrr", lam=0.3).fit(X, y, C)
    K = rbf_kernel(X, X, 1.0 / X.shape[1])
    A = (K + 0.3 * np.eye(len(y))) @ C
    alpha = np.linalg.solve(A.T @ A, A.T @ (y - y.mean()))  # (7)
    assert np.allclose(model.decision_function(X), K @ C @ alpha + y.mean())
    assert np.allclose(predictions("kernel", X, C), (K @ C).T)


def test_an_empty_span_gives_the_base_rate_model(data):
    X, y, _ = data
    for name in ("dfrr", "dfgr", "dfpca"):
        model = _learner(name).fit(X, y, np.zeros((X.shape[1], 0)))
        assert np.unique(model.predict(X)).size == 1, name


def test_frr_penalty_drives_the_mean_difference_to_zero(data):
    X, y, s = data
    free = _learner("frr", lam=0.0).fit(X, y, s)
    fair = _learner("frr", lam=1e4).fit(X, y, s)

    def md(m):
        return m.decision_function(X)[s == 1].mean() - m.decision_function(X)[s == 0].mean()

    ols = np.linalg.lstsq(np.column_stack([X, np.ones(len(y))]), y, rcond=None)[0]
    assert np.allclose(free.coef_, ols[:-1])
    assert abs(md(fair)) < 1e-3 * abs(md(free))


def test_exponentiated_gradient_baseline_lowers_statistical_parity(data):
    X, y, s = data
    fair = _learner("expgrad-dp", difference_bound=0.01).fit(X, y, s)
    plain = LogisticRegression().fit(X, y).predict(X)
    assert (classification_metrics(fair.predict(X), y, s)["statistical_parity"]
            < classification_metrics(plain, y, s)["statistical_parity"])


def test_table_ii_metrics_on_a_hand_example():
    y_hat = np.array([1, 1, 0, 0, 1, 0, 0, 0])
    y = np.array([1, 0, 0, 1, 1, 0, 0, 1])
    s = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    m = classification_metrics(y_hat, y, s)
    assert m["statistical_parity"] == pytest.approx(0.25)  # 2/4 - 1/4
    assert m["normed_disparate"] == pytest.approx(0.5)  # 1 - (1/4)/(2/4)
    assert m["error"] == pytest.approx(3 / 8)
    assert m["error_parity"] == pytest.approx(0.25)  # er(s=1) = 2/4, er(s=0) = 1/4
    assert m["error_disparate"] == pytest.approx(1.0)  # |0.5 / 0.25 - 1|
