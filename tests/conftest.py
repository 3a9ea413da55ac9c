"""Shared fixtures: small signed worlds for unit tests, one Ray session for integration tests; the test tiers.

The tiers (docs/design.md, "Test tiers"): ``python -m pytest`` runs the default tier, in process and sized
for speed; ``python -m pytest -m system`` runs the system tier, which .ci/run runs after it. A test that
starts Ray is marked ``ray`` (a test that asks for the ``ray_session`` fixture, even through another fixture,
is marked here), and every ``ray`` or ``cluster`` test belongs to the system tier, so that
``python -m pytest -m "not ray"`` never starts Ray. Reliability campaigns stay out of both tiers.
"""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pytest

from parley.parties.run_secrets import SECRET_BYTES, RunSecrets
from parley.parties.wire import Identity, Keyring


@pytest.fixture(autouse=True)
def _replayable_secrets(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run a test starts without ``secrets`` gets secrets fixed by the test's id and its count of runs.

    Outside the tests a run draws its secrets from OS entropy, so its noise differs from one run to the next;
    a test must not pass or fail by that luck. Fixing them is the explicit act the docs ask for, done once
    here: the noise of every test replays exactly, and two runs in one test still get different secrets. A
    test marked ``fresh_secrets`` keeps OS entropy (the tests of that promise).
    """
    if request.node.get_closest_marker("fresh_secrets") is not None:
        return
    counter = itertools.count()
    nodeid = request.node.nodeid.encode()

    def fixed(cls: type[RunSecrets]) -> RunSecrets:
        key = hashlib.blake2b(nodeid + b"#%d" % next(counter), digest_size=SECRET_BYTES).digest()
        return cls(key)

    monkeypatch.setattr(RunSecrets, "fresh", classmethod(fixed))


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

    from parley.parties.ray.cluster import ensure_ray

    ensure_ray(num_cpus=2)
    yield ray
    ray.shutdown()


@pytest.hookimpl(tryfirst=True)  # before -m deselects anything
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``ray`` what asks for the Ray session, and ``system`` what starts Ray (a reliability campaign aside)."""
    for item in items:
        if "ray_session" in getattr(item, "fixturenames", ()) and item.get_closest_marker("ray") is None:
            item.add_marker(pytest.mark.ray)
        if item.get_closest_marker("cluster") is not None and item.get_closest_marker("ray") is None:
            item.add_marker(pytest.mark.ray)  # the nodes are Ray
        if item.get_closest_marker("ray") is not None and item.get_closest_marker("reliability") is None:
            item.add_marker(pytest.mark.system)
