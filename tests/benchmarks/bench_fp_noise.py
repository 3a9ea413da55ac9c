"""Accuracy and time cost of the floating-point-safe samplers: one SP answer at epsilon 1 on Adult (n = 1,000).

For each DP protocol, the median absolute error |released SP - exact SP| of one
answer (m = 1) over ANSWERS answers, with the float-unsafe textbook sampler (the
old default) and the default ``lattice`` sampler (and ``snapping`` for
``laplace``), and the time per answer. The audit set is Adult's (race, 1,000 rows,
seed 0); the model is a logistic regression trained on the training rows without
A. ``smooth-laplace`` needs epsilon < 1 (Thm. 8): it runs at 0.99, delta 1e-6.

Run: ``python tests/benchmarks/bench_fp_noise.py``. The last line is one JSON object.
"""

from __future__ import annotations

import json
import time

import numpy as np
from sklearn.linear_model import LogisticRegression

from parley.protocols import AuditSet, MetricQuery, get_protocol
from parley.protocols.metrics import evaluate, group_sizes
from parley.scenarios.datasets import AdultParams, load_split

ANSWERS = 20_000
CASES = (("laplace", {"epsilon": 1.0}, ("float-unsafe", "lattice", "snapping")),
         ("smooth-cauchy", {"epsilon": 1.0}, ("float-unsafe", "lattice")),
         ("smooth-laplace", {"epsilon": 0.99, "delta": 1e-6}, ("float-unsafe", "lattice")))


def main() -> dict:
    split = load_split(AdultParams(protected="race", audit_size=1000), np.random.default_rng(0))
    model = LogisticRegression(max_iter=1000).fit(split.X_train, split.y_train)
    H = model.predict(split.X_audit).astype(np.float64)[None, :]
    audit = AuditSet(a=split.a_audit, y=split.y_audit)
    exact = float(evaluate("sp", H, audit.a, audit.y)[0])
    query = MetricQuery(metric="sp", predictions=H, query_id="bench")
    out: dict = {"n": int(audit.n), "groups": list(group_sizes(audit.a)), "exact_sp": exact, "answers": ANSWERS}
    for name, params, samplers in CASES:
        cls = get_protocol(name)
        for sampler in samplers:
            protocol = cls(cls.Params(**params, sampler=sampler))
            rng = np.random.default_rng(1)
            start = time.perf_counter()
            values = np.array([protocol.answer(query, audit, rng)["values"][0] for _ in range(ANSWERS)])
            seconds = time.perf_counter() - start
            out[f"{name}/{sampler}"] = {"median_abs_error": round(float(np.median(np.abs(values - exact))), 4),
                                        "us_per_answer": round(1e6 * seconds / ANSWERS, 1)}
            print(name, sampler, out[f"{name}/{sampler}"], flush=True)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
