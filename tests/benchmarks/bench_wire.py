"""Cost of the signed wire over a bare Ray actor call carrying the same payload.

Signed round trip: the querier seals a metric query (SHA-256 digest + Ed25519),
the compliance actor verifies it, checks the replay guard and role policy,
validates the query, computes the metric and seals the answer, and the querier
verifies the answer. Baseline: a bare actor method receiving the same array and
computing the same metric, no envelope. A third figure adds what a scenario run
also does: appending both envelopes to the hash-chained transcript.

Run: ``python tests/benchmarks/bench_wire.py``. The last line is one JSON object.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import ray

from parties.actors import RayDeployment, ensure_ray
from parties.compliance import Compliance
from parties.party import check_reply
from parties.transcript import TranscriptWriter
from parties.wire import Identity, Keyring
from protocols import get_protocol
from protocols.base import AuditSet
from protocols.metrics import evaluate

REPEATS = {"one_float": 1000, "400x1000": 150}
ROUNDS = 5


@ray.remote(num_cpus=0)
class Bare:
    """The baseline: same payload, same metric, no wire."""

    def __init__(self, a: np.ndarray, y: np.ndarray) -> None:
        self.a, self.y = a, y

    def answer(self, metric: str, H: np.ndarray) -> np.ndarray:
        return evaluate(metric, H, self.a, self.y)


def _median_ms(fn, repeats: int) -> float:
    for _ in range(20):  # warm-up (the object store allocates on first use)
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def measure(label: str, metric: str, H: np.ndarray, a: np.ndarray, y: np.ndarray, log_dir: Path) -> dict:
    querier = Identity.generate("data-center", "data-center")
    compliance = Identity.generate("compliance", "compliance")
    keyring = Keyring()
    for ident in (querier, compliance):
        keyring.add(ident.key_entry())
    deployment = RayDeployment()
    deployment.add("compliance", Compliance, compliance, keyring, AuditSet(a=a, y=y), get_protocol("raw")(),
                   ["data-center"], np.random.default_rng(0))
    bare = Bare.remote(a, y)
    transcript = TranscriptWriter(log_dir / f"{label}.jsonl", keyring)
    counter = iter(range(10**9))

    def signed(log: bool = False):
        query = querier.seal("compliance", "metric-query", "raw",
                             {"metric": metric, "predictions": H, "query_id": f"q{next(counter)}"})
        reply = deployment.call("compliance", "receive", query)
        check_reply(reply, keyring, "data-center", "metric-answer")
        if log:
            transcript.append(query)
            transcript.append(reply)
        return reply

    np.testing.assert_array_equal(signed().payload["values"], ray.get(bare.answer.remote(metric, H)))
    repeats = REPEATS[label]
    # interleave the three measurements in rounds so drift in machine load hits all alike
    bare_ms, signed_ms, logged_ms = [], [], []
    for _ in range(ROUNDS):
        bare_ms.append(_median_ms(lambda: ray.get(bare.answer.remote(metric, H)), repeats // ROUNDS))
        signed_ms.append(_median_ms(signed, repeats // ROUNDS))
        logged_ms.append(_median_ms(lambda: signed(log=True), repeats // ROUNDS))
    transcript.close()
    deployment.shutdown()
    ray.kill(bare)
    b, s, lg = statistics.median(bare_ms), statistics.median(signed_ms), statistics.median(logged_ms)
    return {"payload": f"{H.shape[0]}x{H.shape[1]} float64 ({H.nbytes:,} bytes)", "bare_ms": round(b, 3),
            "signed_ms": round(s, 3), "ratio": round(s / b, 3), "signed_and_logged_ms": round(lg, 3),
            "ratio_with_transcript": round(lg / b, 3)}


def main() -> None:
    ensure_ray()
    rng = np.random.default_rng(0)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        # one float: an audit set of one individual, the covariance metric (defined for any n >= 1)
        results["one_float"] = measure("one_float", "cov", np.array([[0.5]]), np.array([1], np.int8),
                                       np.array([1], np.int8), Path(tmp))
        a = (rng.random(1000) < 0.9).astype(np.int8)
        y = (rng.random(1000) < 0.3).astype(np.int8)
        results["400x1000"] = measure("400x1000", "sp", rng.random((400, 1000)), a, y, Path(tmp))
    for label, r in results.items():
        print(f"{label:>10}: bare {r['bare_ms']:.3f} ms, signed {r['signed_ms']:.3f} ms (x{r['ratio']:.2f}), "
              f"signed + transcript {r['signed_and_logged_ms']:.3f} ms (x{r['ratio_with_transcript']:.2f})",
              file=sys.stderr)
    print(json.dumps({"benchmark": "wire", **results, "targets": {"one_float": 1.5, "400x1000": 2.0}}))


if __name__ == "__main__":
    main()
