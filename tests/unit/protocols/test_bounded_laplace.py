"""Remark 6's bounded Laplace releases (laplace-bounded): range, privacy by exact computation, bias, cost."""

from __future__ import annotations

import numpy as np
import pytest

from parley.protocols import AuditSet, MetricQuery, get_protocol
from parley.protocols.budget import PureDP
from parley.protocols.dp.lattice import _laplace_lattice_plan, lattice_sensitivity
from parley.protocols.dp.sensitivity import global_sensitivity
from parley.protocols.errors import QueryError
from parley.protocols.mechanisms import bounded_laplace
from parley.protocols.mechanisms.bounded_laplace import truncated_release
from parley.protocols.metrics import evaluate

N, N0 = 40, 10


def make(name: str, **params):
    cls = get_protocol(name)
    return cls(cls.Params(**params))


@pytest.fixture(scope="module")
def audit() -> AuditSet:
    rng = np.random.default_rng(6)
    a = np.array([1] * (N - N0) + [0] * N0, dtype=np.int8)
    rng.shuffle(a)
    return AuditSet(a=a, y=(rng.random(N) < 0.5).astype(np.int8))


@pytest.fixture(scope="module")
def query() -> MetricQuery:
    return MetricQuery(metric="sp", predictions=np.random.default_rng(7).random((3, N)), query_id="q")


@pytest.mark.parametrize("bounding", ["truncated", "boundary-inflated"])
def test_releases_stay_in_range_and_cost_epsilon(audit, query, bounding):
    protocol = make("laplace-bounded", epsilon=0.2, bounding=bounding)
    assert protocol.cost(query) == PureDP(epsilon=0.2)
    values = np.concatenate([protocol.answer(query, audit, np.random.default_rng(s))["values"] for s in range(200)])
    assert ((values >= -1.0) & (values <= 1.0)).all()
    at_bounds = np.isin(values, [-1.0, 1.0]).mean()
    if bounding == "boundary-inflated":  # the mass beyond the bounds piles on them (scale 3 x 0.53 / 0.2 = 8)
        assert at_bounds > 0.5
    else:  # no atoms: a lattice point at a bound is as likely as its neighbours
        assert at_bounds < 0.01


def test_boundary_inflated_is_the_clamped_laplace_release(audit, query):
    bit = make("laplace-bounded", epsilon=0.3, bounding="boundary-inflated")
    clamp = make("laplace", epsilon=0.3, out_of_range="clamp")
    for seed in range(50):
        b = bit.answer(query, audit, np.random.default_rng(seed))
        c = clamp.answer(query, audit, np.random.default_rng(seed))
        np.testing.assert_array_equal(b["values"], c["values"])
        assert b["inflated"] == c["clamped"]


def _worst_log_ratio(epsilon_of_noise: float, sensitivity: float, n: int) -> float:
    """max over outputs and neighbouring centres of log P[k -> j] / P[k' -> j], one coordinate, truncated to [-1, 1].

    The centres run over the lattice points of [-1, 1] and their neighbours over every shift up to the rounded
    sensitivity (in lattice steps), computed exactly in log space from the sampler's own plan.
    """
    g, t, s, _ = _laplace_lattice_plan(sensitivity, epsilon_of_noise, 1, n)
    tau = t / s
    lo, hi = int(np.ceil(-1.0 / g)), int(np.floor(1.0 / g))
    j = np.arange(lo, hi + 1, dtype=np.float64)
    d = int(np.floor(float(lattice_sensitivity(sensitivity, 1, g, n)) / g))

    def log_pmf(k: float) -> np.ndarray:
        logits = -np.abs(j - k) / tau
        return logits - np.logaddexp.reduce(logits)

    worst = 0.0
    for k in np.linspace(lo, hi - d, 9).round():
        worst = max(worst, float(np.max(np.abs(log_pmf(k) - log_pmf(k + d)))))
    return worst


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
def test_truncation_at_half_epsilon_is_epsilon_dp_and_at_epsilon_it_is_not(epsilon):
    sensitivity = global_sensitivity("sp", 1, N)  # Thm. 5 with m = 1: 1/2 + 1/(n - 1)
    assert _worst_log_ratio(epsilon / 2.0, sensitivity, N) <= epsilon * (1 + 1e-9)
    assert _worst_log_ratio(epsilon, sensitivity, N) > 1.1 * epsilon  # the normaliser's share of the loss


