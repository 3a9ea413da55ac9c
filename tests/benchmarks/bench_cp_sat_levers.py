"""CP-SAT on the general correction model: each formulation and parameter lever measured on its own.

Same instances as ``bench_correction.py`` (n = 15,000, seeds 0-2, SP at tolerance 0 and at the
certified value). Every configuration solves all six; each row gives the wall time of
:func:`solve_general` (model building included), the status, whether the objective equals the
exact enumeration's on every instance, and the load average after the row. Configurations are
run interleaved (instance by instance) so that a change of machine load hits them alike.

* ``before``: the model and parameters of the previous release (rows over the examples,
  dominance implications as linear rows, probing off, one presolve round).
* one lever at a time on top of ``before``, then ``tuned`` (the defaults of
  :func:`solve_general` and :data:`CP_SAT_PARAMETERS`) and ``tuned`` with one lever changed
  (2 workers, a hint, linearization level 0 or 2, the plain model's rows).

Run: ``PYTHONPATH=. python tests/benchmarks/bench_cp_sat_levers.py [--limit S] [--only NAME ...]``.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from parley.parties.attacks.solvers.correction import (
    CP_SAT_PARAMETERS,
    OPTIMAL,
    FairnessConstraint,
    solve_enumeration,
    solve_general,
)

# The instances of bench_correction.py, imported from this script's folder.
sys.path.insert(0, str(Path(__file__).resolve().parent))
_bench_correction = importlib.import_module("bench_correction")
SEEDS, instance = _bench_correction.SEEDS, _bench_correction.instance

N = 15_000
BEFORE = {"cp_model_probing_level": 0, "max_presolve_iterations": 1}
#: name -> keyword arguments of solve_general (besides backend, time limit, workers).
CONFIGS: dict[str, dict[str, Any]] = {
    "before": {"cell_counts": False, "parameters": BEFORE},
    "before + cell counts": {"cell_counts": True, "parameters": BEFORE},
    "before + merge_at_most_one_work_limit=0": {
        "cell_counts": False, "parameters": {**BEFORE, "merge_at_most_one_work_limit": 0.0}},
    "before + no SAT presolve": {"cell_counts": False, "parameters": {**BEFORE, "cp_model_use_sat_presolve": False}},
    "before + symmetry_level=0": {"cell_counts": False, "parameters": {**BEFORE, "symmetry_level": 0}},
    "before + find_big_linear_overlap off": {
        "cell_counts": False, "parameters": {**BEFORE, "find_big_linear_overlap": False}},
    "tuned": {},
    "tuned, rows over examples": {"cell_counts": False},
    "tuned, merge_at_most_one default": {
        "parameters": {k: v for k, v in CP_SAT_PARAMETERS.items() if k != "merge_at_most_one_work_limit"}},
    "tuned, SAT presolve on": {
        "parameters": {k: v for k, v in CP_SAT_PARAMETERS.items() if k != "cp_model_use_sat_presolve"}},
    "tuned, big linear overlap on": {
        "parameters": {k: v for k, v in CP_SAT_PARAMETERS.items() if k != "find_big_linear_overlap"}},
    "tuned, SAT inprocessing on": {
        "parameters": {k: v for k, v in CP_SAT_PARAMETERS.items() if k != "use_sat_inprocessing"}},
    "tuned, symmetry default": {"parameters": {k: v for k, v in CP_SAT_PARAMETERS.items() if k != "symmetry_level"}},
    "tuned, 2 workers": {"workers": 2},
    "tuned, hint = enumeration's optimum": {"hint": "enumeration"},
    "tuned, linearization_level=0": {"parameters": {**CP_SAT_PARAMETERS, "linearization_level": 0}},
    "tuned, linearization_level=2": {"parameters": {**CP_SAT_PARAMETERS, "linearization_level": 2}},
    "tuned, default presolve rounds and probing": {
        "parameters": {k: v for k, v in CP_SAT_PARAMETERS.items()
                       if k not in ("cp_model_probing_level", "max_presolve_iterations")}},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=60.0, help="time limit of every solve, seconds")
    parser.add_argument("--only", nargs="*", default=None, help="configuration names to run (default: all)")
    args = parser.parse_args()
    names = args.only or list(CONFIGS)
    rows: dict[str, list[dict]] = {name: [] for name in names}
    for seed in SEEDS:
        a0, w, yhat, certified = instance(N, seed)
        for label, constraint in (("0", FairnessConstraint("sp", 0.0)), ("certified", certified)):
            exact = solve_enumeration(a0, w, yhat, constraint)
            for name in names:
                kwargs = dict(CONFIGS[name])
                if kwargs.get("hint") == "enumeration":
                    kwargs["hint"] = exact.a
                start, cpu = time.perf_counter(), time.process_time()
                fixed = solve_general(a0, w, yhat, constraint, backend="cp-sat", time_limit=args.limit, **kwargs)
                seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
                rows[name].append({"seed": seed, "tolerance": label, "status": fixed.status, "s": round(seconds, 3),
                                   "cpu_s": round(cpu, 3),
                                   "same_objective": bool(fixed.status == OPTIMAL
                                                          and abs(fixed.objective - exact.objective) <= 1e-9),
                                   "load": round(os.getloadavg()[0], 2)})
    print("| configuration | optimal | same objective as enumeration | wall times (s) | median | max | max CPU (s) "
          "| load (1 min) |", file=sys.stderr)
    print("|---|---|---|---|---|---|---|---|", file=sys.stderr)
    summary = {}
    for name, mine in rows.items():
        times = [r["s"] for r in mine]
        loads = [r["load"] for r in mine]
        summary[name] = {"optimal": sum(r["status"] == OPTIMAL for r in mine), "instances": len(mine),
                         "same_objective": sum(r["same_objective"] for r in mine), "times": times,
                         "median_s": statistics.median(times), "max_s": max(times),
                         "max_cpu_s": max(r["cpu_s"] for r in mine),
                         "load": [min(loads), max(loads)]}
        print(f"| {name} | {summary[name]['optimal']}/{len(mine)} | {summary[name]['same_objective']}/{len(mine)} | "
              f"{', '.join(f'{t:.2f}' for t in times)} | {statistics.median(times):.2f} | {max(times):.2f} | "
              f"{summary[name]['max_cpu_s']:.2f} | "
              f"{min(loads):.1f}-{max(loads):.1f} |", file=sys.stderr)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
