"""Learners in the span of the rho-fair hypotheses: DFRR, DFKRR, DFGR, DFPCA (Sec. IV).

Hu, Liu, Wang & Lan, "A Distributed Fair Machine Learning Framework with
Private Demographic Data Protection" (ICDM 2019). After Alg. 1 the data center
holds the k accepted hypotheses ``H = [h_r1, ..., h_rk]`` and learns
``f = H alpha`` (Eq. 1-2) without ever seeing s. Every learner here follows the
scikit-learn pattern: ``fit(X, y, basis)`` with ``basis`` the accepted
hypotheses' parameters, then ``decision_function`` / ``predict``.

Choices the paper leaves open (each also in docs/reproductions.md):

- **Intercept.** (4), (7) and (9)-(10) have none; with 0/1 labels and centred
  features a model without one predicts one class. We add an unpenalised
  intercept (a constant does not change cov(f(x), s), so fairness is untouched).
- **Penalty scale.** lambda is not given. We write every penalty per sample,
  ``lam * n``, so one ``lam`` means the same on any n (scikit-learn's convention).
- **DFRR's penalty.** Objective (3) penalises ``||f||^2 = alpha^T H^T H alpha``
  but its closed form (4) has ``lambda I``, a penalty on ``||alpha||^2``; the two
  differ. ``penalty="alpha"`` (default) is (4) as printed; ``"f"`` is (3). Only
  the alpha penalty restrains f once the k hypotheses span all p features
  (k >= p): ``H alpha`` then reaches every linear model, and the ``||f||`` penalty
  is plain ridge. Under ``||alpha||^2`` the implied prior on f has covariance
  ``H H^T``, small along cov(x, s) because accepted hypotheses avoid it: that is
  where DFRR's fairness comes from (Lemma 3, Thm. 4's ``||alpha||`` factor).
- **DFGR's gradient sign.** (9) prints ``H^T X^T (Y - p) + 2 lambda H^T H alpha``;
  the gradient of the negative log-likelihood (8) is ``H^T X^T (p - Y)``. We
  use the correct sign (Newton with (9) as printed diverges). Penalty as (8)-(10)
  (``||f||``, default) or ``"alpha"``.
- **DFKRR.** (7) is the least-squares solution of ``(K + lambda I) C alpha = Y``;
  we implement it as printed and predict with ``k(x, X) C alpha``.
- **DFPCA.** (13) is a generalized eigenproblem with ``H^T H`` singular once
  k > p; we solve it on an orthonormal basis Q of span(H) (the same problem,
  well posed) and train a logistic regression on the ``components`` leading
  directions (the paper: "then a classifier", unnamed).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field
from typing_extensions import TypeVar

from parley.parties.learners.hypotheses import Family, rbf_kernel
from parley.parties.learners.registry import Learner, LearnerParams, register_learner

__all__ = ["CovThresholdLearner", "DFGR", "DFKRR", "DFPCA", "DFRR", "HypothesisParams", "SpanLearner"]

NOT_FITTED = "learner {name!r} is not fitted yet (call fit() first)"
BAD_BASIS = "learner {name!r}: basis must have {rows} rows (one per {what}), got shape {shape}"
FLOW = "cov-threshold"


class HypothesisParams(LearnerParams):
    """How many random hypotheses the data center draws (Alg. 1 step 1), and their spread."""

    hypotheses: int = Field(default=200, ge=1, le=20000, description="m, the number of random hypotheses sent")
    sigma: float = Field(default=1.0, gt=0.0, allow_inf_nan=False, description="std of each hypothesis parameter")
    threshold: float = Field(default=0.5, description="predict 1 where the model's score is at or above this")


#: The parameters of a cov-threshold learner (:class:`HypothesisParams`, the default, or an extension of it).
P = TypeVar("P", bound=HypothesisParams, default=HypothesisParams, covariant=True)


class CovThresholdLearner(Learner[P]):
    """Base of every learner in the cov-threshold flow: which hypotheses to draw, how to predict."""

    flows: ClassVar[tuple[str, ...]] = (FLOW,)
    family: ClassVar[Family] = "linear"
    #: True for the baselines that train with s (the referee fits them; no party may).
    needs_attribute: ClassVar[bool] = False

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def predict(self, X: np.ndarray) -> np.ndarray:
        """0/1 decisions: score >= ``threshold``."""
        return (self.decision_function(X) >= self.params.threshold).astype(np.int8)

    def _check_fitted(self, attr: str) -> Any:
        value = getattr(self, attr, None)
        if value is None:
            raise ValueError(NOT_FITTED.format(name=self.name))
        return value


class SpanLearner(CovThresholdLearner[P]):
    """A learner in the span of the accepted hypotheses; ``fit(X, y, basis)``."""

    def _centred(self, X: np.ndarray, y: np.ndarray, basis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        rows, what = (X.shape[1], "feature") if self.family == "linear" else (X.shape[0], "training row")
        if basis.ndim != 2 or basis.shape[0] != rows:
            raise ValueError(BAD_BASIS.format(name=self.name, rows=rows, what=what, shape=basis.shape))
        self.k_ = int(basis.shape[1])
        self.x_mean_ = X.mean(0)
        self.y_mean_ = float(y.mean())
        return X - self.x_mean_, y - self.y_mean_


class _LinearModel(SpanLearner[P]):
    """A span learner whose fitted model is linear in x: ``coef_ . x + intercept_``."""

    coef_: np.ndarray | None = None
    intercept_: float = 0.0

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        scores: np.ndarray = np.asarray(X, dtype=np.float64) @ self._check_fitted("coef_") + self.intercept_
        return scores


class DFRRParams(HypothesisParams):
    lam: float = Field(default=1.0, ge=0.0, allow_inf_nan=False, description="ridge weight per sample")
    penalty: Literal["alpha", "f"] = Field(default="alpha", description="(4) as printed, or ||f||^2 of (3)")


@register_learner
class DFRR(_LinearModel[DFRRParams]):
    """Distributed fair ridge regression, closed form (4): alpha = (H^T X^T X H + lambda I)^-1 H^T X^T Y."""

    name: ClassVar[str] = "dfrr"
    Params: ClassVar[type[LearnerParams]] = DFRRParams
    summary: ClassVar[str] = "ridge regression in the span of the accepted hypotheses (Eq. 4)"

    def fit(self, X: np.ndarray, y: np.ndarray, basis: np.ndarray) -> DFRR:
        Xc, yc = self._centred(X, y, basis)
        n = Xc.shape[0]
        Z = Xc @ basis  # (n, k): the accepted hypotheses' centred predictions
        reg = np.eye(self.k_) if self.params.penalty == "alpha" else basis.T @ basis
        # (Z^T Z + lam n R) alpha = Z^T y; lstsq because H^T H is singular when k > p.
        alpha = np.linalg.lstsq(Z.T @ Z + self.params.lam * n * reg, Z.T @ yc, rcond=None)[0]
        self.coef_ = basis @ alpha
        self.intercept_ = self.y_mean_ - float(self.x_mean_ @ self.coef_)
        return self


class DFGRParams(HypothesisParams):
    lam: float = Field(default=1e-3, ge=0.0, allow_inf_nan=False, description="penalty weight per sample")
    penalty: Literal["f", "alpha"] = Field(default="f", description="||f||^2 as (8)-(10), or ||alpha||^2")
    max_iter: int = Field(default=50, ge=1, le=1000, description="Newton steps at most")
    tol: float = Field(default=1e-8, gt=0.0,
                       description="stop once every coefficient's Newton step is smaller than this")


@register_learner
class DFGR(_LinearModel[DFGRParams]):
    """Distributed fair logistic regression: Newton's method with gradient (9) and Hessian (10)."""

    name: ClassVar[str] = "dfgr"
    Params: ClassVar[type[LearnerParams]] = DFGRParams
    summary: ClassVar[str] = "logistic regression in the span of the accepted hypotheses (Newton, Eq. 9-10)"

    def fit(self, X: np.ndarray, y: np.ndarray, basis: np.ndarray) -> DFGR:
        Xc, _ = self._centred(X, y, basis)
        y = np.asarray(y, dtype=np.float64)
        n = Xc.shape[0]
        Z = np.hstack([Xc @ basis, np.ones((n, 1))])  # last column: the unpenalised intercept
        P = np.zeros((self.k_ + 1, self.k_ + 1))
        P[:-1, :-1] = 2.0 * self.params.lam * n * (basis.T @ basis if self.params.penalty == "f" else np.eye(self.k_))
        theta = np.zeros(self.k_ + 1)
        self.n_iter_ = 0
        for iteration in range(1, self.params.max_iter + 1):
            self.n_iter_ = iteration
            p = 1.0 / (1.0 + np.exp(-np.clip(Z @ theta, -30, 30)))
            grad = Z.T @ (p - y) + P @ theta  # (9), sign corrected
            hess = (Z * (p * (1.0 - p))[:, None]).T @ Z + P  # (10): H^T X^T M X H + 2 lambda H^T H
            step = np.linalg.lstsq(hess, grad, rcond=None)[0]
            theta -= step
            if np.abs(step).max() < self.params.tol:
                break
        self.coef_ = basis @ theta[:-1]
        self.intercept_ = float(theta[-1]) - float(self.x_mean_ @ self.coef_)
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        p1 = 1.0 / (1.0 + np.exp(-self.decision_function(X)))
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X: np.ndarray) -> np.ndarray:
        return (self.predict_proba(X)[:, 1] >= self.params.threshold).astype(np.int8)


