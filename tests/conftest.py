"""Shared fixtures: small signed worlds for unit tests, one Ray session for integration tests."""

from __future__ import annotations

import numpy as np
import pytest

from parley.parties.wire import Identity, Keyring


@pytest.fixture
def identities() -> dict[str, Identity]:
    """Compliance, a registered data center, an observer, and an outsider not in the keyring."""
    return {
        "compliance": Identity.generate("compliance", "compliance"),
        "data-center": Identity.generate("data-center", "data-center"),
        "observer": Identity.generate("observer", "observer"),
        "outsider": Identity.generate("outsider", "data-center"),
    }


@pytest.fixture
def keyring(identities) -> Keyring:
    ring = Keyring()
    for name in ("compliance", "data-center", "observer"):
        ring.add(identities[name].key_entry())
    return ring


@pytest.fixture
def audit_arrays() -> tuple[np.ndarray, np.ndarray]:
    """A small audit set: a (30 advantaged, 10 disadvantaged) and labels y."""
    rng = np.random.default_rng(7)
    a = np.array([1] * 30 + [0] * 10, dtype=np.int8)
    rng.shuffle(a)
    y = (rng.random(40) < 0.5).astype(np.int8)
    y[:2] = 1  # make sure both groups have positives for EO...
    y[np.flatnonzero(a == 0)[:2]] = 1
    return a, y


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray instance shared by every test that needs it."""
    import ray

    from parley.parties.actors import ensure_ray

    ensure_ray(num_cpus=2)
    yield ray
    ray.shutdown()
