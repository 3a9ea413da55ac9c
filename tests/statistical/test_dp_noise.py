"""The DP protocols add the noise their theorems state: goodness of fit, clamping, costs, refusals.

Seeded, fixed significance level ALPHA. For each protocol and sampler the released
noise (answer - exact metric) over 10,000 answers of a 2-model query (20,000
values) on a fixed audit set must pass a Kolmogorov-Smirnov test against the
stated distribution and scale, and fail it when the scale is halved. The expected
scales are written out from the theorems here, not taken from the code under test.
The exact integer samplers behind the default ``lattice`` sampler
(:mod:`parley.protocols.dp.lattice`) get chi-square tests against their exact
probability mass functions, with a check that a 25 % wrong scale is rejected.
"""

from __future__ import annotations

import math
import zlib
from fractions import Fraction

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats

from parley.protocols import AuditSet, MetricQuery, get_protocol
from parley.protocols.audit.privacy_audit import clopper_pearson
from parley.protocols.base import METRIC_NOT_ANSWERED
from parley.protocols.budget import ApproxDP, PureDP
from parley.protocols.dp.lattice import (
    FLOAT_UNSAFE_WARNING,
    RandomBits,
    _laplace_lattice_plan,
    bernoulli_exp,
    discrete_cauchy,
    discrete_laplace,
    granularity,
    lattice_sensitivity,
)
from parley.protocols.dp.sensitivity import GLOBAL_METRICS
from parley.protocols.errors import QueryError
from parley.protocols.metrics import METRICS, evaluate

#: The float-unsafe control is configured on purpose here; its warning is tested once, below.
pytestmark = pytest.mark.filterwarnings("ignore::parley.protocols.dp.lattice.FloatUnsafeWarning")

ALPHA = 1e-4
ANSWERS = 10_000
M = 2
N, N0, N1 = 40, 10, 30


@pytest.fixture(scope="module")
def audit() -> AuditSet:
    rng = np.random.default_rng(20230612)
    a = np.array([1] * N1 + [0] * N0, dtype=np.int8)
    rng.shuffle(a)
    y = (rng.random(N) < 0.5).astype(np.int8)
    y[np.flatnonzero(a == 0)[:2]] = 1
    y[np.flatnonzero(a == 1)[:2]] = 1
    return AuditSet(a=a, y=y)


@pytest.fixture(scope="module")
def predictions() -> np.ndarray:
    H = np.random.default_rng(5).random((M, N))
    H.flags.writeable = False
    return H


def make(name: str, **params):
    cls = get_protocol(name)
    return cls(cls.Params(**params))


def noise_of(protocol, metric: str, audit: AuditSet, H: np.ndarray, seed: int) -> np.ndarray:
    query = MetricQuery(metric=metric, predictions=H, query_id="q")
    exact = evaluate(metric, H, audit.a, audit.y)
    rng = np.random.default_rng(seed)
    return np.concatenate([protocol.answer(query, audit, rng)["values"] - exact for _ in range(ANSWERS)])


def g(n: int) -> float:
    return 0.5 + 1.0 / (n - 1)


def smooth_sp(beta: float) -> float:
    """Thm. 7/8's closed form for this audit set (N0 = 10 <= N1 = 30), m = M."""
    return max(M / (N1 + 1) + M / N0, math.exp(-(N0 - 2) * beta) * (M / (N - 1) + M / 2))


EPS = 0.8
DELTA = 1e-6
BETA_CAUCHY = EPS / (6 * M)
BETA_LAPLACE = EPS / (4 * (M + math.log(2 / DELTA)))

# (protocol, params, metric, scipy distribution, scale stated by the theorem)
CASES = [
    ("laplace", {"epsilon": EPS}, "sp", "laplace", M * g(N) / EPS),  # Thm. 5
    ("laplace", {"epsilon": EPS}, "abs_sp", "laplace", M * N / (2 * (N - 1)) / EPS),  # Thm. 6, corrected
    ("laplace", {"epsilon": EPS}, "cov", "laplace", M * (N - 1) / N**2 / EPS),
    ("smooth-cauchy", {"epsilon": EPS}, "sp", "cauchy", 6 * smooth_sp(BETA_CAUCHY) / EPS),  # Thm. 7
    ("smooth-cauchy", {"epsilon": EPS}, "abs_sp", "cauchy", 6 * N / (N + 1) * smooth_sp(BETA_CAUCHY) / EPS),
    ("smooth-laplace", {"epsilon": EPS, "delta": DELTA}, "sp", "laplace", 2 * smooth_sp(BETA_LAPLACE) / EPS),  # Thm. 8
    ("smooth-laplace", {"epsilon": EPS, "delta": DELTA}, "abs_sp", "laplace",
     2 * N / (N + 1) * smooth_sp(BETA_LAPLACE) / EPS),
]


