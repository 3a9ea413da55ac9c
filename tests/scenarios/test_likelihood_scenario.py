"""``adult-likelihood`` end to end: the likelihood attack over Ray reads the noise notes of a signed answer."""

from __future__ import annotations

import json
import math

import pytest

from parley.scenarios.cli import main

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_adult_likelihood_spends_one_epsilon_and_stays_within_its_bound(ray_session, tmp_path):
    assert main(["run", "adult-likelihood", "--set", "protocol.epsilon=0.5", "--out", str(tmp_path)]) == 0
    m = json.loads((tmp_path / "result.json").read_text())["metrics"]
    # one query of n = 100 models, decoded by the exact maximum likelihood (MILP) under discrete Laplace noise
    assert m["epsilon_spent"] == pytest.approx(0.5) and m["queries"] == 100 and m["messages"] == 2
    assert m["attack_decoder"] == "milp" and m["attack_noise"] == "laplace" and m["attack_optimal"] is True
    assert m["leakage_bound"] == pytest.approx(100 * math.exp(0.5) / (1 + math.exp(0.5)))
    # one run of balanced accuracy over 5 and 95 people (seed 0): 3 standard errors above the bound flag a bug
    assert m["leakage"] <= m["leakage_bound"] + 3 * 100 * math.sqrt(0.25 * (1 / 5 + 1 / 95) / 4)
