"""Cost of the signed wire over a bare Ray actor call carrying the same payload.

Signed round trip: the querier seals a metric query (payload digest, BLAKE3 over arrays, + Ed25519),
the compliance actor verifies it, checks the replay guard and role policy,
validates the query, computes the metric and seals the answer, and the querier
verifies the answer. Baseline: a bare actor method receiving the same array and
computing the same metric, no envelope. A third figure adds what a scenario run
also does: appending both envelopes to the hash-chained transcript.

Two orders are measured and printed: interleaved call by call (the ``ratio`` of
the last line; drift in the machine's load hits both alike, and every call
follows a call to another actor), and in blocks of one kind (``blocks``; every
call follows a call to the same actor, whose Ray path is then hotter). The
absolute overhead of signing, ``overhead_ms``, is about the same in both.

A second part (``echo``) measures what issue 21 asked about: a signed *echo* round trip (the
party answers with the array it received, so a large payload travels both ways) through
``RayDeployment.call`` and through the logged network, against a bare Ray echo actor; and the
throughput of pipelined calls (``RayDeployment.submit`` / ``Network.post``: every message sent
before any reply is awaited) against as many bare calls submitted before their first ``ray.get``.

Run: ``PYTHONPATH=. python tests/benchmarks/bench_wire.py [--echo]`` (``--echo``: the second part
only). The last line is one JSON object.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import ray
from nacl.signing import SigningKey

from parley.parties.compliance import Compliance
from parley.parties.network import Network
from parley.parties.party import check_reply
from parley.parties.ray.cluster import ensure_ray
from parley.parties.ray.deployment import RayDeployment
from parley.parties.run_secrets import PartySecret
from parley.parties.transcript import TranscriptWriter
from parley.parties.wire import Identity, Keyring, payload_digest
from parley.protocols import get_protocol
from parley.protocols.base import AuditSet
from parley.protocols.metrics import evaluate
from tests.party_world import Echo

REPEATS = {"one_float": 1500, "400x1000": 200}


@ray.remote(num_cpus=0)
class Bare:
    """The baseline: same payload, same metric, no wire."""

    def __init__(self, a: np.ndarray, y: np.ndarray) -> None:
        self.a, self.y = a, y

    def answer(self, metric: str, H: np.ndarray) -> np.ndarray:
        return evaluate(metric, H, self.a, self.y)


@ray.remote(num_cpus=0)
class BareEcho:
    """The echo baseline: the array comes back as it went, no wire."""

    def echo(self, H: np.ndarray) -> np.ndarray:
        return H


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _two_parties() -> tuple[Identity, Identity, Keyring]:
    """The querier's and the compliance party's identities and the keyring that knows both."""
    querier = Identity.generate("data-center", "data-center")
    compliance = Identity.generate("compliance", "compliance")
    keyring = Keyring()
    for ident in (querier, compliance):
        keyring.add(ident.key_entry())
    return querier, compliance, keyring


def measure(label: str, metric: str, H: np.ndarray, a: np.ndarray, y: np.ndarray, log_dir: Path) -> dict:
    querier, compliance, keyring = _two_parties()
    deployment = RayDeployment()
    deployment.add("compliance", Compliance, compliance, keyring, AuditSet(a=a, y=y), get_protocol("raw")(),
                   ["data-center"], PartySecret.fresh())
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
    calls = {"bare": lambda: ray.get(bare.answer.remote(metric, H)), "signed": signed,
             "logged": lambda: signed(log=True)}
    for fn in calls.values():  # warm-up (the object store allocates on first use)
        for _ in range(20):
            fn()
    # Two orders, both reported: interleaved call by call (drift in the machine's load hits all
    # three alike; every call follows a call to another actor), and in blocks of one kind
    # (every call follows a call to the same, hot actor).
    times: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(REPEATS[label]):
        for key, fn in calls.items():
            times[key].append(_timed(fn))
    blocks = {k: [_timed(fn) for _ in range(REPEATS[label])] for k, fn in calls.items()}
    transcript.abort()  # a benchmark log, not a run: no end record
    deployment.shutdown()
    ray.kill(bare)
    b, s, lg = (1e3 * statistics.median(times[k]) for k in ("bare", "signed", "logged"))
    bb, bs = (1e3 * statistics.median(blocks[k]) for k in ("bare", "signed"))
    return {"payload": f"{H.shape[0]}x{H.shape[1]} float64 ({H.nbytes:,} bytes)", "bare_ms": round(b, 3),
            "signed_ms": round(s, 3), "ratio": round(s / b, 3), "signed_and_logged_ms": round(lg, 3),
            "ratio_with_transcript": round(lg / b, 3), "overhead_ms": round(s - b, 3),
            "blocks": {"bare_ms": round(bb, 3), "signed_ms": round(bs, 3), "ratio": round(bs / bb, 3),
                       "overhead_ms": round(bs - bb, 3)}}


def measure_echo(label: str, H: np.ndarray, repeats: int, burst: int, log_dir: Path) -> dict:
    """Signed echo round trips (deployment call, logged network) and pipelined bursts against a bare echo actor."""
    querier, party, keyring = _two_parties()
    deployment = RayDeployment()
    deployment.add("echo", Echo, party, keyring)
    transcript = TranscriptWriter(log_dir / f"echo-{label}.jsonl", keyring)
    network = Network(deployment, transcript)
    network.route("compliance", "echo")
    bare = BareEcho.remote()
    counter = iter(range(10**9))

    def seal() -> object:
        return querier.seal("compliance", "metric-query", "raw",
                            {"metric": "sp", "predictions": H, "query_id": f"q{next(counter)}"})

    def check(reply: object) -> np.ndarray:
        return check_reply(reply, keyring, "data-center", "metric-answer").payload["values"]

    def burst_bare() -> None:
        refs = [bare.echo.remote(H) for _ in range(burst)]
        for ref in refs:
            ray.get(ref)

    def burst_signed() -> None:
        handles = [deployment.submit("echo", "receive", seal()) for _ in range(burst)]
        for handle in handles:
            check(handle.result())

    def burst_logged() -> None:
        handles = [network.post(seal()) for _ in range(burst)]
        for handle in handles:
            check(handle.result())

    np.testing.assert_array_equal(check(deployment.call("echo", "receive", seal())), H)
    calls = {"bare": lambda: ray.get(bare.echo.remote(H)),
             "signed": lambda: check(deployment.call("echo", "receive", seal())),
             "logged": lambda: check(network.send(seal()))}
    bursts = {"bare": burst_bare, "signed": burst_signed, "logged": burst_logged}
    for fn in (*calls.values(), *bursts.values()):  # warm-up
        for _ in range(5):
            fn()
    times: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(repeats):  # interleaved call by call
        for key, fn in calls.items():
            times[key].append(_timed(fn))
    rates: dict[str, list[float]] = {k: [] for k in bursts}
    for _ in range(max(5, repeats // burst)):
        for key, fn in bursts.items():
            rates[key].append(burst / _timed(fn))
    transcript.abort()
    deployment.shutdown()
    ray.kill(bare)
    b, s, lg = (1e3 * statistics.median(times[k]) for k in ("bare", "signed", "logged"))
    rb, rs, rl = (statistics.median(rates[k]) for k in ("bare", "signed", "logged"))
    return {"payload": f"{H.shape[0]}x{H.shape[1]} float64 ({H.nbytes:,} bytes)",
            "sync": {"bare_ms": round(b, 3), "signed_ms": round(s, 3), "ratio": round(s / b, 3),
                     "logged_ms": round(lg, 3), "ratio_logged": round(lg / b, 3)},
            "pipelined": {"burst": burst, "bare_per_s": round(rb, 1), "signed_per_s": round(rs, 1),
                          "ratio": round(rs / rb, 3), "logged_per_s": round(rl, 1),
                          "ratio_logged": round(rl / rb, 3)}}


def hash_pass(H: np.ndarray, repeats: int = 200) -> dict:
    """One pass of the payload digest over ``H`` (writable, so never cached) against SHA-256 of its bytes alone."""
    raw = memoryview(np.ascontiguousarray(H)).cast("B")
    digest = [_timed(lambda: payload_digest({"predictions": H})) for _ in range(repeats)]
    sha = [_timed(lambda: hashlib.sha256(raw).digest()) for _ in range(repeats)]
    return {"digest_ms": round(1e3 * statistics.median(digest), 3), "sha256_ms": round(1e3 * statistics.median(sha), 3)}


def ed25519_ms(repeats: int = 2000) -> dict:
    """Median time of one Ed25519 signature and one check of a message the size of an envelope's header."""
    key = SigningKey.generate()
    message = bytes(300)
    signed = key.sign(message)
    sign = [_timed(lambda: key.sign(message)) for _ in range(repeats)]
    verify = [_timed(lambda: key.verify_key.verify(signed)) for _ in range(repeats)]
    return {"sign_ms": round(1e3 * statistics.median(sign), 4), "verify_ms": round(1e3 * statistics.median(verify), 4)}


