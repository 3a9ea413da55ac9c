"""Baselines that train with s: fair ridge regression (FRR) and fairlearn's ExponentiatedGradient.

These are the non-distributed counterparts of Table II of the distributed-fair-
learning paper (Hu, Liu, Wang & Lan, ICDM 2019, Sec. VI-B): they need s of the
training set, which no party of a cov-threshold run holds together with X, so
the referee fits them (the flow reports ``learner_access = "attribute"``).

FRR (Calders et al. 2013, as summarised in Sec. IV-A): squared loss plus a
mean-difference penalty. The paper prints ``J = sum (f(x_i) - y_i)^2 + lambda MD(f)``
with the *signed* difference MD, which is linear in f and unbounded below (the
minimiser would push MD to minus infinity as lambda grows); we penalise
``MD(f)^2``, as the regularised linear regression of Calders et al. does in
effect, and write the weight per sample (``lam * n``). For a linear
``f(x) = w^T x + b``, ``MD(f) = d^T w`` with ``d`` the difference of the two
groups' feature means, so the minimiser is closed form::

    w = (Xc^T Xc + ridge n I + lam n d d^T)^-1 Xc^T yc
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import Field
from typing_extensions import TypeVar

from parley.parties.learners.fair_span import CovThresholdLearner, HypothesisParams
from parley.parties.learners.registry import LearnerParams, register_learner

__all__ = ["ExponentiatedGradientBaseline", "FRR"]


#: The parameters of a baseline fitted with s.
P = TypeVar("P", bound=HypothesisParams, default=HypothesisParams, covariant=True)


class AttributeLearner(CovThresholdLearner[P]):
    """A baseline fitted with s: ``fit(X, y, s)`` (referee only)."""

    needs_attribute: ClassVar[bool] = True


class FRRParams(HypothesisParams):
    lam: float = Field(default=1.0, ge=0.0, allow_inf_nan=False, description="weight of MD(f)^2 per sample")
    ridge: float = Field(default=0.0, ge=0.0, allow_inf_nan=False, description="ridge weight per sample")


@register_learner
class FRR(AttributeLearner[FRRParams]):
    """Fair ridge regression with the (squared) mean-difference penalty, closed form."""

    name: ClassVar[str] = "frr"
    Params: ClassVar[type[LearnerParams]] = FRRParams
    summary: ClassVar[str] = "baseline with s: ridge regression + lam * MD(f)^2 (Calders et al.)"

    def __init__(self, params: FRRParams | None = None) -> None:
        super().__init__(params)
        self.coef_: np.ndarray | None = None

    def fit(self, X: np.ndarray, y: np.ndarray, s: np.ndarray) -> FRR:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        s = np.asarray(s).astype(bool)
        n, p = X.shape
        x_mean, y_mean = X.mean(0), float(y.mean())
        Xc = X - x_mean
        d = X[s].mean(0) - X[~s].mean(0)  # MD(f) = d . w for f(x) = w . x + b
        A = Xc.T @ Xc + self.params.ridge * n * np.eye(p) + self.params.lam * n * np.outer(d, d)
        self.coef_ = np.linalg.lstsq(A, Xc.T @ (y - y_mean), rcond=None)[0]
        self.intercept_ = y_mean - float(x_mean @ self.coef_)
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        scores: np.ndarray = np.asarray(X, dtype=np.float64) @ self._check_fitted("coef_") + self.intercept_
        return scores


class EGParams(HypothesisParams):
    difference_bound: float = Field(default=0.01, gt=0.0, description="demographic-parity bound of the reduction")
    max_iter: int = Field(default=50, ge=1, description="fairlearn's max_iter")


@register_learner
class ExponentiatedGradientBaseline(AttributeLearner[EGParams]):
    """fairlearn ``ExponentiatedGradient(LogisticRegression, DemographicParity)`` with s."""

    name: ClassVar[str] = "expgrad-dp"
    Params: ClassVar[type[LearnerParams]] = EGParams
    summary: ClassVar[str] = "baseline with s: fairlearn ExponentiatedGradient, demographic parity"

    def __init__(self, params: EGParams | None = None, random_state: int = 0) -> None:
        super().__init__(params)
        self.random_state = random_state
        self.model_: Any = None

    def fit(self, X: np.ndarray, y: np.ndarray, s: np.ndarray) -> ExponentiatedGradientBaseline:
        from fairlearn.reductions import DemographicParity, ExponentiatedGradient
        from sklearn.linear_model import LogisticRegression

        self.model_ = ExponentiatedGradient(
            LogisticRegression(max_iter=1000), DemographicParity(difference_bound=self.params.difference_bound),
            max_iter=self.params.max_iter)
        self.model_.fit(X, y, sensitive_features=np.asarray(s))
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """P(y_hat = 1 | x) of the randomized classifier."""
        scores: np.ndarray = self._check_fitted("model_")._pmf_predict(X)[:, 1]
        return scores

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Draws of the randomized classifier (seeded)."""
        return np.asarray(self._check_fitted("model_").predict(X, random_state=self.random_state), dtype=np.int8)
