"""How the precision attack's end-to-end time grows with n: the exponent of wall time against n.

The ``adult-reveal-precision`` scenario on synthetic data (N0 = n / 10, 2,000 training rows) at
each n of ``--sizes``, in process (``backend = "local"``) and through the Ray actors; each run
exact. The queries grow as n / K (K individuals read per answer), so an answer computed in O(n)
makes the whole run O(n^2 / K); the exponent printed is the least-squares slope of log wall time
against log n over the sizes, per backend (fixed costs flatten it at small n: the slope between the
two largest sizes is printed too).

Each run is a child process (its own Ray instance, started before the clock starts); the peak
proportional set size of that child's process tree (the run and every Ray process it started,
sampled every second from Ray's start to the end: :mod:`proc_memory`) is printed beside its time, with
the CPU time the sampling took. Sampling is charged to the run it measures, and more to a Ray run (its
eleven processes) than to one process: every 0.25 s, as before, it cost the Ray run at n = 100,000 about
0.3 s of its 6 s and the in-process run nothing measurable (``--memory-every 0.25``). With
``--baseline PATH`` (a checkout of another parley, e.g. ``git worktree add /tmp/before <commit>``)
every run is made twice in a row, once with that code and once with this one, so the machine's load
hits both alike, and the ratio of their times is printed. Ray starts the party hosts (its worker
processes) at nice 15, below the in-process run, which is all in the nice-0 child; on a machine
other jobs load, ``--worker-niceness 0`` gives them the same priority (``RAY_worker_niceness``).

Run: ``PYTHONPATH=. python tests/benchmarks/bench_precision_scaling.py [--sizes 10000 30000 100000]
[--backends local ray] [--baseline PATH] [--worker-niceness N] [--memory-every S]``. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def one(n: int, backend: str, every_s: float) -> dict:
    """One run in this process; the Ray instance is started before the clock, the memory sampler before Ray."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from proc_memory import PeakSampler

    from parley.scenarios.catalog import scenario_path
    from parley.scenarios.runner import run
    from parley.scenarios.spec import Scenario

    with PeakSampler(every_s) as memory:
        if backend == "ray":
            from parley.parties.ray.cluster import ensure_ray

            ensure_ray()
        scenario = Scenario.from_toml(scenario_path("adult-reveal-precision")).with_values({
            "name": f"reveal-precision-{n}", "dataset.name": "synthetic", "dataset.audit_size": n,
            "dataset.minority": n // 10, "dataset.train_size": 2000, "backend": backend})
        start, cpu = time.perf_counter(), time.process_time()
        with tempfile.TemporaryDirectory() as out:
            metrics = run(scenario, out=out).metrics
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    # cpu_s: this process's CPU time over the run (all of it in process; the driver's share over Ray), which the
    # machine's load does not stretch as it stretches wall_s
    return {"n": n, "backend": backend, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "peak_gib": round(memory.peak / 2**30, 3), "sampler_cpu_s": round(memory.cpu_s, 2),
            "queries": metrics["queries"], "exact_recovery": metrics["exact_recovery"]}


def child(n: int, backend: str, code: Path, every_s: float, niceness: int | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}
    if niceness is not None:  # Ray reads it when the child starts its instance
        env["RAY_worker_niceness"] = str(niceness)
    done = subprocess.run([sys.executable, __file__, "--one", str(n), backend, str(every_s)], env=env, check=True,
                          capture_output=True, text=True, cwd=code)
    return json.loads(done.stdout.strip().splitlines()[-1])


def slope(rows: list[dict]) -> float:
    if len(rows) < 2:  # one size: no growth to measure
        return float("nan")
    x = np.log([r["n"] for r in rows])
    y = np.log([r["wall_s"] for r in rows])
    return float(np.polyfit(x, y, 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--backends", nargs="+", choices=("local", "ray"), default=["local", "ray"])
    parser.add_argument("--baseline", type=Path, help="checkout of the parley to compare with")
    parser.add_argument("--worker-niceness", type=int, help="RAY_worker_niceness of the Ray runs (Ray's default: 15)")
    parser.add_argument("--memory-every", type=float, default=1.0, metavar="S",
                        help="seconds between two samples of the process tree's memory (default 1)")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)  # one run, in a child process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(int(args.one[0]), args.one[1], float(args.one[2]))))
        return
    codes = {"current": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    result: dict = {"benchmark": "precision-scaling", "sizes": args.sizes, "worker_niceness": args.worker_niceness,
                    "memory_every_s": args.memory_every,
                    "code": {k: str(v) for k, v in codes.items()}}
    for backend in args.backends:
        rows: dict[str, list[dict]] = {k: [] for k in codes}
        for n in args.sizes:
            for label, code in codes.items():  # back to back: the load hits both alike
                row = child(n, backend, code, args.memory_every, args.worker_niceness)
                rows[label].append(row)
                print(f"{backend:>5} n={n:>9,} {label:>8}: {row['wall_s']:7.2f} s (cpu {row.get('cpu_s')} s), "
                      f"peak {row.get('peak_gib')} GiB (sampling took {row.get('sampler_cpu_s')} s of cpu), "
                      f"{row['queries']} queries, exact={row['exact_recovery']}",
                      file=sys.stderr, flush=True)
        result[backend] = {}
        for label in codes:
            exponent, top = slope(rows[label]), slope(rows[label][-2:])
            print(f"{backend:>5} {label:>8}: wall time grows as n^{exponent:.2f} over n = {args.sizes} "
                  f"(n^{top:.2f} between the two largest)", file=sys.stderr)
            result[backend][label] = {"rows": rows[label], "exponent": round(exponent, 2),
                                      "exponent_top": round(top, 2)}
        if "baseline" in codes:
            ratios = [round(b["wall_s"] / c["wall_s"], 2) for b, c in zip(rows["baseline"], rows["current"],
                                                                          strict=True)]
            result[backend]["speedup"] = ratios
            print(f"{backend:>5}: baseline time / current time by n: {ratios}", file=sys.stderr)
    if {"local", "ray"} <= set(args.backends):
        over = [round(r["wall_s"] / c["wall_s"], 2) for r, c in zip(result["ray"]["current"]["rows"],
                                                                    result["local"]["current"]["rows"], strict=True)]
        result["ray_over_local"] = over
        print(f"over Ray / in process by n: {over}", file=sys.stderr)
    result["all_exact"] = all(r["exact_recovery"] for b in args.backends for k in codes
                              for r in result[b][k]["rows"])
    print(json.dumps(result))


if __name__ == "__main__":
    main()
