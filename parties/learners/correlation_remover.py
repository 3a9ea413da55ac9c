"""A pre-processing fair target: fairlearn's CorrelationRemover, then a decision tree (Ferry et al., App. E).

Ferry, Aïvodji, Gambs, Huguet and Siala (SaTML 2023), Appendix E, Table V: "the
CorrelationRemover transforms the training set unsensitive attributes in order to remove
their correlations with the sensitive ones. A traditional machine learning algorithm is
then used on the sanitized data". The experimental setup is that of Sec. IV-B, whose
base learner is scikit-learn's DecisionTreeClassifier of depth 8 with every other
parameter at its default; parley uses the same tree here.

``correlation-remover``: fairlearn's ``CorrelationRemover(sensitive_feature_ids=[A],
alpha=alpha)`` is fitted on the training features with A appended as the last column
(alpha = 1, fairlearn's default, removes the linear correlation entirely; alpha = 0
keeps the features as they are). The tree is fitted on the transformed features. To
predict, the same transform is applied, which needs A of the rows predicted: the
transform subtracts each feature's projection on (A - mean A). The model owner supplies
A, as for ``threshold-optimizer``. A itself is never a feature of the tree.

The method optimises no fairness metric and no tolerance, so a certificate of it states
whatever unfairness the model happens to have; the paper's attacker estimates the
fairness information instead (Sec. V-B, ``attack.fairness = "estimated"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from parley.parties.learners.registry import Learner, LearnerParams, register_learner
from parley.protocols.errors import ConfigError, ParleyError

__all__ = ["CorrelationRemoverParams", "CorrelationRemoverTarget", "NOT_FITTED", "NEEDS_A"]

NOT_FITTED = "the correlation-remover target has not been fitted (call fit() first)"
NEEDS_A = ("the correlation-remover target needs A of the rows it predicts (its transform subtracts each "
           "feature's projection on A); received a = None")
BAD_A = "a must hold one value per row of X: {rows} rows, {values} values of a"


class CorrelationRemoverParams(LearnerParams):
    """fairlearn's ``alpha`` and the tree's depth."""

    alpha: float = Field(default=1.0, ge=0.0, le=1.0, allow_inf_nan=False,
                         description="fairlearn's alpha: 1 removes the features' linear correlation with A "
                                     "entirely, 0 keeps the features unchanged")
    max_depth: int = Field(default=8, ge=1, le=64, description="depth of the decision tree fitted after the "
                                                              "transform")


def _with_a(X: np.ndarray, a: np.ndarray | None) -> np.ndarray:
    if a is None:
        raise ConfigError(NEEDS_A)
    X = np.asarray(X, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    if a.size != X.shape[0]:
        raise ConfigError(BAD_A.format(rows=X.shape[0], values=a.size))
    return np.hstack([X, a[:, None]])


@register_learner
class CorrelationRemoverTarget(Learner[CorrelationRemoverParams]):
    """fairlearn's CorrelationRemover on the features, then a decision tree (uses A at prediction)."""

    name = "correlation-remover"
    Params = CorrelationRemoverParams
    flows = ("fairness-certificate",)
    summary = "fairlearn CorrelationRemover (pre-processing), then a decision tree of depth 8 (uses A at prediction)"

    def __init__(self, params: CorrelationRemoverParams | None = None) -> None:
        super().__init__(params)
        self.remover_: Any = None
        self.tree_: Any = None

    def fit(self, X: np.ndarray, y: np.ndarray, a: np.ndarray, seed: int = 0) -> CorrelationRemoverTarget:
        from fairlearn.preprocessing import CorrelationRemover
        from sklearn.tree import DecisionTreeClassifier

        full = _with_a(X, a)
        self.remover_ = CorrelationRemover(sensitive_feature_ids=[full.shape[1] - 1], alpha=self.params.alpha)
        cleaned = self.remover_.fit_transform(full)
        self.tree_ = DecisionTreeClassifier(max_depth=self.params.max_depth, random_state=seed)
        self.tree_.fit(cleaned, np.asarray(y))
        return self

    def transform(self, X: np.ndarray, a: np.ndarray | None) -> np.ndarray:
        """The features with their linear correlation with A removed (A dropped)."""
        if self.remover_ is None:
            raise ParleyError(NOT_FITTED)
        return np.asarray(self.remover_.transform(_with_a(X, a)), dtype=np.float64)

    def predict(self, X: np.ndarray, a: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
        """Binary predictions of the tree on the transformed features (deterministic: ``seed`` is unused)."""
        if self.tree_ is None:
            raise ParleyError(NOT_FITTED)
        return np.asarray(self.tree_.predict(self.transform(X, a)), dtype=np.int8)
