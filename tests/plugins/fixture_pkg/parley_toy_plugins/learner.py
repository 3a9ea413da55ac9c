"""``toy-logit``: a plain logistic regression as the fair target of the certificate flow."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field
from sklearn.linear_model import LogisticRegression

from parley.parties.learners import Learner, LearnerParams


class ToyLogitParams(LearnerParams):
    C: float = Field(default=1.0, gt=0.0, description="inverse regularisation strength")


class ToyLogit(Learner[ToyLogitParams]):
    """Logistic regression on X (A is not used): fit(X, y, a, seed), predict(X, a, seed)."""

    name = "toy-logit"
    Params = ToyLogitParams
    flows = ("fairness-certificate",)
    summary = "scikit-learn logistic regression, no fairness constraint"

    def __init__(self, params: ToyLogitParams | None = None) -> None:
        super().__init__(params)
        self.model_: Any = None

    def fit(self, X: np.ndarray, y: np.ndarray, a: np.ndarray, seed: int = 0) -> ToyLogit:
        self.model_ = LogisticRegression(C=self.params.C, max_iter=1000).fit(X, y)
        return self

    def predict(self, X: np.ndarray, a: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
        return self.model_.predict(X).astype(np.int8)
