"""Time of one DP answer, protocol by protocol, on one audit set: what a statistical audit or a study pays per query.

Each protocol answers the same SP query (m = 1, then m = 20 models) on a synthetic audit set of
n = 1,000 (30 % in group 1) from one seeded generator, ``CALLS`` times in a row after 100 answers of
warm-up (so the steady state: what a protocol keeps between answers is kept); the figure is the
median over ``--rounds`` rounds of the mean time per answer. ``--baseline PATH`` runs
the same measurement on a source copy of another parley commit in a child process, alternated round
by round with this checkout's, and prints baseline / this for each row.

``--sampler-timing`` measures something else: how the time of one exact discrete Laplace draw
(``discrete_laplace``, tau = 6,000 lattice steps) grows with the size of the noise it returns, |Y| / tau.
The samplers loop longer for larger noise, so whoever can time an answer learns a little about its noise
(docs/protocols/dp.md, "Timing").

Run: ``PYTHONPATH=. python tests/benchmarks/bench_answers.py [--baseline PATH] [--rounds 3] [--sampler-timing]``.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: (protocol, its parameters) measured; every one releases on its default (floating-point safe) sampler.
PROTOCOLS = (("laplace", {"epsilon": 1.0}), ("smooth-cauchy", {"epsilon": 1.0}),
             ("smooth-laplace", {"epsilon": 0.5, "delta": 1e-6}), ("dp-counts", {"epsilon": 1.0}))
CALLS = 2000
ROOT = Path(__file__).resolve().parents[2]


def measure() -> dict[str, float]:
    """Microseconds per answer for each protocol and m, in this process (parley as found on sys.path)."""
    from parley.protocols import AuditSet, MetricQuery, get_protocol

    rng = np.random.default_rng(0)
    n = 1000
    audit = AuditSet(a=(rng.random(n) < 0.3).astype(np.int8), y=(rng.random(n) < 0.5).astype(np.int8))
    out = {}
    for m in (1, 20):
        query = MetricQuery(metric="sp", predictions=rng.random((m, n)), query_id="bench")
        for name, params in PROTOCOLS:
            cls = get_protocol(name)
            protocol, draws = cls(cls.Params(**params)), np.random.default_rng(1)
            for _ in range(100):
                protocol.answer(query, audit, draws)
            start = time.perf_counter()
            for _ in range(CALLS):
                protocol.answer(query, audit, draws)
            out[f"{name} m={m}"] = round(1e6 * (time.perf_counter() - start) / CALLS, 1)
    return out


def sampler_timing(draws: int = 60_000) -> dict[str, dict[str, float]]:
    """Median microseconds of one discrete Laplace draw, by the size of the noise drawn (|Y| / tau)."""
    from parley.protocols.dp.lattice import RandomBits, discrete_laplace

    bits, t, s = RandomBits(np.random.default_rng(0)), 6000 << 20, 1 << 20  # tau = t / s = 6,000
    size, took = np.empty(draws), np.empty(draws)
    for i in range(draws):
        start = time.perf_counter_ns()
        y = discrete_laplace(bits, t, s)
        took[i], size[i] = time.perf_counter_ns() - start, abs(y) / (t / s)
    out = {}
    for low, high in ((0, 1), (1, 2), (2, 3), (3, 5)):
        sel = (size >= low) & (size < high)
        if not sel.any():
            continue
        median_us = round(float(np.median(took[sel])) / 1e3, 2)
        out[f"|Y|/tau in [{low}, {high})"] = {"draws": int(sel.sum()), "median_us": median_us}
    return out


def _in_child(code: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.run([sys.executable, __file__, "--child"], env=env, cwd=code, capture_output=True, text=True)
    if proc.returncode or not proc.stdout.strip():
        sys.exit(f"the measurement on {code} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a source copy of another parley commit, run alternated with this one")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sampler-timing", action="store_true", help="time one draw by the size of its noise")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.sampler_timing and args.baseline:
        parser.error("--sampler-timing measures this checkout only; drop --baseline")
    if args.child:
        print(json.dumps(measure()))
        return
    if args.sampler_timing:
        rows = sampler_timing()
        for bucket, row in rows.items():
            print(f"{bucket:>20}: {row['draws']:6d} draws, median {row['median_us']:.2f} us", file=sys.stderr)
        print(json.dumps({"benchmark": "sampler-timing", "rows": rows}))
        return
    codes = {"this": ROOT, **({"baseline": Path(args.baseline).resolve()} if args.baseline else {})}
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in codes}
    for r in range(args.rounds):
        for label, code in codes.items():
            runs[label].append(_in_child(code))
            print(f"round {r + 1} {label}: {runs[label][-1]}", file=sys.stderr)
    rows = [row for row in runs["this"][0] if all(row in run for rs in runs.values() for run in rs)]
    medians = {label: {row: statistics.median(run[row] for run in rs) for row in rows} for label, rs in runs.items()}
    out: dict[str, object] = {"benchmark": "answers", "us_per_answer": medians}
    skipped = sorted(set(runs["this"][0]) - set(rows))
    if skipped:
        print(f"not in every run (a protocol the baseline lacks?), left out: {', '.join(skipped)}", file=sys.stderr)
    base = medians.get("baseline")
    for row, us in medians["this"].items():
        line = f"{row:>20}: {us:8.1f} us"
        if base:
            line += f"  (baseline {base[row]:.1f} us; baseline / this x{base[row] / us:.2f})"
        print(line, file=sys.stderr)
    if base:
        out["baseline_over_this"] = {row: round(base[row] / us, 3) for row, us in medians["this"].items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
