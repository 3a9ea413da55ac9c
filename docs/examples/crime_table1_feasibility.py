"""Can any classifier reach a row of Table I (Hu et al., ICDM 2019) on Communities and Crime?

For each row of docs/reproductions/crime-table1.paper.csv and each cut t of the violent crime rate
(y = 1 iff rate <= t), a linear program finds the lowest error of *any* classifier, randomised or not,
whose statistical parity is at most the row's SP and whose error parity is at most the row's error
parity, given only the two groups' sizes and base rates (minority = racepctblack > 0.5). A row whose
printed error is below that bound cannot come from this data with these definitions.

The variables are, per group g, a_g = P(y_hat = 1, y = 0 | g) and b_g = P(y_hat = 0, y = 1 | g):
e_g = a_g + b_g and r_g = pi_g - b_g + a_g (pi_g = P(y = 1 | g)) are linear in them. Group-level
means are a relaxation of the per-trial means the paper averages (|mean| <= mean |.|), so the bound
is conservative.

Usage: python docs/examples/crime_table1_feasibility.py [cuts ...]   (default 0.1 0.2 ... 0.9)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import linprog

from parley.scenarios.datasets import CrimeParams, load_table

PAPER = Path(__file__).resolve().parents[1] / "reproductions" / "crime-table1.paper.csv"


def lowest_error(w: np.ndarray, pi: np.ndarray, sp: float, ep: float) -> float:
    """min sum_g w_g e_g  s.t. |r_1 - r_0| <= sp, |e_1 - e_0| <= ep; x = (a_0, b_0, a_1, b_1)."""
    c = np.array([w[0], w[0], w[1], w[1]])
    r = np.array([-1.0, 1.0, 1.0, -1.0])  # r_1 - r_0 = (pi_1 - pi_0) + (a_1 - b_1) - (a_0 - b_0)
    e = np.array([-1.0, -1.0, 1.0, 1.0])  # e_1 - e_0
    A = np.vstack([r, -r, e, -e])
    b = np.array([sp - (pi[1] - pi[0]), sp + (pi[1] - pi[0]), ep, ep])
    bounds = [(0, 1 - pi[0]), (0, pi[0]), (0, 1 - pi[1]), (0, pi[1])]
    res = linprog(c, A_ub=A, b_ub=b, bounds=bounds, method="highs")
    return float(res.fun) if res.status == 0 else float("nan")


def main(cuts: list[float]) -> None:
    paper = pd.read_csv(PAPER, comment="#")
    rows = []
    for t in cuts:
        table = load_table(CrimeParams(label_threshold=t))
        a, y = table.a.astype(bool), table.y.astype(bool)
        w = np.array([(~a).mean(), a.mean()])
        pi = np.array([y[~a].mean(), y[a].mean()])
        for _, p in paper.iterrows():
            bound = lowest_error(w, pi, float(p["sp"]), float(p["error_parity"]))
            rows.append({"cut": t, "P(y=0 | minority)": 1 - pi[0], "P(y=0 | others)": 1 - pi[1],
                         "constant error": min(y.mean(), 1 - y.mean()),
                         "method": p["method"], "paper error": p["error"], "lowest error possible": bound,
                         "feasible": bool(bound <= p["error"] + 1e-9)})
    frame = pd.DataFrame(rows)
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print()
    summary = frame.groupby("cut").agg(rows_feasible=("feasible", "sum"), rows=("feasible", "count"),
                                       constant_error=("constant error", "first"),
                                       paper_rows_below_constant=("paper error", lambda e: 0))
    below = frame[frame["paper error"] < frame["constant error"]].groupby("cut").size()
    summary["paper_rows_below_constant"] = below.reindex(summary.index, fill_value=0)
    print(summary.to_string(float_format=lambda v: f"{v:.4f}"))


if __name__ == "__main__":
    main([float(v) for v in sys.argv[1:]] or [round(0.1 * i, 1) for i in range(1, 10)])
