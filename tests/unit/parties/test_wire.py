"""Envelopes: canonical digests, Ed25519 signatures, verification order, replay guard."""

from __future__ import annotations

import hashlib
import pickle
import random
import struct
import warnings

import numpy as np
import pytest
from blake3 import blake3
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from nacl.signing import SigningKey

from parley.parties import wire
from parley.parties.wire import (
    Envelope,
    Identity,
    KeyEntry,
    Keyring,
    ReplayGuard,
    decode_payload,
    encode_payload,
    payload_digest,
    verify_envelope,
)
from parley.protocols.errors import WireError


def test_digest_is_canonical_and_injective():
    assert payload_digest({"a": 1, "b": [1, 2]}) == payload_digest({"b": [1, 2], "a": 1})
    distinct = [{"x": 1}, {"x": 1.0}, {"x": True}, {"x": "1"}, {"x": ["ab"]}, {"x": ["a", "b"]}, {"x": None}]
    assert len({payload_digest(p) for p in distinct}) == len(distinct)


def test_array_digest_covers_dtype_shape_and_bytes():
    base = np.arange(6, dtype=np.float64)
    digests = {
        payload_digest({"h": base}),
        payload_digest({"h": base.reshape(2, 3)}),
        payload_digest({"h": base.astype(np.float32)}),
        payload_digest({"h": base + 1e-12}),
    }
    assert len(digests) == 4
    # a non-contiguous view hashes like its contiguous copy
    strided = np.arange(12.0).reshape(3, 4)[:, ::2]
    assert payload_digest({"h": strided}) == payload_digest({"h": np.ascontiguousarray(strided)})


def test_json_round_trip_preserves_digest():
    payload = {"metric": "sp", "values": np.array([0.1, -1 / 3]), "H": np.eye(3, dtype=np.int8), "n": 3,
               "decimals": None, "ok": True, "nested": {"x": [1.5, "s"]}}
    again = decode_payload(encode_payload(payload))
    assert payload_digest(again) == payload_digest(payload)


def test_object_arrays_and_foreign_types_are_refused():
    with pytest.raises(WireError) as exc:
        payload_digest({"h": np.array([object()])})
    assert exc.value.reason == wire.INVALID_PAYLOAD
    with pytest.raises(WireError, match="payload.x"):
        payload_digest({"x": {1, 2}})


def test_sealed_envelope_verifies(identities, keyring):
    env = identities["data-center"].seal("compliance", "metric-query", "raw", {"h": np.ones(3)})
    verify_envelope(env, keyring, recipient="compliance")
    assert env.seq == 0 and identities["data-center"].seal("compliance", "k", "raw", {}).seq == 1


def _refusal_reason(env: Envelope, keyring: Keyring, recipient: str = "compliance") -> str:
    with pytest.raises(WireError) as exc:
        verify_envelope(env, keyring, recipient=recipient)
    return exc.value.reason


def test_verification_catches_each_alteration(identities, keyring):
    dc = identities["data-center"]
    env = dc.seal("compliance", "metric-query", "raw", {"h": np.ones(3)})
    assert _refusal_reason(env.model_copy(update={"payload": {"h": np.zeros(3)}}), keyring) == wire.DIGEST_MISMATCH
    assert _refusal_reason(env.model_copy(update={"seq": 99}), keyring) == wire.BAD_SIGNATURE
    assert _refusal_reason(env.model_copy(update={"signature": "00" * 64}), keyring) == wire.BAD_SIGNATURE
    assert _refusal_reason(env.model_copy(update={"signature": "not-hex"}), keyring) == wire.BAD_SIGNATURE
    assert _refusal_reason(env, keyring, recipient="observer") == wire.WRONG_RECIPIENT
    outsider = identities["outsider"].seal("compliance", "metric-query", "raw", {})
    assert _refusal_reason(outsider, keyring) == wire.UNKNOWN_SENDER


def test_forgery_in_anothers_name_fails(identities, keyring):
    """The outsider signs a header claiming to be the data center: the signature does not verify."""
    forger = Identity(name="data-center", role="data-center", private_key=identities["outsider"].private_key)
    assert _refusal_reason(forger.seal("compliance", "metric-query", "raw", {}), keyring) == wire.BAD_SIGNATURE


