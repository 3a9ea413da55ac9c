"""``mpc-dp`` against a querier that deviates from the encoding: people whose A one query gives exactly.

The compliance party C cannot see what the querier's shares encode (module docstring of
:mod:`parley.protocols.mechanisms.secure`, "The guarantee is for semi-honest parties"). This querier
chooses every row of an SP query freely: person j gets the weight 2^t in one row, t from just above the
noise of that row to bit 125, so the opened row is sum_j a_j 2^t plus the noise Y_C + Y_S of C and the
helper. The noise scales are public (m and epsilon: ``count_dp.noise_scales``): the m sum rows carry
discrete Laplace draws of scale tau_s 2^B each (B = 20), the size row of scale tau_n. A row's first bit
is the one above 64 scales (:data:`MARGIN`: both draws stay below 32 scales each but with probability
about 2 e^-32), so rounding the opened value to a multiple of that bit reads every a_j of the row. The
querier takes the fewest models m whose m + 1 rows hold the audit set.

One query through the real parties in this process (:class:`~parley.parties.compliance.Compliance` with
its ledger, :class:`~parley.parties.secure.Helper`, signed envelopes, the querier's
:class:`~parley.parties.secure.SecureQuerier` state; no Ray): C admits and charges it as any query of m
models, epsilon once. A person counts when the decoder reads its a exactly. The noise comes from fixed
party secrets (:func:`tests.fixed_secrets.party_secret`), so a run repeats exactly.

``largest_n`` is computed, not run: the largest audit set whose A one query of m models holds within
the compliance party's payload limit (m + 1 rows of n 16-byte shares), from the same row capacities.

Run: ``PYTHONPATH=. python tests/benchmarks/bench_mpc_deviating.py [epsilon ...]`` (default 1 and 0.1).
The last line is one JSON object.
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from typing import Any

import numpy as np

from parley.parties.compliance import Compliance
from parley.parties.party import REFUSAL
from parley.parties.payload_limits import MAX_PAYLOAD_BYTES
from parley.parties.secure import HELPER_ROLE, Helper, SecureQuerier
from parley.parties.wire import Identity, Keyring
from parley.protocols import AuditSet, get_protocol
from parley.protocols.crypto.shamir import (
    PairKeys,
    decode_field,
    encode_field,
    field_bytes,
    open_output,
    output_share,
    querier_a_share,
    share_rows,
)
from parley.protocols.mechanisms.count_dp import noise_scales
from parley.protocols.mechanisms.secure import SUM_SENSITIVITY
from tests.fixed_secrets import party_secret

N_PEOPLE = 1_000
EPSILONS = (1.0, 0.1)
#: A row's first bit stands above this many noise scales (each of the two draws below half of it).
MARGIN = 64
#: The highest bit a row uses: the opened value stays below 2^126 < p / 2 and reads as a signed integer.
TOP_BIT = 126
NAMES = ("compliance", "data-center", "mpc-helper")


def audit_set(n: int = N_PEOPLE, seed: int = 0) -> AuditSet:
    """A seeded audit set: a with P(a = 1) = 0.3, y uniform."""
    rng = np.random.default_rng(seed)
    return AuditSet(a=(rng.random(n) < 0.3).astype(np.int8), y=rng.integers(0, 2, n).astype(np.int8))


def first_bits(m: int, epsilon: float) -> list[int]:
    """The first bit of each of the m + 1 rows of an SP query of m models: above :data:`MARGIN` noise scales."""
    protocol = get_protocol("mpc-dp")
    scales = noise_scales(m, protocol.Params(epsilon=epsilon))
    row_scales = [scales["sum"] * SUM_SENSITIVITY] * m + [Fraction(scales["size"])]
    # 2^(b - 1) >= MARGIN x scale: the rounding to a multiple of 2^b absorbs any noise below it
    return [int(np.ceil(MARGIN * s)).bit_length() + 1 for s in row_scales]


def capacity(m: int, epsilon: float) -> int:
    """People one SP query of m models holds: the bits between each row's first bit and :data:`TOP_BIT`."""
    return sum(max(0, TOP_BIT - b) for b in first_bits(m, epsilon))


def fewest_models(n: int, epsilon: float) -> int:
    """The fewest models whose rows hold n people."""
    m = 1
    while capacity(m, epsilon) < n:
        m += 1
    return m


def largest_n(epsilon: float) -> int:
    """The largest audit set one query reads entirely within the payload limit (computed from the capacities).

    The query's m + 1 rows of n 16-byte shares stay within the limit; fewer people allow more models, so
    "one query holds n people" holds up to some n and no further: bisection.
    """

    def holds(n: int) -> bool:
        m = MAX_PAYLOAD_BYTES // field_bytes(1, n) - 1
        return m >= 1 and capacity(m, epsilon) >= n

    low, high = 1, MAX_PAYLOAD_BYTES // field_bytes(2, 1)  # two rows of n shares at least
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if holds(mid) else (low, mid - 1)
    return low


def packed_rows(n: int, m: int, epsilon: float) -> tuple[np.ndarray, list[list[int]], list[int]]:
    """The querier's rows (object ints), the people of each row, and each row's first bit."""
    bits = first_bits(m, epsilon)
    R = np.zeros((m + 1, n), dtype=object)
    people: list[list[int]] = []
    j = 0
    for row, b in enumerate(bits):
        take = list(range(j, min(n, j + max(0, TOP_BIT - b))))
        for t, person in enumerate(take):
            R[row, person] = 1 << (b + t)
        people.append(take)
        j += len(take)
    return R, people, bits


