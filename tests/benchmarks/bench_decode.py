"""Speed of parley's fastest exact decoder vs the paper's l1 LP (Alg. 2), on the same probes.

Instance: the query-leakage paper's Alg. 2 (Hamman, Chen, Dutta, FAccT 2023).
A realistic base model h0 (logistic regression fitted with numpy on a synthetic
training set whose features shift with the protected attribute, so its scores
are biased and pile up near 0 and 1) is perturbed m times by U(-b, b), b = 0.1,
and clipped to [0, 1]. Exact answers sp = H v. Same seeded instance for every
decoder.

Timed: :func:`parley.parties.attacks.decoders.sp_decoders.decode_l1` (basis pursuit, HiGHS; run
once, capped by ``time_limit`` at n = 10,000) and the fastest certified exact
decoder (AMP; the box/count LP is also timed at n = 1,000 for reference).
``speedup`` = l1 time / fastest time. When the l1 LP hits its cap, its time is
the cap (plus setup) and the speedup is a lower bound.

End to end (run first): the ``adult-reveal-precision`` scenario on synthetic
data with n = 100,000 (N0 = 10,000) through the Ray actors, design, queries
and decode included; wall time and the peak proportional set size of every
process on the machine (targets: 120 s, 4 GiB).

Run: ``python tests/benchmarks/bench_decode.py``. Progress goes to stderr;
the last line on stdout is one JSON object. About 7 minutes on 2 cores and
~12 GB of memory, nearly all of it HiGHS on the n = 10,000 l1 LP.
"""

from __future__ import annotations

import glob
import json
import statistics
import sys
import threading
import time

import numpy as np

from parley.parties.attacks.decoders.sp_decoders import decode_amp, decode_box_count, decode_l1

B = 0.1
SEED = 20230612
CASES = [  # (label, n, m, N0, l1 time limit in s)
    ("n1000", 1_000, 400, 100, None),
    ("n10000", 10_000, 4_000, 1_000, 300.0),
]
AMP_REPEATS = 5


def log(msg: str) -> None:
    print(f"[bench_decode] {msg}", file=sys.stderr, flush=True)


def _sigmoid(t: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * t))


def _features(rng: np.random.Generator, a: np.ndarray, d: int = 8) -> np.ndarray:
    """Gaussian features; the disadvantaged group (a = 0) is shifted, as in biased real data."""
    X = rng.normal(size=(a.size, d))
    X[a == 0, :3] -= 0.6
    return np.hstack([X, np.ones((a.size, 1))])


def base_model(rng: np.random.Generator, d: int = 8, n_train: int = 5_000) -> np.ndarray:
    """Logistic-regression weights fitted by Newton's method (IRLS) on a synthetic training set."""
    w_true = np.concatenate([rng.normal(scale=1.2, size=d), [-0.3]])
    a_train = (rng.random(n_train) < 0.8).astype(np.int8)
    X = _features(rng, a_train, d)
    y = (rng.random(n_train) < _sigmoid(X @ w_true)).astype(np.float64)
    w = np.zeros(d + 1)
    for _ in range(25):
        p = _sigmoid(X @ w)
        grad = X.T @ (y - p) - 1e-3 * w
        hess = (X * (p * (1 - p))[:, None]).T @ X + 1e-3 * np.eye(d + 1)
        step = np.linalg.solve(hess, grad)
        w += step
        if np.max(np.abs(step)) < 1e-10:
            break
    return w


def instance(n: int, m: int, n0: int, seed: int):
    rng = np.random.default_rng(seed)
    w = base_model(rng)
    a = np.ones(n, dtype=np.int8)
    a[rng.choice(n, n0, replace=False)] = 0
    h0 = _sigmoid(_features(rng, a) @ w)                       # the data center's scores on the audit set
    H = h0 + rng.uniform(-B, B, size=(m, n))                   # Alg. 2: bounded perturbations ...
    np.clip(H, 0.0, 1.0, out=H)                                # ... clipped to [0, 1]
    v = np.where(a == 1, 1.0 / (n - n0), -1.0 / n0)
    return H, H @ v, a, h0


def warm_up() -> None:
    H, sp, _, _ = instance(60, 40, 6, 0)
    decode_l1(H, sp, 6, 54)
    decode_amp(H, sp, 6, 54)


