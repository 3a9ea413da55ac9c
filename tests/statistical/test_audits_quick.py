"""The empirical privacy audit sized for the default tier (alpha = 1e-4, seeded, 3,000 runs a side).

The same harness, level and neighbouring pair as tests/statistical/test_protocol_audit.py, whose
full audits (tens of thousands of runs, every DP protocol) run in the system tier: laplace and
dp-counts stay at or below their epsilon, and the same protocols with half their noise are caught.
"""

from __future__ import annotations

import numpy as np

from parley.protocols import get_protocol
from parley.protocols.audit.privacy_audit import audit_epsilon
from tests.statistical.test_protocol_audit import ALPHA, _centred_everywhere, _mechanism, _pair

#: Runs a side: enough for the halved noise (true epsilon 2) to pass the claim of 1 on these seeds.
RUNS = 3_000


def _halved_laplace():
    cls = get_protocol("laplace")

    class HalfNoise(cls):  # a deliberately broken variant: the noise scale halved
        name = "laplace-broken"

        def release(self, exact, query, audit, rng):
            values, notes = super().release(exact, query, audit, rng)
            return exact + 0.5 * (values - exact), notes

    return HalfNoise(cls.Params(epsilon=1.0))


def test_laplace_stays_at_or_below_its_epsilon_and_the_audit_sees_part_of_it():
    protocol = get_protocol("laplace")(get_protocol("laplace").Params(epsilon=1.0))
    a, a_prime = _pair()
    result = audit_epsilon(_mechanism(protocol), a, a_prime, runs=RUNS, alpha=ALPHA, rng=np.random.default_rng(3))
    assert result.epsilon_lower <= 1.0, result
    assert result.epsilon_lower > 0.2, result  # not vacuous: the audit sees a real part of the privacy loss


def test_laplace_with_half_the_noise_is_caught():
    a, a_prime = _pair()
    result = audit_epsilon(_mechanism(_halved_laplace()), a, a_prime, runs=RUNS, alpha=ALPHA,
                           rng=np.random.default_rng(4))
    assert result.epsilon_lower > 1.0, result


def test_dp_counts_stays_at_or_below_its_epsilon():
    protocol = get_protocol("dp-counts")(get_protocol("dp-counts").Params(epsilon=1.0))
    a, a_prime = _pair()
    result = audit_epsilon(_mechanism(protocol), a, a_prime, runs=RUNS, alpha=ALPHA, rng=np.random.default_rng(3))
    assert 0.0 < result.epsilon_lower <= 1.0, result


def test_dp_counts_with_half_the_noise_is_caught(monkeypatch):
    """Both noise scales of dp-counts' centred release halved (true epsilon 2 on this pair)."""
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
