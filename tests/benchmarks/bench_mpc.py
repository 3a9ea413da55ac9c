"""Secure computation (``mpc``, ``mpc-dp``, ``he``) against ``raw``: cost per query and leakage, in one run.

Cost. The honest data center of ``adult-observer-honest`` (Adult, A = race, seed 0, its base model
trained as the run trains it) at audit sizes n in ``SIZES`` asks SP of m in ``MODELS`` models (its
base model's scores at m thresholds, soft scores for the last one). Each protocol answers the same
query through real parties in this process (signed envelopes, the network, the hash-chained
transcript; no Ray, so the figure is the protocol's, not the actors'): wall time per query, bytes on
the wire, envelopes (a round trip is two), and the state each party keeps per answered query
(the compliance party's stored reply for an idempotent retry, the helper's). ``he``'s key generation
(once per querier, not per query) is reported apart as ``keygen_s``, and the bytes of its public context,
which only a querier's first query carries, as ``context_bytes``.

Leakage. The catalog's exact reveal attacks run under ``raw``, ``mpc`` and ``he`` (local backend, audit
n = ``LEAK_N``): ``mpc``'s leakage must equal ``raw``'s; ``he``'s answers carry the flood.
``adult-likelihood`` runs under ``dp-counts`` and under
``mpc-dp`` on ``SEEDS`` seeds: mean leakage of each. Every run reports the curious compliance party's
reading of the base model's predictions (balanced accuracy; 0.5 = chance).

Run: ``python tests/benchmarks/bench_mpc.py [cost|leakage|all]``. The last line is one JSON object.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties.compliance import Compliance
from parley.parties.data_center import DataCenter
from parley.parties.network import LocalDeployment, Network
from parley.parties.run_secrets import PartySecret
from parley.parties.secure import HELPER_ROLE, Helper, SecureQuerier, pair_keys
from parley.parties.transcript import TranscriptWriter
from parley.parties.wire import Identity, Keyring, encode_payload
from parley.protocols import get_protocol
from parley.protocols.crypto.ckks import layout
from parley.protocols.errors import AttackError
from parley.scenarios.catalog import scenario_path
from parley.scenarios.compare.utility import honest_audit
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario

SIZES = (1_000, 10_000)
MODELS = (1, 100)
LEAK_N = 300
SEEDS = (0, 1, 2, 3, 4)
REVEAL = ("adult-reveal-linear", "adult-raw-single-query", "adult-reveal-abs-sp", "adult-reveal-eo",
          "adult-reveal-precision")


def _payload_bytes(payload: Any) -> int:
    return len(json.dumps(encode_payload(payload), separators=(",", ":")))


def one_query(name: str, scores: np.ndarray, a: np.ndarray, y: np.ndarray, m: int, **params: Any
              ) -> dict[str, Any]:
    """One SP query of m models through the parties and the logged network; its costs."""
    cls = get_protocol(name)
    protocol = cls(cls.Params(**params))
    names = {"compliance": "compliance", "data-center": "data-center", "mpc-helper": HELPER_ROLE}
    ids = {slot: Identity.generate(slot, role) for slot, role in names.items()}
    keyring = Keyring()
    for identity in ids.values():
        keyring.add(identity.key_entry())
    with tempfile.TemporaryDirectory() as tmp:
        deployment = LocalDeployment()
        transcript = TranscriptWriter(Path(tmp) / "transcript.jsonl", keyring)
        network = Network(deployment, transcript)
        secure = protocol.encoding == "mpc"
        answering = protocol
        keygen = None
        if getattr(protocol, "homomorphic", False):
            from parley.parties.homomorphic import HeQuerier

            he = HeQuerier(protocol, a.size)
            started = time.perf_counter()
            he.keys.public_context()  # the querier's key pair, made once per querier (not per query)
            keygen = round(time.perf_counter() - started, 3)
            deployment.add("data-center", DataCenter, ids["data-center"], keyring, None, None, "compliance",
                           name, np.random.default_rng(1), codec=he)
        elif secure:
            keys = pair_keys(("compliance", "data-center", "mpc-helper"))
            answering = protocol.keyed(keys["compliance"])
            querier = SecureQuerier(protocol.keyed(keys["data-center"]), keys["data-center"], y, "mpc-helper")
            deployment.add("data-center", DataCenter, ids["data-center"], keyring, None, None, "compliance",
                           name, np.random.default_rng(1), codec=querier)
            deployment.add("mpc-helper", Helper, ids["mpc-helper"], keyring, protocol.keyed(keys["mpc-helper"]),
                           ["data-center"], a.size, np.random.default_rng(2))
            network.route("mpc-helper", "mpc-helper")
        else:
            deployment.add("data-center", DataCenter, ids["data-center"], keyring, None, None, "compliance", name,
                           np.random.default_rng(1))
        from parley.protocols.base import AuditSet

        deployment.add("compliance", Compliance, ids["compliance"], keyring, AuditSet(a=a, y=y), answering,
                       ["data-center"], PartySecret.fresh())
        network.route("compliance", "compliance")
        network.route("data-center", "data-center")
        thresholds = np.linspace(0.05, 0.95, m)
        H = (scores[None, :] >= thresholds[:, None]).astype(np.float64)
        H[-1] = scores  # one soft model: the fixed-point encoding at work
        start = time.perf_counter()
        first = deployment.call("data-center", "request", "metric-query", {"metric": "sp", "predictions": H})
        network.exchange(first)
        wall = time.perf_counter() - start
        answer = deployment.call("data-center", "answers_received")[0]
        compliance = deployment.parties["compliance"]
        stored = [p for _, p in compliance._free_replies.values()] if compliance.ledger is None else \
            [compliance.ledger.answer_for(entry["query_id"]) for entry in compliance.ledger.entries()]
        state = {"compliance": sum(_payload_bytes(p) for p in stored)}  # the reply kept for a retry (or the ledger)
        if secure:
            state["helper"] = sum(_payload_bytes(p) for _, p in deployment.parties["mpc-helper"]._replies.values())
        transcript.countersign = lambda head, messages: network.countersign(ids, head, messages)
        transcript.close()
    row = {"protocol": name, "n": int(a.size), "m": m, "wall_s": round(wall, 3), "bytes": network.bytes,
           "envelopes": network.messages, "state_bytes": state, "values": answer["values"]}
    if keygen is not None:
        row["keygen_s"] = keygen
        # the public context (public key, Galois keys) travels with a querier's first query only
        row["context_bytes"] = sum(int(v.nbytes) for v in he.keys.public_context().values())
    return row


def cost() -> list[dict[str, Any]]:
    from parley.protocols.crypto.shamir import _field

    _field()  # MPyC's import and the field's set-up are paid once per process, not per query
    rows = []
    for n in SIZES:
        scenario = Scenario.from_toml(scenario_path("adult-observer-honest")).with_values({"dataset.audit_size": n})
        honest = honest_audit(scenario, ("sp",))
        a, y = honest.audit.a, honest.audit.y
        for m in MODELS:
            raw = one_query("raw", honest.scores, a, y, m)
            mpc = one_query("mpc", honest.scores, a, y, m)
            dp = one_query("mpc-dp", honest.scores, a, y, m, epsilon=1.0)
            # tau counts decrypted ciphertexts: a query of m models needs at least its answer's ciphertexts
            he = one_query("he", honest.scores, a, y, m, decryptions=max(64, layout(a.size, m).ciphertexts))
            gap = float(np.max(np.abs(raw["values"] - mpc["values"])))
            he_gap = float(np.max(np.abs(raw["values"] - he["values"])))
            he["max_abs_error"] = he_gap
            for row in (raw, mpc, dp, he):
                row.pop("values")
                row["x_raw_wall"] = round(row["wall_s"] / raw["wall_s"], 1)
                row["x_raw_bytes"] = round(row["bytes"] / raw["bytes"], 2)
                rows.append(row)
            print(f"n={n:>6} m={m:>3}  raw {raw['wall_s']:7.3f}s {raw['bytes']:>11,}B {raw['envelopes']} env | "
                  f"mpc {mpc['wall_s']:7.3f}s {mpc['bytes']:>11,}B {mpc['envelopes']} env "
                  f"state C {mpc['state_bytes']['compliance']:,}B S {mpc['state_bytes']['helper']:,}B | "
                  f"mpc-dp {dp['wall_s']:7.3f}s | max |mpc - raw| = {gap:.1e} | "
                  f"he {he['wall_s']:7.3f}s {he['bytes']:>11,}B {he['envelopes']} env (keys {he['keygen_s']}s) "
                  f"max |he - raw| = {he_gap:.1e}", flush=True)
    return rows


def _metrics(name: str, values: dict[str, Any], out: Path) -> dict[str, Any]:
    scenario = Scenario.from_toml(scenario_path(name)).with_values({"backend": "local", **values})
    return run(scenario, out=out).metrics


def leakage() -> dict[str, Any]:
    exact = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in REVEAL:
            pair: dict[str, dict[str, Any]] = {}
            for p in ("raw", "mpc", "he"):
                try:
                    m = _metrics(name, {"protocol.name": p, "dataset.audit_size": LEAK_N}, Path(tmp) / f"{name}-{p}")
                except AttackError as exc:  # an exact decoder gives up on he's approximate answers
                    pair[p] = {"stopped": str(exc)}
                    continue
                pair[p] = {"leakage": m["leakage"], "queries": m["queries"], "exact_recovery": m["exact_recovery"],
                           "compliance_view_accuracy": m["compliance_view_accuracy"]}
            exact[name] = pair
            print(f"{name:24s} " + " ".join(f"{p} {v.get('leakage', 'stopped')}" for p, v in pair.items()),
                  flush=True)
        noisy: dict[str, list[float]] = {"dp-counts": [], "mpc-dp": []}
        for seed in SEEDS:
            for p in noisy:
                m = _metrics("adult-likelihood", {"protocol.name": p, "protocol.epsilon": 1.0, "seed": seed},
                             Path(tmp) / f"lik-{p}-{seed}")
                noisy[p].append(float(m["leakage"]))
        summary = {p: {"mean": round(float(np.mean(v)), 2), "sd": round(float(np.std(v, ddof=1)), 2), "runs": v}
                   for p, v in noisy.items()}
        print(f"adult-likelihood (eps = 1, n = 100, {len(SEEDS)} seeds): dp-counts {summary['dp-counts']['mean']} "
              f"+- {summary['dp-counts']['sd']}, mpc-dp {summary['mpc-dp']['mean']} +- {summary['mpc-dp']['sd']}")
    return {"exact": exact, "likelihood": summary}


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "all"
    if what not in ("cost", "leakage", "all"):
        print(f"bench_mpc.py: expected cost, leakage or all, got {what!r}", file=sys.stderr)
        return 2
    out: dict[str, Any] = {}
    if what in ("cost", "all"):
        out["cost"] = cost()
    if what in ("leakage", "all"):
        out["leakage"] = leakage()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