@pytest.mark.parametrize("sampler", ["lattice", pytest.param("float-unsafe", marks=pytest.mark.system)])
@pytest.mark.parametrize(("name", "params", "metric", "dist", "scale"), [
    # the smooth mechanisms' |SP| scale is n/(n+1) times their SP one: its draws run in the system tier, the
    # factor itself in the default tier through laplace's |SP| case and the sensitivity tests
    pytest.param(*case, id=f"{case[0]}-{case[2]}",
                 marks=[pytest.mark.system] if case[0] != "laplace" and case[2] == "abs_sp" else [])
    for case in CASES])
def test_noise_has_the_stated_distribution_and_scale(audit, predictions, name, params, metric, dist, scale, sampler):
    protocol = make(name, **params, sampler=sampler)
    noise = noise_of(protocol, metric, audit, predictions, seed=zlib.crc32(f"{name}/{metric}/{sampler}".encode()))
    assert noise.shape == (ANSWERS * M,)
    assert stats.kstest(noise, dist, args=(0.0, scale)).pvalue > ALPHA
    assert stats.kstest(noise, dist, args=(0.0, 0.5 * scale)).pvalue < ALPHA  # a halved scale is rejected


def test_eo_noise_uses_the_slice_size(audit, predictions):
    """Five positives: EO is SP on 5 individuals, so Thm. 5 applies with n = 5, not the audit size 40."""
    y = np.zeros(N, dtype=np.int8)
    y[np.flatnonzero(audit.a == 0)[:2]] = 1
    y[np.flatnonzero(audit.a == 1)[:3]] = 1
    few = AuditSet(a=audit.a, y=y)
    n_pos = 5
    noise = noise_of(make("laplace", epsilon=EPS), "eo", few, predictions, seed=11)
    assert stats.kstest(noise, "laplace", args=(0.0, M * g(n_pos) / EPS)).pvalue > ALPHA
    assert stats.kstest(noise, "laplace", args=(0.0, M * g(N) / EPS)).pvalue < ALPHA  # the printed n - 1


@pytest.mark.parametrize(("name", "params"), [("laplace", {"epsilon": 0.05}), ("smooth-cauchy", {"epsilon": 0.5}),
                                              ("smooth-laplace", {"epsilon": 0.05, "delta": DELTA})])
@pytest.mark.parametrize("metric", ["sp", "abs_sp"])
def test_clamp_keeps_answers_in_range_and_counts(audit, predictions, name, params, metric):
    query = MetricQuery(metric=metric, predictions=predictions, query_id="q")
    raw = make(name, **params, out_of_range="raw")
    clamp = make(name, **params, out_of_range="clamp")
    low, high = METRICS[metric].range
    total = 0
    for seed in range(200):
        r = raw.answer(query, audit, np.random.default_rng(seed))
        c = clamp.answer(query, audit, np.random.default_rng(seed))
        outside = int(((r["values"] < low) | (r["values"] > high)).sum())
        assert r["clamped"] == 0 and r["out_of_range"] == "raw"
        assert c["clamped"] == outside and c["out_of_range"] == "clamp"
        np.testing.assert_array_equal(c["values"], np.clip(r["values"], low, high))
        assert ((c["values"] >= low) & (c["values"] <= high)).all()
        total += outside
    assert total > 0  # the noise is large enough that clamping happens


def test_costs_are_typed_budgets(predictions):
    query = MetricQuery(metric="sp", predictions=predictions, query_id="q")
    for cost in (make("laplace", epsilon=0.3).cost(query), make("smooth-cauchy", epsilon=0.3).cost(query)):
        assert type(cost) is PureDP and cost == PureDP(epsilon=0.3)
    cost = make("smooth-laplace", epsilon=0.3, delta=1e-5).cost(query)
    assert type(cost) is ApproxDP and cost == ApproxDP(epsilon=0.3, delta=1e-5)


