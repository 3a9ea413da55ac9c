"""The prejudice remover (FGR), the counterpart of DFGR in Table I of the distributed-fair-learning paper.

Kamishima, Akaho, Asoh and Sakuma, "Fairness-Aware Classifier with Prejudice Remover
Regularizer" (ECML PKDD 2012), as Hu et al. summarise it (Sec. IV-C): logistic regression
plus an L2 penalty plus eta times the prejudice index PI, an estimate of the mutual
information between the prediction and s::

    J(w, b) = -sum_i ln p(y_i | x_i) + eta PI + (C / 2) ||w||^2,
    PI = sum_i sum_{y in {0, 1}} p(y | x_i) ln( q_{s_i}(y) / q(y) ),

with ``p(1 | x) = sigmoid(w^T x + b)``, ``q_g(y)`` the mean of ``p(y | x_i)`` over group g
and ``q(y)`` over everyone (Kamishima et al.'s Eq. 8-9). Defaults as Kamishima et al.'s
code (and aif360's ``PrejudiceRemover``): ``eta = 1``, ``C = 1``, sums not means.

One departure: Kamishima et al. fit one weight vector per value of s, so their model reads s
at prediction time. The paper's f "does not take s as input but can use s for training"
(Sec. III), and parley's baselines predict from x alone, so we fit one weight vector for
everyone; s enters through PI only.

The gradient is analytic. Writing sigma_i = p(1 | x_i), the derivative of PI through
``q_g`` and ``q`` cancels (sum_i p_i(y) / q_g(y) = n_g), so
``dPI / d sigma_k = ln( q_{s_k}(1) q(0) / (q(1) q_{s_k}(0)) )``, and the chain rule through
``sigma (1 - sigma)`` gives the rest (checked against finite differences in the tests).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from parley.parties.learners.fair_baselines import AttributeLearner
from parley.parties.learners.fair_span import HypothesisParams
from parley.parties.learners.registry import LearnerParams, register_learner

__all__ = ["PrejudiceRemover", "PrejudiceRemoverParams", "objective"]

_EPS = 1e-12


class PrejudiceRemoverParams(HypothesisParams):
    """Parameters of :class:`PrejudiceRemover`."""

    eta: float = Field(default=1.0, ge=0.0, allow_inf_nan=False, description="weight of the prejudice index")
    C: float = Field(default=1.0, ge=0.0, allow_inf_nan=False, description="L2 weight (C / 2) ||w||^2")
    max_iter: int = Field(default=1000, ge=1, description="L-BFGS iterations at most")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(z, -35.0, 35.0)))
    return out


def objective(theta: np.ndarray, X: np.ndarray, y: np.ndarray, s: np.ndarray, eta: float,
              C: float) -> tuple[float, np.ndarray]:
    """J and its gradient at ``theta = (w, b)``; ``s`` boolean."""
    w, b = theta[:-1], theta[-1]
    p = _sigmoid(X @ w + b)
    pc = np.clip(p, _EPS, 1.0 - _EPS)
    nll = -float(np.sum(y * np.log(pc) + (1.0 - y) * np.log(1.0 - pc)))
    q1 = float(pc.mean())
    qg1 = np.where(s, pc[s].mean(), pc[~s].mean())  # q_{s_i}(1) for every i
    log_ratio1 = np.log(qg1) - np.log(q1)
    log_ratio0 = np.log(1.0 - qg1) - np.log(1.0 - q1)
    pi = float(np.sum(pc * log_ratio1 + (1.0 - pc) * log_ratio0))
    value = nll + eta * pi + 0.5 * C * float(w @ w)
    d_sigma = eta * (log_ratio1 - log_ratio0)  # dPI/dsigma_k; the q terms cancel (module docstring)
    d_z = (p - y) + d_sigma * p * (1.0 - p)
    grad = np.empty_like(theta)
    grad[:-1] = X.T @ d_z + C * w
    grad[-1] = float(d_z.sum())
    return value, grad


@register_learner
class PrejudiceRemover(AttributeLearner[PrejudiceRemoverParams]):
    """Logistic regression with Kamishima et al.'s prejudice-remover regulariser (L-BFGS)."""

    name: ClassVar[str] = "fgr"
    Params: ClassVar[type[LearnerParams]] = PrejudiceRemoverParams
    summary: ClassVar[str] = "baseline with s: logistic regression + eta * prejudice index (Kamishima et al.)"

    def __init__(self, params: PrejudiceRemoverParams | None = None) -> None:
        super().__init__(params)
        self.coef_: np.ndarray | None = None

    def fit(self, X: np.ndarray, y: np.ndarray, s: np.ndarray) -> PrejudiceRemover:
        from scipy.optimize import minimize

        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        s = np.asarray(s).astype(bool)
        theta0 = np.zeros(X.shape[1] + 1)
        result = minimize(objective, theta0, args=(X, y, s, self.params.eta, self.params.C), jac=True,
                          method="L-BFGS-B", options={"maxiter": self.params.max_iter})
        self.coef_, self.intercept_ = result.x[:-1], float(result.x[-1])
        self.converged_ = bool(result.success)
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        p1 = _sigmoid(np.asarray(X, dtype=np.float64) @ self._check_fitted("coef_") + self.intercept_)
        return np.column_stack([1.0 - p1, p1])

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """P(y = 1 | x); ``predict`` thresholds it at ``threshold`` (0.5)."""
        scores: np.ndarray = self.predict_proba(X)[:, 1]
        return scores
