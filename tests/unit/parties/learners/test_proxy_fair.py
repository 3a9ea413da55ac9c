"""The proxy of A learned through the randomized-response channel (Sec. 6, the learner ``proxy-fair``)."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.learners.proxy_fair import NO_REPORTERS, fit_channel_proxy
from parley.protocols.errors import QueryError
from parley.protocols.estimators.rr_estimators import privatize


def test_channel_proxy_recovers_p_a_given_x_y_from_a_noisy_partial_release():
    rng = np.random.default_rng(51)
    n = 20_000
    X = rng.normal(size=(n, 2))
    y = (rng.random(n) < 0.4).astype(np.int64)
    truth = 1.0 / (1.0 + np.exp(-(-0.3 + 1.2 * X[:, 0] - 0.8 * X[:, 1] + 1.0 * y)))   # P(A = 1 | x, y)
    a = (rng.random(n) < truth).astype(np.int64)
    z = privatize(a, 1.0, 2, rng, report_probability=0.5).astype(np.int64)
    proxy = fit_channel_proxy(X, y, z, 1.0, 2, with_label=True, C=100.0)
    assert np.abs(proxy(X, y)[:, 1] - truth).mean() < 0.05     # 0.031 at this seed: sampling error at eps = 1
    # Read as if Z were A (no channel), the same model is pulled towards 1/2 by a factor of about 2 pi - 1.
    plain = fit_channel_proxy(X, y, z, 700.0, 2, with_label=True, C=100.0)
    assert np.abs(plain(X, y)[:, 1] - truth).mean() > 0.1


def test_channel_proxy_refuses_a_release_without_reporters():
    with pytest.raises(QueryError, match=NO_REPORTERS):
        fit_channel_proxy(np.zeros((3, 1)), np.zeros(3), np.full(3, -1), 1.0, 2)
