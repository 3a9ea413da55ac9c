"""Count-level DP answers (``dp-counts``) against the metric-level DP protocols on Adult.

Two worlds, each built exactly as its run builds it (the base model trained by the real data center
from the run's streams): the honest data center of ``adult-observer-honest`` (Adult, A = race, audit
n = 1,000, seed 0; the issue's goal figures) and the metric-query rows of ``parley compare --dataset
adult`` (audit n = 500, the seed of repeat 0; where the comparison measures its utility). The data center
asks for the SP, EO and PE of its base model. Each protocol answers that query ``RELEASES`` times from
seeded generators; the figure is the median |answer - exact| over the releases, all protocols in one run
on the same input:

* one model, epsilon in ``EPSILONS``: ``dp-counts`` (discrete Laplace: the pair (K, Z) of group 1's sum
  and its complement), the centred release it made before (centred sum and size, computed here by giving
  every slice the centred release), the plain count release before that (group-1 sum and size, Laplace
  scales 1.5/epsilon and 3/epsilon), ``laplace`` and ``smooth-cauchy`` (SP only); at epsilon >= 0.5 the
  Gaussian variant (centred, delta = 1e-6) beside the Gaussian pair it does not use (continuous N(0,
  1/(2 rho)) on K and Z, the same post-processing); beside three references:
  - the *count-level optimum* of the earlier benchmark: Laplace noise of scale 1/epsilon on the group-1
    sum alone, as if the group sizes were free, median SP error ln 2 (1/N0 + 1/N1)/epsilon;
  - *local Laplace*: Laplace noise of scale LS/epsilon added to the exact metric, LS its local
    sensitivity at this audit set (the largest move one flip of A makes), median ln 2 LS/epsilon. It is
    not private (LS depends on A); it is what a count release achieves when it knows the ideal centre
    c* = (mean_1/N_1 + mean_0/N_0)/(1/N_1 + 1/N_0) (private), spends nothing on the sizes and uses
    Laplace noise;
  - the *chain bound* (SP, epsilon < ln 3): x_k (k = -K..K) moves k L accepted people from group 0 to
    group 1 (k < 0: the other way), SP_k increasing with gaps >= Delta_L. If an epsilon-DP mechanism
    had median error t < Delta_L/2 at every x_k, the intervals [SP_k - t, SP_k + t] would be disjoint
    and, by group privacy (x_k is k L flips from x_0), P(M(x_0) in interval k) >= e^(-|k| L epsilon)/2;
    their sum exceeds 1 once sum_{|k|<=K} e^(-|k| L epsilon) > 2. So every epsilon-DP mechanism has
    median error >= Delta_L/2 on one of these audit sets, all within K L flips of this one (the best L
    is printed): smooth-cauchy's error over that bound caps what any mechanism could gain over it there
    (at epsilon >= ln 3 the argument gives nothing: the geometric mechanism then answers an integer
    query exactly with probability >= 1/2).
* 2 to 10 models (the base model's scores at thresholds from the 0.5 to the 0.9 quantile), epsilon = 1:
  ``dp-counts`` (the centred release, shared size) against per-model pairs, continuous Laplace m/epsilon
  on every K_i and Z_i (l1 sensitivity m of the 2m coordinates), on both inputs.
* 100 models (the base model's scores at 100 thresholds) at (epsilon, delta) = (1, 1e-6): the
  ``dp-counts`` Gaussian variant (discrete Gaussian, zCDP calibrated by dp-accounting) against the
  Gaussian mechanism at the same joint l2 sensitivity sqrt(m + 1): continuous Gaussian noise of the
  analytic Gaussian's sigma (Balle & Wang 2018, dp-accounting ``get_sigma_gaussian``) on every count,
  the same post-processing; and the pure-DP ``dp-counts`` at epsilon = 1.

* the compare's ratio: smooth-cauchy's median SP error over dp-counts' on the compare's own query
  and seeds (what ``parley compare`` reports), with a 95 % bootstrap interval of that ratio; beside it
  the median, mean and 90th percentile of dp-counts' error (the pair's noise on the lattice of the values
  K and Z can take; for hard labels the geometric mechanism) and of the fine lattice (the pair before).

In the one-model rows ``fine_lattice`` is the pair with its noise on the fine lattice (the release before).

Protocols are called directly (no actors): this measures the mechanisms.
Run: ``python -m tests.benchmarks.bench_count_dp [releases]`` (repository root). The last line is one JSON object.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from parley.protocols import get_protocol
from parley.protocols.base import AuditSet, MetricQuery
from parley.protocols.mechanisms.count_dp import (
    PREDICTION_BITS,
    metrics_from_statistics,
    pair_step,
    rho_for,
    slices_of,
    statistics,
    support_steps,
)
from parley.protocols.metrics import evaluate
from parley.scenarios.catalog import scenario_path
from parley.scenarios.compare.plan import plan
from parley.scenarios.compare.utility import honest_audit, release_errors
from parley.scenarios.spec import Scenario
from parley.scenarios.study.plan import repeat_seed

RELEASES = 400
EPSILONS = (0.1, 0.5, 1.0, 4.0)
METRICS = ("sp", "eo", "pe")
MANY = 100
FEW = (2, 3, 4, 6, 10)
DELTA = 1e-6


def honest_world() -> tuple[np.ndarray, AuditSet, float]:
    """The base model's scores on the audit set, the audit set and the threshold, as ``adult-observer-honest``
    builds them (:func:`parley.scenarios.compare.utility.honest_audit`: the run's streams, the real data center)."""
    scenario = Scenario.from_toml(scenario_path("adult-observer-honest"))
    honest = honest_audit(scenario)
    return honest.scores, honest.audit, scenario.model.threshold


def compare_world() -> tuple[np.ndarray, AuditSet, float]:
    """The same for the metric-query rows of ``parley compare --dataset adult`` (repeat 0 of seed 0)."""
    p = plan("adult", rows=("dp-counts ε=1",), attacks=("double-query",))
    scenario = Scenario.from_dict({**next(iter(p.cells.values())), "seed": repeat_seed(0, 0)})
    honest = honest_audit(scenario, ("sp",))
    return honest.scores, honest.audit, scenario.model.threshold


def _gap(k: float, n1: float, t: float, n: float) -> float:
    return k / n1 - (t - k) / (n - n1)


def local_sensitivity(h: np.ndarray, a: np.ndarray) -> float:
    """The largest |gap(x') - gap(x)| over the neighbours x' of x (one a_j flipped), on one slice; exact."""
    k, n1, t, n = float(h[a == 1].sum()), float((a == 1).sum()), float(h.sum()), float(h.size)
    base = _gap(k, n1, t, n)
    moves = [(-r, -1.0) for r in np.unique(h[a == 1])] + [(r, 1.0) for r in np.unique(h[a == 0])]
    return max(abs(_gap(k + dk, n1 + dn, t, n) - base) for dk, dn in moves if 0 < n1 + dn < n)


def chain_bound(h: np.ndarray, a: np.ndarray, epsilon: float, most: int = 60) -> dict[str, Any] | None:
    """The chain argument's bound (module docstring), best over the step L: links of L flips, K links each way.

    With L flips per link, group privacy gives e^(-|k| L epsilon): the argument needs
    1 + 2 sum_{k=1..K} e^(-k L epsilon) > 2 (so L epsilon < ln 3), and bounds the median error by
    Delta_L/2, Delta_L the least SP gap between consecutive links. At most ``most`` flips each way, and
    no more than the accepted people of either group; None when no L works (epsilon >= ln 3).
    """
    k1, n1, t, n = float(h[a == 1].sum()), int((a == 1).sum()), float(h.sum()), int(h.size)
    reach = min(most, int((h[a == 0] == 1).sum()), int((h[a == 1] == 1).sum()), n1 - 1, n - n1 - 1)
    best: dict[str, Any] | None = None
    for L in range(1, reach + 1):
        K = next((K for K in range(1, reach // L + 1)
                  if 1 + 2 * sum(math.exp(-k * L * epsilon) for k in range(1, K + 1)) > 2), None)
        if K is None:
            continue
        sp = [_gap(k1 + k * L, n1 + k * L, t, n) for k in range(-K, K + 1)]
        delta = min(b - a_ for a_, b in zip(sp, sp[1:], strict=False))
        if best is None or delta / 2 > best["bound"]:
            best = {"L": L, "K": K, "Delta": delta, "bound": delta / 2}
    return best


def _ratio(over: float, under: float) -> float | None:
    """over / under; None when under is 0 (hard labels at a large epsilon: most answers exact)."""
    return over / under if under > 0 else None


def _protocol(name: str, **params: Any) -> Any:
    cls = get_protocol(name)
    return cls(cls.Params(**params))


def median_error(protocol, query: MetricQuery, audit: AuditSet, releases: int, seed: int) -> float:
    return float(np.median(release_errors(protocol, query, audit, releases, seed)))


def continuous_counts(metric: str, H: np.ndarray, audit: AuditSet, draw: Callable[..., np.ndarray], releases: int,
                      seed: int) -> float:
    """Median error of continuous noise ``draw(rng, shape)`` on the same counts, post-processed like dp-counts."""
    masks = slices_of(metric, audit.y)
    K, N, T, sizes = statistics(H, audit.a, masks)
    unit = float(1 << PREDICTION_BITS)
    k, t = np.array(K, float) / unit, np.array(T, float) / unit
    exact = evaluate(metric, H, audit.a, audit.y)
    errors = []
    for r in range(releases):
        rng = np.random.default_rng([seed, r])
        noisy_k = k + draw(rng, "sum", k.shape)
        noisy_n = np.array(N, float) + draw(rng, "size", (len(N),))
        errors.append(np.abs(metrics_from_statistics(metric, noisy_k, noisy_n, t, sizes) - exact))
    return float(np.median(np.concatenate(errors)))


def plain_draw(epsilon: float) -> Callable[..., np.ndarray]:
    """The plain count release before the centring: Laplace(1.5/eps) on the group-1 sum, DLap(3/eps) on the size."""
    def draw(rng: np.random.Generator, key: str, shape: tuple[int, ...]) -> np.ndarray:
        if key == "sum":
            return rng.laplace(0.0, 1.5 / epsilon, shape)
        p = 1.0 - math.exp(-epsilon / 3.0)  # discrete Laplace = difference of two geometric variables
        return (rng.geometric(p, shape) - rng.geometric(p, shape)).astype(np.float64)
    return draw


def centred_error(epsilon: float, query: MetricQuery, audit: AuditSet, releases: int, seed: int,
                  **params: Any) -> float:
    """Median error of ``dp-counts``' centred release (centred sums and one size) on every slice, whatever m: the
    release a one-model Laplace query got before the pair (K, Z), kept as the reference."""
    from parley.protocols.mechanisms import count_dp

    rule = count_dp.release_kinds
    count_dp.release_kinds = lambda m, p, sens: [count_dp.CENTRED] * len(sens)
    try:
        return median_error(_protocol("dp-counts", epsilon=epsilon, **params), query, audit, releases, seed)
    finally:
        count_dp.release_kinds = rule


def pair_counts(metric: str, H: np.ndarray, audit: AuditSet, family: str, scale: float, releases: int,
                seed: int) -> float:
    """Median error of per-model pairs: continuous noise of ``scale`` (Laplace b or Gaussian sigma, prediction
    units) on every model's K_i and Z_i = N - K_i, N_i = K_i + Z_i, the same post-processing as dp-counts.

    The pair release ``dp-counts`` does not build (Gaussian, or m > 1); measured to say why.
    """
    masks = slices_of(metric, audit.y)
    K, N, T, sizes = statistics(H, audit.a, masks)
    unit = float(1 << PREDICTION_BITS)
    k, t = np.array(K, float) / unit, np.array(T, float) / unit
    z = np.array(N, float)[:, None] - k
    exact = evaluate(metric, H, audit.a, audit.y)
    errors = []
    for r in range(releases):
        rng = np.random.default_rng([seed, r])
        noise = (rng.laplace if family == "laplace" else rng.normal)(0.0, scale, (2, *k.shape))
        noisy_k, noisy_z = k + noise[0], z + noise[1]
        values = [metrics_from_statistics(metric, noisy_k[:, i:i + 1], noisy_k[:, i] + noisy_z[:, i], t[:, i:i + 1],
                                          sizes)[0] for i in range(H.shape[0])]
        errors.append(np.abs(np.array(values) - exact))
    return float(np.median(np.concatenate(errors)))


def one_model(H: np.ndarray, audit: AuditSet, releases: int, world: str) -> list[dict[str, Any]]:
    rows = []
    for epsilon in EPSILONS:
        for metric in METRICS:
            query = MetricQuery(metric=metric, predictions=H, query_id="bench")
            masks = slices_of(metric, audit.y)
            n1 = int((masks[0] & (audit.a == 1)).sum())
            n0 = int(masks[0].sum()) - n1
            row: dict[str, Any] = {"world": world, "n": audit.n, "epsilon": epsilon, "metric": metric, "N0": n0,
                                   "N1": n1}
            row["dp_counts"] = median_error(_protocol("dp-counts", epsilon=epsilon), query, audit, releases, 1)
            row["fine_lattice"] = float(np.median(fine_lattice_errors(_protocol("dp-counts", epsilon=epsilon), query,
                                                                      audit, releases, 1)))
            row["dp_counts_exact"] = exact_pair_spread(metric, H, audit, epsilon)
            row["optimise_mean_exact"] = exact_pair_spread(metric, H, audit, epsilon, "mean")
            row["fine_lattice_400k"] = fine_pair_spread(metric, H, audit, epsilon)
            row["centred"] = centred_error(epsilon, query, audit, releases, 1)
            row["centred_over_dp_counts"] = _ratio(row["centred"], row["dp_counts"])
            if epsilon >= 0.5:  # the Gaussian variant: its centred release against the pair it does not use
                rho = rho_for(epsilon, DELTA)
                row["gaussian_centred"] = median_error(_protocol("dp-counts", epsilon=epsilon, noise="gaussian",
                                                                 delta=DELTA), query, audit, releases, 9)
                row["gaussian_pair"] = pair_counts(metric, H, audit, "gaussian", math.sqrt(1 / (2 * rho)), releases,
                                                   10)
            row["plain_counts"] = continuous_counts(metric, H, audit, plain_draw(epsilon), releases, 8)
            row["laplace"] = median_error(_protocol("laplace", epsilon=epsilon), query, audit, releases, 2)
            row["smooth_cauchy"] = (median_error(_protocol("smooth-cauchy", epsilon=epsilon), query, audit,
                                                 releases, 3) if metric == "sp" else None)
            row["smooth_cauchy_exact"] = cauchy_median(epsilon, query, audit) if metric == "sp" else None
            row["count_optimum"] = math.log(2) * (1 / n0 + 1 / n1) / epsilon  # Laplace(1/eps) on the sum alone
            h, a = H[0, masks[0]], audit.a[masks[0]]
            row["local_laplace"] = math.log(2) * local_sensitivity(h, a) / epsilon
            chain = chain_bound(h, a, epsilon) if metric == "sp" else None
            row["chain_bound"] = None if chain is None else chain["bound"]
            row["chain_L_K"] = None if chain is None else [chain["L"], chain["K"]]
            row["dp_counts_over_optimum"] = row["dp_counts"] / row["count_optimum"]
            row["dp_counts_over_local_laplace"] = row["dp_counts"] / row["local_laplace"]
            row["plain_over_dp_counts"] = _ratio(row["plain_counts"], row["dp_counts"])
            row["laplace_over_dp_counts"] = _ratio(row["laplace"], row["dp_counts"])
            if row["smooth_cauchy"] is not None:
                row["smooth_cauchy_over_dp_counts"] = _ratio(row["smooth_cauchy"], row["dp_counts"])
                row["smooth_cauchy_over_local_laplace"] = row["smooth_cauchy"] / row["local_laplace"]
                row["smooth_cauchy_over_chain_bound"] = (None if chain is None
                                                         else row["smooth_cauchy"] / chain["bound"])
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def many_models(scores: np.ndarray, audit: AuditSet, releases: int) -> list[dict[str, Any]]:
    from dp_accounting import get_sigma_gaussian

    thresholds = np.quantile(scores, np.linspace(0.5, 0.99, MANY))
    H = (scores[None, :] >= thresholds[:, None]).astype(np.float64)
    sigma = get_sigma_gaussian(1.0, DELTA) * math.sqrt(MANY + 1)  # analytic Gaussian at l2 sensitivity sqrt(m+1)
    rows = []
    for metric in METRICS:
        query = MetricQuery(metric=metric, predictions=H, query_id="bench-many")
        row: dict[str, Any] = {"m": MANY, "epsilon": 1.0, "delta": DELTA, "metric": metric}
        row["dp_counts_gaussian"] = median_error(_protocol("dp-counts", epsilon=1.0, noise="gaussian", delta=DELTA),
                                                 query, audit, releases, 4)
        row["gaussian_mechanism"] = continuous_counts(metric, H, audit,
                                                      lambda rng, _key, shape: rng.normal(0.0, sigma, shape),
                                                      releases, 5)
        row["dp_counts_laplace"] = median_error(_protocol("dp-counts", epsilon=1.0), query, audit, releases, 6)
        row["laplace"] = median_error(_protocol("laplace", epsilon=1.0), query, audit, releases, 7)
        row["gaussian_ratio"] = row["dp_counts_gaussian"] / row["gaussian_mechanism"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def few_models(scores: np.ndarray, audit: AuditSet, releases: int, world: str) -> list[dict[str, Any]]:
    """m = 2..10 models (scores at thresholds 0.5..0.9 quantiles), epsilon = 1, Laplace: the centred release
    dp-counts makes for m > 1 against per-model pairs at DLap(m/epsilon) on every K_i and Z_i."""
    rows = []
    for m in FEW:
        thresholds = np.quantile(scores, np.linspace(0.5, 0.9, m))
        H = (scores[None, :] >= thresholds[:, None]).astype(np.float64)
        for metric in METRICS:
            query = MetricQuery(metric=metric, predictions=H, query_id="bench-few")
            row: dict[str, Any] = {"world": world, "m": m, "epsilon": 1.0, "metric": metric}
            row["dp_counts"] = median_error(_protocol("dp-counts", epsilon=1.0), query, audit, releases, 11)
            row["model_pairs"] = pair_counts(metric, H, audit, "laplace", m / 1.0, releases, 12)
            row["pairs_over_dp_counts"] = row["model_pairs"] / row["dp_counts"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def fine_lattice_errors(protocol, query: MetricQuery, audit: AuditSet, releases: int, seed: int) -> np.ndarray:
    """|error| of ``dp-counts`` with the pair's noise on the fine lattice (step 2^-B, nearly continuous Laplace
    1/epsilon: the release before the lattice step), the protocol's own code with the support step set to 1."""
    from parley.protocols.mechanisms import count_dp

    rule = count_dp.support_steps
    count_dp.support_steps = lambda predictions, masks: [1] * len(masks)
    try:
        return release_errors(protocol, query, audit, releases, seed)
    finally:
        count_dp.support_steps = rule


def cauchy_median(epsilon: float, query: MetricQuery, audit: AuditSet) -> float | None:
    """smooth-cauchy's exact median |error|: its noise scale 6 S / epsilon (the median of |Cauchy| is its scale),
    while the clamp to [-1, 1] does not reach it (scale < 1 - |metric|); None when it does (small epsilon)."""
    scale = float(_protocol("smooth-cauchy", epsilon=epsilon).noise_scale(query, audit))
    return scale if scale < 1 - abs(float(evaluate(query.metric, query.predictions, audit.a, audit.y)[0])) else None


def _pair_errors(metric: str, H: np.ndarray, audit: AuditSet, y1: np.ndarray, y2: np.ndarray) -> np.ndarray:
    """|error| of one-slice metrics from the pair (K + y1, Z + y2), noise in prediction units, vectorised:
    ``metrics_from_statistics``'s post-processing (checked against it on the first points)."""
    masks = slices_of(metric, audit.y)
    (k_exact,), n1, (t,), n = (v[0] for v in statistics(H, audit.a, masks))
    unit = float(1 << PREDICTION_BITS)
    k = k_exact / unit + y1
    size = n1 + y1 + y2  # N = (K + Z) / 2^B
    clamped = np.clip(size, 1.0, n - 1.0)
    gaps = np.clip(np.clip(k / clamped, 0, 1) - np.clip((t / unit - k) / (n - clamped), 0, 1), -1, 1)
    for i in range(3):
        assert gaps[i] == metrics_from_statistics(metric, [[k[i]]], [size[i]], [[t / unit]], [n])[0]
    return np.abs(gaps - evaluate(metric, H, audit.a, audit.y)[0])


def fine_pair_spread(metric: str, H: np.ndarray, audit: AuditSet, epsilon: float, draws: int = 400_000
                     ) -> dict[str, float]:
    """Median, mean and 90th percentile of the pair's |error| on the fine lattice (the release before), from
    ``draws`` continuous Laplace(1/epsilon) draws per noise (the 2^-20 lattice is continuous at this scale):
    the reference the exact lattice figures are compared with."""
    noise = np.random.default_rng(5).laplace(0.0, 1.0 / epsilon, (2, draws))
    errors = _pair_errors(metric, H, audit, noise[0], noise[1])
    return {"median": float(np.median(errors)), "mean": float(errors.mean()), "p90": float(np.quantile(errors, 0.9))}


def exact_pair_spread(metric: str, H: np.ndarray, audit: AuditSet, epsilon: float, optimise: str = "median"
                      ) -> dict[str, float] | None:
    """The exact median, mean and 90th percentile of the one-model pair's |error| (one-slice metrics), by
    enumerating both noises on the step's lattice out to e^-45 of their mass; None when that takes more than
    2,001 points a noise (a fine lattice: nearly continuous, its sampled median is steady).

    A lattice release's error takes a few discrete values; the median of 400 draws can then land on either side
    of an atom (``optimise = "mean"`` at epsilon = 1 on the compare's input: 0.0085 or 0.0130 by the seed alone),
    so the tables quote these exact figures beside the sampled ones.
    """
    unit = 1 << PREDICTION_BITS
    step = pair_step(epsilon, support_steps(H, slices_of(metric, audit.y))[0], optimise)
    alpha = math.exp(-epsilon * step / unit)
    reach = int(45 / (1 - alpha)) + 2
    if reach > 1000:
        return None
    ys = np.arange(-reach, reach + 1)
    p = (1 - alpha) / (1 + alpha) * alpha ** np.abs(ys).astype(float)
    y1, y2 = np.meshgrid(ys * step, ys * step, indexing="ij")
    errors = _pair_errors(metric, H, audit, y1.ravel() / unit, y2.ravel() / unit)
    weights = np.outer(p, p).ravel()
    order = np.argsort(errors, kind="stable")
    cdf = np.cumsum(weights[order])
    return {"median": float(errors[order][np.searchsorted(cdf, 0.5)]), "mean": float(errors @ weights),
            "p90": float(errors[order][np.searchsorted(cdf, 0.9)]), "step": step / unit}


def _spread(errors: np.ndarray) -> dict[str, float]:
    return {"median": float(np.median(errors)), "mean": float(np.mean(errors)),
            "p90": float(np.quantile(errors, 0.9)), "exact_share": float(np.mean(errors < 1e-12))}


def compare_ratio(releases: int, resamples: int = 4000) -> list[dict[str, Any]]:
    """smooth-cauchy's median SP error over dp-counts', with the compare's own query and seeds, and its 95 %
    bootstrap interval (each protocol's releases resampled with replacement, ``resamples`` times, seed 12345);
    beside it the spread (median, mean, 90th percentile, share of exact answers) of dp-counts' errors (the pair's
    noise on its lattice) and of the fine lattice (the release before, :func:`fine_lattice_errors`), with the same
    seeds, the same ratio and interval for the fine lattice, and the exact medians (:func:`exact_pair_spread`,
    :func:`cauchy_median`, :func:`fine_pair_spread`)."""
    p = plan("adult", rows=("dp-counts ε=1",), attacks=("double-query",))
    scenario = Scenario.from_dict({**next(iter(p.cells.values())), "seed": repeat_seed(0, 0)})
    honest = honest_audit(scenario, ("sp",))
    query, audit = honest.queries["sp"], honest.audit
    rng = np.random.default_rng(12345)
    rows = []
    for epsilon in EPSILONS[1:]:
        errors = {name: release_errors(_protocol(name, epsilon=epsilon), query, audit, releases, 0).ravel()
                  for name in ("dp-counts", "smooth-cauchy")}
        fine = fine_lattice_errors(_protocol("dp-counts", epsilon=epsilon), query, audit, releases, 0).ravel()
        row = {"epsilon": epsilon, "dp_counts": float(np.median(errors["dp-counts"])),
               "smooth_cauchy": float(np.median(errors["smooth-cauchy"])),
               "smooth_cauchy_exact": cauchy_median(epsilon, query, audit),
               "dp_counts_spread": _spread(errors["dp-counts"]), "fine_lattice_spread": _spread(fine),
               "dp_counts_exact": exact_pair_spread("sp", query.predictions, audit, epsilon),
               "optimise_mean_exact": exact_pair_spread("sp", query.predictions, audit, epsilon, "mean"),
               "fine_lattice_400k": fine_pair_spread("sp", query.predictions, audit, epsilon)}
        for name, own in (("", errors["dp-counts"]), ("fine_lattice_", fine)):
            with np.errstate(divide="ignore"):  # a resample whose median is 0 (mostly exact answers): ratio inf
                boots = np.array([np.median(rng.choice(errors["smooth-cauchy"], releases))
                                  / np.median(rng.choice(own, releases)) for _ in range(resamples)])
            row[f"{name}ratio"] = _ratio(row["smooth_cauchy"], float(np.median(own)))
            row[f"{name}ratio_interval_95"] = [float(v) if np.isfinite(v) else None
                                               for v in np.quantile(boots, [0.025, 0.975], method="lower")]
            row[f"{name}share_of_boots_below_10"] = float(np.mean(boots < 10.0))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    releases = int(sys.argv[1]) if len(sys.argv) > 1 else RELEASES
    scores, audit, threshold = honest_world()
    H = (scores >= threshold).astype(np.float64)[None, :]
    rows = one_model(H, audit, releases, "adult-observer-honest")
    c_scores, c_audit, c_threshold = compare_world()
    rows += one_model((c_scores >= c_threshold).astype(np.float64)[None, :], c_audit, releases, "compare adult")
    few = few_models(c_scores, c_audit, releases, "compare adult") + few_models(scores, audit, releases,
                                                                               "adult-observer-honest")
    result = {"releases": releases, "one_model": rows, "few_models": few, "compare_ratio": compare_ratio(releases),
              "many_models": many_models(scores, audit, max(releases // 4, 25))}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
