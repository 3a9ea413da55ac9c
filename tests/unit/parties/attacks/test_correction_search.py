"""Reconstruction correction with the forest tuned by a seeded random search (Ferry et al., Sec. IV-B4)."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.attacks import AttackerView, get_attack
from parley.parties.attacks.correction_search import SearchedCorrection, SearchedCorrectionParams, search_forest
from parley.parties.attacks.reconstruction_correction.attack import BlackBoxKnowledge, ReconstructionCorrection
from parley.protocols.errors import AttackError
from parley.protocols.group_gaps import unfairness


def _knowledge(seed: int = 0, n_train: int = 300, n_attack: int = 240) -> BlackBoxKnowledge:
    rng = np.random.default_rng(seed)

    def part(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        a = (rng.random(n) < 0.6).astype(int)
        X = np.column_stack([rng.normal(size=n) + a, rng.normal(size=n), rng.integers(0, 3, n)])
        y = (X[:, 0] + rng.normal(size=n) > 0.7).astype(int)
        yhat = (X[:, 1] + y > 0.5).astype(int)
        return X, y, a, yhat

    Xt, yt, at, yht = part(n_train)
    Xa, ya, aa, yha = part(n_attack)
    certificate = {"metric": "sp", "value": unfairness("sp", yht, at, yt)}
    return BlackBoxKnowledge(Xt, yt, yht, Xa, ya, aa, yha, certificate)


def _attack(rng_seed: int = 0, **params: object) -> SearchedCorrection:
    cls = get_attack("reconstruction-correction-search")
    return cls(SearchedCorrectionParams(n_estimators=20, search_iter=3, **params), AttackerView(n=300),
               np.random.default_rng(rng_seed))


def test_registered():
    assert get_attack("reconstruction-correction-search") is SearchedCorrection


def test_fixed_forest_is_reconstruction_correction():
    k = _knowledge()
    params = {"n_estimators": 20, "baseline": "xy-yhat"}
    ours = _attack(forest="fixed", baseline="xy-yhat").reconstruct(k)
    theirs = ReconstructionCorrection(ReconstructionCorrection.Params(**params), AttackerView(n=300),
                                      np.random.default_rng(0)).reconstruct(k)
    np.testing.assert_array_equal(ours.baseline, theirs.baseline)
    np.testing.assert_array_equal(ours.corrected, theirs.corrected)
    assert ours.status == theirs.status and "forest" not in ours.info


@pytest.mark.system  # two searches of up to 200-tree forests: about 4.5 s of CPU
def test_search_is_seeded_and_reports_its_choice():
    k = _knowledge(1)
    one, two = _attack(7).reconstruct(k), _attack(7).reconstruct(k)
    np.testing.assert_array_equal(one.corrected, two.corrected)
    assert one.info["forest"] == two.info["forest"]
    assert set(one.info["forest"]) == {"n_estimators", "max_depth", "min_samples_split", "min_samples_leaf",
                                       "max_features", "criterion"}
    assert 0.0 <= one.info["forest_cv_score"] <= 1.0


def test_search_sees_the_rows_it_is_given_only():
    rng = np.random.default_rng(2)
    features, a = rng.normal(size=(60, 4)), np.tile([0, 1], 30)
    forest, chosen, _ = search_forest(features, a, np.random.default_rng(0), n_iter=2, folds=3, scoring="accuracy")
    assert forest.n_features_in_ == 4 and forest.class_weight == "balanced"
    assert forest.get_params()["n_estimators"] == chosen["n_estimators"]


def test_too_few_rows_of_a_group_is_an_attack_error():
    features, a = np.zeros((10, 2)), np.array([0, 1] + [1] * 8)
    with pytest.raises(AttackError, match="search_folds = 3"):
        search_forest(features, a, np.random.default_rng(0), n_iter=2, folds=3, scoring="accuracy")


@pytest.mark.parametrize(("field", "value"), [("search_iter", 0), ("search_folds", 1), ("search_scoring", "f1")])
def test_bad_search_parameters_are_refused(field, value):
    with pytest.raises(ValueError, match=field):
        SearchedCorrectionParams(**{field: value})
