"""Fair learning when some people withhold their attribute: the two-dataset Lagrangian (14), Sec. 6.

Mozannar, Ohannessian & Srebro, ICML 2020, Sec. 6 ("Privacy as effective number
of labeled samples"). The data center holds X and y of everyone (S) and an
attribute of the reporters only (S_l); the others (S_u) withheld it (Z = -1).
Sec. 6 modifies the reductions approach of Algorithm 1 so that the learner (the
Q-player) learns on all of S while the auditor (the lambda-player) uses only
S_l, through the two-dataset Lagrangian

    L^{S, S_l}(Q, lambda) = err^S(Q) + lambda^T (M gamma^{S_l}(Q) - alpha 1).     (14)

Two consequences, both as Sec. 6 states them: the update of theta (the
multipliers) only reads S_l, and the learner's best response is still a
cost-sensitive classification whose costs depend on the set an individual is
in: for i in S_u the plain misclassification cost (only err^S involves them),
for i in S_l the misclassification cost plus the constraint's term.

Sec. 6 takes the reporters' attribute as exact. Here it is a randomized-response
release Z = RR_eps(A) (``rr-release`` with ``report_probability`` < 1), so
gamma^{S_l} is the Sec. 4 *debiased* estimate from the reporters: with
W = Pi^{-1},

    gamma~_{e,a}(h) = sum_{i in S_l, e_i = e} W[a, z_i] h(x_i) / sum_{i in S_l, e_i = e} W[a, z_i],

linear in h (Y-hat ignores Z, Prop. 1), so M gamma~ is a fairlearn ``Moment``
and (14) is solved by fairlearn's ``ExponentiatedGradient`` unchanged. For
eps -> infinity W -> I and this is exactly (14) with the reporters' A.
``attribute = "released"`` takes W = I at every eps instead: the constraint
w.r.t. Z of Algorithm 1, consistent w.r.t. A only in the population limit
(Sec. 5.1). Reporting at random (probability beta, independent of everything)
meets Prop. 2's condition, so the reporters' estimate is consistent; Lemma 3
then bounds the error by the complexity of n samples and the discrimination
by that of n_l = beta n.

M is the constraint matrix of Agarwal et al. (as in fairlearn's ``EqualizedOdds``
and ``DemographicParity``): for every event e (Y = y for equalized odds; all
for demographic parity) and group a, gamma~_{e,a} - gamma_e <= alpha and
gamma_e - gamma~_{e,a} <= alpha, where gamma_e is the reporters' rate in e
(sum_a P~(a | e) gamma~_{e,a} = gamma_e, since the columns of Pi^{-1} sum to 1).

Sec. 6 also notes that without A at test time no post-processing step can
follow: the predictor of (14) is the final one, a function of X alone.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from parley.parties.learners.registry import Learner, LearnerParams, register_learner
from parley.protocols.estimators.rr_estimators import WITHHELD, group_rates

__all__ = ["PartialReportingLearner", "PartialReportingParams", "partial_reporting_at_data_center"]

Constraint = Literal["equalized_odds", "demographic_parity"]


class PartialReportingParams(LearnerParams):
    """Parameters of the partial-reporting learner (defaults: Sec. 5.3's T, B and eta)."""

    constraint: Constraint = Field("equalized_odds", description="fairness notion of the constraint M gamma")
    attribute: Literal["debiased", "released"] = Field(
        "debiased", description="gamma^{S_l} from the debiased rates w.r.t. A (Sec. 4) or w.r.t. Z as if it were A")
    alpha: float = Field(0.01, ge=0.0, le=1.0, description="alpha of (14) (fairlearn's difference_bound)")
    max_iter: int = Field(50, ge=1, le=10_000, description="T, rounds of exponentiated gradient")
    bound: float = Field(100.0, gt=0.0, allow_inf_nan=False, description="B, the l1 bound on the multipliers")
    eta0: float = Field(2.0, gt=0.0, allow_inf_nan=False, description="eta, exponentiated gradient step")
    C: float = Field(1.0, gt=0.0, allow_inf_nan=False, description="inverse regularisation of the logistic regressions")
    baselines: bool = Field(True, description="also fit the reporters-only and the unconstrained predictors")


def _exponentiated_gradient(params: PartialReportingParams, moment: Any) -> Any:
    from fairlearn.reductions import ExponentiatedGradient
    from sklearn.linear_model import LogisticRegression

    # fairlearn bounds ||lambda||_1 <= 1/eps: B = 1/eps (Sec. 5.3 uses B = 100).
    return ExponentiatedGradient(LogisticRegression(C=params.C, max_iter=1000), constraints=moment,
                                 eps=1.0 / params.bound, max_iter=params.max_iter, eta0=params.eta0)


def _fit(model: Any, X: np.ndarray, y: np.ndarray, z: np.ndarray) -> Any:
    with warnings.catch_warnings():  # pandas deprecation notices raised inside fairlearn, not about our input
        warnings.filterwarnings("ignore", module=r"fairlearn\.")
        model.fit(X, y, sensitive_features=z)
    return model


@register_learner
class PartialReportingLearner(Learner[PartialReportingParams]):
    """Exponentiated gradient on the two-dataset Lagrangian (14): loss on everyone, constraint on reporters."""

    name: ClassVar[str] = "partial-reporting"
    Params = PartialReportingParams
    flows: ClassVar[tuple[str, ...]] = ("rr-release",)
    summary: ClassVar[str] = ("fairlearn exponentiated gradient on Lagrangian (14): err on all of S, debiased "
                              "constraint on the reporters S_l (Sec. 6)")

    def fit(self, X: np.ndarray, y: np.ndarray, z: np.ndarray, epsilon: float, groups: int) -> PartialReportingLearner:
        """Solve (14) on S = all rows, S_l = rows with z != -1; returns self (scikit-learn style)."""
        from parley.parties.learners.debiased_moment import DebiasedParity  # (imports fairlearn)

        p = self.params
        X, y, z = np.asarray(X), np.asarray(y), np.asarray(z).astype(np.int64)
        moment = DebiasedParity(p.constraint, epsilon, groups, p.alpha, p.attribute == "debiased")
        self.model_ = _fit(_exponentiated_gradient(p, moment), X, y, z)
        self.reporters_ = int(np.count_nonzero(z != WITHHELD))
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """(n, 2) array of P(Y-hat = 0 | x), P(Y-hat = 1 | x) of the randomized predictor Q."""
        return np.asarray(self.model_._pmf_predict(np.asarray(X)), dtype=np.float64)

    def predict(self, X: np.ndarray, random_state: int | np.random.RandomState | None = None) -> np.ndarray:
        """A draw of Y-hat from Q (fairlearn's randomized prediction)."""
        return np.asarray(self.model_.predict(np.asarray(X), random_state=random_state))


def partial_reporting_at_data_center(data: Any, replies: list[tuple[str, dict[str, Any]]],
                                     params: PartialReportingParams, seed: int) -> dict[str, Any]:
    """Run inside the data center (:meth:`parley.parties.data_center.DataCenter.compute`).

    Fits (14) on the training set and its release (withheld entries allowed), and, with
    ``baselines``, the same exponentiated gradient on the reporters alone (S_l, the data a learner
    that drops non-reporters has) and an unconstrained logistic regression on all of S. Returns soft
    predictions on the audit set for the referee, and the data center's own debiased estimate of the
    learner's discrimination from the audit set's release. ``seed`` is unused: exponentiated gradient
    over lbfgs logistic regressions is deterministic, and the flow calls every learner alike.
    """
    from sklearn.linear_model import LogisticRegression

    from parley.parties.learners.two_step import release_of

    train = release_of(replies, "train", allow_withheld=True)
    held = {p.get("set") for kind, p in replies if kind == "attribute-release"}
    audit = release_of(replies, "audit", allow_withheld=True) if "audit" in held else None
    eps, k = float(train["epsilon"]), int(train["groups"])
    z = np.asarray(train["z"]).astype(np.int64)
    X, y = data.X_train, data.y_train
    learner = PartialReportingLearner(params).fit(X, y, z, eps, k)
    out: dict[str, Any] = {"learner": learner.predict_proba(data.X_audit)[:, 1], "reporters": learner.reporters_}
    if params.baselines:
        kept = z != WITHHELD
        only = PartialReportingLearner(params).fit(X[kept], y[kept], z[kept], eps, k)
        out["reporters_only"] = only.predict_proba(data.X_audit)[:, 1]
        plain = LogisticRegression(C=params.C, max_iter=1000).fit(X, y)
        out["unconstrained"] = plain.predict(data.X_audit).astype(np.float64)   # the deterministic classifier
    if audit is not None:
        rates = group_rates(params.constraint, out["learner"], data.y_audit, np.asarray(audit["z"]), eps, k)
        out["learner_disc_estimate"], out["learner_disc_naive"] = rates.debiased_gap, rates.naive_gap
    return out