def floor_ratio(bare_ms: float, digest_ms: float, ed25519: dict) -> float:
    """A lower bound on the signed echo's ratio to the bare call: only its two signatures, two checks and
    three digest passes (the querier's seal, the party's check, the querier's check), each at its
    tight-loop speed, added to the bare round trip. An array above ``CACHED_BYTES`` is signed back
    with the party's digest; a smaller one is hashed a fourth time, which the bound leaves out."""
    work = 2 * ed25519["sign_ms"] + 2 * ed25519["verify_ms"] + 3 * digest_ms
    return round((bare_ms + work) / bare_ms, 3)


def echo_part(tmp: Path) -> dict:
    rng = np.random.default_rng(0)
    payloads = {"one_float": np.array([[0.5]]), "400x1000": rng.random((400, 1000))}
    results = {"one_float": measure_echo("one_float", payloads["one_float"], 1500, 50, tmp),
               "400x1000": measure_echo("400x1000", payloads["400x1000"], 200, 10, tmp)}
    ed25519 = ed25519_ms()
    for label, H in payloads.items():
        results[label]["hash_pass"] = hash_pass(H.copy())
        results[label]["sync"]["floor_ratio"] = floor_ratio(results[label]["sync"]["bare_ms"],
                                                            results[label]["hash_pass"]["digest_ms"], ed25519)
    results["ed25519"] = ed25519
    hashed = results["400x1000"]["hash_pass"]
    print(f"  400x1000: one digest pass {hashed['digest_ms']:.3f} ms (SHA-256 of the same bytes alone "
          f"{hashed['sha256_ms']:.3f} ms); a signed echo round trip makes three", file=sys.stderr)
    floors = ", ".join(f"{label} x{results[label]['sync']['floor_ratio']:.3f}" for label in payloads)
    print(f"  Ed25519 (libsodium): sign {1e3 * ed25519['sign_ms']:.1f} us, check {1e3 * ed25519['verify_ms']:.1f} us;"
          f" the floor (bare + two of each + three digest passes, tight-loop speeds): {floors}", file=sys.stderr)
    for label in payloads:
        r = results[label]
        sync, pipe = r["sync"], r["pipelined"]
        print(f"{label:>10} echo: sync bare {sync['bare_ms']:.3f} ms, signed {sync['signed_ms']:.3f} ms "
              f"(x{sync['ratio']:.2f}), signed + logged {sync['logged_ms']:.3f} ms (x{sync['ratio_logged']:.2f}); "
              f"pipelined bursts of {pipe['burst']}: bare {pipe['bare_per_s']:.0f}/s, signed "
              f"{pipe['signed_per_s']:.0f}/s (x{pipe['ratio']:.2f}), logged {pipe['logged_per_s']:.0f}/s "
              f"(x{pipe['ratio_logged']:.2f})", file=sys.stderr)
    return results


