"""Bias and spread of the reporters' and the t-corrected estimates on ``adult-rr-individual-reporting``'s test set.

Usage::

    python tests/benchmarks/rr_individual_reporting_spread.py [REPEATS]

Loads the scenario's split (its seed), fits the unconstrained logistic regression of the run on the
training set, and draws REPEATS (default 300) releases of the test set's sex with the scenario's
reporting function t(y, a), at eps = 1 and eps = 50. For each it computes the signed demographic-
parity gap (group 1 minus group 0) from the reporters alone (Prop. 2's estimate) and corrected by
1 / t (:func:`parley.protocols.estimators.reporting.reporting_rates`), and prints their mean and
standard deviation beside the true gap. The release coins here come from a seeded generator
(seed 7): this is a measurement of the estimators, not a run of the protocol.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from parley.protocols.estimators.reporting import report, reporting_rates
from parley.protocols.estimators.rr_estimators import group_rates, privatize
from parley.scenarios.datasets import load_split
from parley.scenarios.run_parts import spawn_streams
from parley.scenarios.spec import Scenario

CATALOG = Path(__file__).resolve().parents[2] / "scenarios" / "catalog"


def main(repeats: int = 300) -> None:
    scenario = Scenario.from_toml(CATALOG / "adult-rr-individual-reporting.toml")
    split = load_split(scenario.dataset, spawn_streams(scenario.seed)["data"])
    t = scenario.protocol.params.reporting
    model = LogisticRegression(max_iter=1000).fit(split.X_train, split.y_train)
    yhat = model.predict(split.X_audit).astype(np.float64)
    truth = group_rates("demographic_parity", yhat, split.y_audit, split.a_audit, 700.0, 2).naive
    print(f"true signed demographic-parity gap of the unconstrained model: {truth[0, 1] - truth[0, 0]:+.4f}")
    print("| eps | corrected: mean | corrected: sd | reporters only: mean | reporters only: sd |")
    print("|---|---|---|---|---|")
    for eps in (1.0, 50.0):
        rng = np.random.default_rng(7)
        corrected, plain = [], []
        for _ in range(repeats):
            z = privatize(split.a_audit, eps, 2, rng).astype(np.int64)
            z[~report(t, None, split.y_audit, split.a_audit, rng)] = -1
            rates = reporting_rates("demographic_parity", yhat, None, split.y_audit, z, eps, 2, t)
            corrected.append(rates.corrected[0, 1] - rates.corrected[0, 0])
            plain.append(rates.reporters_only[0, 1] - rates.reporters_only[0, 0])
        c, p = np.asarray(corrected), np.asarray(plain)
        print(f"| {eps:g} | {c.mean():+.4f} | {c.std():.4f} | {p.mean():+.4f} | {p.std():.4f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
