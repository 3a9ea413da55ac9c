"""Fair learning and auditing through a learned proxy P(A | X, Y): the estimator (15), Sec. 6.

Mozannar, Ohannessian & Srebro, ICML 2020, Sec. 6 ("Trade-offs and proxies"):
"if such a proxy can be efficiently learned from samples, then it can reduce a
missing attribute problem effectively to a private attribute problem". Here the
data center learns the proxy from what it has: the training set's
randomized-response release, with withheld entries where people did not report.

The proxy. A multinomial logistic model P_U(A = a | x, y) = softmax(U phi)_a
with phi = (1, x, y) (``with_label``; (1, x) for the proxy P(A | X) of the
paper's warning) is fitted to the reporters' Z through the known channel:
P(Z = z | x, y) = sum_a Pi[z, a] P_U(A = a | x, y), by maximum likelihood
with an l2 penalty (scipy's L-BFGS, exact gradient). The channel is what makes
a proxy of A and not of Z; it is consistent when the model holds and reporting
is at random.

The uses. Estimator (15), :func:`parley.protocols.estimators.proxy_estimator.proxy_rates`,
audits a predictor of X over *everyone*, reporters or not; Lemma 4 makes it
consistent with P(A | X, Y), not with P(A | X) unless A is a function of X.
Learning: its rates are linear in h (weights omega[a, i] = P(A = a | x_i, y_i)),
so the constraint M gamma - alpha on every row is a fairlearn moment
(:class:`parley.parties.learners.weighted_parity.WeightedParity`) and
exponentiated gradient solves err + lambda^T (M gamma - alpha) on all of S.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from parley.parties.learners.registry import Learner, LearnerParams, register_learner
from parley.protocols.errors import QueryError
from parley.protocols.estimators.proxy_estimator import proxy_rates
from parley.protocols.estimators.rr_estimators import WITHHELD, discrimination, group_rates, rr_matrix

__all__ = ["ChannelProxy", "ProxyFairLearner", "ProxyFairParams", "fit_channel_proxy", "proxy_fair_at_data_center"]

NO_REPORTERS = "no individual of the training set reported an attribute: the proxy has nothing to learn from"
PROXY_FAILED = "fitting the proxy P(A | X{label}) did not converge: {message}"

Constraint = Literal["equalized_odds", "demographic_parity"]


@dataclass(frozen=True)
class ChannelProxy:
    """P(A = . | x, y) = softmax(U phi(x, y)), phi = (1, standardized x, y if ``with_label``)."""

    U: np.ndarray          # (k, d)
    mean: np.ndarray
    scale: np.ndarray
    with_label: bool

    def features(self, X: np.ndarray, y: np.ndarray | None) -> np.ndarray:
        X = (np.asarray(X, dtype=np.float64) - self.mean) / self.scale
        cols = [np.ones((X.shape[0], 1)), X]
        if self.with_label:
            if y is None:
                raise QueryError("this proxy is P(A | X, Y): give y")
            cols.append(np.asarray(y, dtype=np.float64)[:, None])
        return np.hstack(cols)

    def __call__(self, X: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
        """(n, k) probabilities of A."""
        logits = self.features(X, y) @ self.U.T
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        out: np.ndarray = p / p.sum(axis=1, keepdims=True)
        return out


def fit_channel_proxy(X: np.ndarray, y: np.ndarray, z: np.ndarray, epsilon: float, groups: int,
                      with_label: bool = True, C: float = 1.0) -> ChannelProxy:
    """Maximum likelihood of the reporters' Z under P(Z | x, y) = Pi P_U(A | x, y), l2 penalty |U|^2 / (2 C)."""
    from scipy.optimize import minimize

    X, y, z = np.asarray(X, dtype=np.float64), np.asarray(y), np.asarray(z).astype(np.int64)
    kept = z != WITHHELD
    if not kept.any():
        raise QueryError(NO_REPORTERS)
    mean, scale = X.mean(axis=0), X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    shell = ChannelProxy(np.zeros((groups, 1)), mean, scale, with_label)
    phi = shell.features(X[kept], y[kept])
    n, d = phi.shape
    channel = rr_matrix(epsilon, groups)[z[kept]]              # (n, k): Pi[z_i, a]

    def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
        U = flat.reshape(groups, d)
        logits = phi @ U.T
        logits -= logits.max(axis=1, keepdims=True)
        s = np.exp(logits)
        s /= s.sum(axis=1, keepdims=True)                      # P_U(A = a | x_i, y_i)
        joint = channel * s                                    # Pi[z_i, a] P_U(a | .)
        like = joint.sum(axis=1)
        value = -float(np.log(like).sum()) / n + float((U[:, 1:] ** 2).sum()) / (2.0 * C * n)
        # d/du_ic of -log sum_a Pi[z, a] s_a = s_c - Pi[z, c] s_c / like.
        grad_logits = s - joint / like[:, None]
        grad = grad_logits.T @ phi / n
        grad[:, 1:] += U[:, 1:] / (C * n)
        return value, grad.ravel()

    result = minimize(loss, np.zeros(groups * d), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    if not np.all(np.isfinite(result.x)):
        raise QueryError(PROXY_FAILED.format(label=", Y" if with_label else "", message=result.message))
    return ChannelProxy(result.x.reshape(groups, d), mean, scale, with_label)


class ProxyFairParams(LearnerParams):
    """Parameters of the proxy learner (defaults: Sec. 5.3's T, B and eta)."""

    constraint: Constraint = Field("equalized_odds", description="fairness notion of the constraint M gamma")
    with_label: bool = Field(True, description="the proxy P(A | X, Y) of (15) (false: P(A | X), the paper's warning)")
    alpha: float = Field(0.01, ge=0.0, le=1.0, description="alpha of the constraint (fairlearn's difference_bound)")
    max_iter: int = Field(50, ge=1, le=10_000, description="T, rounds of exponentiated gradient")
    bound: float = Field(100.0, gt=0.0, allow_inf_nan=False, description="B, the l1 bound on the multipliers")
    eta0: float = Field(2.0, gt=0.0, allow_inf_nan=False, description="eta, exponentiated gradient step")
    C: float = Field(1.0, gt=0.0, allow_inf_nan=False, description="inverse regularisation of every logistic model")
    baselines: bool = Field(True, description="also fit an unconstrained logistic regression")


@register_learner
class ProxyFairLearner(Learner[ProxyFairParams]):
    """Exponentiated gradient with the constraint's rates from a learned proxy P(A | X, Y) (Sec. 6, (15))."""

    name: ClassVar[str] = "proxy-fair"
    Params = ProxyFairParams
    flows: ClassVar[tuple[str, ...]] = ("rr-release",)
    summary: ClassVar[str] = ("a proxy P(A | X, Y) learned from the release through the RR channel, then fairlearn "
                              "exponentiated gradient with the rates of estimator (15) on every row (Sec. 6)")

    def fit(self, X: np.ndarray, y: np.ndarray, z: np.ndarray, epsilon: float, groups: int) -> ProxyFairLearner:
        """Learn the proxy from the release, then solve the constrained problem on all of S with it."""
        from fairlearn.reductions import ExponentiatedGradient
        from sklearn.linear_model import LogisticRegression

        from parley.parties.learners.weighted_parity import WeightedParity  # (imports fairlearn)

        p = self.params
        X, y, z = np.asarray(X, dtype=np.float64), np.asarray(y), np.asarray(z).astype(np.int64)
        self.proxy_ = fit_channel_proxy(X, y, z, epsilon, groups, p.with_label, p.C)
        proxy = self.proxy_

        def weights(X: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
            return proxy(X, y).T

        model = ExponentiatedGradient(LogisticRegression(C=p.C, max_iter=1000),
                                      constraints=WeightedParity(p.constraint, weights, p.alpha),
                                      eps=1.0 / p.bound, max_iter=p.max_iter, eta0=p.eta0)
        with warnings.catch_warnings():  # pandas deprecation notices raised inside fairlearn
            warnings.filterwarnings("ignore", module=r"fairlearn\.")
            model.fit(X, y, sensitive_features=z)
        self.model_ = model
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """(n, 2) array of P(Y-hat = 0 | x), P(Y-hat = 1 | x) of the randomized predictor."""
        return np.asarray(self.model_._pmf_predict(np.asarray(X)), dtype=np.float64)


def proxy_fair_at_data_center(data: Any, replies: list[tuple[str, dict[str, Any]]], params: ProxyFairParams,
                              seed: int) -> dict[str, Any]:
    """Inside the data center: fit the proxy learner, then audit it on the audit set three ways.

    Estimator (15) with the proxy P(A | X, Y) and with P(A | X) (both learned from the training release,
    applied to everyone of the audit set) and the debiased estimator of Sec. 4 on the audit set's
    reporters, for equalized odds (estimator (15) is stated for it). ``seed`` is unused.
    """
    from sklearn.linear_model import LogisticRegression

    from parley.parties.learners.two_step import release_of

    train = release_of(replies, "train", allow_withheld=True)
    audit = release_of(replies, "audit", allow_withheld=True)
    eps, k = float(train["epsilon"]), int(train["groups"])
    z = np.asarray(train["z"]).astype(np.int64)
    X, y = data.X_train, data.y_train
    learner = ProxyFairLearner(params).fit(X, y, z, eps, k)
    out: dict[str, Any] = {"learner": learner.predict_proba(data.X_audit)[:, 1],
                           "reporters": int(np.count_nonzero(z != WITHHELD))}
    if params.baselines:
        out["unconstrained"] = LogisticRegression(C=params.C, max_iter=1000).fit(X, y).predict(
            data.X_audit).astype(np.float64)
    other = fit_channel_proxy(X, y, z, eps, k, not params.with_label, params.C)
    with_y, without_y = (learner.proxy_, other) if params.with_label else (other, learner.proxy_)
    for key, predictions in (("learner", out["learner"]), ("unconstrained", out.get("unconstrained"))):
        if predictions is None:
            continue
        out[f"{key}_eo_proxy_xy"] = discrimination(proxy_rates(predictions, data.y_audit,
                                                               with_y(data.X_audit, data.y_audit)))
        out[f"{key}_eo_proxy_x"] = discrimination(proxy_rates(predictions, data.y_audit, without_y(data.X_audit)))
        out[f"{key}_eo_debiased"] = group_rates("equalized_odds", predictions, data.y_audit,
                                                np.asarray(audit["z"]), eps, k).debiased_gap
    return out