def test_signatures_are_standard_ed25519_byte_for_byte():
    """libsodium's signatures are RFC 8032's: OpenSSL (cryptography) derives the same key and accepts them."""
    rng = random.Random(8032)
    for _ in range(40):
        seed = rng.randbytes(32)
        signer = Identity("dc", "data-center", SigningKey(seed))
        reference = Ed25519PrivateKey.from_private_bytes(seed)
        assert signer.public_key_hex == reference.public_key().public_bytes_raw().hex()
        env = signer.seal("compliance", "metric-query", "raw", {"h": np.arange(rng.randrange(1, 300))})
        assert bytes.fromhex(env.signature) == reference.sign(wire.header_bytes(env.header()))


#: The order of Ed25519's base point (RFC 8032, section 5.1).
_L = 2**252 + 27742317777372353535851937790883648493


def test_malleated_and_small_order_signatures_are_refused(identities, keyring):
    """Two forgeries without the private key: S + L in place of S, and a small-order key's trivial signature.

    OpenSSL's check (cryptography) accepts the second: with the identity point as the public key,
    R = identity and S = 0 satisfy [S]B = R + [k]A for every message. libsodium refuses both.
    """
    env = identities["data-center"].seal("compliance", "metric-query", "raw", {"h": np.ones(3)})
    raw = bytes.fromhex(env.signature)
    malleated = raw[:32] + (int.from_bytes(raw[32:], "little") + _L).to_bytes(32, "little")
    assert _refusal_reason(env.model_copy(update={"signature": malleated.hex()}), keyring) == wire.BAD_SIGNATURE
    identity_point = bytes([1]) + bytes(31)
    weak = Keyring()
    weak.add(KeyEntry(name="data-center", role="data-center", public_key=identity_point.hex()))
    trivial = (identity_point + bytes(32)).hex()
    assert not weak.signed("data-center", trivial, b"any message")
    assert _refusal_reason(env.model_copy(update={"signature": trivial}), weak) == wire.BAD_SIGNATURE
    assert not keyring.signed("data-center", env.signature[:-2], wire.header_bytes(env.header()))  # 63 bytes


def test_a_signature_verifies_only_in_the_spelling_the_transcript_accepts(identities, keyring):
    """Upper-case hex or a trailing newline decode to the same bytes; the wire refuses them as parley verify does."""
    env = identities["data-center"].seal("compliance", "metric-query", "raw", {"h": np.ones(3)})
    header = wire.header_bytes(env.header())
    assert keyring.signed("data-center", env.signature, header)
    for spelling in (env.signature.upper(), env.signature + "\n", " " + env.signature, None, 7, env.signature.encode()):
        assert not keyring.signed("data-center", spelling, header)
    assert _refusal_reason(env.model_copy(update={"signature": env.signature.upper()}), keyring) == wire.BAD_SIGNATURE
    with pytest.raises(WireError) as exc:
        keyring.signed("nobody", env.signature, header)
    assert exc.value.reason == wire.UNKNOWN_SENDER


@pytest.mark.parametrize("key", ["ab" * 31, "zz" * 32, "AB" * 32])
def test_a_malformed_key_entry_refuses_with_a_typed_error(identities, key):
    """A keyring built through the API may hold a key that is not 32 bytes of hex: bad-signature, never ValueError."""
    ring = Keyring()
    ring.add(KeyEntry(name="data-center", role="data-center", public_key=key))
    env = identities["data-center"].seal("compliance", "metric-query", "raw", {})
    assert _refusal_reason(env, ring) == wire.BAD_SIGNATURE


def test_replay_guard_rejects_nonce_and_stale_sequence(identities):
    dc = identities["data-center"]
    guard = ReplayGuard()
    first, second = dc.seal("c", "k", "raw", {}), dc.seal("c", "k", "raw", {})
    guard.check(first)
    guard.record(first)
    with pytest.raises(WireError, match="already seen"):
        guard.check(first)
    guard.check(second)
    guard.record(second)
    stale = first.model_copy(update={"nonce": "ff" * 16})
    with pytest.raises(WireError, match="not above the last accepted 1"):
        guard.check(stale)