class DFKRRParams(HypothesisParams):
    lam: float = Field(default=1.0, ge=0.0, allow_inf_nan=False, description="lambda of (7)")
    gamma: float | None = Field(default=None, gt=0.0, description="RBF width; None = 1 / n_features")


@register_learner
class DFKRR(SpanLearner[DFKRRParams]):
    """Distributed fair kernel ridge regression, closed form (7) with an RBF kernel."""

    name: ClassVar[str] = "dfkrr"
    Params: ClassVar[type[LearnerParams]] = DFKRRParams
    summary: ClassVar[str] = "kernel ridge regression in the span of accepted kernel hypotheses (Eq. 7)"
    family: ClassVar[Family] = "kernel"

    def __init__(self, params: DFKRRParams | None = None) -> None:
        super().__init__(params)
        self.weights_: np.ndarray | None = None

    def fit(self, X: np.ndarray, y: np.ndarray, basis: np.ndarray) -> DFKRR:
        X = np.asarray(X, dtype=np.float64)
        _, yc = self._centred(X, y, basis)
        gamma = self.params.gamma if self.params.gamma is not None else 1.0 / X.shape[1]
        K = rbf_kernel(X, X, gamma)
        A = K @ basis + self.params.lam * basis  # (K + lambda I) C, (n, k)
        # (7): alpha = [C^T (K+lam I)^T (K+lam I) C]^-1 C^T (K+lam I)^T Y, i.e. least squares of A alpha = Y.
        alpha = np.linalg.lstsq(A, yc, rcond=None)[0]
        self.X_fit_, self.gamma_ = X, gamma
        self.weights_ = basis @ alpha  # f(x) = sum_i k(x, x_i) (C alpha)_i
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        weights = self._check_fitted("weights_")
        kernel = rbf_kernel(np.asarray(X, dtype=np.float64), self.X_fit_, self.gamma_)
        scores: np.ndarray = kernel @ weights + self.y_mean_
        return scores


