"""FPCA1 (Samadi et al.) and FPCA2 (Olfat and Aswani), the fair PCA baselines of Table I: their SDPs solved by SCS."""

from __future__ import annotations

import numpy as np
import pydantic
import pytest

from parley.parties.learners import get_learner
from parley.parties.learners.fair_pca import (
    FairPCAParams,
    OlfatAswaniParams,
    SolverFailed,
    _best_rank_d,
    olfat_aswani_sdp,
    samadi_lp_round,
    samadi_sdp,
)
from parley.protocols.errors import ConfigError, EmptyGroupError


@pytest.fixture(scope="module", autouse=True)
def _solver_loaded():
    """Import cvxpy, SCS and scikit-learn once (seconds on a cold start), so each test times only its own work."""
    import sklearn.linear_model  # noqa: F401

    samadi_sdp(np.eye(3), np.eye(3)[::-1], 1)


@pytest.fixture
def data():
    """Two groups whose principal directions differ: A (s = 1) spreads along e1, B along e2, B's mean shifted."""
    rng = np.random.default_rng(3)
    n, p = 240, 5
    s = rng.random(n) < 0.4
    X = rng.normal(size=(n, p)) * np.where(s[:, None], [3.0, 1.0, 1.0, 0.5, 0.5], [1.0, 2.5, 1.0, 0.5, 0.5])
    X[~s] += np.array([0.0, 0.0, 1.5, 0.0, 0.0])
    X -= X.mean(0)
    y = (X[:, 0] + X[:, 2] + 0.5 * rng.normal(size=n) > 0).astype(np.int8)
    return X, y, s


def _losses(P, A, B, d):
    """Each group's average loss: (||G_d||^2 - <G^T G, P>) / m_G."""
    return [(_best_rank_d(G, d) - float(np.sum(G.T @ G * P))) / len(G) for G in (A, B)]


@pytest.mark.parametrize("d", [1, 2])
def test_samadi_optimum_gives_the_two_groups_equal_loss(data, d):
    X, _, s = data
    A, B = X[s], X[~s]
    P, z = samadi_sdp(A, B, d)
    loss_a, loss_b = _losses(P, A, B, d)
    assert loss_a == pytest.approx(loss_b, rel=1e-3) and max(loss_a, loss_b) == pytest.approx(z, rel=1e-3)
    # Plain PCA on everyone favours one group: its max loss is above the fair optimum.
    top = np.linalg.eigh(X.T @ X)[1][:, -d:]
    assert max(_losses(top @ top.T, A, B, d)) > z * 1.05
    eigenvalues = np.linalg.eigvalsh(P)
    assert eigenvalues.min() > -1e-4 and eigenvalues.max() < 1 + 1e-4 and np.trace(P) <= d + 1e-4


def test_samadi_lp_step_keeps_at_most_d_plus_one_directions_and_loses_nothing(data):
    X, _, s = data
    A, B = X[s], X[~s]
    d = 2
    P, z = samadi_sdp(A, B, d)
    U, weights, value = samadi_lp_round(P, A, B, d)
    assert 1 <= U.shape[1] <= d + 1 and np.all((weights > 0) & (weights <= 1 + 1e-9))
    assert weights.sum() <= d + 1e-9 and value <= z + 1e-3 * abs(z)
    np.testing.assert_allclose(U.T @ U, np.eye(U.shape[1]), atol=1e-8)


def test_olfat_aswani_constraints_hold(data):
    X, _, s = data
    f = X[s].mean(0) - X[~s].mean(0)
    M = np.cov(X[s].T, bias=True) - np.cov(X[~s].T, bias=True)
    for d, delta, mu in ((1, 0.0, 0.1), (2, 0.0, 0.05), (2, 0.3, 0.2)):
        P = olfat_aswani_sdp(X, s, d, delta, mu)
        eigenvalues = np.linalg.eigvalsh(P)
        assert np.trace(P) == pytest.approx(d, abs=1e-4)
        assert eigenvalues.min() > -1e-4 and eigenvalues.max() < 1 + 1e-4
        assert f @ P @ f <= delta ** 2 + 1e-4  # the projected means
        assert abs(float(np.sum(M * P))) <= mu + 1e-4  # the projected covariances


def test_olfat_aswani_with_slack_bounds_is_pca(data):
    X, _, s = data
    P = olfat_aswani_sdp(X, s, 1, delta=1e3, mu=1e3)
    top = np.linalg.eigh(X.T @ X)[1][:, -1]
    assert abs(float(top @ P @ top)) == pytest.approx(1.0, abs=1e-3)


def test_olfat_aswani_without_a_feasible_projection_fails_clearly():
    rng = np.random.default_rng(0)
    s = np.arange(200) < 100
    # Means differ along e1 only (delta = 0 leaves e2), and along e2 the groups' variances differ by 3.
    X = rng.normal(size=(200, 2)) * np.where(s[:, None], [1.0, 2.0], [1.0, 1.0]) + np.where(s[:, None], [2.0, 0], 0)
    with pytest.raises(SolverFailed, match="infeasible.*raise delta or mu"):
        olfat_aswani_sdp(X - X.mean(0), s, 1, delta=0.0, mu=0.01)


@pytest.mark.parametrize("name", ["fpca1", "fpca2"])
def test_learner_fits_with_s_and_predicts_from_x_alone(data, name):
    X, y, s = data
    cls = get_learner(name)
    model = cls(cls.Params(components=1)).fit(X, y, s)
    assert cls.needs_attribute and model.transform(X).shape[0] == len(y)
    scores = model.decision_function(X)
    assert scores.shape == y.shape and np.all((scores >= 0) & (scores <= 1))
    np.testing.assert_array_equal(model.predict(X), (scores >= 0.5).astype(np.int8))
    assert (model.predict(X) == y).mean() > 0.6  # the representation keeps some of y's signal


def test_parameter_errors_are_typed_and_name_the_learner(data):
    X, y, s = data
    with pytest.raises(ConfigError, match=r"'fpca1': components = 5 must be below the number of features \(5\)"):
        get_learner("fpca1")(FairPCAParams(components=5)).fit(X, y, s)
    with pytest.raises(EmptyGroupError, match=r"'fpca2': .*got 0 with s = 1"):
        get_learner("fpca2")(OlfatAswaniParams()).fit(X, y, np.zeros(len(y), dtype=bool))
    with pytest.raises(pydantic.ValidationError, match="mu"):
        OlfatAswaniParams(mu=-1.0)
    with pytest.raises(pydantic.ValidationError, match="components"):
        FairPCAParams(components=0)
    with pytest.raises(ValueError, match="not fitted"):
        get_learner("fpca1")().decision_function(X)