def run_case(label: str, n: int, m: int, n0: int, cap: float | None) -> dict:
    t = time.perf_counter()
    H, sp, a, h0 = instance(n, m, n0, SEED + n)
    log(f"{label}: instance n={n} m={m} N0={n0} built in {time.perf_counter() - t:.1f}s "
        f"(base scores: {np.mean(h0 < B):.0%} below b, {np.mean(h0 > 1 - B):.0%} above 1-b)")

    amp_runs = []
    for _ in range(AMP_REPEATS):
        amp_runs.append(decode_amp(H, sp, n0, n - n0))
    amp = amp_runs[-1]
    amp_s = statistics.median(d.seconds for d in amp_runs)
    amp_exact = bool(np.array_equal(amp.a_hat, a))
    log(f"{label}: amp {amp_s:.4f}s (median of {AMP_REPEATS}), certified={amp.certified}, exact={amp_exact}, "
        f"iterations={amp.info['iterations']}")

    out: dict = {"m": m, "N0": n0}
    candidates = []
    if amp.certified and amp_exact:
        candidates.append(("amp", amp_s))
    if cap is None:  # the box/count LP for reference; at n = 10,000 it is as slow as l1
        box = decode_box_count(H, sp, n0, n - n0)
        box_exact = bool(np.array_equal(box.a_hat, a))
        log(f"{label}: box-count LP {box.seconds:.3f}s, certified={box.certified}, exact={box_exact}")
        out["box_count_s"] = round(box.seconds, 4)
        if box.certified and box_exact:
            candidates.append(("box-count", box.seconds))

    log(f"{label}: l1 LP (HiGHS){'' if cap is None else f', time limit {cap:.0f}s'} ...")
    t = time.perf_counter()
    l1 = decode_l1(H, sp, n0, n - n0, time_limit=cap)
    l1_s = time.perf_counter() - t
    l1_exact = bool(np.array_equal(l1.a_hat, a))
    hit_cap = l1.info["status"] == 1
    log(f"{label}: l1 {l1_s:.2f}s, status={l1.info['status']} ({l1.info['message']}), "
        f"certified={l1.certified}, exact={l1_exact}")

    fastest, fastest_s = min(candidates, key=lambda c: c[1]) if candidates else ("none", float("nan"))
    out.update({
        "l1_s": round(l1_s, 3),
        "l1_exact": l1_exact,
        "l1_hit_time_limit": hit_cap,
        "fastest": fastest,
        "fastest_s": round(fastest_s, 5),
        "speedup": round(l1_s / fastest_s, 1) if candidates else None,
        "speedup_is_lower_bound": hit_cap,
        "both_exact": bool(l1_exact and l1.certified and candidates),
    })
    if cap is not None:
        out["l1_time_limit_s"] = cap
    log(f"{label}: speedup {out['speedup']}x ({fastest} vs l1)")
    return out


def _total_pss_mib() -> float:
    """Proportional set size of every process on the machine (shared memory counted once), MiB."""
    total = 0
    for path in glob.glob("/proc/[0-9]*/smaps_rollup"):
        try:
            with open(path) as fh:
                total += sum(int(line.split()[1]) for line in fh if line.startswith("Pss:"))
        except OSError:  # the process ended meanwhile
            pass
    return total / 1024.0


def end_to_end(n: int = 100_000, n0: int = 10_000) -> dict:
    """Exact recovery through the Ray actors (design, queries, decode) at n individuals, with peak memory."""
    import tempfile

    from parley.scenarios.catalog import scenario_path
    from parley.scenarios.runner import run
    from parley.scenarios.spec import Scenario

    scenario = Scenario.from_toml(scenario_path("adult-reveal-precision")).with_values({
        "name": f"reveal-precision-{n}", "dataset.name": "synthetic", "dataset.audit_size": n,
        "dataset.minority": n0, "dataset.train_size": 2000})
    idle = _total_pss_mib()
    peak = [idle]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.25):
            peak[0] = max(peak[0], _total_pss_mib())

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        result = run(scenario, out=out)
    wall = time.perf_counter() - start
    done.set()
    watcher.join()
    m = result.metrics
    print(f"end to end n={n}: exact={m['exact_recovery']} queries={m['queries']} in {wall:.1f} s "
          f"(Ray start included); peak memory of all processes {peak[0]:.0f} MiB "
          f"({peak[0] - idle:.0f} MiB above the machine before the run)", file=sys.stderr)
    return {"n": n, "N0": n0, "exact_recovery": m["exact_recovery"], "queries": m["queries"],
            "wall_s": round(wall, 1), "target_s": 120, "peak_pss_mib": round(peak[0]),
            "peak_pss_above_idle_mib": round(peak[0] - idle), "target_mib": 4096,
            "transcript_bytes": m["bytes"]}


def main() -> None:
    e2e = end_to_end()  # first, before the LPs grow this process
    warm_up()
    result: dict = {"benchmark": "decode", "b": B, "seed": SEED}
    for label, n, m, n0, cap in CASES:
        result[label] = run_case(label, n, m, n0, cap)
    result["speedup"] = result["n1000"]["speedup"]
    result["end_to_end"] = e2e
    print(json.dumps(result))


if __name__ == "__main__":
    main()
