"""Each process hashes a large payload once: a party that answers with the array it verified signs it unhashed.

An echo round trip of a 3.2 MB array (400 x 1,000 float64) over Ray: the querier seals the query
(one hash), the echo party verifies it (one hash) and seals its reply carrying the same array (no
hash: the bytes it verified never left its process and are read-only), the querier verifies the
reply (one hash: those bytes crossed a process boundary). The meter counts every byte the wire
feeds to SHA-256 or BLAKE3 in each process, so the test reads what was hashed, not what the code claims.
"""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from parley.parties import wire
from parley.parties.network import Network
from parley.parties.party import check_reply
from parley.parties.ray.deployment import RayDeployment
from parley.parties.transcript import TranscriptWriter, check_transcript
from tests.party_world import Echo, HashMeter, query

# The round trip over Ray is marked ray (the system tier); the checks in this process stay in the default tier.

DC = "data-center"


@pytest.mark.ray
@pytest.mark.parametrize("logged", [True, False], ids=["through-the-network", "deployment-call"])
def test_an_echo_round_trip_hashes_each_payload_once_per_process(ray_session, identities, keyring, tmp_path,
                                                                 logged):
    deployment = RayDeployment()
    deployment.add("compliance", Echo, identities["compliance"], keyring)
    transcript = TranscriptWriter(tmp_path / "transcript.jsonl", keyring, identities)
    network = Network(deployment, transcript)
    network.route("compliance", "compliance")
    H = np.random.default_rng(0).random((400, 1000))
    try:
        deployment.call("compliance", "meter_hashing")
        meter = HashMeter.install()
        envelope = query(identities[DC], H, query_id="echo")
        reply = network.send(envelope) if logged else deployment.call("compliance", "receive", envelope)
        answer = check_reply(reply, keyring, DC, "metric-answer")
        here = meter.bytes
        HashMeter.uninstall()
        there = deployment.call("compliance", "hashed_bytes")
    finally:
        HashMeter.uninstall()
        deployment.shutdown()
    np.testing.assert_array_equal(answer.payload["values"], H)
    # The querier: its seal and its check of the reply; the echo party: its check of the query only.
    # (Headers and small fields add a few hundred bytes; a second pass over the array adds 3.2 MB.)
    assert 2 * H.nbytes <= here < 2 * H.nbytes + 4096
    assert H.nbytes <= there < H.nbytes + 4096
    transcript.close()
    if logged:
        assert check_transcript(transcript.path).messages == 1  # the query, logged as sent


def test_a_writable_array_is_hashed_again_every_time(identities):
    """Only read-only memory is remembered: an array its owner can still change is never served a stale digest."""
    H = np.random.default_rng(1).random((400, 1000))
    first = wire.payload_digest({"x": H})
    H[7, 7] += 1.0
    assert wire.payload_digest({"x": H}) != first
    frozen = H.copy()
    frozen.flags.writeable = False  # its owner can set the flag back: still hashed every time
    digest = wire.payload_digest({"x": frozen})
    frozen.flags.writeable = True
    frozen[0, 0] += 1.0
    frozen.flags.writeable = False
    assert wire.payload_digest({"x": frozen}) != digest


def test_a_read_only_buffer_is_hashed_once_and_its_digest_is_exact(identities):
    """An array over immutable bytes (as Ray and the transcript deliver them) is hashed once; the digest is the same."""
    H = np.random.default_rng(2).random((400, 1000))
    expected = wire.payload_digest({"x": H}), wire.payload_digest({"y": 1, "x": H})
    received = np.frombuffer(H.tobytes(), dtype=H.dtype).reshape(H.shape)
    meter = HashMeter.install()
    try:
        assert (wire.payload_digest({"x": received}), wire.payload_digest({"y": 1, "x": received})) == expected
        assert H.nbytes <= meter.bytes < H.nbytes + 4096  # the second digest of ``received`` reused its array digest
    finally:
        HashMeter.uninstall()
    view = received[:200]  # a new array object over the same bytes: hashed on its own
    assert wire.payload_digest({"x": view}) == wire.payload_digest({"x": H[:200]})


def _read_only_views(tmp_path):
    """Read-only arrays over memory that can still change, each with the function that changes it."""
    n = 3 * wire.CACHED_BYTES  # above CACHED_BYTES: the array's digest may be cached (the part attacked)
    buf = bytearray(n)
    yield np.frombuffer(memoryview(buf).toreadonly(), dtype=np.uint8), lambda: buf.__setitem__(5, 7)
    path = tmp_path / "shared.bin"
    path.write_bytes(bytes(n))
    with open(path, "rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)

    def rewrite() -> None:  # another writer of the file: the mapping sees its bytes
        with open(path, "r+b") as out:
            out.seek(10)
            out.write(b"\x01")

    yield np.frombuffer(mapped, dtype=np.uint8), rewrite


def test_a_read_only_view_of_changing_memory_is_never_served_a_stale_digest(identities, keyring, tmp_path):
    """The adversary: a read-only view over a bytearray or a shared file mapping, changed after it was hashed.

    ``memoryview.readonly`` forbids writes through the view only; the bytes underneath still change. Each
    digest must be the digest of the bytes as they are, and a receiver must refuse a payload changed after sealing.
    """
    for arr, change in _read_only_views(tmp_path):
        first = wire.payload_digest({"x": arr})
        change()
        assert wire.payload_digest({"x": arr}) != first
        assert wire.payload_digest({"x": arr}) == wire.payload_digest({"x": arr.copy()})
    buf = bytearray(3 * wire.CACHED_BYTES)
    arr = np.frombuffer(memoryview(buf).toreadonly(), dtype=np.uint8)
    envelope = identities[DC].seal("compliance", "metric-query", "raw", {"x": arr, "query_id": "q"})
    buf[:] = b"\xff" * len(buf)  # every byte changed after signing
    with pytest.raises(wire.WireError) as refused:
        wire.verify_envelope(envelope, keyring, "compliance")
    assert refused.value.reason == wire.DIGEST_MISMATCH
