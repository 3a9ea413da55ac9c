"""Attribute-Conceal against its baselines: answer error and leakage at equal epsilon and m.

* error: median |released SP - exact SP| of ``smooth-cauchy`` divided by ``laplace``'s, at equal
  epsilon and m, on audit sets of n = 100 (m = 40) and n = 1,000 (m = 400) with a 10 % minority
  and Alg. 2 probes (b = 0.1); several seeds.
* leakage: the paper's l1 decoder and parley's least-absolute-deviation decoder on the same noisy
  answers, for each DP protocol, beside the per-individual bound 100 e^eps / (1 + e^eps).

Protocols and decoders are called directly (no actors): this measures the mechanisms.
Run: ``python tests/benchmarks/bench_dp.py``. The last line is one JSON object.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np

from parley.parties.attacks.decoders.sp_decoders import decode_l1, decode_robust
from parley.parties.attacks.query_leakage.probes import uniform_perturbations
from parley.parties.attacks.scoring import leakage
from parley.protocols import get_protocol
from parley.protocols.base import AuditSet, MetricQuery
from parley.protocols.metrics import statistical_parity_difference

SEEDS = range(5)
CASES = {"n100": (100, 40), "n1000": (1000, 400)}
EPSILONS = (5.0, 10.0, 100.0)


def _instance(n: int, m: int, seed: int):
    rng = np.random.default_rng(seed)
    a = np.ones(n, dtype=np.int8)
    a[rng.choice(n, n // 10, replace=False)] = 0
    H = uniform_perturbations(rng.random(n), m, 0.1, rng)
    H.flags.writeable = False
    return a, MetricQuery(metric="sp", predictions=H, query_id=f"bench-{seed}"), rng


def _protocol(name: str, epsilon: float):
    cls = get_protocol(name)
    params = {"epsilon": epsilon} if name != "smooth-laplace" else {"epsilon": min(epsilon, 0.99), "delta": 1e-5}
    return cls(cls.Params(**params))


def _answers(name: str, epsilon: float, a, query, rng):
    audit = AuditSet(a=a, y=np.ones_like(a))
    return np.asarray(_protocol(name, epsilon).answer(query, audit, rng)["values"])


def error_ratio(n: int, m: int, epsilon: float) -> dict:
    errors = {}
    for name in ("smooth-cauchy", "laplace"):
        per = []
        for seed in SEEDS:
            a, query, rng = _instance(n, m, seed)
            per.append(np.abs(_answers(name, epsilon, a, query, rng)
                              - statistical_parity_difference(query.predictions, a)))
        errors[name] = float(np.median(np.concatenate(per)))
    return {"epsilon": epsilon, "m": m, "median_abs_err_smooth_cauchy": errors["smooth-cauchy"],
            "median_abs_err_laplace": errors["laplace"], "ratio": errors["smooth-cauchy"] / errors["laplace"]}


def leakages(n: int, m: int, epsilon: float) -> dict:
    out = {}
    for name in ("laplace", "smooth-cauchy", "smooth-laplace"):
        l1, robust = [], []
        for seed in SEEDS:
            a, query, rng = _instance(n, m, seed)
            sp = _answers(name, epsilon, a, query, rng)
            n0 = int((a == 0).sum())
            for decoder, sink in ((decode_l1, l1), (decode_robust, robust)):
                dec = decoder(query.predictions, sp, n0, n - n0)
                sink.append(leakage(a, dec.a_hat, decided=dec.decided))
        eps = min(epsilon, 0.99) if name == "smooth-laplace" else epsilon
        out[name] = {"epsilon": eps, "paper_l1": round(float(np.mean(l1)), 2),
                     "parley_robust": round(float(np.mean(robust)), 2),
                     "bound": round(100.0 / (1.0 + math.exp(-eps)), 2)}
    return out


def main() -> None:
    result: dict = {"benchmark": "dp"}
    for label, (n, m) in CASES.items():
        ratios = [error_ratio(n, m, eps) for eps in EPSILONS]
        for r in ratios:
            print(f"{label} eps={r['epsilon']:g} m={m}: median |SP err| "
                  f"smooth-cauchy {r['median_abs_err_smooth_cauchy']:.3g}"
                  f" vs laplace {r['median_abs_err_laplace']:.3g} -> x{r['ratio']:.3g}", file=sys.stderr)
        leak = leakages(n, m, 10.0)
        for name, v in leak.items():
            print(f"{label} {name} eps={v['epsilon']:g}: leakage l1 {v['paper_l1']} %, robust {v['parley_robust']} %, "
                  f"bound {v['bound']} %", file=sys.stderr)
        result[label] = {"n": n, "m": m, "error_ratio": ratios, "leakage_at_eps10": leak}
    result["ratio_eps10"] = {label: next(r["ratio"] for r in result[label]["error_ratio"] if r["epsilon"] == 10.0)
                             for label in CASES}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
