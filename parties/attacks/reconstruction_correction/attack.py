"""The reconstruction-correction attack (Ferry et al., SaTML 2023): baseline guess, then fairness correction.

A black-box attacker with auxiliary data (Sec. III-A, IV-A) knows the training
set's features and labels, the target model's predictions on it, an attack set
(features, labels, A, and the target's predictions) from the same distribution,
and the fairness information, read from a signed certificate or estimated from
the attack set (Sec. V-B). It

1. trains the baseline adversary on the attack set (:mod:`.baseline_adversary`),
   on a fitting part, and picks the confidence exponent on the rest, or declines
   to correct when no exponent beats the uncorrected guess there;
2. guesses A on the training set with confidences;
3. corrects the guess with the efficient model (:mod:`.correction`), unless it declined.

The math lives in those two modules; this class only sequences it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import Field

from parley.parties.attacks.base import Attack, AttackParams, register_attack
from parley.parties.attacks.reconstruction_correction.baseline_adversary import (
    baseline_features,
    choose_exponent,
    estimate_constraint,
    fit_forest,
    guess,
    weights,
)
from parley.parties.attacks.solvers.correction import FairnessConstraint, Solver, correct
from parley.protocols.errors import AttackError

__all__ = ["BlackBoxKnowledge", "CorrectionOutcome", "DECLINED_STATUS", "ReconstructionCorrection", "NO_CERTIFICATE"]

BLACK_BOX = "black-box-auxiliary"
NO_CERTIFICATE = ("fairness = 'certificate' but the attacker holds no certificate "
                  "(the compliance party refused or sent none)")
NO_CERTIFICATE_STATUS = "no-certificate"
#: Status when no exponent's correction beat the baseline on the validation part: the baseline stands.
DECLINED_STATUS = "declined"
BAD_CERTIFICATE = "the certificate names neither a value nor a tolerance: {keys}"


@dataclass(frozen=True)
class BlackBoxKnowledge:
    """What the black-box attacker holds (Sec. IV-A): training X, y and predictions; an attack set with A."""

    X_train: np.ndarray
    y_train: np.ndarray
    yhat_train: np.ndarray
    X_attack: np.ndarray
    y_attack: np.ndarray
    a_attack: np.ndarray
    yhat_attack: np.ndarray
    certificate: Mapping[str, Any] | None = None


@dataclass
class CorrectionOutcome:
    """The baseline guess of A on the training set, its correction and how they were made."""

    baseline: np.ndarray
    corrected: np.ndarray
    constraint: FairnessConstraint | None
    status: str
    changed: int
    solve_s: float
    exponent: float
    info: dict[str, Any]


def certificate_constraint(certificate: Mapping[str, Any] | None) -> FairnessConstraint:
    """The constraint a signed certificate states: its metric within its value or tolerance."""
    if certificate is None:
        raise AttackError(NO_CERTIFICATE)
    bound = certificate.get("value", certificate.get("tolerance"))
    if bound is None:
        raise AttackError(BAD_CERTIFICATE.format(keys=", ".join(sorted(certificate))))
    return FairnessConstraint(str(certificate["metric"]), float(bound))


class ReconstructionCorrectionParams(AttackParams):
    baseline: Literal["xy", "xy-yhat"] = Field(
        default="xy-yhat", description="attack model inputs: (X, y) (adversary A1) or (X, y, yhat) (A2)")
    fairness: Literal["certificate", "estimated"] = Field(
        default="certificate", description="constraint from the signed certificate, or estimated (Sec. V-B)")
    exponents: tuple[float, ...] = Field(default=(1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0), min_length=1,
                                         description="confidence exponents tried on the validation part")
    validation: float = Field(default=0.3, gt=0.0, lt=1.0,
                              description="share of the attack set kept to pick the exponent")
    n_estimators: int = Field(default=100, ge=1, le=2000, description="trees of the attack forest")
    max_depth: int | None = Field(default=None, ge=1, le=64, description="depth limit of the forest's trees "
                                                                          "(None: grown until pure)")
    min_samples_split: int = Field(default=2, ge=2, le=10_000, description="rows a node needs to be split")
    min_samples_leaf: int = Field(default=2, ge=1, le=10_000, description="rows each leaf must keep")
    solver: Solver = Field(default="auto", description="correction solver (auto: exact enumeration for binary A, "
                                                       "CP-SAT's efficient model otherwise)")


@register_attack
class ReconstructionCorrection(Attack[ReconstructionCorrectionParams]):
    """Baseline random-forest guess of A on the training set, corrected to the certified fairness."""

    name = "reconstruction-correction"
    Params = ReconstructionCorrectionParams
    threat_models = (BLACK_BOX,)
    flows = ("fairness-certificate",)
    summary = "baseline guess of the training set's A corrected to the published fairness (Ferry et al.)"

    def _forest(self, features: np.ndarray, a: np.ndarray) -> tuple[Any, dict[str, Any]]:
        """The baseline forest fitted on the attack set's fitting part, and what to report of its choice (none)."""
        p = self.params
        return fit_forest(features, a, self.rng, p.n_estimators, max_depth=p.max_depth,
                          min_samples_split=p.min_samples_split, min_samples_leaf=p.min_samples_leaf), {}

    def reconstruct(self, knowledge: BlackBoxKnowledge) -> CorrectionOutcome:
        """Run the attack pipeline of Fig. 1 on what the attacker holds."""
        p, k = self.params, knowledge
        with_yhat = p.baseline == "xy-yhat"
        if p.fairness == "certificate" and k.certificate is None:
            constraint = None  # refused certificate: nothing to correct with, the baseline stands
        elif p.fairness == "certificate":
            constraint = certificate_constraint(k.certificate)
        else:
            constraint = estimate_constraint(k.yhat_attack, k.a_attack, k.y_attack)
        # Fit on one part of the attack set, pick the confidence exponent on the other (Sec. IV-A).
        order = self.rng.permutation(k.y_attack.size)
        cut = int(round(k.y_attack.size * (1.0 - p.validation)))
        fit_rows, val_rows = order[:cut], order[cut:]
        features = baseline_features(k.X_attack, k.y_attack, k.yhat_attack if with_yhat else None)
        forest, chosen = self._forest(features[fit_rows], k.a_attack[fit_rows])
        validation_guess = guess(forest, features[val_rows])
        train_guess = guess(forest, baseline_features(k.X_train, k.y_train, k.yhat_train if with_yhat else None))
        if constraint is None:
            return CorrectionOutcome(train_guess.a, train_guess.a.copy(), None, NO_CERTIFICATE_STATUS, 0, 0.0,
                                     float("nan"), {**chosen, "validation_baseline_accuracy": float(
                                         (validation_guess.a == k.a_attack[val_rows]).mean())})
        choice = choose_exponent(validation_guess, k.a_attack[val_rows], k.yhat_attack[val_rows],
                                 k.y_attack[val_rows], constraint.metric, p.exponents)
        info: dict[str, Any] = {
            **chosen,
            "validation_accuracy": {str(e): s for e, s in choice.scores.items()},
            "validation_changed": {str(e): c for e, c in choice.changed.items()},
            "validation_baseline_accuracy": choice.baseline,
            "declined": choice.declined,
        }
        if choice.exponent is None:  # no exponent beat the baseline on the validation part: keep it
            return CorrectionOutcome(train_guess.a, train_guess.a.copy(), constraint, DECLINED_STATUS, 0, 0.0,
                                     float("nan"), {**info, "moves": {}})
        fixed = correct(train_guess.a, weights(train_guess.confidence, choice.exponent), k.yhat_train, constraint,
                        k.y_train, solver=p.solver)
        return CorrectionOutcome(
            baseline=train_guess.a, corrected=fixed.a, constraint=constraint, status=fixed.status,
            changed=fixed.changed, solve_s=fixed.solve_s, exponent=choice.exponent, info={**info, "moves": fixed.moves})
