"""CKKS arithmetic of ``he``: the fixed parameters, the packing, C's weights and its masked, flooded answers.

What it computes
----------------
The pure functions and small classes of the compliance party's computation on the querier's ciphertexts
(Cheon, Kim, Kim & Song, ASIACRYPT 2017; Microsoft SEAL through TenSEAL's ``sealapi``): the SEAL context of the
fixed parameters (:func:`seal_context`, :func:`seeded_context`), SEAL objects to and from bytes
(:func:`to_bytes`, :func:`from_bytes`), the packing of predictions into slots (:class:`Layout`, :func:`layout`,
:func:`pack`), C's weights (:func:`weights`), the rotate-and-sum with its Galois keys (:func:`rotation_steps`,
:func:`galois_element`, :func:`check_rotations`), the mask (:func:`masked_answers`), the noise flooding
(:func:`flood_sigma`, :func:`flood_normals`, :func:`flood`, :func:`compute_answers`) and the querier's keys
(:class:`QuerierKeys`). The protocol that runs them (the queries C accepts, the public contexts it keeps, the
decryptions it counts) is :mod:`parley.protocols.mechanisms.homomorphic`; the flood's s and tau are its
:class:`~parley.protocols.mechanisms.homomorphic.HeParams` (``statistical_security``, ``decryptions``).

Parameters (fixed: :data:`POLY_MODULUS_DEGREE`, :data:`COEFF_MODULUS_BITS`)
---------------------------------------------------------------------------
N = 8192 (4,096 slots), coefficient moduli of 53, 53, 52 bits and a 60-bit special prime:
218 bits, the largest modulus the HomomorphicEncryption.org standard (Albrecht et al., 2018,
Table 1) allows at 128-bit classical security for N = 8192 with a ternary secret; SEAL checks it
(``SEC_LEVEL_TYPE.TC128``). Nothing is rescaled: the predictions are encoded at 2^55, C's weights
at 2^50 and its mask at 2^48, so the answer comes back at scale 2^153 under a 158-bit modulus;
every slot is at most 2 in absolute value (below), which leaves 3 bits of headroom.

Packing. A model's n predictions fill a block of B = next_power_of_two(n) slots (zero-padded),
4096 / B models to a ciphertext; n > 4096 takes c = ceil(n / 4096) ciphertexts per model
(B = 4096), which C multiplies and adds before summing.

What C computes
---------------
Every metric ``he`` answers is a difference of group means on a label slice I, or the
covariance, hence one inner product with weights C computes from A and y in the clear:

    gap  = K / N1 - (T - K) / N0 = sum_{j in I} h_j w_j,   w_j = a_j / N1 - (1 - a_j) / N0,
    cov  = K / n - T N1 / n^2    = sum_j h_j w_j,         w_j = a_j / n - N1 / n^2,

with K = sum h a and T = sum h over the slice, N1 and N0 its group sizes (C's plaintext; an empty
group's mean counts as 0, as in ``mpc``). sum_j |w_j| <= 2, so every partial sum is at most 2.
Per ciphertext: multiply by the plaintext weights, rotate-and-sum within blocks (log2 B rotations,
Galois keys for the steps 1, 2, ..., B/2), then

(a) mask: multiply by the plaintext 0/1 vector that is 1 at each block's first slot. Without it
    slot b B + r holds the window sum of slots b B + r ... b B + r + B - 1: partial inner products
    whose consecutive differences are h_j w_j, i.e. A itself (:func:`naive_answers`, kept for the
    attack test only).
(b) flood: add a fresh public-key encryption of complex Gaussian noise. CKKS decryption returns
    the message plus the ciphertext's error, and that error is a function of C's plaintexts (the
    weights' and the mask's encoding, and the querier's own encryption error times them, which the
    querier knows): Li & Micciancio (EUROCRYPT 2021) recover secrets from such decryptions
    (IND-CPA-D). Flooding with Gaussian noise of standard deviation sigma = sqrt(12 tau) 2^(s/2) t per
    coefficient, t a bound on the error's size, gives s bits of statistical security against an
    adversary that sees tau decryptions (Li, Micciancio, Schultz & Sorrell, CRYPTO 2022, via Renyi
    divergence; the formula OpenFHE's CKKS noise flooding uses). Parley takes t as a bound on the
    error's Euclidean norm over all N coefficients (at least its largest coefficient), measured
    at most 2^-47.2 of the scale at n = 1,000 and 2^-44.5 at n = 10,000 (``tests/unit/protocols/test_he.py``
    checks it stays below :data:`NOISE_BOUND_BITS`). Complex slot noise with E|z|^2 = N sigma^2 is
    a spherical Gaussian on the coefficients (the canonical embedding is a scaled isometry), so
    it floods every coefficient, the imaginary parts' too. The key holder reads the flood in the clear in
    every non-answer slot, so it is drawn from SHAKE-256 keyed by 256 bits of C's noise stream
    (:func:`flood_normals`), never from a generator's raw outputs.
    The fresh encryption also re-randomises the ciphertext's second component, which otherwise is a known
    linear function of C's plaintexts.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from parley.protocols.errors import QueryError
from parley.protocols.mechanisms.count_dp import SLICES

__all__ = ["BAD_BLOB", "COEFF_MODULUS_BITS", "FloodParams", "INPUT_SCALE_BITS", "Layout", "MASK_SCALE_BITS",
           "MISSING_ROTATIONS", "NOISE_BOUND_BITS", "OUTPUT_SCALE_BITS", "POLY_MODULUS_DEGREE", "QuerierKeys", "SLOTS",
           "WEIGHT_SCALE_BITS", "check_rotations", "compute_answers", "context_id", "flood", "flood_normals",
           "flood_sigma", "from_bytes", "galois_element", "layout", "masked_answers", "naive_answers", "pack",
           "rotation_steps", "seal_context", "seeded_context", "to_bytes", "weights"]

#: Ring dimension N (4,096 slots).
POLY_MODULUS_DEGREE = 8192
SLOTS = POLY_MODULUS_DEGREE // 2
#: Coefficient moduli (bits): three data primes and SEAL's special prime for key switching; 218 bits in all.
COEFF_MODULUS_BITS = (53, 53, 52, 60)
#: Scales (log2) of the querier's predictions, C's weights and C's mask; the answer's scale is their product.
INPUT_SCALE_BITS, WEIGHT_SCALE_BITS, MASK_SCALE_BITS = 55, 50, 48
OUTPUT_SCALE_BITS = INPUT_SCALE_BITS + WEIGHT_SCALE_BITS + MASK_SCALE_BITS
#: log2 of t: the bound, relative to the answer's scale, on the Euclidean norm of the error polynomial.
NOISE_BOUND_BITS = -40
#: Refusal of a blob SEAL cannot load as the expected object (:func:`from_bytes`).
BAD_BLOB = "protocol {name!r}: {what} is not a valid {kind} for the he parameters ({detail})"
#: Refusal of Galois keys without a rotation the block needs (:func:`check_rotations`).
MISSING_ROTATIONS = ("protocol {name!r}: galois_keys lack the rotation keys for steps {missing} (a block of {block} "
                     "slots needs steps {needed})")


class FloodParams(Protocol):
    """The flood's parameters: ``he``'s :class:`~parley.protocols.mechanisms.homomorphic.HeParams` has them."""

    @property
    def statistical_security(self) -> int:
        """s: an adversary's advantage from the decryption error <= 2^-s."""
        ...

    @property
    def decryptions(self) -> int:
        """tau: decrypted ciphertexts the flooding covers."""
        ...


