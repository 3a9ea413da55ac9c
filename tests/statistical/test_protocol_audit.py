"""Each DP protocol audited empirically (alpha = 1e-4).

Its bound stays at or below its epsilon; a broken one is caught.
"""

from __future__ import annotations

import numpy as np
import pytest

from parley.protocols import get_protocol
from parley.protocols.audit.privacy_audit import audit_epsilon
from parley.protocols.base import AuditSet, MetricQuery

#: Full audits, tens of thousands of runs a side: the system tier (tests/statistical/test_audits_quick.py runs the
#: same audits of laplace and dp-counts, correct and with half the noise, sized for the default tier).
pytestmark = pytest.mark.system

ALPHA = 1e-4
RUNS = 30_000
N = 12
#: The pair release is audited on the coordinate the flip moves (a sharper statistic than the metric): fewer runs.
PAIR_RUNS = 8_000


def _query() -> MetricQuery:
    H = np.zeros((1, N))
    H[0, 0] = 1.0  # a model accepting only individual 0: the most sensitive SP probe
    H.flags.writeable = False
    return MetricQuery(metric="sp", predictions=H, query_id="audit")


def _pair() -> tuple[np.ndarray, np.ndarray]:
    a = np.ones(N, dtype=np.int8)
    a[:3] = 0  # N0 = 3
    a_prime = a.copy()
    a_prime[0] = 1  # individual 0 changes group
    return a, a_prime


def _mechanism(protocol):
    query, y = _query(), np.ones(N, dtype=np.int8)
    return lambda a, rng: protocol.answer(query, AuditSet(a=a, y=y), rng)["values"]


@pytest.mark.parametrize(("name", "params"), [
    ("laplace", {"epsilon": 1.0}),
    ("smooth-cauchy", {"epsilon": 1.0}),
    ("smooth-laplace", {"epsilon": 0.9, "delta": 1e-3}),
    ("dp-counts", {"epsilon": 1.0}),
    ("dp-counts", {"epsilon": 1.0, "noise": "gaussian", "delta": 1e-3}),
])
def test_audit_bound_stays_at_or_below_the_claim(name, params):
    cls = get_protocol(name)
    protocol = cls(cls.Params(**params))
    a, a_prime = _pair()
    result = audit_epsilon(_mechanism(protocol), a, a_prime, runs=RUNS, alpha=ALPHA, rng=np.random.default_rng(3),
                           delta=params.get("delta", 0.0))
    assert result.epsilon_lower <= params["epsilon"], result


