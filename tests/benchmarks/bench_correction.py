"""Solve times of the reconstruction-correction models (Ferry et al., Sec. III-B/C, Thm. 1).

Instances look like the attack's: a true A (40 % a = 1), a target accepting 30 %
of each group, a calibrated baseline guess whose mistakes among accepted rows
lean towards a = 1, confidences raised to the power 8, and the constraint a
certificate would state (the exact SP unfairness under the true A: always
feasible).

* the efficient model at n = 15,000 (target <= 1 s): parley's exact enumeration
  (the default solver) and the same model as a MILP for HiGHS;
* the general model (one binary per example) for n = 250, 500, ... until a solve
  takes more than 60 s or hits HiGHS's 60 s limit, then two bisection steps; the
  largest n solved in time is reported, with the efficient model's time on that instance and the ratio.
  Both objectives are compared (Thm. 1).

Run: ``python tests/benchmarks/bench_correction.py``. The last line is one JSON object.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from parley.parties.attacks.reconstruction_correction.baseline_adversary import weights
from parley.parties.attacks.solvers.correction import (
    OPTIMAL,
    FairnessConstraint,
    solve_efficient,
    solve_enumeration,
    solve_general,
)
from parley.protocols.group_gaps import unfairness

LIMIT_S = 60.0
N_EFFICIENT = 15_000
N_GENERAL_MAX = 1_024_000


def instance(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = (rng.random(n) < 0.4).astype(int)
    yhat = (rng.random(n) < 0.3).astype(int)
    confidence = 0.5 + 0.5 * rng.random(n)
    lean = (yhat == 1) & (a == 0) & (rng.random(n) < 0.15)
    a0 = np.where((rng.random(n) > confidence) | lean, 1 - a, a)
    confidence = np.where(lean, 0.5 + 0.25 * rng.random(n), confidence)
    return a0, weights(confidence, 8.0), yhat, FairnessConstraint("sp", unfairness("sp", yhat, a))


def timed(solve, *args, **kwargs):
    start = time.perf_counter()
    result = solve(*args, **kwargs)
    return result, time.perf_counter() - start


def main() -> None:
    a0, w, yhat, constraint = instance(N_EFFICIENT)
    enum, enum_s = timed(solve_enumeration, a0, w, yhat, constraint)
    highs, highs_s = timed(solve_efficient, a0, w, yhat, constraint, time_limit=LIMIT_S)
    print(f"efficient model, n={N_EFFICIENT}: enumeration {enum_s:.4f} s "
          f"({enum.status}, objective {enum.objective:.6g});"
          f" HiGHS MILP {highs_s:.3f} s ({highs.status}, objective {highs.objective:.6g})", file=sys.stderr)
    general_rows = []
    n = 250
    while n <= N_GENERAL_MAX:
        a0, w, yhat, constraint = instance(n, seed=1)
        general, general_s = timed(solve_general, a0, w, yhat, constraint, time_limit=LIMIT_S)
        efficient, efficient_s = timed(solve_enumeration, a0, w, yhat, constraint)
        row = {"n": n, "general_s": round(general_s, 4), "general_status": general.status,
               "efficient_s": round(efficient_s, 5), "same_objective": bool(
                   general.status == OPTIMAL and abs(general.objective - efficient.objective) <= 1e-9)}
        print(f"general model, n={n}: {general_s:.3f} s ({general.status}); efficient {efficient_s:.5f} s; "
              f"same objective: {row['same_objective']}", file=sys.stderr)
        general_rows.append(row)
        if general.status != OPTIMAL or general_s > LIMIT_S:
            break
        n *= 2
    # Between the last n solved in time and the first that was not: two bisection steps.
    for _ in range(2):
        ok = [r["n"] for r in general_rows if r["general_status"] == OPTIMAL and r["general_s"] <= LIMIT_S]
        bad = [r["n"] for r in general_rows if r["n"] not in ok]
        if not ok or not bad:
            break
        n = (max(ok) + min(b for b in bad if b > max(ok))) // 2
        a0, w, yhat, constraint = instance(n, seed=1)
        general, general_s = timed(solve_general, a0, w, yhat, constraint, time_limit=LIMIT_S)
        efficient, efficient_s = timed(solve_enumeration, a0, w, yhat, constraint)
        general_rows.append({"n": n, "general_s": round(general_s, 4), "general_status": general.status,
                             "efficient_s": round(efficient_s, 5), "same_objective": bool(
                                 general.status == OPTIMAL and abs(general.objective - efficient.objective) <= 1e-9)})
        print(f"general model, n={n}: {general_s:.3f} s ({general.status})", file=sys.stderr)
    general_rows.sort(key=lambda r: r["n"])
    solved = [r for r in general_rows if r["general_status"] == OPTIMAL and r["general_s"] <= LIMIT_S]
    largest = solved[-1] if solved else None
    print(json.dumps({
        "efficient_n": N_EFFICIENT,
        "efficient_enumeration_s": round(enum_s, 5),
        "efficient_highs_s": round(highs_s, 4),
        "efficient_highs_status": highs.status,
        "efficient_target_met": bool(enum_s <= 1.0 and enum.status == OPTIMAL),
        "enumeration_equals_highs": bool(highs.status == OPTIMAL and abs(enum.objective - highs.objective) <= 1e-9),
        "general_largest_n_within_60s": None if largest is None else largest["n"],
        "general_s_at_largest_n": None if largest is None else largest["general_s"],
        "ratio_general_over_efficient_at_largest_n": None if largest is None else round(
            largest["general_s"] / max(largest["efficient_s"], 1e-9), 1),
        "general_runs": general_rows,
    }))


if __name__ == "__main__":
    main()
