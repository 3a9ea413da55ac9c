"""Driver memory of a long run: a party host's restore journal against a bare Ray actor.

Each variant runs in its own driver process (a fresh Python and a private Ray instance, so no variant
inherits another's heap) and makes ``--calls`` calls, each carrying a fresh 400 x 1000 float64 array
(3.2 MB) that the caller drops afterwards:

* ``bare``: a bare actor method receiving the array and computing the same metric, no envelope;
* ``parley-wire``: a signed metric query sent through the network (logged in the transcript and
  delivered to the compliance party in a :class:`~parley.parties.ray.deployment.RayDeployment`);
* ``parley-direct``: the same envelope handed to the party with ``deployment.call`` (not logged).

Memory is read from ``/proc`` (no psutil needed): the driver's resident set (what grows when the
driver keeps what it sent) and the proportional set size summed over the driver's own process tree
(the driver and the Ray processes it started; shared pages split between sharers, other users'
processes never counted). Growth = after the calls minus after 20 warm-up calls. The ratio printed is
parley's driver growth over the bare actor's; the goal is at most 1.5.

Run: ``PYTHONPATH=. python tests/benchmarks/bench_memory.py [--calls 1000]``. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from proc_memory import MIB, driver_rss_bytes, tree_pss_bytes

from parley.parties.run_secrets import PartySecret

VARIANTS = ("bare", "parley-wire", "parley-direct")
SHAPE = (400, 1000)
WARMUP = 20
TARGET = 1.5


def _snapshot() -> dict[str, int]:
    gc.collect()
    return {"driver_rss": driver_rss_bytes(), "tree_pss": tree_pss_bytes()}


def run_variant(variant: str, calls: int) -> dict:
    """One variant in this process: memory after warm-up and after ``calls`` calls."""
    import ray

    from parley.parties.compliance import Compliance
    from parley.parties.network import Network
    from parley.parties.party import check_reply
    from parley.parties.ray.cluster import ensure_ray
    from parley.parties.ray.deployment import RayDeployment
    from parley.parties.transcript import TranscriptWriter
    from parley.parties.wire import Identity, Keyring
    from parley.protocols import get_protocol
    from parley.protocols.base import AuditSet

    ensure_ray()
    rng = np.random.default_rng(0)
    a = (rng.random(SHAPE[1]) < 0.9).astype(np.int8)
    y = (rng.random(SHAPE[1]) < 0.3).astype(np.int8)
    querier = Identity.generate("data-center", "data-center")
    compliance = Identity.generate("compliance", "compliance")
    keyring = Keyring()
    for ident in (querier, compliance):
        keyring.add(ident.key_entry())
    counter = iter(range(10**9))
    with tempfile.TemporaryDirectory() as tmp:
        if variant == "bare":
            from bench_wire import Bare  # the same baseline actor as the messaging benchmark

            actor = Bare.remote(a, y)

            def one() -> None:
                ray.get(actor.answer.remote("sp", rng.random(SHAPE)))
        else:
            deployment = RayDeployment()
            transcript = TranscriptWriter(Path(tmp) / "transcript.jsonl", keyring)
            network = Network(deployment, transcript)
            network.route("compliance", "compliance")
            deployment.add("compliance", Compliance, compliance, keyring, AuditSet(a=a, y=y),
                           get_protocol("raw")(), ["data-center"], PartySecret.fresh())

            def one() -> None:
                query = querier.seal("compliance", "metric-query", "raw",
                                     {"metric": "sp", "predictions": rng.random(SHAPE),
                                      "query_id": f"q{next(counter)}"})
                reply = (network.send(query) if variant == "parley-wire"
                         else deployment.call("compliance", "receive", query))
                check_reply(reply, keyring, "data-center", "metric-answer")

        for _ in range(WARMUP):
            one()
        start = _snapshot()
        began = time.perf_counter()
        trajectory = []  # driver growth after each tenth of the calls: levels off, or keeps growing
        for i in range(calls):
            one()
            if (i + 1) % max(calls // 10, 1) == 0:
                trajectory.append(round((driver_rss_bytes() - start["driver_rss"]) / MIB))
        wall = time.perf_counter() - began
        end = _snapshot()
        if variant != "bare":
            transcript.abort()
            deployment.shutdown()
    ray.shutdown()
    return {"variant": variant, "calls": calls, "wall_s": round(wall, 1),
            "driver_growth_mib": round((end["driver_rss"] - start["driver_rss"]) / MIB, 1),
            "tree_growth_mib": round((end["tree_pss"] - start["tree_pss"]) / MIB, 1), "trajectory_mib": trajectory}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls per variant (default 1000)")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # one variant, in a child process
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.calls)))
        return
    rows = {}
    for variant in VARIANTS:  # each in its own driver: no variant inherits another's heap
        out = subprocess.run([sys.executable, __file__, "--variant", variant, "--calls", str(args.calls)],
                             check=True, capture_output=True, text=True)
        rows[variant] = json.loads(out.stdout.strip().splitlines()[-1])
        r = rows[variant]
        print(f"{variant:>14}: {r['calls']} calls of a fresh {SHAPE[0]}x{SHAPE[1]} float64 array in {r['wall_s']} s; "
              f"driver RSS +{r['driver_growth_mib']} MiB (by tenths: {r['trajectory_mib']}), "
              f"process tree PSS +{r['tree_growth_mib']} MiB",
              file=sys.stderr)
    bare = max(rows["bare"]["driver_growth_mib"], 1.0)
    ratios = {v: round(rows[v]["driver_growth_mib"] / bare, 2) for v in ("parley-wire", "parley-direct")}
    print(f"driver growth over the bare actor's: wire x{ratios['parley-wire']}, direct x{ratios['parley-direct']} "
          f"(goal <= x{TARGET})", file=sys.stderr)
    print(json.dumps({"benchmark": "memory", **rows, "ratio": ratios, "target": TARGET}))


if __name__ == "__main__":
    main()
