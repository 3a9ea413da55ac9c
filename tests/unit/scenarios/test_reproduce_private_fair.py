"""The private-fair-learning tables' renderers: the LP's constant solutions, the paired test, the claims' checks."""

from __future__ import annotations

import math

import pandas as pd

from parley.scenarios.reproductions import private_fair


def _figure1_runs() -> pd.DataFrame:
    """Four runs per ε: at ε = 0.01 a constant two-step predictor, at ε = 10 one above step 1 on average."""
    rows = []
    for eps, two_step, spread in ((0.01, [0.0] * 4, 0.0), (10.0, [0.05, 0.06, 0.07, 0.02], 1.0)):
        for i, disc in enumerate(two_step):
            rows.append({"run": "rr-figure1", "status": "ok", "protocol.epsilon": eps, "step1_disc": 0.04 + 0.01 * i,
                         "two_step_disc": disc, "step1_accuracy": 0.84, "two_step_accuracy": 0.75 if spread == 0 else
                         0.83, "two_step_p_spread": spread, "two_step_positive_rate": 0.0 if spread == 0 else 0.2,
                         "step1_disc_estimate": 1.5, "step1_disc_naive": 0.01, "leakage": 50.0,
                         "leakage_bound": 50.5, "wall_s": 30.0})
    rows.append({"run": "rr-figure1", "status": "failed", "protocol.epsilon": 10.0})
    return pd.DataFrame(rows)


def _paper() -> pd.DataFrame:
    return pd.DataFrame({"source": ["Sec. 5.3", "Sec. 5.3"], "claim": ["the setting", "lower discrimination"],
                         "check": [float("nan"), "disc"]})


def test_figure1_counts_constant_solutions_and_tests_the_pairs():
    lines = private_fair._figure1(_figure1_runs(), _paper())
    table = [line for line in lines if line.startswith("| 0.01 |") or line.startswith("| 10 |")]
    assert table[0] == "| 0.01 | 4 | 0.055 ± 0.021 | 0.000 ± 0.000 | 0.840 ± 0.000 | 0.750 ± 0.000 | 4 of 4 |"
    assert table[1].endswith("| 1 of 4 |")  # the failed run is left out; only 0.02 <= 0.07
    assert table[2].startswith("| 0.01 | −0.0550 | 0.003 | 4 of 4 | – | 0.055 |")
    assert table[3].startswith("| 10 | −0.0050 | 0.76 | 0 of 4 | 0.20 | 0.055 |")
    claim = next(line for line in lines if line.startswith("- lower discrimination"))
    assert "below step 1's at ε = 0.01, 10" in claim
    assert "5 % level at ε = 0.01;" in claim and "constant predictor in most runs at ε = 0.01" in claim
    assert lines[-2] == "- the setting (Sec. 5.3)."


def test_the_per_person_bound_is_that_of_one_release():
    lines = private_fair._figure1(_figure1_runs(), _paper())
    leak = next(line for line in lines if line.startswith("Leakage"))
    assert "50 (50.25), 50 (100)" in leak and "composed): 50.5, 50.5." in leak


def _estimate_runs() -> pd.DataFrame:
    rows = []
    for eps in (0.25, 4.0):
        for n in (1000, 4000):
            scale = 0.1 / math.sqrt(n / 1000)
            for repeat in range(40):
                sign = 1 if repeat % 2 else -1
                rows.append({"status": "ok", "protocol.epsilon": eps, "dataset.audit_size": n, "repeat": repeat,
                             "audit_demographic_parity_signed_true": 0.2,
                             "audit_demographic_parity_error_debiased": sign * scale,
                             "audit_demographic_parity_error_naive": -0.1 + 0.01 * (repeat % 2),
                             "audit_equalized_odds_signed_true": 0.1,
                             "audit_equalized_odds_error_debiased": 0.5 + sign * scale,
                             "audit_equalized_odds_error_naive": 0.01 * sign,
                             "leakage": 60.0, "leakage_bound": 56.2})
    return pd.DataFrame(rows)


def test_estimates_name_the_biased_cells_and_the_rate():
    lines = private_fair._estimates(_estimate_runs(), pd.DataFrame(
        {"source": ["Lemma 1"], "claim": ["a bound"]}))
    row = next(line for line in lines if line.startswith("| 0.25 | 1,000 | DP |"))
    assert row.endswith("| −0.175 |")
    assert "0.105 at ε = 0.25, n = 1,000" in next(line for line in lines if "naive estimate of the DP" in line)
    centred = next(line for line in lines if "within two standard errors" in line)
    assert centred.startswith("- Debiased mean error within two standard errors of 0 in 4 of 8 cells; not in: TPR")
    rate = next(line for line in lines if "RMSE from n" in line)
    assert "DP at ε = 0.25: 0.100 → 0.050 (÷2.0)" in rate and "TPR at ε = 4: 0.510 → 0.502 (÷1.0)" in rate
    assert "TPR at ε = 4, n = 4,000" in next(line for line in lines if "smaller RMSE" in line)
    assert lines[-1] == "- a bound (Lemma 1)."


def test_the_accuracy_claim_says_when_the_two_step_accuracy_falls_as_epsilon_grows():
    def group(eps: float, two_step: float) -> tuple[float, pd.DataFrame]:
        return eps, pd.DataFrame({"step1_accuracy": [0.84, 0.84], "two_step_accuracy": [two_step, two_step]})

    rising = private_fair._claim_cost([group(1.0, 0.80), group(10.0, 0.83)])
    assert rising.endswith("from 0.800 to 0.830, never falling as ε grows")
    falling = private_fair._claim_cost([group(1.0, 0.80), group(10.0, 0.83), group(100.0, 0.8298)])
    assert falling.endswith("falling by at most 0.0002 between neighbouring ε")
