"""Learning fair representations (LFR), the last row of Table I of the distributed-fair-learning paper.

Zemel, Wu, Swersky, Pitassi and Dwork, "Learning Fair Representations" (ICML 2013). Each
individual is mapped to a distribution over K prototypes v_k,
``M_nk = softmax_k(-||x_n - v_k||^2)``; the representation predicts
``y_hat_n = sum_k M_nk w_k`` (w_k in (0, 1)) and reconstructs ``x_hat_n = sum_k M_nk v_k``.
The loss (Zemel et al.'s Eq. 4-7) is::

    L = A_x L_x + A_y L_y + A_z L_z,
    L_x = mean_n ||x_n - x_hat_n||^2,   L_y = mean_n cross-entropy(y_n, y_hat_n),
    L_z = sum_k | mean_{s=1} M_nk - mean_{s=0} M_nk |       (statistical parity of the prototypes)

Defaults as aif360's ``LFR`` (K = 5, A_x = 0.01, A_y = 1, A_z = 50), whose L_x and L_y are
means as here. Two simplifications: the distance is plain Euclidean (Zemel et al. weight each
feature by a learned alpha, per group), and ``w_k = sigmoid(u_k)`` replaces a box constraint.
s is used in training only (L_z); the prediction reads x alone. The gradient is analytic (checked
against finite differences in the tests) and L-BFGS minimises L from prototypes drawn among the
training rows (seeded).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from parley.parties.learners.fair_baselines import AttributeLearner
from parley.parties.learners.fair_span import HypothesisParams
from parley.parties.learners.registry import LearnerParams, register_learner

__all__ = ["LFR", "LFRParams", "lfr_loss"]

_EPS = 1e-9


class LFRParams(HypothesisParams):
    """Parameters of :class:`LFR`."""

    prototypes: int = Field(default=5, ge=1, le=200, description="K, the number of prototypes")
    A_x: float = Field(default=0.01, ge=0.0, allow_inf_nan=False, description="weight of the reconstruction loss")
    A_y: float = Field(default=1.0, ge=0.0, allow_inf_nan=False, description="weight of the prediction loss")
    A_z: float = Field(default=50.0, ge=0.0, allow_inf_nan=False, description="weight of the parity loss")
    max_iter: int = Field(default=1000, ge=1, description="L-BFGS iterations at most")


def _softmax_neg_dist(X: np.ndarray, V: np.ndarray) -> np.ndarray:
    d = (X * X).sum(1)[:, None] + (V * V).sum(1)[None, :] - 2.0 * X @ V.T
    z = -d
    z -= z.max(1, keepdims=True)
    e = np.exp(z)
    out: np.ndarray = e / e.sum(1, keepdims=True)
    return out


def lfr_loss(theta: np.ndarray, X: np.ndarray, y: np.ndarray, s: np.ndarray, K: int, A_x: float, A_y: float,
             A_z: float) -> tuple[float, np.ndarray]:
    """L and its gradient at ``theta = (V.ravel(), u)`` (V: K x p prototypes, w = sigmoid(u)); ``s`` boolean."""
    n, p = X.shape
    V = theta[: K * p].reshape(K, p)
    u = theta[K * p:]
    w = 1.0 / (1.0 + np.exp(-u))
    M = _softmax_neg_dist(X, V)
    x_hat = M @ V
    y_hat = np.clip(M @ w, _EPS, 1.0 - _EPS)
    n1, n0 = int(s.sum()), int((~s).sum())
    gap = M[s].mean(0) - M[~s].mean(0)
    L_x = float(((X - x_hat) ** 2).sum() / n)
    L_y = float(-(y * np.log(y_hat) + (1.0 - y) * np.log(1.0 - y_hat)).mean())
    L_z = float(np.abs(gap).sum())
    # dL/dM, then back through the softmax and the distances.
    r = x_hat - X
    dy = (-(y / y_hat) + (1.0 - y) / (1.0 - y_hat)) / n
    side = np.where(s, 1.0 / max(n1, 1), -1.0 / max(n0, 1))
    G = A_x * (2.0 / n) * (r @ V.T) + A_y * np.outer(dy, w) + A_z * np.outer(side, np.sign(gap))
    D = -M * (G - (M * G).sum(1, keepdims=True))  # dL/d(distance)
    grad_V = A_x * (2.0 / n) * (M.T @ r) + 2.0 * (V * D.sum(0)[:, None] - D.T @ X)
    grad_u = A_y * (M.T @ dy) * w * (1.0 - w)
    return A_x * L_x + A_y * L_y + A_z * L_z, np.concatenate([grad_V.ravel(), grad_u])


@register_learner
class LFR(AttributeLearner[LFRParams]):
    """Zemel et al.'s fair prototypes, predicting y from the prototype probabilities."""

    name: ClassVar[str] = "lfr"
    Params: ClassVar[type[LearnerParams]] = LFRParams
    summary: ClassVar[str] = "baseline with s: learning fair representations (Zemel et al.), prototype classifier"

    def __init__(self, params: LFRParams | None = None, random_state: int = 0) -> None:
        super().__init__(params)
        self.random_state = random_state
        self.prototypes_: np.ndarray | None = None

    def fit(self, X: np.ndarray, y: np.ndarray, s: np.ndarray) -> LFR:
        from scipy.optimize import minimize

        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        s = np.asarray(s).astype(bool)
        K = self.params.prototypes
        rng = np.random.default_rng(self.random_state)
        V0 = X[rng.choice(X.shape[0], size=K, replace=X.shape[0] < K)]
        theta0 = np.concatenate([V0.ravel(), np.zeros(K)])
        args = (X, y, s, K, self.params.A_x, self.params.A_y, self.params.A_z)
        result = minimize(lfr_loss, theta0, args=args, jac=True, method="L-BFGS-B",
                          options={"maxiter": self.params.max_iter})
        p = X.shape[1]
        self.prototypes_ = result.x[: K * p].reshape(K, p)
        self.weights_ = 1.0 / (1.0 + np.exp(-result.x[K * p:]))
        self.converged_ = bool(result.success)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """M, the prototype probabilities of each row (the fair representation)."""
        return _softmax_neg_dist(np.asarray(X, dtype=np.float64), self._check_fitted("prototypes_"))

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """y_hat = sum_k M_nk w_k; ``predict`` thresholds it at ``threshold`` (0.5)."""
        scores: np.ndarray = self.transform(X) @ self.weights_
        return scores
