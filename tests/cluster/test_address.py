"""``--address`` checks that need no cluster: malformed, refused, unknown and silent addresses.

Each must fail within the connection timeout, with one typed error naming the address,
before Ray's own client (which retries for minutes) is involved. The ``parley`` command's
one-line output for such an address is checked against a real cluster in test_cluster.py.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator

import pytest

from parley.parties.ray import cluster
from parley.parties.ray.cluster import BAD_ADDRESS, NOT_RAY, UNREACHABLE, ClusterError


def _prefix(message: str) -> str:
    """A regex matching the fixed start of an error message constant (up to its first placeholder)."""
    return "^" + re.escape(message.split("{")[0])


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections (the kernel's backlog) and never answers."""
    server = socket.create_server(("127.0.0.1", 0), backlog=8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.mark.parametrize("address", ["127.0.0.1", "head:port", "head:0", "head:70000", ":6379"])
def test_malformed_address_is_refused_before_any_connection(address: str) -> None:
    with pytest.raises(ClusterError, match=_prefix(BAD_ADDRESS)) as info:
        cluster._check_cluster(address)
    assert repr(address) in str(info.value)


def test_refused_port_and_unknown_host_fail_at_once(closed_port: int) -> None:
    for address, reason in ((f"127.0.0.1:{closed_port}", "Connection refused"),
                            ("no-such-head.invalid:6379", "unknown host 'no-such-head.invalid'")):
        started = time.monotonic()
        with pytest.raises(ClusterError, match=_prefix(UNREACHABLE)) as info:
            cluster._check_cluster(address)
        assert time.monotonic() - started < cluster.CONNECT_TIMEOUT_S
        assert address in str(info.value) and reason in str(info.value)


@pytest.mark.system  # waits out the connection timeout
def test_a_port_that_never_answers_is_not_taken_for_a_cluster(silent_port: int, monkeypatch) -> None:
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 2.0)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # keep this process's Ray settings as they were
    started = time.monotonic()
    with pytest.raises(ClusterError, match=_prefix(NOT_RAY.replace("{address}", f"127.0.0.1:{silent_port}"))):
        cluster._check_cluster(f"127.0.0.1:{silent_port}")
    assert time.monotonic() - started < 4 * 2.0 + 5  # the TCP connect, then the GCS probe's bound

