"""An attack that probes around the base model says so when its view holds none."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.attacks import AttackerView, get_attack
from parley.parties.attacks.base import NOT_IN_VIEW
from parley.protocols.errors import AttackError


@pytest.mark.parametrize(("name", "params", "field"), [
    ("double-query", {"targets": 3}, "base_predictions"),
    ("linear", {"design": "flip-one"}, "base_predictions"),
    ("linear", {"design": "uniform"}, "base_scores"),
    ("compressed-sensing", {"design": "uniform"}, "base_predictions"),  # group sizes first (Remark 4)
    ("compressed-sensing", {"design": "uniform", "n0_prior": 0.5}, "base_scores"),
    ("compressed-sensing", {"design": "paired"}, "base_scores"),
    ("precision", {}, "base_scores"),
])
def test_a_view_without_the_base_model_is_a_typed_error_naming_the_field(name, params, field):
    cls = get_attack(name)
    attack = cls(cls.Params(**params), AttackerView(n=40), np.random.default_rng(0))
    with pytest.raises(AttackError, match=NOT_IN_VIEW.format(field=field)):
        next(attack.run())


def test_require_returns_what_the_view_holds():
    scores = np.linspace(0.0, 1.0, 5)
    view = AttackerView(n=5, base_scores=scores)
    assert view.require("base_scores") is scores
    with pytest.raises(AttackError, match=NOT_IN_VIEW.format(field="y")):
        view.require("y")