class _Constant:
    """The model of an empty span: every score is the training base rate."""

    def __init__(self, rate: float) -> None:
        self.rate = rate

    def predict_proba(self, Z: np.ndarray) -> np.ndarray:
        return np.column_stack([np.full(len(Z), 1.0 - self.rate), np.full(len(Z), self.rate)])


class DFPCAParams(HypothesisParams):
    components: int = Field(default=1, ge=1, description="leading directions kept (13: the leading eigenvector)")
    C: float = Field(default=1.0, gt=0.0, description="inverse regularisation of the logistic classifier")


@register_learner
class DFPCA(SpanLearner[DFPCAParams]):
    """Distributed fair PCA (11)-(13): principal directions within span(H), then logistic regression."""

    name: ClassVar[str] = "dfpca"
    Params: ClassVar[type[LearnerParams]] = DFPCAParams
    summary: ClassVar[str] = "PCA restricted to the accepted hypotheses' span (Eq. 13), then a classifier"

    def __init__(self, params: DFPCAParams | None = None) -> None:
        super().__init__(params)
        self.classifier_: Any = None

    def fit(self, X: np.ndarray, y: np.ndarray, basis: np.ndarray) -> DFPCA:
        from sklearn.linear_model import LogisticRegression

        Xc, _ = self._centred(X, y, basis)
        if self.k_ == 0:  # nothing accepted: the constant model (the base rate)
            self.components_ = np.zeros((Xc.shape[1], 0))
            self.classifier_ = _Constant(self.y_mean_)
            return self
        # Orthonormal basis Q of span(H): (13) H^T S H a = l H^T H a becomes Q^T S Q u = l u, v = Q u.
        U, sv, _ = np.linalg.svd(basis, full_matrices=False)
        Q = U[:, sv > sv.max() * 1e-10] if sv.size else U
        S = Xc.T @ Xc / Xc.shape[0]
        import scipy.linalg  # scipy is imported where it is used: design.md, "Start-up"

        values, vectors = scipy.linalg.eigh(Q.T @ S @ Q)
        q = min(self.params.components, Q.shape[1])
        self.components_ = Q @ vectors[:, ::-1][:, :q]  # (p, q), unit norm columns
        self.explained_variance_ = values[::-1][:q]
        self.classifier_ = LogisticRegression(C=self.params.C, max_iter=1000).fit(Xc @ self.components_, y)
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        classifier = self._check_fitted("classifier_")
        Z = (np.asarray(X, dtype=np.float64) - self.x_mean_) @ self.components_
        scores: np.ndarray = classifier.predict_proba(Z)[:, 1]
        return scores
