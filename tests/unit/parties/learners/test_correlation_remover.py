"""The CorrelationRemover target (Ferry et al., App. E): fairlearn's transform, then a depth-8 tree."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.learners import get_learner
from parley.parties.learners.correlation_remover import CorrelationRemoverParams, CorrelationRemoverTarget
from parley.protocols.errors import ConfigError, ParleyError


def _data(seed: int = 0, n: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    X = np.column_stack([rng.normal(size=n) + 1.5 * a, rng.normal(size=n), rng.normal(size=n) - a])
    y = (X[:, 0] + X[:, 1] + rng.normal(scale=0.5, size=n) > 0.8).astype(int)
    return X, y, a


def test_registered_for_the_certificate_flow():
    assert get_learner("correlation-remover") is CorrelationRemoverTarget
    assert CorrelationRemoverTarget.flows == ("fairness-certificate",)


def test_alpha_one_removes_the_linear_correlation_with_a():
    X, y, a = _data()
    model = CorrelationRemoverTarget(CorrelationRemoverParams(alpha=1.0)).fit(X, y, a, seed=0)
    cleaned = model.transform(X, a)
    assert cleaned.shape == X.shape  # A is dropped, every feature kept
    for column in cleaned.T:
        assert abs(np.corrcoef(column, a)[0, 1]) < 1e-8
    assert abs(np.corrcoef(X[:, 0], a)[0, 1]) > 0.5  # it was there before


def test_alpha_zero_is_the_plain_tree():
    from sklearn.tree import DecisionTreeClassifier

    X, y, a = _data(1)
    model = CorrelationRemoverTarget(CorrelationRemoverParams(alpha=0.0)).fit(X, y, a, seed=3)
    plain = DecisionTreeClassifier(max_depth=8, random_state=3).fit(X, y)
    np.testing.assert_array_equal(model.predict(X, a), plain.predict(X))


def test_seeded_and_binary():
    X, y, a = _data(2)
    one = CorrelationRemoverTarget().fit(X, y, a, seed=5).predict(X, a)
    two = CorrelationRemoverTarget().fit(X, y, a, seed=5).predict(X, a)
    np.testing.assert_array_equal(one, two)
    assert set(np.unique(one)) <= {0, 1} and one.dtype == np.int8


def test_needs_a_and_a_fit():
    X, y, a = _data(3)
    with pytest.raises(ParleyError, match="not been fitted"):
        CorrelationRemoverTarget().predict(X, a)
    model = CorrelationRemoverTarget().fit(X, y, a)
    with pytest.raises(ConfigError, match="needs A"):
        model.predict(X, None)
    with pytest.raises(ConfigError, match="one value per row"):
        model.predict(X, a[:-1])


@pytest.mark.parametrize("alpha", [-0.1, 1.1])
def test_alpha_outside_zero_one_is_refused(alpha):
    with pytest.raises(ValueError, match="alpha"):
        CorrelationRemoverParams(alpha=alpha)
