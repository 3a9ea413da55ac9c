"""``he`` against a querier that deviates from the encoding: people whose A one decryption gives exactly.

The compliance party C loads whatever the querier encrypts (module docstring of
:mod:`parley.protocols.mechanisms.homomorphic`, "Semi-honest querier"); the [0, 1] check of
:class:`parley.parties.homomorphic.HeQuerier` is the querier's own. Here the querier has keys made by
:class:`~parley.protocols.crypto.ckks.QuerierKeys` (OS entropy), encrypts slot vectors of its
choice, and C answers through :meth:`HeProtocol.respond` in this process (no Ray). SP on an audit set of
``N_PEOPLE`` people; a person counts when the decoder reads its a exactly. Three queriers:

- ``flip_one``: honest. One query of k models (k = 4 models a ciphertext at n = 1,000), model i the zero
  model with person i flipped to 1: its answer is w_i = 1/N1 or -1/N0, whose sign is a_i. One per answer.
- ``digits``: powers of two in the answer slots. Block b's real part carries people with values c 2^t,
  t < ``DIGITS``, its imaginary part as many more with i c 2^t; the answer is c (alpha K - T / N0), with
  K = sum_t a 2^t, alpha = 1/N1 + 1/N0, T = 2^DIGITS - 1, and c makes one unit of K ``STEP_SDS`` standard
  deviations of the flood. Given N1 and N0 the querier rounds K and reads its bits. At 26 bits the answer
  wraps past the modulus (25 still decode at n = 1,000).
- ``residue``: the mask's rounding error. C's 0/1 mask is encoded at 2^48, so a masked-out slot s keeps
  eps_s (about 2^-45, public: the querier encodes the mask itself) times its window sum
  W_s = sum_{j >= s} h_j w_j. With h_j = ``RESIDUE_VALUE`` (2^50) for every person, W_s eps_s stands far
  above the flood; W_0 = 0 (SP's weights sum to 0) and W_s - W_{s+1} = h_s w_s gives every a_s. One model
  of one ciphertext: everybody at n = 1,000. It needs n <= 2,048 (a block of 4,096 sums the whole ring
  into every slot), and a slot whose eps_s is nearly 0 is lost (1,998 of 2,000 at n = 2,000).

Run: ``PYTHONPATH=. python tests/benchmarks/bench_he_deviating.py``. The last line is one JSON object.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import numpy as np

from parley.protocols.base import AuditSet
from parley.protocols.crypto.ckks import (
    INPUT_SCALE_BITS,
    MASK_SCALE_BITS,
    POLY_MODULUS_DEGREE,
    SLOTS,
    QuerierKeys,
    flood_sigma,
    from_bytes,
    layout,
    pack,
    seal_context,
    to_bytes,
)
from parley.protocols.mechanisms.homomorphic import HeParams, HeProtocol

N_PEOPLE = 1_000
#: Bits per real or imaginary part of an answer in the digits encoding.
DIGITS = 24
#: One unit of K in the digits encoding, in standard deviations of the flood.
STEP_SDS = 20.0
#: Every person's value in the residue encoding: window sums stay below 2^52 at the product's scale 2^105.
RESIDUE_VALUE = 2.0 ** 50


def audit_set(n: int = N_PEOPLE, seed: int = 0) -> AuditSet:
    """A seeded audit set: a with P(a = 1) = 0.3, y uniform."""
    rng = np.random.default_rng(seed)
    return AuditSet(a=(rng.random(n) < 0.3).astype(np.int64), y=rng.integers(0, 2, n))


def slot_sd(params: HeParams) -> float:
    """Standard deviation of the flood in one slot's real or imaginary part."""
    return flood_sigma(params) * math.sqrt(POLY_MODULUS_DEGREE / 2)


class DeviatingQuerier:
    """A querier with :class:`QuerierKeys` keys that encrypts complex slot vectors of its choice."""

    def __init__(self, protocol: HeProtocol, audit: AuditSet, rng: np.random.Generator) -> None:
        self.protocol, self.audit, self.rng = protocol, audit, rng
        self.keys = QuerierKeys(layout(audit.n, 1).block)
        self.asked = 0
        self.decryptions = 0

    def ask(self, vectors: list[np.ndarray], m: int) -> list[np.ndarray]:
        """Every slot of each answer ciphertext C returns for a query of m models carrying ``vectors``."""
        import tenseal.sealapi as sealapi

        blobs = []
        for v in vectors:
            pt, ct = sealapi.Plaintext(), sealapi.Ciphertext()
            self.keys.encoder.encode(list(v), 2.0 ** INPUT_SCALE_BITS, pt)
            self.keys.encryptor.encrypt(pt, ct)
            blobs.append(to_bytes(ct))
        self.asked += 1
        payload = {"metric": "sp", "m": m, "query_id": f"deviating-{self.asked}", **self.keys.public_context(),
                   "ciphertexts": blobs}
        reply = self.protocol.respond("he-query", payload, {"audit": self.audit}, self.rng)
        self.decryptions += len(reply["answers"])
        return [self.keys.decrypt_slots(from_bytes("Ciphertext", b, "he", "answers", fresh=False))
                for b in reply["answers"]]


