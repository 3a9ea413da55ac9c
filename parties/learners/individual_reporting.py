"""Fair learning when each person reports A with their own probability t(x, y, a): Prop. 2, Sec. 6.

Mozannar, Ohannessian & Srebro, ICML 2020, Sec. 6 ("Individual choice of
reporting"). The two-dataset Lagrangian (14) of
:mod:`parley.parties.learners.partial_reporting` reads its constraint from the
reporters S_l. Prop. 2: that estimate is consistent when T and E1 are
conditionally independent given {A, E2}; for equalized odds and a predictor of
X that holds for any t(y, a), but not for demographic parity when t depends on
y, nor for any notion when t depends on x.

This learner corrects for a known t: reporter i counts in group a with weight
W[a, z_i] / t(x_i, y_i, a) (inverse-probability weighting over the release,
:mod:`parley.protocols.estimators.reporting`), which is consistent whatever t
(t > 0). The constraint stays linear in h, so (14) with the corrected rates is
solved by fairlearn's ``ExponentiatedGradient`` as before: err on all of S,
corrected M gamma on S_l. For a constant t the weights cancel and this is the
partial-reporting learner.

The t used is the one the release states (``rr-release``'s ``reporting``)
unless ``reporting`` names another: what the data center believes, and the way
to measure what a wrong t costs.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from parley.parties.learners.registry import Learner, LearnerParams, register_learner
from parley.protocols.errors import ConfigError
from parley.protocols.estimators.reporting import ReportingFunction, group_weights, reporting_rates
from parley.protocols.estimators.rr_estimators import WITHHELD

__all__ = ["IndividualReportingLearner", "IndividualReportingParams", "individual_reporting_at_data_center",
           "release_reporting"]

Constraint = Literal["equalized_odds", "demographic_parity"]

NO_REPORTING = ("the {name!r} release states no reporting function and learner.reporting is unset: give the "
                "t the data center assumes in learner.reporting")


class IndividualReportingParams(LearnerParams):
    """Parameters of the individual-reporting learner (defaults: Sec. 5.3's T, B and eta)."""

    constraint: Constraint = Field("equalized_odds", description="fairness notion of the constraint M gamma")
    reporting: ReportingFunction | None = Field(
        None, description="t(x, y, a) the data center assumes (unset: the one the release states)")
    alpha: float = Field(0.01, ge=0.0, le=1.0, description="alpha of (14) (fairlearn's difference_bound)")
    max_iter: int = Field(50, ge=1, le=10_000, description="T, rounds of exponentiated gradient")
    bound: float = Field(100.0, gt=0.0, allow_inf_nan=False, description="B, the l1 bound on the multipliers")
    eta0: float = Field(2.0, gt=0.0, allow_inf_nan=False, description="eta, exponentiated gradient step")
    C: float = Field(1.0, gt=0.0, allow_inf_nan=False, description="inverse regularisation of the logistic regressions")
    baselines: bool = Field(True, description="also fit (14) without the correction, and an unconstrained model")


def _fit(params: IndividualReportingParams, moment: Any, X: np.ndarray, y: np.ndarray, z: np.ndarray) -> Any:
    from fairlearn.reductions import ExponentiatedGradient
    from sklearn.linear_model import LogisticRegression

    model = ExponentiatedGradient(LogisticRegression(C=params.C, max_iter=1000), constraints=moment,
                                  eps=1.0 / params.bound, max_iter=params.max_iter, eta0=params.eta0)
    with warnings.catch_warnings():  # pandas deprecation notices raised inside fairlearn, not about our input
        warnings.filterwarnings("ignore", module=r"fairlearn\.")
        model.fit(X, y, sensitive_features=z)
    return model


@register_learner
class IndividualReportingLearner(Learner[IndividualReportingParams]):
    """Lagrangian (14) with the reporters' rates reweighted by 1 / t(x, y, a) (Prop. 2, Sec. 6)."""

    name: ClassVar[str] = "individual-reporting"
    Params = IndividualReportingParams
    flows: ClassVar[tuple[str, ...]] = ("rr-release",)
    summary: ClassVar[str] = ("fairlearn exponentiated gradient on Lagrangian (14), the reporters' rates weighted "
                              "by W[a, z] / t(x, y, a) for individual reporting (Sec. 6, Prop. 2)")

    def fit(self, X: np.ndarray, y: np.ndarray, z: np.ndarray, epsilon: float, groups: int,
            reporting: ReportingFunction | None) -> IndividualReportingLearner:
        """Solve (14) with the t-corrected constraint (``reporting`` None: uncorrected, Prop. 2's estimate)."""
        from parley.parties.learners.weighted_parity import WeightedParity  # (imports fairlearn)

        p = self.params

        def weights(X: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
            return group_weights(reporting, X, y, z, epsilon, groups)

        X, y, z = np.asarray(X), np.asarray(y), np.asarray(z).astype(np.int64)
        self.model_ = _fit(p, WeightedParity(p.constraint, weights, p.alpha), X, y, z)
        self.reporters_ = int(np.count_nonzero(z != WITHHELD))
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """(n, 2) array of P(Y-hat = 0 | x), P(Y-hat = 1 | x) of the randomized predictor Q."""
        return np.asarray(self.model_._pmf_predict(np.asarray(X)), dtype=np.float64)


def release_reporting(release: dict[str, Any], groups: int) -> ReportingFunction | None:
    """The reporting function a release states: its ``reporting`` table, else its constant ``report_probability``."""
    stated = release.get("reporting")
    if stated is not None:
        return ReportingFunction.model_validate(stated)
    beta = release.get("report_probability")
    return ReportingFunction.constant(float(beta), groups) if beta is not None else None


def individual_reporting_at_data_center(data: Any, replies: list[tuple[str, dict[str, Any]]],
                                        params: IndividualReportingParams, seed: int) -> dict[str, Any]:
    """Run inside the data center: fit on the training release with the assumed t, predict on the audit set.

    With ``baselines``, also (14) without the correction (``uncorrected``, the reporters' debiased rates
    that Prop. 2 covers) and an unconstrained logistic regression. The data center's own estimates of the
    learner's discrimination from the audit set's release, corrected and not, go beside. ``seed`` is
    unused (deterministic fits).
    """
    from sklearn.linear_model import LogisticRegression

    from parley.parties.learners.two_step import release_of

    train = release_of(replies, "train", allow_withheld=True)
    held = {p.get("set") for kind, p in replies if kind == "attribute-release"}
    audit = release_of(replies, "audit", allow_withheld=True) if "audit" in held else None
    eps, k = float(train["epsilon"]), int(train["groups"])
    t = params.reporting if params.reporting is not None else release_reporting(train, k)
    if t is None:
        raise ConfigError(NO_REPORTING.format(name="train"))
    z = np.asarray(train["z"]).astype(np.int64)
    X, y = data.X_train, data.y_train
    learner = IndividualReportingLearner(params).fit(X, y, z, eps, k, t)
    out: dict[str, Any] = {"learner": learner.predict_proba(data.X_audit)[:, 1], "reporters": learner.reporters_}
    if params.baselines:
        plain = IndividualReportingLearner(params).fit(X, y, z, eps, k, None)
        out["uncorrected"] = plain.predict_proba(data.X_audit)[:, 1]
        out["unconstrained"] = LogisticRegression(C=params.C, max_iter=1000).fit(X, y).predict(
            data.X_audit).astype(np.float64)
    if audit is not None:
        t_audit = params.reporting if params.reporting is not None else release_reporting(audit, k)
        if t_audit is not None:
            rates = reporting_rates(params.constraint, out["learner"], data.X_audit, data.y_audit,
                                    np.asarray(audit["z"]), eps, k, t_audit)
            out["learner_disc_estimate"] = rates.corrected_gap
            out["learner_disc_naive"] = rates.reporters_only_gap
    return out
