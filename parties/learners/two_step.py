"""The two-step fair learner on a randomized-response release (Sec. 5 of the private-demographics paper).

Mozannar, Ohannessian & Srebro, ICML 2020. The data center holds X and y and
a release Z = RR_eps(A) (``rr-release``), never A.

Step 1 (Sec. 5.1, Algorithm 1): exponentiated gradient of Agarwal et al.
(fairlearn's ``ExponentiatedGradient``) with equalized odds or demographic
parity *with respect to Z*, on S1. fairlearn bounds the multipliers by
||lambda||_1 <= 1/eps, so the paper's B = 100 is ``eps = 0.01``; T is
``max_iter`` and eta ``eta0``. The result Y-hat = Q(X) is a randomized
predictor over logistic regressions that ignores Z.

Step 2 (Sec. 5.2, LP (13)): a derived predictor Y~ = f(Y-hat, Z) given by 2k
probabilities p[y-hat, z] = P(Y~ = 1 | Y-hat = y-hat, Z = z), chosen on S2 to
minimise the error subject to equalized odds *with respect to A*, which the
data center never sees. Two facts make that possible: Y-hat ignores Z, so its
rates P~(Y-hat = y-hat | Y = y, A = a) come from the debiased estimator of
Lemma 1 (:func:`parley.protocols.estimators.rr_estimators.group_rates`); and the derived
predictor's rates given A follow from eq. (12) with
p~[y-hat, a] = sum_z Pi[a, z] p[y-hat, z] (= pi p[y-hat, a] + pi_bar sum_{a' != a} p[y-hat, a']).
The constraint of (13), for every y and a != 0:

    | p~[0, a] P~(0 | y, a) + p~[1, a] P~(1 | y, a) - p~[0, 0] P~(0 | y, 0) - p~[1, 0] P~(1 | y, 0) | <= alpha~.

The objective of (13) as printed pairs the debiased joint P~(Y-hat, Z = a, Y)
with p~[y-hat, a]; since sum_a p~[., a] P~(., A = a, .) = p^T Pi Pi^{-1} P^S(., Z, .)
= sum_z p[., z] P^S(., Z = z, .), we minimise the empirical error of Y~ on S2,
sum_{y-hat, z} p[y-hat, z] (P^S(y-hat, z, Y = 0) - P^S(y-hat, z, Y = 1)): the
same number, without the detour. The LP is solved by scipy's HiGHS.

With demographic parity the rows are P~(Y-hat | A = a) instead of P~(Y-hat | Y = y, A = a).
Expected counts of the randomized Y-hat (P(Y-hat = 1 | x)) are used throughout,
not one sampled decision.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from parley.parties.learners.registry import Learner, LearnerParams, register_learner
from parley.protocols.errors import ConfigError, InternalError, QueryError
from parley.protocols.estimators.rr_estimators import WITHHELD, group_rates, rr_matrix

__all__ = ["DerivedPredictor", "TwoStepLearner", "TwoStepParams", "fit_step1", "post_process", "release_of",
           "two_step_at_data_center"]

NO_RELEASE = "the data center holds no attribute-release of the {name!r} set (releases held: {held})"
WITHHELD_UNSUPPORTED = ("the two-step learner needs Z for every individual (Sec. 5); the {name!r} release has "
                        "{count} withheld entries (for report_probability < 1 use learner 'partial-reporting', Sec. 6)")
LP_FAILED = "post-processing LP (13) failed: {message}"

Constraint = Literal["equalized_odds", "demographic_parity"]


class TwoStepParams(LearnerParams):
    """Parameters of the two-step learner (defaults: Sec. 5.3, Figure 1)."""

    constraint: Constraint = Field("equalized_odds", description="fairness notion of both steps")
    max_iter: int = Field(50, ge=1, le=10_000, description="T, rounds of exponentiated gradient")
    bound: float = Field(100.0, gt=0.0, allow_inf_nan=False, description="B, the l1 bound on the multipliers")
    eta0: float = Field(2.0, gt=0.0, allow_inf_nan=False, description="eta, exponentiated gradient step")
    alpha: float = Field(0.0, ge=0.0, le=1.0, description="alpha~, the slack of the LP (13) constraints")
    split: float = Field(0.5, gt=0.0, lt=1.0, description="share of the training set in S1 (the rest is S2)")
    step1_on_all: bool = Field(True, description="also fit step 1 on all of S (Figure 1)")
    C: float = Field(1.0, gt=0.0, allow_inf_nan=False, description="inverse regularisation of the logistic regressions")


def fit_step1(X: np.ndarray, y: np.ndarray, z: np.ndarray, params: TwoStepParams) -> Any:
    """Algorithm 1 (fairlearn ExponentiatedGradient) on (X, y) with Z as the sensitive feature."""
    from fairlearn.reductions import DemographicParity, EqualizedOdds, ExponentiatedGradient
    from sklearn.linear_model import LogisticRegression

    constraint = EqualizedOdds() if params.constraint == "equalized_odds" else DemographicParity()
    model = ExponentiatedGradient(LogisticRegression(C=params.C, max_iter=1000), constraints=constraint,
                                  eps=1.0 / params.bound, max_iter=params.max_iter, eta0=params.eta0)
    with warnings.catch_warnings():  # pandas deprecation notices raised inside fairlearn, not about our input
        warnings.filterwarnings("ignore", module=r"fairlearn\.")
        model.fit(X, y, sensitive_features=z)
    return model


def soft_predict(model: Any, X: np.ndarray) -> np.ndarray:
    """P(Y-hat = 1 | x) of the randomized step-1 predictor (its mixture over hypotheses)."""
    return np.asarray(model._pmf_predict(X)[:, 1], dtype=np.float64)


@dataclass(frozen=True)
class DerivedPredictor:
    """Y~ = f(Y-hat, Z): ``p[y_hat, z]`` = P(Y~ = 1 | Y-hat = y_hat, Z = z), shape (2, k)."""

    p: np.ndarray

    def predict_proba(self, step1: np.ndarray, z: np.ndarray) -> np.ndarray:
        """P(Y~ = 1 | x, z) = s(x) p[1, z] + (1 - s(x)) p[0, z] for step-1 probabilities s."""
        z = np.asarray(z, dtype=np.int64)
        proba: np.ndarray = step1 * self.p[1, z] + (1.0 - step1) * self.p[0, z]
        return proba


def post_process(step1: np.ndarray, y: np.ndarray, z: np.ndarray, epsilon: float, groups: int,
                 constraint: Constraint = "equalized_odds", alpha: float = 0.0) -> DerivedPredictor:
    """Solve LP (13) on S2: the error-minimising derived predictor, fair w.r.t. A by the debiased rates."""
    from scipy.optimize import linprog

    k = groups
    y = np.asarray(y)
    z = np.asarray(z, dtype=np.int64)
    onehot = np.eye(k)[z]
    n = float(y.shape[0])
    # Objective: sum_{yhat, z} p[yhat, z] (P^S(yhat, z, Y=0) - P^S(yhat, z, Y=1)); variables p[0, :], p[1, :].
    sign = np.where(y == 0, 1.0, -1.0)
    c = np.concatenate([((1.0 - step1) * sign) @ onehot, (step1 * sign) @ onehot]) / n
    rates1 = group_rates(constraint, step1, y, z, epsilon, groups).debiased   # P~(Y-hat = 1 | cond, A = a): (c, k)
    rates = (1.0 - rates1, rates1)                                         # index y-hat
    Pi = rr_matrix(epsilon, groups)
    rows = []
    for cond in range(rates1.shape[0]):
        # gamma~[cond, a] as a linear form in p: sum_{yhat, z} Pi[a, z] rates[yhat][cond, a] p[yhat, z].
        forms = np.stack([np.concatenate([Pi[a] * rates[0][cond, a], Pi[a] * rates[1][cond, a]]) for a in range(k)])
        for a in range(1, k):
            rows.append(forms[a] - forms[0])
            rows.append(forms[0] - forms[a])
    A_ub = np.asarray(rows)
    b_ub = np.full(A_ub.shape[0], alpha)
    result = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=[(0.0, 1.0)] * (2 * k), method="highs")
    if result.status != 0:
        raise InternalError(LP_FAILED.format(message=result.message))
    return DerivedPredictor(p=np.clip(result.x, 0.0, 1.0).reshape(2, k))


def release_of(replies: list[tuple[str, dict[str, Any]]], name: str, allow_withheld: bool = False) -> dict[str, Any]:
    """The (latest) attribute-release payload of set ``name`` among the data center's replies.

    Refuses a release with withheld entries (Z = -1) unless ``allow_withheld``: the two-step
    learner needs Z of everyone; the estimators and the partial-reporting learner do not.
    """
    found = [p for kind, p in replies if kind == "attribute-release" and p.get("set") == name]
    if not found:
        held = ", ".join(sorted({str(p.get("set")) for kind, p in replies if kind == "attribute-release"})) or "none"
        raise ConfigError(NO_RELEASE.format(name=name, held=held))
    release = found[-1]
    withheld = int(np.count_nonzero(np.asarray(release["z"]) == WITHHELD))
    if withheld and not allow_withheld:
        raise QueryError(WITHHELD_UNSUPPORTED.format(name=name, count=withheld))
    return release


@register_learner
class TwoStepLearner(Learner[TwoStepParams]):
    """Exponentiated gradient w.r.t. Z, then the post-processing LP (13) w.r.t. A (Sec. 5)."""

    name: ClassVar[str] = "two-step"
    Params = TwoStepParams
    flows: ClassVar[tuple[str, ...]] = ("rr-release",)
    summary: ClassVar[str] = "fairlearn exponentiated gradient on the released Z, then LP (13) post-processing w.r.t. A"

    def fit(self, X: np.ndarray, y: np.ndarray, z: np.ndarray, epsilon: float, groups: int,
            rng: np.random.Generator) -> TwoStepLearner:
        """Split into S1 and S2, run step 1 on S1 and LP (13) on S2; optionally step 1 on all of S too."""
        p = self.params
        order = rng.permutation(y.shape[0])
        cut = int(round(p.split * y.shape[0]))
        s1, s2 = order[:cut], order[cut:]
        self.step1_ = fit_step1(X[s1], y[s1], z[s1], p)
        self.derived_ = post_process(soft_predict(self.step1_, X[s2]), y[s2], z[s2], epsilon, groups,
                                     p.constraint, p.alpha)
        self.step1_all_ = fit_step1(X, y, z, p) if p.step1_on_all else None
        return self

    def predict_proba(self, X: np.ndarray, z: np.ndarray) -> np.ndarray:
        """P(Y~ = 1 | x, z) of the two-step predictor."""
        return self.derived_.predict_proba(soft_predict(self.step1_, X), z)

    def predict_step1(self, X: np.ndarray) -> np.ndarray:
        """P(Y-hat = 1 | x) of the step-1 predictor fit on all of S (on S1 if ``step1_on_all`` is off)."""
        return soft_predict(self.step1_all_ if self.step1_all_ is not None else self.step1_, X)


def two_step_at_data_center(data: Any, replies: list[tuple[str, dict[str, Any]]], params: TwoStepParams,
                            seed: int) -> dict[str, Any]:
    """Fit, predict and audit on the released attributes, inside the data center.

    Run by :meth:`parley.parties.data_center.DataCenter.compute`: fit on the training set's release,
    predict on the audit set with its release, and audit both predictors with the debiased estimator.
    Returns soft predictions for the referee to score against the true A.
    """
    train, audit = release_of(replies, "train"), release_of(replies, "audit")
    eps, k = float(train["epsilon"]), int(train["groups"])
    learner = TwoStepLearner(params).fit(data.X_train, data.y_train, np.asarray(train["z"]), eps, k,
                                         np.random.default_rng(seed))
    z_audit = np.asarray(audit["z"])
    step1 = learner.predict_step1(data.X_audit)
    two_step = learner.predict_proba(data.X_audit, z_audit)
    audit_rates = group_rates(params.constraint, step1, data.y_audit, z_audit, eps, k)
    return {
        "step1": step1, "two_step": two_step, "p": learner.derived_.p,
        # What the data center itself can tell from the audit set's release (no A needed).
        "step1_disc_estimate": audit_rates.debiased_gap,
        "step1_disc_naive": audit_rates.naive_gap,
    }
