"""Solve times and optimality of the reconstruction-correction solvers (Ferry et al., Sec. III-B/C, Thm. 1).

Instances look like the attack's: a true A (40 % a = 1), a target accepting 30 %
of each group, a calibrated baseline guess whose mistakes among accepted rows
lean towards a = 1, confidences raised to the power 8. Tolerances: 0 (exact
parity) and the constraint a certificate would state (the exact SP unfairness
under the true A: always feasible).

* **Solver table** (default): at n = 15,000, three instances (seeds 0-2), each
  tolerance, every solver on the same instance -- the exact enumeration (efficient
  model, the default for binary A), HiGHS and CP-SAT on the efficient model, HiGHS
  and CP-SAT on the general model (one binary per example). Each row gives the
  status, the solve time, its ratio to the enumeration's time measured in the same
  run, the objective minus the enumeration's (exact) objective, and whether the
  solver stopped at its time limit (``--limit``, default 60 s: the paper's).
* **K = 3** at n = 15,000 (tolerance 0 and certified): HiGHS and CP-SAT on the
  efficient model, CP-SAT on the general model, objectives against CP-SAT's efficient model.
* ``--scaling``: the general model with HiGHS for n = 250, 500, ... until a solve
  takes more than the limit, then two bisection steps (the largest n solved in time).

Run: ``python tests/benchmarks/bench_correction.py [--limit S] [--scaling]``. The
last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from parley.parties.attacks.reconstruction_correction.baseline_adversary import weights
from parley.parties.attacks.solvers.correction import (
    FEASIBLE,
    OPTIMAL,
    TIME_LIMIT,
    FairnessConstraint,
    solve_efficient,
    solve_enumeration,
    solve_general,
)
from parley.protocols.group_gaps import unfairness

LIMIT_S = 60.0
N_EFFICIENT = 15_000
N_GENERAL_MAX = 1_024_000
SEEDS = (0, 1, 2)
SOLVERS = {
    "highs-efficient": lambda *a, limit: solve_efficient(*a, time_limit=limit),
    "cp-sat-efficient": lambda *a, limit: solve_efficient(*a, time_limit=limit, backend="cp-sat"),
    "highs-general": lambda *a, limit: solve_general(*a, time_limit=limit),
    "cp-sat-general": lambda *a, limit: solve_general(*a, time_limit=limit, backend="cp-sat"),
}  # positional arguments: a0, confidence, yhat, constraint[, y, groups]


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


def solver_table(limit: float) -> list[dict]:
    """Every solver on the same instances at n = 15,000, against the enumeration timed in the same run."""
    rows = []
    for seed in SEEDS:
        a0, w, yhat, certified = instance(N_EFFICIENT, seed)
        for label, constraint in (("0", FairnessConstraint("sp", 0.0)), ("certified", certified)):
            enum, enum_s = timed(solve_enumeration, a0, w, yhat, constraint)
            rows.append({"seed": seed, "tolerance": label, "value": constraint.tolerance, "solver": "enumeration",
                         "status": enum.status, "s": enum_s, "ratio": 1.0, "objective_gap": 0.0, "limit_hit": False})
            for name, solve in SOLVERS.items():
                fixed, fixed_s = timed(solve, a0, w, yhat, constraint, limit=limit)
                gap = fixed.objective - enum.objective if fixed.status in (OPTIMAL, FEASIBLE) else None
                rows.append({"seed": seed, "tolerance": label, "value": constraint.tolerance, "solver": name,
                             "status": fixed.status, "s": fixed_s, "ratio": fixed_s / max(enum_s, 1e-9),
                             "objective_gap": gap, "bound": fixed.bound,
                             "limit_hit": fixed.status in (FEASIBLE, TIME_LIMIT)})
            for row in rows[-1 - len(SOLVERS):]:
                gap = "-" if row["objective_gap"] is None else f"{row['objective_gap']:+.2e}"
                print(f"| {seed} | {label} ({constraint.tolerance:.2e}) | {row['solver']} | {row['status']} | "
                      f"{row['s']:.3f} | {row['ratio']:.0f} | {gap} | {'yes' if row['limit_hit'] else 'no'} |",
                      file=sys.stderr, flush=True)
    return rows


def instance_groups(n: int, groups: int = 3, seed: int = 0):
    """A K-group instance: true A uniform, 30 % accepted, a calibrated guess wrong towards a random group."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, groups, n)
    yhat = (rng.random(n) < 0.3).astype(int)
    confidence = 0.4 + 0.6 * rng.random(n)
    a0 = np.where(rng.random(n) > confidence, rng.integers(0, groups, n), a)
    return a0, weights(confidence, 8.0), yhat, FairnessConstraint("sp", unfairness("sp", yhat, a, None, groups))