def one_query(audit: AuditSet, epsilon: float, seed: int = 0) -> dict[str, Any]:
    """One deviating SP query through the compliance party and the helper: what the querier reads."""
    n = audit.n
    protocol = get_protocol("mpc-dp")(get_protocol("mpc-dp").Params(epsilon=epsilon))
    ids = {name: Identity.generate(name, role) for name, role in zip(NAMES, ("compliance", "data-center",
                                                                             HELPER_ROLE), strict=True)}
    keyring = Keyring()
    for identity in ids.values():
        keyring.add(identity.key_entry())
    key_rng = np.random.default_rng([seed, 99])
    shared = {pair: key_rng.bytes(16) for pair in ((0, 1), (0, 2), (1, 2))}
    keys = {name: PairKeys(me=i, keys={p: k for p, k in shared.items() if i in p}) for i, name in enumerate(NAMES)}
    compliance = Compliance(ids["compliance"], keyring, audit, protocol.keyed(keys["compliance"]), ["data-center"],
                            party_secret(seed))
    helper = Helper(ids["mpc-helper"], keyring, protocol.keyed(keys["mpc-helper"]), ["data-center"], n,
                    party_secret(seed + 1).rng("noise"))
    querier = SecureQuerier(protocol.keyed(keys["data-center"]), keys["data-center"], audit.y, "mpc-helper")

    def seal(recipient: str, kind: str, payload: dict[str, Any]) -> Any:
        return ids["data-center"].seal(recipient, kind, protocol.name, payload)

    m = fewest_models(n, epsilon)
    R, people, bits = packed_rows(n, m, epsilon)
    qid = "deviating"
    share_c, share_q = share_rows(R, querier.keys, qid)
    # the querier's state of the query, as SecureQuerier.share keeps it (no T: the decoder does not use it)
    querier._pending[qid] = {"metric": "sp", "m": m, "own": share_q, "totals": [[0] * m], "sizes": [n],
                             "predictions": None}
    partial = compliance.receive(seal("compliance", "mpc-query", {"metric": "sp", "m": m, "query_id": qid,
                                                                  "shares": encode_field(share_c)}))
    if partial.kind == REFUSAL:
        raise RuntimeError(f"the compliance party refused: {partial.payload}")
    reply = helper.receive(seal("mpc-helper", "mpc-query", querier.from_compliance(partial)))
    if reply.kind == REFUSAL:
        raise RuntimeError(f"the helper refused: {reply.payload}")
    rows = m + 1
    d_c = decode_field(partial.payload["output"], (rows,), protocol.name, "output")
    d_s = decode_field(reply.payload["output"], (rows,), protocol.name, "output")
    d_q = output_share(share_q, querier_a_share(querier.keys, qid, n), querier.keys, qid)
    opened = open_output(d_c, d_q, d_s)
    a_hat = np.full(n, -1, dtype=np.int64)
    exact = [sum(int(a) * int(w) for a, w in zip(audit.a, R[row], strict=True)) for row in range(rows)]
    noise = [abs(v - k).bit_length() for v, k in zip(opened, exact, strict=True)]  # the noise's bits, per row
    for row, (value, b) in enumerate(zip(opened, bits, strict=True)):
        K = (value + (1 << (b - 1))) >> b  # the nearest multiple of 2^b, in units of 2^b
        for t, person in enumerate(people[row]):
            a_hat[person] = (K >> t) & 1
    spent = compliance.stats()["epsilon_spent"]["data-center"]
    return {"n": n, "epsilon": epsilon, "m": m, "sum_row_bits": TOP_BIT - bits[0], "size_row_bits": TOP_BIT - bits[-1],
            "read": int((a_hat == np.asarray(audit.a)).sum()), "epsilon_charged": spent,
            "sum_row_first_bit": bits[0], "sum_row_noise_bits": max(noise[:-1]),
            "size_row_first_bit": bits[-1], "size_row_noise_bits": noise[-1],
            "helper_answered": helper.answered}


def measure(n: int = N_PEOPLE, epsilons: tuple[float, ...] = EPSILONS, seed: int = 0) -> list[dict[str, Any]]:
    """One deviating query at each epsilon on the seeded audit set of n people."""
    audit = audit_set(n, seed)
    return [{**one_query(audit, eps, seed), "largest_n": largest_n(eps)} for eps in epsilons]


def main(argv: list[str]) -> int:
    try:
        epsilons = tuple(float(v) for v in argv) or EPSILONS
    except ValueError:
        print(f"bench_mpc_deviating.py: epsilons must be numbers, got {' '.join(argv)!r}", file=sys.stderr)
        return 2
    out = measure(epsilons=epsilons)
    for row in out:
        print(f"mpc-dp, epsilon = {row['epsilon']:g} (charged {row['epsilon_charged']:g}), n = {row['n']:,}: "
              f"one SP query of {row['m']} models reads {row['read']:,} of {row['n']:,} people's A exactly "
              f"({row['sum_row_bits']} people a sum row from bit {row['sum_row_first_bit']}, its noise "
              f"{row['sum_row_noise_bits']} bits at most; {row['size_row_bits']} in the size row from bit "
              f"{row['size_row_first_bit']}, its noise {row['size_row_noise_bits']} bits); one query holds "
              f"everybody up to n = {row['largest_n']:,} within the payload limit (computed)")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
