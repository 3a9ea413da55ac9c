"""The auditor itself: its bound stays below a correct mechanism's epsilon and exposes a broken one."""

from __future__ import annotations

import numpy as np
import pytest

from parley.protocols.audit.privacy_audit import audit_epsilon, clopper_pearson
from parley.protocols.metrics import statistical_parity_difference

ALPHA = 1e-4


def _laplace_sp(epsilon: float, scale_factor: float = 1.0):
    """SP of one model accepting only individual 0, Laplace noise at global sensitivity (m = 1)."""
    n = 10
    H = np.zeros((1, n))
    H[0, 0] = 1.0
    sensitivity = 0.5 + 1.0 / (n - 1)  # Thm. 5 with m = 1

    def mechanism(a, rng):
        return statistical_parity_difference(H, a) + rng.laplace(0.0, scale_factor * sensitivity / epsilon, 1)

    return mechanism


def _pair():
    a = np.array([0, 0, 1, 1, 1, 1, 1, 1, 1, 1])
    a_prime = a.copy()
    a_prime[0] = 1  # individual 0 changes group: SP of the probe moves from -1/2 to 1/8
    return a, a_prime


def test_clopper_pearson_limits():
    low, high = clopper_pearson(50, 100, 0.05)
    assert 0.39 < low < 0.41 and 0.59 < high < 0.61
    assert clopper_pearson(0, 10, 0.05)[0] == 0.0 and clopper_pearson(10, 10, 0.05)[1] == 1.0


@pytest.mark.system  # 30,000 runs a side; test_audits_quick.py audits laplace with 3,000
def test_correct_laplace_stays_below_its_epsilon():
    a, a_prime = _pair()
    result = audit_epsilon(_laplace_sp(1.0), a, a_prime, runs=30_000, alpha=ALPHA, rng=np.random.default_rng(1))
    assert result.epsilon_lower <= 1.0
    assert result.epsilon_lower > 0.2  # the audit is not vacuous: it sees a real part of the privacy loss


@pytest.mark.system  # 20,000 runs a side; test_audits_quick.py catches halved noise with 3,000
def test_halved_noise_is_caught():
    a, a_prime = _pair()
    result = audit_epsilon(_laplace_sp(1.0, scale_factor=0.5), a, a_prime, runs=20_000, alpha=ALPHA,
                           rng=np.random.default_rng(2))
    assert result.epsilon_lower > 1.0, result


def test_non_neighbours_are_refused():
    a, _ = _pair()
    with pytest.raises(ValueError, match="neighbouring"):
        audit_epsilon(_laplace_sp(1.0), a, 1 - a, runs=10, alpha=ALPHA, rng=np.random.default_rng(0))