def groups_table(limit: float, groups: int = 3) -> list[dict]:
    """K = 3 at n = 15,000 (no enumeration: binary A only); the objective is compared with CP-SAT's efficient model."""
    a0, w, yhat, certified = instance_groups(N_EFFICIENT, groups)
    rows = []
    for label, constraint in (("0", FairnessConstraint("sp", 0.0)), ("certified", certified)):
        found = {}
        for name in ("cp-sat-efficient", "highs-efficient", "cp-sat-general"):
            fixed, fixed_s = timed(SOLVERS[name], a0, w, yhat, constraint, None, groups, limit=limit)
            found[name] = fixed
            reference = found["cp-sat-efficient"]
            gap = (fixed.objective - reference.objective
                   if fixed.status in (OPTIMAL, FEASIBLE) and reference.status == OPTIMAL else None)
            rows.append({"groups": groups, "tolerance": label, "value": constraint.tolerance, "solver": name,
                         "status": fixed.status, "s": fixed_s, "objective": fixed.objective, "objective_gap": gap,
                         "limit_hit": fixed.status in (FEASIBLE, TIME_LIMIT)})
            shown = "-" if gap is None else f"{gap:+.2e}"
            print(f"| K={groups} | {label} ({constraint.tolerance:.2e}) | {name} | {fixed.status} | {fixed_s:.3f} | "
                  f"{shown} | {'yes' if rows[-1]['limit_hit'] else 'no'} |", file=sys.stderr, flush=True)
    return rows


def general_scaling(limit: float) -> list[dict]:
    """The general model with HiGHS for growing n until a solve passes the limit, then two bisection steps."""
    general_rows: list[dict] = []

    def measure(n: int) -> dict:
        a0, w, yhat, constraint = instance(n, seed=1)
        general, general_s = timed(solve_general, a0, w, yhat, constraint, time_limit=limit)
        efficient, efficient_s = timed(solve_enumeration, a0, w, yhat, constraint)
        row = {"n": n, "general_s": round(general_s, 4), "general_status": general.status,
               "efficient_s": round(efficient_s, 5), "same_objective": bool(
                   general.status == OPTIMAL and abs(general.objective - efficient.objective) <= 1e-9)}
        print(f"general model, n={n}: {general_s:.3f} s ({general.status}); efficient {efficient_s:.5f} s; "
              f"same objective: {row['same_objective']}", file=sys.stderr, flush=True)
        return row

    n = 250
    while n <= N_GENERAL_MAX:
        general_rows.append(measure(n))
        if general_rows[-1]["general_status"] != OPTIMAL or general_rows[-1]["general_s"] > limit:
            break
        n *= 2
    for _ in range(2):
        ok = [r["n"] for r in general_rows if r["general_status"] == OPTIMAL and r["general_s"] <= limit]
        bad = [r["n"] for r in general_rows if r["n"] not in ok]
        if not ok or not bad:
            break
        general_rows.append(measure((max(ok) + min(b for b in bad if b > max(ok))) // 2))
    return sorted(general_rows, key=lambda r: r["n"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=LIMIT_S, help="time limit of every MILP/CP solve, seconds")
    parser.add_argument("--scaling", action="store_true", help="also search the general model's largest n")
    args = parser.parse_args()
    print("| seed | tolerance | solver | status | time (s) | time / enumeration | objective - enumeration "
          "| stopped at limit |", file=sys.stderr)
    print("|---|---|---|---|---|---|---|---|", file=sys.stderr)
    table = solver_table(args.limit)
    summary: dict = {"n": N_EFFICIENT, "limit_s": args.limit, "table": table}
    for name in ("enumeration", *SOLVERS):
        mine = [r for r in table if r["solver"] == name]
        summary[name] = {"optimal": sum(r["status"] == OPTIMAL for r in mine), "instances": len(mine),
                         "limit_hit": sum(r["limit_hit"] for r in mine),
                         "max_s": round(max(r["s"] for r in mine), 4),
                         "same_objective": sum(r["objective_gap"] is not None and abs(r["objective_gap"]) <= 1e-9
                                               for r in mine)}
    print("| groups | tolerance | solver | status | time (s) | objective - CP-SAT efficient | stopped at limit |",
          file=sys.stderr)
    print("|---|---|---|---|---|---|---|", file=sys.stderr)
    summary["groups3"] = groups_table(args.limit)
    if args.scaling:
        rows = general_scaling(args.limit)
        solved = [r for r in rows if r["general_status"] == OPTIMAL and r["general_s"] <= args.limit]
        summary["general_runs"] = rows
        summary["general_largest_n_within_limit"] = solved[-1]["n"] if solved else None
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