def test_identity_and_keyring_survive_pickling(identities, keyring):
    dc = pickle.loads(pickle.dumps(identities["data-center"]))
    ring = pickle.loads(pickle.dumps(keyring))
    verify_envelope(dc.seal("compliance", "k", "raw", {"v": 1}), ring)
    assert Keyring.from_json(keyring.to_json()).to_json() == keyring.to_json()


def test_empty_arrays_hash_and_round_trip():
    payload = {"h": np.zeros((0, 40)), "v": np.array([], dtype=np.int8)}
    assert payload_digest(decode_payload(encode_payload(payload))) == payload_digest(payload)
    assert payload_digest(payload) != payload_digest({"h": np.zeros((0, 39)), "v": np.array([], dtype=np.int8)})


def test_the_digest_is_the_documented_encoding():
    """Known answer: SHA-256 over the tagged encoding, an array's bytes entering as their BLAKE3 digest."""
    for arr in (np.arange(3, dtype="<f8"), np.random.default_rng(3).random((300, 500))):
        meta = f"<f8|{','.join(map(str, arr.shape))}".encode()
        expected = hashlib.sha256(
            b"d" + struct.pack("<Q", 1) + b"s" + struct.pack("<Q", 1) + b"h"
            + b"a" + struct.pack("<Q", len(meta)) + meta + struct.pack("<Q", arr.nbytes)
            + b"b" + blake3(arr.tobytes()).digest()).hexdigest()
        assert payload_digest({"h": arr}) == expected


def test_a_zero_d_array_and_its_one_element_array_hash_apart():
    """np.array(x) and np.array([x]) have the same bytes; the shape must tell them apart (an edit to
    ``"shape"`` in a transcript would otherwise verify)."""
    for value in (0.25, 3):
        scalar, vector = np.array(value), np.array([value])
        assert payload_digest({"x": scalar}) != payload_digest({"x": vector})
        assert decode_payload(encode_payload({"x": scalar}))["x"].shape == ()
        assert payload_digest(decode_payload(encode_payload({"x": scalar}))) == payload_digest({"x": scalar})


def test_a_cached_digest_is_never_served_after_the_strides_change_in_place():
    """The adversary in the process: a read-only array (cached digest) whose strides it then rewrites."""
    big = np.random.default_rng(4).random(3 * wire.CACHED_BYTES // 8)
    received = np.frombuffer(big.tobytes(), dtype=big.dtype)  # immutable bytes: its digest is cached
    payload_digest({"x": received})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # setting strides is deprecated (numpy 2.4), not yet refused
        try:
            received.shape = (received.size // 2, 2)
            received.strides = (16, 0)
        except (AttributeError, ValueError, TypeError):
            pytest.skip("this numpy no longer sets strides in place")
    assert payload_digest({"x": received}) == payload_digest({"x": received.copy()})


def test_large_arrays_detect_any_change():
    big = np.random.default_rng(0).random(400_000)  # 3.2 MB, above CACHED_BYTES
    digest = payload_digest({"h": big})
    assert payload_digest({"h": big.copy()}) == digest
    for position in (0, wire.CACHED_BYTES // 8, big.size - 1):
        changed = big.copy()
        changed[position] += 1e-9
        assert payload_digest({"h": changed}) != digest
    assert payload_digest({"h": big[:-1]}) != digest


@pytest.mark.parametrize("size", [3, 40_000])
def test_envelopes_pickle_in_band_or_out_of_band(identities, keyring, size):
    env = identities["data-center"].seal("compliance", "metric-query", "raw", {"h": np.arange(size, dtype=float)})
    buffers = []
    blob = pickle.dumps(env, protocol=5, buffer_callback=buffers.append)
    copy = pickle.loads(blob, buffers=buffers)
    verify_envelope(copy, keyring)
    assert copy.header() == env.header() and copy.signature == env.signature
    np.testing.assert_array_equal(copy.payload["h"], env.payload["h"])
    assert len(buffers) == (0 if size * 8 <= 64 * 1024 else 1)