@pytest.mark.parametrize("params", [{"epsilon": 1.0}, {"epsilon": 1.0, "noise": "gaussian", "delta": 1e-3}])
def test_mpc_dp_audit_bound_stays_at_or_below_the_claim(params):
    """The three parties' computation (``simulate``: the same functions the parties run), audited on the pair
    where one person's flip moves a sum most: the noise C and S add inside must cover the uncentred sums."""
    cls = get_protocol("mpc-dp")
    protocol = cls(cls.Params(**params))
    query, y = _query(), np.ones(N, dtype=np.int8)
    a, a_prime = _pair()
    result = audit_epsilon(lambda a_, rng: protocol.simulate(query, AuditSet(a=a_, y=y), rng)["values"], a, a_prime,
                           runs=RUNS // 10, alpha=ALPHA, rng=np.random.default_rng(5), delta=params.get("delta", 0.0))
    assert result.epsilon_lower <= params["epsilon"], result


def test_laplace_with_half_the_noise_is_caught():
    cls = get_protocol("laplace")

    class HalfNoise(cls):  # a deliberately broken variant: the noise scale halved
        name = "laplace-broken"

        def release(self, exact, query, audit, rng):
            values, notes = super().release(exact, query, audit, rng)
            return exact + 0.5 * (values - exact), notes

    a, a_prime = _pair()
    result = audit_epsilon(_mechanism(HalfNoise(cls.Params(epsilon=1.0))), a, a_prime, runs=RUNS, alpha=ALPHA,
                           rng=np.random.default_rng(4))
    assert result.epsilon_lower > 1.0, result


def _centred_everywhere(monkeypatch) -> None:
    """Give every slice the centred release (m > 1, the Gaussian variant and constant models get it): its audits
    below keep the one-model probe, where one flip moves the centred sum by S and the size by 1."""
    from parley.protocols.mechanisms import count_dp

    monkeypatch.setattr(count_dp, "release_kinds", lambda m, params, sens: [count_dp.CENTRED] * len(sens))


def test_dp_counts_with_half_the_noise_is_caught(monkeypatch):
    """Both noise scales of dp-counts' centred release halved (true epsilon 2 on this pair): the audit bound passes
    the claim of 1."""
    from parley.protocols.mechanisms import count_dp

    honest = count_dp.noise_scales

    def halved(m, params):
        scales = honest(m, params)
        return count_dp.NoiseScales(sum=scales["sum"] / 2, size=scales["size"] / 2)

    _centred_everywhere(monkeypatch)
    monkeypatch.setattr(count_dp, "noise_scales", halved)
    protocol = get_protocol("dp-counts")(get_protocol("dp-counts").Params(epsilon=1.0))
    a, a_prime = _pair()
    result = audit_epsilon(_mechanism(protocol), a, a_prime, runs=RUNS, alpha=ALPHA, rng=np.random.default_rng(3))
    assert result.epsilon_lower > 1.0, result


def _pair_coordinate(protocol, query: MetricQuery, coordinate: str):
    """The one-model release's coordinate that the flip moves: group 1's sum K (a person with r = 2^B) or its
    complement Z = N - K (a person with r = 0), read from the answer's ``statistics``."""
    y = np.ones(N, dtype=np.int8)

    def run(a_: np.ndarray, rng: np.random.Generator) -> float:
        stats = protocol.answer(query, AuditSet(a=a_, y=y), rng)["statistics"]
        k, n1 = float(stats["sums"][0, 0, 1]), float(stats["sizes"][0, 1])
        return k if coordinate == "sum" else n1 - k
    return run


def _pair_cases() -> list[tuple[MetricQuery, str]]:
    """The one-model pair release's most sensitive pairs: the flipped person at r = 2^B (moves K by 2^B) and at
    r = 0 (moves Z by 2^B); audit_epsilon tries both directions of each pair."""
    return [(_query(), "sum"), (_far_side_query(), "complement")]


@pytest.mark.parametrize(("case", "optimise"), [(0, "median"), (1, "median"), (0, "mean")])
def test_dp_counts_one_model_pair_stays_at_or_below_the_claim_on_its_most_sensitive_pairs(case, optimise):
    """The pair (K, Z), noise with decay exp(-|y| epsilon / 2^B) on its lattice (hard labels at epsilon = 1: step
    2^B/2 for the median, 2^B, the geometric mechanism, for the mean): the coordinate the flip moves by the whole
    2^B, audited directly."""
    from parley.protocols.mechanisms.count_dp import PAIR

    protocol = get_protocol("dp-counts")(get_protocol("dp-counts").Params(epsilon=1.0, optimise=optimise))
    query, coordinate = _pair_cases()[case]
    a, a_prime = _pair()
    assert protocol.answer(query, AuditSet(a=a, y=np.ones(N, dtype=np.int8)),
                           np.random.default_rng(0))["release"] == [PAIR]
    result = audit_epsilon(_pair_coordinate(protocol, query, coordinate), a, a_prime, runs=PAIR_RUNS, alpha=ALPHA,
                           rng=np.random.default_rng(7 + case))
    assert result.epsilon_lower <= 1.0, result


@pytest.mark.parametrize("case", [0, 1])
def test_dp_counts_one_model_pair_with_half_the_noise_is_caught(monkeypatch, case):
    """The pair's scale halved (2^B/(2 epsilon): true epsilon 2): the same audit passes the claim of 1."""
    from parley.protocols.mechanisms import count_dp

    honest = count_dp.pair_scale
    monkeypatch.setattr(count_dp, "pair_scale", lambda params: honest(params) / 2)
    protocol = get_protocol("dp-counts")(get_protocol("dp-counts").Params(epsilon=1.0))
    query, coordinate = _pair_cases()[case]
    a, a_prime = _pair()
    result = audit_epsilon(_pair_coordinate(protocol, query, coordinate), a, a_prime, runs=PAIR_RUNS, alpha=ALPHA,
                           rng=np.random.default_rng(7 + case))
    assert result.epsilon_lower > 1.0, result


def _far_side_query() -> MetricQuery:
    H = np.ones((1, N))
    H[0, 0] = 0.0  # everybody accepted but individual 0: the centre is 11/12, and individual 0 its farthest point
    H.flags.writeable = False
    return MetricQuery(metric="sp", predictions=H, query_id="audit")


@pytest.mark.parametrize("params", [{"epsilon": 1.0}, {"epsilon": 1.0, "noise": "gaussian", "delta": 1e-3}])
def test_dp_counts_audit_stays_below_the_claim_when_the_flipped_person_sits_below_the_centre(params):
    """The centred sum K - c N moves by c (not by r = 0) when a rejected person changes group: still inside."""
    protocol = get_protocol("dp-counts")(get_protocol("dp-counts").Params(**params))
    query, y = _far_side_query(), np.ones(N, dtype=np.int8)
    a, a_prime = _pair()
    result = audit_epsilon(lambda a_, rng: protocol.answer(query, AuditSet(a=a_, y=y), rng)["values"], a, a_prime,
                           runs=RUNS, alpha=ALPHA, rng=np.random.default_rng(5), delta=params.get("delta", 0.0))
    assert result.epsilon_lower <= params["epsilon"], result


def test_dp_counts_with_an_understated_centred_sensitivity_is_caught(monkeypatch):
    """A broken centring that takes S_i as the distance to the *nearer* extreme (1/12 here, not 11/12) is caught."""
    from parley.protocols.mechanisms import count_dp

    honest = count_dp.centres

    def nearer(predictions, masks):
        C, _ = honest(predictions, masks)
        r = np.rint(np.asarray(predictions) * float(1 << count_dp.PREDICTION_BITS)).astype(np.int64)
        return C, [[min(int(r[i, mask].max()) - c, c - int(r[i, mask].min())) for i, c in enumerate(row)]
                   for mask, row in zip(masks, C, strict=True)]

    _centred_everywhere(monkeypatch)
    monkeypatch.setattr(count_dp, "centres", nearer)
    protocol = get_protocol("dp-counts")(get_protocol("dp-counts").Params(epsilon=1.0))
    query, y = _far_side_query(), np.ones(N, dtype=np.int8)
    a, a_prime = _pair()
    result = audit_epsilon(lambda a_, rng: protocol.answer(query, AuditSet(a=a_, y=y), rng)["values"], a, a_prime,
                           runs=RUNS, alpha=ALPHA, rng=np.random.default_rng(6))
    assert result.epsilon_lower > 1.0, result