def test_answers_record_no_data_dependent_scale(audit, predictions):
    """Smooth answers carry only public notes: the lattice spacing is the same whatever N0 is."""
    query = MetricQuery(metric="sp", predictions=predictions, query_id="q")
    rng = np.random.default_rng(0)
    cauchy = make("smooth-cauchy", epsilon=1.0).answer(query, audit, rng)
    keys = {"metric", "query_id", "values", "epsilon", "noise", "out_of_range", "clamped", "sampler", "granularity"}
    assert set(cauchy) == keys
    assert cauchy["noise"] == "cauchy" and cauchy["epsilon"] == 1.0 and cauchy["sampler"] == "lattice"
    lap = make("smooth-laplace", epsilon=0.5, delta=DELTA).answer(query, audit, rng)
    assert set(lap) == keys | {"delta"}
    assert lap["noise"] == "laplace" and lap["delta"] == DELTA
    balanced = AuditSet(a=np.array([0, 1] * (N // 2), dtype=np.int8), y=audit.y)  # N0 = 20 instead of 10
    for name, params in (("smooth-cauchy", {"epsilon": 1.0}), ("smooth-laplace", {"epsilon": 0.5, "delta": DELTA})):
        p = make(name, **params)
        assert p.answer(query, audit, rng)["granularity"] == p.answer(query, balanced, rng)["granularity"]
    glob = make("laplace", epsilon=0.5).answer(query, audit, rng)  # public scale: recorded
    # The lattice adds m g (g = 2^-12 to 2^-13 of the scale) to the sensitivity and rounds the scale up.
    assert M * g(N) / 0.5 <= glob["scale"] <= M * g(N) / 0.5 * (1 + 2 * 2.0**-11)
    assert glob["noise"] == "laplace"


@pytest.mark.parametrize(("name", "params", "metric", "allowed"), [
    ("smooth-cauchy", {"epsilon": 1.0}, "eo", "sp, abs_sp"),
    ("smooth-laplace", {"epsilon": 0.5, "delta": DELTA}, "cov", "sp, abs_sp"),
    ("laplace", {"epsilon": 1.0}, "prp", ", ".join(GLOBAL_METRICS)),
])
def test_unsupported_metrics_are_refused_naming_the_supported_ones(audit, predictions, name, params, metric,
                                                                   allowed):
    query = MetricQuery(metric=metric, predictions=predictions, query_id="q")
    with pytest.raises(QueryError) as err:
        make(name, **params).answer(query, audit, np.random.default_rng(0))
    assert str(err.value) == METRIC_NOT_ANSWERED.format(name=name, allowed=allowed, metric=metric)


@pytest.mark.parametrize(("name", "params"), [
    ("laplace", {"epsilon": 0.0}), ("smooth-cauchy", {"epsilon": -1.0}), ("laplace", {"epsilon": 1.0, "x": 1}),
    ("smooth-laplace", {"epsilon": 1.5, "delta": DELTA}),  # Thm. 8 is stated for epsilon in (0, 1)
    ("smooth-laplace", {"epsilon": 0.5, "delta": 0.0}), ("smooth-laplace", {"epsilon": 0.5}),
    ("laplace", {"epsilon": 1.0, "out_of_range": "truncate"}),
])
def test_bad_parameters_are_rejected(name, params):
    with pytest.raises(ValidationError):
        get_protocol(name).Params(**params)


@pytest.mark.system  # a full audit; tests/unit/protocols/test_sensitivity.py shows Thm. 6 below the exact sensitivity
def test_thm6_scale_is_caught_on_the_worst_case_pair():
    """|SP| with Laplace: Thm. 6's scale (m/2)/eps leaks more than eps; the corrected one does not.

    n = 3, individual 0 joins the advantaged group; the soft probe h = (1, 1/2, 0)
    has |SP| = 3/4 before and 0 after. For E = {answer > 3/4}, P[E | a] = 1/2 and
    P[E | a'] = e^{-(3/4)/b}/2 with b the Laplace scale, so the privacy loss on E
    is (3/4)/b: 1.5 eps at Thm. 6's b = 1/(2 eps), exactly eps at ours.
    """
    eps, runs = 1.0, 20_000
    H = np.array([[1.0, 0.5, 0.0]])
    a, a_prime = np.array([0, 0, 1], dtype=np.int8), np.array([1, 0, 1], dtype=np.int8)
    y = np.ones(3, dtype=np.int8)
    query = MetricQuery(metric="abs_sp", predictions=H, query_id="q")
    ours = make("laplace", epsilon=eps)
    rng = np.random.default_rng(6)

    def lower_bound(sample_a: np.ndarray, sample_b: np.ndarray) -> float:
        p_low, _ = clopper_pearson(int((sample_a > 0.75).sum()), runs, ALPHA / 2)
        _, q_high = clopper_pearson(int((sample_b > 0.75).sum()), runs, ALPHA / 2)
        return math.log(p_low / q_high)

    def answers(attr):
        return np.array([ours.answer(query, AuditSet(attr, y), rng)["values"][0] for _ in range(runs)])

    assert lower_bound(answers(a), answers(a_prime)) <= eps
    printed = 0.5 / eps  # Thm. 6: Lap(m/(2 eps))
    exact_a, exact_b = evaluate("abs_sp", H, a)[0], evaluate("abs_sp", H, a_prime)[0]
    assert lower_bound(exact_a + rng.laplace(0, printed, runs), exact_b + rng.laplace(0, printed, runs)) > eps


# -- the exact samplers of the lattice mechanisms ---------------------------------------------

DRAWS = 40_000


def chi_square_pvalue(sample: np.ndarray, pmf) -> float:
    """Chi-square of integer draws against ``pmf(k)`` on the support, sparse tails merged into two bins."""
    ks = np.arange(-4000, 4001)
    p = pmf(ks)
    keep = p * sample.size >= 5
    lo, hi = ks[keep].min(), ks[keep].max()
    inner = np.arange(lo, hi + 1)
    observed = np.array([(sample == k).sum() for k in inner] + [(sample < lo).sum(), (sample > hi).sum()], float)
    expected = np.append(pmf(inner), [p[ks < lo].sum() + _outside(pmf, -4000, -1), p[ks > hi].sum()
                                      + _outside(pmf, 4000, 1)])
    expected = expected / expected.sum() * sample.size
    return float(stats.chisquare(observed, expected).pvalue)


def _outside(pmf, start: int, step: int) -> float:
    """Mass of the pmf beyond +-4000 (summed far enough that the rest is negligible)."""
    far = start + step * np.arange(1, 10**6)
    return float(pmf(far).sum())


def laplace_pmf(tau: float):
    q = math.exp(-1.0 / tau)
    return lambda k: (1 - q) / (1 + q) * q ** np.abs(k)


def cauchy_pmf(tau: float):
    norm = math.pi * tau / math.tanh(math.pi * tau)  # sum over Z of 1/(1 + (k/tau)^2)
    return lambda k: 1.0 / (1.0 + (np.asarray(k, dtype=float) / tau) ** 2) / norm


@pytest.mark.parametrize(("num", "den"), [(0, 1), (1, 3), (1, 1), (7, 3)])
def test_bernoulli_exp_is_exact(num, den):
    rng = RandomBits(np.random.default_rng(100 + num))
    hits = sum(bernoulli_exp(rng, num, den) for _ in range(DRAWS))
    assert stats.binomtest(hits, DRAWS, math.exp(-num / den)).pvalue > ALPHA
    if num:
        assert stats.binomtest(hits, DRAWS, math.exp(-1.1 * num / den)).pvalue < ALPHA  # power


@pytest.mark.parametrize(("t", "s"), [(7, 2), (40, 1), (3 * 2**20 + 5, 2**18)])
def test_discrete_laplace_has_its_pmf(t, s):
    tau = t / s
    rng = RandomBits(np.random.default_rng(t))
    sample = np.array([discrete_laplace(rng, t, s) for _ in range(DRAWS)])
    assert chi_square_pvalue(sample, laplace_pmf(tau)) > ALPHA
    assert chi_square_pvalue(sample, laplace_pmf(1.25 * tau)) < ALPHA


@pytest.mark.parametrize(("t", "s"), [(5, 2), (40, 1), (3 * 2**20 + 5, 2**18)])
def test_discrete_cauchy_has_its_pmf(t, s):
    tau = t / s
    rng = RandomBits(np.random.default_rng(t + 1))
    sample = np.array([discrete_cauchy(rng, t, s) for _ in range(DRAWS)])
    assert chi_square_pvalue(sample, cauchy_pmf(tau)) > ALPHA
    assert chi_square_pvalue(sample, cauchy_pmf(1.25 * tau)) < ALPHA


def test_exact_samplers_are_reproducible_from_the_seed():
    def draws(seed: int) -> list[int]:
        rng = RandomBits(np.random.default_rng(seed))
        return [discrete_laplace(rng, 1001, 3) for _ in range(50)] + [discrete_cauchy(rng, 1001, 3) for _ in range(50)]

    assert draws(1) == draws(1)
    assert draws(1) != draws(2)
    query = MetricQuery(metric="sp", predictions=np.full((3, 6), 0.5), query_id="q")
    audit = AuditSet(a=np.array([0, 0, 1, 1, 1, 1], dtype=np.int8), y=np.ones(6, dtype=np.int8))
    for name, params in (("laplace", {"epsilon": 1.0}), ("smooth-cauchy", {"epsilon": 1.0}),
                         ("smooth-laplace", {"epsilon": 0.5, "delta": DELTA})):
        p = make(name, **params)
        first = p.answer(query, audit, np.random.default_rng(3))["values"]
        np.testing.assert_array_equal(first, p.answer(query, audit, np.random.default_rng(3))["values"])


def test_the_kept_laplace_plan_is_the_fresh_one():
    """The Laplace lattice and scale, kept per (Delta, epsilon, m, n), are what a fresh computation gives."""
    rng = np.random.default_rng(5)
    cases = [(float(rng.uniform(1e-3, 3.0)), float(rng.uniform(0.05, 4.0)), int(rng.integers(1, 50)),
              int(rng.integers(10, 10**6))) for _ in range(40)]
    # neighbours in one argument each: a cache that dropped any argument from its key would answer one with another
    base = (0.6, 1.0, 1, 10)
    cases += [(0.6, 1.0, 1, 10**6), (0.6, 1.5, 1, 10), (0.6, 1.0, 2, 10), (0.7, 1.0, 1, 10), base,
              (np.float64(0.6), 1.0, 1, 10)]
    _laplace_lattice_plan.cache_clear()
    for case in cases + cases[::-1]:  # the second pass hits the cache in the other order
        assert _laplace_lattice_plan(*case) == _laplace_lattice_plan.__wrapped__(*case)
    assert _laplace_lattice_plan.cache_info().hits == len(cases)
    assert len({_laplace_lattice_plan(*case) for case in cases[-6:-1]}) == 5  # n alone moves t (by eta(n))
    for sensitivity, epsilon, m, n in cases:  # the plan is the proof's: g a power of two, tau >= Delta_g / (eps g)
        g, t, s, scale = _laplace_lattice_plan(sensitivity, epsilon, m, n)
        assert g == 2.0 ** round(math.log2(g))
        tau = Fraction(t, s)
        bound = lattice_sensitivity(sensitivity, m, g, n) / (Fraction(epsilon) * Fraction(g))
        assert bound <= tau < bound + Fraction(1, s) and scale == float(tau * Fraction(g))
    query = MetricQuery(metric="sp", predictions=np.full((3, 6), 0.5), query_id="q")
    audit = AuditSet(a=np.array([0, 0, 1, 1, 1, 1], dtype=np.int8), y=np.ones(6, dtype=np.int8))
    laplace = make("laplace", epsilon=0.3)
    _laplace_lattice_plan.cache_clear()
    fresh = laplace.answer(query, audit, np.random.default_rng(4))
    kept = laplace.answer(query, audit, np.random.default_rng(4))
    assert _laplace_lattice_plan.cache_info().hits == 1
    np.testing.assert_array_equal(fresh["values"], kept["values"])
    assert (fresh["scale"], fresh["granularity"]) == (kept["scale"], kept["granularity"])


@pytest.mark.parametrize(("name", "params"), [("laplace", {"epsilon": 0.7}), ("smooth-cauchy", {"epsilon": 0.7}),
                                              ("smooth-laplace", {"epsilon": 0.7, "delta": DELTA})])
def test_lattice_releases_are_multiples_of_a_public_power_of_two(audit, predictions, name, params):
    query = MetricQuery(metric="sp", predictions=predictions, query_id="q")
    answer = make(name, **params).answer(query, audit, np.random.default_rng(9))
    step = answer["granularity"]
    assert step == 2.0 ** round(math.log2(step))
    assert (answer["values"] / step == np.round(answer["values"] / step)).all()
    assert "warning" not in answer
    unsafe = make(name, **params, sampler="float-unsafe").answer(query, audit, np.random.default_rng(9))
    assert unsafe["sampler"] == "float-unsafe" and unsafe["warning"] == FLOAT_UNSAFE_WARNING
    assert "sampler" not in make(name, **params).params.model_dump()  # the default is left out of specs


def test_granularity_is_a_power_of_two_below_the_scale():
    for scale in (1e-6, 0.3, 1.0, 1.5, 1234.5):
        g = granularity(scale)
        assert g == 2.0 ** round(math.log2(g))
        assert 2.0**12 <= scale / g < 2.0**13
