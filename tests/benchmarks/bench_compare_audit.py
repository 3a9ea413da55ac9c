"""The privacy audit of ``parley compare``: today's two-level audit against the earlier all-runs audit.

For each audit row of the plan (``--quick`` by default, ``--full`` for the full grid) both audits run in this
process, one row after the other (no Ray: CPU time of one core, no contention between rows):

- ``runs``: every draw a whole-scenario run, ``4 * audit_runs + 1`` runs per row (the audit before, with the
  reports off as today);
- ``two-level``: 10^5 mechanism-level draws per neighbour and half, ``WIRING_RUNS`` whole-scenario runs per
  neighbour tested against them (:mod:`parley.scenarios.compare.audit`).

Printed: per row the wall time of each, their ratio and the two bounds side by side (with the wiring
test's p-value), then the totals and the load average before and after (``os.getloadavg``). The last line
is one JSON object. Usage::

    python -m tests.benchmarks.bench_compare_audit [--full] [--rows LABEL ...] [--modes runs two-level]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from parley.scenarios.compare.audit import audit_scenario
from parley.scenarios.compare.plan import plan
from parley.scenarios.compare.run import AUDIT_ALPHA, WIRING_RUNS
from tests.fixed_secrets import run_secrets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the full grid's audit rows (default: --quick's)")
    parser.add_argument("--rows", nargs="*", help="only these row labels")
    parser.add_argument("--modes", nargs="*", default=["runs", "two-level"])
    args = parser.parse_args()
    p = plan("adult", quick=not args.full)
    rows = [r for r in p.rows if r.label in p.audit_rows and (not args.rows or r.label in args.rows)]
    wiring = WIRING_RUNS[0 if args.full else 1]
    load_before = os.getloadavg()
    out: list[dict[str, object]] = []
    print(f"{'row':28s} {'mode':9s} {'wall_s':>7s} {'eps_lower':>9s} {'claim':>6s} {'wiring_p':>9s}", flush=True)
    for row in rows:
        entry: dict[str, object] = {"row": row.label}
        for mode in args.modes:
            started = time.perf_counter()
            audit = audit_scenario(row.protocol, p.audit_dataset, runs=p.audit_runs, alpha=AUDIT_ALPHA, seed=0,
                                   learner=row.learner, secrets=run_secrets(0), mode=mode, wiring_runs=wiring)
            wall = time.perf_counter() - started
            entry[mode] = {"wall_s": round(wall, 2), "epsilon_lower": round(audit.epsilon_lower, 4),
                           "claimed_epsilon": audit.claimed_epsilon, "runs": audit.runs,
                           "mechanism_draws": audit.mechanism_draws, "wiring_runs": audit.wiring_runs,
                           "wiring_p": audit.wiring_p}
            claim = "-" if audit.claimed_epsilon is None else f"{audit.claimed_epsilon:g}"
            wp = "" if audit.wiring_p is None else f"{audit.wiring_p:.3g}"
            print(f"{row.label:28s} {mode:9s} {wall:7.1f} {audit.epsilon_lower:9.3f} {claim:>6s} {wp:>9s}", flush=True)
        if "runs" in entry and "two-level" in entry:
            old, new = entry["runs"], entry["two-level"]
            assert isinstance(old, dict) and isinstance(new, dict)
            entry["ratio"] = round(old["wall_s"] / max(new["wall_s"], 1e-9), 1)
        out.append(entry)
    totals = {mode: round(sum(e[mode]["wall_s"] for e in out if isinstance(e.get(mode), dict)), 1)  # type: ignore[index]
              for mode in args.modes}
    print("totals (one core, rows one after the other):", totals,
          f"load average before {load_before}, after {os.getloadavg()}", flush=True)
    print(json.dumps({"benchmark": "compare-audit", "quick": not args.full, "rows": out, "totals_s": totals,
                      "load_before": load_before, "load_after": os.getloadavg()}))


if __name__ == "__main__":
    main()
