"""Fair target models of the reconstruction-correction paper (Sec. IV-B2), built with fairlearn.

* ``exponentiated-gradient``: fairlearn's ``ExponentiatedGradient`` (Agarwal et
  al., 2018; in-processing) around a decision tree of depth 8, under
  ``DemographicParity`` (SP), ``FalsePositiveRateParity`` (PE),
  ``TruePositiveRateParity`` (EO) or ``EqualizedOdds`` (EOdds) with
  ``difference_bound = tolerance``: every group's rate within ``tolerance`` of the
  overall rate on the metric's slice, the paper's constraints (4)-(5).
* ``threshold-optimizer``: fairlearn's ``ThresholdOptimizer`` (Hardt et al., 2016;
  post-processing) over the same tree, which aims at zero unfairness; it reads A
  at prediction time, as in the paper.

Both need A of the training set to learn: the model owner that trains them holds
it (see docs/attacks/reconstruction-correction.md for who that is in a run). They
follow scikit-learn's fit/predict; ``predict`` of an exponentiated-gradient model
draws from its randomized classifier with the given seed.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np
from pydantic import Field

from parley.parties.learners.registry import Learner, LearnerParams, register_learner
from parley.protocols.errors import ParleyError

__all__ = ["ExponentiatedGradientTarget", "ThresholdOptimizerTarget", "NOT_FITTED"]

NOT_FITTED = "the {name} target has not been fitted (call fit() first)"
FLOWS = ("fairness-certificate",)


def _constraint(metric: str, bound: float | None) -> Any:  # a fairlearn Moment (fairlearn is untyped)
    from fairlearn.reductions import DemographicParity, EqualizedOdds, FalsePositiveRateParity, TruePositiveRateParity

    kinds = {"sp": DemographicParity, "pe": FalsePositiveRateParity, "eo": TruePositiveRateParity,
             "eodds": EqualizedOdds}
    return kinds[metric]() if bound is None else kinds[metric](difference_bound=bound)


def _tree(max_depth: int, seed: int) -> Any:  # a DecisionTreeClassifier (scikit-learn is untyped)
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(max_depth=max_depth, random_state=seed)


class ExponentiatedGradientParams(LearnerParams):
    metric: Literal["sp", "pe", "eo", "eodds"] = Field(default="sp", description="the fairness constraint")
    tolerance: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False,
                             description="difference_bound: each group's rate within this of the overall rate")
    max_depth: int = Field(default=8, ge=1, le=64, description="depth of the decision-tree base learner")
    eps: float = Field(default=0.01, gt=0.0, le=1.0, description="fairlearn's allowed constraint violation")
    max_iter: int = Field(default=50, ge=1, le=1000, description="exponentiated-gradient iterations")


@register_learner
class ExponentiatedGradientTarget(Learner[ExponentiatedGradientParams]):
    """A decision tree made fair by fairlearn's ExponentiatedGradient."""

    name = "exponentiated-gradient"
    Params = ExponentiatedGradientParams
    flows = FLOWS
    summary = "fairlearn ExponentiatedGradient, decision tree of depth 8, SP/PE/EO/EOdds within a tolerance"

    def __init__(self, params: ExponentiatedGradientParams | None = None) -> None:
        super().__init__(params)
        self.model_: Any = None

    def fit(self, X: np.ndarray, y: np.ndarray, a: np.ndarray, seed: int = 0) -> ExponentiatedGradientTarget:
        from fairlearn.reductions import ExponentiatedGradient

        p = self.params
        self.model_ = ExponentiatedGradient(_tree(p.max_depth, seed), _constraint(p.metric, p.tolerance),
                                            eps=p.eps, max_iter=p.max_iter)
        with warnings.catch_warnings():  # fairlearn's own pandas deprecation notices, not ours to act on
            warnings.filterwarnings("ignore", module=r"fairlearn\..*")
            self.model_.fit(X, y, sensitive_features=a)
        return self

    def predict(self, X: np.ndarray, a: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
        """Binary predictions drawn from the randomized classifier (A is not used)."""
        if self.model_ is None:
            raise ParleyError(NOT_FITTED.format(name=self.name))
        return np.asarray(self.model_.predict(X, random_state=seed), dtype=np.int8)


class ThresholdOptimizerParams(LearnerParams):
    metric: Literal["sp", "pe", "eo", "eodds"] = Field(default="sp", description="the fairness constraint")
    max_depth: int = Field(default=8, ge=1, le=64, description="depth of the decision-tree base learner")


_THRESHOLD_CONSTRAINTS = {"sp": "demographic_parity", "pe": "false_positive_rate_parity",
                          "eo": "true_positive_rate_parity", "eodds": "equalized_odds"}


@register_learner
class ThresholdOptimizerTarget(Learner[ThresholdOptimizerParams]):
    """A decision tree post-processed by fairlearn's ThresholdOptimizer (group thresholds, uses A)."""

    name = "threshold-optimizer"
    Params = ThresholdOptimizerParams
    flows = FLOWS
    summary = "fairlearn ThresholdOptimizer over a decision tree of depth 8 (uses A at prediction)"

    def __init__(self, params: ThresholdOptimizerParams | None = None) -> None:
        super().__init__(params)
        self.model_: Any = None

    def fit(self, X: np.ndarray, y: np.ndarray, a: np.ndarray, seed: int = 0) -> ThresholdOptimizerTarget:
        from fairlearn.postprocessing import ThresholdOptimizer

        p = self.params
        self.model_ = ThresholdOptimizer(estimator=_tree(p.max_depth, seed),
                                         constraints=_THRESHOLD_CONSTRAINTS[p.metric],
                                         predict_method="predict_proba", objective="accuracy_score")
        self.model_.fit(X, y, sensitive_features=a)
        return self

    def predict(self, X: np.ndarray, a: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
        """Binary predictions; the group thresholds need ``a``."""
        if self.model_ is None:
            raise ParleyError(NOT_FITTED.format(name=self.name))
        return np.asarray(self.model_.predict(X, sensitive_features=a, random_state=seed), dtype=np.int8)