def test_truncation_is_biased_toward_the_middle_near_a_bound():
    # Seeded: 2,000 truncated draws at exact values 0.9 and 0; the mean moves inward at 0.9, not at 0.
    rng = np.random.default_rng(2019)
    sensitivity = global_sensitivity("sp", 1, N)
    for exact, inward in ((0.9, True), (0.0, False)):
        values, notes = truncated_release(np.full(2000, exact), sensitivity, 2.0, N, -1.0, 1.0, rng)
        se = values.std(ddof=1) / np.sqrt(values.size)
        if inward:
            assert values.mean() < exact - 10 * se
        else:
            assert abs(values.mean() - exact) < 4 * se
        assert notes["rounds"] >= 1 and ((values >= -1.0) & (values <= 1.0)).all()


def test_a_hopeless_truncation_gives_up(monkeypatch):
    monkeypatch.setattr(bounded_laplace, "MAX_ROUNDS", 3)
    with pytest.raises(QueryError, match="too small"):
        truncated_release(np.full(50, 1.0), 10.0, 0.001, N, -1.0, 1.0, np.random.default_rng(0))


def test_the_exact_value_is_the_metric(audit, query):
    exact = evaluate("sp", query.predictions, audit.a, audit.y)
    values = make("laplace-bounded", epsilon=1e6).answer(query, audit, np.random.default_rng(0))["values"]
    np.testing.assert_allclose(values, exact, atol=1e-4)


def _conditioned_bin_probabilities(exact: float, sensitivity: float, epsilon_of_noise: float, m: int, n: int,
                                   edges: np.ndarray) -> np.ndarray:
    """P(bin) of the lattice Laplace of the sampler's plan, centred at round(exact / g), conditioned on [-1, 1]."""
    g, t, s, _ = _laplace_lattice_plan(sensitivity, epsilon_of_noise, m, n)
    j = np.arange(int(np.ceil(-1.0 / g)), int(np.floor(1.0 / g)) + 1, dtype=np.float64)
    logits = -np.abs(j - np.rint(exact / g)) / (t / s)
    pmf = np.exp(logits - np.logaddexp.reduce(logits))
    return np.array([pmf[(j * g >= lo) & (j * g < hi)].sum() for lo, hi in zip(edges[:-1], edges[1:], strict=True)])


@pytest.mark.system
def test_truncated_draws_follow_the_conditioned_distribution():
    # Seeded chi-square: 10,000 values at exact 0.8 (m = 200, n = 40, epsilon = 200: noise scale about 1 before
    # truncation) fit the conditioned lattice Laplace at the scale of epsilon / 2, and not the one at epsilon.
    from scipy import stats

    m, n, epsilon, exact = 200, N, 200.0, 0.8
    sensitivity = global_sensitivity("sp", m, n)
    rng = np.random.default_rng(1902)
    values = np.concatenate([truncated_release(np.full(m, exact), sensitivity, epsilon, n, -1.0, 1.0, rng)[0]
                             for _ in range(50)])
    edges = np.linspace(-1.0, 1.0 + 1e-12, 21)
    observed = np.histogram(values, bins=edges)[0]
    for eps_noise, fits in ((epsilon / 2.0, True), (epsilon, False)):
        expected = _conditioned_bin_probabilities(exact, sensitivity, eps_noise, m, n, edges) * values.size
        p = stats.chisquare(observed, expected).pvalue
        assert (p > 1e-4) if fits else (p < 1e-4), (eps_noise, p)