def flip_one(querier: DeviatingQuerier) -> np.ndarray:
    """The honest flip-one query (values in {0, 1}): a of the first k people, k the models a ciphertext holds."""
    k = layout(querier.audit.n, 1).per_ciphertext
    lay = layout(querier.audit.n, k)
    (slots,) = querier.ask(pack(np.eye(k, querier.audit.n), lay), k)
    return (slots[:: lay.block][:k].real > 0).astype(np.int64)


def digits(querier: DeviatingQuerier, n1: int, n0: int) -> tuple[np.ndarray, np.ndarray]:
    """The digits encoding over one ciphertext: (people read, their a as decoded), given N1 and N0."""
    lay = layout(querier.audit.n, 1)
    k = min(lay.per_ciphertext, querier.audit.n // (2 * DIGITS))  # the blocks whose people are all distinct
    alpha = 1.0 / n1 + 1.0 / n0
    c = STEP_SDS * slot_sd(querier.protocol.params) / alpha
    powers = c * 2.0 ** np.arange(DIGITS)
    v = np.zeros(SLOTS, dtype=complex)
    people = np.arange(2 * k * DIGITS).reshape(k, 2, DIGITS)  # block, real/imaginary, digit
    for b in range(k):
        v[b * lay.block + people[b, 0]] = powers  # model b's block holds every person at its own offset
        v[b * lay.block + people[b, 1]] = 1j * powers
    (slots,) = querier.ask([v], lay.per_ciphertext)
    T = 2.0 ** DIGITS - 1
    read = np.zeros(people.shape, dtype=np.int64)
    for b in range(k):
        for part, value in enumerate((slots[b * lay.block].real, slots[b * lay.block].imag)):
            K = int(round((value / c + T / n0) / alpha))
            read[b, part] = [(K >> t) & 1 for t in range(DIGITS)]
    return people.ravel(), read.ravel()


def residue(querier: DeviatingQuerier) -> tuple[np.ndarray, float]:
    """The residue encoding: every person's a from the masked-out slots of one model's answer, and the closest
    decision's distance from its threshold in standard deviations of its flood."""
    import tenseal.sealapi as sealapi

    n = querier.audit.n
    lay = layout(n, 1)
    if lay.block >= SLOTS:
        raise ValueError(f"the residue encoding needs a block smaller than {SLOTS} slots (n <= {SLOTS // 2})")
    v = np.zeros(SLOTS, dtype=complex)
    v[:n] = RESIDUE_VALUE
    (slots,) = querier.ask([v], 1)
    # C's mask, encoded as C encodes it: its slots are 1 or 0 plus the rounding error eps the querier reads
    mu = np.zeros(SLOTS)
    mu[:: lay.block] = 1.0
    pm = sealapi.Plaintext()
    querier.keys.encoder.encode(list(mu), seal_context().first_parms_id(), 2.0 ** MASK_SCALE_BITS, pm)
    eps = np.asarray(querier.keys.encoder.decode_complex(pm))
    window = np.zeros(n + 1)  # W_0 = 0 (SP's weights sum to 0), W_n = 0 (padding)
    window[1:n] = (slots[1:n] / eps[1:n]).real
    inverse = np.zeros(n + 1)  # the flood in window[s] has standard deviation slot_sd / |eps_s|
    inverse[1:n] = 1.0 / np.abs(eps[1:n])
    difference = window[:n] - window[1:]
    sd = slot_sd(querier.protocol.params) * np.sqrt(inverse[:n] ** 2 + inverse[1:] ** 2)
    return (difference > 0).astype(np.int64), float(np.min(np.abs(difference) / sd))


def measure(n: int = N_PEOPLE, seed: int = 0) -> dict[str, Any]:
    """People read exactly from one decryption by each querier (the audit set and C's flood follow ``seed``)."""
    audit = audit_set(n, seed)
    a = np.asarray(audit.a)
    n1 = int(a.sum())
    querier = DeviatingQuerier(HeProtocol(HeParams()), audit, np.random.default_rng(seed))
    honest = flip_one(querier)
    people, got = digits(querier, n1, n - n1)
    everyone, margin = residue(querier)
    k = layout(n, 1).per_ciphertext
    return {"n": n, "models_per_ciphertext": k, "decryptions": querier.decryptions,
            "flip_one": int((honest == a[:k]).sum()),
            "digits_per_model": int((got == a[people]).sum()) // (people.size // (2 * DIGITS)),
            "digits": int((got == a[people]).sum()),
            "residue": int((everyone == a).sum()), "residue_margin_sds": round(margin, 1)}


def main(argv: list[str]) -> int:
    if argv:
        print(f"bench_he_deviating.py: takes no arguments, got {' '.join(argv)!r}", file=sys.stderr)
        return 2
    out = measure()
    print(f"n = {out['n']}, SP, one decryption each ({out['models_per_ciphertext']} models a ciphertext): "
          f"honest flip-one {out['flip_one']}, digits {out['digits']} ({out['digits_per_model']} a model), "
          f"residue {out['residue']} of {out['n']} (closest decision {out['residue_margin_sds']} sds from 0)")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
