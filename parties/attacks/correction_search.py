"""Reconstruction correction with the adversary's forest tuned by a hyper-parameter search (Ferry et al., IV-B4).

Ferry, Aïvodji, Gambs, Huguet and Siala (SaTML 2023), Sec. IV-B4: "The Random Forest
hyperparameters are optimized using the HyperOpt-Sklearn framework, with a maximum of 100
evaluations for its Tree of Parzen Estimators search algorithm." parley's
``reconstruction-correction`` uses fixed forest settings instead. This attack is the same
pipeline (:mod:`parley.parties.attacks.reconstruction_correction`: fit on one part of the
attack set, choose the confidence exponent on the rest, correct the training set's guess)
with ``forest = "search"``: the class-balanced forest's hyper-parameters are chosen by
scikit-learn's ``RandomizedSearchCV`` (random search, Bergstra and Bengio 2012) with
``search_iter`` candidates, each scored by ``search_folds``-fold stratified cross-validation,
then refitted on the whole fitting part.

- **The adversary's own data only.** The search sees the fitting part of the attack set
  (X, y, and yhat for A2, with A as the target): never the validation part that chooses the
  exponent, and never the training set under attack.
- **Seeded.** The candidates, the folds and every forest draw their seeds from the attack's
  generator, so a run's seed fixes the search.
- **Deviation from the paper.** Random search, not HyperOpt's Tree of Parzen Estimators
  (hyperopt-sklearn is not a dependency; scikit-learn's search is), over the space below,
  with fewer evaluations by default (``search_iter = 20``; the paper: at most 100).

``forest = "fixed"`` is exactly ``reconstruction-correction`` with the same parameters.
"""

from __future__ import annotations

from typing import Any, Literal, cast

import numpy as np
from pydantic import Field

from parley.parties.attacks.base import Attack, register_attack
from parley.parties.attacks.reconstruction_correction.attack import (
    ReconstructionCorrection,
    ReconstructionCorrectionParams,
)
from parley.protocols.errors import AttackError

__all__ = ["SEARCH_SPACE", "SearchedCorrection", "SearchedCorrectionParams", "search_forest", "TOO_FEW_ROWS"]

#: The forest's hyper-parameters the search draws from (uniformly, each independently).
SEARCH_SPACE: dict[str, list[Any]] = {
    "n_estimators": [25, 50, 100, 200],
    "max_depth": [None, 4, 6, 8, 12, 16, 24],
    "min_samples_split": [2, 5, 10, 20],
    "min_samples_leaf": [1, 2, 4, 8, 16],
    "max_features": ["sqrt", "log2", 0.5, None],
    "criterion": ["gini", "entropy"],
}
TOO_FEW_ROWS = ("the forest search needs at least search_folds = {folds} rows of each group in the fitting part "
                "of the attack set; the smaller group has {rows}")


class SearchedCorrectionParams(ReconstructionCorrectionParams):
    """``reconstruction-correction``'s parameters and the search's (``forest``, ``search_*``)."""

    forest: Literal["search", "fixed"] = Field(
        default="search", description="search: the forest's hyper-parameters chosen by a seeded random search "
        "on the fitting part of the attack set; fixed: n_estimators, max_depth, min_samples_split and "
        "min_samples_leaf as given (reconstruction-correction)")
    search_iter: int = Field(default=20, ge=1, le=500, description="candidates the random search scores "
                                                                   "(the paper: at most 100 TPE evaluations)")
    search_folds: int = Field(default=3, ge=2, le=10, description="folds of the stratified cross-validation "
                                                                  "scoring each candidate")
    search_scoring: Literal["accuracy", "balanced_accuracy", "neg_log_loss"] = Field(
        default="accuracy", description="what the cross-validation maximises (scikit-learn scorer name)")


def search_forest(features: np.ndarray, a: np.ndarray, rng: np.random.Generator, *, n_iter: int, folds: int,
                  scoring: str) -> tuple[Any, dict[str, Any], float]:
    """The class-balanced forest whose hyper-parameters won a seeded random search; its parameters and score.

    Raises
    ------
    AttackError
        A group has fewer rows than folds (stratified cross-validation cannot split it).
    """
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import RandomizedSearchCV, StratifiedKFold

    a = np.asarray(a)
    smallest = int(np.unique(a, return_counts=True)[1].min()) if a.size else 0
    if smallest < folds:
        raise AttackError(TOO_FEW_ROWS.format(folds=folds, rows=smallest))
    forest = RandomForestClassifier(class_weight="balanced", n_jobs=1, random_state=int(rng.integers(2**31 - 1)))
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=int(rng.integers(2**31 - 1)))
    search = RandomizedSearchCV(forest, SEARCH_SPACE, n_iter=n_iter, scoring=scoring, cv=splitter, refit=True,
                                n_jobs=1, random_state=int(rng.integers(2**31 - 1)))
    search.fit(features, a)
    chosen = {key: search.best_params_[key] for key in sorted(search.best_params_)}
    return search.best_estimator_, chosen, float(search.best_score_)


@register_attack
class SearchedCorrection(ReconstructionCorrection, Attack[SearchedCorrectionParams]):
    """Reconstruction correction whose baseline forest is tuned by a seeded random search on the attack set."""

    name = "reconstruction-correction-search"
    Params = SearchedCorrectionParams
    summary = ("reconstruction correction (Ferry et al.) with the adversary's forest tuned by a random "
               "hyper-parameter search on its attack set (Sec. IV-B4)")

    def _forest(self, features: np.ndarray, a: np.ndarray) -> tuple[Any, dict[str, Any]]:
        p = cast(SearchedCorrectionParams, self.params)
        if p.forest == "fixed":
            return super()._forest(features, a)
        forest, chosen, score = search_forest(features, a, self.rng, n_iter=p.search_iter, folds=p.search_folds,
                                              scoring=p.search_scoring)
        return forest, {"forest": chosen, "forest_cv_score": score}