@lru_cache(maxsize=1)
def _seal() -> Any:
    import tenseal.sealapi as sealapi

    return sealapi


@lru_cache(maxsize=1)
def seal_context() -> Any:
    """The SEAL context of the fixed parameters (C builds it itself: it never takes parameters from a querier)."""
    return _context(None)


def seeded_context(rng: np.random.Generator) -> Any:
    """The same parameters with SEAL's randomness (keys, encryption) drawn from a Blake2xb PRNG seeded by ``rng``.

    Keys and ciphertexts of either context work with the other (SEAL identifies parameters by their hash,
    which leaves the generator out); seeding makes a run's keys, ciphertexts and bytes follow ``rng``, which
    must be the holder's secret stream (:mod:`parley.parties.run_secrets`), never one the public seed gives.
    """
    return _context([int(v) for v in rng.integers(0, 2**63, size=8, dtype=np.int64)])


def _context(seed: list[int] | None) -> Any:
    s = _seal()
    parms = s.EncryptionParameters(s.SCHEME_TYPE.CKKS)
    parms.set_poly_modulus_degree(POLY_MODULUS_DEGREE)
    parms.set_coeff_modulus(s.CoeffModulus.Create(POLY_MODULUS_DEGREE, list(COEFF_MODULUS_BITS)))
    if seed is not None:
        parms.set_random_generator(s.Blake2xbPRNGFactory(seed))
    return s.SEALContext(parms, True, s.SEC_LEVEL_TYPE.TC128)