def main() -> None:
    ensure_ray()
    rng = np.random.default_rng(0)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        if "--echo" in sys.argv[1:]:
            echo = echo_part(Path(tmp))
            print(json.dumps({"benchmark": "wire-echo", **echo,
                              "goals": {"sync_one_float": 1.2, "sync_400x1000": 1.3, "pipelined": 0.8}}))
            return
        # one float: an audit set of one individual, the covariance metric (defined for any n >= 1)
        results["one_float"] = measure("one_float", "cov", np.array([[0.5]]), np.array([1], np.int8),
                                       np.array([1], np.int8), Path(tmp))
        a = (rng.random(1000) < 0.9).astype(np.int8)
        y = (rng.random(1000) < 0.3).astype(np.int8)
        results["400x1000"] = measure("400x1000", "sp", rng.random((400, 1000)), a, y, Path(tmp))
        echo = echo_part(Path(tmp))
    for label, r in results.items():
        print(f"{label:>10}: interleaved: bare {r['bare_ms']:.3f} ms, signed {r['signed_ms']:.3f} ms "
              f"(x{r['ratio']:.2f}, +{r['overhead_ms']:.3f} ms), signed + transcript "
              f"{r['signed_and_logged_ms']:.3f} ms (x{r['ratio_with_transcript']:.2f}); in blocks: bare "
              f"{r['blocks']['bare_ms']:.3f} ms, signed {r['blocks']['signed_ms']:.3f} ms "
              f"(x{r['blocks']['ratio']:.2f}, "
              f"+{r['blocks']['overhead_ms']:.3f} ms)", file=sys.stderr)
    print(json.dumps({"benchmark": "wire", **results, "echo": echo,
                      "targets": {"one_float": 1.5, "400x1000": 2.0},
                      "goals": {"sync_one_float": 1.2, "sync_400x1000": 1.3, "pipelined": 0.8}}))


if __name__ == "__main__":
    main()
