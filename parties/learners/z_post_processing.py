"""The naive learner of Sec. 4 that post-processes with Z read as A: fair w.r.t. Z, not w.r.t. A.

Mozannar, Ohannessian & Srebro, ICML 2020, Sec. 4 (its Appendix A, the paper's own example, is
not reproduced here: parley's copy of the paper ends before the appendices): "if a certain predictor
Y-hat = h(X, Z) uses Z for predictions and is non-discriminatory with respect
to Z, then it is possible for it to in fact be discriminatory with respect to
A ... Any method that naively uses the attribute Z for its final predictions
cannot immediately guarantee any level of non-discrimination with respect to A,
especially post-processing methods." Prop. 1's equivalence needs Y-hat to
ignore Z; a derived predictor f(Y-hat, Z) does not.

This learner is that naive method, built from the two-step learner's parts:
step 1 on S1 is a plain logistic regression of X (``step1 = "unconstrained"``,
the usual input of post-processing) or the two-step learner's exponentiated
gradient w.r.t. Z; step 2 is the post-processing LP of Hardt et al. with Z in
place of A (LP (13) with Pi = I: no debiasing, the released code read as the
group), on S2. Its predictor Y~ = f(Y-hat, Z) meets equalized odds w.r.t. Z
on S2 up to alpha; the referee measures it against the true A. Beside it, the
data center's own view (the gap of Y~ w.r.t. Z on the audit set's release: all
it can see) and LP (13) w.r.t. A on the same step 1 (``debiased``, Sec. 5.2).

Why the gap w.r.t. A survives, in the population: with Y-hat independent of Z
given A (a predictor of X), the rates of Y~ given A are
sum_z Pi[z, a] sum_y-hat p[y-hat, z] P(y-hat | y, a) (eq. (12)), so a
correction p[., z] aimed at the group Z = z reaches the group A = z only with
weight pi and spills over onto the other groups with weight pi_bar: equalizing
the rates by Z removes about (pi - pi_bar) of the gap by A, not all of it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from parley.parties.learners.registry import Learner, LearnerParams, register_learner
from parley.parties.learners.two_step import (
    TwoStepParams,
    fit_step1,
    post_process,
    release_of,
    soft_predict,
)
from parley.protocols.estimators.rr_estimators import group_rates

__all__ = ["ZPostProcessingLearner", "ZPostProcessingParams", "z_post_processing_at_data_center", "Z_AS_A"]

#: An epsilon at which randomized response keeps every value (pi = 1 in float64): Pi = I, Z read as A.
Z_AS_A = 700.0


class ZPostProcessingParams(LearnerParams):
    """Parameters of the naive post-processing learner."""

    constraint: Literal["equalized_odds", "demographic_parity"] = Field(
        "equalized_odds", description="fairness notion of the post-processing (and of step 1 if fair)")
    step1: Literal["unconstrained", "exponentiated-gradient"] = Field(
        "unconstrained", description="step 1: a logistic regression of X, or exponentiated gradient w.r.t. Z")
    max_iter: int = Field(50, ge=1, le=10_000, description="T, rounds of exponentiated gradient (if step 1 uses it)")
    bound: float = Field(100.0, gt=0.0, allow_inf_nan=False, description="B, the l1 bound on the multipliers")
    eta0: float = Field(2.0, gt=0.0, allow_inf_nan=False, description="eta, exponentiated gradient step")
    alpha: float = Field(0.0, ge=0.0, le=1.0, description="slack of the post-processing LP's constraints")
    split: float = Field(0.5, gt=0.0, lt=1.0, description="share of the training set in S1 (the rest is S2)")
    C: float = Field(1.0, gt=0.0, allow_inf_nan=False, description="inverse regularisation of the logistic regressions")

    def two_step(self) -> TwoStepParams:
        return TwoStepParams(constraint=self.constraint, max_iter=self.max_iter, bound=self.bound, eta0=self.eta0,
                             alpha=self.alpha, split=self.split, step1_on_all=False, C=self.C)


class _Plain:
    """A logistic regression with the exponentiated gradient's ``_pmf_predict`` (what ``soft_predict`` reads)."""

    def __init__(self, X: np.ndarray, y: np.ndarray, C: float) -> None:
        from sklearn.linear_model import LogisticRegression

        self.model = LogisticRegression(C=C, max_iter=1000).fit(X, y)

    def _pmf_predict(self, X: np.ndarray) -> np.ndarray:
        hard = self.model.predict(X).astype(np.float64)          # the deterministic classifier
        return np.stack([1.0 - hard, hard], axis=1)