def to_bytes(obj: Any) -> np.ndarray:
    """A SEAL object (key, ciphertext) as the uint8 array of its serialization (SEAL saves to files only)."""
    fd, path = tempfile.mkstemp(prefix="parley-he-")
    os.close(fd)
    try:
        obj.save(path)
        with open(path, "rb") as f:
            return np.frombuffer(f.read(), dtype=np.uint8)
    finally:
        os.unlink(path)


def from_bytes(kind: str, blob: Any, name: str, what: str, fresh: bool = True) -> Any:
    """Load a ``kind`` ("Ciphertext", "PublicKey", "GaloisKeys") from a uint8 array, checked against the context.

    SEAL validates what it loads (sizes, moduli, coefficient ranges); anything it refuses, and any
    ciphertext that is not a two-component one in NTT form at the top level and the expected scale (2^55 for
    the querier's, ``fresh``; 2^153 for an answer), or is transparent (its second component zero: SEAL
    refuses to multiply it), is a QueryError naming ``what``.
    """
    if not (isinstance(blob, np.ndarray) and blob.dtype == np.uint8 and blob.ndim == 1 and blob.size > 0):
        got = f"array of dtype {blob.dtype} and shape {blob.shape}" if isinstance(blob, np.ndarray) \
            else type(blob).__name__
        raise QueryError(BAD_BLOB.format(name=name, what=what, kind=kind, detail=f"expected a uint8 vector, got {got}"))
    s = _seal()
    context = seal_context()
    obj = getattr(s, kind)()
    fd, path = tempfile.mkstemp(prefix="parley-he-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob.tobytes())
        obj.load(context, path)
    except Exception as exc:  # SEAL raises ValueError/RuntimeError/... for every malformed input
        raise QueryError(BAD_BLOB.format(name=name, what=what, kind=kind, detail=str(exc)[:200])) from None
    finally:
        os.unlink(path)
    if kind == "Ciphertext":
        bits = INPUT_SCALE_BITS if fresh else OUTPUT_SCALE_BITS
        top = context.first_parms_id()
        # SEAL loads a ciphertext outside NTT form, or a transparent one (second component zero), and then
        # refuses to compute on it: both are refused here, by name, before any work
        if obj.size() != 2 or list(obj.parms_id()) != list(top) or not math.isclose(obj.scale, 2.0 ** bits) \
                or not obj.is_ntt_form() or obj.is_transparent():
            detail = f"not a non-transparent two-component NTT-form ciphertext at the top level and scale 2^{bits}"
            raise QueryError(BAD_BLOB.format(name=name, what=what, kind=kind, detail=detail))
    return obj


@dataclass(frozen=True)
class Layout:
    """Where model i's predictions sit: block size B, ciphertexts per model c, models per ciphertext k."""

    n: int
    m: int
    block: int
    chunks: int
    per_ciphertext: int

    @property
    def ciphertexts(self) -> int:
        """Ciphertexts C returns: one per model (c > 1), else one per group of k packed models."""
        return self.m if self.chunks > 1 else -(-self.m // self.per_ciphertext)

    @property
    def sent(self) -> int:
        """Ciphertexts the querier sends: c per model, or one per group of k models."""
        return self.m * self.chunks if self.chunks > 1 else self.ciphertexts

    def answer_slot(self, i: int) -> tuple[int, int]:
        """(returned ciphertext, slot) of model i's answer."""
        if self.chunks > 1:
            return i, 0
        return i // self.per_ciphertext, (i % self.per_ciphertext) * self.block


def layout(n: int, m: int) -> Layout:
    """The packing of m models over n people (module docstring, "Packing")."""
    if n <= SLOTS:
        block = 1 << max(0, (n - 1).bit_length())
        return Layout(n, m, block, 1, SLOTS // block)
    return Layout(n, m, SLOTS, -(-n // SLOTS), 1)


def pack(H: np.ndarray, lay: Layout) -> list[np.ndarray]:
    """The querier's slot vectors, one per ciphertext it sends (model blocks, or model chunks)."""
    vectors = []
    if lay.chunks > 1:
        for row in H:
            padded = np.zeros(lay.chunks * SLOTS)
            padded[: lay.n] = row
            vectors += list(padded.reshape(lay.chunks, SLOTS))
        return vectors
    for start in range(0, lay.m, lay.per_ciphertext):
        v = np.zeros(SLOTS)
        for b, row in enumerate(H[start: start + lay.per_ciphertext]):
            v[b * lay.block: b * lay.block + lay.n] = row
        vectors.append(v)
    return vectors


def weights(metric: str, a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C's weights w (length n): the metric of a model h is sum_j h_j w_j (module docstring)."""
    a = np.asarray(a, dtype=np.float64)
    label = SLICES[metric][0]
    mask = np.ones(a.shape, dtype=bool) if label is None else (np.asarray(y) == label)
    if metric == "cov":
        n = a.shape[0]
        centred: np.ndarray = a / n - a.sum() / (n * n)
        return centred
    n1, n0 = float(a[mask].sum()), float(mask.sum() - a[mask].sum())
    w1 = a / n1 if n1 > 0 else np.zeros_like(a)
    w0 = (1.0 - a) / n0 if n0 > 0 else np.zeros_like(a)
    return np.where(mask, w1 - w0, 0.0)


def context_id(public_key: np.ndarray, galois_keys: np.ndarray) -> str:
    """SHA-256 (hex) of a public context's bytes: how a later query names a context sent before."""
    import hashlib

    h = hashlib.sha256()
    for blob in (public_key, galois_keys):
        data = np.ascontiguousarray(blob).tobytes()
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def rotation_steps(block: int) -> list[int]:
    """The rotation steps 1, 2, ..., block/2 of the rotate-and-sum within blocks of ``block`` slots (none for 1)."""
    return [1 << k for k in range(max(0, (block - 1).bit_length()))]


def galois_element(step: int) -> int:
    """SEAL's Galois element of a left rotation by ``step`` slots: 3^step mod 2N."""
    return pow(3, step, 2 * POLY_MODULUS_DEGREE)


def check_rotations(galois_keys: Any, block: int, name: str) -> None:
    """Refuse (QueryError, :data:`MISSING_ROTATIONS`) Galois keys without a rotation the block needs.

    SEAL would raise in the middle of the computation; the refusal names the missing steps instead.
    """
    steps = rotation_steps(block)
    missing = [step for step in steps if not galois_keys.has_key(galois_element(step))]
    if missing:
        raise QueryError(MISSING_ROTATIONS.format(name=name, missing=", ".join(map(str, missing)), block=block,
                                                  needed=", ".join(map(str, steps))))


def flood_sigma(params: FloodParams) -> float:
    """Per-coefficient standard deviation of the flood, relative to the answer's scale: sqrt(12 tau) 2^(s/2) t."""
    sigma: float = (math.sqrt(12.0 * params.decryptions) * 2.0 ** (params.statistical_security / 2)
                    * 2.0 ** NOISE_BOUND_BITS)
    return sigma


class _Keys:
    """C's view of the querier's public context: the public key and the Galois keys (no secret key exists here)."""

    def __init__(self, public_key: Any, galois_keys: Any) -> None:
        s = _seal()
        context = seal_context()
        self.encoder = s.CKKSEncoder(context)
        self.evaluator = s.Evaluator(context)
        self.encryptor = s.Encryptor(context, public_key)
        self.public_key = public_key
        self.galois = galois_keys


def _times(ct: Any, w: np.ndarray, keys: _Keys) -> Any:
    """``ct`` times the plaintext weights at 2^50.

    All-zero weights (SEAL refuses a product that is transparent) give a fresh encryption of zeros at
    the product's scale.
    """
    s = _seal()
    out = s.Ciphertext()
    if not np.any(w):
        pz = s.Plaintext()
        keys.encoder.encode(list(np.zeros(SLOTS)), ct.parms_id(), ct.scale * 2.0 ** WEIGHT_SCALE_BITS, pz)
        keys.encryptor.encrypt(pz, out)
        return out
    pw = s.Plaintext()
    keys.encoder.encode(list(w), ct.parms_id(), 2.0 ** WEIGHT_SCALE_BITS, pw)
    keys.evaluator.multiply_plain(ct, pw, out)
    return out


def _inner_products(cts: Sequence[Any], w: np.ndarray, lay: Layout, keys: _Keys) -> list[Any]:
    """Weights, then rotate-and-sum within blocks: one ciphertext per returned answer group, unmasked."""
    s = _seal()
    ev = keys.evaluator
    # the same weights in every block (or in every chunk of a model)
    k = lay.per_ciphertext
    w_vectors = pack(w[None, :], Layout(lay.n, 1, lay.block, lay.chunks, 1)) if lay.chunks > 1 \
        else pack(np.tile(w, (k, 1)), Layout(lay.n, k, lay.block, 1, k))
    out = []
    for g in range(lay.ciphertexts):
        if lay.chunks > 1:
            acc = None
            for k in range(lay.chunks):
                x = _times(cts[g * lay.chunks + k], w_vectors[k], keys)
                if acc is None:
                    acc = x
                else:
                    ev.add_inplace(acc, x)
            x = acc
        else:
            x = _times(cts[g], w_vectors[0], keys)
        step = 1
        while step < lay.block:
            r = s.Ciphertext()
            ev.rotate_vector(x, step, keys.galois, r)
            ev.add_inplace(x, r)
            step *= 2
        out.append(x)
    return out


def naive_answers(cts: Sequence[Any], w: np.ndarray, lay: Layout, keys: _Keys) -> list[Any]:
    """The naive computation (weights, rotate-and-sum), neither masked nor flooded.

    Kept for the attack test only (``tests/unit/protocols/test_he.py``): its other slots hold partial
    inner products from which the key holder reads A. No protocol option runs it.
    """
    return _inner_products(cts, w, lay, keys)


def masked_answers(cts: Sequence[Any], w: np.ndarray, lay: Layout, keys: _Keys) -> list[Any]:
    """(a): the inner products times the plaintext 0/1 vector that is 1 at each block's first slot (not flooded)."""
    s = _seal()
    mu = np.zeros(SLOTS)
    mu[:: lay.block] = 1.0
    out = []
    for x in _inner_products(cts, w, lay, keys):
        pm = s.Plaintext()
        keys.encoder.encode(list(mu), x.parms_id(), 2.0 ** MASK_SCALE_BITS, pm)
        masked = s.Ciphertext()
        keys.evaluator.multiply_plain(x, pm, masked)
        out.append(masked)
    return out


def flood_normals(rng: np.random.Generator) -> np.ndarray:
    """SLOTS complex normals (real and imaginary parts N(0, 1), independent): SHAKE-256 keyed by 256 bits of ``rng``.

    The key holder decrypts the flood in the clear in every slot but the answers'. Drawn from ``rng`` itself
    (a generator that need not be a CSPRNG) those slots would hand it thousands of its outputs, from which
    its state, hence the answer slots' flood, could be recovered; SHAKE-256 output reveals nothing of its key,
    and the key (never revealed) comes from C's secret stream. Box-Muller on 53-bit uniforms in (0, 1).
    """
    import hashlib

    words = np.frombuffer(hashlib.shake_256(b"parley he flood" + rng.bytes(32)).digest(16 * SLOTS), dtype="<u8")
    u = ((words >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53
    radius, angle = np.sqrt(-2.0 * np.log(u[:SLOTS])), 2.0 * math.pi * u[SLOTS:]
    return radius * np.cos(angle) + 1j * radius * np.sin(angle)


def flood(ct: Any, keys: _Keys, params: FloodParams, rng: np.random.Generator, encryptor: Any = None) -> Any:
    """(b): ``ct`` plus a fresh public-key encryption of complex Gaussian slot noise (in place; returned).

    ``encryptor``: a public-key encryptor whose randomness comes from C's stream (:func:`seeded_context`);
    made from ``rng`` when not given.
    """
    s = _seal()
    if encryptor is None:
        encryptor = s.Encryptor(seeded_context(rng), keys.public_key)
    # complex slot noise z with E|z|^2 = N sigma^2 is N(0, sigma^2) on every coefficient (module docstring, (b))
    tau = flood_sigma(params) * math.sqrt(POLY_MODULUS_DEGREE)
    z = flood_normals(rng) * (tau / math.sqrt(2.0))
    pf = s.Plaintext()
    keys.encoder.encode(list(z), ct.parms_id(), ct.scale, pf)
    noise = s.Ciphertext()
    # the encryption's own randomness (u, e1, e2) from C's secret stream too (replayed with the secrets file)
    encryptor.encrypt(pf, noise)
    keys.evaluator.add_inplace(ct, noise)
    return ct


def compute_answers(cts: Sequence[Any], w: np.ndarray, lay: Layout, keys: _Keys, params: FloodParams,
                    rng: np.random.Generator) -> list[Any]:
    """C's answer ciphertexts: inner products, (a) masked to each block's first slot, (b) noise-flooded."""
    encryptor = _seal().Encryptor(seeded_context(rng), keys.public_key)
    return [flood(x, keys, params, rng, encryptor) for x in masked_answers(cts, w, lay, keys)]


@lru_cache(maxsize=1)
def _simulation_keys() -> QuerierKeys:
    return QuerierKeys()


class QuerierKeys:
    """The querier's CKKS keys: it alone holds the secret key; :meth:`public_context` is what travels."""

    def __init__(self, block: int = SLOTS, rng: np.random.Generator | None = None) -> None:
        s = _seal()
        # SEAL draws the keys' and encryptions' randomness from this context's generator: seeded from ``rng``
        context = seal_context() if rng is None else seeded_context(rng)
        keygen = s.KeyGenerator(context)
        self._secret = keygen.secret_key()
        self.public_key = s.PublicKey()
        keygen.create_public_key(self.public_key)
        # Galois keys for the rotations by 1, 2, ..., block/2 (SEAL's generator 3: element 3^step mod 2N)
        self.galois_keys = s.GaloisKeys()
        steps = rotation_steps(block) or [1]  # SEAL makes no empty set of Galois keys
        keygen.create_galois_keys([galois_element(step) for step in steps], self.galois_keys)
        self.encoder = s.CKKSEncoder(context)
        self.encryptor = s.Encryptor(context, self.public_key)
        self.decryptor = s.Decryptor(context, self._secret)
        self._context: dict[str, np.ndarray] | None = None

    def public_context(self) -> dict[str, np.ndarray]:
        """The serialized public key and Galois keys (no secret key: SEAL saves each key on its own)."""
        if self._context is None:
            self._context = {"public_key": to_bytes(self.public_key), "galois_keys": to_bytes(self.galois_keys)}
        return self._context

    def secret_key_bytes(self) -> bytes:
        """The serialized secret key (for the test that it never travels)."""
        return to_bytes(self._secret).tobytes()

    def encrypt(self, H: np.ndarray) -> list[Any]:
        """The query's ciphertexts: the (m, n) predictions packed by :func:`layout`, encoded at 2^55."""
        s = _seal()
        out = []
        for v in pack(np.asarray(H, dtype=np.float64), layout(H.shape[1], H.shape[0])):
            pt = s.Plaintext()
            self.encoder.encode(list(v), 2.0 ** INPUT_SCALE_BITS, pt)
            ct = s.Ciphertext()
            self.encryptor.encrypt(pt, ct)
            out.append(ct)
        return out

    def decrypt_slots(self, ct: Any) -> np.ndarray:
        """Every slot of ``ct`` (complex: the key holder reads the imaginary parts too)."""
        s = _seal()
        pt = s.Plaintext()
        self.decryptor.decrypt(ct, pt)
        return np.asarray(self.encoder.decode_complex(pt))

    def answers(self, cts: Sequence[Any], n: int, m: int) -> np.ndarray:
        """The m answers, read from their slots (real parts)."""
        lay = layout(n, m)
        slots = [self.decrypt_slots(ct) for ct in cts]
        return np.array([slots[g][j].real for g, j in (lay.answer_slot(i) for i in range(m))])
