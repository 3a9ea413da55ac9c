"""Load: 8 concurrent queriers x 1,000 queries against one compliance party (a Ray actor), with budgets.

Querier i may spend (i + 1) * 100 answers at epsilon 1/4; every tenth query
is retried under the same id. Checks the outcome (answers and refusals as the
budgets say, retries answered from the ledger, ledger total = sum of its
debits) and prints the throughput in messages per second.

Run: ``PYTHONPATH=. python tests/benchmarks/bench_load.py [queriers] [queries]``. The last line is one JSON object.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from tests.reliability.load import check, run_load


def main() -> None:
    queriers = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    queries = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    with tempfile.TemporaryDirectory() as tmp:
        result = run_load(Path(tmp) / "ledger.sqlite", queriers=queriers, queries=queries, quota=queries // 10,
                          retry_every=10, backend="ray")
    check(result)
    answered = sum(r["counts"].get("metric-answer", 0) for r in result["queriers"].values())
    refused = sum(r["counts"].get("budget-exceeded", 0) for r in result["queriers"].values())
    out = {"queriers": queriers, "queries_each": queries, "messages": result["messages"], "answered": answered,
           "budget_refused": refused, "retries_replayed": result["stats"]["answers_replayed"],
           "debits": len(result["debits"]), "ledger_epsilon": sum(result["totals"].values()),
           "wall_s": round(result["wall_s"], 2), "throughput_msgs_per_s": round(result["throughput"], 1)}
    print(f"{queriers} queriers x {queries} queries: {answered} answered, {refused} refused for budget, "
          f"{out['retries_replayed']} retries answered from the ledger; {out['throughput_msgs_per_s']} messages/s")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
