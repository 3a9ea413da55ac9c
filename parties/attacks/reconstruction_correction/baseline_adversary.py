"""Baseline adversaries of the reconstruction-correction paper and the fairness estimate of Sec. V-B.

Ferry et al. (SaTML 2023), Sec. IV-A: the adversary holds an attack set drawn
from the training distribution with features, labels and A, and the target's
predictions on it. It trains a class-balanced random forest to predict A from
(X, y) (adversary A1) or from (X, y, yhat) (A2, which sees everything the
corrector later uses), guesses A on the training set, and takes the forest's
probability of its guess as the confidence. Confidences are normalised (divided
by their maximum) and raised to a power chosen on a validation part of the
attack set, to make the corrector prefer to change the least confident guesses.

Deviation: the paper tunes the forest with HyperOpt-Sklearn (100 evaluations);
this attack uses fixed, sensible forest settings to avoid that dependency. The attack
``reconstruction-correction-search`` (:mod:`parley.parties.attacks.correction_search`)
tunes them with scikit-learn's seeded random search instead.

Sec. V-B (fairness hidden): the adversary measures the target's unfairness on its
attack set for every metric and assumes the smallest, with that value as tolerance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from parley.parties.attacks.solvers.correction import FairnessConstraint, correct
from parley.protocols.errors import AttackError
from parley.protocols.group_gaps import unfairness

__all__ = [
    "BaselineGuess", "ESTIMATED_METRICS", "ExponentChoice", "baseline_features", "choose_exponent",
    "estimate_constraint", "fit_forest", "guess", "weights",
]

#: Metrics the Sec. V-B estimate compares (EOdds is never strictly the smallest: it is the max of PE and EO).
ESTIMATED_METRICS = ("sp", "pe", "eo", "eodds")
NO_EXPONENTS = "exponents must be a non-empty list of non-negative numbers; got {exponents!r}"


@dataclass(frozen=True)
class BaselineGuess:
    """The baseline adversary's guess of A and its confidence in each entry (probability of the guess)."""

    a: np.ndarray
    confidence: np.ndarray


def baseline_features(X: np.ndarray, y: np.ndarray, yhat: np.ndarray | None) -> np.ndarray:
    """The attack model's input: (X, y) for adversary A1, (X, y, yhat) for A2."""
    columns = [np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)[:, None]]
    if yhat is not None:
        columns.append(np.asarray(yhat, dtype=np.float64)[:, None])
    return np.hstack(columns)


def fit_forest(features: np.ndarray, a: np.ndarray, rng: np.random.Generator, n_estimators: int = 100, *,
               max_depth: int | None = None, min_samples_split: int = 2, min_samples_leaf: int = 2) -> Any:
    """A class-balanced random forest predicting A (the paper's attack model, Sec. IV-B4).

    The defaults are parley's fixed settings; the authors' public code uses ``max_depth=6``,
    ``min_samples_split=10`` and scikit-learn's ``min_samples_leaf=1`` (scenario
    ``adult-correction-authors``).
    """
    from sklearn.ensemble import RandomForestClassifier

    forest = RandomForestClassifier(n_estimators=n_estimators, class_weight="balanced", max_depth=max_depth,
                                    min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
                                    n_jobs=1, random_state=int(rng.integers(2**31 - 1)))
    return forest.fit(features, np.asarray(a))


def guess(forest: Any, features: np.ndarray) -> BaselineGuess:
    """Most probable group per row, and its probability as the confidence."""
    proba = forest.predict_proba(features)
    column = np.argmax(proba, axis=1)
    return BaselineGuess(a=forest.classes_[column].astype(np.int64), confidence=proba[np.arange(len(proba)), column])


def weights(confidence: np.ndarray, exponent: float) -> np.ndarray:
    """Normalised confidences raised to ``exponent`` (Sec. IV-A): larger exponents widen their differences."""
    confidence = np.asarray(confidence, dtype=np.float64)
    top = confidence.max() if confidence.size else 1.0
    return (confidence / (top if top > 0 else 1.0)) ** exponent


@dataclass(frozen=True)
class ExponentChoice:
    """What the validation part decided: the exponent to correct with, or to keep the baseline.

    ``exponent`` is None when the correction declines: no exponent's correction was
    *strictly* more accurate than the uncorrected guess on the validation part.
    """

    exponent: float | None
    scores: dict[float, float]
    changed: dict[float, int]
    baseline: float

    @property
    def declined(self) -> bool:
        return self.exponent is None


def choose_exponent(base: BaselineGuess, a_true: np.ndarray, yhat: np.ndarray, y: np.ndarray, metric: str,
                    exponents: Sequence[float], groups: int = 2) -> ExponentChoice:
    """The exponent whose correction is most accurate on a validation part where A is known, or none.

    The validation part plays the training set: its own unfairness (measured with
    its true A) is the constraint. The uncorrected guess is a candidate too, and it
    wins every tie: an exponent is chosen only if its correction is strictly more
    accurate than the baseline on the validation part, so the choice never makes
    the validation accuracy worse. Among exponents tied on accuracy the one whose
    correction changes the fewest validation guesses wins, then the smallest.
    (When the validation guess already meets its constraint, every exponent leaves
    it unchanged and ties with the baseline: earlier rules then corrected the
    training set with exponent 1, with no evidence that it helps.)
    """
    if not exponents or any(not e >= 0 for e in exponents):  # 0: every weight 1, the unweighted correction
        raise AttackError(NO_EXPONENTS.format(exponents=list(exponents)))
    a_true = np.asarray(a_true)
    constraint = FairnessConstraint(metric, unfairness(metric, yhat, a_true, y, groups))
    baseline = float((base.a == a_true).mean())
    scores: dict[float, float] = {}
    changed: dict[float, int] = {}
    for exponent in sorted(exponents):
        fixed = correct(base.a, weights(base.confidence, exponent), yhat, constraint, y, groups)
        scores[float(exponent)] = float((fixed.a == a_true).mean())
        changed[float(exponent)] = int(fixed.changed)
    best = max(scores, key=lambda e: (scores[e], -changed[e], -e))
    return ExponentChoice(best if scores[best] > baseline else None, scores, changed, baseline)


def estimate_constraint(yhat: np.ndarray, a: np.ndarray, y: np.ndarray, groups: int = 2) -> FairnessConstraint:
    """Sec. V-B: the metric with the smallest unfairness on the attack set, at that value."""
    measured = {metric: unfairness(metric, yhat, a, y, groups) for metric in ESTIMATED_METRICS}
    metric = min(ESTIMATED_METRICS, key=lambda m: measured[m])
    return FairnessConstraint(metric, measured[metric])