@register_learner
class ZPostProcessingLearner(Learner[ZPostProcessingParams]):
    """Step 1 (logistic regression or exponentiated gradient w.r.t. Z), then post-processing w.r.t. Z as if A."""

    name: ClassVar[str] = "z-post-processing"
    Params = ZPostProcessingParams
    flows: ClassVar[tuple[str, ...]] = ("rr-release",)
    summary: ClassVar[str] = ("naive post-processing: Hardt et al.'s LP w.r.t. Z read as A, fair w.r.t. Z and not "
                              "w.r.t. A (the Sec. 4 / Appendix A counter-example)")

    def fit(self, X: np.ndarray, y: np.ndarray, z: np.ndarray, epsilon: float, groups: int,
            rng: np.random.Generator) -> ZPostProcessingLearner:
        """Step 1 on S1; on S2 the LP w.r.t. Z (Pi = I) and, beside it, LP (13) w.r.t. A (debiased)."""
        p = self.params
        order = rng.permutation(y.shape[0])
        cut = int(round(p.split * y.shape[0]))
        s1, s2 = order[:cut], order[cut:]
        if p.step1 == "unconstrained":
            self.step1_: Any = _Plain(X[s1], y[s1], p.C)
        else:
            self.step1_ = fit_step1(X[s1], y[s1], z[s1], p.two_step())
        scores = soft_predict(self.step1_, X[s2])
        self.derived_ = post_process(scores, y[s2], z[s2], Z_AS_A, groups, p.constraint, p.alpha)
        self.debiased_ = post_process(scores, y[s2], z[s2], epsilon, groups, p.constraint, p.alpha)
        return self

    def predict_proba(self, X: np.ndarray, z: np.ndarray) -> np.ndarray:
        """P(Y~ = 1 | x, z) of the post-processed predictor (it reads Z)."""
        return self.derived_.predict_proba(soft_predict(self.step1_, X), z)

    def predict_debiased(self, X: np.ndarray, z: np.ndarray) -> np.ndarray:
        """P(Y~ = 1 | x, z) of LP (13) w.r.t. A on the same step 1 (the two-step learner's step 2)."""
        return self.debiased_.predict_proba(soft_predict(self.step1_, X), z)

    def predict_step1(self, X: np.ndarray) -> np.ndarray:
        """P(Y-hat = 1 | x) of step 1."""
        return soft_predict(self.step1_, X)


def z_post_processing_at_data_center(data: Any, replies: list[tuple[str, dict[str, Any]]],
                                     params: ZPostProcessingParams, seed: int) -> dict[str, Any]:
    """Fit on the training release, predict on the audit set with its release, inside the data center.

    Returns the step-1 and post-processed soft predictions (keys ``step1`` and ``two_step``, scored by the
    referee as the two-step learner's), LP (13) w.r.t. A on the same step 1 (``debiased``), and the gap
    of the naive predictor w.r.t. Z on the audit set's release (``two_step_disc_released``): what the data
    center sees of its fairness.
    """
    train, audit = release_of(replies, "train"), release_of(replies, "audit")
    eps, k = float(train["epsilon"]), int(train["groups"])
    learner = ZPostProcessingLearner(params).fit(data.X_train, data.y_train, np.asarray(train["z"]), eps, k,
                                                 np.random.default_rng(seed))
    z_audit = np.asarray(audit["z"])
    step1 = learner.predict_step1(data.X_audit)
    final = learner.predict_proba(data.X_audit, z_audit)
    return {
        "step1": step1, "two_step": final, "p": learner.derived_.p,
        "debiased": learner.predict_debiased(data.X_audit, z_audit),
        # Rates by Z read as A: the fairness the naive learner believes it has.
        "two_step_disc_released": group_rates(params.constraint, final, data.y_audit, z_audit, Z_AS_A, k).naive_gap,
    }
