"""How the precision attack's end-to-end time grows with n: the exponent of wall time against n.

The ``adult-reveal-precision`` scenario on synthetic data (N0 = n / 10, 2,000 training rows) at
each n of ``--sizes``, in process (``backend = "local"``) and through the Ray actors; each run
exact. The queries grow as n / K (K individuals read per answer), so an answer computed in O(n)
makes the whole run O(n^2 / K); the exponent printed is the least-squares slope of log wall time
against log n over the sizes, per backend.

Run: ``PYTHONPATH=. python tests/benchmarks/bench_precision_scaling.py [--sizes 10000 30000 100000]
[--backends local ray]``. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

import numpy as np

from parley.scenarios.catalog import scenario_path
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario


def one(n: int, backend: str) -> dict:
    scenario = Scenario.from_toml(scenario_path("adult-reveal-precision")).with_values({
        "name": f"reveal-precision-{n}", "dataset.name": "synthetic", "dataset.audit_size": n,
        "dataset.minority": n // 10, "dataset.train_size": 2000, "backend": backend})
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        metrics = run(scenario, out=out).metrics
    wall = time.perf_counter() - start
    row = {"n": n, "backend": backend, "wall_s": round(wall, 2), "queries": metrics["queries"],
           "exact_recovery": metrics["exact_recovery"]}
    print(f"{backend:>5} n={n:>7,}: {wall:7.1f} s, {metrics['queries']} queries, exact={metrics['exact_recovery']}",
          file=sys.stderr, flush=True)
    return row


def slope(rows: list[dict]) -> float:
    x = np.log([r["n"] for r in rows])
    y = np.log([r["wall_s"] for r in rows])
    return float(np.polyfit(x, y, 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--backends", nargs="+", choices=("local", "ray"), default=["local", "ray"])
    args = parser.parse_args()
    one(2_000, args.backends[-1])  # warm-up: imports, the Ray instance, the data generator
    result: dict = {"benchmark": "precision-scaling"}
    for backend in args.backends:
        rows = [one(n, backend) for n in args.sizes]
        exponent = slope(rows)
        print(f"{backend:>5}: wall time grows as n^{exponent:.2f} over n = {args.sizes}", file=sys.stderr)
        result[backend] = {"rows": rows, "exponent": round(exponent, 2)}
    result["sizes"] = args.sizes
    result["all_exact"] = all(r["exact_recovery"] for b in args.backends for r in result[b]["rows"])
    print(json.dumps(result))


if __name__ == "__main__":
    main()
