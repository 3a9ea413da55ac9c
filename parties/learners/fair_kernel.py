"""Fair kernel ridge regression (FKRR), the counterpart of DFKRR in Table I of the distributed-fair-learning paper.

Pérez-Suay, Laparra, Mateo-García, Muñoz-Marí, Gómez-Chova and Camps-Valls, "Fair Kernel
Learning" (ECML PKDD 2017), as Hu et al. summarise it (Sec. IV-B): squared loss in an RKHS,
a norm penalty, and a penalty on the dependence between the prediction and s,
``J = sum (f(x_i) - y_i)^2 + lambda ||f||^2 + mu I(f; s)``. Pérez-Suay et al. measure the
dependence by HSIC; with a linear kernel on s it is the squared empirical covariance of f(x)
and s. We write both penalties per sample (``lam * n``, ``mu * n``), so for
``f = K alpha + b``::

    J = ||y - b - K alpha||^2 + lam n alpha^T K alpha + mu n cov(K alpha, s)^2,
    cov(K alpha, s) = s_c^T K alpha / n    (s_c: s centred)

and setting the gradient to zero gives the closed form (Pérez-Suay et al.'s Eq. 6 with
L = s_c s_c^T / n)::

    alpha = (K + lam n I + (mu / n) s_c s_c^T K)^-1 (y - mean(y)),   b = mean(y).

``mu = 0`` is kernel ridge regression (scikit-learn's ``KernelRidge(alpha=lam n)`` up to the
intercept, checked in the tests). The RBF kernel and its width ``gamma = 1/p`` are DFKRR's.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from parley.parties.learners.fair_baselines import AttributeLearner
from parley.parties.learners.fair_span import HypothesisParams
from parley.parties.learners.hypotheses import rbf_kernel
from parley.parties.learners.registry import LearnerParams, register_learner

__all__ = ["FKRR", "FKRRParams"]


class FKRRParams(HypothesisParams):
    """Parameters of :class:`FKRR`."""

    lam: float = Field(default=1e-3, gt=0.0, allow_inf_nan=False, description="RKHS norm penalty per sample")
    mu: float = Field(default=100.0, ge=0.0, allow_inf_nan=False,
                      description="weight of n cov(f(x), s)^2 (the HSIC of a linear kernel on s)")
    gamma: float | None = Field(default=None, gt=0.0, description="RBF width; None = 1 / n_features")


@register_learner
class FKRR(AttributeLearner[FKRRParams]):
    """Fair kernel ridge regression with a covariance (linear-HSIC) penalty, closed form."""

    name: ClassVar[str] = "fkrr"
    Params: ClassVar[type[LearnerParams]] = FKRRParams
    summary: ClassVar[str] = "baseline with s: kernel ridge regression + mu n cov(f, s)^2 (Perez-Suay et al.)"

    def __init__(self, params: FKRRParams | None = None) -> None:
        super().__init__(params)
        self.dual_coef_: np.ndarray | None = None

    def fit(self, X: np.ndarray, y: np.ndarray, s: np.ndarray) -> FKRR:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        s_c = np.asarray(s, dtype=np.float64) - float(np.mean(s))
        n = X.shape[0]
        self.gamma_ = self.params.gamma if self.params.gamma is not None else 1.0 / X.shape[1]
        K = rbf_kernel(X, X, self.gamma_)
        A = K + self.params.lam * n * np.eye(n) + (self.params.mu / n) * np.outer(s_c, s_c @ K)
        self.intercept_ = float(y.mean())
        self.dual_coef_ = np.linalg.solve(A, y - self.intercept_)
        self.X_fit_ = X
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        coef = self._check_fitted("dual_coef_")
        scores: np.ndarray = rbf_kernel(np.asarray(X, dtype=np.float64), self.X_fit_, self.gamma_) @ coef
        return scores + self.intercept_
